// CaptureSDK property ids (docs/capture-sdk.md §2). The full 32-bit value is the identity (§2.1 caveats:
// several ids share group/id and differ only in their type bits), so the struct wraps the raw value and
// decodes the fields on demand instead of storing them.

/// The group byte of a property id (docs/capture-sdk.md §2.1, bits 15–8; S3 `GroupIds`).
public enum PropertyGroup: Sendable, Hashable, CustomStringConvertible {
  case general
  case localFunctions
  /// The BLE device manager's functions.
  case managerFunctions
  /// A group no source defines.
  case other(UInt8)

  public init(id: UInt8) {
    switch id {
    case 0: self = .general
    case 1: self = .localFunctions
    case 2: self = .managerFunctions
    default: self = .other(id)
    }
  }

  public var id: UInt8 {
    switch self {
    case .general: 0
    case .localFunctions: 1
    case .managerFunctions: 2
    case .other(let id): id
    }
  }

  /// The docs/capture-sdk.md §2.2 spelling: "General", "LocalFunctions", "ManagerFunctions", or the number.
  public var description: String {
    switch self {
    case .general: "General"
    case .localFunctions: "LocalFunctions"
    case .managerFunctions: "ManagerFunctions"
    case .other(let id): "\(id)"
    }
  }
}

/// Which handle a property is sent on (docs/capture-sdk.md §2.2 "Scope"): the root client, an opened device,
/// or the opened BLE device manager (which arrives with event 11, §4.1).
public enum PropertyScope: String, Sendable, CaseIterable {
  case capture
  case device
  case deviceManager
}

public struct PropertyID: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
  public let rawValue: Int32

  public init(rawValue: Int32) { self.rawValue = rawValue }
  public init(_ raw: Int32) { self.rawValue = raw }

  /// The same 32 bits, unsigned (the form of the docs/capture-sdk.md §2.2 "Hex" column).
  public var unsignedValue: UInt32 { UInt32(bitPattern: rawValue) }

  // MARK: Bit layout (docs/capture-sdk.md §2.1)

  /// Bit 31: a property of the main Capture object (`SKTPROPIDCAPTURE`).
  public var isCaptureProperty: Bool { rawValue < 0 }
  /// Bits 23–20: the type to send with a get; nil for a nibble no type uses.
  public var getType: PropertyType? { PropertyType(rawValue: UInt8((unsignedValue >> 20) & 0xF)) }
  /// Bits 19–16: the type of the value of a set; nil for a nibble no type uses.
  public var setType: PropertyType? { PropertyType(rawValue: UInt8((unsignedValue >> 16) & 0xF)) }
  /// Bits 15–8.
  public var groupID: UInt8 { UInt8((unsignedValue >> 8) & 0xFF) }
  public var group: PropertyGroup { PropertyGroup(id: groupID) }
  /// Bits 7–0.
  public var idInGroup: UInt8 { UInt8(unsignedValue & 0xFF) }

  /// A get is allowed unless the get type is NotApplicable (docs/capture-sdk.md §2.2: "NotApplicable means
  /// the property cannot be read"). Nibbles outside §3 (or the LastType sentinel) count as not readable.
  public var isReadable: Bool { Self.usable(getType) }
  /// A set is allowed unless the set type is NotApplicable (docs/capture-sdk.md §2.2).
  public var isWritable: Bool { Self.usable(setType) }

  private static func usable(_ type: PropertyType?) -> Bool {
    guard let type else { return false }
    return type != .notApplicable && type != .lastType
  }

  /// The docs/capture-sdk.md §2.2 scope for a known id. For an unknown id it is inferred from the bits: bit
  /// 31 means the root client, group 2 (ManagerFunctions) the device manager, anything else a device. The bit
  /// alone is not enough for known ids (SinglePartnership is a Capture property in group 1, §2.1 caveats).
  public var scope: PropertyScope {
    if let entry { return entry.scope }
    if isCaptureProperty { return .capture }
    if groupID == 2 { return .deviceManager }
    return .device
  }

  // MARK: Names

  /// The SDK name without prefix, e.g. "TriggerDevice" (docs/capture-sdk.md §2.2 "Name"); nil for an unknown
  /// id.
  public var sdkName: String? { entry?.sdkName }
  /// The CLI spelling (docs/architecture.md §1, PROPERTY): kebab-case of the SDK name without a trailing
  /// `Device`, e.g. "trigger", "friendly-name"; the `hex` form for an unknown id.
  public var cliName: String { entry?.cliName ?? hex }
  /// The docs/capture-sdk.md §2.2 one-line meaning; nil for an unknown id.
  public var meaning: String? { entry?.meaning }
  /// The data-editing properties that only the 2023 JSON lists, flagged deprecated there (docs/capture-sdk.md
  /// §2.2).
  public var isDeprecated: Bool { entry?.deprecated ?? false }
  /// Whether this id is in the docs/capture-sdk.md §2.2 table (including the deprecated ones).
  public var isKnown: Bool { entry != nil }
  /// `0x` and 8 uppercase hex digits, e.g. "0x0001010B".
  public var hex: String { hexString(unsignedValue) }
  /// The SDK name, or the hex form for an unknown id.
  public var description: String { sdkName ?? hex }

  // MARK: Parsing

  /// Parses a property as a user types it: the CLI name ("friendly-name", case-insensitive, `_` same as
  /// `-`), the SDK name ("FriendlyNameDevice", case-insensitive), hex ("0x00050100"), decimal
  /// ("327936") or negative decimal ("-2147418111"). A number that no table knows still gives an id,
  /// because the device is the judge and answers ESKT_NOTSUPPORTED (docs/architecture.md §2).
  ///
  /// When a name belongs to several properties ("version" is Version on the root client and VersionDevice
  /// on a device) the one whose scope equals `scope` wins, else the device one.
  public static func parse(_ text: String, preferring scope: PropertyScope = .device) -> PropertyID? {
    let trimmed = text.trimmingWhitespace()
    guard !trimmed.isEmpty else { return nil }
    if let n = parseInteger(trimmed) {
      if let v = Int32(exactly: n) { return PropertyID(v) }
      if let u = UInt32(exactly: n) { return PropertyID(Int32(bitPattern: u)) }
      return nil
    }
    let matches = named(trimmed)
    return matches.first { $0.scope == scope } ?? matches.first { $0.scope == .device } ?? matches.first
  }

  /// Every known property whose CLI name or SDK name matches `cli` (case-insensitive; `-`, `_` and
  /// spaces ignored), in table order.
  public static func named(_ cli: String) -> [PropertyID] {
    let key = lookupKey(cli)
    guard !key.isEmpty else { return [] }
    return catalog.filter { $0.cliKey == key || $0.sdkKey == key }.map(\.id)
  }

  // MARK: Known properties (docs/capture-sdk.md §2.2)

  /// Abort 0x80100000 (Capture): tell Capture the client is shutting down; removals then Terminate event
  /// follow.
  public static let abort = PropertyID(-2146435072)
  /// Version 0x80010001 (Capture): Capture service version (major/middle/minor/build + build date).
  public static let version = PropertyID(-2147418111)
  /// InterfaceVersion 0x80010000 (Capture): interface version supported by the service.
  public static let interfaceVersion = PropertyID(-2147418112)
  /// Configuration 0x80550003 (Capture): service configuration string (e.g.
  /// "SocketCamSymbologySelector=disabled").
  public static let configuration = PropertyID(-2141913085)
  /// DataConfirmationMode 0x80020004 (Capture): who acknowledges decoded data (DataConfirmationMode enum).
  public static let dataConfirmationMode = PropertyID(-2147352572)
  /// DataConfirmationAction 0x80030005 (Capture): beep/LED/rumble used when Capture itself acknowledges
  /// (packed, see 7.4).
  public static let dataConfirmationAction = PropertyID(-2147287035)
  /// MonitorMode 0x80240006 (Capture): debug trace level/channel (debug service builds only).
  public static let monitorMode = PropertyID(-2145124346)
  /// SocketCamStatus 0x80020007 (Capture): SocketCam enable/disable (SocketCam enum).
  public static let socketCamStatus = PropertyID(-2147352569)
  /// VersionDevice 0x00010000 (Device): device firmware version.
  public static let versionDevice = PropertyID(65536)
  /// DeviceType 0x00010002 (Device): device model code (CaptureDeviceType).
  public static let deviceType = PropertyID(65538)
  /// DeviceSpecific 0x00440003 (Device): raw device-specific command; reply in the get result.
  public static let deviceSpecific = PropertyID(4456451)
  /// DataSourceDevice 0x00770004 (Device): symbology / NFC tag type status (DataSource struct).
  public static let dataSourceDevice = PropertyID(7798788)
  /// TriggerDevice 0x00120005 (Device): start/stop read, enable/disable trigger (Trigger enum).
  public static let triggerDevice = PropertyID(1179653)
  /// ApplyConfigDevice 0x00100006 (Device): apply pending configuration (documented as not enabled).
  public static let applyConfigDevice = PropertyID(1048582)
  /// PreambleDevice 0x00050007 (Device): prefix string added before decoded data.
  public static let preambleDevice = PropertyID(327687)
  /// PostambleDevice 0x00050008 (Device): suffix string added after decoded data.
  public static let postambleDevice = PropertyID(327688)
  /// CapabilitiesDevice 0x00210009 (Device): device capabilities (get takes a capability-group byte).
  public static let capabilitiesDevice = PropertyID(2162697)
  /// ChangeIdDevice 0x0001000A (Device): checksum of engine settings, detects config changes.
  public static let changeIdDevice = PropertyID(65546)
  /// DataFormatDevice 0x0002000B (Device): decoded data format (DataFormat enum; NFC readers).
  public static let dataFormatDevice = PropertyID(131083)
  /// FriendlyNameDevice 0x00050100 (Device): Bluetooth friendly name.
  public static let friendlyNameDevice = PropertyID(327936)
  /// SecurityModeDevice 0x00020101 (Device): Bluetooth security mode (SecurityMode enum).
  public static let securityModeDevice = PropertyID(131329)
  /// PinCodeDevice 0x00150102 (Device): set Bluetooth PIN code.
  public static let pinCodeDevice = PropertyID(1376514)
  /// DeletePairingBondingDevice 0x00120103 (Device): erase pairing info (DeletePairing enum).
  public static let deletePairingBondingDevice = PropertyID(1179907)
  /// RestoreFactoryDefaultsDevice 0x00100104 (Device): factory reset.
  public static let restoreFactoryDefaultsDevice = PropertyID(1048836)
  /// SetPowerOffDevice 0x00100105 (Device): power the device off.
  public static let setPowerOffDevice = PropertyID(1048837)
  /// ButtonsStatusDevice 0x00010100 (Device): current button state bitmask (ButtonsState).
  public static let buttonsStatusDevice = PropertyID(65792)
  /// SoundConfigDevice 0x00240107 (Device): beep tones per action (get: action byte; set: array, see 7.9).
  public static let soundConfigDevice = PropertyID(2359559)
  /// TimersDevice 0x00040108 (Device): trigger-lock and auto-off timers (array, see 7.8).
  public static let timersDevice = PropertyID(262408)
  /// LocalAcknowledgmentDevice 0x00020109 (Device): device acks data itself on/off
  /// (DeviceDataAcknowledgment).
  public static let localAcknowledgmentDevice = PropertyID(131337)
  /// DataConfirmationDevice 0x0013010A (Device): send good/bad acknowledgement to device (packed ulong, see
  /// 7.4).
  public static let dataConfirmationDevice = PropertyID(1245450)
  /// BatteryLevelDevice 0x0001010B (Device): battery level (packed ulong, see 7.3).
  public static let batteryLevelDevice = PropertyID(65803)
  /// LocalDecodeActionDevice 0x0002010C (Device): beep/flash/rumble on local decode (LocalDecodeAction bits).
  public static let localDecodeActionDevice = PropertyID(131340)
  /// BluetoothAddressDevice 0x0001010D (Device): Bluetooth MAC (byte array).
  public static let bluetoothAddressDevice = PropertyID(65805)
  /// StatisticCountersDevice 0x0001010E (Device): usage counters (Counter ids).
  public static let statisticCountersDevice = PropertyID(65806)
  /// RumbleConfigDevice 0x0024010F (Device): vibration pattern per action (get: action byte; set: array).
  public static let rumbleConfigDevice = PropertyID(2359567)
  /// ProfileConfigDevice 0x00040110 (Device): Bluetooth profile/role configuration (array).
  public static let profileConfigDevice = PropertyID(262416)
  /// DisconnectDevice 0x00120111 (Device): ask device to drop the link (Disconnect enum).
  public static let disconnectDevice = PropertyID(1179921)
  /// DataStoreDevice 0x00440112 (Device): 16 user slots x 64 bytes on device.
  public static let dataStoreDevice = PropertyID(4456722)
  /// NotificationsDevice 0x00030113 (Device): subscribe to button/power/battery events (Notifications bits).
  public static let notificationsDevice = PropertyID(196883)
  /// ConnectReasonDevice 0x00010114 (Device): why the device connected (ConnectReason enum).
  public static let connectReasonDevice = PropertyID(65812)
  /// PowerStateDevice 0x00010115 (Device): power source state (PowerState, low byte).
  public static let powerStateDevice = PropertyID(65813)
  /// StartUpRoleSPPDevice 0x00020116 (Device): reconnect-to-last-host behaviour (StartUpRoleSpp).
  public static let startUpRoleSPPDevice = PropertyID(131350)
  /// ConnectionBeepConfigDevice 0x00020117 (Device): beep on connect (ConnectBeepConfig).
  public static let connectionBeepConfigDevice = PropertyID(131351)
  /// FlashDevice 0x00020118 (Device): SocketCam torch on/off (Flash enum).
  public static let flashDevice = PropertyID(131352)
  /// OverlayViewDevice 0x00090119 (Device): SocketCam overlay/view context object (platform UI only).
  public static let overlayViewDevice = PropertyID(590105)
  /// StandConfigDevice 0x0003011A (Device): stand/presentation behaviour (StandConfig enum).
  public static let standConfigDevice = PropertyID(196890)
  /// StartDiscovery 0x00130200 (DeviceManager): start BLE discovery with a timeout (device manager).
  public static let startDiscovery = PropertyID(1245696)
  /// Favorite 0x00050201 (DeviceManager): auto-connect favourites string (device manager).
  public static let favorite = PropertyID(328193)
  /// UniqueDeviceIdentifier 0x00510202 (DeviceManager): map device GUID -> BLE identifier UUID (get with
  /// string arg).
  public static let uniqueDeviceIdentifier = PropertyID(5308930)
  /// PcScTagTransmit 0x0044011B (Device): send APDU to tag via PC/SC.
  public static let pcScTagTransmit = PropertyID(4456731)
  /// PcScCouplerControl 0x0044011C (Device): control PC/SC coupler with APDU.
  public static let pcScCouplerControl = PropertyID(4456732)
  /// ThemeSelectionDevice 0x0004011D (Device): LED/sound theme for ready/read/success/fail.
  public static let themeSelectionDevice = PropertyID(262429)
  /// ThemeSelectionMaskDevice 0x0004011E (Device): which sub-device(s) the theme applies to.
  public static let themeSelectionMaskDevice = PropertyID(262430)
  /// LassoStatusDevice 0x0002011F (Device): Lasso feature enable/disable.
  public static let lassoStatusDevice = PropertyID(131359)
  /// LassoIdDevice 0x00140120 (Device): set Lasso id.
  public static let lassoIdDevice = PropertyID(1311008)
  /// LassoLifeSpanDevice 0x00030121 (Device): Lasso id life span.
  public static let lassoLifeSpanDevice = PropertyID(196897)
  /// SinglePartnership 0x80040122 (Capture): Single Partnership mode for BLE devices (capture-level).
  public static let singlePartnership = PropertyID(-2147221214)
  /// SinglePartnershipStamp 0x80010123 (Capture): host stamp used for Single Partnership.
  public static let singlePartnershipStamp = PropertyID(-2147417821)
  /// ResetSinglePartnershipDevice 0x00000124 (Device): clear a device Single Partnership.
  public static let resetSinglePartnershipDevice = PropertyID(292)
  /// ConnectDiscoveredDevice 0x00150203 (DeviceManager): connect a discovered BLE device (device manager).
  public static let connectDiscoveredDevice = PropertyID(1376771)
  /// DisconnectDiscoveredDevice 0x00150200 (DeviceManager): disconnect a discovered BLE device (device
  /// manager).
  public static let disconnectDiscoveredDevice = PropertyID(1376768)
  /// AddDevice 0x80120013 (Capture): start Bluetooth add/discovery flow (BluetoothDiscoveryMode byte).
  public static let addDevice = PropertyID(-2146303981)
  /// RemoveDevice 0x80150014 (Capture): remove/unpair a Bluetooth device (string id).
  public static let removeDevice = PropertyID(-2146107372)
  /// ResetDevice 0x00100100 (Device): power-cycle a BLE device when on power, else power off.
  public static let resetDevice = PropertyID(1048832)
  /// DataEditingProfile 0x80050009 (Capture, deprecated data editing; value computed in docs/capture-sdk.md
  /// §2.2 from the 2023 JSON).
  public static let dataEditingProfile = PropertyID(-2147155959)
  /// DataEditingCurrentProfile 0x8005000A (Capture, deprecated data editing; value computed in
  /// docs/capture-sdk.md §2.2 from the 2023 JSON).
  public static let dataEditingCurrentProfile = PropertyID(-2147155958)
  /// DataEditingTriggerSymbologies 0x8055000B (Capture, deprecated data editing; value computed in
  /// docs/capture-sdk.md §2.2 from the 2023 JSON).
  public static let dataEditingTriggerSymbologies = PropertyID(-2141913077)
  /// DataEditingTriggerMinLength 0x8055000C (Capture, deprecated data editing; value computed in
  /// docs/capture-sdk.md §2.2 from the 2023 JSON).
  public static let dataEditingTriggerMinLength = PropertyID(-2141913076)
  /// DataEditingTriggerMaxLength 0x8055000D (Capture, deprecated data editing; value computed in
  /// docs/capture-sdk.md §2.2 from the 2023 JSON).
  public static let dataEditingTriggerMaxLength = PropertyID(-2141913075)
  /// DataEditingTriggerStartsBy 0x8055000E (Capture, deprecated data editing; value computed in
  /// docs/capture-sdk.md §2.2 from the 2023 JSON).
  public static let dataEditingTriggerStartsBy = PropertyID(-2141913074)
  /// DataEditingTriggerEndsWith 0x8055000F (Capture, deprecated data editing; value computed in
  /// docs/capture-sdk.md §2.2 from the 2023 JSON).
  public static let dataEditingTriggerEndsWith = PropertyID(-2141913073)
  /// DataEditingTriggerContains 0x80550010 (Capture, deprecated data editing; value computed in
  /// docs/capture-sdk.md §2.2 from the 2023 JSON).
  public static let dataEditingTriggerContains = PropertyID(-2141913072)
  /// DataEditingOperation 0x80550011 (Capture, deprecated data editing; value computed in docs/capture-sdk.md
  /// §2.2 from the 2023 JSON).
  public static let dataEditingOperation = PropertyID(-2141913071)
  /// DataEditingImportExport 0x80550012 (Capture, deprecated data editing; value computed in
  /// docs/capture-sdk.md §2.2 from the 2023 JSON).
  public static let dataEditingImportExport = PropertyID(-2141913070)

  /// Every property of docs/capture-sdk.md §2.2 in table order, then the deprecated data-editing ones.
  public static let known: [PropertyID] = catalog.map(\.id)
  /// `known` without the deprecated data-editing properties.
  public static let current: [PropertyID] = catalog.filter { !$0.deprecated }.map(\.id)

  struct Entry: Sendable {
    let id: PropertyID
    let sdkName: String
    let scope: PropertyScope
    let meaning: String
    let deprecated: Bool
    let cliName: String
    let cliKey: String
    let sdkKey: String

    init(
      _ id: PropertyID, _ sdkName: String, _ scope: PropertyScope, _ meaning: String, deprecated: Bool = false
    ) {
      self.id = id
      self.sdkName = sdkName
      self.scope = scope
      self.meaning = meaning
      self.deprecated = deprecated
      let base = sdkName.hasSuffix("Device") ? String(sdkName.dropLast("Device".count)) : sdkName
      self.cliName = kebabCase(base)
      self.cliKey = lookupKey(cliName)
      self.sdkKey = lookupKey(sdkName)
    }
  }

  var entry: Entry? { Self.byRawValue[rawValue] }

  static let byRawValue: [Int32: Entry] = Dictionary(
    catalog.map { ($0.id.rawValue, $0) }, uniquingKeysWith: { first, _ in first })

  /// docs/capture-sdk.md §2.2 rows (name, scope, meaning), then the deprecated data-editing ids.
  static let catalog: [Entry] = [
    Entry(
      .abort, "Abort", .capture,
      "tell Capture the client is shutting down; removals then Terminate event follow"),
    Entry(.version, "Version", .capture, "Capture service version (major/middle/minor/build + build date)"),
    Entry(.interfaceVersion, "InterfaceVersion", .capture, "interface version supported by the service"),
    Entry(
      .configuration, "Configuration", .capture,
      "service configuration string (e.g. \"SocketCamSymbologySelector=disabled\")"),
    Entry(
      .dataConfirmationMode, "DataConfirmationMode", .capture,
      "who acknowledges decoded data (DataConfirmationMode enum)"),
    Entry(
      .dataConfirmationAction, "DataConfirmationAction", .capture,
      "beep/LED/rumble used when Capture itself acknowledges (packed, see 7.4)"),
    Entry(.monitorMode, "MonitorMode", .capture, "debug trace level/channel (debug service builds only)"),
    Entry(.socketCamStatus, "SocketCamStatus", .capture, "SocketCam enable/disable (SocketCam enum)"),
    Entry(.versionDevice, "VersionDevice", .device, "device firmware version"),
    Entry(.deviceType, "DeviceType", .device, "device model code (CaptureDeviceType)"),
    Entry(.deviceSpecific, "DeviceSpecific", .device, "raw device-specific command; reply in the get result"),
    Entry(
      .dataSourceDevice, "DataSourceDevice", .device, "symbology / NFC tag type status (DataSource struct)"),
    Entry(.triggerDevice, "TriggerDevice", .device, "start/stop read, enable/disable trigger (Trigger enum)"),
    Entry(
      .applyConfigDevice, "ApplyConfigDevice", .device,
      "apply pending configuration (documented as not enabled)"),
    Entry(.preambleDevice, "PreambleDevice", .device, "prefix string added before decoded data"),
    Entry(.postambleDevice, "PostambleDevice", .device, "suffix string added after decoded data"),
    Entry(
      .capabilitiesDevice, "CapabilitiesDevice", .device,
      "device capabilities (get takes a capability-group byte)"),
    Entry(.changeIdDevice, "ChangeIdDevice", .device, "checksum of engine settings, detects config changes"),
    Entry(
      .dataFormatDevice, "DataFormatDevice", .device, "decoded data format (DataFormat enum; NFC readers)"),
    Entry(.friendlyNameDevice, "FriendlyNameDevice", .device, "Bluetooth friendly name"),
    Entry(.securityModeDevice, "SecurityModeDevice", .device, "Bluetooth security mode (SecurityMode enum)"),
    Entry(.pinCodeDevice, "PinCodeDevice", .device, "set Bluetooth PIN code"),
    Entry(
      .deletePairingBondingDevice, "DeletePairingBondingDevice", .device,
      "erase pairing info (DeletePairing enum)"),
    Entry(.restoreFactoryDefaultsDevice, "RestoreFactoryDefaultsDevice", .device, "factory reset"),
    Entry(.setPowerOffDevice, "SetPowerOffDevice", .device, "power the device off"),
    Entry(
      .buttonsStatusDevice, "ButtonsStatusDevice", .device, "current button state bitmask (ButtonsState)"),
    Entry(
      .soundConfigDevice, "SoundConfigDevice", .device,
      "beep tones per action (get: action byte; set: array, see 7.9)"),
    Entry(.timersDevice, "TimersDevice", .device, "trigger-lock and auto-off timers (array, see 7.8)"),
    Entry(
      .localAcknowledgmentDevice, "LocalAcknowledgmentDevice", .device,
      "device acks data itself on/off (DeviceDataAcknowledgment)"),
    Entry(
      .dataConfirmationDevice, "DataConfirmationDevice", .device,
      "send good/bad acknowledgement to device (packed ulong, see 7.4)"),
    Entry(.batteryLevelDevice, "BatteryLevelDevice", .device, "battery level (packed ulong, see 7.3)"),
    Entry(
      .localDecodeActionDevice, "LocalDecodeActionDevice", .device,
      "beep/flash/rumble on local decode (LocalDecodeAction bits)"),
    Entry(.bluetoothAddressDevice, "BluetoothAddressDevice", .device, "Bluetooth MAC (byte array)"),
    Entry(.statisticCountersDevice, "StatisticCountersDevice", .device, "usage counters (Counter ids)"),
    Entry(
      .rumbleConfigDevice, "RumbleConfigDevice", .device,
      "vibration pattern per action (get: action byte; set: array)"),
    Entry(
      .profileConfigDevice, "ProfileConfigDevice", .device, "Bluetooth profile/role configuration (array)"),
    Entry(.disconnectDevice, "DisconnectDevice", .device, "ask device to drop the link (Disconnect enum)"),
    Entry(.dataStoreDevice, "DataStoreDevice", .device, "16 user slots x 64 bytes on device"),
    Entry(
      .notificationsDevice, "NotificationsDevice", .device,
      "subscribe to button/power/battery events (Notifications bits)"),
    Entry(
      .connectReasonDevice, "ConnectReasonDevice", .device, "why the device connected (ConnectReason enum)"),
    Entry(.powerStateDevice, "PowerStateDevice", .device, "power source state (PowerState, low byte)"),
    Entry(
      .startUpRoleSPPDevice, "StartUpRoleSPPDevice", .device,
      "reconnect-to-last-host behaviour (StartUpRoleSpp)"),
    Entry(
      .connectionBeepConfigDevice, "ConnectionBeepConfigDevice", .device,
      "beep on connect (ConnectBeepConfig)"),
    Entry(.flashDevice, "FlashDevice", .device, "SocketCam torch on/off (Flash enum)"),
    Entry(
      .overlayViewDevice, "OverlayViewDevice", .device,
      "SocketCam overlay/view context object (platform UI only)"),
    Entry(
      .standConfigDevice, "StandConfigDevice", .device, "stand/presentation behaviour (StandConfig enum)"),
    Entry(
      .startDiscovery, "StartDiscovery", .deviceManager, "start BLE discovery with a timeout (device manager)"
    ),
    Entry(.favorite, "Favorite", .deviceManager, "auto-connect favourites string (device manager)"),
    Entry(
      .uniqueDeviceIdentifier, "UniqueDeviceIdentifier", .deviceManager,
      "map device GUID -> BLE identifier UUID (get with string arg)"),
    Entry(.pcScTagTransmit, "PcScTagTransmit", .device, "send APDU to tag via PC/SC"),
    Entry(.pcScCouplerControl, "PcScCouplerControl", .device, "control PC/SC coupler with APDU"),
    Entry(
      .themeSelectionDevice, "ThemeSelectionDevice", .device, "LED/sound theme for ready/read/success/fail"),
    Entry(
      .themeSelectionMaskDevice, "ThemeSelectionMaskDevice", .device,
      "which sub-device(s) the theme applies to"),
    Entry(.lassoStatusDevice, "LassoStatusDevice", .device, "Lasso feature enable/disable"),
    Entry(.lassoIdDevice, "LassoIdDevice", .device, "set Lasso id"),
    Entry(.lassoLifeSpanDevice, "LassoLifeSpanDevice", .device, "Lasso id life span"),
    Entry(
      .singlePartnership, "SinglePartnership", .capture,
      "Single Partnership mode for BLE devices (capture-level)"),
    Entry(
      .singlePartnershipStamp, "SinglePartnershipStamp", .capture, "host stamp used for Single Partnership"),
    Entry(
      .resetSinglePartnershipDevice, "ResetSinglePartnershipDevice", .device,
      "clear a device Single Partnership"),
    Entry(
      .connectDiscoveredDevice, "ConnectDiscoveredDevice", .deviceManager,
      "connect a discovered BLE device (device manager)"),
    Entry(
      .disconnectDiscoveredDevice, "DisconnectDiscoveredDevice", .deviceManager,
      "disconnect a discovered BLE device (device manager)"),
    Entry(
      .addDevice, "AddDevice", .capture, "start Bluetooth add/discovery flow (BluetoothDiscoveryMode byte)"),
    Entry(.removeDevice, "RemoveDevice", .capture, "remove/unpair a Bluetooth device (string id)"),
    Entry(.resetDevice, "ResetDevice", .device, "power-cycle a BLE device when on power, else power off"),
    Entry(
      .dataEditingProfile, "DataEditingProfile", .capture, "(deprecated) data editing: profile",
      deprecated: true),
    Entry(
      .dataEditingCurrentProfile, "DataEditingCurrentProfile", .capture,
      "(deprecated) data editing: current profile", deprecated: true),
    Entry(
      .dataEditingTriggerSymbologies, "DataEditingTriggerSymbologies", .capture,
      "(deprecated) data editing: trigger symbologies", deprecated: true),
    Entry(
      .dataEditingTriggerMinLength, "DataEditingTriggerMinLength", .capture,
      "(deprecated) data editing: trigger min length", deprecated: true),
    Entry(
      .dataEditingTriggerMaxLength, "DataEditingTriggerMaxLength", .capture,
      "(deprecated) data editing: trigger max length", deprecated: true),
    Entry(
      .dataEditingTriggerStartsBy, "DataEditingTriggerStartsBy", .capture,
      "(deprecated) data editing: trigger starts by", deprecated: true),
    Entry(
      .dataEditingTriggerEndsWith, "DataEditingTriggerEndsWith", .capture,
      "(deprecated) data editing: trigger ends with", deprecated: true),
    Entry(
      .dataEditingTriggerContains, "DataEditingTriggerContains", .capture,
      "(deprecated) data editing: trigger contains", deprecated: true),
    Entry(
      .dataEditingOperation, "DataEditingOperation", .capture, "(deprecated) data editing: operation",
      deprecated: true),
    Entry(
      .dataEditingImportExport, "DataEditingImportExport", .capture,
      "(deprecated) data editing: import export", deprecated: true),
  ]
}
