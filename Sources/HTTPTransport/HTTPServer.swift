import CLazyLibraries
import CWebSockets
import CaptureCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The HTTP + WebSocket server of `capture serve` over libwebsockets: one event-loop thread of its
/// own serves every connection. We listen (or inherit a listening socket from systemd) and accept(2)
/// ourselves, then hand each connection to libwebsockets (lws_adopt_socket_vhost), which parses HTTP
/// and frames WebSocket messages. Other threads only queue work under a mutex and wake the loop with
/// lws_cancel_service; the loop drains the queue on LWS_CALLBACK_EVENT_WAIT_CANCELLED.
///
/// Behaviour the handler can rely on:
/// - Any method and path reaches `request` with its complete body; a body over `maxBodyBytes`
///   (declared by Content-Length or arriving chunked) gets 413 from the transport and the connection
///   closes. Keep-alive connections are answered in request order.
/// - A WebSocket upgrade is accepted on any path without a subprotocol (none is echoed);
///   `upgrade` decides. A binary frame from a client closes its socket with 1003 (RFC 6455 §7.4.1,
///   "cannot accept data of this type": the protocol is text only). Ping and pong are answered by
///   libwebsockets.
/// - `closed` comes exactly once per opened socket, whichever side closes or when TCP drops.
/// - A connection that does not complete its request within `requestTimeoutSeconds` is closed (the
///   same bound applies to idle keep-alive connections); an open WebSocket has no idle timeout.
/// - At `maxConnections` (or `maxConnectionsPerPeer` for one client address) a new connection
///   closes the idlest one (between requests, or a WebSocket not marked in use) to take its place.
/// - A request with a body that has more bytes behind it in what was read (HTTP/1.1 pipelining,
///   which no browser does) is answered 400 and the connection closes, before the handler sees it;
///   pipelined requests without a body are answered in order.
/// - A header the transport cannot read whole (one that does not fit its buffer) is never left
///   out: the request, or the upgrade, gets 431 and the connection closes.
public final class HTTPServer: ServerOutput {
  public let configuration: Configuration
  /// The port the listening socket is bound to (the chosen one when the configuration said 0).
  public let boundPort: UInt16

  private let core: Core

  /// Binds and listens (or adopts `configuration.listenDescriptor`) before returning. Call `start`
  /// to serve.
  public init(configuration: Configuration, handler: any HTTPServerHandler) throws(HTTPServerError) {
    // libwebsockets (and libssl, libcrypto under it) is loaded by the first server, not at start-up
    // (docs/architecture.md, "Libraries loaded on demand"); every cws_ call comes after this.
    guard cll_load(CLL_WEBSOCKETS) == 0 else {
      throw .libraryUnavailable(detail: String(cString: cll_error()))
    }
    self.configuration = configuration
    let fd: Int32
    if let inherited = configuration.listenDescriptor {
      try Listener.adopt(inherited, host: configuration.host, port: configuration.port)
      fd = inherited
    } else {
      fd = try Listener.bind(host: configuration.host, port: configuration.port)
    }
    boundPort = Listener.localPort(fd)
    do {
      core = try Core(configuration: configuration, handler: handler, listenFD: fd, port: boundPort)
    } catch {
      Glibc.close(fd)
      throw error
    }
  }

  deinit { core.abandon() }

  /// Starts the event loop on a thread of its own. A second call does nothing.
  public func start() throws(HTTPServerError) {
    try core.start()
  }

  /// Sends a close frame with `closeCode` to every open WebSocket, answers nothing further, ends the
  /// loop and closes the listening socket; returns when all that is done. Idempotent.
  public func shutdown(closeCode: UInt16 = 1001, reason: String = "") async {
    await core.shutdown(closeCode: closeCode, reason: reason)
  }

  public func respond(_ requestID: UInt64, _ response: HTTPResponse) {
    core.post(.respond(requestID, response))
  }

  @discardableResult public func send(_ socket: WebSocketID, text: [UInt8]) -> Bool {
    core.send(socket.value, text)
  }

  public func close(_ socket: WebSocketID, code: UInt16, reason: String) {
    core.post(.close(socket.value, code, reason))
  }

  public func markInUse(_ socket: WebSocketID) {
    core.post(.markInUse(socket.value))
  }
}

/// Work another thread asks of the loop.
enum Command: Sendable {
  case respond(UInt64, HTTPResponse)
  /// The socket has frames queued (its first since the last writeable drained them).
  case writable(UInt64)
  case close(UInt64, UInt16, String)
  case markInUse(UInt64)
  case shutdown(UInt16, String)
}

/// The unsent frames of one socket, shared between `send` (any thread) and the loop.
struct Outbox {
  private var frames: [[UInt8]] = []
  private var head = 0
  private(set) var bytes = 0
  /// A `.writable` command or a writeable callback is pending for these frames.
  var wakePending = false
  /// `close` was asked: `send` refuses from now on.
  var closing = false

  var isEmpty: Bool { head == frames.count }

  /// Queues `frame` unless the socket is closing or the queue would pass `limit` bytes; `wake` is
  /// true when the loop must be told (no wake was pending).
  mutating func offer(_ frame: [UInt8], limit: Int) -> (accepted: Bool, wake: Bool) {
    guard !closing, frame.count <= limit - bytes else { return (false, false) }
    frames.append(frame)
    bytes += frame.count
    let wake = !wakePending
    wakePending = true
    return (true, wake)
  }

  mutating func pop() -> [UInt8]? {
    guard head < frames.count else { return nil }
    let frame = frames[head]
    frames[head] = []
    head += 1
    bytes -= frame.count
    if head == frames.count {
      frames.removeAll(keepingCapacity: true)
      head = 0
    } else if head >= 64 && head * 2 >= frames.count {
      frames.removeFirst(head)
      head = 0
    }
    return frame
  }
}

/// State shared by every thread, under `Core.shared`'s mutex.
struct Shared: ~Copyable {
  enum Phase { case created, running, stopping, stopped }
  var phase: Phase = .created
  var commands: [Command] = []
  /// Open WebSockets by id: present from `opened` to `closed`.
  var outboxes: [UInt64: Outbox] = [:]
  /// The libwebsockets context while it exists, for lws_cancel_service from any thread.
  var server: WakeHandle?
  var waiters: [CheckedContinuation<Void, Never>] = []
}

/// The context pointer, as other threads may use it: only for cws_server_wake (lws_cancel_service,
/// libwebsockets' one call documented as safe from any thread), and only while `Shared.server` holds
/// it under the mutex (the loop clears it under the mutex before destroying the context).
/// `@unchecked Sendable` for that reason: no other use of the pointer leaves the loop thread.
struct WakeHandle: @unchecked Sendable {
  let pointer: OpaquePointer
  func wake() { cws_server_wake(pointer) }
}

/// The mutex-guarded state every thread may touch.
final class SharedState: Sendable {
  let mutex = Mutex(Shared())
}

/// The server's state. Mutable state of the event loop (`loop`) is touched only on the loop thread,
/// or before it starts and after it ends; everything else goes through `shared`.
final class Core: Sendable {
  let configuration: HTTPServer.Configuration
  let shared = SharedState()
  let loop: EventLoop

  init(
    configuration: HTTPServer.Configuration, handler: any HTTPServerHandler, listenFD: Int32, port: UInt16
  ) throws(HTTPServerError) {
    self.configuration = configuration
    loop = EventLoop(configuration: configuration, handler: handler, listenFD: listenFD, shared: shared)
    // The context is created here, before the loop thread exists (pthread_create orders these calls
    // before every call the loop makes), so a library failure is an error of `init`.
    guard let server = loop.create() else {
      throw .systemError(
        host: configuration.host, port: port, operation: "libwebsockets context",
        errno: errno == 0 ? ENOMEM : errno)
    }
    let handle = WakeHandle(pointer: server)
    shared.mutex.withLock { $0.server = handle }
  }

  func start() throws(HTTPServerError) {
    let go = shared.mutex.withLock { state -> Bool in
      guard state.phase == .created else { return false }
      state.phase = .running
      return true
    }
    guard go else { return }
    // The event loop blocks in poll(2) for the life of the server: a `ReaderThread` of its own. A stop
    // is a command the loop reads after `wake` (lws_cancel_service) cuts its poll short.
    do throws(Errno) {
      try ReaderThread(name: "http-loop").start { [self] in
        loop.run()
        finish()
      }
    } catch {
      shared.mutex.withLock { $0.phase = .created }
      throw .systemError(
        host: configuration.host, port: Listener.localPort(loop.listenFD), operation: "pthread_create",
        errno: error.code)
    }
  }

  /// The loop has ended and destroyed its context: wake every `shutdown` waiting.
  private func finish() {
    let waiters = shared.mutex.withLock { state -> [CheckedContinuation<Void, Never>] in
      state.phase = .stopped
      state.server = nil
      state.outboxes.removeAll()
      state.commands.removeAll()
      let waiting = state.waiters
      state.waiters.removeAll()
      return waiting
    }
    for waiter in waiters { waiter.resume() }
  }

  func shutdown(closeCode: UInt16, reason: String) async {
    enum Step { case done, wait, cleanUp }
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let step = shared.mutex.withLock { state -> Step in
        switch state.phase {
        case .stopped: return .done
        case .created:
          // Never started: nothing runs on the context; tear it down here.
          state.phase = .stopped
          state.server = nil
          return .cleanUp
        case .running:
          state.phase = .stopping
          state.commands.append(.shutdown(closeCode, reason))
          state.server?.wake()
          state.waiters.append(continuation)
          return .wait
        case .stopping:
          state.waiters.append(continuation)
          return .wait
        }
      }
      switch step {
      case .done: continuation.resume()
      case .wait: startShutdownTicker()
      case .cleanUp:
        loop.destroyUnstarted()
        continuation.resume()
      }
    }
  }

  /// Wakes the loop every 100 ms while it shuts down, so its grace deadline is checked even when
  /// libwebsockets has no event to report (it would otherwise wait in poll(2) for its next timer).
  /// Ends with the loop; a second call while one runs is harmless (wakes are idempotent).
  private func startShutdownTicker() {
    // No thread (EAGAIN): the loop still ends at its next libwebsockets timer.
    try? ReaderThread(name: "http-ticker").start { [shared] in
      while true {
        usleep(100_000)
        let stopping = shared.mutex.withLock { state -> Bool in
          guard state.phase == .stopping, let server = state.server else { return false }
          server.wake()
          return true
        }
        if !stopping { return }
      }
    }
  }

  /// The server object went away: an unstarted context is destroyed; a running loop is told to
  /// stop (it keeps `Core` alive until it ends).
  func abandon() {
    let cleanUp = shared.mutex.withLock { state -> Bool in
      switch state.phase {
      case .created:
        state.phase = .stopped
        state.server = nil
        return true
      case .running:
        state.phase = .stopping
        state.commands.append(.shutdown(1001, ""))
        state.server?.wake()
        return false
      case .stopping, .stopped: return false
      }
    }
    if cleanUp { loop.destroyUnstarted() } else { startShutdownTicker() }
  }

  func post(_ command: Command) {
    shared.mutex.withLock { state in
      guard state.phase == .running || state.phase == .created else { return }
      state.commands.append(command)
      state.server?.wake()
    }
  }

  func send(_ socket: UInt64, _ text: [UInt8]) -> Bool {
    let limit = configuration.maxOutboxBytes
    return shared.mutex.withLock { state in
      // In place (no copy of the queue): the entry is mutated through the dictionary's subscript.
      guard state.phase == .running, state.outboxes[socket] != nil else { return false }
      let (accepted, wake) = state.outboxes[socket]!.offer(text, limit: limit)
      if wake {
        state.commands.append(.writable(socket))
        state.server?.wake()
      }
      return accepted
    }
  }
}
