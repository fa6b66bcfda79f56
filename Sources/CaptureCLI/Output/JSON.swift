/// A JSON value written with sorted keys (code-point order), no escaped slashes and no insignificant
/// whitespace: byte-identical output for identical input, one line per document (JSON Lines).
/// Hand-written rather than JSONEncoder so events of different shapes need no Codable wrappers and a
/// stream of a million events costs one small string each.
enum JSON: Sendable, Equatable {
  case null
  case bool(Bool)
  case number(Int64)
  case string(String)
  case array([JSON])
  case object([String: JSON])

  static func int<T: BinaryInteger>(_ v: T) -> JSON { .number(Int64(v)) }

  var serialized: String {
    var out = ""
    write(to: &out)
    return out
  }

  func write(to out: inout String) {
    switch self {
    case .null: out += "null"
    case .bool(let b): out += b ? "true" : "false"
    case .number(let i): out += String(i)
    case .string(let s): JSON.writeString(s, to: &out)
    case .array(let items):
      out += "["
      for (i, item) in items.enumerated() {
        if i > 0 { out += "," }
        item.write(to: &out)
      }
      out += "]"
    case .object(let members):
      out += "{"
      // Keys sort by Unicode code point so the order never changes between runs.
      for (i, key) in members.keys.sorted(by: {
        $0.unicodeScalars.lexicographicallyPrecedes($1.unicodeScalars)
      })
      .enumerated() {
        if i > 0 { out += "," }
        JSON.writeString(key, to: &out)
        out += ":"
        members[key]!.write(to: &out)
      }
      out += "}"
    }
  }

  static func writeString(_ s: String, to out: inout String) {
    out += "\""
    for scalar in s.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      case "\u{08}": out += "\\b"
      case "\u{0C}": out += "\\f"
      case _
      where scalar.value < 0x20 || scalar.value == 0x7F || scalar.value == 0x2028 || scalar.value == 0x2029:
        let hex = String(scalar.value, radix: 16, uppercase: false)
        out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
      default: out.unicodeScalars.append(scalar)
      }
    }
    out += "\""
  }
}

enum Base64 {
  static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

  static func encode(_ bytes: [UInt8]) -> String {
    var out = [UInt8]()
    out.reserveCapacity((bytes.count + 2) / 3 * 4)
    var i = 0
    while i + 3 <= bytes.count {
      let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
      out += [
        alphabet[Int(v >> 18)], alphabet[Int(v >> 12 & 63)], alphabet[Int(v >> 6 & 63)],
        alphabet[Int(v & 63)],
      ]
      i += 3
    }
    let rest = bytes.count - i
    if rest == 1 {
      let v = UInt32(bytes[i]) << 16
      out += [alphabet[Int(v >> 18)], alphabet[Int(v >> 12 & 63)], UInt8(ascii: "="), UInt8(ascii: "=")]
    } else if rest == 2 {
      let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
      out += [
        alphabet[Int(v >> 18)], alphabet[Int(v >> 12 & 63)], alphabet[Int(v >> 6 & 63)], UInt8(ascii: "="),
      ]
    }
    return String(decoding: out, as: UTF8.self)
  }
}
