import Testing

@testable import Decoders

@Suite struct NormalizationTests {
  let all = Set(BarcodeFormat.allCases)

  func raw(
    _ format: BarcodeFormat, _ text: String, engine: DecoderEngine = .zbar, at x: Int = 0, size: Int = 100
  )
    -> RawSymbol
  {
    let corners = [
      Point(x: x, y: 0), Point(x: x + size, y: 0), Point(x: x + size, y: size), Point(x: x, y: size),
    ]
    return RawSymbol(format: format, bytes: bytes(text), points: corners, engine: engine, hasCorners: true)
  }

  @Test func gtinChoice() {
    let upc = bytes("0036000291452")
    #expect(GTIN.choose(upc, enabled: all)?.format == .upcA)
    #expect(GTIN.choose(upc, enabled: all)?.bytes == bytes("036000291452"))
    #expect(GTIN.choose(upc, enabled: [.ean13])?.format == .ean13)
    #expect(GTIN.choose(upc, enabled: [.ean13])?.bytes == upc)
    // 979 books have no ISBN-10.
    #expect(GTIN.choose(bytes("9790306406156"), enabled: [.isbn10, .ean13])?.format == .ean13)
    #expect(GTIN.choose(bytes("9780306406157"), enabled: [.isbn10])?.bytes == bytes("0306406152"))
    #expect(GTIN.choose(bytes("4006381333931"), enabled: [.upcA, .isbn13]) == nil)
  }

  @Test func isbn10CheckDigitX() {
    // 978-0-8044-2957-? → ISBN-10 check digit 10, written X.
    #expect(GTIN.isbn10(bytes("9780804429573")) == bytes("080442957X"))
    #expect(GTIN.ean13Digits(.isbn10, bytes("080442957X")) == bytes("9780804429573"))
  }

  @Test func checkDigit() {
    #expect(GTIN.checkDigit(bytes("400638133393")) == UInt8(ascii: "1"))
    #expect(GTIN.checkDigit(bytes("978030640615")) == UInt8(ascii: "7"))
  }

  @Test func dataBarGetsImpliedAI01() {
    let zxing = Normalizer.normalize(raw(.dataBar, "09501101530010", engine: .zxing), enabled: all)
    #expect(zxing?.bytes == bytes("0109501101530010"))
    let zbar = Normalizer.normalize(raw(.dataBar, "0109501101530010"), enabled: all)
    #expect(zbar?.bytes == bytes("0109501101530010"))
  }

  @Test func gs1HumanReadableToElementString() {
    #expect(
      GS1.elementString(fromHRI: bytes("(01)98898765432106(3202)012345(15)991231"))
        == bytes("0198898765432106320201234515991231"))
    // (10) is variable length and followed by another element: GS separates them.
    #expect(
      GS1.elementString(fromHRI: bytes("(01)98898765432106(10)ABC(15)991231"))
        == bytes("019889876543210610ABC") + [0x1D] + bytes("15991231"))
    // Last element: no trailing GS; parentheses that do not enclose 2-4 digits are data.
    #expect(GS1.elementString(fromHRI: bytes("(10)A(B)(21)X")) == bytes("10A(B)") + [0x1D] + bytes("21X"))
    #expect(GS1.elementString(fromHRI: bytes("(ABC")) == bytes("(ABC"))
  }

  @Test func formatsOutsideTheSetAreDropped() {
    #expect(Normalizer.normalize(raw(.code39, "X"), enabled: [.qrCode]) == nil)
    #expect(Normalizer.normalize(raw(.upcE, "01234565"), enabled: [.ean13, .upcA]) == nil)
  }

  @Test func mergeSameSymbolFromBothDecoders() {
    let merged = Merger.merge([
      raw(.qrCode, "A", engine: .zbar, at: 2), raw(.qrCode, "A", engine: .zxing, at: 0),
    ])
    #expect(merged.count == 1)
    #expect(merged.first?.decoders == ["zbar", "zxing"])
    #expect(merged.first?.points.first == Point(x: 0, y: 0))  // zxing-cpp's corners win
  }

  @Test func mergeKeepsDistantIdenticalSymbols() {
    // 100 px symbols: centres 60 px apart are more than half a symbol apart (distinct), 40 px are not.
    let apart = Merger.merge([raw(.qrCode, "A", at: 0), raw(.qrCode, "A", engine: .zxing, at: 60)])
    #expect(apart.count == 2)
    let near = Merger.merge([raw(.qrCode, "A", at: 0), raw(.qrCode, "A", engine: .zxing, at: 40)])
    #expect(near.count == 1)
  }

  @Test func mergeNeedsEqualFormatAndBytes() {
    #expect(Merger.merge([raw(.qrCode, "A"), raw(.microQRCode, "A", engine: .zxing)]).count == 2)
    // Two different codes apart stay two.
    #expect(Merger.merge([raw(.qrCode, "A", at: 0), raw(.qrCode, "B", engine: .zxing, at: 60)]).count == 2)
  }

  @Test func oneSymbolReadTwoWaysIsZXingsReading() {
    // ZBar 0.23 turns Code 128's FNC4 characters into other ASCII: "Größe" became "Grv_e".
    let merged = Merger.merge([raw(.code128, "Grv_e 275"), raw(.code128, "Größe 275", engine: .zxing)])
    #expect(merged.map(\.text) == ["Größe 275"])
    #expect(merged.map(\.decoders) == [["zxing"]])
    // In either order.
    let reversed = Merger.merge([raw(.code128, "Größe 275", engine: .zxing), raw(.code128, "Grv_e 275")])
    #expect(reversed.map(\.text) == ["Größe 275"])
  }

  @Test func readingOrderGroupsRows() {
    func symbol(_ text: String, x: Int, y: Int, size: Int = 100) -> DecodedSymbol {
      DecodedSymbol(
        format: .qrCode, bytes: bytes(text),
        points: [
          Point(x: x, y: y), Point(x: x + size, y: y), Point(x: x + size, y: y + size),
          Point(x: x, y: y + size),
        ],
        decoders: ["zxing"])
    }
    let shuffled = [
      symbol("row2-left", x: 0, y: 300), symbol("row1-right", x: 400, y: 0), symbol("row1-left", x: 0, y: 30),
      symbol("row2-right", x: 300, y: 290),
    ]
    #expect(
      Merger.readingOrder(shuffled).map(\.text) == ["row1-left", "row1-right", "row2-left", "row2-right"])
  }
}
