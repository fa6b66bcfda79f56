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
  private let state = Mutex(State())
  private let finished = Latch()
  /// Bumped (under `state`'s lock) whenever the subscribers change, so each forwarding task reads
  /// the list again only then, not once per event.
  private let generation = Atomic<Int>(0)

  /// One open device or supervisor and the task forwarding its events.
  private enum Member {
    case attached(any Device)
    case supervised(DeviceSupervisor)
  }

  /// Who a forwarding task hands each event to: a snapshot, taken again when `generation` moves.
  private struct Fanout {
    var queued: [EngineSubscription] = []
    var lanes: [LaneSubscription] = []
  }

  private struct State {
    var fanout = Fanout()
    var subscribers: [EngineSubscription] {
      get { fanout.queued }
      set { fanout.queued = newValue }
    }
    var nextAttached = 0
    var attached: [Int: any Device] = [:]
    var supervisors: [String: DeviceSupervisor] = [:]
    /// Forwarding tasks still running (attached devices and supervisors, including stopped ones).
    var pumps = 0
    var isServing = false
    var isStopped = false
    var isFinished = false
    /// Keys of supervised devices reached through BlueZ.
    var bluetoothLE: Set<String> = []
    /// Ids the state file remembers (as of the last read, plus what the engine remembered since).
    var remembered: Set<String> = []
    var favorites: Favorites = .off
    var scout: Task<Void, Never>?
    var stopping: [Task<Void, Never>] = []
    /// Events the engine made itself on their way to the lane subscribers (`publishNow`).
    var deliveries: [Task<Void, Never>] = []
    /// BLE addresses being connected automatically right now.
    var connecting: Set<String> = []
    /// Addresses whose automatic connect failed: warned once, until one succeeds.
    var failedConnects: Set<String> = []
    /// The SocketCam a service opened (`setSocketCamStatus`), under its attached key; `ended` opens
    /// once its last event was forwarded.
    var socketCam: (key: Int, device: any Device, ended: Latch)?
    /// The last SocketCam change asked for: each waits for the one before (one at a time, in order).
    var socketCamSteps: Task<Void, Never>?
  }

  public init(system: any DeviceSystem, store: StateStore, configuration: Configuration = Configuration()) {
    self.system = system
    self.store = store
    self.configuration = configuration
    self.devices = DeviceManager(
      system: system, store: store, adapter: configuration.adapter, timeout: configuration.openTimeout,
      warn: configuration.warn)
  }

  // MARK: subscribers

  /// A new subscriber; it receives every event published from now on.
  public func subscribe(_ name: String, policy: SubscriberPolicy) -> EngineSubscription {
    let subscription = EngineSubscription(name: name, policy: policy) { [weak self] gone in
      self?.forget(gone)
    }
    let ended = state.withLock { s -> Bool in
      if s.isFinished { return true }
      s.subscribers.append(subscription)
      changed()
      return false
    }
    if ended { subscription.finish() }
    return subscription
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
    let subscription = LaneSubscription(name: name, handler: handler) { [weak self] gone in
      self?.forget(gone)
    }
    state.withLock { s in
      guard !s.isFinished else { return }
      s.fanout.lanes.append(subscription)
      changed()
    }
    return subscription
  }

  /// The subscribers with their own queue now (tests, and a service front end's status).
  public var subscribers: [EngineSubscription] { state.withLock { $0.subscribers } }

  /// Called under `state`'s lock after the subscribers changed.
  private func changed() { generation.add(1, ordering: .releasing) }

  private func forget(_ subscription: EngineSubscription) {
    state.withLock { s in
      s.subscribers.removeAll { $0 === subscription }
      changed()
    }
  }

  private func forget(_ subscription: LaneSubscription) {
    state.withLock { s in
      s.fanout.lanes.removeAll { $0 === subscription }
      changed()
    }
  }

  private func forgetFinished() {
    state.withLock { s in
      s.subscribers.removeAll { $0.isFinished }
      changed()
    }
  }

  /// Forwards one device's events until its stream ends: each to every queued subscriber by its
  /// policy, then to every lane subscriber on this task. The subscriber list is read again only when
  /// it has changed (one atomic load per event otherwise). `after`: the engine's own events that
  /// must reach the lanes first (the state file's problems, known before this device started).
  private func forward(_ events: AsyncStream<Event>, after: Task<Void, Never>? = nil) async {
    await after?.value
    var fanout = Fanout()
    var seen = -1
    for await event in events {
      if generation.load(ordering: .acquiring) != seen {
        (fanout, seen) = state.withLock { ($0.fanout, generation.load(ordering: .relaxed)) }
      }
      var gone = false
      for subscriber in fanout.queued {
        if await !subscriber.offer(event) { gone = true }
      }
      for lane in fanout.lanes { await lane.deliver(event) }
      if gone { forgetFinished() }
    }
  }

  /// Gives events to every subscriber without waiting for any: events the engine makes itself. A
  /// queued subscriber gets them now; the lane subscribers get them, in order, on a task of their own
  /// that `wait()` waits for.
  func publishNow(_ events: [Event]) {
    guard !events.isEmpty else { return }
    state.withLock { s in _ = deliverToLanes(events, &s) }
    offerNowToQueued(events)
  }

  /// The lane half of `publishNow`, under the lock: a task handing `events` to the lane subscribers
  /// in order (nil when there are none), which `wait()` waits for.
  private func deliverToLanes(_ events: [Event], _ s: inout State) -> Task<Void, Never>? {
    let lanes = s.fanout.lanes
    guard !events.isEmpty, !lanes.isEmpty else { return nil }
    let delivery = Task {
      for event in events {
        for lane in lanes { await lane.deliver(event) }
      }
    }
    s.deliveries.append(delivery)
    return delivery
  }

  /// The queued half of `publishNow`: offered without waiting, whatever the policy.
  private func offerNowToQueued(_ events: [Event]) {
    guard !events.isEmpty else { return }
    let queued = state.withLock { $0.fanout.queued }
    var gone = false
    for event in events {
      for subscriber in queued where !subscriber.offerNow(event) { gone = true }
    }
    if gone { forgetFinished() }
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
    let added = state.withLock { s -> [(Int, any Device)]? in
      guard !s.isStopped else { return nil }
      var added: [(Int, any Device)] = []
      for device in devices {
        s.nextAttached += 1
        s.attached[s.nextAttached] = device
        s.pumps += 1
        added.append((s.nextAttached, device))
      }
      return added
    }
    guard let added else {
      Task { for device in devices { await device.close() } }
      return
    }
    for (key, device) in added {
      Task {
        await self.forward(device.events)
        self.pumpEnded { $0.attached[key] = nil }
      }
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

  private func pumpEnded(_ change: (inout State) -> Void) {
    let finish = state.withLock { s -> Bool in
      change(&s)
      s.pumps -= 1
      return s.pumps == 0 && (s.isStopped || !s.isServing) && !s.isFinished
    }
    if finish { finishAll() }
  }

  /// Every forwarding task has ended and nothing more will be published: subscribers' streams end.
  private func finishAll() {
    let subscribers = state.withLock { s -> [EngineSubscription] in
      s.isFinished = true
      defer {
        s.fanout = Fanout()
        changed()
      }
      return s.subscribers
    }
    for subscriber in subscribers { subscriber.finish() }
    finished.open()
  }

  // MARK: lifetime

  /// Returns once the engine has finished: stopped, or (outside service mode) every attached device's
  /// stream has ended. Every event is in the subscribers' queues by then.
  public func wait() async {
    await finished.wait()
    let stopping = state.withLock { $0.stopping + $0.deliveries }
    for task in stopping { await task.value }
  }

  public var isStopped: Bool { state.withLock { $0.isStopped } }

  /// --count reached, --timeout ran out, a signal: every open device is closed (its removal
  /// published), discovery ends, then the subscribers' streams end. Returns once devices are closed.
  public func stop() async {
    let taken = state.withLock { s -> ([DeviceSupervisor], [any Device], Task<Void, Never>?, Bool)? in
      guard !s.isStopped else { return nil }
      s.isStopped = true
      defer { s.supervisors = [:] }
      return (Array(s.supervisors.values), Array(s.attached.values), s.scout, s.pumps == 0 && !s.isFinished)
    }
    guard let (supervisors, attached, scout, idle) = taken else { return }
    scout?.cancel()
    await withTaskGroup(of: Void.self) { group in
      for supervisor in supervisors { group.addTask { await supervisor.stop() } }
      for device in attached { group.addTask { await device.close() } }
    }
    if idle { finishAll() }
  }

  // MARK: service mode

  /// Reads the state file and starts a supervisor per remembered device and the favourites' discovery.
  /// The engine then runs until `stop()`. A state file that cannot be read, or one with nothing to
  /// listen to while favourites are off, is an error here (nothing has started yet); one whose every
  /// entry is unusable publishes them and finishes. `evenIfEmpty` (the Capture service, whose clients
  /// add devices and turn favourites on at run time) serves an empty state file too, until `stop()`.
  public func startService(evenIfEmpty: Bool = false) throws(CaptureError) {
    let file = try store.load()
    let favorites = readFavorites(file)
    let (wanted, problems) = Self.wanted(file, favorites: favorites)
    let hasSocketCam = !configuration.socketCamSources.isEmpty
    if wanted.isEmpty && favorites == .off && !hasSocketCam && !evenIfEmpty {
      guard !problems.isEmpty else {
        throw .invalidParameter(
          "nothing to listen to: no device is remembered; give a DEVICE or a SocketCam source (--image, --dir, --camera)"
        )
      }
      // Every entry is unusable: report each and end at once rather than wait for a reload with
      // nothing to listen to.
      publishNow(problems)
      let finish = state.withLock { s -> Bool in
        s.isStopped = true
        return s.pumps == 0 && !s.isFinished
      }
      if finish { finishAll() }
      return
    }
    state.withLock { $0.isServing = true }
    apply(file, favorites: favorites, wanted: wanted, problems: problems)
    let scout = Task { await self.scoutLoop() }
    let kept = state.withLock { s -> Bool in
      guard !s.isStopped else { return false }
      s.scout = scout
      return true
    }
    if !kept { scout.cancel() }
    if hasSocketCam { followSocketCamSetting("starting") }
  }

  /// Re-reads the state file (listen's SIGHUP). A file that cannot be read now leaves the running set
  /// as it is and says so.
  public func reload() {
    let file: StateFile
    do { file = try store.load() } catch {
      configuration.warn("SIGHUP: \(error.message); still listening to the devices read before")
      return
    }
    let favorites = readFavorites(file)
    let (wanted, problems) = Self.wanted(file, favorites: favorites)
    apply(file, favorites: favorites, wanted: wanted, problems: problems)
    if !configuration.socketCamSources.isEmpty { followSocketCamSetting("SIGHUP") }
  }

  /// A favourite setting that does not parse (a hand-edited file) is reported and read as off: the
  /// remembered devices are still listened to.
  private func readFavorites(_ file: StateFile) -> Favorites {
    do { return try Favorites(parsing: file.favorite) } catch {
      configuration.warn("ignoring the favorite setting in \(store.path): \(error.message)")
      return .off
    }
  }

  /// The remembered devices, then the favourite identifiers not remembered, each once; entries whose
  /// id names no device are problems (error events, skipped).
  public static func wanted(_ file: StateFile, favorites: Favorites) -> (
    wanted: [WantedDevice], problems: [Event]
  ) {
    var wanted: [WantedDevice] = []
    var problems: [Event] = []
    var seen = Set<String>()
    func add(id: String, info: DeviceInfo, transport: String?) {
      let selector: DeviceSelector
      do { selector = try DeviceSelector.parse(id) } catch {
        problems.append(problem(info, "remembered device '\(id)': \(error.message)"))
        return
      }
      switch selector {
      case .name, .socketCam, .deviceManager:
        problems.append(
          problem(
            info,
            "remembered device id '\(id)' is not a Bluetooth address or a tcp://, serial: or hid: device"))
        return
      default:
        break
      }
      let key = selector.description
      guard seen.insert(key).inserted else { return }
      var isLE = false
      if case .bluetooth = selector { isLE = transport != RememberedDevice.classicTransport }
      wanted.append(WantedDevice(key: key, selector: selector, info: info, isBluetoothLE: isLE))
    }
    for device in file.devices {
      add(
        id: device.id, info: DeviceInfo(id: device.id, name: device.name, type: DeviceType(device.type)),
        transport: device.transport)
    }
    if case .devices(let ids) = favorites {
      for id in ids { add(id: id, info: DeviceInfo(id: id, name: id, type: .none), transport: nil) }
    }
    return (wanted, problems)
  }

  static func problem(_ info: DeviceInfo, _ message: String) -> Event {
    Event(
      time: .now(), device: info,
      payload: .error(
        CaptureError(.invalidFormat, "\(message); skipped until the state file is re-read (SIGHUP)")))
  }

  /// Starts supervisors for what is wanted and not running (or given up: a reload tries those again),
  /// stops the ones no longer wanted (each stopped open device publishes its removal).
  private func apply(_ file: StateFile, favorites: Favorites, wanted: [WantedDevice], problems: [Event]) {
    let keys = Set(wanted.map(\.key))
    let started = state.withLock { s -> [DeviceSupervisor]? in
      guard !s.isStopped else { return nil }
      s.favorites = favorites
      s.remembered = Set(file.devices.compactMap { (try? DeviceSelector.parse($0.id))?.description })
      // Problems first: they are known now, before any supervisor can report its own (the lanes get
      // them before the new supervisors' events; the queued subscribers below, before any starts).
      let problemsDelivered = deliverToLanes(problems, &s)
      var start: [DeviceSupervisor] = []
      for item in wanted {
        if let running = s.supervisors[item.key], !running.hasGivenUp { continue }
        start.append(makeSupervisor(item, &s, after: problemsDelivered))
      }
      let stop = s.supervisors.values.filter { !keys.contains($0.id) }
      for supervisor in stop {
        s.supervisors[supervisor.id] = nil
        s.bluetoothLE.remove(supervisor.id)
      }
      if !stop.isEmpty {
        s.stopping.append(
          Task {
            await withTaskGroup(of: Void.self) { group in
              for supervisor in stop { group.addTask { await supervisor.stop() } }
            }
          })
      }
      return start
    }
    guard let started else { return }
    offerNowToQueued(problems)
    for supervisor in started { supervisor.start() }
  }

  /// A supervisor for `item`, registered with its forwarding task; the caller starts it.
  private func makeSupervisor(_ item: WantedDevice, _ s: inout State, after: Task<Void, Never>? = nil)
    -> DeviceSupervisor
  {
    let warn = configuration.warn
    var request = OpenRequest(selector: item.selector, adapter: configuration.adapter, warn: warn)
    request.reconnects = true
    request.wantsEvents = true
    request.timeout = configuration.openTimeout
    request.keymap = configuration.keymap
    let supervisor = DeviceSupervisor(
      id: item.key, info: item.info, request: request, opener: system, store: store,
      backoff: configuration.backoff, warn: warn, onOpen: configuration.onOpen)
    s.supervisors[item.key] = supervisor
    if item.isBluetoothLE { s.bluetoothLE.insert(item.key) } else { s.bluetoothLE.remove(item.key) }
    s.pumps += 1
    Task {
      await self.forward(supervisor.events, after: after)
      self.pumpEnded { _ in }
    }
    return supervisor
  }

  // MARK: SocketCam in a service

  /// SocketCamStatus as a service reports it (the capture-level property, docs/capture-sdk.md §7.13):
  /// NotSupported (2) when the service has no SOURCE (`Configuration.socketCamSources` is empty),
  /// otherwise the persisted setting, the one `capture set socketcam socket-cam-status` writes:
  /// Enable (0) or Disable (1) (any other stored byte reads as Disable, as SocketCam itself reads it).
  public func socketCamStatus() throws(CaptureError) -> SocketCamStatus {
    guard !configuration.socketCamSources.isEmpty else { return .notSupported }
    return try store.load().socketCam.status == SocketCamStatus.enable.rawValue ? .enable : .disable
  }

  /// Sets SocketCamStatus for a front end (a CaptureJS app's setproperty on its client handle): the
  /// setting is persisted (the same one as `capture set socketcam socket-cam-status`), then Enable
  /// opens SocketCam with the service's SOURCE and attaches it (its DeviceArrival reaches every
  /// subscriber, and `openDevices` lists it), Disable closes it (its DeviceRemoval). Returns once the
  /// device is open, or closed with its last event handed to the subscribers; setting what already
  /// holds changes nothing. Changes run one at a time, in the order they were asked.
  ///
  /// The SocketCam opened here scans in the background (`OpenRequest.scansInBackground`): a
  /// TriggerDevice start returns once the scan reads and its codes arrive as events.
  ///
  /// Errors: NotSupported (2) as a value is ESKT_INVALIDPARAMETER (-18; it is a status to read, not to
  /// set). Enable without a SOURCE is ESKT_NOTSUPPORTED (-15) and persists nothing (`socketCamStatus`
  /// answers NotSupported there); Disable without one is persisted, with nothing to close. A state
  /// file that cannot be written is its error; a stopped engine is ESKT_NOTAVAILABLE for Enable.
  public func setSocketCamStatus(_ status: SocketCamStatus) async throws(CaptureError) {
    let enable: Bool
    switch status {
    case .notSupported:
      throw .invalidParameter("socket-cam-status is set to enable (0) or disable (1), not not-supported (2)")
    case .enable:
      guard !configuration.socketCamSources.isEmpty else {
        throw .notSupported(
          "SocketCam has no frame source here: start the service with --camera /dev/videoN or --dir DIR")
      }
      enable = true
    case .disable:
      enable = false
    }
    try store.update { (state: inout StateFile) throws(CaptureError) in
      state.socketCam.status = status.rawValue
    }
    try await socketCamStep(.set(enable)).get()
  }

  /// Returns once every SocketCam change asked so far (by `startService`, `reload`,
  /// `setSocketCamStatus`) has been carried out.
  public func socketCamSettled() async {
    let last = state.withLock { $0.socketCamSteps }
    await last?.value
  }

  private enum SocketCamWish {
    /// Open or close as the state file says (the service starting, SIGHUP).
    case fromStateFile
    case set(Bool)
  }

  /// The persisted setting, followed in the background; a failure is a warning (`context` says when).
  private func followSocketCamSetting(_ context: String) {
    Task {
      if case .failure(let error) = await socketCamStep(.fromStateFile) {
        configuration.warn("SocketCam (\(context)): \(error.message)")
      }
    }
  }

  /// Queues one change behind the ones already asked for and waits for its result.
  private func socketCamStep(_ wish: SocketCamWish) async -> Result<Void, CaptureError> {
    let step = state.withLock { s -> Task<Result<Void, CaptureError>, Never> in
      let previous = s.socketCamSteps
      let step = Task { () -> Result<Void, CaptureError> in
        await previous?.value
        return await self.applySocketCam(wish)
      }
      s.socketCamSteps = Task { _ = await step.value }
      return step
    }
    return await step.value
  }

  private func applySocketCam(_ wish: SocketCamWish) async -> Result<Void, CaptureError> {
    let enable: Bool
    switch wish {
    case .set(let wanted): enable = wanted
    case .fromStateFile:
      do { enable = try socketCamStatus() == .enable } catch { return .failure(error) }
    }
    let current = state.withLock { s in s.socketCam.map { ($0.device, $0.ended) } }
    guard enable else {
      guard let (device, ended) = current else { return .success(()) }
      await device.close()
      await ended.wait()
      return .success(())
    }
    guard current == nil else { return .success(()) }
    guard !isStopped else { return .failure(CaptureError(.notAvailable, "the service is stopping")) }
    var request = OpenRequest(
      selector: .socketCam, frameSources: configuration.socketCamSources, adapter: configuration.adapter,
      warn: configuration.warn)
    request.scansInBackground = true
    let device: any Device
    do { device = try await system.open(request, state: store) } catch { return .failure(error) }
    let ended = Latch()
    let key = state.withLock { s -> Int? in
      guard !s.isStopped else { return nil }
      s.nextAttached += 1
      s.attached[s.nextAttached] = device
      s.pumps += 1
      s.socketCam = (s.nextAttached, device, ended)
      return s.nextAttached
    }
    guard let key else {
      await device.close()
      return .failure(CaptureError(.notAvailable, "the service is stopping"))
    }
    Task {
      await self.forward(device.events)
      self.pumpEnded { s in
        s.attached[key] = nil
        if s.socketCam?.key == key { s.socketCam = nil }
      }
      ended.open()
    }
    return .success(())
  }

  // MARK: BLE discovery (favourites, and BLE devices bluetoothd does not know yet)

  /// Discovery runs while it can help: favourites are `*`, or a BLE device to supervise is not open
  /// (bluetoothd may not know it until it is discovered).
  private var needsDiscovery: Bool {
    state.withLock { s in
      if s.isStopped { return false }
      if s.favorites == .anySocketMobile { return true }
      return s.bluetoothLE.contains { key in
        guard let supervisor = s.supervisors[key] else { return false }
        return !supervisor.isOpen && !supervisor.hasGivenUp
      }
    }
  }

  private func scoutLoop() async {
    var delays = configuration.backoff.delays()
    var inOutage = false
    while !Task.isCancelled {
      guard needsDiscovery else {
        try? await Task.sleep(for: configuration.idleCheck)
        continue
      }
      do {
        // Every device, not only those advertising a Socket Mobile service: an S721 advertises none,
        // and a favourite list may name any device. `found` picks.
        let request = DiscoveryRequest(
          adapter: configuration.adapter, transport: "le", all: true, namePattern: nil,
          timeout: configuration.discoveryWindow)
        _ = try await system.discover(request) { [self] device in found(device) }
        inOutage = false
        delays.reset()
      } catch {
        if !inOutage {
          inOutage = true
          configuration.warn(
            "cannot discover Bluetooth devices (\(error.message)); trying again in the background")
        }
        try? await Task.sleep(for: delays.next())
      }
    }
  }

  private enum Step {
    case nothing
    case retry(DeviceSupervisor)
    case connect
  }

  /// A device discovery saw: a supervised one that is not open tries again now; a favourite that is
  /// not remembered yet is connected and remembered.
  private func found(_ device: DiscoveredDeviceInfo) {
    let address = device.address
    let step = state.withLock { s -> Step in
      guard !s.isStopped else { return .nothing }
      let supervisor = s.supervisors[address]
      if let supervisor, supervisor.isOpen || supervisor.hasGivenUp { return .nothing }
      var isFavorite = false
      switch s.favorites {
      case .anySocketMobile: isFavorite = device.isSocketMobile
      case .devices(let ids): isFavorite = ids.contains(address)
      case .off: break
      }
      if s.remembered.contains(address) || !isFavorite {
        return supervisor.map { .retry($0) } ?? .nothing
      }
      guard s.connecting.insert(address).inserted else { return .nothing }
      return .connect
    }
    switch step {
    case .nothing: return
    case .retry(let supervisor): supervisor.retryNow()
    case .connect: Task { await autoConnect(address) }
    }
  }

  /// Connects a favourite the way `capture connect` does (pairing when its profile needs a bond,
  /// trusting it so it may reconnect), remembers it, and supervises it.
  private func autoConnect(_ address: String) async {
    do throws(CaptureError) {
      let connected = try await devices.connectAndRemember(address: address, keepingAlias: true)
      let item = WantedDevice(
        key: address, selector: .bluetooth(address),
        info: DeviceInfo(id: address, name: connected.name, type: connected.deviceTypes[0]),
        isBluetoothLE: true)
      let started = state.withLock { s -> (existing: DeviceSupervisor?, new: DeviceSupervisor?) in
        s.connecting.remove(address)
        s.failedConnects.remove(address)
        s.remembered.insert(address)
        guard !s.isStopped else { return (nil, nil) }
        if let running = s.supervisors[address], !running.hasGivenUp { return (running, nil) }
        return (nil, makeSupervisor(item, &s))
      }
      started.existing?.retryNow()
      started.new?.start()
    } catch {
      let first = state.withLock { s -> Bool in
        s.connecting.remove(address)
        return s.failedConnects.insert(address).inserted
      }
      if first {
        configuration.warn(
          "cannot connect favorite \(address): \(error.message); trying again when it is seen")
      }
    }
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
