import CaptureCore
import Dispatch
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))

/// How long a pool-freedom test may take at most: a safety net that never fires on a healthy run,
/// however loaded (the suites run concurrently in one process on a shared 2-core machine). A test
/// that hits it failed: what it waited for could not run.
let safetyDeadline: Duration = .seconds(120)

/// A gate that blocking jobs wait at, on their own threads, until `open()`. The waits block their
/// thread (a DispatchSemaphore), exactly as a connect or an HCI inquiry would.
final class Gate: Sendable {
  private let semaphore = DispatchSemaphore(value: 0)
  private let opened = Atomic<Bool>(false)
  private let waitingCount = Atomic<Int>(0)

  /// How many are waiting at the gate (or went through it).
  var waiting: Int { waitingCount.load(ordering: .acquiring) }

  func open() {
    opened.store(true, ordering: .releasing)
    semaphore.signal()
  }

  /// Blocks the calling thread until the gate opens or `deadline` passes; true when it opened.
  func wait(until deadline: ContinuousClock.Instant) -> Bool {
    waitingCount.add(1, ordering: .sequentiallyConsistent)
    while !opened.load(ordering: .acquiring) {
      let left = deadline - ContinuousClock.now
      guard left > .zero else { return false }
      let (seconds, attoseconds) = left.components
      let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
      _ = semaphore.wait(timeout: .now() + .nanoseconds(nanoseconds))
    }
    // Pass the wake-up on: every waiter goes through one signal.
    semaphore.signal()
    return true
  }
}

/// Suspends (never blocks) until `condition` holds or `deadline` passes; true when it held.
func eventually(
  until deadline: ContinuousClock.Instant, _ condition: @Sendable () -> Bool
) async -> Bool {
  while !condition() {
    guard ContinuousClock.now < deadline else { return false }
    try? await Task.sleep(for: .milliseconds(10))
  }
  return true
}

final class Started: Sendable {
  let ids = Mutex<[Int]>([])
  /// Jobs running now and the most that ever ran at once.
  let running = Mutex((now: 0, most: 0))
  let submitted = Atomic<Int>(0)
  let flag = Atomic<Bool>(false)
}

@Suite("BlockingExecutor")
struct BlockingExecutorTests {
  struct Failure: Error, Equatable { let code: Int }

  /// Deterministic, not timed: the jobs block their threads at a gate that only a task on the
  /// cooperative pool opens. Had they run on the pool (its width is the core count), that task could
  /// not run until the jobs gave up at the safety deadline, and every job would report the gate shut.
  @Test("more blocking jobs than cores leave the cooperative pool free: a concurrent task runs at once")
  func poolStaysFree() async throws {
    let executor = BlockingExecutor(label: "test.free", limit: 64)
    let jobs = cores * 2 + 2
    let gate = Gate()
    let deadline = ContinuousClock.now + safetyDeadline
    let released = await withTaskGroup(of: Bool.self) { group in
      for _ in 0..<jobs {
        group.addTask {
          await executor.run { _ in gate.wait(until: deadline) }
        }
      }
      // Every job blocks its thread at the gate; this wait suspends, it needs a free pool thread.
      let allWaiting = await eventually(until: deadline) { gate.waiting == jobs }
      #expect(allWaiting, "only \(gate.waiting) of \(jobs) jobs reached the gate")
      // A fresh task on the pool opens the gate while every job holds its thread.
      await Task.detached { gate.open() }.value
      var released: [Bool] = []
      for await value in group { released.append(value) }
      return released
    }
    #expect(released == Array(repeating: true, count: jobs), "a job gave up at the gate: the pool was held")
    // Every job held a thread at the same time, so each had one of its own.
    #expect(executor.peakThreadCount == jobs)
  }

  /// Deterministic: the first `limit` jobs hold their threads at a gate, so the bound is reached
  /// whatever order the tasks submit in and however late they are scheduled.
  @Test("the bound: jobs beyond `limit` wait for a thread, and all run")
  func bounded() async throws {
    let executor = BlockingExecutor(label: "test.bound", limit: 2)
    let started = Started()
    let gate = Gate()
    let deadline = ContinuousClock.now + safetyDeadline
    await withTaskGroup(of: Bool.self) { group in
      for i in 0..<6 {
        group.addTask {
          started.submitted.add(1, ordering: .sequentiallyConsistent)
          return await executor.run { _ in
            started.running.withLock {
              $0.now += 1; $0.most = max($0.most, $0.now)
            }
            started.ids.withLock { $0.append(i) }
            let opened = gate.wait(until: deadline)
            started.running.withLock { $0.now -= 1 }
            return opened
          }
        }
      }
      let twoStarted = await eventually(until: deadline) {
        started.ids.withLock { $0.count } >= 2 && started.submitted.load(ordering: .acquiring) == 6
      }
      #expect(twoStarted)
      // Two threads are held at the gate: the other four jobs wait for one. (A job the bound let
      // through would show up here, unless it came later than this look: then `most` catches it.)
      try? await Task.sleep(for: .milliseconds(100))
      #expect(started.ids.withLock { $0.count } == 2)
      gate.open()
      for await opened in group { #expect(opened) }
    }
    #expect(executor.peakThreadCount == 2)
    #expect(started.running.withLock { $0.most } == 2)
    #expect(started.ids.withLock { $0 }.sorted() == Array(0..<6))
  }

  @Test("a job runs on an executor thread, never on the cooperative pool")
  func runsOnAWorker() async {
    let executor = BlockingExecutor(label: "test.where", limit: 2)
    #expect(await executor.run { _ in BlockingExecutor.isWorkerThread })
    #expect(await Task.detached { BlockingExecutor.isWorkerThread }.value == false)
  }

  @Test("a typed error thrown by the job is what run throws")
  func typedError() async {
    let executor = BlockingExecutor(label: "test.error", limit: 1)
    do {
      _ = try await executor.run { _ throws(Failure) -> Int in throw Failure(code: 7) }
      Issue.record("expected a throw")
    } catch {
      #expect(error == Failure(code: 7))
    }
  }

  /// Deterministic: the job runs until it sees its Cancellation, and it returns false only if it
  /// never did before the safety deadline.
  @Test("cancelling the awaiting task sets the job's Cancellation; a job that looks at it returns early")
  func cancellation() async {
    let executor = BlockingExecutor(label: "test.cancel", limit: 1)
    let started = Started()
    let deadline = ContinuousClock.now + safetyDeadline
    let task = Task {
      await executor.run { job -> Bool in
        started.flag.store(true, ordering: .releasing)
        while ContinuousClock.now < deadline {
          if job.isCancelled { return true }
          usleep(20_000)
        }
        return false
      }
    }
    // Cancelled while the job runs, not before it started.
    #expect(await eventually(until: deadline) { started.flag.load(ordering: .acquiring) })
    task.cancel()
    #expect(await task.value == true, "the job never saw the cancellation")
  }

  @Test("an idle thread leaves after idleExit, and a later job starts a new one")
  func idleThreadsLeave() async throws {
    let executor = BlockingExecutor(label: "test.idle", limit: 4, idleExit: .milliseconds(100))
    await executor.run { _ in }
    #expect(executor.peakThreadCount == 1)
    // Leaving takes idleExit; the safety deadline only covers a loaded machine's scheduling.
    #expect(await eventually(until: .now + safetyDeadline) { executor.threadCount == 0 })
    #expect(await executor.run { _ in 42 } == 42)
    #expect(executor.peakThreadCount == 1)
  }
}
