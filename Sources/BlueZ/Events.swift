import DBus

/// What happened on bluetoothd's object tree, typed: ObjectManager's InterfacesAdded/Removed, the
/// Properties.PropertiesChanged of Device1, GattCharacteristic1, Battery1 and Adapter1, and
/// org.bluez's owner changing on the bus. One D-Bus signal can give several events (a PropertiesChanged
/// carrying Connected and ServicesResolved gives `.deviceChanged`, then `.connected`, then
/// `.servicesResolved`); they keep the order of the bus and of the signal.
public enum BlueZEvent: Sendable, Equatable {
  /// An object got interfaces. `device` is set when one of them is Device1.
  case interfacesAdded(path: String, interfaces: Set<String>, device: DeviceProperties?)
  case interfacesRemoved(path: String, interfaces: Set<String>)
  /// Every Device1 PropertiesChanged, first, so a consumer keeping a copy of the device can apply it
  /// (`DeviceProperties.applying`) before it reads the typed events that follow.
  case deviceChanged(path: String, DeviceChange)
  /// Device1.Connected changed.
  case connected(path: String, Bool)
  /// Device1.ServicesResolved changed: true once bluetoothd has resolved the GATT services (they can be
  /// announced as objects after it, docs/bluez-testing.md, "Connect (LE)").
  case servicesResolved(path: String, Bool)
  /// bluetoothd heard the device advertise (or answer an inquiry): one of the advertised properties
  /// (`BlueZName.Property.advertised`) changed. `rssi` when the signal carried one.
  case advertised(path: String, rssi: Int16?)
  /// GattCharacteristic1.Value changed: a notification, an indication or a read's result.
  case characteristicValue(path: String, bytes: [UInt8])
  /// GattCharacteristic1.Notifying changed (some client's notify session began or ended).
  case characteristicNotifying(path: String, Bool)
  /// Battery1.Percentage changed (bluetoothd's battery plugin).
  case batteryPercentage(path: String, UInt8)
  /// Adapter1.Powered or .Discovering changed (nil: not in this change).
  case adapterChanged(path: String, powered: Bool?, discovering: Bool?)
  /// org.bluez got a new owner: `running` false when bluetoothd left the bus, true when one (re)appeared.
  case bluetoothdOwnerChanged(running: Bool)
}

/// One Device1 PropertiesChanged: the new values and the invalidated names.
public struct DeviceChange: Sendable, Equatable {
  public var changed: [String: DBusValue]
  public var invalidated: [String]

  public init(changed: [String: DBusValue], invalidated: [String]) {
    self.changed = changed
    self.invalidated = invalidated
  }

  public var connected: Bool? { changed[BlueZName.Property.connected]?.boolValue }
  public var servicesResolved: Bool? { changed[BlueZName.Property.servicesResolved]?.boolValue }
  public var rssi: Int16? { changed[BlueZName.Property.rssi]?.int16Value }
  /// An advertisement was heard: an advertised property got a value (an invalidation is not one).
  public var isAdvertisement: Bool { changed.keys.contains { BlueZName.Property.advertised.contains($0) } }
}

extension BlueZEvent {
  /// The match rules of one `BlueZClient.events()` subscription: every signal it decodes.
  static let matchRules: [MatchRule] = [
    MatchRule(
      sender: BlueZName.service, interface: BlueZName.objectManager, member: BlueZName.Signal.interfacesAdded),
    MatchRule(
      sender: BlueZName.service, interface: BlueZName.objectManager,
      member: BlueZName.Signal.interfacesRemoved),
    MatchRule(
      sender: BlueZName.service, interface: BlueZName.properties, member: BlueZName.Signal.propertiesChanged,
      pathNamespace: BlueZName.root),
    MatchRule(
      sender: BlueZName.dbus, interface: BlueZName.dbus, member: BlueZName.Signal.nameOwnerChanged,
      arg0: BlueZName.service),
  ]

  /// The events one signal means, in order; none for a signal of another shape (a malformed body is
  /// ignored, never trusted).
  public static func decode(_ signal: DBusSignal) -> [BlueZEvent] {
    let body = signal.body
    switch (signal.interface, signal.member) {
    case (BlueZName.objectManager, BlueZName.Signal.interfacesAdded):
      guard body.count >= 2, let path = body[0].objectPathValue, let entries = body[1].arrayValue else {
        return []
      }
      var interfaces = Set<String>()
      var device: DeviceProperties?
      for entry in entries {
        guard case .dictEntry(let key, let value) = entry, let name = key.stringValue else { continue }
        interfaces.insert(name)
        if name == BlueZName.device {
          device = DeviceProperties(
            path: path, properties: value.stringDictValue ?? [:],
            hasBattery: entries.contains {
              if case .dictEntry(let k, _) = $0 { k.stringValue == BlueZName.battery } else { false }
            })
        }
      }
      return [.interfacesAdded(path: path, interfaces: interfaces, device: device)]
    case (BlueZName.objectManager, BlueZName.Signal.interfacesRemoved):
      guard body.count >= 2, let path = body[0].objectPathValue else { return [] }
      return [
        .interfacesRemoved(path: path, interfaces: Set(body[1].arrayValue?.compactMap(\.stringValue) ?? []))
      ]
    case (BlueZName.properties, BlueZName.Signal.propertiesChanged):
      guard body.count >= 2, let interface = body[0].stringValue, let changed = body[1].stringDictValue else {
        return []
      }
      let invalidated = body.count > 2 ? (body[2].arrayValue?.compactMap(\.stringValue) ?? []) : []
      return propertiesChanged(signal.path, interface, changed, invalidated)
    case (BlueZName.dbus, BlueZName.Signal.nameOwnerChanged):
      // NameOwnerChanged(s name, s old_owner, s new_owner): an empty new owner means the name is gone.
      guard body.count == 3, body[0].stringValue == BlueZName.service, let newOwner = body[2].stringValue
      else {
        return []
      }
      return [.bluetoothdOwnerChanged(running: !newOwner.isEmpty)]
    default:
      return []
    }
  }

  static func propertiesChanged(
    _ path: String, _ interface: String, _ changed: [String: DBusValue], _ invalidated: [String]
  ) -> [BlueZEvent] {
    typealias P = BlueZName.Property
    switch interface {
    case BlueZName.device:
      let change = DeviceChange(changed: changed, invalidated: invalidated)
      var events: [BlueZEvent] = [.deviceChanged(path: path, change)]
      if let on = change.connected { events.append(.connected(path: path, on)) }
      if let on = change.servicesResolved { events.append(.servicesResolved(path: path, on)) }
      if change.isAdvertisement { events.append(.advertised(path: path, rssi: change.rssi)) }
      return events
    case BlueZName.gattCharacteristic:
      var events: [BlueZEvent] = []
      if let bytes = changed[P.value]?.bytesValue {
        events.append(.characteristicValue(path: path, bytes: bytes))
      }
      if let on = changed[P.notifying]?.boolValue { events.append(.characteristicNotifying(path: path, on)) }
      return events
    case BlueZName.battery:
      guard let percent = changed[P.percentage]?.byteValue else { return [] }
      return [.batteryPercentage(path: path, percent)]
    case BlueZName.adapter:
      let powered = changed[P.powered]?.boolValue
      let discovering = changed[P.discovering]?.boolValue
      guard powered != nil || discovering != nil else { return [] }
      return [.adapterChanged(path: path, powered: powered, discovering: discovering)]
    default:
      return []
    }
  }
}
