/// RFC 4648 §4 base64 with padding: the `bytes` of an event (docs/architecture.md §1 "Output").
public enum Base64 {
  static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

  public static func encode(_ bytes: [UInt8]) -> String {
    var out = [UInt8]()
    out.reserveCapacity((bytes.count + 2) / 3 * 4)
    var i = 0
    while i + 3 <= bytes.count {
      let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
      // Four appends, not an array literal: no allocation per 3 bytes.
      out.append(alphabet[Int(v >> 18)])
      out.append(alphabet[Int(v >> 12 & 63)])
      out.append(alphabet[Int(v >> 6 & 63)])
      out.append(alphabet[Int(v & 63)])
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
