import Synchronization

/// The engine's first job: every event of every device to every subscriber (docs/engine.md §3,
/// "Fan-out"). It holds the subscribers — queued ones (`EngineSubscription`, each with its own bounded
/// queue and policy) and lane ones (`LaneSubscription`, called on the devices' own forwarding tasks) —
/// and forwards one device's events on that device's lane (`forward`).
final class EngineFanOut: Sendable {
  /// Who a forwarding task hands each event to: a snapshot, taken again when `generation` moves.
  struct Subscribers {
    var queued: [EngineSubscription] = []
    var lanes: [LaneSubscription] = []
  }

  private let state = Mutex((subscribers: Subscribers(), isFinished: false))
  /// Bumped (under `state`'s lock) whenever the subscribers change, so each forwarding task reads
  /// the list again only then, not once per event.
  private let generation = Atomic<Int>(0)
  private let tasks: EngineTasks

  init(tasks: EngineTasks) { self.tasks = tasks }

  /// A queued subscriber; it receives every event published from now on. After `finish()` its stream
  /// ends at once.
  func subscribe(_ name: String, policy: SubscriberPolicy) -> EngineSubscription {
    let subscription = EngineSubscription(name: name, policy: policy) { [weak self] gone in
      self?.forget(gone)
    }
    let ended = state.withLock { s -> Bool in
      if s.isFinished { return true }
      s.subscribers.queued.append(subscription)
      changed()
      return false
    }
    if ended { subscription.finish() }
    return subscription
  }

  /// A lane subscriber (see `CaptureEngine.subscribe(_:onLanes:)`).
  func subscribe(_ name: String, onLanes handler: @escaping @Sendable (Event) async -> Void)
    -> LaneSubscription
  {
    let subscription = LaneSubscription(name: name, handler: handler) { [weak self] gone in
      self?.forget(gone)
    }
    state.withLock { s in
      guard !s.isFinished else { return }
      s.subscribers.lanes.append(subscription)
      changed()
    }
    return subscription
  }

  var queued: [EngineSubscription] { state.withLock { $0.subscribers.queued } }

  /// Called under `state`'s lock after the subscribers changed.
  private func changed() { generation.add(1, ordering: .releasing) }

  private func forget(_ subscription: EngineSubscription) {
    state.withLock { s in
      s.subscribers.queued.removeAll { $0 === subscription }
      changed()
    }
  }

  private func forget(_ subscription: LaneSubscription) {
    state.withLock { s in
      s.subscribers.lanes.removeAll { $0 === subscription }
      changed()
    }
  }

  private func forgetFinished() {
    state.withLock { s in
      s.subscribers.queued.removeAll { $0.isFinished }
      changed()
    }
  }

  /// Forwards one device's events until its stream ends: each to every queued subscriber by its
  /// policy, then to every lane subscriber on this task. The subscriber list is read again only when
  /// it has changed (one atomic load per event otherwise). `after`: the engine's own events that
  /// must reach the lanes first (the state file's problems, known before this device started).
  func forward(_ events: AsyncStream<Event>, after: Latch? = nil) async {
    await after?.wait()
    var subscribers = Subscribers()
    var seen = -1
    for await event in events {
      if generation.load(ordering: .acquiring) != seen {
        (subscribers, seen) = state.withLock { ($0.subscribers, generation.load(ordering: .relaxed)) }
      }
      var gone = false
      for subscriber in subscribers.queued {
        if await !subscriber.offer(event) { gone = true }
      }
      for lane in subscribers.lanes { await lane.deliver(event) }
      if gone { forgetFinished() }
    }
  }

  /// Gives events to every subscriber without waiting for any: events the engine makes itself. A
  /// queued subscriber gets them now; the lane subscribers get them, in order, on a task of the
  /// engine's (`EngineTasks`), which `CaptureEngine.wait()` waits for.
  func publishNow(_ events: [Event]) {
    _ = deliverToLanes(events)
    offerNowToQueued(events)
  }

  /// The lane half of `publishNow`: a job handing `events` to the lane subscribers in order; the
  /// latch opens once it has (nil when there is nothing to deliver).
  func deliverToLanes(_ events: [Event]) -> Latch? {
    let lanes = state.withLock { $0.subscribers.lanes }
    guard !events.isEmpty, !lanes.isEmpty else { return nil }
    let delivered = Latch()
    tasks.spawn {
      for event in events {
        for lane in lanes { await lane.deliver(event) }
      }
      delivered.open()
    }
    return delivered
  }

  /// The queued half of `publishNow`: offered without waiting, whatever the policy.
  func offerNowToQueued(_ events: [Event]) {
    guard !events.isEmpty else { return }
    let queued = self.queued
    var gone = false
    for event in events {
      for subscriber in queued where !subscriber.offerNow(event) { gone = true }
    }
    if gone { forgetFinished() }
  }

  /// Every forwarding task has ended and nothing more will be published: the subscribers' streams
  /// end, and a subscriber that comes later ends at once.
  func finish() {
    let queued = state.withLock { s -> [EngineSubscription] in
      s.isFinished = true
      defer {
        s.subscribers = Subscribers()
        changed()
      }
      return s.subscribers.queued
    }
    for subscriber in queued { subscriber.finish() }
  }
}
