import BlueZ
import CaptureCore
import Synchronization

/// The link to one BLE device through bluetoothd: connecting, knowing whether it is up, and getting it
/// back after a loss. BlueZ holds the link itself, so this object owns only its bus connection's view.
///
/// Presence: while a remembered device is away, the link watches for it (a discovery of its own,
/// filtered to the device's address) and connects as soon as bluetoothd hears it advertise; the
/// backoff paces attempts that failed, it does not decide when an absent device is tried again.
/// The discovery runs only while the device is missing, so nothing is scanned for a device that is
/// connected.
final class BLELink: Sendable {
  let client: BlueZClient
  let address: String
  private let request: OpenRequest
  private let state: Mutex<State>
  private let hooks = Mutex<Hooks?>(nil)

  struct Hooks: Sendable {
    /// The link went down (after `isConnected` turned false): the device announces the removal.
    var lost: @Sendable (_ reason: String) -> Void
    /// The link is up again with `objects`: the device re-arms what it needs and announces the
    /// arrival; throwing leaves the link down.
    var back: @Sendable (_ objects: BlueZObjects) async throws(CaptureError) -> Void
  }

  private struct State {
    var devicePath: String
    var objects: BlueZObjects
    var isConnected = true
    var isClosed = false
    /// One reconnect loop at a time (link loss and bluetoothd's return can both start one).
    var isReconnecting = false
    /// The running resume (a reconnect loop and a ServicesResolved signal can both ask for one; the
    /// second waits for the first).
    var resuming: Task<Void, Never>?
    /// Counts link losses: a reconnect loop that sees it change starts its backoff from the start.
    var losses = 0
    /// The reconnect loop should look again now (the link was lost again, or came back).
    var isPoked = false
    /// This client's discovery session runs (the device is being watched for).
    var isWatching = false
    /// bluetoothd heard the device since the reconnect loop last looked.
    var isSighted = false
    /// The reconnect loop's pause, cut short by a poke, and by a sighting when
    /// `isWakingOnSighting`.
    var sleeper: Task<Void, Never>?
    var isWakingOnSighting = false
  }

  /// How long one reconnect attempt's Device1.Connect may take.
  static let attemptTimeout: Duration = .seconds(10)

  init(client: BlueZClient, address: String, request: OpenRequest, devicePath: String, objects: BlueZObjects)
  {
    self.client = client
    self.address = address
    self.request = request
    self.state = Mutex(State(devicePath: devicePath, objects: objects))
  }

  func attach(_ hooks: Hooks) { self.hooks.withLock { $0 = hooks } }

  var devicePath: String { state.withLock { $0.devicePath } }
  var objects: BlueZObjects { state.withLock { $0.objects } }
  var isConnected: Bool { state.withLock { $0.isConnected } }
  var isUsable: Bool { state.withLock { $0.isConnected && !$0.isClosed } }
  var isWatching: Bool { state.withLock { $0.isWatching } }

  // MARK: connecting

  /// Device1.Connect, then wait for ServicesResolved (docs/bluez-testing.md: it can come before the
  /// GATT objects are announced, so the caller re-reads GetManagedObjects afterwards). It subscribes
  /// its own event stream: a stream shared with the device's event pump would end with this wait.
  static func connectAndResolve(_ client: BlueZClient, _ path: String, timeout: Duration)
    async throws(CaptureError)
  {
    let events = try await client.events()
    let resolved = Task { () -> Bool in
      for await event in events {
        if case .servicesResolved(path, true) = event { return true }
      }
      return false
    }
    defer { resolved.cancel() }
    // False: a connection was already under way (bluetoothd's own for a bonded device, or another
    // program's); it ends in ServicesResolved as ours would, so it is waited for the same way.
    let ours = try await client.connect(path, timeout: timeout)
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
        .requestTimedOut,
        ours
          ? "connected, but the device's GATT services were not resolved in time"
          : "another connection of the device was under way (bluetoothd's or another program's) and did not complete in time"
      )
    }
  }

  // MARK: events

  /// The link's share of the device's events, in bus order.
  func handle(_ event: BlueZEvent) {
    let path = devicePath
    switch event {
    case .connected(path, false):
      lose("the link to \(address) was lost")
    case .servicesResolved(path, true) where request.reconnects:
      // Not awaited: the bring-up waits for the D600's config answer, which only the event pump
      // (the caller) can deliver.
      Task { await self.resume() }
    case .interfacesRemoved(path, let interfaces) where interfaces.contains(BlueZName.device):
      lose("\(address) was removed from bluetoothd")
    case .advertised(path, _):
      sighted()
    case .interfacesAdded(_, _, let device?) where device.address == address.uppercased():
      // bluetoothd exported the device again (it had forgotten it, or came back with a new tree).
      sighted()
    case .bluetoothdOwnerChanged(running: false):
      lose("bluetoothd left the bus")
    case .bluetoothdOwnerChanged(running: true) where request.reconnects:
      // The new bluetoothd knows no discovery session of ours; a loop pausing while it was away tries
      // at once.
      state.withLock { $0.isWatching = false }
      poke()
      Task { await self.reconnectLoop() }
    default:
      break
    }
  }

  /// The event stream ended: the bus connection is gone.
  func busLost() { lose("the system bus connection was lost") }

  private func lose(_ reason: String) {
    let wasConnected = state.withLock { s -> Bool in
      defer { s.isConnected = false }
      guard s.isConnected && !s.isClosed else { return false }
      s.losses += 1
      return true
    }
    guard wasConnected else { return }
    hooks.withLock { $0 }?.lost(reason)
    if request.reconnects {
      // A loop still pausing from the last outage tries at once; otherwise a new one starts.
      poke()
      Task { await self.reconnectLoop() }
    }
  }

  /// Ends the reconnect loop's pause now.
  private func poke() {
    let sleeper = state.withLock { s -> Task<Void, Never>? in
      s.isPoked = true
      return s.sleeper
    }
    sleeper?.cancel()
  }

  /// Marks the link closed; stops watching. Returns false when it was closed already.
  func close() async -> Bool {
    let (first, sleeper) = state.withLock { s -> (Bool, Task<Void, Never>?) in
      defer { s.isClosed = true }
      return (!s.isClosed, s.sleeper)
    }
    guard first else { return false }
    sleeper?.cancel()
    await stopWatching()
    return true
  }

  // MARK: reconnecting

  /// Tries to get the link back until it is back or the link is closed. The first attempt is at
  /// once. After an attempt that found the device absent the link watches for it and tries again as
  /// soon as bluetoothd hears it (or when the backoff step, 0.25 s doubling to 5 s, runs out: a
  /// device that comes back without advertising, or a bluetoothd that reports nothing, is still
  /// found). An attempt made on a sighting that fails again waits out its step: a device that
  /// advertises but cannot be connected is not hammered at its advertising rate.
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
    var onSighting = false
    var outage = -1
    while !state.withLock({ $0.isClosed || $0.isConnected }) {
      let losses = state.withLock { s -> Int in
        s.isSighted = false
        s.isPoked = false
        return s.losses
      }
      if losses != outage {
        outage = losses
        delays.reset()
        warned = false
        onSighting = false
      }
      var absent = true
      do throws(CaptureError) {
        switch try await attempt() {
        case .resumed: return
        case .connectedUnresolved: absent = false
        case .absent: break
        }
      } catch {
        // A link closed while its attempt was in flight (its bus connection closed under it) has no
        // outage to report: the attempt failed because the device is going away on purpose.
        if state.withLock({ $0.isClosed }) { return }
        if !warned {
          warned = true
          request.warn("\(address): reconnect failed: \(error.message); trying again in the background")
        }
      }
      if state.withLock({ $0.isClosed }) { return }
      // Connected but not resolved yet: ServicesResolved resumes it; nothing to watch for.
      if absent { await startWatching() }
      onSighting = await pause(delays.next(), wakeOnSighting: !onSighting)
    }
  }

  private enum Attempt { case resumed, connectedUnresolved, absent }

  /// One attempt: Connect, and resume once the services are resolved.
  private func attempt() async throws(CaptureError) -> Attempt {
    let objects = try await client.objects()
    guard let device = objects.device(address: address, on: client.adapterPath) else { return .absent }
    state.withLock { $0.devicePath = device.path }
    if !device.isConnected { try await client.connect(device.path, timeout: Self.attemptTimeout) }
    // Connected: a connected LE peripheral does not advertise, the watch has nothing left to see.
    await stopWatching()
    guard
      try await client.objects().device(address: address, on: client.adapterPath)?.servicesResolved == true
    else { return .connectedUnresolved }
    await resume()
    // A bring-up that failed left the link down: the loop goes on.
    return state.withLock { $0.isConnected } ? .resumed : .connectedUnresolved
  }

  /// Sleeps `duration`, or less when `wakeOnSighting` and the device is heard meanwhile (also just
  /// before the pause began). Returns whether a sighting ended it.
  private func pause(_ duration: Duration, wakeOnSighting: Bool) async -> Bool {
    await InterruptiblePause.sleep(duration) { sleeper in
      state.withLock { s -> Bool in
        if s.isClosed || s.isPoked || s.isConnected || (wakeOnSighting && s.isSighted) { return true }
        s.sleeper = sleeper
        s.isWakingOnSighting = wakeOnSighting
        return false
      }
    }
    return state.withLock { s -> Bool in
      s.sleeper = nil
      return wakeOnSighting && s.isSighted
    }
  }

  private func sighted() {
    let sleeper = state.withLock { s -> Task<Void, Never>? in
      guard !s.isConnected, !s.isClosed else { return nil }
      s.isSighted = true
      return s.isWakingOnSighting ? s.sleeper : nil
    }
    sleeper?.cancel()
  }

  /// A discovery of this client's own, filtered to the device: bluetoothd reports only matching
  /// devices to it (doc/org.bluez.Adapter.rst, SetDiscoveryFilter "Pattern": a prefix of the address
  /// or name; the full address names one device). DuplicateData is left at bluetoothd's default
  /// (true): ManufacturerData and ServiceData are signalled on every advertisement heard, so a device
  /// whose RSSI has not changed is still seen. Failing to start is not fatal: the backoff still paces
  /// attempts.
  private func startWatching() async {
    let start = state.withLock { s -> Bool in
      guard !s.isWatching, !s.isClosed, !s.isConnected else { return false }
      s.isWatching = true
      return true
    }
    guard start else { return }
    do throws(CaptureError) {
      try await client.setDiscoveryFilter(DiscoveryFilter(transport: "le", pattern: address.uppercased()))
      try await client.startDiscovery()
    } catch {
      state.withLock { $0.isWatching = false }
    }
  }

  private func stopWatching() async {
    let stop = state.withLock { s -> Bool in
      defer { s.isWatching = false }
      return s.isWatching
    }
    guard stop else { return }
    try? await client.stopDiscovery()
  }

  /// The link is back: re-read the objects and let the device re-arm and announce. A second caller
  /// while one resume runs waits for that one.
  func resume() async {
    let task = state.withLock { s -> Task<Void, Never>? in
      if let running = s.resuming { return running }
      guard !s.isConnected && !s.isClosed else { return nil }
      let task = Task { await self.resumeOnce() }
      s.resuming = task
      return task
    }
    await task?.value
  }

  private func resumeOnce() async {
    defer {
      state.withLock { $0.resuming = nil }
      // A loop pausing after an attempt that saw the link up but not yet resolved can stop now.
      poke()
    }
    await stopWatching()
    do throws(CaptureError) {
      let objects = try await client.objects()
      state.withLock {
        $0.objects = objects
        $0.isConnected = true
        if let device = objects.device(address: address, on: client.adapterPath) {
          $0.devicePath = device.path
        }
      }
      try await hooks.withLock { $0 }?.back(objects)
    } catch {
      state.withLock { $0.isConnected = false }
      request.warn("\(address): could not resume after reconnecting: \(error.message)")
    }
  }
}
