/// A JSON value written with sorted keys (code-point order), no escaped slashes and no insignificant
/// whitespace: byte-identical output for identical input, one line per document (JSON Lines).
/// Hand-written rather than JSONEncoder so events of different shapes need no Codable wrappers and a
/// stream of a million events costs one small string each. Shared by the front ends: the command
/// line's documents and event lines, the Capture service's JSON-RPC replies and event messages.
public enum JSON: Sendable, Equatable {
  case null
  case bool(Bool)
  case number(Int64)
  /// A number written exactly as it was read (a fraction, an exponent, beyond Int64): a JSON-RPC
  /// request's id is echoed with its own JSON type and spelling (docs/capturejs.md §2). The text must
  /// be a valid JSON number; only the service's parser makes one.
  case literal(String)
  case string(String)
  case array([JSON])
  case object([String: JSON])

  public static func int<T: BinaryInteger>(_ v: T) -> JSON { .number(Int64(v)) }

  public var serialized: String {
    var out: [UInt8] = []
    out.reserveCapacity(256)
    write(to: &out)
    return String(decoding: out, as: UTF8.self)
  }

  /// Serializes into UTF-8 bytes: a listen stream serializes every event, and appending bytes runs of
  /// a string at a time costs a fraction of appending it Unicode scalar by Unicode scalar.
  public func write(to out: inout [UInt8]) {
    switch self {
    case .null: out += "null".utf8
    case .bool(let b): out += (b ? "true" : "false").utf8
    case .number(let i): out += String(i).utf8
    case .literal(let text): out += text.utf8
    case .string(let s): JSON.writeString(s, to: &out)
    case .array(let items):
      out.append(UInt8(ascii: "["))
      for (i, item) in items.enumerated() {
        if i > 0 { out.append(UInt8(ascii: ",")) }
        item.write(to: &out)
      }
      out.append(UInt8(ascii: "]"))
    case .object(let members):
      out.append(UInt8(ascii: "{"))
      // Keys sort by Unicode code point so the order never changes between runs; UTF-8 byte order is
      // code point order (RFC 3629 §1), so the bytes are compared directly. The members are sorted as
      // pairs, so no key is hashed again to find its value (bench/instructions.py: every event is an
      // object of objects).
      var first = true
      for (key, value) in members.sorted(by: { JSON.precedes($0.key, $1.key) }) {
        if !first { out.append(UInt8(ascii: ",")) }
        first = false
        JSON.writeString(key, to: &out)
        out.append(UInt8(ascii: ":"))
        value.write(to: &out)
      }
      out.append(UInt8(ascii: "}"))
    }
  }

  /// UTF-8 byte order of two strings, on their contiguous bytes where they have them (native strings
  /// always do, small ones on the stack): a byte loop instead of the generic element-by-element
  /// comparison of two `UTF8View`s, which cost more than writing the keys.
  static func precedes(_ a: String, _ b: String) -> Bool {
    let fast = a.utf8.withContiguousStorageIfAvailable { x in
      b.utf8.withContiguousStorageIfAvailable { y -> Bool in
        let n = Swift.min(x.count, y.count)
        var i = 0
        while i < n {
          if x[i] != y[i] { return x[i] < y[i] }
          i += 1
        }
        return x.count < y.count
      }
    }
    if let fast, let result = fast { return result }
    return a.utf8.lexicographicallyPrecedes(b.utf8)
  }

  /// A JSON string: `"` and `\` escaped, the short escapes for \b \f \n \r \t, `\u00xx` for the other
  /// C0 controls and DEL, and `\u2028`/`\u2029` (line separators to JavaScript); everything else as
  /// is. Works on the UTF-8 bytes: every byte below 0x80 is a whole scalar, and U+2028/U+2029 are the
  /// only multi-byte scalars escaped (E2 80 A8 / E2 80 A9); runs needing no escape are copied at once.
  public static func writeString(_ s: String, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    var text = s
    text.withUTF8 { u in
      var run = 0
      var i = 0
      func flush(_ end: Int) {
        if end > run { out.append(contentsOf: UnsafeBufferPointer(rebasing: u[run..<end])) }
      }
      while i < u.count {
        let b = u[i]
        if b >= 0x20 && b < 0x7F && b != 0x22 && b != 0x5C {
          i += 1
          continue
        }
        if b >= 0x80 {
          if b == 0xE2 && i + 2 < u.count && u[i + 1] == 0x80 && (u[i + 2] == 0xA8 || u[i + 2] == 0xA9) {
            flush(i)
            out += (u[i + 2] == 0xA8 ? "\\u2028" : "\\u2029").utf8
            i += 3
            run = i
          } else {
            i += 1
          }
          continue
        }
        flush(i)
        switch b {
        case 0x22: out += "\\\"".utf8
        case 0x5C: out += "\\\\".utf8
        case 0x0A: out += "\\n".utf8
        case 0x0D: out += "\\r".utf8
        case 0x09: out += "\\t".utf8
        case 0x08: out += "\\b".utf8
        case 0x0C: out += "\\f".utf8
        default:
          let digits = Array("0123456789abcdef".utf8)
          out += "\\u00".utf8
          out.append(digits[Int(b >> 4)])
          out.append(digits[Int(b & 0xF)])
        }
        i += 1
        run = i
      }
      flush(u.count)
    }
    out.append(UInt8(ascii: "\""))
  }
}
