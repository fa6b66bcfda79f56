import BlueZ
import CaptureCore
import Synchronization

/// A Socket Mobile (or any) BLE device reached through bluetoothd. BlueZ holds the link, so this object
/// owns only its own bus connection, notify sessions and decoders; another capture process can use the
/// same device at the same time.
///
/// It is put together from: the link (`BLELink`: connect, reconnect, presence), the notify sessions
/// (`NotifySessions`), the family's handler (`D600Handler` with its config channel, `S550Handler`,
/// `GenericHandler`) and the event stream (`BLEEmitter`). This type routes bluetoothd's events between
/// them and answers the generic properties.
public final class BLEDevice: Device {
  public let info: DeviceInfo
  public var events: AsyncStream<Event> { emitter.events }
  let family: BLEFamily
  let address: String
  /// The device has a Battery service (0x180F) in its UUIDs: bluetoothd lists every service it
  /// resolved there, also the ones its battery plugin claims and does not export as GATT.
  let hasBatteryService: Bool
  let request: OpenRequest
  let link: BLELink
  let sessions: NotifySessions
  let handler: any BLEFamilyHandler
  let emitter: BLEEmitter
  let state = Mutex(State())
  private let pump = Mutex<Task<Void, Never>?>(nil)

  struct State {
    var isClosed = false
    /// Notify sessions are armed and the family brought up (the D600 is in scanner mode).
    var isBroughtUp = false
    /// The NotificationsDevice bits this process asked for (docs/capture-sdk.md §7.6); kept across
    /// link loss and re-applied on the new link.
    var notifications = Notifications()
  }

  var client: BlueZClient { link.client }

  /// Connect-and-resolve timeout when no --timeout is given.
  public static let connectTimeout: Duration = .seconds(30)

  // MARK: open

  static func open(address: String, request: OpenRequest, timeout: Duration?) async throws(CaptureError)
    -> BLEDevice
  {
    let client = try await BlueZClient.connect(adapter: request.adapter)
    do throws(CaptureError) {
      let events = try await client.events()  // subscribe first, then read (bluer)
      var objects = try await client.objects()
      _ = try client.adapter(in: objects)
      guard var device = objects.device(address: address, on: client.adapterPath) else {
        throw CaptureError(
          .notFound,
          "\(address) is not known to bluetoothd on \(client.adapterName); run capture discover first")
      }
      if !device.isConnected || !device.servicesResolved {
        try await BLELink.connectAndResolve(client, device.path, timeout: timeout ?? connectTimeout)
        objects = try await client.objects()
        device = objects.device(address: address, on: client.adapterPath) ?? device
      }
      let uuids = objects.serviceUUIDs(of: device.path).union(device.uuids)
      let family = BLEFamily.identify(uuids: uuids, name: device.name)
      // A device outside the SDK's type table (BleUnknown) says what it is by its Device Information
      // model number; the families in the table need no read, so their open stays as cheap as before.
      let model =
        family == .generic
        ? await Self.modelNumber(client: client, devicePath: device.path, objects: objects) : nil
      let ble = BLEDevice(
        client: client, request: request, address: address, family: family, device: device, objects: objects,
        hasBatteryService: uuids.contains(GattUUID.battery), model: model)
      ble.startPump(events)
      // get/set need no notify sessions: a battery read stays one GetManagedObjects and one read.
      if request.wantsEvents { try await ble.bringUp() }
      return ble
    } catch {
      client.close()
      throw error
    }
  }

  init(
    client: BlueZClient, request: OpenRequest, address: String, family: BLEFamily, device: DeviceProperties,
    objects: BlueZObjects, hasBatteryService: Bool, model: String? = nil
  ) {
    self.hasBatteryService = hasBatteryService
    self.request = request
    self.address = address
    self.family = family
    let info = DeviceInfo(id: address, name: device.alias, type: family.deviceTypes[0], model: model)
    self.info = info
    emitter = BLEEmitter(info: info, types: family.deviceTypes, warn: request.warn)
    link = BLELink(
      client: client, address: address, request: request, devicePath: device.path, objects: objects)
    sessions = NotifySessions(client: client)
    handler = family.handler(emitter: emitter, client: client)
    emitter.announce(arrived: true)
    link.attach(
      BLELink.Hooks(
        lost: { [weak self] reason in self?.linkLost(reason) },
        back: { [weak self] _ throws(CaptureError) in try await self?.linkBack() }))
  }

  var devicePath: String { link.devicePath }

  var gatt: BLEGatt {
    BLEGatt(client: client, devicePath: link.devicePath, objects: link.objects, deviceName: info.name)
  }

  var hasBatteryInterface: Bool {
    let objects = link.objects
    return objects.objects[link.devicePath]?[BlueZName.battery] != nil
  }

  func characteristic(_ uuid: String) -> CharacteristicInfo? { gatt.characteristic(uuid) }

  /// Brings the device up once, for the commands that did not need it at open (set
  /// data-confirmation, trigger, device-specific on a D600 opened by get/set).
  func ensureBroughtUp() async throws(CaptureError) {
    if !state.withLock({ $0.isBroughtUp }) { try await bringUp() }
  }

  /// Subscribes to what the family sends and lets it finish its bring-up (the D600's scanner mode).
  func bringUp() async throws(CaptureError) {
    state.withLock { $0.isBroughtUp = true }
    let gatt = self.gatt
    var routes = try handler.dataRoutes(gatt)
    // The data channels are always subscribed; 0x2A19 only when the notifications setting asks for it
    // (keepBatteryNotifying), so its route is added without a session.
    let dataPaths = routes.keys.sorted()
    if let battery = gatt.characteristic(GattUUID.batteryLevel), battery.canNotify {
      routes[battery.path] = .battery
    }
    sessions.setRoutes(routes)
    // Our sessions survive a link loss (bluetoothd re-arms them, docs/bluez-testing.md): starting
    // one we hold is a no-op.
    for path in dataPaths { try await sessions.start(path) }
    do {
      try await keepBatteryNotifying()
    } catch {
      // Battery events are an extra: the data channels stay up without them.
      request.warn("\(info.name): battery notifications: \(error.message)")
    }
    try await handler.broughtUp(gatt)
  }

  // MARK: events

  func startPump(_ events: AsyncStream<BlueZEvent>) {
    let task = Task { [weak self] in
      for await event in events {
        guard let self else { return }
        self.handle(event)
      }
      self?.link.busLost()
    }
    pump.withLock { $0 = task }
  }

  /// One of bluetoothd's events, in bus order: data to the handler, presence to the link.
  func handle(_ event: BlueZEvent) {
    switch event {
    case .characteristicValue(let path, let bytes):
      guard let route = sessions.route(path) else { return }
      if route == .battery {
        if let percent = bytes.first { emitter.emitBattery(percent) }
      } else {
        handler.receive(bytes, on: route)
      }
    case .characteristicNotifying(let path, false) where sessions.route(path) == .battery:
      // The client whose session we relied on has gone: hold one ourselves (the setting is kept).
      Task { try? await self.keepBatteryNotifying() }
    case .batteryPercentage(let path, let percent) where path == devicePath:
      if !sessions.hasBatteryRoute { emitter.emitBattery(percent) }
    case .bluetoothdOwnerChanged(running: false):
      // A new bluetoothd knows none of our notify sessions.
      sessions.forgetAll()
      link.handle(event)
    default:
      link.handle(event)
    }
  }

  private func linkLost(_ reason: String) {
    emitter.announce(arrived: false)
    handler.linkDown()
    if !request.reconnects {
      emitter.finish()
      Task { await self.close() }
    }
  }

  /// The link is back: re-arm the notify sessions, bring the family up, announce the arrival again.
  private func linkBack() async throws(CaptureError) {
    handler.linkDown()
    try await bringUp()
    emitter.announce(arrived: true)
  }

  public func close() async {
    let first = state.withLock { s -> Bool in
      defer { s.isClosed = true }
      return !s.isClosed
    }
    guard first else { return }
    pump.withLock { $0?.cancel() }
    handler.linkDown()
    let connected = link.isConnected
    _ = await link.close()
    if connected { await sessions.stopAll() }
    emitter.announce(arrived: false)
    emitter.finish()
    client.close()
  }

  /// Device Information "Model Number String" (0x2A24, Bluetooth SIG Device Information Service), when
  /// the device exports it: the model of a device outside the SDK's type table. One GATT read; nil
  /// when there is no such characteristic, it cannot be read or it is empty.
  static func modelNumber(client: BlueZClient, devicePath: String, objects: BlueZObjects) async -> String? {
    guard let c = objects.characteristic(of: devicePath, uuid: GattUUID.modelNumber),
      let bytes = try? await client.readValue(c.path)
    else { return nil }
    // The string is UTF-8 (GATT "utf8s"); some devices pad it with NULs. At most 64 bytes are kept: a
    // model name, not a payload.
    let text = String(decoding: bytes.prefix { $0 != 0 }.prefix(64), as: UTF8.self)
    return text.isEmpty ? nil : text
  }

}
