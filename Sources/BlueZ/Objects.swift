import CaptureCore
import DBus

/// A snapshot of bluetoothd's objects (GetManagedObjects): path → interface → property.
public struct BlueZObjects: Sendable {
  public var objects: [String: [String: [String: DBusValue]]]

  public init(_ objects: [String: [String: [String: DBusValue]]]) { self.objects = objects }

  public func adapters() -> [AdapterInfo] {
    objects.compactMap { path, ifaces in
      ifaces[BlueZName.adapter].map { AdapterInfo(path: path, properties: $0) }
    }
    .sorted { $0.path < $1.path }
  }

  public func devices(on adapter: String? = nil) -> [DeviceProperties] {
    objects.compactMap { path, ifaces -> DeviceProperties? in
      guard let props = ifaces[BlueZName.device] else { return nil }
      let device = DeviceProperties(
        path: path, properties: props, hasBattery: ifaces[BlueZName.battery] != nil)
      if let adapter, device.adapter != adapter { return nil }
      return device
    }.sorted { $0.path < $1.path }
  }

  public func device(address: String, on adapter: String?) -> DeviceProperties? {
    devices(on: adapter).first { $0.address.uppercased() == address.uppercased() }
  }

  /// GATT characteristics under a device, found by UUID — never by path (docs/bluez-testing.md: handles
  /// in paths are not stable).
  public func characteristics(of devicePath: String) -> [CharacteristicInfo] {
    let prefix = devicePath + "/"
    return objects.compactMap { path, ifaces -> CharacteristicInfo? in
      guard path.hasPrefix(prefix), let props = ifaces[BlueZName.gattCharacteristic] else { return nil }
      let servicePath = props[BlueZName.Property.service]?.objectPathValue ?? ""
      let serviceUUID =
        objects[servicePath]?[BlueZName.gattService]?[BlueZName.Property.uuid]?.stringValue?.lowercased()
        ?? ""
      return CharacteristicInfo(
        path: path, uuid: props[BlueZName.Property.uuid]?.stringValue?.lowercased() ?? "",
        serviceUUID: serviceUUID,
        flags: props[BlueZName.Property.flags]?.arrayValue?.compactMap(\.stringValue) ?? [])
    }.sorted { $0.path < $1.path }
  }

  public func characteristic(of devicePath: String, uuid: String) -> CharacteristicInfo? {
    characteristics(of: devicePath).first { $0.uuid == uuid.lowercased() }
  }

  public func serviceUUIDs(of devicePath: String) -> Set<String> {
    let prefix = devicePath + "/"
    var uuids = Set<String>()
    for (path, ifaces) in objects where path.hasPrefix(prefix) {
      if let uuid = ifaces[BlueZName.gattService]?[BlueZName.Property.uuid]?.stringValue {
        uuids.insert(uuid.lowercased())
      }
    }
    return uuids
  }
}

public struct AdapterInfo: Sendable {
  public var path: String
  public var properties: [String: DBusValue]
  public var name: String { String(path.split(separator: "/").last ?? "") }
  public var isPowered: Bool { properties[BlueZName.Property.powered]?.boolValue ?? false }
  public var address: String { properties[BlueZName.Property.address]?.stringValue ?? "" }
}

public struct DeviceProperties: Sendable, Equatable {
  public var path: String
  public var properties: [String: DBusValue]
  public var hasBattery: Bool

  public init(path: String, properties: [String: DBusValue], hasBattery: Bool) {
    self.path = path
    self.properties = properties
    self.hasBattery = hasBattery
  }

  public var address: String { properties[BlueZName.Property.address]?.stringValue?.uppercased() ?? "" }
  public var addressType: String { properties[BlueZName.Property.addressType]?.stringValue ?? "public" }
  public var name: String? { properties[BlueZName.Property.name]?.stringValue }
  public var alias: String { properties[BlueZName.Property.alias]?.stringValue ?? name ?? address }
  /// bluetoothd has an Alias for it (the user's, else the remote name): a name is known.
  public var hasAlias: Bool { properties[BlueZName.Property.alias] != nil }
  public var adapter: String { properties[BlueZName.Property.adapter]?.objectPathValue ?? "" }
  public var rssi: Int16? { properties[BlueZName.Property.rssi]?.int16Value }
  public var isConnected: Bool { properties[BlueZName.Property.connected]?.boolValue ?? false }
  public var isPaired: Bool { properties[BlueZName.Property.paired]?.boolValue ?? false }
  public var isBonded: Bool { properties[BlueZName.Property.bonded]?.boolValue ?? isPaired }
  public var isTrusted: Bool { properties[BlueZName.Property.trusted]?.boolValue ?? false }
  /// Device1.Class: present for BR/EDR devices only.
  public var classOfDevice: UInt32? { properties[BlueZName.Property.deviceClass]?.uint32Value }
  public var servicesResolved: Bool { properties[BlueZName.Property.servicesResolved]?.boolValue ?? false }
  /// Heard in an advertisement or inquiry since the last discovery stopped: bluetoothd invalidates
  /// RSSI when a discovery ends (doc/org.bluez.Device.rst, RSSI).
  public var isInRange: Bool { rssi != nil }
  public var uuids: [String] {
    properties[BlueZName.Property.uuids]?.arrayValue?.compactMap { $0.stringValue?.lowercased() } ?? []
  }
}

public struct CharacteristicInfo: Sendable, Hashable {
  public var path: String
  public var uuid: String
  public var serviceUUID: String
  public var flags: [String]
  /// GattCharacteristic1.Flags "notify" or "indicate" (doc/org.bluez.GattCharacteristic.rst).
  public var canNotify: Bool { flags.contains("notify") || flags.contains("indicate") }
}

extension DeviceProperties {
  /// The device as bluetoothd has it after a PropertiesChanged: changed values replace the old ones,
  /// invalidated properties are gone (D-Bus specification, org.freedesktop.DBus.Properties).
  public func applying(_ change: DeviceChange) -> DeviceProperties {
    var next = self
    next.properties.merge(change.changed) { _, new in new }
    for name in change.invalidated { next.properties[name] = nil }
    return next
  }
}
