/// Converts between command-line text and typed property values. The value's type comes from the
/// property id's set-type bits (docs/capture-sdk.md §2.1); where the SDK defines a value enum for a property
/// (§7), its names are accepted as well as numbers.
public enum PropertyValueCodec {
  /// How many command-line words a `set` of this property takes (data-source: SOURCE STATUS).
  public static func setArity(_ property: PropertyID) -> Int {
    switch property.setType {
    case .none?: 0
    case .dataSource?: 2
    default: 1
    }
  }

  /// How many words a `get` of this property takes after its name (data-source: SOURCE).
  public static func getArity(_ property: PropertyID) -> Int {
    switch property.getType {
    case .dataSource?, .byte?, .string?, .array?: 1
    default: 0
    }
  }

  /// The value to send with a get (docs/capture-sdk.md §2.2 "Get" column, §6.3 for data sources).
  public static func getArgument(_ property: PropertyID, _ words: [String]) throws(CaptureError)
    -> PropertyValue
  {
    switch property.getType {
    case .dataSource?:
      let source = try dataSource(words.first, for: property)
      return .dataSource(DataSourceValue(id: source, status: .defaultStatus, flags: .status))
    case .byte?:
      return .byte(try byte(words.first ?? "", property))
    case .string?:
      return .string(words.first ?? "")
    case .array?:
      return .array(try array(words.first ?? "", property))
    default:
      return .none
    }
  }

  /// Parses the words of a `set` into the property's typed value.
  public static func parse(_ property: PropertyID, _ words: [String]) throws(CaptureError) -> PropertyValue {
    guard let setType = property.setType, property.isWritable else {
      throw .notSupported("\(property.cliName) cannot be set")
    }
    guard words.count == setArity(property) else {
      let expected = setArity(property)
      throw .invalidParameter(
        "\(property.cliName) takes \(expected == 0 ? "no value" : expected == 1 ? "one value" : "\(expected) values")"
      )
    }
    if let named = try namedValue(property, words.first ?? "") { return named }
    switch setType {
    case .none: return .none
    case .byte: return .byte(try byte(words[0], property))
    case .ulong: return .ulong(try ulong(words[0], property))
    case .string: return .string(words[0])
    case .array: return .array(try array(words[0], property))
    case .dataSource:
      let source = try dataSource(words[0], for: property)
      guard let status = DataSourceStatus.parse(words[1]), status == .enable || status == .disable else {
        throw .invalidParameter("data source status must be enable or disable, not '\(words[1])'")
      }
      return .dataSource(DataSourceValue(id: source, status: status, flags: .status))
    default:
      throw .notSupported("setting a value of type \(setType.name) from the command line is not supported")
    }
  }

  /// Values of properties the SDK gives an enum or flag set for (docs/capture-sdk.md §7).
  static func namedValue(_ p: PropertyID, _ word: String) throws(CaptureError) -> PropertyValue? {
    func need<T>(_ value: T?, _ what: String) throws(CaptureError) -> T {
      guard let value else {
        throw .invalidParameter("'\(word)' is not a valid \(p.cliName) value (\(what))")
      }
      return value
    }
    switch p {
    case .triggerDevice:
      return .byte(try need(Trigger.parse(word), names(Trigger.allCases.map(\.cliName))).rawValue)
    case .dataConfirmationDevice, .dataConfirmationAction:
      return .ulong(try need(DataConfirmation.parse(word), "good, bad or led=…,beep=…,rumble=…").packed)
    case .dataConfirmationMode:
      return .byte(
        try need(DataConfirmationMode.parse(word), names(DataConfirmationMode.allCases.map(\.cliName)))
          .rawValue)
    case .localAcknowledgmentDevice:
      return .byte(
        try need(
          DeviceDataAcknowledgment.parse(word), names(DeviceDataAcknowledgment.allCases.map(\.cliName))
        ).rawValue)
    case .localDecodeActionDevice:
      return .byte(
        try need(LocalDecodeAction.parse(word), "none or a comma list of beep, flash, rumble").rawValue)
    case .notificationsDevice:
      return .ulong(
        try need(Notifications.parse(word), "none, all or a comma list of notification names").rawValue)
    case .dataFormatDevice:
      return .byte(try need(DataFormat.parse(word), names(DataFormat.allCases.map(\.cliName))).rawValue)
    case .socketCamStatus:
      return .byte(try need(SocketCamStatus.parse(word), "enable or disable").rawValue)
    case .flashDevice:
      return .byte(try need(Flash.parse(word), "on or off").rawValue)
    case .standConfigDevice:
      return .ulong(try need(StandConfig.parse(word), names(StandConfig.allCases.map(\.cliName))).rawValue)
    default:
      return nil
    }
  }

  static func names(_ list: [String]) -> String { list.joined(separator: ", ") }

  static func dataSource(_ word: String?, for p: PropertyID) throws(CaptureError) -> DataSource {
    guard let word else {
      throw .invalidParameter("\(p.cliName) needs a data source (e.g. qr-code, ean13, 38)")
    }
    guard let source = DataSource.parse(word) else {
      throw .invalidParameter("unknown data source '\(word)'")
    }
    return source
  }

  static func integer(_ word: String) -> Int64? {
    let lower = word.lowercased()
    if lower.hasPrefix("0x") { return Int64(lower.dropFirst(2), radix: 16) }
    if lower.hasPrefix("-0x") { return Int64(lower.dropFirst(3), radix: 16).map { -$0 } }
    return Int64(word)
  }

  static func byte(_ word: String, _ p: PropertyID) throws(CaptureError) -> UInt8 {
    guard let v = integer(word), (-128...255).contains(v) else {
      throw .invalidParameter("\(p.cliName) takes a byte (0-255), not '\(word)'")
    }
    return UInt8(truncatingIfNeeded: v)
  }

  static func ulong(_ word: String, _ p: PropertyID) throws(CaptureError) -> UInt32 {
    guard let v = integer(word), v >= 0, v <= Int64(UInt32.max) else {
      throw .invalidParameter("\(p.cliName) takes a number 0-4294967295, not '\(word)'")
    }
    return UInt32(v)
  }

  /// Bytes as hex: `01 02 ff`, `0102ff`, `01:02:ff` or `01,02,ff`.
  static func array(_ word: String, _ p: PropertyID) throws(CaptureError) -> [UInt8] {
    let digits = word.filter { !" :,-".contains($0) }.lowercased()
    guard digits.count % 2 == 0, digits.allSatisfy(\.isHexDigit) else {
      throw .invalidParameter("\(p.cliName) takes hex bytes (e.g. 01 02 ff), not '\(word)'")
    }
    var out: [UInt8] = []
    var i = digits.startIndex
    while i < digits.endIndex {
      let j = digits.index(i, offsetBy: 2)
      out.append(UInt8(digits[i..<j], radix: 16)!)
      i = j
    }
    return out
  }

  /// A name for a value when the property has a value enum (for display next to the number).
  public static func valueName(_ p: PropertyID, _ value: PropertyValue) -> String? {
    switch (p, value) {
    case (.deviceType, .ulong(let v)): return DeviceType(v).sdkName
    case (.socketCamStatus, .byte(let v)): return SocketCamStatus(rawValue: v)?.cliName
    case (.powerStateDevice, .ulong(let v)): return PowerState.from(ulong: v).cliName
    case (.dataFormatDevice, .byte(let v)): return DataFormat(rawValue: v)?.cliName
    case (.dataConfirmationMode, .byte(let v)): return DataConfirmationMode(rawValue: v)?.cliName
    case (.localAcknowledgmentDevice, .byte(let v)): return DeviceDataAcknowledgment(rawValue: v)?.cliName
    case (.flashDevice, .byte(let v)): return Flash(rawValue: v)?.cliName
    case (.standConfigDevice, .ulong(let v)): return StandConfig(rawValue: v)?.cliName
    case (.localDecodeActionDevice, .byte(let v)):
      let names = LocalDecodeAction(rawValue: v).names
      return names.isEmpty ? "none" : names.joined(separator: ",")
    case (.notificationsDevice, .ulong(let v)):
      let names = Notifications(rawValue: v).names
      return names.isEmpty ? "none" : names.joined(separator: ",")
    case (.batteryLevelDevice, .ulong(let v)): return "\(BatteryLevel(packed: v).percent)%"
    default: return nil
    }
  }
}
