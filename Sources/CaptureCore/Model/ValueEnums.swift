// Enumerations used as property values (docs/capture-sdk.md §7). Every enum carries the SDK's real number as
// its raw value and a kebab-case `cliName` the CLI prints and parses; `parse` accepts either.

/// A property-value enum: real SDK numbers as raw values, plus the CLI spelling.
public protocol CaptureValueEnum: CaseIterable, Sendable, Hashable, RawRepresentable
where RawValue: FixedWidthInteger & Sendable {
  /// The kebab-case spelling used on the command line and in plain output.
  var cliName: String { get }
  /// Extra spellings accepted by `parse` (compared case-insensitively, ignoring `-`, `_` and spaces).
  static var aliases: [String: Self] { get }
}

extension CaptureValueEnum {
  public static var aliases: [String: Self] { [:] }

  /// The case name in kebab-case (`authenticationEncryption` → `authentication-encryption`); an enum
  /// whose command-line word differs from its case name (Trigger.continuousScan → `continuous`)
  /// spells it out itself.
  public var cliName: String { kebabCase(String(describing: self)) }

  /// The case whose `cliName` (or alias) matches, case-insensitively and ignoring `-`, `_` and spaces, or
  /// whose raw value is the given decimal or `0x` hex number.
  public static func parse(_ text: String) -> Self? {
    let trimmed = text.trimmingWhitespace()
    guard !trimmed.isEmpty else { return nil }
    if let n = parseInteger(trimmed) { return RawValue(exactly: n).flatMap(Self.init(rawValue:)) }
    let key = lookupKey(trimmed)
    if let match = allCases.first(where: { lookupKey($0.cliName) == key }) { return match }
    return aliases.first { lookupKey($0.key) == key }?.value
  }
}

/// A bit-mask property value (docs/capture-sdk.md §7.5, §7.6, §7.7, §7.8) with a name for every known bit.
public protocol CaptureOptionSet: OptionSet, Sendable, Hashable
where RawValue: FixedWidthInteger & Sendable, Element == Self {
  /// Every known bit with its kebab-case name, in bit order.
  static var namedMembers: [(name: String, value: Self)] { get }
}

extension CaptureOptionSet {
  /// Every known bit set.
  public static var all: Self { namedMembers.reduce(into: Self()) { $0.formUnion($1.value) } }

  /// The names of the known bits that are set, in bit order.
  public var names: [String] { Self.namedMembers.filter { contains($0.value) }.map(\.name) }

  /// Bits set that no name covers (a newer firmware's bits are kept, not dropped).
  public var unknownBits: RawValue { rawValue & ~Self.all.rawValue }

  /// `"none"` (empty), `"all"`, a number (decimal or `0x` hex), or a list of names separated by `,`, `|`,
  /// `+` or spaces (case-insensitive; `-` and `_` ignored). Nil when any name is unknown.
  public static func parse(_ text: String) -> Self? {
    let trimmed = text.trimmingWhitespace()
    guard !trimmed.isEmpty else { return nil }
    if let n = parseInteger(trimmed) { return RawValue(exactly: n).map(Self.init(rawValue:)) }
    let lowered = trimmed.lowercased()
    if lowered == "none" { return Self() }
    if lowered == "all" { return all }
    var result = Self()
    let tokens = trimmed.split { $0 == "," || $0 == "|" || $0 == "+" || $0.isWhitespace }
    guard !tokens.isEmpty else { return nil }
    for token in tokens {
      let key = lookupKey(token)
      guard let member = namedMembers.first(where: { lookupKey($0.name) == key }) else { return nil }
      result.formUnion(member.value)
    }
    return result
  }
}

/// TriggerDevice values (docs/capture-sdk.md §7.1): start/stop a read, enable/disable the trigger button.
public enum Trigger: UInt8, CaptureValueEnum {
  /// Start a read; the scanner keeps reading for about 3 s (S7 note in docs/capture-sdk.md §7.1).
  case start = 1
  case stop = 2
  /// Enable the trigger button.
  case enable = 3
  /// Disable the trigger button.
  case disable = 4
  case continuousScan = 5
  /// Newer than the 2023 sources, which stop at 5 (docs/capture-sdk.md §7.1).
  case continuousScanUntilRead = 6

  public var cliName: String {
    switch self {
    case .start: "start"
    case .stop: "stop"
    case .enable: "enable"
    case .disable: "disable"
    case .continuousScan: "continuous"
    case .continuousScanUntilRead: "continuous-until-read"
    }
  }

  public static let aliases: [String: Trigger] = [
    "continuous-scan": .continuousScan,
    "continuous-scan-until-read": .continuousScanUntilRead,
  ]
}

/// The device's trigger mode (docs/capture-sdk.md §7.1); no property sets it directly.
public enum TriggerMode: UInt8, CaptureValueEnum {
  case localOnly = 1
  case remoteAndLocal = 2
  case autoLock = 3
  case normalLock = 4
  case presentation = 5
}

/// Power source (PowerStateDevice get and the Power event, docs/capture-sdk.md §7.2). The state is the low
/// byte of the ulong.
public enum PowerState: UInt8, CaptureValueEnum {
  case unknown = 0
  case onBattery = 1
  case onCradle = 2
  case onAc = 4

  public static let aliases: [String: PowerState] = [
    "battery": .onBattery,
    "cradle": .onCradle,
    "ac": .onAc,
  ]
}

/// LED field of a data confirmation (docs/capture-sdk.md §7.4).
public enum DataConfirmationLed: UInt8, CaptureValueEnum {
  case none = 0
  case green = 1
  case red = 2
}

/// Beep field of a data confirmation (docs/capture-sdk.md §7.4).
public enum DataConfirmationBeep: UInt8, CaptureValueEnum {
  case none = 0
  case good = 1
  case bad = 2
}

/// Rumble field of a data confirmation (docs/capture-sdk.md §7.4).
public enum DataConfirmationRumble: UInt8, CaptureValueEnum {
  case none = 0
  case good = 1
  case bad = 2
}

/// Who acknowledges decoded data (DataConfirmationMode, capture-level byte, docs/capture-sdk.md §7.4).
public enum DataConfirmationMode: UInt8, CaptureValueEnum {
  /// Use the device's own setting.
  case off = 0
  /// The device acknowledges locally.
  case device = 1
  /// The service acknowledges, using DataConfirmationAction.
  case capture = 2
  /// The app must send DataConfirmationDevice.
  case app = 3

  public static let aliases: [String: DataConfirmationMode] = [
    "mode-off": .off,
    "mode-device": .device,
    "mode-capture": .capture,
    "mode-app": .app,
  ]
}

/// LocalAcknowledgmentDevice byte (docs/capture-sdk.md §7.4): the device acknowledges data itself.
public enum DeviceDataAcknowledgment: UInt8, CaptureValueEnum {
  case off = 0
  case on = 1
}

/// DataFormatDevice byte (docs/capture-sdk.md §7.10). The last four are for NFC readers; the S1 docs say only
/// tagTypeAndId and tagTypeAndData are accepted.
public enum DataFormat: UInt8, CaptureValueEnum {
  case raw = 0
  /// The default.
  case packet = 1
  case idOnly = 2
  case dataOnly = 4
  case tagTypeAndId = 10
  case tagTypeAndData = 12
}

/// SecurityModeDevice byte: Bluetooth security (docs/capture-sdk.md §7.11).
public enum SecurityMode: UInt8, CaptureValueEnum {
  case none = 0
  case authentication = 1
  case authenticationEncryption = 2
}

/// DeletePairingBondingDevice byte (docs/capture-sdk.md §7.11).
public enum DeletePairing: UInt8, CaptureValueEnum {
  case current = 0
  case all = 1
}

/// Bluetooth profile (docs/capture-sdk.md §7.11). The 2023 sources stop at hid.
public enum ProfileSelect: UInt8, CaptureValueEnum {
  case none = 0
  /// Application (SPP) mode.
  case spp = 1
  /// Basic (keyboard) mode.
  case hid = 2
  case reader = 3
  case coupler = 4
}

/// Bluetooth role in ProfileConfigDevice (docs/capture-sdk.md §7.11; the array layout was not found).
public enum ProfileConfigRole: UInt8, CaptureValueEnum {
  case none = 0
  case acceptor = 1
  case initiator = 2
}

/// DisconnectDevice byte (docs/capture-sdk.md §7.11).
public enum Disconnect: UInt8, CaptureValueEnum {
  case startProfile = 0
  case disableRadio = 1
  /// BLE: free the device for a new connection.
  case makeAvailable = 2
}

/// ConnectReasonDevice value: why the device connected (docs/capture-sdk.md §7.11).
public enum ConnectReason: UInt8, CaptureValueEnum {
  case unknown = 0
  case powerOn = 1
  case barcode = 2
  case userAction = 3
  case hostChange = 4
  case retry = 5
}

/// StartUpRoleSPPDevice byte: reconnect-to-last-host behaviour (docs/capture-sdk.md §7.11).
public enum StartUpRoleSpp: UInt8, CaptureValueEnum {
  case acceptor = 0
  case lastRole = 1
}

/// ConnectionBeepConfigDevice byte (docs/capture-sdk.md §7.11).
public enum ConnectBeepConfig: UInt8, CaptureValueEnum {
  case noBeep = 0
  case beep = 1
}

/// StandConfigDevice ulong (docs/capture-sdk.md §7.12), current numbering (2026 S1/S2, JS 1.3.50). The 2023
/// sources numbered MobileMode from 0 without Disabled.
public enum StandConfig: UInt32, CaptureValueEnum {
  case disabled = 0
  case mobileMode = 1
  case standMode = 2
  case detectMode = 3
  case autoMode = 4

  public static let aliases: [String: StandConfig] = [
    "mobile": .mobileMode,
    "stand": .standMode,
    "detect": .detectMode,
    "auto": .autoMode,
  ]
}

/// SocketCamStatus capture-level byte (docs/capture-sdk.md §7.13). Note the inverted order: enable is 0 and
/// disable 1.
public enum SocketCamStatus: UInt8, CaptureValueEnum {
  case enable = 0
  case disable = 1
  case notSupported = 2

  public static let aliases: [String: SocketCamStatus] = [
    "enabled": .enable,
    "disabled": .disable,
  ]
}

/// FlashDevice byte: the SocketCam torch (docs/capture-sdk.md §7.13).
public enum Flash: UInt8, CaptureValueEnum {
  case off = 0
  case on = 1
}

/// Single Partnership modes (docs/capture-sdk.md §7.14; the SinglePartnership array layout was not found).
public enum SinglePartnershipMode: UInt8, CaptureValueEnum {
  case disable = 0
  case webApi = 1
  case webUI = 2
  /// Your own service UUID.
  case uuid = 3
  case webUIPrompt = 4
  case deviceId = 5
}

/// AddDevice byte (docs/capture-sdk.md §7.15): which radio the add/discovery flow uses.
public enum BluetoothDiscoveryMode: UInt8, CaptureValueEnum {
  /// Bluetooth Low Energy (S550, S370, S320, S721, …).
  case ble = 1
  /// Bluetooth Classic.
  case classic = 2

  public static let aliases: [String: BluetoothDiscoveryMode] = [
    "bluetooth-low-energy": .ble,
    "bluetooth-classic": .classic,
  ]
}

/// Which action a sound or rumble configuration applies to (docs/capture-sdk.md §7.9); a get sends it as a
/// Byte.
public enum SoundActionType: UInt8, CaptureValueEnum {
  case goodRead = 0
  case goodReadLocal = 1
  case badRead = 2
  case badReadLocal = 3
}

/// Tone frequency in a sound configuration array (docs/capture-sdk.md §7.9; big-endian uint16 on the wire).
public enum SoundFrequency: UInt16, CaptureValueEnum {
  case none = 0
  case low = 1
  case medium = 2
  case high = 3
}

/// MonitorMode selector (docs/capture-sdk.md §7.17; debug service builds only).
public enum MonitorDbg: UInt8, CaptureValueEnum {
  case level = 1
  case channel = 2
  case fileLineLevel = 3
}

/// StatisticCountersDevice counter ids (docs/capture-sdk.md §7.17, `Counter`).
public enum StatisticCounter: Int16, CaptureValueEnum {
  case skip = -1
  case unknown = 0
  case connect = 1
  case disconnect = 2
  case unbound = 3
  case factoryReset = 4
  case reads = 5
  case triggerButtonUp = 6
  case triggerButtonDown = 7
  case powerButtonUp = 8
  case powerButtonDown = 9
  case onAcTimeInMinutes = 10
  case onBatTimeInMinutes = 11
  case rfcommSend = 12
  case rfcommReceive = 13
  case rfcommReceiveDiscarded = 14
  case uartSend = 15
  case uartReceive = 16
  case uartReceiveDiscarded = 17
  case buttonLeftPress = 18
  case buttonLeftRelease = 19
  case buttonRightPress = 20
  case buttonRightRelease = 21
  case ringUnitDetach = 22
  case ringUnitAttach = 23
  case decodedBytes = 24
  case abnormalShutdowns = 25
  case batteryChargeCycles = 26
  case batteryChargeCount = 27
  case powerOn = 28
  case powerOff = 29
  case standModeChange = 30
}

/// ThemeSelectionDevice themes (docs/capture-sdk.md §7.17; the array layout was not found).
public enum ThemeSelection: UInt8, CaptureValueEnum {
  case none = 0
  case health = 1
  case access = 2
  case value = 3
  case membership = 4
}

/// LassoStatusDevice byte (docs/capture-sdk.md §7.17).
public enum LassoDeviceStatus: UInt8, CaptureValueEnum {
  case disable = 0
  case enable = 1
}
extension PowerState {
  /// Decodes the PowerStateDevice / Power event ulong: the state is the low byte (`SKTPOWER_GETSTATE`,
  /// docs/capture-sdk.md §7.2). A byte that is not a known state gives `.unknown`, the SDK's own "don't know"
  /// value.
  public static func from(ulong value: UInt32) -> PowerState {
    PowerState(rawValue: UInt8(value & 0xFF)) ?? .unknown
  }
}

/// A packed data confirmation: the DataConfirmationDevice set value and DataConfirmationAction
/// (docs/capture-sdk.md §7.4). Two bits per field: `(reserved << 6) | (rumble << 4) | (beep << 2) | led`.
public struct DataConfirmation: Sendable, Hashable, CustomStringConvertible {
  public var led: DataConfirmationLed
  public var beep: DataConfirmationBeep
  public var rumble: DataConfirmationRumble
  /// The bits above the three fields, kept so `init(packed:)` and `packed` round-trip.
  public var reserved: UInt32

  public init(
    led: DataConfirmationLed = .none, beep: DataConfirmationBeep = .none,
    rumble: DataConfirmationRumble = .none,
    reserved: UInt32 = 0
  ) {
    self.led = led
    self.beep = beep
    self.rumble = rumble
    self.reserved = reserved
  }

  /// Unpacks the ulong (LED = `v&3`, beep = `(v>>2)&3`, rumble = `(v>>4)&3`). A field holding 3, which no
  /// enum value uses, reads as `none`.
  public init(packed: UInt32) {
    led = DataConfirmationLed(rawValue: UInt8(packed & 3)) ?? .none
    beep = DataConfirmationBeep(rawValue: UInt8((packed >> 2) & 3)) ?? .none
    rumble = DataConfirmationRumble(rawValue: UInt8((packed >> 4) & 3)) ?? .none
    reserved = packed >> 6
  }

  public var packed: UInt32 {
    (reserved << 6) | (UInt32(rumble.rawValue) << 4) | (UInt32(beep.rawValue) << 2) | UInt32(led.rawValue)
  }

  /// Green LED, good beep, good rumble: 0x15 (docs/capture-sdk.md §7.4 example).
  public static let good = DataConfirmation(led: .green, beep: .good, rumble: .good)
  /// Red LED, bad beep, bad rumble: 0x2A (docs/capture-sdk.md §7.4 example).
  public static let bad = DataConfirmation(led: .red, beep: .bad, rumble: .bad)

  /// `"led=green,beep=good,rumble=none"`.
  public var description: String { "led=\(led.cliName),beep=\(beep.cliName),rumble=\(rumble.cliName)" }

  /// `"good"`, `"bad"`, `"none"`, a number (the packed value), or `"led=green,beep=good,rumble=none"`
  /// (any subset of the keys; missing ones are none; separators `,` or spaces).
  public static func parse(_ text: String) -> DataConfirmation? {
    let trimmed = text.trimmingWhitespace()
    guard !trimmed.isEmpty else { return nil }
    switch trimmed.lowercased() {
    case "good": return .good
    case "bad": return .bad
    case "none": return DataConfirmation()
    default: break
    }
    if let n = parseInteger(trimmed) { return UInt32(exactly: n).map(DataConfirmation.init(packed:)) }
    var result = DataConfirmation()
    for pair in trimmed.split(whereSeparator: { $0 == "," || $0.isWhitespace }) {
      let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingWhitespace().lowercased() }
      guard parts.count == 2 else { return nil }
      switch parts[0] {
      case "led":
        guard let v = DataConfirmationLed.parse(parts[1]) else { return nil }
        result.led = v
      case "beep":
        guard let v = DataConfirmationBeep.parse(parts[1]) else { return nil }
        result.beep = v
      case "rumble":
        guard let v = DataConfirmationRumble.parse(parts[1]) else { return nil }
        result.rumble = v
      default: return nil
      }
    }
    return result
  }
}

/// LocalDecodeActionDevice byte mask (docs/capture-sdk.md §7.5): what the device does by itself on a decode.
public struct LocalDecodeAction: CaptureOptionSet {
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let beep = LocalDecodeAction(rawValue: 1)
  public static let flash = LocalDecodeAction(rawValue: 2)
  public static let rumble = LocalDecodeAction(rawValue: 4)

  public static let namedMembers: [(name: String, value: LocalDecodeAction)] = [
    ("beep", .beep), ("flash", .flash), ("rumble", .rumble),
  ]
}

/// NotificationsDevice ulong mask (docs/capture-sdk.md §7.6): which button/power/battery events the device
/// sends. C# and ScanAPI call the trigger bits ScanButtonPress/Release.
public struct Notifications: CaptureOptionSet {
  public let rawValue: UInt32
  public init(rawValue: UInt32) { self.rawValue = rawValue }

  public static let triggerButtonPress = Notifications(rawValue: 1)
  public static let triggerButtonRelease = Notifications(rawValue: 2)
  public static let powerButtonPress = Notifications(rawValue: 4)
  public static let powerButtonRelease = Notifications(rawValue: 8)
  public static let powerState = Notifications(rawValue: 16)
  public static let batteryLevelChange = Notifications(rawValue: 32)

  public static let namedMembers: [(name: String, value: Notifications)] = [
    ("trigger-button-press", .triggerButtonPress), ("trigger-button-release", .triggerButtonRelease),
    ("power-button-press", .powerButtonPress), ("power-button-release", .powerButtonRelease),
    ("power-state", .powerState), ("battery-level-change", .batteryLevelChange),
  ]
}

/// ButtonsStatusDevice value and Buttons event (docs/capture-sdk.md §7.7). On single-trigger devices the
/// trigger shows as `middle`.
public struct ButtonsState: CaptureOptionSet {
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let left = ButtonsState(rawValue: 0x01)
  public static let right = ButtonsState(rawValue: 0x02)
  public static let middle = ButtonsState(rawValue: 0x04)
  public static let power = ButtonsState(rawValue: 0x08)
  /// 0x10 as in S2, S4 and ScanAPI's `SKTBUTTON_ISRINGDETACHED`; the 2026 iOS header's 0x16 is taken to
  /// be a typo (docs/capture-sdk.md §7.7).
  public static let ringDetach = ButtonsState(rawValue: 0x10)

  public static let namedMembers: [(name: String, value: ButtonsState)] = [
    ("left", .left), ("right", .right), ("middle", .middle), ("power", .power), ("ring-detach", .ringDetach),
  ]
}

/// The timer mask, first element of the TimersDevice array (docs/capture-sdk.md §7.8).
public struct TimerMask: CaptureOptionSet {
  public let rawValue: UInt16
  public init(rawValue: UInt16) { self.rawValue = rawValue }

  /// The trigger-lock timer.
  public static let autoLock = TimerMask(rawValue: 1)
  public static let powerOffDisconnected = TimerMask(rawValue: 2)
  public static let powerOffConnected = TimerMask(rawValue: 4)

  public static let namedMembers: [(name: String, value: TimerMask)] = [
    ("auto-lock", .autoLock), ("power-off-disconnected", .powerOffDisconnected),
    ("power-off-connected", .powerOffConnected),
  ]
}

/// A battery level (BatteryLevelDevice get and BatteryLevel event, docs/capture-sdk.md §7.3), in the ScanAPI
/// layout: current = `(v>>8)&0xFF`, minimum = `(v>>16)&0xFF`, maximum = `(v>>24)&0xFF`. The sources disagree
/// on where min and max sit but agree that current is byte 1.
public struct BatteryLevel: Sendable, Hashable, CustomStringConvertible {
  public var current: UInt8
  public var minimum: UInt8
  public var maximum: UInt8

  public init(current: UInt8, minimum: UInt8 = 0, maximum: UInt8 = 100) {
    self.current = current
    self.minimum = minimum
    self.maximum = maximum
  }

  public init(packed: UInt32) {
    current = UInt8((packed >> 8) & 0xFF)
    minimum = UInt8((packed >> 16) & 0xFF)
    maximum = UInt8((packed >> 24) & 0xFF)
  }

  /// Accepts what a device or service reports: Android sends a plain percentage instead of the packed
  /// value, so a value ≤ 0xFF is read as a percentage of 0…100 (S2's rule in docs/capture-sdk.md §7.3).
  public init(reported value: UInt32) {
    if value > 0xFF {
      self.init(packed: value)
    } else {
      self.init(current: UInt8(value), minimum: 0, maximum: 100)
    }
  }

  public var packed: UInt32 {
    (UInt32(maximum) << 24) | (UInt32(minimum) << 16) | (UInt32(current) << 8)
  }

  /// current × 100 ÷ (max − min), the formula of the docs/capture-sdk.md §7.3 docs, clamped to 0…100. When
  /// max ≤ min the range is meaningless, and `current` is taken to be a percentage already.
  public var percent: Int {
    let range = Int(maximum) - Int(minimum)
    guard range > 0 else { return min(100, Int(current)) }
    return max(0, min(100, Int(current) * 100 / range))
  }

  public var description: String { "\(percent)%" }
}
