import Synchronization

/// Keeps one device of a long-running `listen` open: a device that is absent or cannot be opened is
/// tried again with backoff until it comes, and its events (arrival first) then flow into `events`.
/// Once open, the driver's own reconnect logic (`OpenRequest.reconnects`) carries it across link loss
/// and bluetoothd restarts; the supervisor only steps in again if the device's stream ends by itself.
///
/// Errors that retrying cannot fix (see `isPermanent`) are reported once, as an error event, and the
/// supervisor gives up: its stream finishes and `hasGivenUp` is true.
public final class DeviceSupervisor: Sendable {
  /// The key the supervisor is known by (a Bluetooth address or a transport URI, as the state file
  /// keys devices).
  public let id: String
  /// The device as it is known before it is open (remembered name and type): the subject of error
  /// events while no driver speaks for it.
  public let info: DeviceInfo
  /// Every event of every opening of the device, in order; finishes after `stop()` (with the device's
  /// removal when it was open) or after a permanent error.
  public var events: AsyncStream<Event> { queue.stream }

  /// Bounded like the drivers' own queues: while the consumer is this far behind, forwarding waits, the
  /// device's queue fills and its reader stops reading (back-pressure end to end).
  private let queue = EventQueue()
  /// The events forwarded and not yet taken by the consumer (tests of back-pressure).
  var backlog: EventQueue { queue }
  private let request: OpenRequest
  private let opener: any DeviceOpener
  /// Run on each opening before its events are forwarded (listen's notification setup, SDK
  /// docs/capture-sdk.md §7.6).
  private let onOpen: @Sendable (any Device) async -> Void
  private let store: StateStore
  private let backoff: Backoff
  /// Told once per outage (first failed attempt after start or after the device was last open).
  private let warn: @Sendable (String) -> Void
  private let state = Mutex(LoopState())

  struct LoopState {
    var isStarted = false
    var isStopped = false
    var hasGivenUp = false
    var device: (any Device)?
    /// The pause between attempts, cancelled by `stop()` and `retryNow()`.
    var sleeper: Task<Void, Never>?
    /// `retryNow()` came while no pause was running: skip the next one.
    var isPoked = false
  }

  public init(
    id: String, info: DeviceInfo, request: OpenRequest, opener: any DeviceOpener, store: StateStore,
    backoff: Backoff = Backoff(), warn: @escaping @Sendable (String) -> Void,
    onOpen: @escaping @Sendable (any Device) async -> Void = { _ in }
  ) {
    self.onOpen = onOpen
    self.id = id
    self.info = info
    self.request = request
    self.opener = opener
    self.store = store
    self.backoff = backoff
    self.warn = warn
  }

  /// Errors a later attempt cannot fix: a selector or parameter that is wrong (18), a transport this
  /// build lacks (15), a state entry that is unusable (85, 86), and permissions (64, 99), which need
  /// the user's action (a udev rule, a group); SIGHUP, which re-reads the state file, tries again.
  /// Everything else — not found (17), no such file (63), bluetoothd or the adapter missing (32), a
  /// refused or timed-out connection (38, 42) — may be gone on the next attempt.
  public static func isPermanent(_ error: CaptureError) -> Bool {
    [
      ResultCode.invalidParameter, .notSupported, .invalidFormat, .invalidVersion, .fileAccessDenied,
      .bluetoothPermissionMissing,
    ].contains(error.code)
  }

  /// The open device, if it is open now.
  public var device: (any Device)? { state.withLock { $0.device } }
  public var isOpen: Bool { device != nil }
  public var hasGivenUp: Bool { state.withLock { $0.hasGivenUp } }

  /// Starts the open-and-forward loop (once).
  public func start() {
    let first = state.withLock { s -> Bool in
      defer { s.isStarted = true }
      return !s.isStarted
    }
    guard first else { return }
    Task { await self.run() }
  }

  /// Tries again now instead of waiting out the backoff (discovery has just seen the device).
  public func retryNow() {
    let sleeper = state.withLock { s -> Task<Void, Never>? in
      if s.sleeper == nil { s.isPoked = true }
      return s.sleeper
    }
    sleeper?.cancel()
  }

  /// Stops for good: an open device is closed (its removal is the stream's last event); a device that
  /// never arrived owes no removal, so the stream just ends. Returns once the device is closed.
  public func stop() async {
    let (device, sleeper) = state.withLock { s in
      s.isStopped = true
      return (s.device, s.sleeper)
    }
    sleeper?.cancel()
    if let device {
      // The forwarding loop passes on the removal close() sends, then finishes the stream.
      await device.close()
    } else {
      // Opening or pausing: nothing was announced. A device whose open completes after this is closed
      // by the loop without a word.
      queue.finish()
    }
  }

  private var isStopped: Bool { state.withLock { $0.isStopped } }

  private func run() async {
    var delays = backoff.delays()
    var inOutage = false
    while !isStopped {
      let device: any Device
      do {
        device = try await opener.open(request, state: store)
      } catch {
        if Self.isPermanent(error) {
          state.withLock { $0.hasGivenUp = true }
          queue.push(
            Event(
              time: .now(), device: info,
              payload: .error(
                CaptureError(
                  error.code, "\(id): \(error.message); skipped until the state file is re-read (SIGHUP)"))))
          break
        }
        if !inOutage {
          inOutage = true
          warn("\(id): \(error.message); trying again in the background")
        }
        await pause(delays.next())
        continue
      }
      let kept = state.withLock { s -> Bool in
        guard !s.isStopped else { return false }
        s.device = device
        return true
      }
      guard kept else {
        await device.close()
        break
      }
      inOutage = false
      await onOpen(device)
      let opened = ContinuousClock.now
      for await event in device.events {
        await queue.waitForRoom()
        queue.push(event)
      }
      state.withLock { $0.device = nil }
      if isStopped { break }
      // The driver gave the device up by itself: open it again, after a pause so a device that opens
      // and drops at once is not hammered; one that stayed a while starts from the short delay.
      if ContinuousClock.now - opened >= backoff.maximum { delays.reset() }
      await pause(delays.next())
    }
    queue.finish()
  }

  /// Sleeps `duration` unless stopped or poked meanwhile. Only this sleeping task is ever cancelled —
  /// never a task that iterates a stream.
  private func pause(_ duration: Duration) async {
    await InterruptiblePause.sleep(duration) { sleeper in
      state.withLock { s -> Bool in
        if s.isStopped || s.isPoked {
          s.isPoked = false
          return true
        }
        s.sleeper = sleeper
        return false
      }
    }
    state.withLock { $0.sleeper = nil }
  }
}
