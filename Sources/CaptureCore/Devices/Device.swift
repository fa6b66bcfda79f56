/// What a driver declares it can do. Everything else answers ESKT_NOTSUPPORTED (-15), as the SDK does.
public struct Capabilities: Sendable {
  public var readable: [PropertyID]
  public var writable: [PropertyID]
  public var triggers: Set<Trigger>
  public var events: Set<EventKind>
  /// The data sources `get --all` walks for DataSourceDevice.
  public var dataSources: [DataSource]
  /// The NotificationsDevice bits the device can act on (docs/capture-sdk.md §7.6); empty when it has no
  /// NotificationsDevice setting. The Power, Buttons and BatteryLevel events "need the Notifications
  /// bit" (§4.1), so a kind is in `events` only when its bits are here.
  public var notifications: Notifications

  public init(
    readable: [PropertyID], writable: [PropertyID], triggers: Set<Trigger>, events: Set<EventKind>,
    dataSources: [DataSource] = [], notifications: Notifications = []
  ) {
    self.readable = readable
    self.writable = writable
    self.triggers = triggers
    self.events = events
    self.dataSources = dataSources
    self.notifications = notifications
  }

  public func canRead(_ p: PropertyID) -> Bool { readable.contains(p) }
  public func canWrite(_ p: PropertyID) -> Bool { writable.contains(p) }
}

/// A connected device of any family. Each driver implements this; the command line talks only to it.
public protocol Device: AnyObject, Sendable {
  var info: DeviceInfo { get }
  var capabilities: Capabilities { get }
  /// Reads a property. `argument` carries the get-time value some properties need (the data source id
  /// for DataSourceDevice, the action byte for SoundConfigDevice, docs/capture-sdk.md §2.2 "Get" column).
  func get(_ property: PropertyID, argument: PropertyValue) async throws(CaptureError) -> PropertyValue
  func set(_ property: PropertyID, _ value: PropertyValue) async throws(CaptureError)
  /// Sends a trigger action. Decoded data arrives on `events`.
  func trigger(_ action: Trigger) async throws(CaptureError)
  /// The device's events, starting with its arrival. The stream finishes after `deviceRemoval`
  /// (link lost, a finite frame source exhausted, or `close()`); a device opened with
  /// `OpenRequest.reconnects` instead reports link loss as `deviceRemoval`, keeps trying, reports
  /// `deviceArrival` when it is back, and finishes only on `close()`.
  var events: AsyncStream<Event> { get }
  func close() async
  /// Reads a device-native parameter that has no SDK property, named `scheme:NAME` as typed
  /// (`dmcc:DEVICE.TYPE` for a Cognex DataMan, docs/device-protocols.md §7). Its value is the device's text.
  func getRaw(_ name: String) async throws(CaptureError) -> String
  /// Writes a device-native parameter (see `getRaw`); `value` is passed as the user typed it.
  func setRaw(_ name: String, _ value: String) async throws(CaptureError)
  /// A listener relies on these NotificationsDevice bits staying on (NotificationSetup calls this after
  /// reading the setting, whether or not it had to write). A setting held in the device needs nothing
  /// more; one that can lapse under the device's feet (a BLE notify session of another client) is
  /// re-applied by the driver when it does.
  func keepNotifications(_ bits: Notifications) async
}

extension Device {
  /// Devices without native parameters answer NOTSUPPORTED, as for any property outside their table.
  public func getRaw(_ name: String) async throws(CaptureError) -> String {
    throw .notSupported("\(info.name) has no native parameter '\(name)'")
  }

  public func setRaw(_ name: String, _ value: String) async throws(CaptureError) {
    throw .notSupported("\(info.name) has no native parameter '\(name)'")
  }

  /// The setting lives in the device: nothing to keep.
  public func keepNotifications(_ bits: Notifications) async {}
}

extension Device {
  /// The SDK's answer for anything outside the capability table.
  public func unsupported(_ property: PropertyID) -> CaptureError {
    // An id no table names is shown once, as its hex form.
    let shown = property.cliName == property.hex ? property.hex : "\(property.cliName) (\(property.hex))"
    return .notSupported("\(info.name) does not support \(shown)")
  }
}
