import CaptureContract
import CaptureCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The host's verdict on a decoded code (the SDK's App confirmation mode, docs/capture-sdk.md §7.4).
enum HostVerdict: String, Sendable { case good, bad }

/// Who gives the verdict: a command run per code (`--confirm CMD`) or a co-process answering on
/// stdin (`--confirm-stdin`). The device half — telling the scanner — is the same for both
/// (ListenCommand.confirmation).
protocol HostJudge: Sendable {
  func verdict(_ event: Event, _ data: DecodedData) async -> HostVerdict
  /// listen is stopping (signal, --timeout, a broken --output): stop waiting for verdicts.
  func stop()
}

/// `listen --confirm CMD`: the host acknowledgement of the SDK's App confirmation mode
/// (DataConfirmationMode.app, docs/capture-sdk.md §7.4). CMD runs once per decoded code with the data on
/// its stdin and the event as JSON in CAPTURE_EVENT; exit 0 is a good read, anything else (or running
/// past the time limit) a bad one. The verdict goes to the device as DataConfirmationDevice (good =
/// green LED, good beep, good rumble = 0x15; bad = 0x2A) where the device can take it.
struct ConfirmCommand: HostJudge {
  typealias Verdict = HostVerdict
  let command: String
  let timeLimit: Duration
  /// The commands running now, so `stop` can end them.
  private let running = RunningCommands()

  init(command: String, timeLimit: Duration) {
    self.command = command
    self.timeLimit = timeLimit
  }

  func verdict(_ event: Event, _ data: DecodedData) async -> HostVerdict {
    await run(data: data.bytes, eventJSON: Render.event(event).serialized)
  }

  /// listen is stopping: a running command is killed (its code is bad) rather than waited out, and
  /// none is started after.
  func stop() { running.stop() }

  /// Runs the command; its stdout goes to our stderr so it can never corrupt the event stream. The
  /// wait for it blocks in waitid(2) on the blocking executor, never on the cooperative pool; a timer
  /// task kills its process group when the time limit passes, which ends that wait.
  func run(data: [UInt8], eventJSON: String) async -> Verdict {
    guard !running.isStopped, let child = spawn(data: data, eventJSON: eventJSON) else { return .bad }
    // A stop that came between the check and the spawn kills it at once.
    running.add(child)
    let limit = timeLimit
    let timer = Task {
      do { try await Task.sleep(for: limit) } catch { return }
      child.kill()
    }
    let status = await BlockingExecutor.shared.run { _ in child.wait() }
    timer.cancel()
    running.remove(child)
    guard let status, !child.wasKilled else { return .bad }
    // WIFEXITED / WEXITSTATUS are macros: exited normally when the low 7 bits are 0.
    return (status & 0x7F) == 0 && ((status >> 8) & 0xFF) == 0 ? .good : .bad
  }

  /// Starts `/bin/sh -c COMMAND` with the data on its stdin; nil when it cannot be started.
  private func spawn(data: [UInt8], eventJSON: String) -> ConfirmChild? {
    var input: [Int32] = [-1, -1]
    guard pipe(&input) == 0 else { return nil }
    // Close-on-exec on both ends: the child gets its stdin through dup2 only, and a command spawned
    // concurrently never holds our pipe open.
    for fd in input { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, input[0], 0)
    posix_spawn_file_actions_adddup2(&actions, 2, 1)

    var environment: [String] = []
    var entry = environ
    while let pointer = entry.pointee {
      let text = String(cString: pointer)
      if !text.hasPrefix("CAPTURE_EVENT=") { environment.append(text) }
      entry += 1
    }
    environment.append("CAPTURE_EVENT=" + eventJSON)
    // ChildProcess: no inherited blocked signals or ignored SIGPIPE, and a process group of its own
    // so a timed-out command is killed with everything it started.
    let spawned = ChildProcess.spawn("/bin/sh", ["-c", command], environment: environment, actions: &actions)
    close(input[0])
    guard case .success(let pid) = spawned else {
      close(input[1])
      return nil
    }
    // A command that does not read its stdin must not block us: write what fits, then close.
    _ = fcntl(input[1], F_SETFL, fcntl(input[1], F_GETFL) | O_NONBLOCK)
    _ = data.withUnsafeBytes { write(input[1], $0.baseAddress, $0.count) }
    close(input[1])
    return ConfirmChild(pid: pid)
  }
}

/// The `--confirm` commands running now (one at a time in practice; a set so nothing assumes it).
final class RunningCommands: Sendable {
  private let state = Mutex((children: [pid_t: ConfirmChild](), stopped: false))

  var isStopped: Bool { state.withLock { $0.stopped } }

  /// Registers a started command; one started after `stop` is killed at once.
  func add(_ child: ConfirmChild) {
    let late = state.withLock { s in
      if !s.stopped { s.children[child.pid] = child }
      return s.stopped
    }
    if late { child.kill() }
  }

  func remove(_ child: ConfirmChild) { _ = state.withLock { $0.children.removeValue(forKey: child.pid) } }

  /// Kills every running command and refuses new ones.
  func stop() {
    let children = state.withLock { s in
      s.stopped = true
      return Array(s.children.values)
    }
    for child in children { child.kill() }
  }
}

/// A spawned `--confirm` command, leader of its own process group. The exit is waited for without
/// reaping (waitid WNOWAIT), then reaped under the same lock `kill` takes: until it is reaped its pid,
/// and so its process group id, cannot be given to another process, so a late timer never kills a
/// stranger's group.
final class ConfirmChild: Sendable {
  let pid: pid_t
  private let state = Mutex((reaped: false, killed: false))

  init(pid: pid_t) { self.pid = pid }

  /// True when `kill` reached the command before it was reaped (it ran past its time limit).
  var wasKilled: Bool { state.withLock { $0.killed } }

  /// SIGKILL to the command's process group, everything it started with it; nothing once reaped.
  func kill() {
    state.withLock { s in
      guard !s.reaped else { return }
      s.killed = true
      _ = Glibc.kill(-pid, SIGKILL)
    }
  }

  /// Blocks until the command has exited and returns its wait status; nil when it cannot be waited
  /// for (ECHILD). Blocking: call it on the `BlockingExecutor`.
  func wait() -> Int32? {
    var info = siginfo_t()
    while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 {
      if errno != EINTR { return nil }
    }
    return state.withLock { s in
      var status: Int32 = 0
      var reaped: pid_t
      repeat { reaped = waitpid(pid, &status, 0) } while reaped < 0 && errno == EINTR
      s.reaped = true
      return reaped == pid ? status : nil
    }
  }
}
