import BlueZ
import CaptureCore
import Synchronization

/// What one family of BLE device adds to the generic device (docs/device-protocols.md §2–§4): the
/// characteristics its data comes on, how it is brought up, how its notifications decode, and the
/// properties and triggers only it has. The generic parts (name, address, battery, version,
/// notifications, presence) are `BLEDevice`'s.
protocol BLEFamilyHandler: Sendable {
  /// Characteristics whose notifications carry the family's data, subscribed at every bring-up.
  func dataRoutes(_ gatt: BLEGatt) throws(CaptureError) -> [String: NotifyRoute]
  /// Runs after the data sessions are armed, on every link (the D600 is switched to scanner mode).
  func broughtUp(_ gatt: BLEGatt) async throws(CaptureError)
  /// A notification on one of `dataRoutes`.
  func receive(_ bytes: [UInt8], on route: NotifyRoute)
  /// The link went down or the device closes: partial frames and pending answers are dropped.
  func linkDown()
  var readable: [PropertyID] { get }
  var writable: [PropertyID] { get }
  var triggers: Set<Trigger> { get }
  var events: Set<EventKind> { get }
  /// A family property (one of `readable`); the device is brought up first.
  func get(_ property: PropertyID, argument: PropertyValue, _ gatt: BLEGatt) async throws(CaptureError)
    -> PropertyValue
  /// A family property (one of `writable`); the device is brought up first.
  func set(_ property: PropertyID, _ value: PropertyValue, _ gatt: BLEGatt) async throws(CaptureError)
  func trigger(_ action: Trigger, _ gatt: BLEGatt) async throws(CaptureError)
}

extension BLEFamilyHandler {
  /// A family without family-specific properties or triggers: everything past the generic table
  /// (which BLEDevice answers itself) is NOTSUPPORTED, as the SDK answers.
  func get(_ property: PropertyID, argument: PropertyValue, _ gatt: BLEGatt) async throws(CaptureError)
    -> PropertyValue
  {
    throw .notSupported("\(gatt.deviceName) does not support \(property.cliName) (\(property.hex))")
  }
  func set(_ property: PropertyID, _ value: PropertyValue, _ gatt: BLEGatt) async throws(CaptureError) {
    throw .notSupported("\(gatt.deviceName) does not support \(property.cliName) (\(property.hex))")
  }
  func trigger(_ action: Trigger, _ gatt: BLEGatt) async throws(CaptureError) {
    throw .notSupported(
      "\(gatt.deviceName) has no remote trigger \(action.cliName) that public facts describe")
  }
}

extension BLEFamily {
  /// The handler of this family's data and properties.
  func handler(emitter: BLEEmitter, client: BlueZClient) -> any BLEFamilyHandler {
    switch self {
    case .d600: D600Handler(emitter: emitter, client: client, noPairing: false)
    case .d600NoPairing: D600Handler(emitter: emitter, client: client, noPairing: true)
    case .s550: S550Handler(emitter: emitter)
    case .s370, .s320, .s721, .generic: GenericHandler()
    }
  }
}

/// One link's GATT view: the objects bluetoothd exported for the device, and the client to call.
struct BLEGatt: Sendable {
  var client: BlueZClient
  var devicePath: String
  var objects: BlueZObjects
  var deviceName: String

  /// Found by UUID, never by path (docs/bluez-testing.md: handles in paths are not stable).
  func characteristic(_ uuid: String) -> CharacteristicInfo? {
    objects.characteristic(of: devicePath, uuid: uuid)
  }

  func require(_ uuid: String, _ what: String) throws(CaptureError) -> CharacteristicInfo {
    guard let c = characteristic(uuid) else {
      throw CaptureError(.bleGatt, "\(deviceName) has no \(what) characteristic (\(uuid))")
    }
    return c
  }
}

/// The device's event stream: arrivals and removals once per change, for every half of the device
/// (an S370 arrives as its barcode half and its NFC half, docs/capture-sdk.md §5.2).
final class BLEEmitter: Sendable {
  let info: DeviceInfo
  let types: [DeviceType]
  /// The command's warning line (stderr), for what is not an event.
  let warn: @Sendable (String) -> Void
  let events: AsyncStream<Event>
  private let continuation: AsyncStream<Event>.Continuation
  /// The last presence event sent was an arrival: close() owes a removal.
  private let isAnnounced = Mutex(false)

  init(info: DeviceInfo, types: [DeviceType], warn: @escaping @Sendable (String) -> Void) {
    self.info = info
    self.types = types
    self.warn = warn
    (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
  }

  func emit(_ payload: Event.Payload, type: DeviceType? = nil) {
    var who = info
    if let type { who.type = type }
    continuation.yield(Event(time: .now(), device: who, payload: payload))
  }

  func announce(arrived: Bool) {
    let changed = isAnnounced.withLock { announced -> Bool in
      guard announced != arrived else { return false }
      announced = arrived
      return true
    }
    guard changed else { return }
    for type in types { emit(arrived ? .deviceArrival : .deviceRemoval, type: type) }
  }

  func emitBattery(_ percent: UInt8) {
    emit(.batteryLevel(BatteryLevel(current: percent, minimum: 0, maximum: 100)))
  }

  func finish() { continuation.finish() }
}

/// Devices with no data channel public facts describe over BLE (S370, S320, S721, any other): the
/// generic properties only.
struct GenericHandler: BLEFamilyHandler {
  func dataRoutes(_ gatt: BLEGatt) throws(CaptureError) -> [String: NotifyRoute] { [:] }
  func broughtUp(_ gatt: BLEGatt) async throws(CaptureError) {}
  func receive(_ bytes: [UInt8], on route: NotifyRoute) {}
  func linkDown() {}
  var readable: [PropertyID] { [] }
  var writable: [PropertyID] { [] }
  var triggers: Set<Trigger> { [] }
  var events: Set<EventKind> { [] }
}
