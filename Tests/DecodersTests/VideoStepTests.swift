import TestSupport
import Testing

@testable import Decoders

/// A camera's frames share the search out, one step a frame (BarcodeReader.videoStep): each code is
/// met by the step that reads it within one cycle of 16 frames, and no frame pays for all four.
@Suite struct VideoStepTests {
  func inverted(_ image: GrayImage) -> GrayImage {
    GrayImage(width: image.width, height: image.height, pixels: image.pixels.map { 255 - $0 })
  }

  /// The frames of one cycle (0–15) whose step read `image`, and what each read.
  func reads(_ image: GrayImage, _ reader: BarcodeReader = everything) -> [Int: [String]] {
    var found: [Int: [String]] = [:]
    for sequence in 0..<BarcodeReader.videoCycle {
      let texts = reader.decodeFrame(image, sequence: sequence).symbols.compactMap(\.text)
      if !texts.isEmpty { found[sequence] = texts }
    }
    return found
  }

  @Test func theCycleIsZXingEveryOtherFrameZBarOnSixAndEachInvertedSearchOnce() {
    #expect(BarcodeReader.videoCycle == 16)
    let cycle = (0..<32).map { BarcodeReader.videoStep($0) }
    let one: [BarcodeReader.VideoStep] = [
      .zxing, .zbar, .zxing, .zbar, .zxing, .zbar, .zxing, .zxingInverted,
      .zxing, .zbar, .zxing, .zbar, .zxing, .zbar, .zxing, .zbarInverted,
    ]
    #expect(cycle == one + one)
  }

  @Test func aQRCodeIsReadByEveryNormalStepAndAnInvertedOneByTheInvertedSteps() throws {
    let dir = TemporaryDirectory()
    let image = try zint(dir, "qr", "QRCODE", "VIDEO STEP", ["--scale=4"])
    // zxing-cpp and ZBar both read a QR Code: every frame but the inverted steps' (7 and 15).
    let normal = Dictionary(
      uniqueKeysWithValues: (0..<16).filter { $0 != 7 && $0 != 15 }.map { ($0, ["VIDEO STEP"]) })
    #expect(reads(image) == normal)
    // Light on dark: the two inverted steps (zxing-cpp's search on frame 7, ZBar's scan on 15) read it.
    #expect(reads(inverted(image)) == [7: ["VIDEO STEP"], 15: ["VIDEO STEP"]])
  }

  @Test func aLightCode128IsReadByZBarsInvertedScan() throws {
    let dir = TemporaryDirectory()
    let image = inverted(try zint(dir, "c", "CODE128", "INVERSE-128"))
    #expect(reads(image) == [15: ["INVERSE-128"]])
  }

  @Test func aStepWithoutItsEngineIsZXingsTurn() throws {
    // Data Matrix only: ZBar has none of the formats, so its frames are zxing-cpp's.
    let dir = TemporaryDirectory()
    let image = try zint(dir, "dm", "DATAMATRIX", "DM VIDEO", ["--scale=4"])
    let dataMatrixOnly = BarcodeReader(formats: [.dataMatrix])
    #expect(reads(image, dataMatrixOnly).keys.sorted() == (0..<16).filter { $0 != 7 })
  }
}
