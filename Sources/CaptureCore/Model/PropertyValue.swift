// A typed property value: the payload of a get reply or a set request (docs/capture-sdk.md §3 gives the JSON
// shape of each type). Enum and Object (§3 values 8 and 9) carry no portable payload, so they have no case.
public enum PropertyValue: Sendable, Hashable {
  case none
  case byte(UInt8)
  case ulong(UInt32)
  case array([UInt8])
  case string(String)
  case version(VersionValue)
  case dataSource(DataSourceValue)

  /// The docs/capture-sdk.md §3 type number that goes in the `type` field next to this value.
  public var type: PropertyType {
    switch self {
    case .none: .none
    case .byte: .byte
    case .ulong: .ulong
    case .array: .array
    case .string: .string
    case .version: .version
    case .dataSource: .dataSource
    }
  }

  public var byteValue: UInt8? {
    if case .byte(let v) = self { return v }
    return nil
  }
  public var ulongValue: UInt32? {
    if case .ulong(let v) = self { return v }
    return nil
  }
  public var arrayValue: [UInt8]? {
    if case .array(let v) = self { return v }
    return nil
  }
  public var stringValue: String? {
    if case .string(let v) = self { return v }
    return nil
  }
  public var versionValue: VersionValue? {
    if case .version(let v) = self { return v }
    return nil
  }
  public var dataSourceValue: DataSourceValue? {
    if case .dataSource(let v) = self { return v }
    return nil
  }
}

/// The Version type (docs/capture-sdk.md §3 value 6):
/// `{major, middle, minor, build, year, month, day, hour, minute}`. Used by Version (capture service) and
/// VersionDevice (firmware), §2.2.
public struct VersionValue: Sendable, Hashable, CustomStringConvertible {
  public var major: Int
  public var middle: Int
  public var minor: Int
  public var build: Int
  public var year: Int
  public var month: Int
  public var day: Int
  public var hour: Int
  public var minute: Int

  public init(
    major: Int, middle: Int, minor: Int, build: Int,
    year: Int = 0, month: Int = 0, day: Int = 0, hour: Int = 0, minute: Int = 0
  ) {
    self.major = major
    self.middle = middle
    self.minor = minor
    self.build = build
    self.year = year
    self.month = month
    self.day = day
    self.hour = hour
    self.minute = minute
  }

  /// `"1.2.3.4"`, plus the build date `" 2024-05-06 07:08"` when a year is present (a zero year means
  /// the source sent no date).
  public var description: String {
    let base = "\(major).\(middle).\(minor).\(build)"
    guard year != 0 else { return base }
    return base + " \(year)-\(pad(month))-\(pad(day)) \(pad(hour)):\(pad(minute))"
  }

  private func pad(_ n: Int) -> String { n < 10 && n >= 0 ? "0\(n)" : "\(n)" }
}

/// The DataSource type (docs/capture-sdk.md §3 value 7, §6.3): `{id, name, status, flags}`; the name is
/// derived from the id.
public struct DataSourceValue: Sendable, Hashable {
  public var id: DataSource
  public var status: DataSourceStatus
  public var flags: DataSourceFlags

  /// `flags` defaults to `.status`, the flag every source sends (docs/capture-sdk.md §6.3).
  public init(id: DataSource, status: DataSourceStatus, flags: DataSourceFlags = .status) {
    self.id = id
    self.status = status
    self.flags = flags
  }
}
