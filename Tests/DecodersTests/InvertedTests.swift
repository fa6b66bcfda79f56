import TestSupport
import Testing

@testable import Decoders

/// Light codes on a dark ground: zxing-cpp's own inverted search (ReaderOptions::tryInvert) reads the
/// matrix ones; ZBar scans the inverted image for the linear ones when the image gave neither anything.
@Suite struct InvertedTests {
  func inverted(_ image: GrayImage) -> GrayImage {
    GrayImage(width: image.width, height: image.height, pixels: image.pixels.map { 255 - $0 })
  }

  @Test func invertedQRIsReadByBothWithItsECIText() throws {
    let dir = TemporaryDirectory()
    let image = inverted(try zint(dir, "qr", "QRCODE", "Grüße", ["--eci=3", "--scale=4"]))
    let found = everything.decode(image)
    try #require(found.count == 1)
    #expect(found[0].text == "Grüße")
    // zxing-cpp's raw bytes (ISO-8859-1).
    #expect(found[0].bytes == [0x47, 0x72, 0xFC, 0xDF, 0x65])
    #expect(found[0].decoders == zxingOnly)
  }

  @Test func invertedCode128IsRead() throws {
    let dir = TemporaryDirectory()
    let found = everything.decode(inverted(try zint(dir, "c", "CODE128", "INVERSE-128")))
    #expect(found.map(\.text) == ["INVERSE-128"])
    #expect(found.map(\.decoders) == [["zbar"]])
  }

  @Test func invertedDataBarIsNotMisread() throws {
    // An inverted DataBar decodes in ZBar as a different DataBar with a valid check digit; it is left out.
    let dir = TemporaryDirectory()
    let image = try zint(dir, "dbar", "DBAR_OMN", "0678513690420")
    #expect(everything.decode(image).map(\.text) == ["0106785136904203"])
    #expect(everything.decode(inverted(image)).filter { $0.format == .dataBar }.isEmpty)
  }
}
