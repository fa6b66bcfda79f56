#if canImport(Glibc)
  import Glibc
#endif

/// Our own listening socket: bound and listening before `HTTPServer.init` returns, so a port in use
/// is an error at once, before the caller opens any device.
enum Listener {
  /// A non-blocking, close-on-exec TCP socket listening on `host:port` (IPv4).
  static func bind(host: String, port: UInt16) throws(HTTPServerError) -> Int32 {
    var address = try resolve(host: host, port: port)
    let fd = socket(
      AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else {
      throw .systemError(host: host, port: port, operation: "socket", errno: errno)
    }
    // A restarted service can bind again while old connections sit in TIME_WAIT; SO_REUSEADDR does
    // not let two listeners share the port on Linux (that is SO_REUSEPORT), so EADDRINUSE still comes.
    var one: Int32 = 1
    _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    if bound != 0 {
      let code = errno
      close(fd)
      switch code {
      case EADDRINUSE: throw .addressInUse(host: host, port: port)
      case EACCES, EPERM: throw .permissionDenied(host: host, port: port)
      case EADDRNOTAVAIL:
        throw .badAddress(host: host, port: port, detail: "not an address of this machine")
      default: throw .systemError(host: host, port: port, operation: "bind", errno: code)
      }
    }
    if listen(fd, SOMAXCONN) != 0 {
      let code = errno
      close(fd)
      if code == EADDRINUSE { throw .addressInUse(host: host, port: port) }
      throw .systemError(host: host, port: port, operation: "listen", errno: code)
    }
    return fd
  }

  /// Checks an inherited descriptor is a listening stream socket and makes it non-blocking (accept
  /// must never block the event loop) and close-on-exec.
  static func adopt(_ fd: Int32, host: String, port: UInt16) throws(HTTPServerError) {
    var accepting: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    guard getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &length) == 0 else {
      throw .badAddress(host: host, port: port, detail: "descriptor \(fd) is not a socket")
    }
    guard accepting != 0 else {
      throw .badAddress(host: host, port: port, detail: "descriptor \(fd) is not a listening socket")
    }
    let flags = fcntl(fd, F_GETFL)
    guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
      throw .systemError(host: host, port: port, operation: "fcntl", errno: errno)
    }
    // Ours from now on: a child the process starts later (a decoder, a helper) must not hold the
    // listening socket open after we close it.
    let descriptorFlags = fcntl(fd, F_GETFD)
    if descriptorFlags >= 0 { _ = fcntl(fd, F_SETFD, descriptorFlags | FD_CLOEXEC) }
  }

  /// The port a listening socket is bound to (the ephemeral one for port 0).
  static func localPort(_ fd: Int32) -> UInt16 {
    var address = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let ok = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard ok == 0 else { return 0 }
    switch Int32(address.ss_family) {
    case AF_INET:
      return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
      }
    case AF_INET6:
      return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
      }
    default: return 0
    }
  }

  /// An IPv4 literal, or the first IPv4 address getaddrinfo gives for a name.
  private static func resolve(host: String, port: UInt16) throws(HTTPServerError) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    if inet_pton(AF_INET, host, &address.sin_addr) == 1 { return address }
    var hints = addrinfo()
    hints.ai_family = AF_INET
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    var results: UnsafeMutablePointer<addrinfo>?
    let rc = getaddrinfo(host, nil, &hints, &results)
    defer { if let results { freeaddrinfo(results) } }
    guard rc == 0, let first = results, let raw = first.pointee.ai_addr,
      first.pointee.ai_family == AF_INET
    else {
      throw .badAddress(
        host: host, port: port, detail: "not an IPv4 address or a name that resolves to one")
    }
    address.sin_addr = raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
    return address
  }
}
