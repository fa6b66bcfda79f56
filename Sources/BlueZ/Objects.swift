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

  /// GATT characteristics under a device, found by UUID — never by path (bluez-testing.md: handles
  /// in paths are not stable).
  public func characteristics(of devicePath: String) -> [CharacteristicInfo] {
    let prefix = devicePath + "/"
    return objects.compactMap { path, ifaces -> CharacteristicInfo? in
      guard path.hasPrefix(prefix), let props = ifaces[BlueZName.gattCharacteristic] else { return nil }
      let servicePath = props["Service"]?.objectPathValue ?? ""
      let serviceUUID = objects[servicePath]?[BlueZName.gattService]?["UUID"]?.stringValue?.lowercased() ?? ""
      return CharacteristicInfo(
        path: path, uuid: props["UUID"]?.stringValue?.lowercased() ?? "", serviceUUID: serviceUUID,
        flags: props["Flags"]?.arrayValue?.compactMap(\.stringValue) ?? [])
    }.sorted { $0.path < $1.path }
  }

  public func characteristic(of devicePath: String, uuid: String) -> CharacteristicInfo? {
    characteristics(of: devicePath).first { $0.uuid == uuid.lowercased() }
  }

  public func serviceUUIDs(of devicePath: String) -> Set<String> {
    let prefix = devicePath + "/"
    var uuids = Set<String>()
    for (path, ifaces) in objects where path.hasPrefix(prefix) {
      if let uuid = ifaces[BlueZName.gattService]?["UUID"]?.stringValue { uuids.insert(uuid.lowercased()) }
    }
    return uuids
  }
}

public struct AdapterInfo: Sendable {
  public var path: String
  public var properties: [String: DBusValue]
  public var name: String { String(path.split(separator: "/").last ?? "") }
  public var isPowered: Bool { properties["Powered"]?.boolValue ?? false }
  public var address: String { properties["Address"]?.stringValue ?? "" }
}

public struct DeviceProperties: Sendable {
  public var path: String
  public var properties: [String: DBusValue]
  public var hasBattery: Bool

  public init(path: String, properties: [String: DBusValue], hasBattery: Bool) {
    self.path = path
    self.properties = properties
    self.hasBattery = hasBattery
  }

  public var address: String { properties["Address"]?.stringValue?.uppercased() ?? "" }
  public var addressType: String { properties["AddressType"]?.stringValue ?? "public" }
  public var name: String? { properties["Name"]?.stringValue }
  public var alias: String { properties["Alias"]?.stringValue ?? name ?? address }
  public var adapter: String { properties["Adapter"]?.objectPathValue ?? "" }
  public var rssi: Int16? { properties["RSSI"]?.int16Value }
  public var isConnected: Bool { properties["Connected"]?.boolValue ?? false }
  public var isPaired: Bool { properties["Paired"]?.boolValue ?? false }
  public var isBonded: Bool { properties["Bonded"]?.boolValue ?? isPaired }
  public var isTrusted: Bool { properties["Trusted"]?.boolValue ?? false }
  /// Device1.Class: present for BR/EDR devices only.
  public var classOfDevice: UInt32? { properties["Class"]?.uint32Value }
  public var servicesResolved: Bool { properties["ServicesResolved"]?.boolValue ?? false }
  public var uuids: [String] {
    properties["UUIDs"]?.arrayValue?.compactMap { $0.stringValue?.lowercased() } ?? []
  }
}

public struct CharacteristicInfo: Sendable, Hashable {
  public var path: String
  public var uuid: String
  public var serviceUUID: String
  public var flags: [String]
  public var canNotify: Bool { flags.contains("notify") || flags.contains("indicate") }
}

/// What happened on bluetoothd's object tree (ObjectManager and Properties signals).
public enum BlueZEvent: Sendable {
  case interfacesAdded(path: String, interfaces: [String: [String: DBusValue]])
  case interfacesRemoved(path: String, interfaces: [String])
  case propertiesChanged(path: String, interface: String, changed: [String: DBusValue], invalidated: [String])
  /// org.bluez left the bus (bluetoothd stopped or restarted) or appeared again.
  case serviceVanished
  case serviceAppeared
}
