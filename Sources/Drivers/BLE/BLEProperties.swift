import BlueZ
import CaptureCore

extension BLEDevice {
  public var capabilities: Capabilities {
    var readable: [PropertyID] = [.deviceType, .friendlyNameDevice, .bluetoothAddressDevice]
    var writable: [PropertyID] = [.friendlyNameDevice]
    if hasBatteryInterface || characteristic(GattUUID.batteryLevel) != nil {
      readable.append(.batteryLevelDevice)
    }
    if characteristic(GattUUID.firmwareRevision) != nil { readable.append(.versionDevice) }
    readable += handler.readable
    writable += handler.writable
    var events: Set<EventKind> = [.deviceArrival, .deviceRemoval]
    var notifications = Notifications()
    if batterySource != nil {
      // Battery level changes (the BatteryLevel event needs this bit, docs/capture-sdk.md §4.1, §7.6).
      readable.append(.notificationsDevice)
      writable.append(.notificationsDevice)
      events.insert(.batteryLevel)
      notifications = .batteryLevelChange
    }
    events.formUnion(handler.events)
    return Capabilities(
      readable: readable, writable: writable, triggers: handler.triggers, events: events,
      notifications: notifications)
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
      // Six bytes, most significant first, as the SDK prints it (AA:22:33:44:55:66, docs/capture-sdk.md §8).
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
      let c = try gatt.require(GattUUID.firmwareRevision, "firmware revision")
      return .version(Self.version(fromRevision: try await client.readValue(c.path)))
    case .notificationsDevice:
      return .ulong(try await notificationsSetting().rawValue)
    default:
      // The family's own properties (a D600's device-specific config command) need it brought up.
      try await ensureBroughtUp()
      return try await handler.get(property, argument: argument, gatt)
    }
  }

  public func set(_ property: PropertyID, _ value: PropertyValue) async throws(CaptureError) {
    guard capabilities.canWrite(property) else { throw unsupported(property) }
    switch (property, value) {
    case (.friendlyNameDevice, .string(let name)):
      try await client.setAlias(devicePath, name)
    case (.notificationsDevice, .ulong(let raw)):
      try await setNotifications(Notifications(rawValue: raw))
    case (.friendlyNameDevice, _), (.notificationsDevice, _):
      throw .invalidParameter("wrong value type \(value.type.name) for \(property.cliName)")
    default:
      try await ensureBroughtUp()
      try await handler.set(property, value, gatt)
    }
  }

  public func trigger(_ action: Trigger) async throws(CaptureError) {
    guard capabilities.triggers.contains(action) else {
      throw .notSupported("\(info.name) has no remote trigger \(action.cliName) that public facts describe")
    }
    try await ensureBroughtUp()
    try await handler.trigger(action, gatt)
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
