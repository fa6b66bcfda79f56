/// The engine's second job: the state file's remembered devices and favourites, reconciled with the
/// supervisors that run (service mode, docs/engine.md §2). `startService` reads the file and starts a
/// `DeviceSupervisor` per wanted device; `reload` (listen's SIGHUP, a service's request) reads it again
/// and starts what is new, stops what was forgotten and retries what had given up.
extension CaptureEngine {
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
        return s.forwarding == 0 && !s.isFinished
      }
      if finish { finishAll() }
      return
    }
    state.withLock { $0.isServing = true }
    apply(file, favorites: favorites, wanted: wanted, problems: problems)
    // Until stop(), which cancels it; after stop() it does not start.
    tasks.spawnUntilStop { await self.scoutLoop() }
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
  func readFavorites(_ file: StateFile) -> Favorites {
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
  func apply(_ file: StateFile, favorites: Favorites, wanted: [WantedDevice], problems: [Event]) {
    let keys = Set(wanted.map(\.key))
    let started = state.withLock { s -> [DeviceSupervisor]? in
      guard !s.isStopped else { return nil }
      s.favorites = favorites
      s.remembered = Set(file.devices.compactMap { (try? DeviceSelector.parse($0.id))?.description })
      // Problems first: they are known now, before any supervisor can report its own (the lanes get
      // them before the new supervisors' events; the queued subscribers below, before any starts).
      let problemsDelivered = fanOut.deliverToLanes(problems)
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
        tasks.spawn {
          await withTaskGroup(of: Void.self) { group in
            for supervisor in stop { group.addTask { await supervisor.stop() } }
          }
        }
      }
      return start
    }
    guard let started else { return }
    fanOut.offerNowToQueued(problems)
    for supervisor in started { supervisor.start() }
  }

  /// A supervisor for `item`, registered with its forwarding task; the caller starts it.
  func makeSupervisor(_ item: WantedDevice, _ s: inout State, after: Latch? = nil)
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
    forward(supervisor.events, after: after, in: &s)
    return supervisor
  }
}
