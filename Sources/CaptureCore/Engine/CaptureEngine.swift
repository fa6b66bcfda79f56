import Synchronization

/// The long-running heart every front end drives (`listen`, and the service front ends): the SDK's
/// Capture and DeviceManager roles (docs/capture-sdk.md §7.16) in one object.
///
/// - It holds the set of open devices: ones a front end opened and attached (`attach`, `open`), and,
///   in service mode (`startService`), one `DeviceSupervisor` per remembered or favourite device, each
///   with the one reconnect policy (`Backoff`), so one that is absent or fails does not stop the others.
/// - Favourites: `*` connects any Socket Mobile device BLE discovery finds; an identifier list is
///   supervised like remembered devices; a favourite bluetoothd does not know yet is connected the way
///   `capture connect` does (paired when its profile needs a bond, trusted) and remembered.
/// - `reload()` re-reads the state file and starts or stops supervisors to match it (listen's SIGHUP).
/// - Every event of every device goes to every subscriber (`subscribe`), each with its own bounded
///   queue and a `SubscriberPolicy` for falling behind (docs/engine.md "Fan-out").
///
/// Its four jobs each have a file of their own: the event fan-out (`EngineFanOut`), state-file
/// reconciliation (StateFileReconciliation.swift: `startService`, `reload`), SocketCam switching
/// (SocketCamSwitch.swift) and the favourites scout (FavoritesScout.swift). Every task it starts is
/// owned by `EngineTasks` and awaited by `wait()`.
///
/// The engine never prints: warnings go to `Configuration.warn`, events to the subscribers.
public final class CaptureEngine: Sendable {
  public struct Configuration: Sendable {
    /// `--adapter`: the Bluetooth adapter every open and discovery uses.
    public var adapter: String?
    /// How long one open may take (`--timeout` for connecting); nil for each driver's default.
    public var openTimeout: Duration?
    /// Keyboard-wedge devices opened by the service: the layout they type for.
    public var keymap: String?
    /// Diagnostics that are not events (a device absent, discovery failing); told once per outage.
    public var warn: @Sendable (String) -> Void
    /// Run on each opening of a supervised device before its events are forwarded (listen turns on
    /// the notifications it was asked for, docs/capture-sdk.md §7.6).
    public var onOpen: @Sendable (any Device) async -> Void
    public var backoff: Backoff
    /// One BLE discovery runs this long, then starts again: bluetoothd restarts and missed
    /// advertisements (docs/bluez-testing.md: restart discovery every few seconds) cost at most one
    /// window.
    public var discoveryWindow: Duration
    /// How often the scout checks whether any BLE device still needs discovering.
    public var idleCheck: Duration
    /// A service's SOURCE for SocketCam (`serve --camera`, `--dir` as `FrameSourceItem.watching`):
    /// with one, SocketCam is opened whenever SocketCamStatus is Enable (`setSocketCamStatus`); empty,
    /// the service has no SocketCam and reports SocketCamStatus NotSupported.
    public var socketCamSources: [FrameSourceItem]

    public init(
      adapter: String? = nil, openTimeout: Duration? = nil, keymap: String? = nil,
      warn: @escaping @Sendable (String) -> Void = { _ in },
      onOpen: @escaping @Sendable (any Device) async -> Void = { _ in }, backoff: Backoff = Backoff(),
      discoveryWindow: Duration = .seconds(5), idleCheck: Duration = .seconds(1),
      socketCamSources: [FrameSourceItem] = []
    ) {
      self.adapter = adapter
      self.openTimeout = openTimeout
      self.keymap = keymap
      self.warn = warn
      self.onOpen = onOpen
      self.backoff = backoff
      self.discoveryWindow = discoveryWindow
      self.idleCheck = idleCheck
      self.socketCamSources = socketCamSources
    }
  }

  /// A device the state file asks for.
  public struct WantedDevice: Sendable, Equatable {
    /// The key it is supervised under: its selector as it prints.
    public var key: String
    public var selector: DeviceSelector
    public var info: DeviceInfo
    /// Reached through BlueZ (a BLE address, not a Classic one): discovery may be what finds it.
    public var isBluetoothLE: Bool
  }

  /// The drivers and the state file are the engine's own: a front end reaches them through the
  /// engine's operations (`devices`, `open`, `setSocketCamStatus`), never around them.
  let system: any DeviceSystem
  let store: StateStore
  public let configuration: Configuration
  /// The device manager's operations on the engine's drivers and state (connect and remember, forget,
  /// remove, discovery), the same ones the one-shot commands run.
  public let devices: DeviceManager
  let state = Mutex(State())
  private let finished = Latch()
  /// Every task the engine starts (`EngineTasks`): awaited by `wait()`.
  let tasks: EngineTasks
  let fanOut: EngineFanOut

  struct State {
    var nextAttached = 0
    var attached: [Int: any Device] = [:]
    var supervisors: [String: DeviceSupervisor] = [:]
    /// Devices whose events are still being forwarded (attached devices and supervisors, including
    /// stopped ones): outside service mode the engine finishes when the last one has ended.
    var forwarding = 0
    var isServing = false
    var isStopped = false
    var isFinished = false
    /// Keys of supervised devices reached through BlueZ.
    var bluetoothLE: Set<String> = []
    /// Ids the state file remembers (as of the last read, plus what the engine remembered since).
    var remembered: Set<String> = []
    var favorites: Favorites = .off
    /// BLE addresses being connected automatically right now.
    var connecting: Set<String> = []
    /// Addresses whose automatic connect failed: warned once, until one succeeds.
    var failedConnects: Set<String> = []
    /// The SocketCam a service opened (`setSocketCamStatus`), under its attached key; `ended` opens
    /// once its last event was forwarded.
    var socketCam: (key: Int, device: any Device, ended: Latch)?
    /// The last SocketCam change asked for, open once it is carried out: each waits for the one
    /// before (one at a time, in order).
    var socketCamSteps: Latch?
  }

  public init(system: any DeviceSystem, store: StateStore, configuration: Configuration = Configuration()) {
    self.system = system
    self.store = store
    self.configuration = configuration
    self.devices = DeviceManager(
      system: system, store: store, adapter: configuration.adapter, timeout: configuration.openTimeout,
      warn: configuration.warn)
    let tasks = EngineTasks()
    self.tasks = tasks
    self.fanOut = EngineFanOut(tasks: tasks)
  }

  // MARK: subscribers (EngineFanOut)

  /// A new subscriber; it receives every event published from now on.
  public func subscribe(_ name: String, policy: SubscriberPolicy) -> EngineSubscription {
    fanOut.subscribe(name, policy: policy)
  }

  /// A back-pressure subscriber that consumes on the devices' own lanes (`LaneSubscription`): the
  /// engine calls `handler` for every event, on the task forwarding that event's device, in order per
  /// device and concurrently across devices; that device waits while the handler runs. It receives
  /// every event published from now on; `wait()` returns after its last call. The event stream of
  /// `listen` is one: the lane is the device's own queue, so the printer takes events straight from
  /// the devices, and a `--confirm` verdict holds back only the device it is for.
  public func subscribe(_ name: String, onLanes handler: @escaping @Sendable (Event) async -> Void)
    -> LaneSubscription
  {
    fanOut.subscribe(name, onLanes: handler)
  }

  /// The subscribers with their own queue now (tests, and a service front end's status).
  public var subscribers: [EngineSubscription] { fanOut.queued }

  /// Gives the engine's own events to every subscriber without waiting for any.
  func publishNow(_ events: [Event]) {
    guard !events.isEmpty else { return }
    fanOut.publishNow(events)
  }

  // MARK: devices

  /// Opens a device with the engine's adapter and timeout, and attaches it.
  public func open(_ request: OpenRequest) async throws(CaptureError) -> any Device {
    let device = try await system.open(request, state: store)
    attach([device])
    return device
  }

  /// Takes devices a front end opened: their events (arrival first) go to the subscribers until each
  /// stream ends. Outside service mode the engine finishes once the last of them has ended.
  public func attach(_ devices: [any Device]) {
    let taken = state.withLock { s -> Bool in
      guard !s.isStopped else { return false }
      for device in devices {
        s.nextAttached += 1
        let key = s.nextAttached
        s.attached[key] = device
        forward(device.events, in: &s) { $0.attached[key] = nil }
      }
      return true
    }
    if !taken { tasks.spawn { for device in devices { await device.close() } } }
  }

  /// Forwards one device's events on a lane of its own (an `EngineTasks` job), then applies `ended`
  /// to the state; the engine finishes once the last lane has ended (outside service mode, or after
  /// `stop()`). Called under `state`'s lock (`s`).
  func forward(
    _ events: AsyncStream<Event>, after: Latch? = nil, in s: inout State,
    ended: @escaping @Sendable (inout State) -> Void = { _ in }, then: (@Sendable () -> Void)? = nil
  ) {
    s.forwarding += 1
    tasks.spawn {
      await self.fanOut.forward(events, after: after)
      self.forwardingEnded(ended)
      then?()
    }
  }

  /// The open devices, attached and supervised (a new service client is told their arrivals).
  public var openDevices: [any Device] {
    state.withLock { s in Array(s.attached.values) + s.supervisors.values.compactMap(\.device) }
  }

  /// The open device with this id (listen --confirm tells it the verdict).
  public func device(id: String) -> (any Device)? {
    openDevices.first { $0.info.id == id }
  }

  func forwardingEnded(_ change: (inout State) -> Void) {
    let finish = state.withLock { s -> Bool in
      change(&s)
      s.forwarding -= 1
      return s.forwarding == 0 && (s.isStopped || !s.isServing) && !s.isFinished
    }
    if finish { finishAll() }
  }

  /// Every forwarding task has ended and nothing more will be published: subscribers' streams end.
  func finishAll() {
    state.withLock { $0.isFinished = true }
    fanOut.finish()
    finished.open()
  }

  // MARK: lifetime

  /// Returns once the engine has finished: stopped, or (outside service mode) every attached device's
  /// stream has ended. Every event is in the subscribers' queues by then, and every task the engine
  /// started has ended (`EngineTasks.drain`).
  public func wait() async {
    await finished.wait()
    await tasks.drain()
  }

  public var isStopped: Bool { state.withLock { $0.isStopped } }

  /// --count reached, --timeout ran out, a signal: every open device is closed (its removal
  /// published), discovery ends, then the subscribers' streams end. Returns once devices are closed.
  public func stop() async {
    let taken = state.withLock { s -> ([DeviceSupervisor], [any Device], Bool)? in
      guard !s.isStopped else { return nil }
      s.isStopped = true
      defer { s.supervisors = [:] }
      return (Array(s.supervisors.values), Array(s.attached.values), s.forwarding == 0 && !s.isFinished)
    }
    guard let (supervisors, attached, idle) = taken else { return }
    // The scout and the favourites it was connecting.
    tasks.stop()
    await withTaskGroup(of: Void.self) { group in
      for supervisor in supervisors { group.addTask { await supervisor.stop() } }
      for device in attached { group.addTask { await device.close() } }
    }
    if idle { finishAll() }
  }
}

extension RememberedDevice {
  /// A connected BLE device as the state file remembers it: under its address, its first device type.
  public init(bluetooth device: BluetoothDeviceInfo, alias: String?, lastSeen: Timestamp = .now()) {
    self.init(
      id: device.address, alias: alias, name: device.name, type: device.deviceTypes[0].rawValue,
      transport: RememberedDevice.bluetoothLETransport, lastSeen: lastSeen.iso8601)
  }
}
