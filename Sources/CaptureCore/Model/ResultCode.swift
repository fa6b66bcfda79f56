// SKT result codes (capture-sdk.md §1). Success is `rawValue >= 0`; positive values are warnings.
public struct ResultCode: Hashable, Sendable, CustomStringConvertible {
  public let rawValue: Int32
  public init(_ rawValue: Int32) { self.rawValue = rawValue }

  public var isSuccess: Bool { rawValue >= 0 }
  /// The C/JS/Dart name, e.g. `ESKT_NOTSUPPORTED`; `ESKT_UNKNOWN` for a value no source defines.
  public var name: String { ResultCode.table[rawValue]?.name ?? "ESKT_UNKNOWN" }
  public var meaning: String { ResultCode.table[rawValue]?.meaning ?? "unknown result code" }
  public var description: String { "\(name) (\(rawValue))" }

  public static let noError = ResultCode(0)
  public static let waitTimeout = ResultCode(1)
  public static let notSupported = ResultCode(-15)
  public static let notFound = ResultCode(-17)
  public static let invalidParameter = ResultCode(-18)
  public static let deviceNotOpen = ResultCode(-31)
  public static let notAvailable = ResultCode(-32)
  public static let unableWriteFile = ResultCode(-33)
  public static let unableReadFile = ResultCode(-34)
  public static let communicationError = ResultCode(-38)
  public static let invalidValue = ResultCode(-41)
  public static let requestTimedOut = ResultCode(-42)
  public static let unableOpenFile = ResultCode(-53)
  public static let unableCreateDirectory = ResultCode(-55)
  public static let fileNotFound = ResultCode(-63)
  public static let fileAccessDenied = ResultCode(-64)
  public static let invalidFormat = ResultCode(-85)
  public static let invalidVersion = ResultCode(-86)
  public static let cancel = ResultCode(-91)
  public static let bleGatt = ResultCode(-94)
  public static let bluetoothPermissionMissing = ResultCode(-99)

  /// Every defined code, in the reference's order (descending value). -90 has two names; the 2026 name wins.
  public static let all: [(code: ResultCode, name: String, meaning: String)] = [
    (ResultCode(0), "ESKT_NOERROR", "success"),
    (ResultCode(-15), "ESKT_NOTSUPPORTED", "operation/property not supported (by device or host)"),
  ]

  static let table: [Int32: (name: String, meaning: String)] = {
    var t: [Int32: (name: String, meaning: String)] = [:]
    for entry in all where t[entry.code.rawValue] == nil { t[entry.code.rawValue] = (entry.name, entry.meaning) }
    return t
  }()
}
