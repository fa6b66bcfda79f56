import Synchronization

/// A one-way gate: `wait()` returns once `open()` has been called (before or after).
final class Latch: Sendable {
  private let waiters = Mutex<[CheckedContinuation<Void, Never>]?>([])

  func wait() async {
    await withCheckedContinuation { continuation in
      let now = waiters.withLock { w -> Bool in
        guard w != nil else { return true }
        w!.append(continuation)
        return false
      }
      if now { continuation.resume() }
    }
  }

  func open() {
    let list = waiters.withLock { w -> [CheckedContinuation<Void, Never>] in
      defer { w = nil }
      return w ?? []
    }
    for waiter in list { waiter.resume() }
  }
}
