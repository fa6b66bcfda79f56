import BlueZ
import CaptureCore
import DBus
import Synchronization

/// A Socket Mobile (or any) BLE device reached through bluetoothd. BlueZ holds the link, so this object
/// owns only its own bus connection, notify sessions and decoders; another capture process can use the
/// same device at the same time.
public final class BLEDevice: Device, @unchecked Sendable {
  public let info: DeviceInfo
  public let events: AsyncStream<Event>
  let family: BLEFamily
  let address: String
  /// The device has a Battery service (0x180F) in its UUIDs: bluetoothd lists every service it
  /// resolved there, also the ones its battery plugin claims and does not export as GATT.
  let hasBatteryService: Bool
  let client: BlueZClient
  let request: OpenRequest
  private let continuation: AsyncStream<Event>.Continuation
  let state: Mutex<LinkState>
  private let pump = Mutex<Task<Void, Never>?>(nil)

  struct LinkState {
    var devicePath: String
    var objects: BlueZObjects
    var isConnected = true
    var isClosed = false
    /// One reconnect loop at a time (link loss and bluetoothd's return can both start one).
    var isReconnecting = false
    /// linkBack is running (a reconnect loop and a ServicesResolved signal can both call it).
    var isResuming = false
    /// The last presence event sent was an arrival: close() owes a removal.
    var isAnnounced = true
    /// Notify sessions are armed and the D600 is in scanner mode.
    var isBroughtUp = false
    var d600Scan = D600ScanAssembler()
    var d600Answer = D600ConfigAnswerAssembler()
    var direct = DirectAssembler()
    var answerWaiters: [CheckedContinuation<D600ConfigAnswer?, Never>] = []
    /// Characteristic path → what its notifications are.
    var routes: [String: Route] = [:]
    /// Characteristics on which this process holds a notify session (StartNotify succeeded). A route
    /// can exist without one: 0x2A19 values notified for another client's session reach every bus
    /// client as PropertiesChanged (bluez-testing.md), so an armed CCCD is not subscribed twice.
    var sessions: Set<String> = []
    /// The NotificationsDevice bits this process asked for (capture-sdk.md §7.6); kept across link
    /// loss and re-applied on the new link.
    var notifications = Notifications()
  }

  enum Route { case d600ScanData, d600Config, directEvents, battery }

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
        try await Self.connectAndResolve(client, device.path, timeout: timeout ?? connectTimeout)
        objects = try await client.objects()
        device = objects.device(address: address, on: client.adapterPath) ?? device
      }
      let uuids = objects.serviceUUIDs(of: device.path).union(device.uuids)
      let family = BLEFamily.identify(uuids: uuids, name: device.name)
      let ble = BLEDevice(
        client: client, request: request, address: address, family: family, device: device, objects: objects,
        hasBatteryService: uuids.contains(GattUUID.battery))
      ble.startPump(events)
      // get/set need no notify sessions: a battery read stays one GetManagedObjects and one read.
      if request.wantsEvents { try await ble.bringUp() }
      return ble
    } catch {
      client.close()
      throw error
    }
  }

  /// Device1.Connect, then wait for ServicesResolved (bluez-testing.md: it can come before the GATT
  /// objects are announced, so the caller re-reads GetManagedObjects afterwards). It subscribes its own
  /// event stream: cancelling a task that iterates an AsyncStream finishes the stream, so a stream
  /// shared with the device's event pump would end the pump too.
  static func connectAndResolve(_ client: BlueZClient, _ path: String, timeout: Duration)
    async throws(CaptureError)
  {
    let events = try await client.events()
    let resolved = Task { () -> Bool in
      for await event in events {
        if case .propertiesChanged(let p, BlueZName.device, let changed, _) = event, p == path,
          changed["ServicesResolved"]?.boolValue == true
        {
          return true
        }
      }
      return false
    }
    defer { resolved.cancel() }
    try await client.connect(path, timeout: timeout)
    let objects = try await client.objects()
    if objects.devices().first(where: { $0.path == path })?.servicesResolved == true { return }
    let done = await withTaskGroup(of: Bool.self) { group in
      group.addTask { await resolved.value }
      group.addTask {
        try? await Task.sleep(for: timeout)
        return false
      }
      let first = await group.next() ?? false
      group.cancelAll()
      return first
    }
    guard done else {
      throw CaptureError(
        .requestTimedOut, "connected, but the device's GATT services were not resolved in time")
    }
  }

  init(
    client: BlueZClient, request: OpenRequest, address: String, family: BLEFamily, device: DeviceProperties,
    objects: BlueZObjects, hasBatteryService: Bool
  ) {
    self.hasBatteryService = hasBatteryService
    self.client = client
    self.request = request
    self.address = address
    self.family = family
    self.info = DeviceInfo(id: address, name: device.alias, type: family.deviceTypes[0])
    self.state = Mutex(LinkState(devicePath: device.path, objects: objects))
    (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
    for type in family.deviceTypes {
      var half = info
      half.type = type
      continuation.yield(Event(time: .now(), device: half, payload: .deviceArrival))
    }
  }

  var devicePath: String { state.withLock { $0.devicePath } }

  var hasBatteryInterface: Bool {
    state.withLock { $0.objects.objects[$0.devicePath]?[BlueZName.battery] != nil }
  }

  func characteristic(_ uuid: String) -> CharacteristicInfo? {
    state.withLock { $0.objects.characteristic(of: $0.devicePath, uuid: uuid) }
  }

  func requireCharacteristic(_ uuid: String, _ what: String) throws(CaptureError) -> CharacteristicInfo {
    guard let c = characteristic(uuid) else {
      throw CaptureError(.bleGatt, "\(info.name) has no \(what) characteristic (\(uuid))")
    }
    return c
  }

  /// Subscribes to what the family sends and switches a D600 to scanner mode (config AE 07, §2.3).
  /// Brings the device up once, for the commands that did not need it at open (set data-confirmation,
  /// trigger, device-specific on a D600 opened by get/set).
  func ensureBroughtUp() async throws(CaptureError) {
    if !state.withLock({ $0.isBroughtUp }) { try await bringUp() }
  }

  func bringUp() async throws(CaptureError) {
    state.withLock { $0.isBroughtUp = true }
    var routes: [String: Route] = [:]
    switch family {
    case .d600, .d600NoPairing:
      let noPair = family == .d600NoPairing
      let scan = try requireCharacteristic(
        noPair ? GattUUID.d600ScanDataNoPairing : GattUUID.d600ScanData, "scan data")
      let config = try requireCharacteristic(
        noPair ? GattUUID.d600ConfigIONoPairing : GattUUID.d600ConfigIO, "config")
      routes[scan.path] = .d600ScanData
      routes[config.path] = .d600Config
    case .s550:
      if let events = characteristic(GattUUID.directEvents) ?? characteristic(GattUUID.directEventsBound) {
        routes[events.path] = .directEvents
      }
    default: break
    }
    // The data channels are always subscribed; 0x2A19 only when the notifications setting asks for it
    // (keepBatteryNotifying below), so its route is added without a session.
    let dataPaths = routes.keys.sorted()
    if let battery = characteristic(GattUUID.batteryLevel), battery.canNotify {
      routes[battery.path] = .battery
    }
    state.withLock { $0.routes = routes }
    for path in dataPaths {
      do {
        try await client.startNotify(path)
      } catch  where error.message.contains("Already notifying") {
        // Our session survived the link loss: bluetoothd re-arms it on reconnect (bluez-testing.md).
      }
      _ = state.withLock { $0.sessions.insert(path) }
    }
    do {
      try await keepBatteryNotifying()
    } catch {
      // Battery events are an extra: the data channels stay up without them.
      request.warn("\(info.name): battery notifications: \(error.message)")
    }
    if family == .d600 || family == .d600NoPairing {
      let answer = try await configCommand(
        D600ConfigCommand.operatingMode.rawValue, [D600OperatingMode.scanner])
      if let answer {
        if !answer.isSuccess {
          request.warn("\(info.name): scanner mode (config AE 07) answered status \(answer.status)")
        }
      } else {
        request.warn("\(info.name): no answer to scanner mode (config AE 07) within 2 s")
      }
    }
  }

  // MARK: events

  func startPump(_ events: AsyncStream<BlueZEvent>) {
    let task = Task { [weak self] in
      for await event in events {
        guard let self else { return }
        await self.handle(event)
      }
      self?.linkLost(reason: "the system bus connection was lost")
    }
    pump.withLock { $0 = task }
  }

  func handle(_ event: BlueZEvent) async {
    switch event {
    case .propertiesChanged(let path, BlueZName.gattCharacteristic, let changed, _):
      guard let route = state.withLock({ $0.routes[path] }) else { return }
      if let value = changed["Value"]?.bytesValue { receive(value, on: route) }
      if case .battery = route, changed["Notifying"]?.boolValue == false {
        // The client whose session we relied on has gone: hold one ourselves (the setting is kept).
        Task { try? await self.keepBatteryNotifying() }
      }
    case .propertiesChanged(let path, BlueZName.device, let changed, _) where path == devicePath:
      if changed["Connected"]?.boolValue == false { linkLost(reason: "the link to \(address) was lost") }
      // Not awaited here: linkBack's bring-up waits for the D600's config answer, which only this
      // pump can deliver; awaiting it would hold the answer back until the 2 s config timeout.
      if changed["ServicesResolved"]?.boolValue == true, request.reconnects { Task { await self.linkBack() } }
    case .propertiesChanged(let path, BlueZName.battery, let changed, _) where path == devicePath:
      if let percent = changed["Percentage"]?.byteValue, !hasBatteryRoute { emitBattery(percent) }
    case .interfacesRemoved(let path, let interfaces)
    where path == devicePath && interfaces.contains(BlueZName.device):
      linkLost(reason: "\(address) was removed from bluetoothd")
    case .serviceVanished:
      // A new bluetoothd knows none of our notify sessions.
      state.withLock { $0.sessions = [] }
      linkLost(reason: "bluetoothd left the bus")
    case .serviceAppeared where request.reconnects:
      Task { await self.reconnectLoop() }
    default:
      break
    }
  }

  var hasBatteryRoute: Bool {
    state.withLock { $0.routes.values.contains { if case .battery = $0 { true } else { false } } }
  }

  func receive(_ bytes: [UInt8], on route: Route) {
    switch route {
    case .d600ScanData:
      let frames = state.withLock { $0.d600Scan.feed(bytes) }
      for frame in frames { emitD600(frame) }
    case .d600Config:
      let (answer, waiter) = state.withLock {
        s -> (D600ConfigAnswer?, CheckedContinuation<D600ConfigAnswer?, Never>?) in
        // A malformed answer block is dropped; the waiter then times out with a clear error.
        guard let answer = try? s.d600Answer.feed(bytes) else { return (nil, nil) }
        return (answer, s.answerWaiters.isEmpty ? nil : s.answerWaiters.removeFirst())
      }
      if let answer { waiter?.resume(returning: answer) }
    case .directEvents:
      let messages = state.withLock { $0.direct.feed(bytes) }
      for message in messages { emitDirect(message) }
    case .battery:
      if let percent = bytes.first { emitBattery(percent) }
    }
  }

  func emit(_ payload: Event.Payload, type: DeviceType? = nil) {
    var who = info
    if let type { who.type = type }
    continuation.yield(Event(time: .now(), device: who, payload: payload))
  }

  /// Arrival and removal events, each once per change, for every half of the device (S370).
  func announce(arrived: Bool) {
    let changed = state.withLock { s -> Bool in
      guard s.isAnnounced != arrived else { return false }
      s.isAnnounced = arrived
      return true
    }
    guard changed else { return }
    for type in family.deviceTypes { emit(arrived ? .deviceArrival : .deviceRemoval, type: type) }
  }

  func emitBattery(_ percent: UInt8) {
    emit(.batteryLevel(BatteryLevel(current: percent, minimum: 0, maximum: 100)))
  }

  /// D600 scan data: the 2-hex-digit family names the tag type; malformed and oversized frames are
  /// reported as errors with their bytes kept, never dropped silently (§2.4).
  func emitD600(_ event: D600ScanEvent) {
    switch event {
    case .frame(let frame):
      let source = frame.family.flatMap(NFCProtocolMap.sdkTagTypeID).map(DataSource.init) ?? .notSpecified
      emit(.decodedData(DecodedData(dataSource: source, bytes: frame.payload)))
    case .oversized(let raw):
      emit(
        .error(CaptureError(.invalidFormat, "D600 frame longer than 4096 bytes (\(raw.count) bytes kept)")))
    case .malformed(let raw):
      emit(.decodedData(DecodedData(dataSource: .notSpecified, bytes: raw)))
    }
  }

  /// S550 SpringCore Direct events: B0 tag read / B1 inserted carry the tag; the data is the tag's
  /// data when it has some, else its UID (§3.4).
  func emitDirect(_ event: DirectEvent) {
    switch event {
    case .message(let message):
      guard let tag = SpringCoreTagEvent.decode(message), tag.kind != .removed else { return }
      let source =
        tag.info.flatMap { NFCProtocolMap.sdkTagTypeID(family: $0.protocol) }.map(DataSource.init)
        ?? .notSpecified
      emit(
        .decodedData(
          DecodedData(dataSource: source, bytes: tag.data.isEmpty ? tag.tagID : tag.data, tagID: tag.tagID)))
    case .malformed(let raw):
      emit(.error(CaptureError(.invalidFormat, "malformed SpringCore Direct message (\(raw.count) bytes)")))
    }
  }

  func linkLost(reason: String) {
    let wasConnected = state.withLock { s -> Bool in
      defer { s.isConnected = false }
      return s.isConnected && !s.isClosed
    }
    guard wasConnected else { return }
    announce(arrived: false)
    failWaiters()
    if request.reconnects {
      Task { await self.reconnectLoop() }
    } else {
      continuation.finish()
      Task { await self.close() }
    }
  }

  func failWaiters() {
    let waiters = state.withLock { s -> [CheckedContinuation<D600ConfigAnswer?, Never>] in
      defer { s.answerWaiters = [] }
      return s.answerWaiters
    }
    for w in waiters { w.resume(returning: nil) }
  }

  /// Reconnects with backoff (0.25 s doubling to 5 s) until the device is back or capture is closed.
  func reconnectLoop() async {
    let first = state.withLock { s -> Bool in
      defer { s.isReconnecting = true }
      return !s.isReconnecting
    }
    guard first else { return }
    defer { state.withLock { $0.isReconnecting = false } }
    var delays = Backoff().delays()
    // One warning per outage, not per attempt: a device away for an hour is tried ~720 times.
    var warned = false
    while !state.withLock({ $0.isClosed || $0.isConnected }) {
      do {
        let objects = try await client.objects()
        if let device = objects.device(address: address, on: client.adapterPath) {
          state.withLock { $0.devicePath = device.path }
          if !device.isConnected { try await client.connect(device.path, timeout: .seconds(10)) }
          if try await client.objects().device(address: address, on: client.adapterPath)?.servicesResolved
            == true
          {
            await linkBack()
            return
          }
        }
      } catch {
        if !warned {
          warned = true
          request.warn("\(address): reconnect failed: \(error.message); trying again in the background")
        }
      }
      try? await Task.sleep(for: delays.next())
    }
  }

  /// The link is back: re-read the objects, re-arm notify sessions, announce the arrival again.
  func linkBack() async {
    let mine = state.withLock { s -> Bool in
      guard !s.isConnected && !s.isClosed && !s.isResuming else { return false }
      s.isResuming = true
      return true
    }
    guard mine else { return }
    defer { state.withLock { $0.isResuming = false } }
    do {
      let objects = try await client.objects()
      state.withLock {
        $0.objects = objects
        $0.isConnected = true
        $0.d600Scan = D600ScanAssembler()
        $0.direct = DirectAssembler()
      }
      try await bringUp()
      announce(arrived: true)
    } catch {
      state.withLock { $0.isConnected = false }
      request.warn("\(address): could not resume after reconnecting: \(error.message)")
    }
  }

  public func close() async {
    let first = state.withLock { s -> Bool in
      defer { s.isClosed = true }
      return !s.isClosed
    }
    guard first else { return }
    pump.withLock { $0?.cancel() }
    failWaiters()
    let (sessions, connected) = state.withLock { ($0.sessions.sorted(), $0.isConnected) }
    if connected {
      // Our notify sessions end with our bus connection anyway; stopping them is courtesy.
      for path in sessions { try? await client.stopNotify(path) }
    }
    announce(arrived: false)
    continuation.finish()
    client.close()
  }

  // MARK: config channel (D600)

  /// Sends a block-framed config command (§2.6) and waits up to 2 s for its answer.
  func configCommand(_ command: UInt8, _ payload: [UInt8]) async throws(CaptureError) -> D600ConfigAnswer? {
    if command != D600ConfigCommand.operatingMode.rawValue { try await ensureBroughtUp() }
    let noPair = family == .d600NoPairing
    let config = try requireCharacteristic(
      noPair ? GattUUID.d600ConfigIONoPairing : GattUUID.d600ConfigIO, "config")
    let answer = Task { () -> D600ConfigAnswer? in
      await withCheckedContinuation { c in self.state.withLock { $0.answerWaiters.append(c) } }
    }
    for block in D600ConfigBlocks.encode(command: command, payload: payload) {
      try await client.writeValue(config.path, block, type: "request")
    }
    let timeout = Task {
      try? await Task.sleep(for: .seconds(2))
      if !Task.isCancelled { self.failWaiters() }
    }
    let result = await answer.value
    timeout.cancel()
    return result
  }

  func scanControl(_ bytes: [UInt8]) async throws(CaptureError) {
    try await ensureBroughtUp()
    let noPair = family == .d600NoPairing
    let control = try requireCharacteristic(
      noPair ? GattUUID.d600ScanControlNoPairing : GattUUID.d600ScanControl, "scan control")
    try await client.writeValue(control.path, bytes, type: "request")
  }
}
