import CaptureCore
import Drivers
import Synchronization

/// `listen` without DEVICE: a long-running service over every remembered device and the device
/// manager's favourites (capture-sdk.md §7.16). Each device has its own `DeviceSupervisor`, so one that
/// is absent or fails does not stop the others; SIGHUP re-reads the state file and starts or stops
/// supervisors to match it.
///
/// Favourites: `*` connects any Socket Mobile device BLE discovery finds (the SDK's "auto-discover and
/// connect"), an identifier list supervises those devices like remembered ones. A favourite BLE device
/// bluetoothd does not know yet is connected the way `capture connect` does (paired when its profile
/// needs a bond, trusted) and remembered, once discovery sees it.
final class ListenService: Sendable {
  let context: Context
  let options: ListenCommand.Options
  private let state = Mutex(ServiceState())
  private let finished = Latch()

  /// One BLE discovery runs this long, then starts again: bluetoothd restarts and missed advertisements
  /// (bluez-testing.md: "restart discovery every few seconds") cost at most one window.
  static let discoveryWindow: Duration = .seconds(5)
  /// How often the scout checks whether any BLE device still needs discovering.
  static let idleCheck: Duration = .seconds(1)

  struct ServiceState {
    var sink: EventSink?
    var supervisors: [String: DeviceSupervisor] = [:]
    /// Keys of supervised devices reached through BlueZ (a BLE address, not a Classic one).
    var bluetoothLE: Set<String> = []
    /// Ids the state file remembers (as of the last read, plus what this service remembered since).
    var remembered: Set<String> = []
    var favorites: Favorites = .off
    var drains: [Task<Void, Never>] = []
    var stopping: [Task<Void, Never>] = []
    var scout: Task<Void, Never>?
    var isStopped = false
    /// BLE addresses being connected automatically right now.
    var connecting: Set<String> = []
    /// Addresses whose automatic connect failed: warned once, until one succeeds.
    var failedConnects: Set<String> = []
  }

  /// A device the state file asks for.
  struct Wanted {
    var key: String
    var selector: DeviceSelector
    var info: DeviceInfo
    var isBluetoothLE: Bool
  }

  init(context: Context, options: ListenCommand.Options) {
    self.context = context
    self.options = options
  }

  // MARK: starting and stopping

  /// Reads the state file and starts a supervisor per device and the favourites' discovery. A state
  /// file that cannot be read, or one with nothing to listen to while favourites are off, is an error
  /// here (nothing has started yet); one whose every entry is unusable reports them and ends.
  func start(_ sink: EventSink) throws(CaptureError) {
    state.withLock { $0.sink = sink }
    let file = try context.state.load()
    let favorites = readFavorites(file)
    let (wanted, problems) = Self.wanted(file, favorites: favorites)
    if wanted.isEmpty && favorites == .off {
      guard !problems.isEmpty else {
        throw .invalidParameter(
          "nothing to listen to: no device is remembered; give a DEVICE or a SocketCam source (--image, --dir, --camera)"
        )
      }
      // Every entry is unusable: report each and end at once (exit status of the first) rather than
      // wait for a SIGHUP with nothing to listen to.
      for event in problems { sink.handle(event) }
      state.withLock { $0.isStopped = true }
      finished.open()
      return
    }
    apply(file, favorites: favorites, wanted: wanted, problems: problems)
    let scout = Task { await self.scoutLoop() }
    let kept = state.withLock { s -> Bool in
      guard !s.isStopped else { return false }
      s.scout = scout
      return true
    }
    if !kept { scout.cancel() }
  }

  /// Returns once `stop()` has run and every device's events have been handled.
  func wait() async {
    await finished.wait()
    let (stopping, drains) = state.withLock { ($0.stopping, $0.drains) }
    for task in stopping { await task.value }
    for task in drains { await task.value }
  }

  /// --count reached, --timeout ran out, SIGINT/SIGTERM: every open device is closed (its removal
  /// printed), discovery ends.
  func stop() async {
    let taken = state.withLock { s -> ([DeviceSupervisor], Task<Void, Never>?)? in
      guard !s.isStopped else { return nil }
      s.isStopped = true
      defer { s.supervisors = [:] }
      return (Array(s.supervisors.values), s.scout)
    }
    guard let (supervisors, scout) = taken else { return }
    scout?.cancel()
    await withTaskGroup(of: Void.self) { group in
      for supervisor in supervisors { group.addTask { await supervisor.stop() } }
    }
    finished.open()
  }

  /// SIGHUP: re-read the state file. A file that cannot be read now leaves the running set as it is.
  func reload() {
    let file: StateFile
    do { file = try context.state.load() } catch {
      context.output.warn("SIGHUP: \(error.message); still listening to the devices read before")
      return
    }
    let favorites = readFavorites(file)
    let (wanted, problems) = Self.wanted(file, favorites: favorites)
    apply(file, favorites: favorites, wanted: wanted, problems: problems)
  }

  /// The open device with this id (listen --confirm tells it the verdict).
  func device(id: String) -> (any Device)? {
    state.withLock { s in s.supervisors.values.lazy.compactMap(\.device).first { $0.info.id == id } }
  }

  // MARK: the wanted set

  /// A favourite setting that does not parse (a hand-edited file) is reported and read as off: the
  /// remembered devices are still listened to.
  private func readFavorites(_ file: StateFile) -> Favorites {
    do { return try Favorites(parsing: file.favorite) } catch {
      context.output.warn("ignoring the favorite setting in \(context.state.path): \(error.message)")
      return .off
    }
  }

  /// The remembered devices, then the favourite identifiers not remembered, each once; entries whose
  /// id names no device are problems (reported, skipped).
  static func wanted(_ file: StateFile, favorites: Favorites) -> (wanted: [Wanted], problems: [Event]) {
    var wanted: [Wanted] = []
    var problems: [Event] = []
    var seen = Set<String>()
    func add(id: String, info: DeviceInfo, transport: String?) {
      let selector: DeviceSelector
      do { selector = try DeviceSelector.parse(id) } catch {
        problems.append(problem(info, "remembered device '\(id)': \(error.message)"))
        return
      }
      switch selector {
      case .name, .socketCam:
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
      if case .bluetooth = selector { isLE = transport != ClassicSPPScanner.transportKey }
      wanted.append(Wanted(key: key, selector: selector, info: info, isBluetoothLE: isLE))
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

  /// Starts supervisors for what is wanted and not running (or given up: SIGHUP tries those again),
  /// stops the ones no longer wanted (each stopped open device prints its removal).
  private func apply(_ file: StateFile, favorites: Favorites, wanted: [Wanted], problems: [Event]) {
    let keys = Set(wanted.map(\.key))
    let started = state.withLock { s -> [DeviceSupervisor]? in
      guard !s.isStopped, let sink = s.sink else { return nil }
      s.favorites = favorites
      s.remembered = Set(file.devices.compactMap { (try? DeviceSelector.parse($0.id))?.description })
      var start: [DeviceSupervisor] = []
      for item in wanted {
        if let running = s.supervisors[item.key], !running.hasGivenUp { continue }
        start.append(makeSupervisor(item, sink: sink, &s))
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
    // Problems first: they are known now, before any supervisor can report its own.
    let sink = state.withLock { $0.sink }
    for event in problems { sink?.handle(event) }
    for supervisor in started { supervisor.start() }
  }

  /// A supervisor for `item`, registered with its drain; the caller starts it.
  private func makeSupervisor(_ item: Wanted, sink: EventSink, _ s: inout ServiceState) -> DeviceSupervisor {
    let output = context.output
    var request = OpenRequest(
      selector: item.selector, adapter: context.globals.adapter, warn: { output.warn($0) })
    request.reconnects = true
    request.wantsEvents = true
    request.timeout = context.globals.timeout
    request.keymap = options.keymap
    let supervisor = DeviceSupervisor(
      id: item.key, info: item.info, request: request, opener: context.opener, store: context.state,
      warn: { output.warn($0) },
      onOpen: { [asked = options.events] device in
        await ListenCommand.setUpNotifications(device, asked: asked, output)
      })
    s.supervisors[item.key] = supervisor
    if item.isBluetoothLE { s.bluetoothLE.insert(item.key) } else { s.bluetoothLE.remove(item.key) }
    s.drains.append(Task { await sink.drain(supervisor.events) })
    return supervisor
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
    var delays = Backoff().delays()
    var inOutage = false
    while !Task.isCancelled {
      guard needsDiscovery else {
        try? await Task.sleep(for: Self.idleCheck)
        continue
      }
      do {
        // Every device, not only those advertising a Socket Mobile service: an S721 advertises none,
        // and a favourite list may name any device. `found` picks.
        _ = try await BLEManager.discover(
          adapter: context.globals.adapter, transport: "le", all: true, namePattern: nil,
          timeout: Self.discoveryWindow
        ) { [self] device in found(device) }
        inOutage = false
        delays.reset()
      } catch {
        if !inOutage {
          inOutage = true
          context.output.warn(
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
  private func found(_ device: DiscoveredDevice) {
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
      let connected = try await BLEManager.connect(
        address: address, adapter: context.globals.adapter, pair: false, timeout: context.globals.timeout)
      try ConnectCommand.remember(connected, alias: nil, keepingAlias: true, in: context.state)
      let item = Wanted(
        key: address, selector: .bluetooth(address),
        info: DeviceInfo(id: address, name: connected.name, type: connected.family.deviceTypes[0]),
        isBluetoothLE: true)
      let started = state.withLock { s -> (existing: DeviceSupervisor?, new: DeviceSupervisor?) in
        s.connecting.remove(address)
        s.failedConnects.remove(address)
        s.remembered.insert(address)
        guard !s.isStopped, let sink = s.sink else { return (nil, nil) }
        if let running = s.supervisors[address], !running.hasGivenUp { return (running, nil) }
        return (nil, makeSupervisor(item, sink: sink, &s))
      }
      started.existing?.retryNow()
      started.new?.start()
    } catch {
      let first = state.withLock { s -> Bool in
        s.connecting.remove(address)
        return s.failedConnects.insert(address).inserted
      }
      if first {
        context.output.warn(
          "cannot connect favorite \(address): \(error.message); trying again when it is seen")
      }
    }
  }
}
