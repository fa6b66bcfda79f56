/// One value of the D-Bus type system (D-Bus specification, "Type System").
///
/// Each case is one type code: the basic types, then the containers. A container carries what its
/// signature needs even when it is empty: an array knows its element signature, so `as` with no
/// elements still marshals as `as`. Dictionaries are arrays of dict entries, exactly as on the wire:
/// `a{sv}` is `.array(elementSignature: "{sv}", [.dictEntry(.string(k), .variant(v)), ...])`;
/// ``stringDict(_:)`` builds one.
///
/// Values are checked when marshalled, not when built: an array whose elements do not match its
/// element signature, a dict entry outside an array, an invalid object path or a string containing
/// NUL makes the send fail with `org.freedesktop.DBus.Error.InvalidArgs` (``DBusError/Name/invalidArgs``)
/// instead of reaching libdbus, which aborts the process on invalid input.
///
/// Only the cases that contain a single nested value are `indirect`: arrays and structures already
/// hold their elements in an `Array` buffer, and boxing every byte of an `ay` would cost one heap
/// allocation per byte.
public enum DBusValue: Sendable, Hashable {
  case byte(UInt8)
  case boolean(Bool)
  case int16(Int16)
  case uint16(UInt16)
  case int32(Int32)
  case uint32(UInt32)
  case int64(Int64)
  case uint64(UInt64)
  case double(Double)
  case string(String)
  case objectPath(String)
  case signature(String)
  /// An array of values that all have the single complete type `elementSignature`.
  case array(elementSignature: String, [DBusValue])
  /// A dict entry `{kv}`: valid only as an element of an array; the key must be a basic type.
  indirect case dictEntry(DBusValue, DBusValue)
  /// A variant: a value together with its own signature.
  indirect case variant(DBusValue)
  /// A struct `(...)` of one or more values.
  case structure([DBusValue])
  /// A Unix file descriptor (`h`). Sending duplicates the descriptor (libdbus dups it when the value
  /// is appended); the caller keeps its own. A received `unixFD` is a new descriptor owned by the
  /// receiver, who must close it; a signal delivered to several streams shares one descriptor.
  case unixFD(Int32)

  /// The D-Bus signature of this value: one single complete type.
  public var signature: String {
    switch self {
    case .byte: "y"
    case .boolean: "b"
    case .int16: "n"
    case .uint16: "q"
    case .int32: "i"
    case .uint32: "u"
    case .int64: "x"
    case .uint64: "t"
    case .double: "d"
    case .string: "s"
    case .objectPath: "o"
    case .signature: "g"
    case .unixFD: "h"
    case .variant: "v"
    case .array(let element, _): "a" + element
    case .dictEntry(let key, let value): "{" + key.signature + value.signature + "}"
    case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
    }
  }

  /// The type code (first character of the signature) as the ASCII byte libdbus uses.
  var typeCode: UInt8 {
    switch self {
    case .byte: UInt8(ascii: "y")
    case .boolean: UInt8(ascii: "b")
    case .int16: UInt8(ascii: "n")
    case .uint16: UInt8(ascii: "q")
    case .int32: UInt8(ascii: "i")
    case .uint32: UInt8(ascii: "u")
    case .int64: UInt8(ascii: "x")
    case .uint64: UInt8(ascii: "t")
    case .double: UInt8(ascii: "d")
    case .string: UInt8(ascii: "s")
    case .objectPath: UInt8(ascii: "o")
    case .signature: UInt8(ascii: "g")
    case .unixFD: UInt8(ascii: "h")
    case .variant: UInt8(ascii: "v")
    case .array: UInt8(ascii: "a")
    case .dictEntry: UInt8(ascii: "{")
    case .structure: UInt8(ascii: "(")
    }
  }
}

// MARK: - Convenience constructors

extension DBusValue {
  /// `ay`.
  public static func bytes(_ bytes: [UInt8]) -> DBusValue {
    .array(elementSignature: "y", bytes.map { .byte($0) })
  }

  /// `as`.
  public static func strings(_ strings: [String]) -> DBusValue {
    .array(elementSignature: "s", strings.map { .string($0) })
  }

  /// `ao`.
  public static func objectPaths(_ paths: [String]) -> DBusValue {
    .array(elementSignature: "o", paths.map { .objectPath($0) })
  }

  /// `a{sv}`: each value wrapped in a variant, entries sorted by key so the same dictionary always
  /// marshals to the same bytes (Swift's `Dictionary` order changes between runs).
  public static func stringDict(_ dict: [String: DBusValue]) -> DBusValue {
    .array(
      elementSignature: "{sv}",
      dict.sorted { $0.key < $1.key }.map { .dictEntry(.string($0.key), .variant($0.value)) }
    )
  }
}

// MARK: - Typed accessors (nil on a type mismatch; variants are not looked through)

extension DBusValue {
  public var byteValue: UInt8? { if case .byte(let v) = self { v } else { nil } }
  public var boolValue: Bool? { if case .boolean(let v) = self { v } else { nil } }
  public var int16Value: Int16? { if case .int16(let v) = self { v } else { nil } }
  public var uint16Value: UInt16? { if case .uint16(let v) = self { v } else { nil } }
  public var int32Value: Int32? { if case .int32(let v) = self { v } else { nil } }
  public var uint32Value: UInt32? { if case .uint32(let v) = self { v } else { nil } }
  public var int64Value: Int64? { if case .int64(let v) = self { v } else { nil } }
  public var uint64Value: UInt64? { if case .uint64(let v) = self { v } else { nil } }
  public var doubleValue: Double? { if case .double(let v) = self { v } else { nil } }
  public var stringValue: String? { if case .string(let v) = self { v } else { nil } }
  public var objectPathValue: String? { if case .objectPath(let v) = self { v } else { nil } }
  public var signatureValue: String? { if case .signature(let v) = self { v } else { nil } }
  public var unixFDValue: Int32? { if case .unixFD(let v) = self { v } else { nil } }
  /// The fields of a struct.
  public var structureValue: [DBusValue]? { if case .structure(let v) = self { v } else { nil } }
  /// The key and value of a dict entry.
  public var dictEntryValue: (key: DBusValue, value: DBusValue)? {
    if case .dictEntry(let k, let v) = self { (k, v) } else { nil }
  }

  /// The elements of any array.
  public var arrayValue: [DBusValue]? { if case .array(_, let v) = self { v } else { nil } }

  /// The bytes of an `ay`.
  public var bytesValue: [UInt8]? {
    guard case .array("y", let elements) = self else { return nil }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(elements.count)
    for element in elements {
      guard case .byte(let b) = element else { return nil }
      bytes.append(b)
    }
    return bytes
  }

  /// The strings of an `as`.
  public var stringsValue: [String]? {
    guard case .array("s", let elements) = self else { return nil }
    var strings: [String] = []
    strings.reserveCapacity(elements.count)
    for element in elements {
      guard case .string(let s) = element else { return nil }
      strings.append(s)
    }
    return strings
  }

  /// The paths of an `ao`.
  public var objectPathsValue: [String]? {
    guard case .array("o", let elements) = self else { return nil }
    var paths: [String] = []
    paths.reserveCapacity(elements.count)
    for element in elements {
      guard case .objectPath(let p) = element else { return nil }
      paths.append(p)
    }
    return paths
  }

  /// The value inside a variant (one level).
  public var variantValue: DBusValue? { if case .variant(let v) = self { v } else { nil } }

  /// This value with every enclosing variant removed (`v` of `v` of `i` gives the `i`). Values inside
  /// containers are left as they are.
  public var unwrapped: DBusValue {
    var value = self
    while case .variant(let inner) = value { value = inner }
    return value
  }

  /// A string-keyed dictionary (`a{sv}`, or `a{s*}` of any value type) with each value
  /// ``unwrapped``. Nil for any other type.
  public var stringDictValue: [String: DBusValue]? {
    guard case .array(let element, let entries) = self, element.utf8.first == UInt8(ascii: "{"),
      element.utf8.dropFirst().first == UInt8(ascii: "s")
    else { return nil }
    var dict: [String: DBusValue] = [:]
    dict.reserveCapacity(entries.count)
    for entry in entries {
      guard case .dictEntry(.string(let key), let value) = entry else { return nil }
      dict[key] = value.unwrapped
    }
    return dict
  }
}
