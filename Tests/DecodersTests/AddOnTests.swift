import TestSupport
import Testing

@testable import Decoders

/// EAN-2 and EAN-5 add-ons (GS1 General Specifications, section 5.2.3.6) come with their main symbol.
@Suite struct AddOnTests {
  @Test(arguments: [
    ("EANX", "9781234567897+12345", BarcodeFormat.isbn13, "9781234567897", "12345"),
    ("EANX", "9781234567897+12", .isbn13, "9781234567897", "12"),
    ("UPCA", "01234567890+51234", .upcA, "012345678905", "51234"),
    ("UPCE", "0123456+07", .upcE, "01234565", "07"),
    ("EANX", "1234567+12", .ean8, "12345670", "12"),
  ])
  func addOnIsReportedWithItsSymbol(
    _ symbology: String, _ data: String, _ format: BarcodeFormat, _ main: String, _ addOn: String
  ) throws {
    let dir = TemporaryDirectory()
    let image = try zint(dir, "code", symbology, data)
    let found = everything.decode(image)
    try #require(found.count == 1, "\(found)")
    #expect(found[0].format == format)
    #expect(found[0].bytes == bytes(main))
    #expect(found[0].addOn == bytes(addOn))
  }

  @Test(arguments: ["9781234567897+12345", "9781234567897+12"])
  func addOnsOffReportTheMainSymbolAlone(_ data: String) throws {
    // BarcodeReader(addOns: false), what SocketCam runs while its ean-add-on data source is off: neither
    // decoder looks for the add-on, and the main symbol is reported without it.
    let dir = TemporaryDirectory()
    let image = try zint(dir, "code", "EANX", data)
    let found = BarcodeReader(addOns: false).decode(image)
    #expect(found.map(\.bytes) == [bytes("9781234567897")])
    #expect(found.map(\.addOn) == [nil])
    #expect(found.map(\.decoders) == [firstReader])
  }

  @Test func addOnFollowsItsSymbolTurnedAQuarterAndUpsideDown() throws {
    let dir = TemporaryDirectory()
    let image = try zint(dir, "code", "EANX", "9781234567897+12345")
    for turned in [rotated(image), rotated(rotated(image)), rotated(rotated(rotated(image)))] {
      let found = everything.decode(turned)
      #expect(found.map(\.addOn) == [bytes("12345")])
    }
  }

  @Test func twoBooksSideBySideKeepTheirOwnAddOns() throws {
    let dir = TemporaryDirectory()
    let left = try zint(dir, "a", "EANX", "9781234567897+12345")
    let right = try zint(dir, "b", "EANX", "9780306406157+99")
    let found = everything.decode(hstack([left, right], gap: 80))
    #expect(found.map(\.bytes) == [bytes("9781234567897"), bytes("9780306406157")])
    #expect(found.map(\.addOn) == [bytes("12345"), bytes("99")])
  }

  @Test func symbolWithoutAddOnHasNone() throws {
    let dir = TemporaryDirectory()
    #expect(everything.decode(try zint(dir, "c", "EANX", "978123456789")).map(\.addOn) == [nil])
  }

  /// A quarter turn clockwise.
  func rotated(_ image: GrayImage) -> GrayImage {
    var pixels = [UInt8](repeating: 255, count: image.width * image.height)
    for y in 0..<image.height {
      for x in 0..<image.width {
        pixels[x * image.height + (image.height - 1 - y)] = image.pixels[y * image.width + x]
      }
    }
    return GrayImage(width: image.height, height: image.width, pixels: pixels)
  }
}
