import Dispatch
import Synchronization

/// A device's events between the thread or task that produces them and the one consumer that prints
/// them, with back-pressure instead of an unbounded heap: producers ask `hasRoom` (or wait in
/// `waitForRoom`) before they read more from their descriptor, so once the consumer is `limit` events
/// behind the reader stops reading and the kernel's buffers (tty, socket) and the sender's flow
/// control hold the rest. `push` itself never blocks and never drops: an event already read is always
/// queued — AsyncStream's bounded buffering policies would drop events, so they are not used for data.
///
/// The backlog is therefore bounded by `limit` plus what one read of the descriptor can produce.
/// Producers resume once the consumer has brought it down to half the limit, so a busy reader is woken
/// once per `limit / 2` events, not once per event.
///
/// Cancelling the consuming task ends the stream (as AsyncStream does) and releases waiting producers.
///
/// Not generic on purpose: a generic class used from other modules runs unspecialized, and the
/// metadata look-ups per event cost more than the queue itself (perf, bench/listen-load.sh).
public final class EventQueue: Sendable {
  public typealias Element = Event

  /// Producers stop reading while this many events wait.
  public let limit: Int
  /// Waiting producers are released once the backlog is down to this many.
  private let resumeAt: Int
  private let state = Mutex(State())

  /// The default bound per device: a few hundred kilobytes of events at most, and deep enough that a
  /// reader woken at half of it has a thousand events' worth of time to refill before the printer runs
  /// dry.
  public static var defaultLimit: Int { 2048 }

  struct State {
    /// A two-stack queue: `incoming` is appended to; `outgoing` is popped from, refilled by reversing
    /// `incoming` when empty (amortized O(1), no per-event node allocation).
    var incoming: [Element] = []
    var outgoing: [Element] = []
    var isFinished = false
    var consumers: [CheckedContinuation<Element?, Never>] = []
    var asyncProducers: [CheckedContinuation<Void, Never>] = []
    var threadProducers: [DispatchSemaphore] = []
    var highWater = 0

    var count: Int { incoming.count + outgoing.count }

    mutating func pop() -> Element? {
      if outgoing.isEmpty {
        guard !incoming.isEmpty else { return nil }
        swap(&incoming, &outgoing)
        outgoing.reverse()
      }
      return outgoing.popLast()
    }

    /// The producers to release after a pop or a finish, taken out of the state.
    mutating func releasable(_ resumeAt: Int) -> Waiters? {
      guard isFinished || count <= resumeAt, !asyncProducers.isEmpty || !threadProducers.isEmpty else {
        return nil
      }
      defer {
        asyncProducers.removeAll()
        threadProducers.removeAll()
      }
      return Waiters(tasks: asyncProducers, threads: threadProducers)
    }
  }

  struct Waiters {
    var tasks: [CheckedContinuation<Void, Never>]
    var threads: [DispatchSemaphore]
    func release() {
      for task in tasks { task.resume() }
      for thread in threads { thread.signal() }
    }
  }

  public init(limit: Int = EventQueue.defaultLimit) {
    precondition(limit >= 2, "an event queue holds at least two events")
    self.limit = limit
    resumeAt = limit / 2
  }

  /// The consumer's view. One consumer at a time (as with AsyncStream); its cancellation ends the queue.
  public var stream: AsyncStream<Element> {
    // AsyncStream(unfolding:) may skip `next` for a consumer already cancelled: its onCancel ends
    // the queue then.
    AsyncStream(unfolding: { [self] in await next() }, onCancel: { [self] in finish() })
  }

  /// Events queued and not yet taken by the consumer.
  public var count: Int { state.withLock { $0.count } }
  /// The largest backlog seen (tests of the bound).
  public var highWater: Int { state.withLock { $0.highWater } }
  /// False while the backlog is at the limit: the producer should not read more now.
  public var hasRoom: Bool { state.withLock { $0.isFinished || $0.count < limit } }
  public var isFinished: Bool { state.withLock { $0.isFinished } }

  /// Queues one event (never blocks, never drops); ignored after `finish()`, as AsyncStream ignores
  /// yields after finish.
  public func push(_ element: Element) {
    let consumer = state.withLock { s -> CheckedContinuation<Element?, Never>? in
      guard !s.isFinished else { return nil }
      if !s.consumers.isEmpty { return s.consumers.removeFirst() }
      s.incoming.append(element)
      s.highWater = max(s.highWater, s.count)
      return nil
    }
    consumer?.resume(returning: element)
  }

  /// What `pushIfRoom` did.
  public enum PushOutcome: Sendable, Equatable {
    /// Queued (or handed straight to the waiting consumer).
    case queued
    /// The backlog is at the limit: nothing queued; wait for room (`waitForRoom`) and push again.
    case full
    /// The queue has finished: nothing will be taken any more.
    case finished
  }

  /// `hasRoom`, then `push`, under one lock: the forwarding path's per-event cost is one lock instead
  /// of three (room, finished, push), and no other producer can take the room in between.
  public func pushIfRoom(_ element: Element) -> PushOutcome {
    let (outcome, consumer) = state.withLock { s -> (PushOutcome, CheckedContinuation<Element?, Never>?) in
      if s.isFinished { return (.finished, nil) }
      if !s.consumers.isEmpty { return (.queued, s.consumers.removeFirst()) }
      guard s.count < limit else { return (.full, nil) }
      s.incoming.append(element)
      s.highWater = max(s.highWater, s.count)
      return (.queued, nil)
    }
    consumer?.resume(returning: element)
    return outcome
  }

  /// Ends the stream once the consumer has taken what is queued; releases waiting producers.
  public func finish() {
    let (consumers, waiters) = state.withLock { s in
      s.isFinished = true
      // Consumers only wait on an empty queue, so each of them now sees the end.
      defer { s.consumers.removeAll() }
      return (s.consumers, s.releasable(resumeAt))
    }
    for consumer in consumers { consumer.resume(returning: nil) }
    waiters?.release()
  }

  /// Wakes waiting producers now whatever the backlog (a DataMan reader must read a command's reply
  /// even while its read results wait).
  public func wakeProducers() {
    let waiters = state.withLock { s in
      defer {
        s.asyncProducers.removeAll()
        s.threadProducers.removeAll()
      }
      return Waiters(tasks: s.asyncProducers, threads: s.threadProducers)
    }
    waiters.release()
  }

  /// For reader threads: returns at once when there is room, else when the consumer has drained half
  /// the backlog, the queue finished, or `timeoutMilliseconds` passed (so the thread can look at its
  /// stop flag).
  public func waitForRoom(timeoutMilliseconds: Int) {
    let semaphore = state.withLock { s -> DispatchSemaphore? in
      guard !s.isFinished, s.count >= limit else { return nil }
      let semaphore = DispatchSemaphore(value: 0)
      s.threadProducers.append(semaphore)
      return semaphore
    }
    guard let semaphore else { return }
    if semaphore.wait(timeout: .now() + .milliseconds(timeoutMilliseconds)) == .timedOut {
      state.withLock { s in s.threadProducers.removeAll { $0 === semaphore } }
    }
  }

  /// For async producers (a supervisor forwarding a device's events): returns once there is room.
  public func waitForRoom() async {
    await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
      let now = state.withLock { s -> Bool in
        guard !s.isFinished, s.count >= limit else { return true }
        s.asyncProducers.append(waiter)
        return false
      }
      if now { waiter.resume() }
    }
  }

  /// The next event, or nil once finished and drained.
  func next() async -> Element? {
    // Fast path: an event is waiting, no suspension.
    let (ready, done, waiters) = state.withLock { s -> (Element?, Bool, Waiters?) in
      let element = s.pop()
      return (element, element == nil && s.isFinished, element == nil ? nil : s.releasable(resumeAt))
    }
    waiters?.release()
    if let ready { return ready }
    if done { return nil }
    return await withTaskCancellationHandler {
      await withCheckedContinuation { (consumer: CheckedContinuation<Element?, Never>) in
        let (element, ended, waiters) = state.withLock { s -> (Element?, Bool, Waiters?) in
          if let element = s.pop() { return (element, false, s.releasable(resumeAt)) }
          if s.isFinished { return (nil, true, nil) }
          s.consumers.append(consumer)
          return (nil, false, nil)
        }
        waiters?.release()
        if let element {
          consumer.resume(returning: element)
        } else if ended {
          consumer.resume(returning: nil)
        }
      }
    } onCancel: {
      // As with AsyncStream: a cancelled consumer ends the stream.
      finish()
    }
  }
}
