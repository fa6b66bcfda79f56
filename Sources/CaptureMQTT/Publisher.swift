import CaptureCore
import Dispatch
import MosquittoClient
import Synchronization

/// What the publisher needs of the MQTT transport (`MQTTConnection` is one); tests pass a recording
/// link. Both calls return at once: publish queues the message in the transport.
public protocol MQTTLink: AnyObject, Sendable {
  /// The QoS 1 message id (its PUBACK comes back as `Publisher.acknowledged`), or nil when the message
  /// was not queued (not connected).
  func publish(_ message: MQTTMessage) -> Int32?
  func subscribe(_ topic: String, qos: Int)
}

/// The spool's thread and the publishing of its records (docs/fleet.md §4). Every event is appended to
/// the spool and made durable (fsync in batches: whatever accumulated while the last fsync ran goes in
/// one) before it is published; a record leaves the spool only on its PUBACK; on every (re)connection
/// everything unacknowledged is published again, in order. All file work runs on this thread of its
/// own; callers (the engine's lanes, the transport's callbacks) only queue work and wake it.
public final class Publisher: Sendable {
  /// What `append` made of an event.
  public enum Outcome: Sendable, Equatable {
    /// Spooled and durable (`append` waited for it).
    case spooled(seq: UInt64, eventID: String)
    /// Queued for the spool (`append` did not wait): durable within one batch.
    case queued
    /// The spool holds `--mqtt-spool-max` unacknowledged events: this one was refused, the old kept.
    case refused(CaptureError)
  }

  /// Events queued and not yet written: past it `append` waits for the spool's thread, so the disk
  /// paces the devices.
  public static let queueLimit = 4096
  /// Records published and not yet acknowledged at once: a reconnection after a long outage streams the
  /// spool instead of queueing all of it in the transport's memory.
  public let window: Int

  private let files: FilesBox
  private let link: any MQTTLink
  private let warn: @Sendable (String) -> Void
  private let inbox = Mutex(Inbox())
  private let wake = DispatchSemaphore(value: 0)
  private let stats = Mutex(Stats())
  /// Called on the spool's thread before each batch is written (tests: to hold a batch open).
  private let beforeBatch: (@Sendable () -> Void)?

  public struct Stats: Sendable, Equatable {
    public var fsyncs = 0
    public var batches = 0
    public var published = 0
    public var acknowledged = 0
  }

  private struct Append {
    var topic: String
    var payload: @Sendable (String) -> [UInt8]
    var durable: CheckedContinuation<Outcome, Never>?
  }

  private struct Inbox {
    var appends: [Append] = []
    /// Events queued or spooled and not acknowledged: the bound is checked here, when the event comes.
    var outstanding = 0
    var acks: [Int32] = []
    var connected = false
    /// Bumped on every connected(): the thread starts over from the first unacknowledged record.
    var generation = 0
    var deliveryWaiters: [(UInt64, CheckedContinuation<Bool, Never>)] = []
    var roomWaiters: [CheckedContinuation<Void, Never>] = []
    var stopping: CheckedContinuation<Void, Never>?
    var stopGrace: Duration = .zero
    var stopped = false
    /// The last batch could not be written (a full disk): until one is, every append waits for its
    /// batch's outcome, so a code refused then is refused to its caller (an error event, a bad
    /// confirmation) rather than queued and dropped.
    var writeFailing = false
  }

  /// The spool is used by the publisher's thread only; the box carries it there.
  private final class FilesBox: @unchecked Sendable {
    let files: SpoolFiles
    init(_ files: SpoolFiles) { self.files = files }
  }

  public init(
    spool: SpoolFiles, link: any MQTTLink, window: Int = 256, warn: @escaping @Sendable (String) -> Void,
    beforeBatch: (@Sendable () -> Void)? = nil
  ) {
    files = FilesBox(spool)
    self.link = link
    self.window = max(1, window)
    self.warn = warn
    self.beforeBatch = beforeBatch
    inbox.withLock { $0.outstanding = spool.unacknowledgedCount }
  }

  /// Starts the spool's thread.
  public func start() throws(CaptureError) {
    do {
      try ReaderThread(name: "mqtt-spool").start { [self] in self.run() }
    } catch {
      throw CaptureError(error, "cannot start the MQTT spool's thread", other: .unableCreateThread)
    }
  }

  public var statistics: Stats { stats.withLock { $0 } }

  /// Events queued for the spool or waiting for their PUBACK.
  public var outstanding: Int { inbox.withLock { $0.outstanding } }

  /// Queues one event for the spool. With `waitUntilDurable` it returns once the record is fsynced
  /// (`--confirm-delivery`), else once it is queued (waiting only while the queue is full: the disk
  /// paces the devices). Refused, at once, when the spool is full.
  public func append(
    topic: String, waitUntilDurable: Bool, payload: @escaping @Sendable (String) -> [UInt8]
  ) async -> Outcome {
    while true {
      let full = inbox.withLock { $0.appends.count >= Self.queueLimit && !$0.stopped }
      if !full { break }
      await withCheckedContinuation { (room: CheckedContinuation<Void, Never>) in
        let ready = inbox.withLock { state -> Bool in
          if state.appends.count < Self.queueLimit || state.stopped { return true }
          state.roomWaiters.append(room)
          return false
        }
        if ready { room.resume() }
      }
    }
    let waitUntilDurable = waitUntilDurable || inbox.withLock { $0.writeFailing }
    if !waitUntilDurable {
      let refused = inbox.withLock { state -> CaptureError? in
        if let refusal = refusal(state) { return refusal }
        state.outstanding += 1
        state.appends.append(Append(topic: topic, payload: payload, durable: nil))
        return nil
      }
      if let refused { return .refused(refused) }
      wake.signal()
      return .queued
    }
    return await withCheckedContinuation { (done: CheckedContinuation<Outcome, Never>) in
      let refused = inbox.withLock { state -> CaptureError? in
        if let refusal = refusal(state) { return refusal }
        state.outstanding += 1
        state.appends.append(Append(topic: topic, payload: payload, durable: done))
        return nil
      }
      if let refused {
        done.resume(returning: .refused(refused))
      } else {
        wake.signal()
      }
    }
  }

  private func refusal(_ state: Inbox) -> CaptureError? {
    if state.stopped { return CaptureError(.deviceNotOpen, "the MQTT spool is closed") }
    let maximum = files.files.maximum
    if state.outstanding >= maximum {
      return CaptureError(
        .queueReseted,
        "the MQTT spool is full (\(maximum) events wait for the broker, --mqtt-spool-max); code refused, nothing spooled was dropped"
      )
    }
    return nil
  }

  /// Returns when the broker acknowledged record `seq` (true), or false when the publisher stopped
  /// first (`--confirm-delivery broker`).
  public func delivered(_ seq: UInt64) async -> Bool {
    await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
      let stopped = inbox.withLock { state -> Bool in
        if state.stopped { return true }
        state.deliveryWaiters.append((seq, done))
        return false
      }
      if stopped { done.resume(returning: false) } else { wake.signal() }
    }
  }

  // MARK: - The transport's side (called on its thread; each returns at once)

  /// The connection is up (first time or again): everything unacknowledged is published again, in
  /// order, from the first unacknowledged record.
  public func linkConnected() {
    inbox.withLock {
      $0.connected = true
      $0.generation += 1
    }
    wake.signal()
  }

  public func linkDisconnected() {
    inbox.withLock { $0.connected = false }
    wake.signal()
  }

  /// PUBACK for `messageID`.
  public func acknowledged(_ messageID: Int32) {
    inbox.withLock { $0.acks.append(messageID) }
    wake.signal()
  }

  /// Writes what is queued, waits up to `grace` for the PUBACKs of what is published, saves the
  /// acknowledgements and ends the thread. Whatever is still unacknowledged stays in the spool for the
  /// next run.
  public func stop(grace: Duration = .seconds(2)) async {
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      let already = inbox.withLock { state -> Bool in
        if state.stopped || state.stopping != nil { return true }
        state.stopping = done
        state.stopGrace = grace
        return false
      }
      if already { done.resume() } else { wake.signal() }
    }
  }

  // MARK: - The spool's thread

  private func run() {
    let spool = files.files
    var connected = false
    var generation = 0
    var cursor = spool.floor
    var inflight: [Int32: UInt64] = [:]
    // The message ids of the connection before: the transport may still send those messages again
    // and report their PUBACKs, which free the records as well as the republished copies' do.
    var previous: [Int32: UInt64] = [:]
    var waiters: [(UInt64, CheckedContinuation<Bool, Never>)] = []
    var lastSave = ContinuousClock.now
    // One warning per outage of the disk (a full file system): the first failure says what fails and
    // that codes are refused, the first success after it that they are taken again; in between, each
    // refused code has its own error event and nothing else is said (not a line every 250 ms). The
    // acked marker, saved every 250 ms, says its own failure only when no write outage was said (it
    // is the same disk) and its recovery only when it said the failure.
    var writeFailing = false
    var saveFailing = false
    var saveWarned = false
    var stopDeadline: ContinuousClock.Instant?
    var stopWaiter: CheckedContinuation<Void, Never>?

    while true {
      if stopDeadline == nil {
        _ = wake.wait(timeout: .now() + .milliseconds(250))
      } else {
        _ = wake.wait(timeout: .now() + .milliseconds(20))
      }
      beforeBatchIfWork()
      let taken = inbox.withLock { state in
        defer {
          state.appends.removeAll(keepingCapacity: true)
          state.acks.removeAll(keepingCapacity: true)
          state.deliveryWaiters.removeAll()
        }
        let rooms = state.roomWaiters
        state.roomWaiters.removeAll()
        if let s = state.stopping, stopWaiter == nil {
          stopWaiter = s
          stopDeadline = .now + state.stopGrace
          state.stopping = nil
        }
        return (
          state.appends, state.acks, state.connected, state.generation, state.deliveryWaiters, rooms
        )
      }
      let (appends, acks, isConnected, newGeneration, newWaiters, rooms) = taken
      for room in rooms { room.resume() }
      waiters += newWaiters

      // 1. Append and make durable: the whole batch, one fsync. A failed write or fsync (a full disk)
      // rolls back what was not durable (SpoolFiles.flush): those codes, and the rest of the batch,
      // are refused with the error; the next batch tries again, after the spool made what room it
      // could from acknowledged records. Nothing is refused for ever.
      if !appends.isEmpty {
        var outcomes: [Outcome] = []
        outcomes.reserveCapacity(appends.count)
        var failure: CaptureError?
        let before = spool.fsyncCount
        for append in appends {
          if let failure {
            outcomes.append(.refused(failure))
            continue
          }
          do throws(CaptureError) {
            if let record = try spool.append(topic: append.topic, payload: append.payload) {
              outcomes.append(.spooled(seq: record.seq, eventID: record.eventID))
            } else {
              outcomes.append(
                .refused(
                  CaptureError(.queueReseted, "the MQTT spool is full (--mqtt-spool-max); code refused")))
            }
          } catch {
            failure = error
            outcomes.append(.refused(error))
          }
        }
        if failure == nil {
          do throws(CaptureError) { try spool.flush() } catch { failure = error }
        }
        if let failure {
          // A record of this batch is safe only if a flush made it durable before the failure (one
          // at a segment's end); the others were rolled back.
          outcomes = outcomes.map { outcome in
            if case .spooled(let seq, _) = outcome, !spool.isDurable(seq) { return .refused(failure) }
            return outcome
          }
          if !writeFailing {
            // Events queued before the failure had no one waiting for them: counted here, since no
            // error event can name them.
            let unheard = zip(appends, outcomes).filter { append, outcome in
              if case .refused = outcome { return append.durable == nil }
              return false
            }.count
            warn(
              "\(failure.message); new codes are refused until the spool can be written again"
                + (unheard > 0
                  ? " (\(unheard) queued event\(unheard == 1 ? " was" : "s were") not spooled)" : ""))
            writeFailing = true
            inbox.withLock { $0.writeFailing = true }
          }
        } else if writeFailing {
          warn("the MQTT spool \(spool.directory) is written again; new codes are taken")
          writeFailing = false
          inbox.withLock { $0.writeFailing = false }
        }
        stats.withLock {
          $0.fsyncs += spool.fsyncCount - before
          $0.batches += 1
        }
        let refusedCount = outcomes.reduce(0) { count, outcome in
          if case .refused = outcome { return count + 1 }
          return count
        }
        if refusedCount > 0 { inbox.withLock { $0.outstanding -= refusedCount } }
        for (append, outcome) in zip(appends, outcomes) { append.durable?.resume(returning: outcome) }
      }

      // 2. Acknowledgements: each PUBACK frees its record (and may free a segment).
      var freed = 0
      for mid in acks {
        guard let seq = inflight.removeValue(forKey: mid) ?? previous.removeValue(forKey: mid) else {
          continue
        }
        if spool.acknowledge(seq) { freed += 1 }
      }
      if freed > 0 {
        inbox.withLock { $0.outstanding -= freed }
        stats.withLock { $0.acknowledged += freed }
      }
      if !waiters.isEmpty {
        waiters.removeAll { seq, waiter in
          guard spool.isAcknowledged(seq) else { return false }
          waiter.resume(returning: true)
          return true
        }
      }

      // 3. Publish: on a new connection from the first unacknowledged record, else go on; at most
      // `window` unacknowledged at once.
      if newGeneration != generation {
        generation = newGeneration
        previous = inflight.filter { !spool.isAcknowledged($0.value) }
        inflight.removeAll()
        cursor = spool.floor
      }
      connected = isConnected
      if connected {
        while inflight.count < window {
          let records: [SpoolRecord]
          do throws(CaptureError) {
            records = try spool.unacknowledged(from: cursor, limit: window - inflight.count)
          } catch {
            warn("\(error.message)")
            break
          }
          if records.isEmpty { break }
          var stalled = false
          for record in records {
            guard
              let mid = link.publish(
                MQTTMessage(topic: record.topic, payload: record.payload, qos: 1, retain: false))
            else {
              stalled = true
              break
            }
            inflight[mid] = record.seq
            cursor = record.seq + 1
            stats.withLock { $0.published += 1 }
          }
          if stalled { break }
        }
      }

      if ContinuousClock.now - lastSave > .milliseconds(250) {
        do {
          try spool.saveAcknowledgements()
          if saveFailing && saveWarned { warn("the MQTT spool's acknowledgements are saved again") }
          saveFailing = false
          saveWarned = false
        } catch {
          if !saveFailing && !writeFailing {
            warn("\(error.message) (acknowledged events may be published again after a restart)")
            saveWarned = true
          }
          saveFailing = true
        }
        lastSave = .now
      }

      if let deadline = stopDeadline {
        let empty = inbox.withLock { $0.appends.isEmpty }
        if empty && (inflight.isEmpty || !connected || ContinuousClock.now >= deadline) {
          do { try spool.shutDown() } catch { warn(error.message) }
          let (leftWaiters, leftRooms, leftAppends) = inbox.withLock { state in
            state.stopped = true
            defer {
              state.deliveryWaiters.removeAll()
              state.roomWaiters.removeAll()
              state.appends.removeAll()
            }
            return (state.deliveryWaiters, state.roomWaiters, state.appends)
          }
          for (_, w) in waiters + leftWaiters { w.resume(returning: false) }
          for r in leftRooms { r.resume() }
          for a in leftAppends {
            a.durable?.resume(returning: .refused(CaptureError(.deviceNotOpen, "the MQTT spool is closed")))
          }
          stopWaiter?.resume()
          return
        }
      }
    }
  }

  private func beforeBatchIfWork() {
    guard let beforeBatch else { return }
    if inbox.withLock({ !$0.appends.isEmpty }) { beforeBatch() }
  }
}
