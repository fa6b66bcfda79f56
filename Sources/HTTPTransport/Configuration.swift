#if canImport(Glibc)
  import Glibc
#endif

extension HTTPServer {
  /// Where and how the server listens, and the bounds it keeps on what clients send.
  public struct Configuration: Sendable {
    /// An IPv4 address ("127.0.0.1") or a name that resolves to one ("localhost").
    public var host: String
    /// 0 picks a free port; `HTTPServer.boundPort` tells which.
    public var port: UInt16
    /// A listening socket to serve instead of binding `host:port` (systemd socket activation's fd 3,
    /// see `systemdListenDescriptor`). The server owns it from `init` on and closes it at shutdown.
    public var listenDescriptor: Int32?
    /// Largest request body; a larger Content-Length or chunked body gets 413 and the connection
    /// closes, the server reading no more of it than this.
    public var maxBodyBytes: Int
    /// Largest WebSocket message (its fragments joined); a larger one closes the socket with 1009
    /// (RFC 6455 §7.4.1, "message too big").
    public var maxMessageBytes: Int
    /// Bytes of text frames one socket may have queued and unsent; `send` beyond it returns false.
    public var maxOutboxBytes: Int
    /// Open connections (HTTP and WebSocket) at once. A connection beyond it first closes the
    /// connection that has waited longest for nothing — an HTTP connection between requests, or a
    /// WebSocket not marked in use (`ServerOutput.markInUse`) — and is accepted and closed at once
    /// when there is none.
    public var maxConnections: Int
    /// Open connections one peer (one client address) may hold, under the same rule as
    /// `maxConnections`: one program on another machine cannot take every slot.
    public var maxConnectionsPerPeer: Int
    /// Bytes of request line and headers one request may use; more gets libwebsockets' 400 or a
    /// close without an answer. A header the transport cannot read whole is never left out: the
    /// request gets 431 and the connection closes.
    public var maxHeaderBytes: Int
    /// Seconds a connection has to send a complete request (headers, then body), counted from its
    /// accept or from the previous answer; an idle keep-alive connection is closed after as long.
    /// A slow client (slowloris: a byte now and then) is closed when it runs out, whatever it sends.
    public var requestTimeoutSeconds: Int
    /// Seconds a WebSocket being closed (by `close` or `shutdown`) has to take its close frame before
    /// the TCP connection is dropped (a client that stopped reading never takes it).
    public var closeGraceSeconds: Int
    /// Takes libwebsockets' error and warning lines (without the newline); nil drops them. They are
    /// about what clients sent ("Ran out of header data space") and never reach stderr by themselves.
    public var log: (@Sendable (String) -> Void)?

    public init(
      host: String = "127.0.0.1", port: UInt16 = 0, listenDescriptor: Int32? = nil,
      maxBodyBytes: Int = 1 << 20, maxMessageBytes: Int = 1 << 20, maxOutboxBytes: Int = 8 << 20,
      maxConnections: Int = 1024, maxConnectionsPerPeer: Int = 256, maxHeaderBytes: Int = 8192,
      requestTimeoutSeconds: Int = 10, closeGraceSeconds: Int = 3, log: (@Sendable (String) -> Void)? = nil
    ) {
      self.host = host
      self.port = port
      self.listenDescriptor = listenDescriptor
      self.maxBodyBytes = maxBodyBytes
      self.maxMessageBytes = maxMessageBytes
      self.maxOutboxBytes = maxOutboxBytes
      self.maxConnections = maxConnections
      self.maxConnectionsPerPeer = maxConnectionsPerPeer
      self.maxHeaderBytes = maxHeaderBytes
      self.requestTimeoutSeconds = requestTimeoutSeconds
      self.closeGraceSeconds = closeGraceSeconds
      self.log = log
    }

    /// The listening socket systemd passed this process, per sd_listen_fds(3): LISTEN_PID is this
    /// process's id and LISTEN_FDS is at least 1, then the first socket is fd 3
    /// (SD_LISTEN_FDS_START). nil otherwise. The descriptor is made close-on-exec, as sd_listen_fds
    /// does; with several sockets only the first is served.
    public static func systemdListenDescriptor() -> Int32? {
      func variable(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
      guard
        let descriptor = systemdListenDescriptor(
          listenPID: variable("LISTEN_PID"), listenFDs: variable("LISTEN_FDS"), processID: getpid())
      else { return nil }
      let flags = fcntl(descriptor, F_GETFD)
      if flags >= 0 { _ = fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) }
      return descriptor
    }

    /// The rule of `systemdListenDescriptor()` on given values: fd 3 when `listenPID` names
    /// `processID` and `listenFDs` is a count of at least 1.
    public static func systemdListenDescriptor(listenPID: String?, listenFDs: String?, processID: Int32)
      -> Int32?
    {
      guard let listenPID, let pid = Int32(listenPID), pid == processID else { return nil }
      guard let listenFDs, let count = Int(listenFDs), count >= 1 else { return nil }
      return 3
    }
  }
}

/// Why the server could not listen. Each names the address in a one-line message.
public enum HTTPServerError: Error, Sendable, Equatable, CustomStringConvertible {
  /// EADDRINUSE: another program listens on host:port.
  case addressInUse(host: String, port: UInt16)
  /// EACCES: the port is privileged (below 1024) or the address is not ours to bind.
  case permissionDenied(host: String, port: UInt16)
  /// The host is not an IPv4 address or a name resolving to one, or not an address of this machine
  /// (EADDRNOTAVAIL); or an inherited descriptor is not a listening TCP socket.
  case badAddress(host: String, port: UInt16, detail: String)
  /// Any other failure of `operation` (socket, bind, listen, libwebsockets, a thread) with errno.
  case systemError(host: String, port: UInt16, operation: String, errno: Int32)
  /// libwebsockets cannot be loaded (it is loaded by the first server, not at start-up): the dynamic
  /// loader's words.
  case libraryUnavailable(detail: String)

  public var description: String {
    switch self {
    case .addressInUse(let host, let port):
      return "cannot listen on \(host):\(port): address already in use (another program listens there)"
    case .permissionDenied(let host, let port):
      return
        "cannot listen on \(host):\(port): permission denied (ports below 1024 need privileges)"
    case .badAddress(let host, let port, let detail):
      return "cannot listen on \(host):\(port): \(detail)"
    case .systemError(let host, let port, let operation, let code):
      return "cannot listen on \(host):\(port): \(operation): \(String(cString: strerror(code)))"
    case .libraryUnavailable(let detail):
      return "libwebsockets cannot be loaded: \(detail)"
    }
  }
}
