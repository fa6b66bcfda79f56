// capture children started without waiting for one another (Runner.run waits for each): for tests of
// what many processes do to the state file at once, and of a writer killed at an arbitrary instant.
// Each child's stdout and stderr go to files in the sandbox, so nothing has to be drained meanwhile.

import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A running capture child.
struct StartedChild: Sendable {
  let pid: pid_t
  let arguments: [String]
  let stdoutPath: String
  let stderrPath: String
  /// Monotonic seconds at the spawn.
  let start: Double
}

extension Sandbox {
  /// Spawns capture with `arguments`; returns at once. `tag` names its output files.
  func start(_ arguments: [String], tag: String) throws -> StartedChild {
    let outPath = path("out-\(tag)")
    let errPath = path("err-\(tag)")
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    _ = GNU.addchdir(&actions, root)
    var pid: pid_t = 0
    let begin = Runner.monotonicSeconds()
    let spawned = Runner.spawn(
      &pid, try Product.path(), arguments, environment: environment, actions: &actions)
    guard spawned == 0 else { throw RunnerError.spawn(try Product.path(), spawned) }
    return StartedChild(
      pid: pid, arguments: arguments, stdoutPath: outPath, stderrPath: errPath, start: begin)
  }

  /// Waits for every child (on a thread of its own: the wait blocks it) and returns what
  /// each did, in order. A child still running after `timeLimit` seconds is killed and recorded.
  func finish(_ children: [StartedChild], timeLimit: Double = 60) async throws -> [Outcome] {
    let reaped = await onOwnThread {
      children.map { child in
        (child, Runner.reap(child.pid, deadline: child.start + timeLimit), Runner.monotonicSeconds())
      }
    }
    return try reaped.map { child, result, end in
      if result.killed {
        Issue.record("capture \(child.arguments.joined(separator: " ")) was killed after \(timeLimit) s")
      }
      return Outcome(
        status: result.status, signal: result.signal, stdout: try read(child.stdoutPath),
        stderr: try read(child.stderrPath), timedOut: result.killed, elapsed: end - child.start)
    }
  }
}
