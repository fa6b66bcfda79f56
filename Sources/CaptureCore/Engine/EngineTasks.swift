/// Every task the engine starts, owned by task groups that live as long as the engine's run: the
/// forwarding lane of each device, the deliveries of the engine's own events, supervisors being
/// stopped, SocketCam changes, the favourites scout and its connects. None is left running unowned:
/// `drain()` (the end of `CaptureEngine.wait()`) returns once every one of them has ended, so a run
/// that is over has nothing of the engine still running behind it.
///
/// Two groups, because the engine stops its jobs in two ways: `spawn` jobs run to their end (a lane
/// forwards until its device's stream ends, so removals are never cut off: cancelling the task would
/// end its `for await` early); `spawnUntilStop` jobs (discovery, connecting a favourite) are
/// cancelled by `stop()`, since they only look for devices the stopped engine will not open.
///
/// A job reaches its group through an `AsyncStream` (a task group can only be added to from inside),
/// so `spawn` never waits and may be called under a lock.
final class EngineTasks: Sendable {
  typealias Job = @Sendable () async -> Void

  private let running: AsyncStream<Job>.Continuation
  private let runningGroup: Task<Void, Never>
  private let stoppable: AsyncStream<Job>.Continuation
  private let stoppableGroup: Task<Void, Never>

  init() {
    (runningGroup, running) = Self.group()
    (stoppableGroup, stoppable) = Self.group()
  }

  deinit {
    running.finish()
    stoppable.finish()
  }

  /// A task whose group takes jobs until its stream finishes and then returns once every job has.
  private static func group() -> (Task<Void, Never>, AsyncStream<Job>.Continuation) {
    let (jobs, intake) = AsyncStream.makeStream(of: Job.self)
    let group = Task {
      await withDiscardingTaskGroup { group in
        for await job in jobs { group.addTask { await job() } }
      }
    }
    return (group, intake)
  }

  /// Runs `job` to its end in the engine's group. Once `drain()` has closed the group (the engine has
  /// finished), nothing of the engine is left to start, but a late job (closing a device handed to a
  /// stopped engine) still runs, on a task of its own.
  func spawn(_ job: @escaping Job) {
    if case .terminated = running.yield(job) { Task { await job() } }
  }

  /// Runs `job` until it ends or `stop()` cancels it; after `stop()` it does not run at all.
  func spawnUntilStop(_ job: @escaping Job) {
    stoppable.yield(job)
  }

  /// Cancels every `spawnUntilStop` job and takes no more.
  func stop() {
    stoppable.finish()
    stoppableGroup.cancel()
  }

  /// Takes no more jobs and returns once every job has ended. Called when the engine has finished.
  func drain() async {
    running.finish()
    stoppable.finish()
    await stoppableGroup.value
    await runningGroup.value
  }
}
