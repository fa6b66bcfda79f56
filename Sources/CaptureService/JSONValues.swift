import CaptureCore

/// What the service reads out of a parsed request (JSONParser, CaptureContract).
extension JSON {
  subscript(key: String) -> JSON? {
    if case .object(let members) = self { return members[key] }
    return nil
  }

  /// An integer value: `.number`, or a literal with an integral value in Int64 (`5.0`, `1e2`).
  var integer: Int64? {
    switch self {
    case .number(let n): return n
    case .literal(let text):
      guard let d = Double(text), d.rounded() == d, abs(d) < 9.2e18 else { return nil }
      return Int64(d)
    default: return nil
    }
  }

  var string: String? {
    if case .string(let s) = self { return s }
    return nil
  }

  var isNull: Bool { self == .null }
}
