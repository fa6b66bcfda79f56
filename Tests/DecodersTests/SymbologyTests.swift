import Glibc
import TestSupport
import Testing

@testable import Decoders

/// One zint-generated symbol and exactly what BarcodeReader must return for it.
struct SymbolCase: CustomTestStringConvertible, Sendable {
  let zintType: String
  let data: String
  var extra: [String] = []
  let format: BarcodeFormat
  let expected: [UInt8]
  /// The engines that read it alone (BarcodeReader(engines:)); with both on, zxing-cpp reads every case
  /// and ZBar is not asked (BarcodeReader's steps).
  let decoders: Set<String>

  var testDescription: String { "\(format) via zint \(zintType)" }
}

let both: Set<String> = ["zbar", "zxing"]
let zxingOnly: Set<String> = ["zxing"]
let zbarOnly: Set<String> = ["zbar"]
/// Who reads a linear code alone: either engine.
let linear: Set<String> = both
/// Who reads DataBar and DataBar Expanded alone: either engine (zxing-cpp 1.4.0's assertions on them
/// kept it out; zxing-cpp 3 has none).
let dataBar: Set<String> = both
/// Who reads what zxing-cpp reads, with both engines on: zxing-cpp, which is asked first; ZBar is asked
/// only where zxing-cpp read nothing (BarcodeReader's steps).
let firstReader: Set<String> = zxingOnly
/// Who reads an EAN/UPC symbol without an add-on while add-ons are on (`everything`): both, for ZBar is
/// asked to look for the add-on zxing-cpp did not find.
let addOnSearch: Set<String> = both

/// Who reports the symbol with both engines on and add-ons on.
func answering(_ format: BarcodeFormat) -> Set<String> {
  Merger.takesAddOn.contains(format) || [.isbn10, .isbn13].contains(format) ? addOnSearch : firstReader
}

/// ZBar on its own, as BarcodeReader asks it where zxing-cpp read nothing.
func zbarAlone(_ image: GrayImage) -> [DecodedSymbol] { BarcodeReader(engines: [.zbar]).decode(image) }

/// Expected payloads follow each symbology's transmitted data: check digits of EAN/UPC included, Code 93's
/// two check characters not, Codabar with start/stop characters, GS1 data as element strings with GS
/// (0x1D) after variable-length fields. DataMatrix, Aztec, PDF417, MicroQR and MaxiCode are zxing-cpp only
/// (Debian's ZBar lacks them).
let symbolCases: [SymbolCase] = [
  SymbolCase(
    zintType: "QRCODE", data: "Hello, QR from zint", format: .qrCode, expected: bytes("Hello, QR from zint"),
    decoders: both),
  SymbolCase(
    zintType: "DATAMATRIX", data: "DataMatrix 123", format: .dataMatrix, expected: bytes("DataMatrix 123"),
    decoders: zxingOnly),
  SymbolCase(
    zintType: "AZTEC", data: "Aztec Code 2D", format: .aztec, expected: bytes("Aztec Code 2D"),
    decoders: zxingOnly),
  SymbolCase(
    zintType: "PDF417", data: "PDF417 stacked", format: .pdf417, expected: bytes("PDF417 stacked"),
    decoders: zxingOnly),
  SymbolCase(
    zintType: "MICROQR", data: "MICRO1", format: .microQRCode, expected: bytes("MICRO1"), decoders: zxingOnly),
  SymbolCase(
    zintType: "CODE128", data: "Code128-Test", format: .code128, expected: bytes("Code128-Test"),
    decoders: linear),
  SymbolCase(
    zintType: "GS1_128", data: "[01]98898765432106[10]ABC[15]991231", format: .code128,
    expected: bytes("019889876543210610ABC") + [0x1D] + bytes("15991231"), decoders: linear),
  SymbolCase(
    zintType: "CODE39", data: "CODE39 TEST", format: .code39, expected: bytes("CODE39 TEST"), decoders: linear
  ),
  SymbolCase(
    zintType: "CODE93", data: "CODE93", format: .code93, expected: bytes("CODE93"), decoders: linear),
  SymbolCase(
    zintType: "EANX", data: "400638133393", format: .ean13, expected: bytes("4006381333931"), decoders: linear
  ),
  SymbolCase(zintType: "EANX", data: "9638507", format: .ean8, expected: bytes("96385074"), decoders: linear),
  SymbolCase(
    zintType: "UPCA", data: "03600029145", format: .upcA, expected: bytes("036000291452"), decoders: linear),
  SymbolCase(zintType: "UPCE", data: "0123456", format: .upcE, expected: bytes("01234565"), decoders: linear),
  SymbolCase(
    zintType: "ISBNX", data: "9780306406157", format: .isbn13, expected: bytes("9780306406157"),
    decoders: linear),
  SymbolCase(
    zintType: "C25INTER", data: "1234567890", format: .itf, expected: bytes("1234567890"), decoders: linear),
  SymbolCase(
    zintType: "CODABAR", data: "A40156B", format: .codabar, expected: bytes("A40156B"), decoders: linear),
  SymbolCase(
    zintType: "DBAR_OMN", data: "0950110153001", format: .dataBar, expected: bytes("0109501101530010"),
    decoders: dataBar),
  SymbolCase(
    zintType: "DBAR_EXP", data: "[01]98898765432106[3202]012345[15]991231", format: .dataBarExpanded,
    expected: bytes("0198898765432106320201234515991231"), decoders: dataBar),
  // zxing-cpp 3 only (neither Debian's ZBar nor zxing-cpp 1.4.0 reads them).
  SymbolCase(
    zintType: "RMQR", data: "RMQR 12345", extra: ["--scale=4"], format: .rmqrCode,
    expected: bytes("RMQR 12345"),
    decoders: zxingOnly),
  SymbolCase(
    zintType: "MICROPDF417", data: "MICRO PDF 417", extra: ["--scale=3"], format: .microPDF417,
    expected: bytes("MICRO PDF 417"), decoders: zxingOnly),
  SymbolCase(
    zintType: "DBAR_LTD", data: "0950110153001", extra: ["--scale=3"], format: .dataBarLimited,
    expected: bytes("0109501101530010"), decoders: zxingOnly),
  SymbolCase(
    zintType: "TELEPEN", data: "TELEPEN-42", extra: ["--scale=3"], format: .telepen,
    expected: bytes("TELEPEN-42"),
    decoders: zxingOnly),
]

@Suite struct SymbologyTests {
  @Test(arguments: symbolCases)
  func decodesZintSymbol(_ symbol: SymbolCase) throws {
    let dir = TemporaryDirectory()
    let image = try zint(dir, "symbol", symbol.zintType, symbol.data, symbol.extra)
    let found = everything.decode(image)
    try #require(found.count == 1, "found \(found.map { "\($0.format):\($0.text ?? "?")" })")
    #expect(found[0].format == symbol.format)
    #expect(found[0].bytes == symbol.expected)
    #expect(found[0].decoders == answering(symbol.format))
    #expect(found[0].points.count == 4)
    // Each engine that can read it reads the same alone: ZBar's readings of the linear codes are what it
    // adds where zxing-cpp reads nothing.
    for engine in symbol.decoders.compactMap(DecoderEngine.init(rawValue:)) {
      let alone = BarcodeReader(engines: [engine]).decode(image)
      #expect(alone.map(\.format) == [symbol.format], "\(engine)")
      #expect(alone.map(\.bytes) == [symbol.expected], "\(engine)")
    }
  }

  @Test func maxiCodeIsReadByZXing() throws {
    let dir = TemporaryDirectory()
    let image = try zint(dir, "maxi", "MAXICODE", "MaxiCode test")
    let found = everything.decode(image)
    #expect(found.map(\.format) == [.maxiCode])
    #expect(found.map(\.bytes) == [bytes("MaxiCode test")])
    #expect(found.map(\.decoders) == [zxingOnly])
  }

  @Test func qrencodeUTF8Payload() throws {
    let dir = TemporaryDirectory()
    let text = "Grüße 東京"
    let input = try dir.write("utf8.txt", bytes(text))
    try run(["qrencode", "-s", "4", "-o", dir.file("utf8.png"), "-r", input])
    let found = everything.decode(try ImageLoader.load(path: dir.file("utf8.png")))
    #expect(found.count == 1)
    #expect(found.first?.format == .qrCode)
    #expect(found.first?.bytes == bytes(text))
    #expect(found.first?.text == text)
    #expect(found.first?.decoders == firstReader)
    let zbar = zbarAlone(try ImageLoader.load(path: dir.file("utf8.png")))
    #expect(zbar.map(\.bytes) == [bytes(text)])
    #expect(zbar.map(\.text) == [text])
  }

  @Test func zintUTF8PayloadWithECI() throws {
    // ECI 26 declares UTF-8; both decoders return the encoded bytes unchanged (ZBar thanks to
    // ZBAR_CFG_BINARY, zxing-cpp through Result::bytes()).
    let dir = TemporaryDirectory()
    let image = try zint(dir, "eci", "QRCODE", "Grüße 東京", ["--eci=26"])
    let found = everything.decode(image)
    #expect(found.map(\.bytes) == [bytes("Grüße 東京")])
    #expect(found.map(\.decoders) == [firstReader])
    #expect(zbarAlone(image).map(\.bytes) == [bytes("Grüße 東京")])
  }

  @Test func binaryPayloadIsByteExact() throws {
    let dir = TemporaryDirectory()
    let payload: [UInt8] = [0x00, 0xFF, 0x41, 0x00, 0x80, 0xFE, 0x0A, 0x0D, 0xFF, 0x00, 0xC3, 0x28]
    let input = try dir.write("payload.bin", payload)
    // -8: 8-bit mode; -r reads the data from a file, NULs included.
    try run(["qrencode", "-8", "-s", "4", "-o", dir.file("binary.png"), "-r", input])
    let found = everything.decode(try ImageLoader.load(path: dir.file("binary.png")))
    #expect(found.count == 1)
    #expect(found.first?.format == .qrCode)
    #expect(found.first?.bytes == payload)
    #expect(found.first?.text == nil)  // not UTF-8
    #expect(found.first?.decoders == firstReader)
    let zbar = zbarAlone(try ImageLoader.load(path: dir.file("binary.png")))
    #expect(zbar.map(\.bytes) == [payload])
    #expect(zbar.map(\.text) == [nil])
  }
}
