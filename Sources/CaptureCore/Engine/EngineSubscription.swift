import Synchronization

/// What the engine does with a subscriber that falls behind (docs/engine.md "Fan-out").
public enum SubscriberPolicy: Sendable, Equatable {
  /// The devices wait for it. Once `EventQueue.defaultLimit` events wait for this subscriber, the
  /// device whose event is next stops being forwarded until the subscriber has taken half of them;
  /// that device's own bounded queue then fills and its reader stops reading, so the kernel and the
  /// sender hold the rest (bench/README.md). Nothing is ever dropped. For a stream on stdout or a file,
  /// where the consumer is the reason capture runs; every other subscriber sees the same pace.
  case backPressure
  /// The devices never wait for it. When `limit` events are already waiting for it, the subscriber is
  /// dropped: its stream ends after the events it holds, and `dropReason` says why. For a network
  /// client, which may stop reading at any time and must not stall the devices or anyone else.
  case dropWhenBehind(limit: Int)
}

/// One consumer of the engine's events, with its own bounded queue.
public final class EngineSubscription: Sendable {
  /// Who it is, for the drop reason and diagnostics (e.g. "stdout", "client 3").
  public let name: String
  public let policy: SubscriberPolicy
  private let queue: EventQueue
  private let dropped = Mutex<CaptureError?>(nil)
  private let onCancel: @Sendable (EngineSubscription) -> Void

  init(name: String, policy: SubscriberPolicy, onCancel: @escaping @Sendable (EngineSubscription) -> Void) {
    self.name = name
    self.policy = policy
    self.onCancel = onCancel
    switch policy {
    case .backPressure: queue = EventQueue()
    case .dropWhenBehind(let limit): queue = EventQueue(limit: max(2, limit))
    }
  }

  /// Every event published while subscribed, in order per device. Ends when the engine has stopped
  /// (after the last device's removal), when the subscription is cancelled, or after a drop.
  public var events: AsyncStream<Event> { queue.stream }

  /// Why the engine dropped this subscriber (ESKT_QUEUERESETED: its queue was given up), or nil.
  public var dropReason: CaptureError? { dropped.withLock { $0 } }

  /// Events waiting for the consumer.
  public var backlog: Int { queue.count }

  /// Unsubscribes: the stream ends after what it holds and no more events are queued for it.
  public func cancel() {
    queue.finish()
    onCancel(self)
  }

  var isFinished: Bool { queue.isFinished }

  /// Hands one event over, as the policy says. Returns false when the subscriber is gone (dropped now
  /// or before, or cancelled), so the engine can forget it.
  func offer(_ event: Event) async -> Bool {
    switch policy {
    case .backPressure:
      // Fast path: room, no suspension, one lock; only a full queue waits (until half of it is
      // taken), then tries again.
      while true {
        switch queue.pushIfRoom(event) {
        case .queued: return true
        case .finished: return false
        case .full: await queue.waitForRoom()
        }
      }
    case .dropWhenBehind:
      return offerNow(event)
    }
  }

  /// Hands one event over without waiting, whatever the policy (a few events the engine itself makes,
  /// such as the state file's problems; their number is bounded by the file). A dropping subscriber
  /// that is full is dropped.
  @discardableResult
  func offerNow(_ event: Event) -> Bool {
    if queue.isFinished { return false }
    if case .dropWhenBehind(let limit) = policy, queue.count >= limit {
      drop(
        CaptureError(
          .queueReseted,
          "\(name) fell \(limit) events behind; dropped so the devices and the other subscribers go on"))
      return false
    }
    queue.push(event)
    return true
  }

  func drop(_ reason: CaptureError) {
    dropped.withLock { if $0 == nil { $0 = reason } }
    queue.finish()
  }

  /// The engine has stopped: the stream ends after what it holds.
  func finish() { queue.finish() }
}

/// A back-pressure consumer that takes each device's events on that device's own lane: its handler
/// runs on the task that forwards the device's events, in order per device and concurrently across
/// devices (docs/engine.md "Fan-out"). The device's own bounded queue is its queue, so there is no
/// second queue and no second hop per event, and a handler that waits (a `--confirm` verdict) holds
/// back only the device whose event it is handling.
public final class LaneSubscription: Sendable {
  /// Who it is, for diagnostics.
  public let name: String
  private let handler: @Sendable (Event) async -> Void
  private let cancelled = Atomic<Bool>(false)
  private let onCancel: @Sendable (LaneSubscription) -> Void

  init(
    name: String, handler: @escaping @Sendable (Event) async -> Void,
    onCancel: @escaping @Sendable (LaneSubscription) -> Void
  ) {
    self.name = name
    self.handler = handler
    self.onCancel = onCancel
  }

  /// Unsubscribes: no handler call starts after this returns (one already running finishes).
  public func cancel() {
    cancelled.store(true, ordering: .releasing)
    onCancel(self)
  }

  var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

  /// Hands one event to the handler on the caller's lane; returns when the handler has.
  func deliver(_ event: Event) async {
    if isCancelled { return }
    await handler(event)
  }
}
