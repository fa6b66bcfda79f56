// Name helpers shared by the model tables. The CLI spells SDK names in kebab-case (docs/architecture.md §1,
// PROPERTY), so one rule must turn every SDK spelling (docs/capture-sdk.md §0 naming table) into one stable
// form.

/// Converts a CamelCase SDK name to kebab-case.
///
/// A hyphen goes before an uppercase letter that follows a lowercase letter or a digit, or that follows an
/// uppercase letter and precedes a lowercase one (the end of an acronym); then everything is lowercased.
/// `"QRCode"` → `"qr-code"`, `"Gs1Databar"` → `"gs1-databar"`, `"Interleaved2of5"` → `"interleaved2of5"`,
/// `"UpcE0"` → `"upc-e0"`, `"MicroQRCode"` → `"micro-qr-code"`.
public func kebabCase(_ camel: String) -> String {
  let chars = Array(camel)
  var out = ""
  out.reserveCapacity(chars.count + 4)
  for (i, c) in chars.enumerated() {
    if c.isUppercase, i > 0 {
      let prev = chars[i - 1]
      let next: Character? = i + 1 < chars.count ? chars[i + 1] : nil
      if prev.isLowercase || prev.isNumber || (prev.isUppercase && next?.isLowercase == true) {
        out.append("-")
      }
    }
    out.append(contentsOf: c.lowercased())
  }
  return out
}

/// Lower-cases and drops `-`, `_`, spaces and dots, so "QR Code", "qr-code" and "QRCode" compare equal.
func lookupKey(_ text: some StringProtocol) -> String {
  String(text.lowercased().filter { $0 != "-" && $0 != "_" && $0 != " " && $0 != "." })
}

/// Parses a decimal (optionally negative) or `0x` hexadecimal integer, as typed on a command line.
func parseInteger(_ text: some StringProtocol) -> Int64? {
  let t = text.trimmingWhitespace()
  var negative = false
  var body = Substring(t)
  if body.hasPrefix("-") {
    negative = true
    body = body.dropFirst()
  } else if body.hasPrefix("+") {
    body = body.dropFirst()
  }
  let value: Int64?
  if body.lowercased().hasPrefix("0x") {
    value = Int64(body.dropFirst(2), radix: 16)
  } else {
    value = Int64(body, radix: 10)
  }
  guard let value, !body.isEmpty else { return nil }
  return negative ? -value : value
}

/// `0x` followed by `digits` uppercase hexadecimal digits, zero-padded (the reference's hex style).
func hexString(_ value: UInt32, digits: Int = 8) -> String {
  let hex = String(value, radix: 16, uppercase: true)
  return "0x" + String(repeating: "0", count: max(0, digits - hex.count)) + hex
}

extension StringProtocol {
  func trimmingWhitespace() -> String {
    var s = Substring(self)
    while let f = s.first, f.isWhitespace { s = s.dropFirst() }
    while let l = s.last, l.isWhitespace { s = s.dropLast() }
    return String(s)
  }
}
