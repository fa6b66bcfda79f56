import Synchronization

/// A one-way gate: `wait()` returns once `open()` has been called (before or after).
public final class Latch: Sendable {
  private let waiters = Mutex<[CheckedContinuation<Void, Never>]?>([])

  public init() {}

  public func wait() async {
    await withCheckedContinuation { continuation in
      let now = waiters.withLock { w -> Bool in
        guard w != nil else { return true }
        w!.append(continuation)
        return false
      }
      if now { continuation.resume() }
    }
  }

  public func open() {
    let list = waiters.withLock { w -> [CheckedContinuation<Void, Never>] in
      defer { w = nil }
      return w ?? []
    }
    for waiter in list { waiter.resume() }
  }
}
