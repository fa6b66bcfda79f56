// Test support: a real broker (Debian's /usr/sbin/mosquitto on a free loopback port, its config,
// password file and certificates written to a temp dir), child processes started with posix_spawn
// and reaped on threads of their own (never on Swift's cooperative pool), and a delegate that records
// what the connection reported, in order.

import Foundation
import Synchronization
import TestSupport
import Testing

@testable import MosquittoClient

#if canImport(Glibc)
  import Glibc
#endif

let mosquittoPath = "/usr/sbin/mosquitto"
let brokerInstalled = FileManager.default.isExecutableFile(atPath: mosquittoPath)

// MARK: - Child processes

enum Child {
  /// posix_spawn with an empty signal mask and default dispositions (a test thread's blocked mask
  /// would otherwise be inherited, and SIGTERM ignored); stdout and stderr go to `output`.
  static func spawn(_ path: String, _ arguments: [String], output: String = "/dev/null") throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for s in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD] { sigaddset(&defaults, s) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
    defer { for p in argv { free(p) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, path, &actions, &attributes, argv, environ)
    guard rc == 0 else { throw TestFailure("posix_spawn \(path): \(String(cString: strerror(rc)))") }
    return pid
  }

  /// Waits for `pid` on a thread of its own; SIGKILLs it after `timeLimit` seconds. The exit status.
  static func reap(_ pid: pid_t, timeLimit: Double = 30) async -> Int32 {
    await onOwnThread {
      let deadline = Date().addingTimeInterval(timeLimit)
      var raw: Int32 = 0
      var killed = false
      while waitpid(pid, &raw, WNOHANG) == 0 {
        if !killed && Date() > deadline {
          kill(pid, SIGKILL)
          killed = true
        }
        usleep(5000)
      }
      return (raw & 0x7F) == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F)
    }
  }

  /// Whether `pid` has ended (a zombie not yet reaped, or gone), without reaping it.
  static func hasExited(_ pid: pid_t) -> Bool {
    // Read to its end: a /proc file says its size is 0 and comes a page per read.
    guard let data = FileHandle(forReadingAtPath: "/proc/\(pid)/stat")?.readDataToEndOfFile() else {
      return true
    }
    let stat = String(decoding: data, as: UTF8.self)
    // The state follows the command's closing parenthesis: "Z" until the parent reaps it.
    guard let close = stat.lastIndex(of: ")") else { return true }
    return stat[close...].dropFirst(2).first == "Z"
  }

  /// Runs a program to its end: its exit status and its output (stdout and stderr).
  static func run(_ path: String, _ arguments: [String], timeLimit: Double = 30) async throws -> (
    status: Int32, output: String
  ) {
    let file = NSTemporaryDirectory() + "mqtt-child-\(UUID().uuidString).out"
    defer { unlink(file) }
    let pid = try spawn(path, arguments, output: file)
    let status = await reap(pid, timeLimit: timeLimit)
    let output = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
    return (status, output)
  }

  /// `run`, failing the test unless the program exits 0.
  @discardableResult
  static func check(_ path: String, _ arguments: [String]) async throws -> String {
    let (status, output) = try await run(path, arguments)
    guard status == 0 else { throw TestFailure("\(path) \(arguments) exited \(status): \(output)") }
    return output
  }
}

struct TestFailure: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// Runs `body`, which blocks, on a new thread of its own.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
  await withCheckedContinuation { continuation in
    let thread = Thread { continuation.resume(returning: body()) }
    thread.name = "mqtt-tests.blocking"
    thread.start()
  }
}

/// A loopback port nothing listens on right now.
func freePort() throws -> UInt16 {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  defer { close(fd) }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  address.sin_port = 0
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  let bound = withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
      guard bind(fd, pointer, length) == 0 else { return -1 }
      return getsockname(fd, pointer, &length)
    }
  }
  guard bound == 0 else { throw TestFailure("no free port: \(String(cString: strerror(errno)))") }
  return UInt16(bigEndian: address.sin_port)
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
func accepts(_ port: UInt16) -> Bool {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  defer { close(fd) }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  address.sin_port = port.bigEndian
  return withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
    }
  }
}

/// Waits (on a thread of its own) until 127.0.0.1:`port` accepts connections, at most `seconds`
/// (generous: the machine is shared); never a fixed time. Gives up early, with the reason, once
/// `exited` says the process that was to listen has ended.
func waitUntilAccepting(
  _ port: UInt16, seconds: Double = 120, exited: @escaping @Sendable () -> String? = { nil }
) async throws {
  let failure = await onOwnThread { () -> String? in
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
      if accepts(port) { return nil }
      if let reason = exited() { return reason }
      usleep(20_000)
    }
    return "nothing accepts connections on 127.0.0.1:\(port) after \(Int(seconds)) s"
  }
  if let failure { throw TestFailure(failure) }
}

// MARK: - Certificates

/// A CA and a server certificate it signed (for 127.0.0.1 and localhost), made by openssl.
struct Certificates {
  let caFile: String
  let serverCert: String
  let serverKey: String

  static func make(in directory: String, name: String = "ca") async throws -> Certificates {
    let openssl = "/usr/bin/openssl"
    let ca = "\(directory)/\(name).pem"
    let caKey = "\(directory)/\(name).key"
    let key = "\(directory)/\(name)-server.key"
    let csr = "\(directory)/\(name)-server.csr"
    let cert = "\(directory)/\(name)-server.pem"
    let ext = "\(directory)/\(name)-server.ext"
    try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(toFile: ext, atomically: true, encoding: .utf8)
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    try await Child.check(
      openssl,
      ["req", "-x509"] + ec + ["-keyout", caKey, "-out", ca, "-days", "2", "-subj", "/CN=\(name) test CA"])
    try await Child.check(openssl, ["req"] + ec + ["-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1"])
    try await Child.check(
      openssl,
      [
        "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", caKey, "-CAcreateserial", "-out", cert, "-days", "2",
        "-extfile", ext,
      ])
    return Certificates(caFile: ca, serverCert: cert, serverKey: key)
  }
}

// MARK: - The broker

/// Debian's mosquitto with a config of the test's own: a plain listener, and a TLS listener when
/// certificates are given; anonymous clients, or only the users of `passwords`. Ready (every listener
/// accepts connections) once the initializer and `start` return.
final class Broker: Sendable {
  let directory: String
  let port: UInt16
  let tlsPort: UInt16
  let config: String
  let log: String
  private let tls: Bool
  private let pid = Mutex<pid_t?>(nil)

  init(passwords: [String: String] = [:], certificates: Certificates? = nil, directory: String) async throws {
    self.directory = directory
    config = "\(directory)/mosquitto.conf"
    log = "\(directory)/mosquitto.log"
    tls = certificates != nil
    var head = ["per_listener_settings false", "persistence false", "log_type all"]
    // Started as root, mosquitto switches to the user "mosquitto", who cannot read our temp dir.
    if geteuid() == 0 { head.append("user root") }
    if passwords.isEmpty {
      head.append("allow_anonymous true")
    } else {
      let file = "\(directory)/passwords"
      for (user, password) in passwords {
        let create = FileManager.default.fileExists(atPath: file) ? [] : ["-c"]
        try await Child.check("/usr/bin/mosquitto_passwd", create + ["-b", file, user, password])
      }
      head += ["allow_anonymous false", "password_file \(file)"]
    }
    // A port free a moment ago may be taken (by a parallel test) before mosquitto binds it; mosquitto
    // then exits, and the start is tried again on other ports.
    var attempt = 1
    while true {
      let plain = try freePort()
      var secure = try freePort()
      while secure == plain { secure = try freePort() }
      var lines = head + ["listener \(plain) 127.0.0.1"]
      if let certificates {
        lines += [
          "listener \(secure) 127.0.0.1", "cafile \(certificates.caFile)",
          "certfile \(certificates.serverCert)",
          "keyfile \(certificates.serverKey)",
        ]
      }
      try (lines.joined(separator: "\n") + "\n").write(toFile: config, atomically: true, encoding: .utf8)
      let outcome = try await Self.launch(
        config: config, log: log, ports: certificates == nil ? [plain] : [plain, secure])
      switch outcome {
      case .ready(let child):
        port = plain
        tlsPort = secure
        pid.withLock { $0 = child }
        return
      case .exited(_, let output) where attempt < 5 && output.contains("Address already in use"):
        attempt += 1
      case .exited(let status, let output):
        throw TestFailure("mosquitto exited (\(status)) before it accepted connections: \(output)")
      }
    }
  }

  /// Starts it again on the same ports (after `stop`), ready when this returns.
  func start() async throws {
    let outcome = try await Self.launch(config: config, log: log, ports: tls ? [port, tlsPort] : [port])
    switch outcome {
    case .ready(let child): pid.withLock { $0 = child }
    case .exited(let status, let output):
      throw TestFailure("mosquitto exited (\(status)) before it accepted connections: \(output)")
    }
  }

  private enum Launch {
    case ready(pid_t)
    case exited(status: Int32, log: String)
  }

  /// Spawns mosquitto and waits until each of `ports` accepts connections, or until it has exited.
  private static func launch(config: String, log: String, ports: [UInt16]) async throws -> Launch {
    let child = try Child.spawn(mosquittoPath, ["-c", config], output: log)
    do {
      for port in ports {
        try await waitUntilAccepting(port) { Child.hasExited(child) ? "mosquitto exited" : nil }
      }
      return .ready(child)
    } catch {
      guard Child.hasExited(child) else {
        kill(child, SIGKILL)
        _ = await Child.reap(child, timeLimit: 10)
        throw TestFailure("\(error); mosquitto's log: \(Self.text(of: log))")
      }
      let status = await Child.reap(child, timeLimit: 10)
      return .exited(status: status, log: Self.text(of: log))
    }
  }

  private static func text(of file: String) -> String {
    (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
  }

  /// SIGTERM, and wait for it to end.
  func stop() async {
    guard
      let child = pid.withLock({ state -> pid_t? in
        defer { state = nil }; return state
      })
    else { return }
    kill(child, SIGTERM)
    _ = await Child.reap(child, timeLimit: 10)
  }

  /// Sends `signal` to the running broker (SIGSTOP freezes it: no acknowledgement comes until SIGCONT).
  func signal(_ number: Int32) {
    if let child = pid.withLock({ $0 }) { kill(child, number) }
  }

  var logText: String { Self.text(of: log) }
}

/// A broker for the body, stopped and its directory removed afterwards.
func withBroker<T>(
  passwords: [String: String] = [:], tls: Bool = false,
  _ body: (Broker, Certificates?, String) async throws -> T
) async throws -> T {
  let temporary = TemporaryDirectory("mqtt")
  let directory = temporary.path
  let certificates = tls ? try await Certificates.make(in: directory) : nil
  let broker = try await Broker(passwords: passwords, certificates: certificates, directory: directory)
  do {
    let result = try await body(broker, certificates, directory)
    await broker.stop()
    return result
  } catch {
    await broker.stop()
    throw error
  }
}

// MARK: - Recording delegate

enum Event: Sendable, Equatable {
  case connected
  case disconnected(MQTTError?, willRetry: Bool)
  case acknowledged(Int32)
  case received(MQTTMessage)
}

/// Records every callback; runs `onConnected` (e.g. to subscribe) in `connected()`.
final class Recorder: MQTTConnectionDelegate {
  let events = Mutex<[Event]>([])
  let onConnected = Mutex<(@Sendable () -> Void)?>(nil)

  func connected() {
    events.withLock { $0.append(.connected) }
    onConnected.withLock { $0 }?()
  }
  func disconnected(_ error: MQTTError?, willRetry: Bool) {
    events.withLock { $0.append(.disconnected(error, willRetry: willRetry)) }
  }
  func acknowledged(_ messageID: Int32) { events.withLock { $0.append(.acknowledged(messageID)) } }
  func received(_ message: MQTTMessage) { events.withLock { $0.append(.received(message)) } }

  var all: [Event] { events.withLock { $0 } }
  var acknowledgedIDs: [Int32] {
    all.compactMap { if case .acknowledged(let id) = $0 { id } else { nil } }
  }
  var receivedMessages: [MQTTMessage] {
    all.compactMap { if case .received(let message) = $0 { message } else { nil } }
  }
  var connections: Int { all.filter { $0 == .connected }.count }

  /// Waits until `condition` holds of the events (`waitUntil`); throws with the events seen otherwise.
  func wait(
    _ what: String, seconds: Double = 120, until condition: @Sendable ([Event]) -> Bool
  ) async throws {
    try await waitUntil("\(what); events: \(all)", seconds: seconds) { condition(all) }
  }
}

/// Waits until the connection's network thread has ended, at most `seconds`.
func waitForLoopEnd(_ connection: MQTTConnection, seconds: Double = 120) async throws {
  try await waitUntil("the end of the MQTT network thread", seconds: seconds) { connection.core.loopEnded }
}

/// Polls `condition` (suspending, never blocking a thread) until it holds, at most `seconds`
/// (generous: the machine is shared); throws "timed out waiting for `what`" otherwise.
func waitUntil(
  _ what: @autoclosure () -> String, seconds: Double = 120, _ condition: () -> Bool
) async throws {
  let deadline = ContinuousClock.now + .seconds(seconds)
  while !condition() {
    guard ContinuousClock.now < deadline else { throw TestFailure("timed out waiting for \(what())") }
    try await Task.sleep(for: .milliseconds(20))
  }
}

func endpoint(_ broker: Broker, id: String = "client-\(UUID().uuidString.prefix(8))") -> MQTTEndpoint {
  MQTTEndpoint(host: "127.0.0.1", port: broker.port, clientID: id, keepAlive: 10)
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A connected MQTTConnection subscribed to `filter`: the subscription is known to be active once
/// the connection received its own marker message on `markerTopic` (the broker handles one client's
/// SUBSCRIBE before its later PUBLISH).
func watcher(_ broker: Broker, filter: String, markerTopic: String) async throws -> (MQTTConnection, Recorder)
{
  let recorder = Recorder()
  let connection = try MQTTConnection(
    endpoint: endpoint(broker, id: "watcher"), will: nil, delegate: recorder)
  recorder.onConnected.withLock { [connection] in
    $0 = { connection.subscribe(filter, qos: 1) }
  }
  connection.start()
  try await recorder.wait("the watcher's connection") { $0.contains(.connected) }
  #expect(
    connection.publish(MQTTMessage(topic: markerTopic, payload: bytes("ready"), qos: 1, retain: false)) != nil
  )
  try await recorder.wait("the watcher's marker") { events in
    events.contains { if case .received(let m) = $0 { m.topic == markerTopic } else { false } }
  }
  return (connection, recorder)
}
