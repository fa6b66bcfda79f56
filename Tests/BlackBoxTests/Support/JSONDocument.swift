// A strict JSON reader that keeps object members in the order they were written, so tests can check
// both that a line is valid JSON (RFC 8259) and that its keys are sorted.

enum JSONValue: Equatable, CustomStringConvertible {
  case null
  case bool(Bool)
  /// Numbers kept as written (the product only writes integers).
  case number(String)
  case string(String)
  case array([JSONValue])
  /// Members in document order.
  case object([(key: String, value: JSONValue)])

  static func == (a: JSONValue, b: JSONValue) -> Bool {
    switch (a, b) {
    case (.null, .null): true
    case (.bool(let x), .bool(let y)): x == y
    case (.number(let x), .number(let y)): x == y
    case (.string(let x), .string(let y)): x == y
    case (.array(let x), .array(let y)): x == y
    case (.object(let x), .object(let y)): x.map(\.key) == y.map(\.key) && x.map(\.value) == y.map(\.value)
    default: false
    }
  }

  var description: String {
    switch self {
    case .null: "null"
    case .bool(let b): String(b)
    case .number(let n): n
    case .string(let s): "\"\(s)\""
    case .array(let a): "[" + a.map(\.description).joined(separator: ",") + "]"
    case .object(let m): "{" + m.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
    }
  }

  subscript(key: String) -> JSONValue? {
    if case .object(let members) = self { return members.first { $0.key == key }?.value }
    return nil
  }

  subscript(index: Int) -> JSONValue? {
    if case .array(let items) = self, items.indices.contains(index) { return items[index] }
    return nil
  }

  var string: String? { if case .string(let s) = self { s } else { nil } }
  var int: Int? { if case .number(let n) = self { Int(n) } else { nil } }
  var array: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
  var keys: [String]? { if case .object(let m) = self { m.map(\.key) } else { nil } }

  /// Keys of every object at any depth are camelCase: a lower-case ASCII letter, then ASCII letters and digits.
  var keysAreCamelCase: Bool {
    switch self {
    case .array(let items): return items.allSatisfy(\.keysAreCamelCase)
    case .object(let members):
      return members.allSatisfy { member in
        let scalars = Array(member.key.unicodeScalars)
        guard let first = scalars.first, ("a"..."z").contains(first) else { return false }
        return scalars.allSatisfy {
          ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
        }
          && member.value.keysAreCamelCase
      }
    default: return true
    }
  }

  /// Keys of every object at any depth are in Unicode code-point order, with no duplicates.
  var keysAreSorted: Bool {
    switch self {
    case .array(let items): return items.allSatisfy(\.keysAreSorted)
    case .object(let members):
      let keys = members.map(\.key)
      for (a, b) in zip(keys, keys.dropFirst())
      where !a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars) {
        return false
      }
      return members.allSatisfy(\.value.keysAreSorted)
    default: return true
    }
  }
}

struct JSONSyntaxError: Error, CustomStringConvertible {
  var offset: Int
  var reason: String
  var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

/// Parses exactly one JSON document (surrounding whitespace allowed, nothing else).
func parseJSON(_ text: String) throws -> JSONValue {
  var reader = JSONReader(bytes: Array(text.utf8))
  reader.skipSpace()
  let value = try reader.value(depth: 0)
  reader.skipSpace()
  guard reader.index == reader.bytes.count else { throw reader.fail("trailing characters") }
  return value
}

private struct JSONReader {
  let bytes: [UInt8]
  var index = 0

  init(bytes: [UInt8]) { self.bytes = bytes }

  func fail(_ reason: String) -> JSONSyntaxError { JSONSyntaxError(offset: index, reason: reason) }

  var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

  mutating func skipSpace() {
    while let b = peek, b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D { index += 1 }
  }

  mutating func expect(_ literal: String) throws {
    for b in literal.utf8 {
      guard peek == b else { throw fail("expected \(literal)") }
      index += 1
    }
  }

  mutating func value(depth: Int) throws -> JSONValue {
    guard depth < 200 else { throw fail("nested too deeply") }
    guard let b = peek else { throw fail("unexpected end") }
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
    default: return .number(try number())
    }
  }

  mutating func object(depth: Int) throws -> JSONValue {
    index += 1
    var members: [(key: String, value: JSONValue)] = []
    skipSpace()
    if peek == UInt8(ascii: "}") {
      index += 1
      return .object(members)
    }
    while true {
      skipSpace()
      guard peek == UInt8(ascii: "\"") else { throw fail("expected a key") }
      let key = try string()
      skipSpace()
      try expect(":")
      skipSpace()
      members.append((key, try value(depth: depth + 1)))
      skipSpace()
      if peek == UInt8(ascii: ",") {
        index += 1
        continue
      }
      try expect("}")
      return .object(members)
    }
  }

  mutating func array(depth: Int) throws -> JSONValue {
    index += 1
    var items: [JSONValue] = []
    skipSpace()
    if peek == UInt8(ascii: "]") {
      index += 1
      return .array(items)
    }
    while true {
      skipSpace()
      items.append(try value(depth: depth + 1))
      skipSpace()
      if peek == UInt8(ascii: ",") {
        index += 1
        continue
      }
      try expect("]")
      return .array(items)
    }
  }

  mutating func number() throws -> String {
    let start = index
    func digits() -> Int {
      var n = 0
      while let b = peek, b >= 0x30 && b <= 0x39 {
        index += 1
        n += 1
      }
      return n
    }
    if peek == UInt8(ascii: "-") { index += 1 }
    if peek == UInt8(ascii: "0") {
      index += 1
    } else if digits() == 0 {
      throw fail("expected a value")
    }
    if peek == UInt8(ascii: ".") {
      index += 1
      guard digits() > 0 else { throw fail("digits expected after '.'") }
    }
    if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
      index += 1
      if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
      guard digits() > 0 else { throw fail("digits expected in exponent") }
    }
    return String(decoding: bytes[start..<index], as: UTF8.self)
  }

  mutating func hex4() throws -> UInt32 {
    guard index + 4 <= bytes.count else { throw fail("short \\u escape") }
    var v: UInt32 = 0
    for _ in 0..<4 {
      let b = bytes[index]
      let d: UInt32
      switch b {
      case 0x30...0x39: d = UInt32(b - 0x30)
      case 0x41...0x46: d = UInt32(b - 0x41 + 10)
      case 0x61...0x66: d = UInt32(b - 0x61 + 10)
      default: throw fail("bad hex digit in \\u escape")
      }
      v = v << 4 | d
      index += 1
    }
    return v
  }

  mutating func string() throws -> String {
    index += 1
    var scalars = String.UnicodeScalarView()
    var raw: [UInt8] = []
    func flush() throws {
      guard !raw.isEmpty else { return }
      guard let s = String(validating: raw, as: UTF8.self) else { throw fail("invalid UTF-8 in string") }
      scalars.append(contentsOf: s.unicodeScalars)
      raw.removeAll()
    }
    while true {
      guard let b = peek else { throw fail("unterminated string") }
      index += 1
      switch b {
      case UInt8(ascii: "\""):
        try flush()
        return String(scalars)
      case UInt8(ascii: "\\"):
        try flush()
        guard let e = peek else { throw fail("unterminated escape") }
        index += 1
        switch e {
        case UInt8(ascii: "\""): scalars.append("\"")
        case UInt8(ascii: "\\"): scalars.append("\\")
        case UInt8(ascii: "/"): scalars.append("/")
        case UInt8(ascii: "b"): scalars.append("\u{08}")
        case UInt8(ascii: "f"): scalars.append("\u{0C}")
        case UInt8(ascii: "n"): scalars.append("\n")
        case UInt8(ascii: "r"): scalars.append("\r")
        case UInt8(ascii: "t"): scalars.append("\t")
        case UInt8(ascii: "u"):
          var code = try hex4()
          if (0xD800...0xDBFF).contains(code) {
            try expect("\\u")
            let low = try hex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw fail("lone high surrogate") }
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
          }
          guard let scalar = Unicode.Scalar(code) else { throw fail("lone surrogate") }
          scalars.append(scalar)
        default: throw fail("unknown escape")
        }
      case 0x00..<0x20: throw fail("control character in string")
      default: raw.append(b)
      }
    }
  }
}
