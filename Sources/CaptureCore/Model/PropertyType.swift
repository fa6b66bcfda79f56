// Property value types (docs/capture-sdk.md §3). The same numbers are encoded in the get/set nibbles of every
// property id (§2.1) and in the `type` field of JSON-RPC getproperty/setproperty (§9).
public enum PropertyType: UInt8, Sendable, CaseIterable {
  case none = 0
  case notApplicable
  case byte
  case ulong
  case array
  case string
  case version
  case dataSource
  case enumeration
  case object
  /// Sentinel: a type ≥ this means the SDK and service are out of sync (docs/capture-sdk.md §3).
  case lastType

  /// The JS/Dart spelling from docs/capture-sdk.md §3 ("None", "NotApplicable", "Byte", …, "Enum").
  public var name: String {
    switch self {
    case .none: "None"
    case .notApplicable: "NotApplicable"
    case .byte: "Byte"
    case .ulong: "Ulong"
    case .array: "Array"
    case .string: "String"
    case .version: "Version"
    case .dataSource: "DataSource"
    case .enumeration: "Enum"
    case .object: "Object"
    case .lastType: "LastType"
    }
  }
}
