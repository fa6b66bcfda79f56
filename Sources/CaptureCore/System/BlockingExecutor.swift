import Dispatch
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Where blocking work runs: the one policy of this program for calls that wait in the kernel.
///
/// Swift's cooperative thread pool has one thread per core, and a task that blocks in poll(2),
/// connect(2), waitpid(2) or a libbluetooth call holds its thread for the whole wait: with two cores,
/// two supervisors retrying absent devices would stop every other task in the process. So nothing
/// blocks the cooperative pool:
/// - a loop that blocks for the life of what it serves (the reader of a stream driver, a transport's
///   event loop, the camera's frames) runs on a `ReaderThread` of its own;
/// - a blocking call that ends (a TCP connect and the DMCC handshake, an HCI inquiry, an SDP search
///   and RFCOMM connect, a remote name request, waiting for a `--confirm` child, decoding a batch of
///   images) runs here, through `run`, which suspends the calling task on a continuation and resumes
///   it when the call returns, or `execute`, for a job that reports through a channel of its own.
///
/// The executor is a set of threads with a bound (`limit`, far above the pool's width): a thread is
/// started when a job arrives and every thread is busy, and leaves after `idleExit` without work.
/// When all `limit` threads are busy, further jobs wait in FIFO order; waiting costs a suspended
/// continuation, not a thread, so even then no pool thread is held. A job's every wait must be
/// bounded (a deadline, a poll slice) and it must look at its `Cancellation` between waits: a job
/// cannot be interrupted from outside, only asked to return.
public final class BlockingExecutor: Sendable {
  /// The executor every layer uses (Drivers, Bluetooth, the command line's `--confirm`).
  public static let shared = BlockingExecutor(label: "capture.blocking", limit: 64)

  /// How long an idle thread waits for work before it leaves.
  public static let idleExit: Duration = .seconds(30)

  /// Set when the task awaiting the job was cancelled (a signal, `--timeout`, a closed device): the
  /// job looks at it between its bounded waits and returns early.
  public final class Cancellation: Sendable {
    private let flag = Atomic<Bool>(false)
    public init() {}
    public var isCancelled: Bool { flag.load(ordering: .acquiring) }
    public func cancel() { flag.store(true, ordering: .releasing) }
  }

  /// Most threads this executor runs at once.
  public let limit: Int
  private let label: String
  private let idleTimeout: Duration
  private let state = Mutex(State())
  /// Signalled once per queued job; a worker that takes a signal takes one job.
  private let work = DispatchSemaphore(value: 0)

  private typealias Job = @Sendable () -> Void

  private struct State {
    var jobs: [Job] = []
    var head = 0
    var threads = 0
    var busy = 0
    var peakThreads = 0
    var queued: Int { jobs.count - head }

    mutating func pop() -> Job? {
      guard head < jobs.count else { return nil }
      let job = jobs[head]
      head += 1
      if head > 64 && head * 2 > jobs.count {
        jobs.removeFirst(head)
        head = 0
      }
      return job
    }
  }

  public init(label: String, limit: Int, idleExit: Duration = BlockingExecutor.idleExit) {
    self.label = label
    self.limit = max(1, limit)
    self.idleTimeout = idleExit
  }

  /// Marks every worker thread (a non-NULL value under this pthread key), so code can tell it runs on one.
  private static let workerKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
  }()

  /// True on a thread of any `BlockingExecutor` (and false on the cooperative pool): blocking code can
  /// check where it runs, and tests can prove the policy holds.
  public static var isWorkerThread: Bool { pthread_getspecific(workerKey) != nil }

  /// Threads running now, and the most there ever were (tests of the bound).
  public var threadCount: Int { state.withLock { $0.threads } }
  public var peakThreadCount: Int { state.withLock { $0.peakThreads } }

  /// Runs `body` on one of the executor's threads and returns what it returned or throws what it
  /// threw. Cancelling the calling task sets the `Cancellation` handed to `body`; a job cancelled while
  /// it still waits for a thread starts with it already set.
  public func run<T: Sendable, E: Error>(
    _ body: @escaping @Sendable (Cancellation) throws(E) -> T
  ) async throws(E) -> T {
    let cancellation = Cancellation()
    let result: Result<T, E> = await withTaskCancellationHandler {
      await withCheckedContinuation { (done: CheckedContinuation<Result<T, E>, Never>) in
        submit { done.resume(returning: Result { () throws(E) -> T in try body(cancellation) }) }
      }
    } onCancel: {
      cancellation.cancel()
    }
    return try result.get()
  }

  /// Runs `body` on one of the executor's threads and returns at once: for a job that reports through a
  /// channel of its own and looks at a stop flag of its own (SocketCam's decode workers).
  public func execute(_ body: @escaping @Sendable () -> Void) { submit(body) }

  private func submit(_ job: @escaping Job) {
    let spawn = state.withLock { s in
      s.jobs.append(job)
      // A thread that took a signal but not yet its job counts as idle, and its job as queued.
      guard s.queued > s.threads - s.busy, s.threads < limit else { return false }
      s.threads += 1
      s.peakThreads = max(s.peakThreads, s.threads)
      return true
    }
    work.signal()
    if spawn { startThread() }
  }

  /// A detached thread of its own, started now (DetachedThread).
  private func startThread() {
    do throws(Errno) {
      try DetachedThread.start { [self] in
        _ = pthread_setspecific(Self.workerKey, UnsafeRawPointer(bitPattern: 1))
        workerLoop()
      }
    } catch {
      // No thread (EAGAIN): one fewer worker; the job waits for a running one, or, when none runs,
      // gets a Dispatch thread so it is never stranded.
      let none = state.withLock { s in
        s.threads -= 1
        return s.threads == 0
      }
      if none {
        state.withLock { $0.threads += 1 }
        DispatchQueue(label: label).async { self.workerLoop() }
      }
    }
  }

  private func workerLoop() {
    let (seconds, attoseconds) = idleTimeout.components
    let idle = DispatchTimeInterval.milliseconds(
      Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    while true {
      if work.wait(timeout: .now() + idle) == .timedOut {
        // Leave only when nothing is queued: a queued job's signal is still waiting to be taken.
        let leave = state.withLock { s in
          guard s.queued == 0 else { return false }
          s.threads -= 1
          return true
        }
        if leave { return }
        continue
      }
      // Every signal follows its job's append, so a taken signal always finds a job.
      guard
        let job = state.withLock({ s in
          s.pop().map { job in
            s.busy += 1; return job
          }
        })
      else { continue }
      job()
      state.withLock { $0.busy -= 1 }
    }
  }
}
