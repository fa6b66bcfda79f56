import Glibc
import TestSupport
import Testing

@testable import Decoders

/// The text of a symbol is what it encodes: ECI designators honoured, Kanji mode and other character
/// sets converted to Unicode; `bytes` stays the raw payload (ECI designators left out).
@Suite struct CharacterSetTests {
  func sjis(_ text: String) -> [UInt8] { TextGuessTests.shiftJIS(text) }

  @Test func qrWithECI3IsLatin1TextAndLatin1Bytes() throws {
    let dir = TemporaryDirectory()
    let found = everything.decode(try zint(dir, "eci3", "QRCODE", "Grüße", ["--eci=3"]))
    try #require(found.count == 1)
    #expect(found[0].text == "Grüße")
    #expect(found[0].bytes == [0x47, 0x72, 0xFC, 0xDF, 0x65])
    #expect(found[0].decoders == firstReader)
    // ZBar, asked alone, reads it too and hands over UTF-8 (its ECI conversion, even in binary mode).
    let zbar = zbarAlone(try zint(dir, "eci3", "QRCODE", "Grüße", ["--eci=3"]))
    #expect(zbar.map(\.text) == ["Grüße"])
  }

  @Test func qrWithECI20IsShiftJISConverted() throws {
    let dir = TemporaryDirectory()
    let found = everything.decode(try zint(dir, "eci20", "QRCODE", "漢字", ["--eci=20"]))
    try #require(found.count == 1)
    #expect(found[0].text == "漢字")
    #expect(found[0].bytes == sjis("漢字"))
  }

  @Test func qrKanjiModeIsShiftJISConverted() throws {
    let dir = TemporaryDirectory()
    let input = try dir.write("kanji.sjis", sjis("漢字テスト"))
    // qrencode -k: Kanji mode for the Shift_JIS double-byte characters of its input.
    try run(["qrencode", "-k", "-s", "4", "-o", dir.file("kanji.png"), "-r", input])
    let image = try ImageLoader.load(path: dir.file("kanji.png"))
    let found = everything.decode(image)
    try #require(found.count == 1)
    #expect(found[0].text == "漢字テスト")
    #expect(found[0].bytes == sjis("漢字テスト"))
    // ZBar alone (binary mode: no segment modes) gets the same text from the Shift_JIS guess.
    let zbarOnly = BarcodeReader(engines: [.zbar]).decode(image)
    #expect(zbarOnly.map(\.text) == ["漢字テスト"])
  }

  @Test func microQRKanji() throws {
    let dir = TemporaryDirectory()
    let found = everything.decode(try zint(dir, "mqr", "MICROQR", "漢字", ["--scale=4"]))
    try #require(found.count == 1)
    #expect(found[0].format == .microQRCode)
    #expect(found[0].text == "漢字")
  }

  @Test func aztecPDF417AndDataMatrixWithECI() throws {
    let dir = TemporaryDirectory()
    let aztec = everything.decode(try zint(dir, "az", "AZTEC", "Ünïcödé ok", ["--eci=26", "--scale=3"]))
    #expect(aztec.map(\.text) == ["Ünïcödé ok"])
    let pdf = everything.decode(try zint(dir, "pdf", "PDF417", "Ελληνικά", ["--eci=9"]))
    #expect(pdf.map(\.text) == ["Ελληνικά"])
    // ECI 9 is ISO-8859-7: the bytes are the Greek code points of that set.
    #expect(pdf.first?.bytes == [0xC5, 0xEB, 0xEB, 0xE7, 0xED, 0xE9, 0xEA, 0xDC])
    let matrix = everything.decode(try zint(dir, "dm", "DATAMATRIX", "Привет", ["--eci=7", "--scale=4"]))
    #expect(matrix.map(\.text) == ["Привет"])
  }

  @Test func maxiCodeWithLatin1CodeSetCharacters() throws {
    let dir = TemporaryDirectory()
    // MaxiCode's code sets hold ISO-8859-1's accented letters without any ECI (ISO/IEC 16023 Table 1).
    let found = everything.decode(try zint(dir, "maxi", "MAXICODE", "Café ÀÉ", ["--scale=3"]))
    try #require(found.count == 1)
    #expect(found[0].text == "Café ÀÉ")
    #expect(found[0].bytes == [0x43, 0x61, 0x66, 0xE9, 0x20, 0xC0, 0xC9])
  }

  @Test func binaryPayloadHasNoText() throws {
    let dir = TemporaryDirectory()
    let payload: [UInt8] = [0x00, 0xFF, 0x41, 0x00, 0x80, 0xFE, 0x0A]
    let input = try dir.write("payload.bin", payload)
    try run(["qrencode", "-8", "-s", "4", "-o", dir.file("binary.png"), "-r", input])
    let image = try ImageLoader.load(path: dir.file("binary.png"))
    #expect(everything.decode(image).map(\.decodedText) == [nil])
    #expect(BarcodeReader(engines: [.zbar]).decode(image).map(\.decodedText) == [nil])
  }
}

@Suite struct TextGuessTests {
  static func shiftJIS(_ text: String) -> [UInt8] {
    let cd = iconv_open("SHIFT_JIS", "UTF-8")!
    defer { iconv_close(cd) }
    var input = Array(text.utf8).map { CChar(bitPattern: $0) }
    var output = [CChar](repeating: 0, count: input.count * 2 + 4)
    let count = input.withUnsafeMutableBufferPointer { inBuffer in
      output.withUnsafeMutableBufferPointer { outBuffer in
        var inPointer = inBuffer.baseAddress
        var outPointer = outBuffer.baseAddress
        var inLeft = inBuffer.count
        var outLeft = outBuffer.count
        _ = iconv(cd, &inPointer, &inLeft, &outPointer, &outLeft)
        return outBuffer.count - outLeft
      }
    }
    return output.prefix(count).map { UInt8(bitPattern: $0) }
  }

  @Test func utf8HasNoGuess() { #expect(TextGuess.text(of: Array("déjà vu".utf8)) == nil) }
  @Test func latin1Text() { #expect(TextGuess.text(of: [0x63, 0x61, 0x66, 0xE9]) == "café") }
  @Test func shiftJISText() { #expect(TextGuess.text(of: Self.shiftJIS("テスト漢字")) == "テスト漢字") }
  @Test func controlBytesAreBinary() { #expect(TextGuess.text(of: [0x41, 0x00, 0xFF]) == nil) }
  @Test func textWithLineBreaksIsText() { #expect(TextGuess.text(of: [0x61, 0x0A, 0xE9]) == "a\né") }
}
