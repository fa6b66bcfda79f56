import Synchronization

/// A one-way gate: `wait()` returns once `open()` has been called (before or after).
public final class Latch: Sendable {
  private let waiters = Mutex<[CheckedContinuation<Void, Never>]?>([])
  /// Set once opened: `open()` on an open latch (the event sink opens it after every decoded code) is
  /// one atomic load, no lock.
  private let isOpen = Atomic<Bool>(false)

  public init() {}

  public func wait() async {
    if isOpen.load(ordering: .acquiring) { return }
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
    if isOpen.load(ordering: .acquiring) { return }
    let list = waiters.withLock { w -> [CheckedContinuation<Void, Never>] in
      defer { w = nil }
      return w ?? []
    }
    isOpen.store(true, ordering: .releasing)
    for waiter in list { waiter.resume() }
  }
}
