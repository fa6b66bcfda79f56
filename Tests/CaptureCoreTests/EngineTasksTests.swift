import Synchronization
import Testing

@testable import CaptureCore

@Suite("Engine tasks: every task the engine starts is owned and awaited", .timeLimit(.minutes(10)))
struct EngineTasksTests {
  @Test("drain returns only once every job has ended, one still waiting when it was called included")
  func drainAwaitsEveryJob() async {
    let tasks = EngineTasks()
    let gate = Latch()
    let started = Latch()
    let ended = Flag()
    tasks.spawn {
      started.open()
      await gate.wait()
      ended.value.store(true, ordering: .releasing)
    }
    await started.wait()
    let drained = Task {
      await tasks.drain()
      return ended.value.load(ordering: .acquiring)
    }
    gate.open()
    #expect(await drained.value, "drain returned before the job had ended")
  }

  @Test("stop cancels the spawnUntilStop jobs (the scout) and starts none after; spawn jobs run to their end")
  func stopCancelsScoutJobs() async {
    let tasks = EngineTasks()
    let started = Latch()
    let cancelled = Flag()
    let late = Flag()
    let lane = Flag()
    tasks.spawnUntilStop {
      started.open()
      // Ends only by cancellation: the time is a bound on a hang, not a wait.
      try? await Task.sleep(for: .seconds(600))
      cancelled.value.store(Task.isCancelled, ordering: .releasing)
    }
    await started.wait()
    tasks.stop()
    tasks.spawnUntilStop { late.value.store(true, ordering: .releasing) }
    tasks.spawn { lane.value.store(!Task.isCancelled, ordering: .releasing) }
    await tasks.drain()
    let wasCancelled = cancelled.value.load(ordering: .acquiring)
    let ranLate = late.value.load(ordering: .acquiring)
    let laneRan = lane.value.load(ordering: .acquiring)
    #expect(wasCancelled)
    #expect(!ranLate, "a scout job started after stop")
    #expect(laneRan, "a lane job was cancelled or did not run")
  }
}
