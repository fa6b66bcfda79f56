import Glibc
import Synchronization
import TestSupport
import Testing

@testable import DBus

/// A private dbus-daemon for one test: a `<type>system</type>` bus with EXTERNAL authentication on a
/// fresh socket directory and a policy that allows everything (docs/bluez-testing.md).
///
/// Spawned with posix_spawn and an empty signal mask: a child started from a Swift-concurrency thread
/// otherwise inherits that thread's blocked signals (docs/swift-on-linux.md). Stopped with
/// SIGKILL.
final class TestBus: Sendable {
  let address: String
  let pid: pid_t
  /// The bus's socket and configuration; removed by `stop()` (and when the bus is released).
  private let scratch: TemporaryDirectory
  var directory: String { scratch.path }
  private let stopped = Atomic<Bool>(false)

  struct Failure: Error, CustomStringConvertible {
    var description: String
  }

  init() throws {
    scratch = TemporaryDirectory("dbus")
    let directory = scratch.path
    let config = """
      <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
       "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
      <busconfig>
        <type>system</type>
        <listen>unix:dir=\(directory)</listen>
        <auth>EXTERNAL</auth>
        <policy context="default">
          <allow user="*"/>
          <allow own="*"/>
          <allow send_type="method_call"/>
          <allow send_type="method_return"/>
          <allow send_type="error"/>
          <allow send_type="signal"/>
          <allow receive_type="method_call"/>
          <allow receive_type="method_return"/>
          <allow receive_type="error"/>
          <allow receive_type="signal"/>
        </policy>
        <limit name="max_replies_per_connection">10000</limit>
        <limit name="max_match_rules_per_connection">10000</limit>
      </busconfig>
      """
    let configPath = directory + "/bus.conf"
    try Self.write(config, to: configPath)

    var pipeFDs: [Int32] = [-1, -1]
    guard pipe(&pipeFDs) == 0 else { throw Failure(description: "pipe failed") }
    // Only the daemon's stdout (dup2 clears the flag on fd 1) should hold the write end; pipe2 is not
    // in Swift's Glibc module.
    for fd in pipeFDs { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    defer { close(pipeFDs[0]) }

    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
    // "Failed to set fd limit" and similar notices are not the test's business.
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)

    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var emptyMask = sigset_t()
    sigemptyset(&emptyMask)
    posix_spawnattr_setsigmask(&attributes, &emptyMask)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))

    let arguments = [
      "dbus-daemon", "--config-file=\(configPath)", "--nofork", "--print-address=1",
    ]
    var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var child: pid_t = 0
    let status = posix_spawn(&child, "/usr/bin/dbus-daemon", &actions, &attributes, &argv, environ)
    close(pipeFDs[1])
    guard status == 0 else { throw Failure(description: "posix_spawn dbus-daemon: \(status)") }
    pid = child

    // The first line on stdout is the address, printed once the bus listens.
    var line: [UInt8] = []
    var byte: UInt8 = 0
    while true {
      var descriptor = pollfd(fd: pipeFDs[0], events: Int16(POLLIN), revents: 0)
      guard poll(&descriptor, 1, 10_000) > 0 else {
        kill(child, SIGKILL)
        waitpid(child, nil, 0)
        throw Failure(description: "dbus-daemon printed no address")
      }
      let n = read(pipeFDs[0], &byte, 1)
      if n < 0 && errno == EINTR { continue }
      if n <= 0 || byte == UInt8(ascii: "\n") { break }
      line.append(byte)
    }
    address = String(decoding: line, as: UTF8.self)
    guard address.hasPrefix("unix:") else {
      kill(child, SIGKILL)
      waitpid(child, nil, 0)
      throw Failure(description: "unexpected dbus-daemon output '\(address)'")
    }
  }

  /// SIGKILL and reap; idempotent.
  func stop() {
    guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
    kill(pid, SIGKILL)
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    TemporaryDirectory.remove(directory)
  }

  deinit { stop() }

  private static func write(_ text: String, to path: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw Failure(description: "cannot create \(path)") }
    defer { close(fd) }
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
      let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
      if n < 0 {
        if errno == EINTR { continue }
        throw Failure(description: "cannot write \(path)")
      }
      offset += n
    }
  }

  /// A new connection to this bus.
  /// A new bus with two connections on it, the usual cast of a test: `server` exports, `client` calls.
  /// `close()` closes both and stops the bus (client first, as the tests' defers used to).
  struct Pair {
    let bus: TestBus
    let server: DBusConnection
    let client: DBusConnection
    func close() {
      client.close()
      server.close()
      bus.stop()
    }
  }

  static func pair() async throws -> Pair {
    let bus = try await started()
    do {
      return Pair(bus: bus, server: try bus.connect(), client: try bus.connect())
    } catch {
      bus.stop()
      throw error
    }
  }

  /// A new bus, started on a thread of its own: waiting for dbus-daemon to print its address blocks,
  /// and the cooperative pool (one thread per core, shared by every suite in this process) must not
  /// wait on it.
  static func started() async throws -> TestBus {
    final class Box: @unchecked Sendable {
      let body: () -> Void
      init(_ body: @escaping () -> Void) { self.body = body }
    }
    let result: Result<TestBus, any Error> = await withCheckedContinuation { continuation in
      let raw = Unmanaged.passRetained(Box { continuation.resume(returning: Result { try TestBus() }) })
        .toOpaque()
      var thread = pthread_t()
      let rc = pthread_create(
        &thread, nil,
        { raw in
          Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
          return nil
        }, raw)
      if rc == 0 {
        pthread_detach(thread)
      } else {
        Unmanaged<Box>.fromOpaque(raw).takeRetainedValue().body()
      }
    }
    return try result.get()
  }

  func connect() throws -> DBusConnection {
    try DBusConnection(address: address)
  }
}

struct TimedOut: Error, CustomStringConvertible {
  var description: String { "timed out" }
}

/// Runs `body`, failing with `TimedOut` after `seconds` so a broken test cannot hang the suite. A
/// guard against a hang, not a measure of speed: generous, so a loaded machine never trips it.
func withDeadline<T: Sendable>(
  _ seconds: Double = 120, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
  try await withThrowingTaskGroup(of: T.self) { group in
    group.addTask { try await body() }
    group.addTask {
      try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
      throw TimedOut()
    }
    defer { group.cancelAll() }
    return try await group.next()!
  }
}

/// Polls `condition` (suspending, never blocking a thread) until it holds, at most `seconds`
/// (generous: the machine is shared, and under `withDeadline`'s 20 s so its message is the one seen);
/// throws "timed out waiting for `what`" otherwise.
func waitUntil(
  _ what: @autoclosure () -> String, seconds: Double = 120, _ condition: () async throws -> Bool
) async throws {
  let deadline = ContinuousClock.now + .seconds(seconds)
  while try await !condition() {
    guard ContinuousClock.now < deadline else { throw WaitFailed(what: what()) }
    try await Task.sleep(for: .milliseconds(10))
  }
}

struct WaitFailed: Error, CustomStringConvertible {
  var what: String
  var description: String { "timed out waiting for \(what)" }
}

/// A count shared with a handler or a task, read by the test.
final class Counter: Sendable {
  private let count = Mutex(0)
  func increment() { count.withLock { $0 += 1 } }
  var value: Int { count.withLock { $0 } }
}

/// The first `count` signals of `stream`, or fewer when it finishes first.
func collect(_ stream: AsyncStream<DBusSignal>, count: Int) async -> [DBusSignal] {
  var signals: [DBusSignal] = []
  signals.reserveCapacity(count)
  guard count > 0 else { return signals }
  for await signal in stream {
    signals.append(signal)
    if signals.count == count { break }
  }
  return signals
}

/// Awaits `body` and returns the DBusError it throws (nil when it succeeds; any other error is a
/// test failure).
func dbusError<T>(_ body: () async throws -> T) async -> DBusError? {
  do {
    _ = try await body()
    return nil
  } catch let error as DBusError {
    return error
  } catch {
    Issue.record("not a DBusError: \(error)")
    return nil
  }
}

/// The same for synchronous code.
func dbusError<T>(_ body: () throws -> T) -> DBusError? {
  do {
    _ = try body()
    return nil
  } catch let error as DBusError {
    return error
  } catch {
    Issue.record("not a DBusError: \(error)")
    return nil
  }
}

/// Seconds since an arbitrary point, for measuring.
func monotonicSeconds() -> Double {
  var now = timespec()
  clock_gettime(CLOCK_MONOTONIC, &now)
  return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

extension DBusConnection {
  /// `call` with a reply timeout that guards against a hang, not speed: libdbus's default of 25 s is
  /// shorter than a saturated test process can take to run the server side's handler. A test of the
  /// timeout itself passes its own.
  func testCall(
    destination: String, path: String, interface: String, member: String, _ arguments: [DBusValue] = [],
    timeout: Duration = .seconds(120)
  ) async throws(DBusError) -> [DBusValue] {
    try await call(
      destination: destination, path: path, interface: interface, member: member, arguments, timeout: timeout)
  }
}
