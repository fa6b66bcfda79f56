// Runs a program as a child process and collects what it did: stdout, stderr and exit status.
//
// Children are started with posix_spawn, never Foundation's Process: a test runs on a Dispatch or
// Swift-concurrency thread whose signal mask is blocked, and a child inheriting that mask ignores
// SIGTERM (swift-corelibs-foundation#4772). POSIX_SPAWN_SETSIGMASK gives the child an empty mask and
// POSIX_SPAWN_SETSIGDEF resets the dispositions the test process may have changed (SIGPIPE).

import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Extra things to do to a running child.
struct Interaction: Sendable {
  /// Keep the child's stdin open (after writing the input) until it exits, like a pipe from a
  /// producer that has not finished.
  var holdStdinOpen = false
  /// Send this signal this many seconds after the spawn.
  var signal: (number: Int32, after: Double)? = nil
  /// Play a co-process: called with each complete line the child writes to stdout, returns what to
  /// write to the child's stdin in reply ("" for nothing), or nil to close the child's stdin (end of
  /// file). Until then stdin stays open after the initial input.
  var answer: (@Sendable (String) -> String?)? = nil
  /// Called with the child's pid right after the spawn (a test that signals it at a moment of its
  /// choosing, e.g. SIGHUP once the state file changed).
  var started: (@Sendable (pid_t) -> Void)? = nil
  /// Sees every byte the child writes as it comes, for a test that waits for a line while the child
  /// runs.
  var watch: OutputWatch? = nil
  /// Bytes the test sends to the child's stdin while it runs, at moments of its choosing (a late
  /// answer once capture has given up waiting for it); stdin stays open as with `answer`.
  var feed: StdinFeed? = nil
}

extension Interaction {
  /// Plays the operator who stops a running command once it has printed what the test waits for:
  /// `number` goes to the child the first time `done` holds for its stdout lines so far. A test that
  /// waits for events this way needs no `--timeout` window, which a loaded machine can overrun.
  static func signal(_ number: Int32, once done: @escaping @Sendable ([String]) -> Bool) -> Interaction {
    let state = Mutex<(pid: pid_t, lines: [String], sent: Bool)>((0, [], false))
    return Interaction(
      holdStdinOpen: true,
      answer: { line in
        state.withLock { s in
          s.lines.append(line)
          if !s.sent, s.pid > 0, done(s.lines) {
            s.sent = true
            kill(s.pid, number)
          }
        }
        return ""
      },
      started: { child in state.withLock { $0.pid = child } })
  }
}

/// What a finished child did.
struct Outcome: Sendable, CustomStringConvertible {
  var status: Int32
  /// The signal that ended the child, if a signal did.
  var signal: Int32?
  var stdout: [UInt8]
  var stderr: [UInt8]
  /// The runner killed the child with SIGKILL because it ran past its time limit.
  var timedOut: Bool
  /// Seconds from spawn to exit.
  var elapsed: Double = 0
  /// Seconds from spawn to the first byte on stdout, if any came.
  var firstStdout: Double? = nil
  /// CPU seconds the child used (user + system, wait4's rusage): the work it did, which the load of
  /// the machine does not stretch as it stretches `elapsed`.
  var cpuSeconds: Double = 0

  var out: String { String(decoding: stdout, as: UTF8.self) }
  var err: String { String(decoding: stderr, as: UTF8.self) }
  /// stdout split on "\n", without the empty piece after the final newline.
  var outLines: [String] { Self.lines(out) }
  var errLines: [String] { Self.lines(err) }

  static func lines(_ text: String) -> [String] {
    var pieces = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    if pieces.last == "" { pieces.removeLast() }
    return pieces
  }

  var description: String {
    let how = signal.map { "signal \($0)" } ?? "exit \(status)"
    let after = String(format: "%.2f", elapsed)
    return
      "\(how) after \(after) s\(timedOut ? " (killed at the time limit)" : "")\n--- stdout ---\n\(out)--- stderr ---\n\(err)"
  }
}

enum RunnerError: Error, CustomStringConvertible {
  case spawn(String, Int32)
  case pipe(Int32)

  var description: String {
    switch self {
    case .spawn(let path, let code): "posix_spawn \(path): \(String(cString: strerror(code)))"
    case .pipe(let code): "pipe2: \(String(cString: strerror(code)))"
    }
  }
}

enum Runner {
  /// Ignore SIGPIPE once in the test process: a child that exits without reading its stdin must make
  /// our write fail with EPIPE, not kill the test runner.
  private static let ignoreSIGPIPE: Void = { signal(SIGPIPE, SIG_IGN) }()

  /// Runs `path` on a thread of its own (the wait blocks it) and returns its outcome.
  static func run(
    _ path: String, _ arguments: [String], environment: [String: String], stdin: [UInt8] = [],
    directory: String? = nil, timeLimit: Double = 120, interaction: Interaction = Interaction()
  ) async throws -> Outcome {
    try await onOwnThread {
      try runBlocking(
        path, arguments, environment: environment, stdin: stdin, directory: directory,
        timeLimit: timeLimit, interaction: interaction)
    }
  }

  static func runBlocking(
    _ path: String, _ arguments: [String], environment: [String: String], stdin input: [UInt8],
    directory: String?, timeLimit: Double, interaction: Interaction = Interaction()
  ) throws -> Outcome {
    _ = ignoreSIGPIPE
    // Every pipe end is close-on-exec, so a child started concurrently by another test never holds
    // our pipes open (which would keep us waiting for an EOF that never comes).
    func makePipe() throws -> (read: Int32, write: Int32) {
      var fds: [Int32] = [-1, -1]
      guard GNU.pipe2(&fds, O_CLOEXEC) == 0 else { throw RunnerError.pipe(errno) }
      return (fds[0], fds[1])
    }
    let inPipe = try makePipe()
    let outPipe = try makePipe()
    let errPipe = try makePipe()

    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    // dup2 onto 0/1/2 clears close-on-exec on the copies the child keeps.
    posix_spawn_file_actions_adddup2(&actions, inPipe.read, 0)
    posix_spawn_file_actions_adddup2(&actions, outPipe.write, 1)
    posix_spawn_file_actions_adddup2(&actions, errPipe.write, 2)
    if let directory { _ = GNU.addchdir(&actions, directory) }

    let start = monotonicSeconds()
    var pid: pid_t = 0
    let spawned = spawn(&pid, path, arguments, environment: environment, actions: &actions)
    close(inPipe.read)
    close(outPipe.write)
    close(errPipe.write)
    guard spawned == 0 else {
      close(inPipe.write)
      close(outPipe.read)
      close(errPipe.read)
      throw RunnerError.spawn(path, spawned)
    }
    interaction.started?(pid)

    // One poll loop feeds stdin and drains stdout and stderr together, so a child filling one pipe
    // while we wait on another never deadlocks.
    var stdinFD: Int32 = inPipe.write
    // Held open after the input is written; closed when the child is gone.
    var heldStdinFD: Int32 = -1
    // The initial input, then the co-process's replies as they are made.
    var input = input
    var written = 0
    // Stdin is closed once everything is written, unless a co-process answers (then when it says so).
    var closeWhenWritten = interaction.answer == nil && interaction.feed == nil
    var unansweredLine: [UInt8] = []
    func finishStdin() {
      if interaction.holdStdinOpen { heldStdinFD = stdinFD } else { close(stdinFD) }
      stdinFD = -1
    }
    _ = fcntl(stdinFD, F_SETFL, fcntl(stdinFD, F_GETFL) | O_NONBLOCK)
    if input.isEmpty && closeWhenWritten { finishStdin() }
    var outFD: Int32 = outPipe.read
    var errFD: Int32 = errPipe.read
    var stdout: [UInt8] = []
    var stderr: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    let deadline = start + timeLimit
    var timedOut = false
    var firstStdout: Double?
    var signalled = interaction.signal == nil

    while outFD >= 0 || errFD >= 0 {
      if let feed = interaction.feed, stdinFD >= 0 { input += feed.take() }
      var fds: [pollfd] = []
      if stdinFD >= 0 && written < input.count {
        fds.append(pollfd(fd: stdinFD, events: Int16(POLLOUT), revents: 0))
      }
      if outFD >= 0 { fds.append(pollfd(fd: outFD, events: Int16(POLLIN), revents: 0)) }
      if errFD >= 0 { fds.append(pollfd(fd: errFD, events: Int16(POLLIN), revents: 0)) }
      let now = monotonicSeconds()
      let remaining = deadline - now
      if remaining <= 0 && !timedOut {
        kill(pid, SIGKILL)
        timedOut = true
      }
      if !signalled, let (number, after) = interaction.signal, now - start >= after {
        kill(pid, number)
        signalled = true
      }
      // After the kill, keep draining: the pipes reach EOF once the child is gone.
      var wait = timedOut ? 1000 : Int32(max(1, min(remaining * 1000, 1000)))
      // A feed is looked at between polls: often enough that what it sends goes out at once.
      if interaction.feed != nil { wait = min(wait, 10) }
      if !signalled, let after = interaction.signal?.after {
        wait = min(wait, Int32(max(1, (start + after - now) * 1000)))
      }
      let ready = poll(&fds, nfds_t(fds.count), wait)
      if ready < 0 {
        if errno == EINTR { continue }
        break
      }
      for entry in fds where entry.revents != 0 {
        if entry.fd == stdinFD {
          let n = input.withUnsafeBytes { raw in
            write(stdinFD, raw.baseAddress! + written, raw.count - written)
          }
          if n > 0 { written += n }
          if written == input.count { interaction.feed?.caughtUp() }
          if n < 0 && (errno == EAGAIN || errno == EINTR) { continue }
          if n < 0 || (written == input.count && closeWhenWritten) { finishStdin() }
        } else {
          let n = buffer.withUnsafeMutableBytes { read(entry.fd, $0.baseAddress, $0.count) }
          if n > 0 {
            if entry.fd == outFD {
              if firstStdout == nil { firstStdout = monotonicSeconds() - start }
              stdout += buffer[0..<n]
              interaction.watch?.append(buffer[0..<n], to: .stdout)
              if let answer = interaction.answer {
                unansweredLine += buffer[0..<n]
                while let end = unansweredLine.firstIndex(of: 10) {
                  let line = String(decoding: unansweredLine[..<end], as: UTF8.self)
                  unansweredLine.removeSubrange(...end)
                  if let reply = answer(line) { input += Array(reply.utf8) } else { closeWhenWritten = true }
                }
                if stdinFD >= 0 && closeWhenWritten && written == input.count { finishStdin() }
              }
            } else {
              stderr += buffer[0..<n]
              interaction.watch?.append(buffer[0..<n], to: .stderr)
            }
          } else if n == 0 || (errno != EAGAIN && errno != EINTR) {
            close(entry.fd)
            if entry.fd == outFD { outFD = -1 } else { errFD = -1 }
          }
        }
      }
      if timedOut && ready == 0 { break }
    }
    if stdinFD >= 0 { close(stdinFD) }
    if heldStdinFD >= 0 { close(heldStdinFD) }
    if outFD >= 0 { close(outFD) }
    if errFD >= 0 { close(errFD) }

    // The child may close its output and live on: poll for its end so the time limit still holds.
    var usage = rusage()
    let (status, signalNumber, killed) = reap(pid, deadline: deadline, usage: &usage)
    return Outcome(
      status: status, signal: signalNumber, stdout: stdout, stderr: stderr, timedOut: timedOut || killed,
      elapsed: monotonicSeconds() - start, firstStdout: firstStdout,
      cpuSeconds: Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000)
  }

  /// posix_spawn with the attributes every child gets: an empty signal mask and default dispositions
  /// (see the comment at the top of this file). Returns posix_spawn's result.
  static func spawn(
    _ pid: inout pid_t, _ path: String, _ arguments: [String], environment: [String: String],
    actions: inout posix_spawn_file_actions_t
  ) -> Int32 {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var emptyMask = sigset_t()
    sigemptyset(&emptyMask)
    posix_spawnattr_setsigmask(&attributes, &emptyMask)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for s in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGALRM, SIGUSR1, SIGUSR2] {
      sigaddset(&defaults, s)
    }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

    let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
    let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
      for p in argv { free(p) }
      for p in envp { free(p) }
    }
    return posix_spawn(&pid, path, &actions, &attributes, argv, envp)
  }

  /// Waits for `pid` to end, SIGKILLing it once `deadline` (monotonic seconds) passes. Returns the
  /// exit status (128 + signal for a signalled child), the signal, and whether it had to be killed.
  static func reap(_ pid: pid_t, deadline: Double) -> (status: Int32, signal: Int32?, killed: Bool) {
    var usage = rusage()
    return reap(pid, deadline: deadline, usage: &usage)
  }

  /// `reap`, with the child's resource use (its CPU time) in `usage`.
  static func reap(_ pid: pid_t, deadline: Double, usage: inout rusage)
    -> (status: Int32, signal: Int32?, killed: Bool)
  {
    var raw: Int32 = 0
    var killed = false
    while true {
      let reaped = wait4(pid, &raw, WNOHANG, &usage)
      if reaped == pid { break }
      if reaped < 0 && errno != EINTR { break }
      if !killed && monotonicSeconds() > deadline {
        kill(pid, SIGKILL)
        killed = true
      }
      usleep(1000)
    }
    // The W* macros do not import into Swift: low 7 bits = terminating signal, next byte = exit code.
    let signalNumber = raw & 0x7F
    return (
      signalNumber == 0 ? (raw >> 8) & 0xFF : 128 + signalNumber, signalNumber == 0 ? nil : signalNumber,
      killed
    )
  }

  static func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
  }

  /// An executable found on PATH, or nil.
  static func which(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
    for dir in path.split(separator: ":") {
      let candidate = "\(dir)/\(name)"
      if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
  }
}

/// glibc functions Swift's Glibc module hides (they are declared only under _GNU_SOURCE), looked up
/// at run time.
enum GNU {
  typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
  typealias AddChdir =
    @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

  private static func symbol<T>(_ name: String, as type: T.Type) -> T {
    // RTLD_DEFAULT is the null handle on glibc.
    guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
      fatalError("glibc lacks \(name)")
    }
    return unsafeBitCast(address, to: type)
  }

  nonisolated(unsafe) private static let pipe2Function = symbol("pipe2", as: Pipe2.self)
  nonisolated(unsafe) private static let addChdirFunction = symbol(
    "posix_spawn_file_actions_addchdir_np", as: AddChdir.self)

  static func pipe2(_ fds: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32 { pipe2Function(fds, flags) }
  static func addchdir(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ path: String) -> Int32 {
    addChdirFunction(actions, path)
  }
}

/// Runs `body`, which blocks (waitpid, poll, a FIFO's open), on a new thread of its own and returns
/// what it returned. Neither the Swift-concurrency pool nor libdispatch's global queues may run it:
/// on Linux the cooperative pool IS libdispatch's global pool, one thread per core, so a wait there
/// stalls every task in the test process (the suites run concurrently in one process), and the
/// pool grows only when none of its threads is runnable, by about one thread a second.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    let thread = Thread { continuation.resume(with: Result { try body() }) }
    thread.name = "blackbox.blocking"
    thread.start()
  }
}

/// The non-throwing form of `onOwnThread`.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
  await withCheckedContinuation { continuation in
    let thread = Thread { continuation.resume(returning: body()) }
    thread.name = "blackbox.blocking"
    thread.start()
  }
}

/// Starts `body`, which blocks, on a new thread of its own and returns at once (see `onOwnThread`).
func detachThread(_ body: @escaping @Sendable () -> Void) {
  let thread = Thread(block: body)
  thread.name = "blackbox.blocking"
  thread.start()
}

/// What a test sends to a running child's stdin (Interaction.feed).
final class StdinFeed: Sendable {
  private let state = Mutex<(pending: [UInt8], taken: Int, delivered: Int)>(([], 0, 0))

  func send(_ text: String) { state.withLock { $0.pending += Array(text.utf8) } }

  /// Whether everything sent so far has been written to the child's stdin.
  var isDelivered: Bool { state.withLock { $0.pending.isEmpty && $0.delivered == $0.taken } }

  /// The runner takes what was sent since it last looked.
  func take() -> [UInt8] {
    state.withLock { state in
      defer { state.pending = [] }
      state.taken += state.pending.count
      return state.pending
    }
  }

  /// The runner has written all it took.
  func caughtUp() { state.withLock { $0.delivered = $0.taken } }
}
