import CaptureCore
import Synchronization

/// The D600's config channel (docs/device-protocols.md §2.6): a command goes out as blocks written to
/// the config characteristic, its answer comes back as notifications on the same characteristic.
///
/// Commands take turns: the blocks of two commands must not interleave on the characteristic, and an
/// answer names no command, so the channel matches answers to commands by order and keeps one command
/// on the wire at a time. A command's waiter is registered BEFORE its first block is written, so an
/// answer that arrives while the write call is still returning is kept; a command that times out
/// gives up alone (its turn passes to the next command, whose own timeout starts with its write).
final class D600ConfigChannel: Sendable {
  /// Writes one block to the config characteristic (GATT write with response).
  typealias Writer = @Sendable ([UInt8]) async throws(CaptureError) -> Void

  /// How long a command waits for its answer when the caller gives no timeout.
  static let answerTimeout: Duration = .seconds(2)

  private let write: Writer
  private let state = Mutex(State())

  private struct State {
    var assembler = D600ConfigAnswerAssembler()
    var nextID: UInt64 = 0
    /// The command whose answer is expected, if any.
    var current: Waiter?
    /// Commands waiting for their turn, oldest first.
    var queue: [(id: UInt64, turn: CheckedContinuation<Void, Never>)] = []
    var isBusy = false
  }

  private struct Waiter {
    var id: UInt64
    /// Set once the caller waits; an answer that came first is kept in `answer`.
    var continuation: CheckedContinuation<D600ConfigAnswer?, Never>?
    var answer: D600ConfigAnswer??
  }

  init(write: @escaping Writer) {
    self.write = write
  }

  /// Sends `command` with `payload` and returns its answer, or nil when none came within `timeout`
  /// (or the link went down meanwhile). A write that fails throws, and the next command goes ahead.
  func command(_ command: UInt8, _ payload: [UInt8], timeout: Duration = answerTimeout)
    async throws(CaptureError) -> D600ConfigAnswer?
  {
    let id = await takeTurn()
    defer { passTurn() }
    // Registered before the first write: the answer cannot come before this.
    state.withLock { $0.current = Waiter(id: id) }
    do {
      for block in D600ConfigBlocks.encode(command: command, payload: payload) { try await write(block) }
    } catch {
      state.withLock { s in if s.current?.id == id { s.current = nil } }
      throw error
    }
    let timer = Task { [weak self] in
      guard (try? await Task.sleep(for: timeout)) != nil else { return }
      self?.expire(id)
    }
    defer { timer.cancel() }
    return await withCheckedContinuation { continuation in
      let early = state.withLock { s -> D600ConfigAnswer?? in
        guard var waiter = s.current, waiter.id == id else { return .some(nil) }  // expired or failed
        if let answer = waiter.answer {
          s.current = nil
          return .some(answer)
        }
        waiter.continuation = continuation
        s.current = waiter
        return .none
      }
      if let early { continuation.resume(returning: early) }
    }
  }

  /// A notification from the config characteristic. A malformed answer block is dropped (the command
  /// then times out with a clear error); an answer nobody waits for is dropped too.
  func receive(_ bytes: [UInt8]) {
    let resumed = state.withLock { s -> (CheckedContinuation<D600ConfigAnswer?, Never>, D600ConfigAnswer)? in
      guard let answer = try? s.assembler.feed(bytes), var waiter = s.current else { return nil }
      guard let continuation = waiter.continuation else {
        waiter.answer = .some(answer)
        s.current = waiter
        return nil
      }
      s.current = nil
      return (continuation, answer)
    }
    if let (continuation, answer) = resumed { continuation.resume(returning: answer) }
  }

  /// The link went down or the device is closing: the command on the wire gets no answer, and any
  /// partial answer is forgotten. Commands waiting for their turn still run (and fail on the write
  /// while the link is down).
  func failCurrent() {
    giveUp(resettingAnyway: true, when: { _ in true })
  }

  /// Only command `id` gives up: a concurrent command keeps waiting for its own answer.
  private func expire(_ id: UInt64) {
    giveUp(when: { $0 == id })
  }

  /// Ends the current command with no answer when `isIt(its id)`: a partial answer is forgotten (it
  /// belonged to that command; with `resettingAnyway` it is forgotten in any case), a command already
  /// waiting resumes with nil, one still writing finds nil when it comes to wait.
  private func giveUp(resettingAnyway: Bool = false, when isIt: (UInt64) -> Bool) {
    let waiting = state.withLock { s -> CheckedContinuation<D600ConfigAnswer?, Never>? in
      if resettingAnyway { s.assembler.reset() }
      guard var waiter = s.current, isIt(waiter.id) else { return nil }
      s.assembler.reset()
      guard let continuation = waiter.continuation else {
        waiter.answer = .some(nil)
        s.current = waiter
        return nil
      }
      s.current = nil
      return continuation
    }
    waiting?.resume(returning: nil)
  }

  private func takeTurn() async -> UInt64 {
    let (id, free) = state.withLock { s -> (UInt64, Bool) in
      s.nextID += 1
      if s.isBusy { return (s.nextID, false) }
      s.isBusy = true
      return (s.nextID, true)
    }
    if free { return id }
    await withCheckedContinuation { (turn: CheckedContinuation<Void, Never>) in
      let now = state.withLock { s -> Bool in
        if !s.isBusy {
          s.isBusy = true
          return true
        }
        s.queue.append((id, turn))
        return false
      }
      if now { turn.resume() }
    }
    return id
  }

  private func passTurn() {
    let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
      s.current = nil  // one command at a time: whatever is left is this command's
      guard !s.queue.isEmpty else {
        s.isBusy = false
        return nil
      }
      return s.queue.removeFirst().turn  // isBusy stays true: the turn is handed over
    }
    next?.resume()
  }
}
