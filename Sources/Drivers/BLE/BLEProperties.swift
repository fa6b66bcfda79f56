import BlueZ
import CaptureCore
import DBus

extension BLEDevice {
  var isD600: Bool { family == .d600 || family == .d600NoPairing }

  public var capabilities: Capabilities {
    var readable: [PropertyID] = [.deviceType, .friendlyNameDevice, .bluetoothAddressDevice]
    var writable: [PropertyID] = [.friendlyNameDevice]
    var triggers: Set<Trigger> = []
    if hasBatteryInterface || characteristic(GattUUID.batteryLevel) != nil {
      readable.append(.batteryLevelDevice)
    }
    if characteristic(GattUUID.firmwareRevision) != nil { readable.append(.versionDevice) }
    if isD600 {
      readable.append(.deviceSpecific)
      writable += [
        .triggerDevice, .dataConfirmationDevice, .restoreFactoryDefaultsDevice, .deletePairingBondingDevice,
        .deviceSpecific,
      ]
      triggers = [.start, .stop, .continuousScan]
    }
    var events: Set<EventKind> = [.deviceArrival, .deviceRemoval]
    var notifications = Notifications()
    if batterySource != nil {
      // Battery level changes (the BatteryLevel event needs this bit, capture-sdk.md §4.1, §7.6).
      readable.append(.notificationsDevice)
      writable.append(.notificationsDevice)
      events.insert(.batteryLevel)
      notifications = .batteryLevelChange
    }
    if isD600 || family == .s550 { events.insert(.decodedData) }
    return Capabilities(
      readable: readable, writable: writable, triggers: triggers, events: events, notifications: notifications
    )
  }

  public func get(_ property: PropertyID, argument: PropertyValue) async throws(CaptureError) -> PropertyValue
  {
    guard capabilities.canRead(property) else { throw unsupported(property) }
    switch property {
    case .deviceType:
      return .ulong(info.type.rawValue)
    case .friendlyNameDevice:
      let objects = try await client.objects()
      return .string(objects.device(address: address, on: client.adapterPath)?.alias ?? info.name)
    case .bluetoothAddressDevice:
      // Six bytes, most significant first, as the SDK prints it (AA:22:33:44:55:66, capture-sdk.md §8).
      return .array(address.split(separator: ":").compactMap { UInt8($0, radix: 16) })
    case .batteryLevelDevice:
      // bluetoothd's battery plugin (on by default in Debian) claims 0x180F and exports Battery1
      // instead of the GATT characteristic; without the plugin, 0x2A19 is read directly.
      let percent: UInt8
      if let c = characteristic(GattUUID.batteryLevel) {
        guard let first = try await client.readValue(c.path).first else {
          throw CaptureError(.bleGatt, "battery level read returned no bytes")
        }
        percent = first
      } else {
        percent = try await client.batteryPercentage(devicePath)
      }
      return .ulong(BatteryLevel(current: percent, minimum: 0, maximum: 100).packed)
    case .versionDevice:
      let c = try requireCharacteristic(GattUUID.firmwareRevision, "firmware revision")
      return .version(Self.version(fromRevision: try await client.readValue(c.path)))
    case .deviceSpecific:
      // A raw D600 config command: first byte the command code, the rest its payload (§2.6); the
      // answer's data comes back. Register read = 0E <addr>, write = 0D <addr> <bytes>.
      guard case .array(let bytes) = argument, let command = bytes.first else {
        throw .invalidParameter("device-specific needs the command bytes (e.g. 0e 01)")
      }
      guard let answer = try await configCommand(command, Array(bytes.dropFirst())) else {
        throw CaptureError(.requestTimedOut, "the D600 did not answer config command \(hex(command))")
      }
      guard answer.isSuccess else {
        throw CaptureError(
          .commandDenied, "the D600 refused config command \(hex(command)) (status \(answer.status))")
      }
      return .array(answer.data)
    case .notificationsDevice:
      return .ulong(try await notificationsSetting().rawValue)
    default:
      throw unsupported(property)
    }
  }

  public func set(_ property: PropertyID, _ value: PropertyValue) async throws(CaptureError) {
    guard capabilities.canWrite(property) else { throw unsupported(property) }
    switch (property, value) {
    case (.friendlyNameDevice, .string(let name)):
      // Device1.Alias: the name shown for the device on this host (doc/org.bluez.Device.rst).
      try await client.setDeviceProperty(devicePath, "Alias", .string(name))
    case (.triggerDevice, .byte(let raw)):
      guard let action = Trigger(rawValue: raw) else {
        throw .invalidParameter("unknown trigger value \(raw)")
      }
      try await trigger(action)
    case (.dataConfirmationDevice, .ulong(let packed)):
      let confirmation = DataConfirmation(packed: packed)
      let good = confirmation.led == .green || confirmation.beep == .good || confirmation.rumble == .good
      for command in D600Control.confirmation(
        good: good, led: confirmation.led != .none, beep: confirmation.beep != .none,
        rumble: confirmation.rumble != .none, firmware: nil)
      {
        try await scanControl(command)
      }
    case (.restoreFactoryDefaultsDevice, _):
      try await configExpectingSuccess(
        D600ConfigCommand.resetOrDeleteBonds.rawValue, D600ResetMagic.factoryReset)
    case (.deletePairingBondingDevice, _):
      try await configExpectingSuccess(
        D600ConfigCommand.resetOrDeleteBonds.rawValue, D600ResetMagic.deleteBonds)
    case (.deviceSpecific, .array(let bytes)):
      guard let command = bytes.first else {
        throw .invalidParameter("device-specific needs the command bytes")
      }
      try await configExpectingSuccess(command, Array(bytes.dropFirst()))
    case (.notificationsDevice, .ulong(let raw)):
      try await setNotifications(Notifications(rawValue: raw))
    default:
      throw .invalidParameter("wrong value type \(value.type.name) for \(property.cliName)")
    }
  }

  func configExpectingSuccess(_ command: UInt8, _ payload: [UInt8]) async throws(CaptureError) {
    guard let answer = try await configCommand(command, payload) else {
      throw CaptureError(.requestTimedOut, "the D600 did not answer config command \(hex(command))")
    }
    guard answer.isSuccess else {
      throw CaptureError(
        .commandDenied, "the D600 refused config command \(hex(command)) (status \(answer.status))")
    }
  }

  /// D600 scan-control opcodes A1/A0/A3 (§2.5). Their exact semantics are not public: this follows the
  /// SpringCore CONTROL class they coincide with (A0 READER_STOP, A1 reader start) and TS's use of A3 for
  /// the automatic mode.
  public func trigger(_ action: Trigger) async throws(CaptureError) {
    guard capabilities.triggers.contains(action) else {
      throw .notSupported("\(info.name) has no remote trigger \(action.cliName) that public facts describe")
    }
    switch action {
    case .start: try await scanControl(D600Control.scanMode(0xA1))
    case .stop: try await scanControl(D600Control.scanMode(0xA0))
    case .continuousScan: try await scanControl(D600Control.scanMode(0xA3))
    default: throw .notSupported("\(info.name) cannot \(action.cliName)")
    }
  }

  /// "1.50" / "v1.5.0.288" → major, middle, minor, build from the digits in order.
  static func version(fromRevision bytes: [UInt8]) -> VersionValue {
    let text = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    let numbers = text.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
    func at(_ i: Int) -> Int { i < numbers.count ? numbers[i] : 0 }
    return VersionValue(
      major: at(0), middle: at(1), minor: at(2), build: at(3), year: 0, month: 0, day: 0, hour: 0, minute: 0)
  }
}

func hex(_ b: UInt8) -> String {
  let s = String(b, radix: 16, uppercase: true)
  return s.count == 1 ? "0" + s : s
}
