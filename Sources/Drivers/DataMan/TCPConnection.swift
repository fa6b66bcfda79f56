import CaptureCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A TCP client socket for DMCC (docs/device-protocols.md §7: Telnet port, 23 by default). Nothing blocks
/// without a bound: connect waits in poll(2) with a deadline, reads wait in poll with a timeout so the
/// caller can notice cancellation and deadlines. These calls block their thread, so they run on the
/// reader thread or the `BlockingExecutor`, never on the cooperative pool. errno becomes an SKT code
/// once, here.
final class TCPConnection: Sendable {
  enum Received: Sendable, Equatable {
    case data([UInt8])
    /// Nothing arrived within the poll timeout.
    case idle
    /// The peer closed or reset the connection (EOF, ECONNRESET): the device is gone.
    case closed
  }

  let fd: Int32
  /// `host:port` for messages.
  let endpoint: String
  private let isClosed = Mutex(false)

  private init(fd: Int32, endpoint: String) {
    self.fd = fd
    self.endpoint = endpoint
  }

  /// Resolves `host` (a name, IPv4 or IPv6 literal) with getaddrinfo and connects to the first
  /// address that answers within `timeout`; `cancelled` is looked at every 100 ms of the wait.
  /// Blocking (getaddrinfo may ask DNS): call it through `BlockingExecutor`.
  static func connect(
    host: String, port: UInt16, timeout: Duration, cancelled: @Sendable () -> Bool = { false }
  ) throws(CaptureError) -> TCPConnection {
    let endpoint = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    hints.ai_flags = AI_NUMERICSERV
    var list: UnsafeMutablePointer<addrinfo>?
    let rc = getaddrinfo(host, String(port), &hints, &list)
    guard rc == 0, let first = list else {
      throw CaptureError(
        .notAvailable, "\(endpoint): cannot resolve host: \(String(cString: gai_strerror(rc)))")
    }
    defer { freeaddrinfo(first) }
    let deadline = ContinuousClock.now + timeout
    var lastError = CaptureError(.notAvailable, "\(endpoint): no address to connect to")
    var cursor: UnsafeMutablePointer<addrinfo>? = first
    while let ai = cursor {
      cursor = ai.pointee.ai_next
      let fd = socket(
        ai.pointee.ai_family, ai.pointee.ai_socktype | Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue),
        ai.pointee.ai_protocol)
      guard fd >= 0 else {
        lastError = mapped(Errno.current, endpoint, "socket")
        continue
      }
      do throws(CaptureError) {
        try connect(
          fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen, deadline: deadline, endpoint: endpoint,
          cancelled: cancelled)
        var one: Int32 = 1
        // Commands are single short lines; waiting for Nagle would add a round trip to every get.
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return TCPConnection(fd: fd, endpoint: endpoint)
      } catch {
        Glibc.close(fd)
        lastError = error
        if error.code == .requestTimedOut || error.code == .cancel { break }
      }
    }
    throw lastError
  }

  private static func connect(
    _ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>?, _ length: socklen_t,
    deadline: ContinuousClock.Instant,
    endpoint: String, cancelled: () -> Bool
  ) throws(CaptureError) {
    if Glibc.connect(fd, address, length) == 0 { return }
    guard errno == EINPROGRESS || errno == EINTR else { throw mapped(Errno.current, endpoint, "connect") }
    while true {
      let left = deadline - ContinuousClock.now
      guard left > .zero else {
        throw CaptureError(.requestTimedOut, "\(endpoint): connect timed out")
      }
      var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
      let ready = poll(&pfd, 1, Int32(min(milliseconds(left), 100)))
      if ready < 0 && errno != EINTR { throw mapped(Errno.current, endpoint, "poll") }
      if cancelled() { throw CaptureError(.cancel, "\(endpoint): connect cancelled") }
      if ready > 0 { break }
    }
    var soError: Int32 = 0
    var size = socklen_t(MemoryLayout<Int32>.size)
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &size)
    if soError != 0 { throw mapped(Errno(soError), endpoint, "connect") }
  }

  /// The one errno → SKT mapping for this transport.
  static func mapped(_ error: Errno, _ endpoint: String, _ call: String) -> CaptureError {
    let code: ResultCode
    switch error.code {
    case ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, EADDRNOTAVAIL, EHOSTDOWN, ENETDOWN: code = .notAvailable
    case ETIMEDOUT: code = .requestTimedOut
    case ECANCELED: code = .cancel
    default: code = .communicationError
    }
    return CaptureError(code, "\(endpoint): \(call): \(error.message)")
  }

  static func milliseconds(_ d: Duration) -> Int {
    let (s, atto) = d.components
    return max(0, Int(s) * 1000 + Int(atto / 1_000_000_000_000_000))
  }

  /// How long a send waits, in all, for room in a full socket buffer. A DMCC command is one short line
  /// and the kernel buffers far more than that, so a full buffer means the reader stopped reading: the
  /// wait is kept short because `command` sends from the cooperative pool.
  static let sendStall: Duration = .seconds(1)

  /// Sends every byte, waiting in poll (at most `sendStall` in all) when the socket buffer is full.
  /// MSG_NOSIGNAL: a reader that went away must be an error, not a SIGPIPE.
  func send(_ bytes: [UInt8]) throws(CaptureError) {
    var offset = 0
    let deadline = ContinuousClock.now + Self.sendStall
    while offset < bytes.count {
      let n = bytes.withUnsafeBytes {
        Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
      }
      if n < 0 {
        if errno == EINTR { continue }
        if errno == EAGAIN {
          let left = deadline - ContinuousClock.now
          guard left > .zero else {
            throw CaptureError(.communicationError, "\(endpoint): the reader does not take what is sent")
          }
          var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
          _ = poll(&pfd, 1, Int32(min(Self.milliseconds(left), 100)))
          if Task.isCancelled { throw CaptureError(.cancel, "\(endpoint): send cancelled") }
          continue
        }
        throw Self.mapped(Errno.current, endpoint, "send")
      }
      offset += n
    }
  }

  /// Waits up to `timeoutMilliseconds` for bytes.
  func receive(timeoutMilliseconds: Int32) throws(CaptureError) -> Received {
    var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    let ready = poll(&pfd, 1, timeoutMilliseconds)
    if ready < 0 {
      if errno == EINTR { return .idle }
      throw Self.mapped(Errno.current, endpoint, "poll")
    }
    if ready == 0 { return .idle }
    var buffer = [UInt8](repeating: 0, count: 1 << 14)
    let n = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
    if n > 0 { return .data(Array(buffer[0..<n])) }
    if n == 0 { return .closed }
    switch errno {
    case EINTR, EAGAIN: return .idle
    case ECONNRESET, EPIPE, ENOTCONN, ETIMEDOUT: return .closed
    default: throw Self.mapped(Errno.current, endpoint, "recv")
    }
  }

  /// Wakes a reader blocked in poll (it sees EOF) without closing the descriptor under it. Under the
  /// lock, so it never reaches a descriptor number that `close` already gave back and the kernel reused.
  func shutdown() {
    isClosed.withLock { closed in
      if !closed { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
    }
  }

  func close() {
    isClosed.withLock { closed in
      if !closed { Glibc.close(fd) }
      closed = true
    }
  }

  deinit { close() }
}
