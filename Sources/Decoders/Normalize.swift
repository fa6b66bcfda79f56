/// Makes both decoders describe the same symbol the same way, and applies the caller's format set.
///
/// Differences observed between ZBar 0.23.92 and zxing-cpp on identical images (zint output):
/// - EAN/UPC: ZBar reports UPC-A as EAN-13 with a leading 0 unless UPC-A is enabled, and UPC-E expanded to
///   EAN-13 unless UPC-E is enabled; zxing-cpp 3 reports UPC-A as EAN-13 while EAN-13 is asked for, and
///   UPC-E as its EAN-13 expansion (the shim hands over the 8 digits, czxing.cpp). Neither is asked for
///   ISBN: see `GTIN.choose`.
/// - DataBar (and Limited): ZBar and zxing-cpp 3 return "01" + GTIN-14 (the GS1 element string); zxing-cpp
///   1.4.0 returned the 14 digits alone, which is still accepted.
/// - DataBar Expanded: ZBar and zxing-cpp 3 return the element string with GS after variable-length
///   fields; zxing-cpp 1.4 returned its human-readable form "(01)…(3202)…" in bytes(), still accepted.
/// - Codabar: both return start/stop characters (zxing-cpp 3 always).
enum Normalizer {
  static func normalize(_ symbol: RawSymbol, enabled: Set<BarcodeFormat>) -> RawSymbol? {
    var symbol = symbol
    switch symbol.format {
    case .ean13, .upcA, .isbn13, .isbn10:
      guard let gtin = GTIN.ean13Digits(symbol.format, symbol.bytes),
        let chosen = GTIN.choose(gtin, enabled: enabled)
      else { return nil }
      symbol.format = chosen.format
      symbol.bytes = chosen.bytes
    case .dataBar, .dataBarLimited:
      // GS1 DataBar Omnidirectional and Limited carry a GTIN-14 under the implied AI (01).
      if symbol.bytes.count == 14 && symbol.bytes.allSatisfy(GTIN.isDigit) {
        symbol.bytes = Array("01".utf8) + symbol.bytes
      }
    case .dataBarExpanded:
      if symbol.bytes.first == UInt8(ascii: "(") { symbol.bytes = GS1.elementString(fromHRI: symbol.bytes) }
    default:
      break
    }
    return enabled.contains(symbol.format) ? symbol : nil
  }
}

enum GTIN {
  /// Formats decoded from EAN-13/UPC-A/UPC-E symbols.
  static let family: Set<BarcodeFormat> = [.ean13, .upcA, .upcE, .isbn10, .isbn13]

  static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

  /// The 13 digits of an EAN-13 symbol, from any decoder's view of it.
  static func ean13Digits(_ format: BarcodeFormat, _ bytes: [UInt8]) -> [UInt8]? {
    switch format {
    case .ean13, .isbn13:
      return bytes.count == 13 && bytes.allSatisfy(isDigit) ? bytes : nil
    case .upcA:
      // UPC-A is EAN-13 with number system 0 (GS1 General Specifications: UPC-A is a subset of EAN-13).
      return bytes.count == 12 && bytes.allSatisfy(isDigit) ? [UInt8(ascii: "0")] + bytes : nil
    case .isbn10:
      // ISBN-10 "ABCDEFGHIJ" is EAN-13 "978ABCDEFGHI" + a new EAN check digit.
      guard bytes.count == 10, bytes.prefix(9).allSatisfy(isDigit) else { return nil }
      let body = Array("978".utf8) + bytes.prefix(9)
      return body + [checkDigit(body)]
    default:
      return nil
    }
  }

  /// Picks the most specific enabled format for an EAN-13 symbol's digits:
  /// UPC-A (leading 0) > ISBN-13 (978/979) > ISBN-10 (978 only) > EAN-13.
  /// The specific formats only exist when enabled, so a caller enabling just EAN-13 gets every EAN/UPC-A
  /// symbol as EAN-13 (UPC-A with its leading 0), as both libraries do; one enabling just UPC-A gets only
  /// the number-system-0 symbols. When EAN-13 and UPC-A are both enabled a leading-0 symbol is UPC-A
  /// (12 digits), matching zxing-cpp and ZBar with both enabled.
  static func choose(_ digits: [UInt8], enabled: Set<BarcodeFormat>) -> (
    format: BarcodeFormat, bytes: [UInt8]
  )? {
    let prefix = String(decoding: digits.prefix(3), as: UTF8.self)
    if digits.first == UInt8(ascii: "0") && enabled.contains(.upcA) {
      return (.upcA, Array(digits.dropFirst()))
    }
    if (prefix == "978" || prefix == "979") && enabled.contains(.isbn13) { return (.isbn13, digits) }
    if prefix == "978" && enabled.contains(.isbn10) { return (.isbn10, isbn10(digits)) }
    if enabled.contains(.ean13) { return (.ean13, digits) }
    return nil
  }

  /// GS1 mod-10 check digit over the digits given (weights 3,1,3,… from the right).
  static func checkDigit(_ digits: [UInt8]) -> UInt8 {
    var sum = 0
    for (offset, digit) in digits.reversed().enumerated() {
      sum += Int(digit - UInt8(ascii: "0")) * (offset % 2 == 0 ? 3 : 1)
    }
    return UInt8(ascii: "0") + UInt8((10 - sum % 10) % 10)
  }

  /// ISBN-10 from a 978 EAN-13: digits 4-12, then the mod-11 check (weights 10…2; 10 is written "X").
  static func isbn10(_ digits: [UInt8]) -> [UInt8] {
    let body = Array(digits[3..<12])
    var sum = 0
    for (index, digit) in body.enumerated() { sum += Int(digit - UInt8(ascii: "0")) * (10 - index) }
    let check = (11 - sum % 11) % 11
    return body + [check == 10 ? UInt8(ascii: "X") : UInt8(ascii: "0") + UInt8(check)]
  }
}

enum GS1 {
  static let groupSeparator: UInt8 = 0x1D

  /// Two-digit AI prefixes whose element length is predefined (GS1 General Specifications, "predefined
  /// length" table: 00, 01-04, 11-20, 31-36, 41; value = AI + data length). Any other element is variable
  /// length and needs an FNC1 separator, transmitted as GS, when another element follows.
  static let predefinedLength: [String: Int] = [
    "00": 20, "01": 16, "02": 16, "03": 16, "04": 18, "11": 8, "12": 8, "13": 8, "14": 8, "15": 8, "16": 8,
    "17": 8,
    "18": 8, "19": 8, "20": 4, "31": 10, "32": 10, "33": 10, "34": 10, "35": 10, "36": 10, "41": 16,
  ]

  /// "(01)98898765432106(3202)012345" → "0198898765432106" "3202012345", GS after variable-length elements.
  /// An element starts at "(" followed by 2-4 digits and ")"; other parentheses are data.
  static func elementString(fromHRI hri: [UInt8]) -> [UInt8] {
    var elements: [(ai: [UInt8], value: [UInt8])] = []
    var index = 0
    while index < hri.count {
      if let found = aiAt(hri, index) {
        elements.append((found.ai, []))
        index = found.next
      } else {
        if elements.isEmpty { return hri }  // not HRI after all: leave untouched
        elements[elements.count - 1].value.append(hri[index])
        index += 1
      }
    }
    var out: [UInt8] = []
    for (offset, element) in elements.enumerated() {
      out += element.ai + element.value
      let key = String(decoding: element.ai.prefix(2), as: UTF8.self)
      if offset < elements.count - 1 && predefinedLength[key] == nil { out.append(groupSeparator) }
    }
    return out
  }

  private static func aiAt(_ bytes: [UInt8], _ index: Int) -> (ai: [UInt8], next: Int)? {
    guard bytes[index] == UInt8(ascii: "(") else { return nil }
    var end = index + 1
    while end < bytes.count && GTIN.isDigit(bytes[end]) && end - index <= 4 { end += 1 }
    let length = end - index - 1
    guard (2...4).contains(length), end < bytes.count, bytes[end] == UInt8(ascii: ")") else { return nil }
    return (Array(bytes[(index + 1)..<end]), end + 1)
  }
}
