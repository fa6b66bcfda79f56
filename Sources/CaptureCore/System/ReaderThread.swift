import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A loop that lasts as long as what it serves: a device's reader (serial, Bluetooth Classic, keyboard
/// wedge, DataMan), the camera's frame loop, a watched directory, `--confirm-stdin`'s questions, the
/// signal relay, the `--mqtt` spool, and the event loops of the transports (libwebsockets,
/// libmosquitto). The one type for a thread of one's own, half of the program's one policy for
/// blocking work (the other half, for a blocking call that ends, is `BlockingExecutor`;
/// docs/architecture.md §2, "Concurrency").
///
/// Each loop gets a dedicated pthread (DetachedThread), named for `top` and gdb, started at once: not
/// a thread of Swift's cooperative pool, which has one thread per core and would be held for the
/// whole life of the loop, and not a Dispatch queue, which on Linux may defer starting a thread while
/// the CPUs are busy (docs/swift-on-linux.md). The loop looks at `isStopping` between its bounded
/// waits; `wake`, when given, cuts short the wait it is in (a self-pipe, lws_cancel_service), so a stop
/// is seen at once rather than at the end of the wait. `join` returns once the loop has returned,
/// without holding a thread while it waits.
public final class ReaderThread: Sendable {
  /// The thread's name (at most 15 bytes: the kernel's TASK_COMM_LEN is 16 with its NUL).
  public let name: String
  private let wake: (@Sendable () -> Void)?
  private let stopRequested = Atomic<Bool>(false)
  private let state = Mutex(State())

  private enum Phase { case idle, running, ended }

  private struct State {
    var phase = Phase.idle
    var joiners: [CheckedContinuation<Void, Never>] = []
  }

  public init(name: String, wake: (@Sendable () -> Void)? = nil) {
    self.name = Self.threadName(name)
    self.wake = wake
  }

  /// True once a stop was asked: the loop returns at its next look.
  public var isStopping: Bool { stopRequested.load(ordering: .acquiring) }

  /// Runs `loop` on a new thread; once per instance (a second call does nothing). `Errno` (EAGAIN: no
  /// thread to be had) when it could not start, and then `loop` never runs and `join` returns at once.
  public func start(_ loop: @escaping @Sendable () -> Void) throws(Errno) {
    let go = state.withLock { s -> Bool in
      guard s.phase == .idle else { return false }
      s.phase = .running
      return true
    }
    guard go else { return }
    do throws(Errno) {
      try DetachedThread.start { [self] in
        Self.nameCurrentThread(name)
        loop()
        ended()
      }
    } catch {
      ended()
      throw error
    }
  }

  /// Asks the loop to stop and wakes the wait it is in; returns at once, from any thread (a task
  /// cancellation handler included).
  public func requestStop() {
    stopRequested.store(true, ordering: .releasing)
    wake?()
  }

  /// Returns once the loop has returned: at once when it never started or has already ended.
  public func join() async {
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      let waits = state.withLock { s -> Bool in
        guard s.phase == .running else { return false }
        s.joiners.append(done)
        return true
      }
      if !waits { done.resume() }
    }
  }

  /// Asks the loop to stop and returns once it has.
  public func stop() async {
    requestStop()
    await join()
  }

  private func ended() {
    let joiners = state.withLock { s -> [CheckedContinuation<Void, Never>] in
      s.phase = .ended
      defer { s.joiners.removeAll() }
      return s.joiners
    }
    for joiner in joiners { joiner.resume() }
  }

  /// Names the calling thread. Glibc's pthread_setname_np is a GNU extension Swift's Glibc module does
  /// not export (and prctl is variadic), so the name goes where both write it: the thread's `comm`
  /// file in procfs (proc(5), /proc/thread-self, Linux 3.17). A thread without a name still runs.
  private static func nameCurrentThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    _ = Array(name.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
  }

  /// `name` cut to 15 bytes on a character boundary (pthread_setname_np fails with ERANGE beyond).
  static func threadName(_ name: String) -> String {
    var cut = ""
    for character in name {
      guard cut.utf8.count + String(character).utf8.count <= 15 else { break }
      cut.append(character)
    }
    return cut
  }
}
