// Test support: a handler that records every callback, raw POSIX socket clients, and a runner for
// /usr/bin/python3 WebSocket clients (python3-websockets). Blocking calls run on threads of their
// own, never on Swift's cooperative pool.

import CaptureCore
import Foundation
import Synchronization
import Testing

@testable import HTTPTransport

#if canImport(Glibc)
  import Glibc
#endif

/// What the server told the handler, in order.
enum Event: Sendable, Equatable {
  case request(id: UInt64, method: String, path: String)
  case upgrade(path: String)
  case opened(WebSocketID, path: String)
  case text(WebSocketID, String)
  case closed(WebSocketID)
}

/// Records callbacks; answers requests with `answer` (default: 200 echoing method, path and body).
final class Recorder: HTTPServerHandler {
  struct State {
    var events: [Event] = []
    var requests: [HTTPRequest] = []
    var upgrades: [HTTPRequest] = []
    var output: (any ServerOutput)?
  }
  let state = Mutex(State())
  let answer: @Sendable (HTTPRequest) -> HTTPResponse?
  let refuse: @Sendable (HTTPRequest) -> HTTPResponse?
  let echoText: Bool

  init(
    echoText: Bool = false,
    refuse: @escaping @Sendable (HTTPRequest) -> HTTPResponse? = { _ in nil },
    answer: @escaping @Sendable (HTTPRequest) -> HTTPResponse? = Recorder.echo
  ) {
    self.echoText = echoText
    self.refuse = refuse
    self.answer = answer
  }

  static let echo: @Sendable (HTTPRequest) -> HTTPResponse? = { request in
    HTTPResponse(
      status: 200, headers: [("X-Method", request.method), ("X-Path", request.path)],
      contentType: "application/octet-stream", body: request.body)
  }

  var output: (any ServerOutput)? { state.withLock { $0.output } }
  func attach(_ output: any ServerOutput) { state.withLock { $0.output = output } }

  func request(_ request: HTTPRequest) {
    let output = state.withLock { state in
      state.events.append(.request(id: request.id, method: request.method, path: request.path))
      state.requests.append(request)
      return state.output
    }
    if let response = answer(request) { output?.respond(request.id, response) }
  }

  func upgrade(_ request: HTTPRequest) -> HTTPResponse? {
    state.withLock { state in
      state.events.append(.upgrade(path: request.path))
      state.upgrades.append(request)
    }
    return refuse(request)
  }

  func opened(_ socket: WebSocketID, request: HTTPRequest) {
    state.withLock { $0.events.append(.opened(socket, path: request.path)) }
  }

  func text(_ socket: WebSocketID, _ message: [UInt8]) {
    let output = state.withLock { state in
      state.events.append(.text(socket, String(decoding: message, as: UTF8.self)))
      return state.output
    }
    if echoText { output?.send(socket, text: message) }
  }

  func closed(_ socket: WebSocketID) {
    state.withLock { $0.events.append(.closed(socket)) }
  }

  var events: [Event] { state.withLock { $0.events } }
  var requests: [HTTPRequest] { state.withLock { $0.requests } }
  var upgrades: [HTTPRequest] { state.withLock { $0.upgrades } }
  var openedSockets: [WebSocketID] {
    events.compactMap { if case .opened(let id, _) = $0 { id } else { nil } }
  }
  var closedSockets: [WebSocketID] {
    events.compactMap { if case .closed(let id) = $0 { id } else { nil } }
  }
  func texts(_ socket: WebSocketID) -> [String] {
    events.compactMap { if case .text(socket, let text) = $0 { text } else { nil } }
  }

  /// Waits (`eventually`) until `condition` holds over the events; true when it did.
  func wait(seconds: Double = 120, until condition: @Sendable ([Event]) -> Bool) async -> Bool {
    await eventually(seconds: seconds) { condition(events) }
  }
}

/// Polls `condition` (suspending, never blocking a thread) until it holds, at most `seconds`
/// (generous: the machine is shared); true when it did.
func eventually(seconds: Double = 120, _ condition: () -> Bool) async -> Bool {
  let deadline = monotonicSeconds() + seconds
  while !condition() {
    guard monotonicSeconds() < deadline else { return false }
    try? await Task.sleep(for: .milliseconds(10))
  }
  return true
}

/// TCP states in /proc/net/tcp.
enum TCPState {
  static let established: UInt8 = 0x01
}

/// The kernel's state of the TCP socket whose local port is `local` and remote port `remote` (from
/// /proc/net/tcp, and tcp6 for a dual-stack listener's connections), or nil when there is none.
func tcpState(local: UInt16, remote: UInt16) -> UInt8? {
  // "sl local_address rem_address st ...", addresses as hex "0100007F:1F90".
  func port(_ address: Substring) -> UInt16? {
    address.split(separator: ":").last.flatMap { UInt16($0, radix: 16) }
  }
  for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
    // Read to its end: a /proc file says its size is 0 and comes a page per read.
    guard let data = FileHandle(forReadingAtPath: file)?.readDataToEndOfFile() else { continue }
    let table = String(decoding: data, as: UTF8.self)
    for line in table.split(separator: "\n").dropFirst() {
      let fields = line.split(separator: " ")
      guard fields.count > 3, port(fields[1]) == local, port(fields[2]) == remote else { continue }
      return UInt8(fields[3], radix: 16)
    }
  }
  return nil
}

/// The local port of the socket `fd`.
func localPort(_ fd: Int32) -> UInt16 {
  var address = sockaddr_in()
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  _ = withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
  }
  return UInt16(bigEndian: address.sin_port)
}

/// A started server with a recorder; `stop` shuts it down.
struct Served {
  let server: HTTPServer
  let recorder: Recorder
  var port: UInt16 { server.boundPort }
  var url: String { "ws://127.0.0.1:\(port)" }

  init(_ recorder: Recorder = Recorder(), configure: (inout HTTPServer.Configuration) -> Void = { _ in })
    throws
  {
    var configuration = HTTPServer.Configuration()
    configure(&configuration)
    server = try HTTPServer(configuration: configuration, handler: recorder)
    recorder.attach(server)
    self.recorder = recorder
    try server.start()
  }

  func stop() async { await server.shutdown() }
}

/// Runs `body` on a thread of its own and returns its result.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    do throws(Errno) {
      try ReaderThread(name: "test-client").start {
        do { continuation.resume(returning: try body()) } catch { continuation.resume(throwing: error) }
      }
    } catch {
      continuation.resume(throwing: POSIXError(.EAGAIN))
    }
  }
}

struct SocketError: Error, CustomStringConvertible {
  let what: String
  let code: Int32
  var description: String { "\(what): \(String(cString: strerror(code)))" }
}

/// A blocking TCP client with a receive timeout, for raw HTTP.
final class RawClient: @unchecked Sendable {
  // @unchecked: each test uses one client from one thread at a time (inside onOwnThread calls that
  // it awaits in turn).
  let fd: Int32
  private var buffer: [UInt8] = []

  init(port: UInt16, timeoutSeconds: Int = 30) throws {
    fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw SocketError(what: "socket", code: errno) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let rc = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard rc == 0 else {
      let code = errno
      Glibc.close(fd)
      throw SocketError(what: "connect", code: code)
    }
    var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
  }

  deinit { Glibc.close(fd) }

  /// Writes everything; false when the peer has gone (EPIPE, ECONNRESET).
  @discardableResult func write(_ bytes: [UInt8]) -> Bool {
    var offset = 0
    while offset < bytes.count {
      let n = bytes.withUnsafeBytes {
        Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
      }
      if n < 0 && errno == EINTR { continue }
      if n <= 0 { return false }
      offset += n
    }
    return true
  }
  @discardableResult func write(_ text: String) -> Bool { write(Array(text.utf8)) }

  /// Reads more; false at end of file, error or timeout.
  private func fill() -> Bool {
    var chunk = [UInt8](repeating: 0, count: 65536)
    let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
    if n <= 0 { return false }
    buffer += chunk[0..<n]
    return true
  }

  /// Everything until the peer closes (or the timeout).
  func readToEnd() -> [UInt8] {
    while fill() {}
    defer { buffer = [] }
    return buffer
  }

  /// Reads until the peer ends the connection: true at end of file or reset, false at the receive
  /// timeout (the connection stayed open).
  func readUntilClosed() -> Bool { readAll().closed }

  /// Everything until the peer ends the connection, and whether it did (end of file or reset) rather
  /// than the receive timeout passing.
  func readAll() -> (bytes: [UInt8], closed: Bool) {
    var bytes = buffer
    buffer = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
      let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if n > 0 {
        bytes += chunk[0..<n]
        continue
      }
      if n == 0 { return (bytes, true) }
      if errno == EINTR { continue }
      return (bytes, errno != EAGAIN && errno != EWOULDBLOCK)
    }
  }

  /// One HTTP response: status line, lower-cased headers, body (by Content-Length). nil when the
  /// connection ended first.
  func readResponse() -> RawResponse? {
    let separator: [UInt8] = [13, 10, 13, 10]
    var end: Int?
    while end == nil {
      if let range = findSubsequence(buffer, separator) { end = range } else if !fill() { return nil }
    }
    let head = String(decoding: buffer[0..<end!], as: UTF8.self)
    var lines = head.components(separatedBy: "\r\n")
    let statusLine = lines.removeFirst()
    var headers: [String: String] = [:]
    for line in lines {
      guard let colon = line.firstIndex(of: ":") else { continue }
      headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
        in: .whitespaces)
    }
    let length = Int(headers["content-length"] ?? "0") ?? 0
    let bodyStart = end! + 4
    while buffer.count < bodyStart + length { if !fill() { return nil } }
    let body = Array(buffer[bodyStart..<(bodyStart + length)])
    buffer.removeFirst(bodyStart + length)
    return RawResponse(statusLine: statusLine, headers: headers, body: body)
  }
}

struct RawResponse: Sendable {
  let statusLine: String
  let headers: [String: String]
  let body: [UInt8]
  var status: Int { Int(statusLine.split(separator: " ").dropFirst().first ?? "") ?? 0 }
}

func findSubsequence(_ haystack: [UInt8], _ needle: [UInt8]) -> Int? {
  guard haystack.count >= needle.count else { return nil }
  for start in 0...(haystack.count - needle.count)
  where haystack[start..<(start + needle.count)].elementsEqual(needle) {
    return start
  }
  return nil
}

/// Runs /usr/bin/python3 with `script` (its arguments after it) and returns its stdout lines; the
/// test fails on a non-zero exit (stderr is shown).
func python(_ script: String, _ arguments: [String] = [], timeLimit: Double = 120) async throws -> [String] {
  let outcome = try await onOwnThread {
    try spawnCollect("/usr/bin/python3", ["-c", script] + arguments, timeLimit: timeLimit)
  }
  #expect(outcome.status == 0, "python3 exited \(outcome.status): \(outcome.stderr)")
  return outcome.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).filter {
    !$0.isEmpty
  }
}

let pythonAvailable: Bool = {
  access("/usr/bin/python3", X_OK) == 0
    && (try? spawnCollect("/usr/bin/python3", ["-c", "import websockets"], timeLimit: 30).status) == 0
}()

struct Spawned {
  var status: Int32
  var stdout: String
  var stderr: String
}

/// posix_spawn with an empty signal mask and default dispositions, stdout and stderr collected.
func spawnCollect(_ path: String, _ arguments: [String], timeLimit: Double) throws -> Spawned {
  var outPipe: [Int32] = [-1, -1]
  var errPipe: [Int32] = [-1, -1]
  guard pipe(&outPipe) == 0, pipe(&errPipe) == 0 else { throw SocketError(what: "pipe", code: errno) }
  // Close-on-exec, so a child another test spawns meanwhile does not hold these pipes open.
  for fd in outPipe + errPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
  var actions = posix_spawn_file_actions_t()
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
  posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
  posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
  var attributes = posix_spawnattr_t()
  posix_spawnattr_init(&attributes)
  defer { posix_spawnattr_destroy(&attributes) }
  var empty = sigset_t()
  sigemptyset(&empty)
  var defaults = sigset_t()
  sigemptyset(&defaults)
  sigaddset(&defaults, SIGPIPE)
  sigaddset(&defaults, SIGTERM)
  posix_spawnattr_setsigmask(&attributes, &empty)
  posix_spawnattr_setsigdefault(&attributes, &defaults)
  posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
  let argv = ([path] + arguments).map { strdup($0) } + [nil]
  defer { argv.forEach { free($0) } }
  var environment = ProcessInfo.processInfo.environment
  environment["PYTHONUNBUFFERED"] = "1"
  let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
  defer { envp.forEach { free($0) } }
  var pid: pid_t = 0
  let rc = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
  Glibc.close(outPipe[1])
  Glibc.close(errPipe[1])
  guard rc == 0 else {
    Glibc.close(outPipe[0])
    Glibc.close(errPipe[0])
    throw SocketError(what: "posix_spawn", code: rc)
  }
  var out: [UInt8] = []
  var err: [UInt8] = []
  var fds = [
    pollfd(fd: outPipe[0], events: Int16(POLLIN), revents: 0),
    pollfd(fd: errPipe[0], events: Int16(POLLIN), revents: 0),
  ]
  let deadline = monotonicSeconds() + timeLimit
  var open = 2
  var chunk = [UInt8](repeating: 0, count: 65536)
  while open > 0 {
    let remaining = deadline - monotonicSeconds()
    if remaining <= 0 {
      kill(pid, SIGKILL)
      break
    }
    let ready = poll(&fds, 2, Int32(min(remaining * 1000, 1000)))
    if ready <= 0 { continue }
    for index in 0..<2 where fds[index].fd >= 0 && fds[index].revents != 0 {
      let n = chunk.withUnsafeMutableBytes { read(fds[index].fd, $0.baseAddress, $0.count) }
      if n > 0 {
        if index == 0 { out += chunk[0..<n] } else { err += chunk[0..<n] }
      } else {
        Glibc.close(fds[index].fd)
        fds[index].fd = -1
        open -= 1
      }
    }
  }
  for entry in fds where entry.fd >= 0 { Glibc.close(entry.fd) }
  var status: Int32 = 0
  while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
  let exit = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
  return Spawned(
    status: exit, stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self))
}

extension RawClient {
  /// Sends a WebSocket upgrade for `path` and returns the reply's head (status line and headers).
  func upgrade(path: String, port: UInt16) -> RawResponse? {
    write(
      "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    return readResponse()
  }
}
