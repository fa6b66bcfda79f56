import CaptureCore

/// The one reader of JSON from outside the process (RFC 8259): a `capture serve` request body or
/// WebSocket message, a remote command on `PREFIX/HOST/commands`. Both bounds are checked before or
/// while reading, never after: the size before the first byte is read, so an over-size text costs
/// nothing to refuse, and the nesting at each level, so a hostile `[[[[…` cannot exhaust the stack.
/// An integer that fits Int64 is `.number`; any other number keeps its exact text (`.literal`), so an
/// id such as `1.5` or `1e3` is echoed as it was sent (docs/capturejs.md §2).
public enum JSONParser {
  public struct Failure: Error, Equatable {
    public enum Kind: Sendable, Equatable {
      /// Longer than the caller's bound: refused before it was read.
      case tooLarge
      /// Nested deeper than `maximumDepth`.
      case tooDeep
      /// Not one JSON text.
      case malformed
    }
    public var kind: Kind
    public var message: String

    public init(kind: Kind, message: String) {
      self.kind = kind
      self.message = message
    }
  }

  /// Deeper than any request of either front end (a property value or a profile setting is at most
  /// three levels down).
  public static let maximumDepth = 64

  /// The one JSON value `bytes` holds. `maximumSize`: the most bytes the caller takes, checked first.
  public static func parse(_ bytes: [UInt8], maximumSize: Int) throws(Failure) -> JSON {
    guard bytes.count <= maximumSize else {
      throw Failure(kind: .tooLarge, message: "larger than \(maximumSize) bytes")
    }
    var reader = Reader(bytes: bytes)
    reader.skipSpace()
    let value = try reader.value(depth: 0)
    reader.skipSpace()
    guard reader.at == bytes.count else { throw reader.fail("unexpected text after the JSON value") }
    return value
  }

  /// The members of the object `bytes` opens with, read in order from its first `maximumSize` bytes
  /// only, up to the first that cannot be read whole there (or the object's end): for a text refused
  /// as too large, what is needed to answer it (a remote command's id) without reading the rest.
  public static func leadingMembers(of bytes: [UInt8], maximumSize: Int) -> [String: JSON] {
    var reader = Reader(bytes: Array(bytes.prefix(max(0, maximumSize))))
    var members: [String: JSON] = [:]
    reader.skipSpace()
    guard reader.peek == UInt8(ascii: "{") else { return members }
    reader.at += 1
    while true {
      guard let member = try? reader.member(depth: 0) else { return members }
      members[member.key] = member.value
      reader.skipSpace()
      guard reader.peek == UInt8(ascii: ",") else { return members }
      reader.at += 1
    }
  }

  private struct Reader {
    let bytes: [UInt8]
    var at = 0

    func fail(_ message: String, _ kind: Failure.Kind = .malformed) -> Failure {
      Failure(kind: kind, message: "\(message) at byte \(at)")
    }

    var peek: UInt8? { at < bytes.count ? bytes[at] : nil }

    mutating func skipSpace() {
      while let b = peek, b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D { at += 1 }
    }

    mutating func expect(_ word: String) throws(Failure) {
      for b in word.utf8 {
        guard peek == b else { throw fail("invalid literal") }
        at += 1
      }
    }

    mutating func value(depth: Int) throws(Failure) -> JSON {
      guard depth < JSONParser.maximumDepth else {
        throw fail("nested deeper than \(JSONParser.maximumDepth)", .tooDeep)
      }
      guard let b = peek else { throw fail("unexpected end of input") }
      switch b {
      case UInt8(ascii: "{"): return try object(depth: depth)
      case UInt8(ascii: "["): return try array(depth: depth)
      case UInt8(ascii: "\""): return .string(try string())
      case UInt8(ascii: "t"):
        try expect("true")
        return .bool(true)
      case UInt8(ascii: "f"):
        try expect("false")
        return .bool(false)
      case UInt8(ascii: "n"):
        try expect("null")
        return .null
      case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
      default: throw fail("unexpected character")
      }
    }

    mutating func object(depth: Int) throws(Failure) -> JSON {
      at += 1
      var members: [String: JSON] = [:]
      skipSpace()
      if peek == UInt8(ascii: "}") {
        at += 1
        return .object(members)
      }
      while true {
        let member = try member(depth: depth)
        // A repeated name keeps its last value, as JavaScript's JSON.parse does.
        members[member.key] = member.value
        skipSpace()
        switch peek {
        case UInt8(ascii: ","): at += 1
        case UInt8(ascii: "}"):
          at += 1
          return .object(members)
        default: throw fail("expected ',' or '}'")
        }
      }
    }

    /// One `"name": value` of an object at `depth`, from the space before its name.
    mutating func member(depth: Int) throws(Failure) -> (key: String, value: JSON) {
      skipSpace()
      guard peek == UInt8(ascii: "\"") else { throw fail("expected a member name") }
      let key = try string()
      skipSpace()
      guard peek == UInt8(ascii: ":") else { throw fail("expected ':'") }
      at += 1
      skipSpace()
      return (key, try value(depth: depth + 1))
    }

    mutating func array(depth: Int) throws(Failure) -> JSON {
      at += 1
      var items: [JSON] = []
      skipSpace()
      if peek == UInt8(ascii: "]") {
        at += 1
        return .array(items)
      }
      while true {
        skipSpace()
        items.append(try value(depth: depth + 1))
        skipSpace()
        switch peek {
        case UInt8(ascii: ","): at += 1
        case UInt8(ascii: "]"):
          at += 1
          return .array(items)
        default: throw fail("expected ',' or ']'")
        }
      }
    }

    mutating func hex4() throws(Failure) -> UInt32 {
      guard at + 4 <= bytes.count else { throw fail("short \\u escape") }
      var v: UInt32 = 0
      for _ in 0..<4 {
        let b = bytes[at]
        let digit: UInt8
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - UInt8(ascii: "A") + 10
        default: throw fail("bad \\u escape")
        }
        v = v << 4 | UInt32(digit)
        at += 1
      }
      return v
    }

    mutating func string() throws(Failure) -> String {
      at += 1
      var out: [UInt8] = []
      var runStart = at
      while true {
        guard let b = peek else { throw fail("unterminated string") }
        if b == UInt8(ascii: "\"") {
          out += bytes[runStart..<at]
          at += 1
          break
        }
        if b < 0x20 { throw fail("control character in a string") }
        if b != UInt8(ascii: "\\") {
          at += 1
          continue
        }
        out += bytes[runStart..<at]
        at += 1
        guard let e = peek else { throw fail("unterminated escape") }
        at += 1
        switch e {
        case UInt8(ascii: "\""): out.append(0x22)
        case UInt8(ascii: "\\"): out.append(0x5C)
        case UInt8(ascii: "/"): out.append(0x2F)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
          var scalar = try hex4()
          if (0xD800...0xDBFF).contains(scalar), at + 6 <= bytes.count, bytes[at] == UInt8(ascii: "\\"),
            bytes[at + 1] == UInt8(ascii: "u")
          {
            at += 2
            let low = try hex4()
            if (0xDC00...0xDFFF).contains(low) {
              scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else {
              // A lone high surrogate followed by another escape: both stand, the first replaced.
              out += "\u{FFFD}".utf8
              scalar = low
            }
          }
          // A lone surrogate cannot be UTF-8; it becomes U+FFFD, as JavaScript shows it.
          out += String(Character(Unicode.Scalar(scalar) ?? "\u{FFFD}")).utf8
        default: throw fail("bad escape")
        }
        runStart = at
      }
      guard let text = String(validating: out, as: UTF8.self) else { throw fail("string is not UTF-8") }
      return text
    }

    mutating func number() throws(Failure) -> JSON {
      let start = at
      var integral = true
      if peek == UInt8(ascii: "-") { at += 1 }
      guard let first = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else {
        throw fail("bad number")
      }
      if first == UInt8(ascii: "0") {
        at += 1
      } else {
        while let d = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(d) { at += 1 }
      }
      if peek == UInt8(ascii: ".") {
        integral = false
        at += 1
        guard let d = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(d) else {
          throw fail("bad number")
        }
        while let d = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(d) { at += 1 }
      }
      if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
        integral = false
        at += 1
        if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { at += 1 }
        guard let d = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(d) else {
          throw fail("bad number")
        }
        while let d = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(d) { at += 1 }
      }
      let text = String(decoding: bytes[start..<at], as: UTF8.self)
      if integral, let n = Int64(text) { return .number(n) }
      return .literal(text)
    }
  }
}
