import CaptureCore
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// How long a fresh task on the cooperative pool takes to run and finish while `blocked` holds the
/// executor's threads: the measure of "nothing blocks the pool".
func poolLatency() async -> Duration {
  let start = ContinuousClock.now
  await Task.detached { _ = 1 + 1 }.value
  return ContinuousClock.now - start
}

let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))

final class Started: Sendable {
  let ids = Mutex<[Int]>([])
}

@Suite("BlockingExecutor")
struct BlockingExecutorTests {
  struct Failure: Error, Equatable { let code: Int }

  @Test("more blocking jobs than cores leave the cooperative pool free: a concurrent task runs at once")
  func poolStaysFree() async throws {
    let executor = BlockingExecutor(label: "test.free", limit: 64)
    let jobs = cores * 2 + 2
    try await withThrowingTaskGroup(of: Int.self) { group in
      for i in 0..<jobs {
        group.addTask {
          try await executor.run { _ throws(Failure) in
            usleep(8_000_000)  // a blocking call: sleeps its thread, not a task
            return i
          }
        }
      }
      // Every job is in usleep by now; a pool of `cores` threads held by them would not run this.
      // A pool whose threads the blocking work held would wake this task late, by seconds.
      let asleep = ContinuousClock.now
      try await Task.sleep(for: .milliseconds(300))
      // Generous: other suites in this process load the pool too; a blocked pool makes this 8 s and more.
      let late = ContinuousClock.now - asleep - .milliseconds(300)
      #expect(late < .seconds(5), "the sleeping task woke \(late) late")
      let latency = await poolLatency()
      #expect(latency < .seconds(5), "a pool task waited \(latency) behind \(jobs) blocking jobs")
      var results: [Int] = []
      for try await value in group { results.append(value) }
      #expect(results.sorted() == Array(0..<jobs))
    }
    #expect(executor.peakThreadCount == jobs)
  }

  @Test("the bound: jobs beyond `limit` wait for a thread, in order, and all run")
  func bounded() async throws {
    let executor = BlockingExecutor(label: "test.bound", limit: 2)
    let order = Started()
    let start = ContinuousClock.now
    await withTaskGroup(of: Void.self) { group in
      for i in 0..<6 {
        group.addTask {
          await executor.run { _ in
            order.ids.withLock { $0.append(i) }
            usleep(200_000)
          }
        }
        // Submitted in order (each submit happens before the next task starts).
        try? await Task.sleep(for: .milliseconds(10))
      }
    }
    let elapsed = ContinuousClock.now - start
    #expect(executor.peakThreadCount == 2)
    #expect(order.ids.withLock { $0 }.sorted() == Array(0..<6))
    // Six 200 ms jobs on two threads: three rounds.
    #expect(elapsed >= .milliseconds(590), "\(elapsed)")
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

  @Test("cancelling the awaiting task sets the job's Cancellation; a job that looks at it returns early")
  func cancellation() async {
    let executor = BlockingExecutor(label: "test.cancel", limit: 1)
    let start = ContinuousClock.now
    let task = Task {
      await executor.run { job -> Bool in
        let until = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < until {
          if job.isCancelled { return true }
          usleep(20_000)
        }
        return false
      }
    }
    try? await Task.sleep(for: .milliseconds(200))
    task.cancel()
    #expect(await task.value == true)
    #expect(ContinuousClock.now - start < .seconds(5))
  }

  @Test("an idle thread leaves after idleExit, and a later job starts a new one")
  func idleThreadsLeave() async throws {
    let executor = BlockingExecutor(label: "test.idle", limit: 4, idleExit: .milliseconds(100))
    await executor.run { _ in }
    #expect(executor.peakThreadCount == 1)
    try await Task.sleep(for: .milliseconds(1500))
    #expect(executor.threadCount == 0)
    #expect(await executor.run { _ in 42 } == 42)
    #expect(executor.peakThreadCount == 1)
  }
}
