#if canImport(Glibc)
  import Glibc
#endif

/// The text of a payload whose character set the decoder did not report: what ZBar's QR reader hands
/// over in binary mode (ZBAR_CFG_BINARY keeps the bytes exact but drops the ECI designators and the
/// mode of each segment). zxing-cpp, which knows both, supplies the text itself whenever it read the
/// symbol too; this guess covers only what ZBar alone read.
///
/// The guess follows the QR Code standard's defaults (ISO/IEC 18004:2015 §7.4.2: byte mode data is
/// ISO/IEC 8859-1 unless an ECI says otherwise) and the one other set QR encoders write without an
/// ECI: Shift_JIS, which Kanji mode uses (ISO/IEC 18004:2015 §7.4.6). So: bytes that are valid UTF-8
/// are their own text (nil here); bytes that are valid Shift_JIS with at least one two-byte character are converted from
/// Shift_JIS; bytes that are ISO-8859-1 text (no control characters but tab, line feed and carriage
/// return) are converted from it; anything else is binary data and has no text (nil: shown escaped).
enum TextGuess {
  static func text(of bytes: [UInt8]) -> String? {
    if bytes.isEmpty || String(validating: bytes, as: UTF8.self) != nil { return nil }
    if hasShiftJISDoubleByte(bytes), let converted = convert(bytes, from: "SHIFT_JIS"),
      !converted.unicodeScalars.contains(where: isControl)
    {
      return converted
    }
    let text = latin1(bytes)
    return text.unicodeScalars.contains(where: isControl) ? nil : text
  }

  /// C0 and C1 controls and DEL, except tab, line feed and carriage return.
  static func isControl(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x09, 0x0A, 0x0D: false
    case 0x00..<0x20, 0x7F..<0xA0: true
    default: false
    }
  }

  /// ISO-8859-1 maps byte N to U+00NN.
  static func latin1(_ bytes: [UInt8]) -> String {
    var text = ""
    text.unicodeScalars.append(contentsOf: bytes.map { Unicode.Scalar($0) })
    return text
  }

  /// A Shift_JIS two-byte character starts with 0x81-0x9F or 0xE0-0xFC (JIS X 0208 Annex 1); without
  /// one the bytes are more likely ISO-8859-1 text.
  static func hasShiftJISDoubleByte(_ bytes: [UInt8]) -> Bool {
    bytes.contains { (0x81...0x9F).contains($0) || (0xE0...0xFC).contains($0) }
  }

  /// Strict conversion to UTF-8 with iconv(3): nil when any byte sequence is invalid in `charset`.
  static func convert(_ bytes: [UInt8], from charset: String) -> String? {
    let cd = iconv_open("UTF-8", charset)
    guard let cd, Int(bitPattern: cd) != -1 else { return nil }
    defer { iconv_close(cd) }
    var input = bytes.map { CChar(bitPattern: $0) }
    // UTF-8 needs at most 3 bytes per Shift_JIS character of 1 or 2 bytes.
    var output = [CChar](repeating: 0, count: bytes.count * 3 + 4)
    let produced: Int? = input.withUnsafeMutableBufferPointer { inBuffer in
      output.withUnsafeMutableBufferPointer { outBuffer in
        var inPointer: UnsafeMutablePointer<CChar>? = inBuffer.baseAddress
        var outPointer: UnsafeMutablePointer<CChar>? = outBuffer.baseAddress
        var inLeft = inBuffer.count
        var outLeft = outBuffer.count
        let rc = iconv(cd, &inPointer, &inLeft, &outPointer, &outLeft)
        guard rc != -1, inLeft == 0 else { return nil }
        return outBuffer.count - outLeft
      }
    }
    guard let produced else { return nil }
    return String(validating: output.prefix(produced).map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}
