// Hostile descriptors and files: a stdout whose reader is gone, full or closed; a closed stdin; a
// FIFO or an endless device where a file is expected. No command dies by SIGPIPE, hangs, or loses
// what it printed with exit 0.

import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite("hardening: descriptors, pipes, FIFOs and bounds")
struct HardeningIOTests {
  /// How stdout (or stdin) is set up before capture is exec'd.
  enum Descriptor: String {
    /// A pipe whose read end is already closed: the first write is EPIPE (or SIGPIPE).
    case brokenPipe = "broken"
    /// /dev/full: every write fails with ENOSPC.
    case full
    /// fd 1 closed (`>&-`).
    case closedStdout = "closed"
    /// fd 0 closed (`<&-`).
    case closedStdin = "stdin-closed"
  }

  /// A tiny launcher: sets up the descriptor, puts SIGPIPE back to its default action (Python
  /// ignores it, and an ignored signal stays ignored across exec), then execs capture, so the
  /// outcome's status or signal is capture's own.
  static let launcher = """
    import os, signal, sys
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    mode = sys.argv[1]
    if mode == "broken":
        r, w = os.pipe(); os.close(r); os.dup2(w, 1); os.close(w)
    elif mode == "full":
        fd = os.open("/dev/full", os.O_WRONLY); os.dup2(fd, 1); os.close(fd)
    elif mode == "closed":
        os.close(1)
    elif mode == "stdin-closed":
        os.close(0)
    os.execv(sys.argv[2], sys.argv[2:])
    """

  static let python = "/usr/bin/python3"
  static var hasPython: Bool { access(python, X_OK) == 0 }

  static func run(
    _ sandbox: Sandbox, _ descriptor: Descriptor, _ arguments: [String], timeLimit: Double = 20
  ) async throws -> Outcome {
    let script = try sandbox.write("launcher.py", launcher)
    let outcome = try await Runner.run(
      python, [script, descriptor.rawValue, try Product.path()] + arguments, environment: sandbox.environment,
      directory: sandbox.root, timeLimit: timeLimit)
    if outcome.timedOut { Issue.record("capture \(arguments) was killed after \(timeLimit) s") }
    return outcome
  }

  /// Whether `pid` has a handler for `signal` (the SigCgt mask of /proc/PID/status).
  static func catches(_ pid: pid_t, _ signal: Int32) -> Bool {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
      let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigCgt:") }),
      let mask = UInt64(line.dropFirst("SigCgt:".count).trimmingCharacters(in: .whitespaces), radix: 16)
    else { return false }
    return mask & (1 << UInt64(signal - 1)) != 0
  }

  /// Sends `number` to the child the moment it catches it (its handler, the first thing capture's main
  /// installs): the earliest a process manager can stop capture and expect it to act on it. `caught`
  /// records whether the handler was seen before the signal went (false: the deadline ran out).
  static func signalOnceCaught(_ number: Int32, caught: Shared<Bool?> = Shared(nil)) -> Interaction {
    Interaction(
      holdStdinOpen: true,
      started: { pid in
        detachThread {
          let deadline = Runner.monotonicSeconds() + 60
          while !catches(pid, number) && Runner.monotonicSeconds() < deadline { sched_yield() }
          caught.update { $0 = catches(pid, number) }
          kill(pid, number)
        }
      })
  }

  static let writeFailed = "capture: ESKT_UNABLEWRITEFILE (-33): cannot write standard output: "

  /// A profile `set --from` takes for SocketCam.
  static let profile = #"{"properties":[{"name":"friendly-name","value":"Front desk"}]}"#

  // MARK: - SIGPIPE

  @Test(
    "a reader that went away: list, get, get --list, --help, --version, set --dry-run exit 0, not by SIGPIPE",
    .enabled(if: hasPython))
  func brokenPipeKeepsSuccess() async throws {
    let sandbox = try Sandbox()
    try sandbox.write("profile.json", Self.profile)
    let commands: [[String]] = [
      ["list"], ["--json", "list"], ["get", "socketcam", "friendly-name"], ["get", "--list"], ["--help"],
      ["--version"], ["list", "--help"], ["set", "socketcam", "--from", "profile.json", "--dry-run"],
    ]
    for arguments in commands {
      let outcome = try await Self.run(sandbox, .brokenPipe, arguments)
      #expect(outcome.signal == nil, "\(arguments): \(outcome)")
      #expect(outcome.status == 0, "\(arguments): \(outcome)")
      // Quiet: the reader is gone, which is nobody's error.
      #expect(outcome.stderr.isEmpty, "\(arguments): \(outcome)")
    }
  }

  @Test(
    "a reader that went away: --json get socketcam nosuch keeps its own 18, its error line still on stderr",
    .enabled(if: hasPython))
  func brokenPipeKeepsFailure() async throws {
    let sandbox = try Sandbox()
    let outcome = try await Self.run(sandbox, .brokenPipe, ["--json", "get", "socketcam", "nosuch"])
    #expect(outcome.signal == nil, "\(outcome)")
    #expect(outcome.status == 18, "\(outcome)")
    #expect(outcome.errLines.first?.hasPrefix(Shape.invalidParameterPrefix) == true, "\(outcome)")
    #expect(!outcome.err.contains("UNABLEWRITEFILE"), "\(outcome)")
  }

  @Test(
    "a reader that went away: listen and trigger end quietly with their own status", .enabled(if: hasPython))
  func brokenPipeStreams() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    _ = try ListenTests.scans(sandbox, images)
    try sandbox.copy(images.qr.path, to: "qr.png")
    for arguments in [
      ["listen", "socketcam", "--dir", "scans"], ["--json", "listen", "socketcam", "--dir", "scans"],
      ["trigger", "socketcam", "start", "--image", "qr.png"],
    ] {
      let outcome = try await Self.run(sandbox, .brokenPipe, arguments)
      #expect(outcome.signal == nil, "\(arguments): \(outcome)")
      #expect(outcome.status == 0, "\(arguments): \(outcome)")
      #expect(outcome.stderr.isEmpty, "\(arguments): \(outcome)")
    }
  }

  // MARK: - failed writes

  @Test(
    "stdout on /dev/full or closed: list, get, get --list, --version, set --dry-run exit 33 with one stderr line",
    .enabled(if: hasPython))
  func failedWritesAreExit33() async throws {
    let sandbox = try Sandbox()
    try sandbox.write("profile.json", Self.profile)
    let commands: [[String]] = [
      ["list"], ["--json", "list"], ["get", "socketcam", "friendly-name"],
      ["--json", "get", "socketcam", "--all"],
      ["get", "--list"], ["--version"], ["--help"],
      ["set", "socketcam", "--from", "profile.json", "--dry-run"],
    ]
    for (descriptor, reason) in [
      (Descriptor.full, "No space left on device"), (.closedStdout, "Bad file descriptor"),
    ] {
      for arguments in commands {
        let outcome = try await Self.run(sandbox, descriptor, arguments)
        #expect(outcome.signal == nil, "\(descriptor) \(arguments): \(outcome)")
        #expect(outcome.status == 33, "\(descriptor) \(arguments): \(outcome)")
        #expect(outcome.errLines == [Self.writeFailed + reason], "\(descriptor) \(arguments): \(outcome)")
      }
    }
    // The dry run wrote nothing: the state still has no friendly name.
    let name = try await sandbox.capture("get", "socketcam", "friendly-name")
    #expect(name.outLines != ["Front desk"], "\(name)")
  }

  @Test(
    "stdout on /dev/full or closed: listen and trigger stop with 33 and one error line; codes are not lost silently",
    .enabled(if: hasPython))
  func failedWritesStopStreams() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    _ = try ListenTests.scans(sandbox, images)
    try sandbox.copy(images.qr.path, to: "qr.png")
    for (descriptor, reason) in [
      (Descriptor.full, "No space left on device"), (.closedStdout, "Bad file descriptor"),
    ] {
      for arguments in [
        ["listen", "socketcam", "--dir", "scans"], ["--json", "listen", "socketcam", "--dir", "scans"],
        ["trigger", "socketcam", "start", "--image", "qr.png"],
      ] {
        let outcome = try await Self.run(sandbox, descriptor, arguments)
        #expect(outcome.signal == nil, "\(descriptor) \(arguments): \(outcome)")
        #expect(outcome.status == 33, "\(descriptor) \(arguments): \(outcome)")
        #expect(
          outcome.errLines.first == Self.writeFailed + reason, "\(descriptor) \(arguments): \(outcome)")
        #expect(
          outcome.errLines.filter { $0.hasPrefix(Self.writeFailed) }.count == 1,
          "\(descriptor) \(arguments): \(outcome)")
      }
    }
  }

  @Test("a command that fails on its own keeps its status when stdout is full too", .enabled(if: hasPython))
  func ownFailureWins() async throws {
    let sandbox = try Sandbox()
    let outcome = try await Self.run(sandbox, .full, ["--json", "get", "socketcam", "nosuch"])
    #expect(outcome.status == 18, "\(outcome)")
    #expect(outcome.errLines.first?.hasPrefix(Shape.invalidParameterPrefix) == true, "\(outcome)")
    #expect(outcome.errLines.last == Self.writeFailed + "No space left on device", "\(outcome)")
  }

  // MARK: - closed stdin

  @Test(
    "stdin closed: --image - behaves as with </dev/null (an empty input, at once), never an internal descriptor",
    .enabled(if: hasPython))
  func closedStdinIsEmpty() async throws {
    let sandbox = try Sandbox()
    let arguments = ["trigger", "socketcam", "start", "--image", "-"]
    let closed = try await Self.run(sandbox, .closedStdin, arguments, timeLimit: 120)
    let empty = try await sandbox.capture(arguments, timeLimit: 120)
    #expect(!closed.timedOut, "\(closed)")
    #expect(empty.status == 34, "\(empty)")
    #expect(closed.status == empty.status, "\(closed)")
    #expect(closed.errLines == empty.errLines, "\(closed)")
  }

  // MARK: - the state file

  @Test("a FIFO in place of the state file: --timeout 1s list fails at once with 34 and leaves it there")
  func stateFileFIFO() async throws {
    let sandbox = try Sandbox()
    _ = try sandbox.makeDirectory("state/capture")
    #expect(mkfifo(sandbox.statePath, 0o600) == 0)
    let outcome = try await sandbox.capture(["--timeout", "1s", "list"], timeLimit: 120)
    #expect(!outcome.timedOut, "\(outcome)")
    #expect(outcome.status == 34, "\(outcome)")
    #expect(!outcome.timedOut, "\(outcome)")
    #expect(
      outcome.errLines == [
        "capture: ESKT_UNABLEREADFILE (-34): cannot read \(sandbox.statePath): it is a FIFO or pipe, not a regular file"
      ], "\(outcome)")
    var info = stat()
    #expect(lstat(sandbox.statePath, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO)
  }

  @Test("the state file as a link to /dev/zero is refused at once, and never read")
  func stateFileDevice() async throws {
    let sandbox = try Sandbox()
    _ = try sandbox.makeDirectory("state/capture")
    #expect(symlink("/dev/zero", sandbox.statePath) == 0)
    let outcome = try await sandbox.capture(["list"], timeLimit: 120)
    #expect(outcome.status == 34, "\(outcome)")
    // Refused as the link it is (O_NOFOLLOW), before the device is even opened.
    #expect(outcome.err.contains("it is a symbolic link, not a regular file"), "\(outcome)")
  }

  @Test("a state file larger than 8 MiB is refused from its size, left as it is (34)")
  func stateFileTooLarge() async throws {
    let sandbox = try Sandbox()
    _ = try sandbox.makeDirectory("state/capture")
    let fd = open(sandbox.statePath, O_WRONLY | O_CREAT, 0o600)
    #expect(fd >= 0)
    // Sparse: 1 GiB of zeros without writing them.
    #expect(ftruncate(fd, 1 << 30) == 0)
    close(fd)
    let outcome = try await sandbox.capture(["list"], timeLimit: 120)
    #expect(outcome.status == 34, "\(outcome)")
    #expect(!outcome.timedOut, "\(outcome)")
    #expect(outcome.err.contains("larger than 8 MiB"), "\(outcome)")
    var info = stat()
    #expect(stat(sandbox.statePath, &info) == 0 && info.st_size == 1 << 30)
  }

  @Test(
    "listen's SIGHUP reload of a state file replaced by a FIFO warns and goes on; SIGTERM still ends it (0)")
  func reloadOfFIFOStateFile() async throws {
    let sandbox = try Sandbox()
    _ = try sandbox.makeDirectory("state/capture")
    // A remembered device that is absent: the service keeps trying it in the background.
    try sandbox.write(
      "state/capture/devices.json",
      #"{"schemaVersion":1,"devices":[{"id":"serial:\#(sandbox.path("absent"))","name":"x","type":0,"transport":"serial"}]}"#
    )
    let path = sandbox.statePath
    let watch = OutputWatch()
    let outcome = try await sandbox.capture(
      ["listen"], timeLimit: 120,
      interaction: Interaction(
        started: { pid in
          // Once listen has read the state file (it warns that the remembered device is absent) and
          // catches SIGHUP, swap the file for a FIFO, send SIGHUP, and SIGTERM once the reload has
          // said what it made of it.
          Task {
            await watch.waitForLine(.stderr, containing: "trying again in the background")
            await waitUntil("listen catching SIGHUP") { Self.catches(pid, SIGHUP) }
            unlink(path)
            mkfifo(path, 0o600)
            kill(pid, SIGHUP)
            await watch.waitForLine(.stderr, containing: "capture: SIGHUP: cannot read ")
            kill(pid, SIGTERM)
          }
        }, watch: watch))
    #expect(!outcome.timedOut, "\(outcome)")
    #expect(outcome.signal == nil, "\(outcome)")
    #expect(outcome.status == 0, "\(outcome)")
    #expect(
      outcome.errLines.contains {
        $0.hasPrefix("capture: SIGHUP: cannot read ")
          && $0.hasSuffix(
            ": it is a FIFO or pipe, not a regular file; still listening to the devices read before")
      }, "\(outcome)")
  }

  // MARK: - set --from

  @Test("set --from FIFO with a silent writer ends at --timeout (42), the dry run and the real run alike")
  func profileFIFOTimesOut() async throws {
    let sandbox = try Sandbox()
    let fifo = sandbox.path("profile.fifo")
    #expect(mkfifo(fifo, 0o600) == 0)
    // A writer that opens the FIFO and never writes: without it the read would wait for one.
    let writer = open(fifo, O_RDWR | O_NONBLOCK)
    defer { close(writer) }
    for extra in [["--dry-run"], []] {
      let outcome = try await sandbox.capture(
        ["--timeout", "1s", "set", "socketcam", "--from", "profile.fifo"] + extra, timeLimit: 120)
      #expect(!outcome.timedOut, "\(outcome)")
      #expect(outcome.status == 42, "\(outcome)")
      #expect(outcome.elapsed >= 0.9, "\(outcome)")
      #expect(
        outcome.errLines == [
          "capture: ESKT_REQUESTTIMEDOUT (-42): cannot open profile 'profile.fifo': no data before the --timeout ran out"
        ], "\(outcome)")
    }
  }

  @Test("set --from FIFO with no writer yet ends at --timeout too; SIGTERM without --timeout ends it")
  func profileFIFOWithoutWriter() async throws {
    let sandbox = try Sandbox()
    #expect(mkfifo(sandbox.path("profile.fifo"), 0o600) == 0)
    let timed = try await sandbox.capture(
      ["--timeout", "1s", "set", "socketcam", "--from", "profile.fifo", "--dry-run"], timeLimit: 120)
    #expect(timed.status == 42, "\(timed)")
    let signalled = try await sandbox.capture(
      ["set", "socketcam", "--from", "profile.fifo", "--dry-run"], timeLimit: 120,
      interaction: Interaction(signal: (SIGTERM, 0.5)))
    #expect(!signalled.timedOut, "\(signalled)")
    #expect(signalled.signal == SIGTERM, "\(signalled)")
  }

  @Test("set --from a FIFO that is written is applied as a file is; <(…) works the same way")
  func profileFromFIFO() async throws {
    let sandbox = try Sandbox()
    let fifo = sandbox.path("profile.fifo")
    #expect(mkfifo(fifo, 0o600) == 0)
    let profile = Self.profile
    // The writer comes once capture waits on the FIFO: until a reader has it open, opening it for
    // writing without blocking fails (ENXIO).
    let writer = Task {
      var fd: Int32 = -1
      await waitUntil("capture opening \(fifo) for reading") {
        fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        return fd >= 0
      }
      guard fd >= 0 else { return }
      _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
      _ = Array(profile.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
      close(fd)
    }
    let outcome = try await sandbox.capture(
      ["--timeout", "110s", "set", "socketcam", "--from", "profile.fifo"], timeLimit: 120)
    await writer.value
    #expect(outcome.status == 0, "\(outcome)")
    let name = try await sandbox.capture("get", "socketcam", "friendly-name")
    #expect(name.outLines == ["Front desk"], "\(name)")
  }

  @Test("set --from /dev/zero stops after 1 MiB with 34, in well under a second of reading")
  func profileFromEndlessDevice() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture(
      ["set", "socketcam", "--from", "/dev/zero", "--dry-run"], timeLimit: 120)
    #expect(!outcome.timedOut, "\(outcome)")
    #expect(outcome.status == 34, "\(outcome)")
    #expect(
      outcome.errLines == [
        "capture: ESKT_UNABLEREADFILE (-34): cannot open profile '/dev/zero': larger than 1 MiB, the most it may hold"
      ], "\(outcome)")
  }

  // MARK: - listen --output

  @Test("listen --output FIFO with no reader fails at once with 63, naming why")
  func outputFIFOWithoutReader() async throws {
    let sandbox = try Sandbox()
    #expect(mkfifo(sandbox.path("events.fifo"), 0o600) == 0)
    let outcome = try await sandbox.capture(
      ["--timeout", "1s", "listen", "socketcam", "--output", "events.fifo", "--dir", "."], timeLimit: 120)
    #expect(!outcome.timedOut, "\(outcome)")
    #expect(outcome.status == 63, "\(outcome)")
    #expect(!outcome.timedOut, "\(outcome)")
    #expect(
      outcome.errLines == [
        "capture: ESKT_FILENOTFOUND (-63): cannot open events.fifo: no process is reading it: No such device or address"
      ], "\(outcome)")
  }

  @Test("listen --output DIR is 64 and an over-long path 63, as documented, not 33")
  func outputPathErrors() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    _ = try ListenTests.scans(sandbox, images)
    _ = try sandbox.makeDirectory("logs")
    let directory = try await sandbox.capture("listen", "socketcam", "--dir", "scans", "--output", "logs")
    #expect(directory.status == 64, "\(directory)")
    #expect(
      directory.errLines.first?.hasPrefix("capture: ESKT_FILEACCESSDENIED (-64): cannot open logs") == true)
    let long = String(repeating: "x", count: 300) + ".log"
    let tooLong = try await sandbox.capture("listen", "socketcam", "--dir", "scans", "--output", long)
    #expect(tooLong.status == 63, "\(tooLong)")
    #expect(tooLong.errLines.first?.hasPrefix("capture: ESKT_FILENOTFOUND (-63): cannot open ") == true)
  }
}
