import CWebSockets
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// One accepted connection, as the loop tracks it from adoption to CWS_DESTROYED.
final class Connection {
  enum Phase {
    /// Waiting for a request's headers (a new or a kept-alive connection).
    case idle
    /// The headers are in; the body is arriving.
    case body
    /// The body is complete; the request goes to the handler at the end of the loop's pass, unless
    /// libwebsockets shows bytes behind it first (`refusePipelined`).
    case complete
    /// The handler has the request; its answer has not come.
    case awaiting
    /// The answer is being written.
    case responding
    /// The connection is a WebSocket.
    case webSocket
  }

  let tag: UInt64
  let wsi: OpaquePointer
  /// The client's address (text), for `maxConnectionsPerPeer`.
  let peer: String
  var phase = Phase.idle
  /// When the connection last did something (accepted, a request complete, an answer written), on
  /// the loop's own counter: the idlest connection is the one with the smallest value.
  var touched: UInt64 = 0
  /// The handler marked this WebSocket in use: it is never closed to make room.
  var inUse = false
  /// Closed to make room for a new connection; gone at the loop's next turn.
  var evicted = false
  // The request being read or answered.
  var requestID: UInt64 = 0
  var method = ""
  var path = ""
  var headers: [String: String] = [:]
  var body: [UInt8] = []
  /// A 413 replaced the request: its body is discarded and the connection closes after the reply.
  var refused = false
  /// The body is chunked: libwebsockets 4.1 passes its bytes on undecoded (framing included).
  var chunked = false
  var chunkedBytes = 0
  var chunkedTail: [UInt8] = []
  /// The request said Content-Length: 0. libwebsockets 4.1 still reports a body completion for it,
  /// after the request was dispatched without a body; that one completion is not a pipelined request.
  var emptyBodyCompletionDue = false
  var response: HTTPResponse?
  var responseOffset = 0
  var headersWritten = false
  var closeAfterResponse = false
  // The WebSocket.
  var socket: UInt64 = 0
  var upgradeRequest: HTTPRequest?
  var message: [UInt8] = []
  var closeRequest: (code: UInt16, reason: String)?
  var closedReported = false
  /// The response being written refuses a WebSocket upgrade.
  var upgradeRefusal = false

  init(tag: UInt64, wsi: OpaquePointer, peer: String) {
    self.tag = tag
    self.wsi = wsi
    self.peer = peer
  }

  /// Waiting for nothing the server owes it: between requests (or before the first), or a
  /// WebSocket no client uses yet.
  var isIdle: Bool {
    !evicted && (phase == .idle || (phase == .webSocket && !inUse && closeRequest == nil))
  }
}

/// The event loop's own state and the handling of every libwebsockets event.
///
/// `@unchecked Sendable`: the class is reached from the thread that creates the server (`create`,
/// before the loop thread exists, and `destroyUnstarted`, only when the loop never started, both
/// decided under the shared mutex's phase) and from the loop thread (`run` and every callback it
/// makes). pthread_create orders the first before the second, so no two threads ever touch its
/// mutable state at once; other threads only reach `shared`, which is a Mutex.
final class EventLoop: @unchecked Sendable {
  let configuration: HTTPServer.Configuration
  let handler: any HTTPServerHandler
  let listenFD: Int32
  let shared: SharedState

  private var server: OpaquePointer?
  private var connections: [UInt64: Connection] = [:]
  private var requestOwners: [UInt64: UInt64] = [:]
  private var socketOwners: [UInt64: UInt64] = [:]
  private var nextTag: UInt64 = 1
  private var nextRequestID: UInt64 = 1
  private var nextSocketID: UInt64 = 1
  private var activity: UInt64 = 0
  /// Live (not evicted) connections per peer address.
  private var peerCounts: [String: Int] = [:]
  private var evictedCount = 0
  /// Requests complete in the current pass (`Phase.complete`).
  private var pendingDispatch: [Connection] = []
  private var shuttingDown = false
  private var shutdownDeadline: Double = 0
  /// Where `cws_request_headers` copies a request's headers: room for twice the header space (a
  /// value's fragments may be joined with separators) and the names.
  private lazy var headerScratch = [UInt8](
    repeating: 0, count: 2 * min(max(configuration.maxHeaderBytes, 256), 1 << 16) + (16 << 10))

  init(
    configuration: HTTPServer.Configuration, handler: any HTTPServerHandler, listenFD: Int32,
    shared: SharedState
  ) {
    self.configuration = configuration
    self.handler = handler
    self.listenFD = listenFD
    self.shared = shared
  }

  /// Creates the libwebsockets context and watches a copy of the listening socket (libwebsockets
  /// closes its copy; ours is closed at the end). nil on failure.
  func create() -> OpaquePointer? {
    var options = cws_options()
    options.max_header_bytes = UInt32(clamping: configuration.maxHeaderBytes)
    // Connections parsing headers at once: the rest wait their turn in libwebsockets' queue.
    options.header_pool = UInt32(clamping: min(max(configuration.maxConnections, 16), 1024))
    // libwebsockets indexes its connection table by descriptor number, so the table must cover the
    // numbers the process may hand out (RLIMIT_NOFILE), not just the count we allow; capped to keep
    // the table small where the limit is huge.
    var limit = rlimit()
    let wanted = min(max(configuration.maxConnections, 0), 1 << 20) + 64
    // The connections allowed need as many descriptors, and the rest of the process (devices, the
    // state file, D-Bus) some more: a soft limit under that (1,024 is systemd's default for a
    // service) made accept(2) fail with EMFILE once the slots filled, before a connection could be
    // closed to make room. The soft limit is raised towards the hard one, as systemd.exec(5)
    // advises a program that needs more to do.
    let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    if getrlimit(resource, &limit) == 0, limit.rlim_cur < rlim_t(wanted + 256) {
      var raised = limit
      raised.rlim_cur = min(rlim_t(wanted + 256), limit.rlim_max)
      if raised.rlim_cur > limit.rlim_cur { _ = setrlimit(resource, &raised) }
    }
    let descriptors = getrlimit(resource, &limit) == 0 ? Int(clamping: limit.rlim_cur) : 1024
    options.fd_limit = UInt32(clamping: min(max(descriptors, wanted), 1 << 16))
    options.timeout_seconds = UInt32(clamping: max(configuration.requestTimeoutSeconds, 1))
    if let log = configuration.log { LibraryLog.add(ObjectIdentifier(self), log) }
    let owner = Unmanaged.passUnretained(self).toOpaque()
    guard let created = cws_server_create(owner, eventTrampoline, &options) else {
      LibraryLog.remove(ObjectIdentifier(self))
      return nil
    }
    let copy = fcntl(listenFD, F_DUPFD_CLOEXEC, 3)
    guard copy >= 0, cws_server_watch_listener(created, copy) == 0 else {
      if copy >= 0 { Glibc.close(copy) }
      cws_server_destroy(created)
      LibraryLog.remove(ObjectIdentifier(self))
      return nil
    }
    server = created
    return server
  }

  /// The loop never started: destroy the context and close the listening socket here.
  func destroyUnstarted() {
    if let server { cws_server_destroy(server) }
    server = nil
    Glibc.close(listenFD)
    LibraryLog.remove(ObjectIdentifier(self))
  }

  /// The event loop: runs until `shutdown` has closed every connection (or its grace has passed),
  /// then destroys the context and closes the listening socket.
  func run() {
    guard let server else { return }
    while true {
      if shuttingDown && (connections.isEmpty || monotonicSeconds() > shutdownDeadline) { break }
      if cws_server_service(server) < 0 { break }
      dispatchPending()
    }
    // No thread may wake the context from now on (every wake happens under the mutex, with the
    // handle present). Destroying it closes what is left; their CLOSED events still reach the
    // handler.
    shared.mutex.withLock { $0.server = nil }
    cws_server_destroy(server)
    self.server = nil
    Glibc.close(listenFD)
    LibraryLog.remove(ObjectIdentifier(self))
  }

  // MARK: Events

  func handle(_ wsi: OpaquePointer?, _ event: Int32, _ data: UnsafePointer<UInt8>?, _ length: Int) -> Int32 {
    if event == Int32(CWS_WAKE.rawValue) {
      drainCommands()
      return 0
    }
    if event == Int32(CWS_LISTENER_READABLE.rawValue) {
      acceptConnections()
      return 0
    }
    guard let wsi else { return 0 }
    let tag = cws_tag(wsi)
    guard let connection = connections[tag] else { return 0 }
    switch UInt32(bitPattern: event) {
    case CWS_HTTP_REQUEST.rawValue: return httpRequest(connection, path: bytes(data, length))
    case CWS_HTTP_BODY.rawValue: return httpBody(connection, data, length)
    case CWS_HTTP_BODY_DONE.rawValue:
      if connection.refused { return 0 }
      if connection.emptyBodyCompletionDue && connection.phase != .body {
        connection.emptyBodyCompletionDue = false
        return 0
      }
      if connection.phase == .body {
        // Not dispatched yet: libwebsockets 4.1 reports the completion again, in this same pass,
        // when bytes follow the body in what it read (a pipelined request).
        connection.phase = .complete
        pendingDispatch.append(connection)
        return 0
      }
      return refusePipelined(connection)
    case CWS_HTTP_WRITEABLE.rawValue: return httpWriteable(connection)
    case CWS_HTTP_CLOSED.rawValue: return 0
    case CWS_UPGRADE.rawValue: return upgrade(connection, protocolName: bytes(data, length))
    case CWS_WS_OPEN.rawValue: return webSocketOpened(connection)
    case CWS_WS_RECEIVE.rawValue: return webSocketReceive(connection, data, length)
    case CWS_WS_WRITEABLE.rawValue: return webSocketWriteable(connection)
    case CWS_WS_CLOSED.rawValue:
      reportClosed(connection)
      return 0
    case CWS_DEADLINE.rawValue:
      // The request did not arrive whole in time (slowloris), or the connection sat idle.
      return connection.phase == .idle || connection.phase == .body || connection.phase == .complete ? -1 : 0
    case CWS_DESTROYED.rawValue:
      reportClosed(connection)
      if connection.evicted {
        evictedCount -= 1
      } else {
        peerCounts[connection.peer, default: 1] -= 1
        if peerCounts[connection.peer] == 0 { peerCounts[connection.peer] = nil }
      }
      // An answer still owed to this connection will be dropped when it comes; forget it now.
      if requestOwners[connection.requestID] == tag {
        requestOwners.removeValue(forKey: connection.requestID)
      }
      connections.removeValue(forKey: tag)
      // The last connection gone: glibc keeps freed heap in its arenas, so a burst of clients would
      // leave the service larger for good; malloc_trim gives it back (a short walk of the heap, only
      // when nothing is connected).
      if connections.isEmpty { cws_release_free_heap() }
      return 0
    default: return 0
    }
  }

  private func bytes(_ data: UnsafePointer<UInt8>?, _ length: Int) -> [UInt8] {
    guard let data, length > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: length))
  }

  private func acceptConnections() {
    // A bounded batch per wakeup keeps the loop fair to the connections already open.
    var address = [CChar](repeating: 0, count: 64)
    for _ in 0..<64 {
      let fd = cws_accept(listenFD, &address, address.count)
      if fd < 0 {
        // Out of descriptors (a hard limit under the connections allowed): the idlest connection
        // makes room, and the next turn accepts.
        if errno == EMFILE || errno == ENFILE { _ = evictIdlest(of: nil) }
        return  // EAGAIN: none left; anything else: try again at the next readiness
      }
      let peer = String(decoding: address.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
      guard !shuttingDown, let server, makeRoom(for: peer) else {
        Glibc.close(fd)
        continue
      }
      let tag = nextTag
      nextTag += 1
      // The events adoption itself makes carry no tag yet and are ignored; the request's events
      // come from later reads, after the connection is registered.
      guard let wsi = cws_server_adopt(server, fd, tag) else { continue }
      let connection = Connection(tag: tag, wsi: wsi, peer: peer)
      connections[tag] = connection
      peerCounts[peer, default: 0] += 1
      touch(connection)
      armDeadline(wsi)
    }
  }

  private func touch(_ connection: Connection) {
    activity += 1
    connection.touched = activity
  }

  /// Whether a connection from `peer` may be accepted: under both bounds, or once the idlest
  /// connection (of that peer when it is the peer's bound that is reached) has been closed to make
  /// room. 1,024 bare WebSocket upgrades otherwise held every slot for good and the real page's
  /// requests were reset; a connection that waits for nothing yields to one that comes to be served.
  private func makeRoom(for peer: String) -> Bool {
    let live = connections.count - evictedCount
    let fromPeer = peerCounts[peer] ?? 0
    let perPeer = fromPeer >= max(configuration.maxConnectionsPerPeer, 1)
    guard perPeer || live >= configuration.maxConnections else { return true }
    return evictIdlest(of: perPeer ? peer : nil)
  }

  /// Closes the idlest connection (of `peer`, or of anyone); false when none is idle.
  private func evictIdlest(of peer: String?) -> Bool {
    var idlest: Connection?
    for connection in connections.values where connection.isIdle && (peer == nil || connection.peer == peer) {
      if connection.touched < idlest?.touched ?? .max { idlest = connection }
    }
    guard let idlest else { return false }
    evict(idlest)
    return true
  }

  /// Closes `connection` at the loop's next turn (a WebSocket without a close frame: no client uses
  /// it) and stops counting it.
  private func evict(_ connection: Connection) {
    connection.evicted = true
    evictedCount += 1
    peerCounts[connection.peer, default: 1] -= 1
    if peerCounts[connection.peer] == 0 { peerCounts[connection.peer] = nil }
    cws_kill(connection.wsi)
  }

  /// The next request must arrive whole (headers and body) within `requestTimeoutSeconds`, however
  /// slowly its bytes trickle in: libwebsockets' own timeouts restart with every piece of a body.
  private func armDeadline(_ wsi: OpaquePointer) {
    cws_set_deadline(wsi, Int32(clamping: max(configuration.requestTimeoutSeconds, 1)))
  }

  // MARK: HTTP

  /// The request's headers, and whether one could not be read whole (then it is missing here, and
  /// the request must be refused rather than judged without it: an Origin of 4,096 bytes or more
  /// was left out and the request looked origin-less).
  private func readHeaders(_ wsi: OpaquePointer) -> (headers: [String: String], incomplete: Bool) {
    var incomplete: Int32 = 0
    let used = headerScratch.withUnsafeMutableBufferPointer {
      cws_request_headers(wsi, $0.baseAddress, $0.count, &incomplete)
    }
    var headers: [String: String] = [:]
    var fields = headerScratch[0..<used].split(separator: 0, omittingEmptySubsequences: false)
    if fields.last?.isEmpty == true { fields.removeLast() }
    var index = 0
    while index + 1 < fields.count {
      headers[String(decoding: fields[index], as: UTF8.self)] = String(
        decoding: fields[index + 1], as: UTF8.self)
      index += 2
    }
    return (headers, incomplete != 0)
  }

  /// The answer to a request with a header the transport could not read (RFC 6585 §5).
  static let unreadableHeaderResponse = HTTPResponse(
    status: 431, contentType: "text/plain; charset=utf-8",
    body: Array("request header fields too large: a header could not be read whole\n".utf8))

  private func requestMethod(_ wsi: OpaquePointer) -> String {
    var buffer = [CChar](repeating: 0, count: 16)
    let n = cws_request_method(wsi, &buffer, Int32(buffer.count))
    return n > 0 ? String(decoding: buffer[0..<Int(n)].map { UInt8(bitPattern: $0) }, as: UTF8.self) : "GET"
  }

  private func requestPath(_ wsi: OpaquePointer) -> String {
    var buffer = [CChar](repeating: 0, count: min(max(configuration.maxHeaderBytes, 256), 1 << 16) + 1)
    let n = cws_request_path(wsi, &buffer, Int32(buffer.count))
    return n > 0 ? String(decoding: buffer[0..<Int(n)].map { UInt8(bitPattern: $0) }, as: UTF8.self) : "/"
  }

  private func httpRequest(_ connection: Connection, path: [UInt8]) -> Int32 {
    // No further answers once shutdown began.
    if shuttingDown { return -1 }
    let wsi = connection.wsi
    connection.requestID = nextRequestID
    nextRequestID += 1
    connection.method = requestMethod(wsi)
    connection.path = path.isEmpty ? requestPath(wsi) : String(decoding: path, as: UTF8.self)
    let (headers, incomplete) = readHeaders(wsi)
    connection.headers = headers
    connection.body = []
    connection.refused = false
    connection.response = nil
    connection.responseOffset = 0
    connection.headersWritten = false
    connection.closeAfterResponse = false
    let length = cws_request_content_length(wsi)
    let chunked = cws_request_is_chunked(wsi) != 0
    connection.emptyBodyCompletionDue = length == 0 && !chunked
    if incomplete {
      refuse(
        connection, status: 431,
        message: "request header fields too large: a header could not be read whole\n")
      return 0
    }
    if length > Int64(configuration.maxBodyBytes) {
      refuseTooLarge(connection)
      return 0
    }
    connection.chunked = chunked && length < 0
    connection.chunkedBytes = 0
    connection.chunkedTail = []
    if connection.chunked {
      connection.phase = .body
      return 0
    }
    if length > 0 {
      connection.phase = .body
      connection.body.reserveCapacity(Int(length))
      return 0
    }
    dispatch(connection)
    return 0
  }

  private func httpBody(_ connection: Connection, _ data: UnsafePointer<UInt8>?, _ length: Int) -> Int32 {
    guard connection.phase == .body, !connection.refused else { return 0 }
    if connection.chunked { return chunkedBody(connection, data, length) }
    guard length <= configuration.maxBodyBytes - connection.body.count else {
      refuseTooLarge(connection)
      return 0
    }
    if let data, length > 0 {
      connection.body.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
    }
    return 0
  }

  /// A chunked body is counted, not kept: libwebsockets 4.1 does not decode chunked request bodies
  /// and the project parses no HTTP itself. Past the bound it gets 413; a body that ends under it
  /// (its last bytes are the last-chunk "0" CRLF CRLF with no trailer, RFC 9112 §7.1) gets 411
  /// Length Required (RFC 9110 §15.5.12): browsers send a Content-Length with every XMLHttpRequest
  /// and fetch body.
  private func chunkedBody(_ connection: Connection, _ data: UnsafePointer<UInt8>?, _ length: Int) -> Int32 {
    connection.chunkedBytes += length
    guard connection.chunkedBytes <= configuration.maxBodyBytes else {
      refuseTooLarge(connection)
      return 0
    }
    if let data, length > 0 {
      connection.chunkedTail.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
      if connection.chunkedTail.count > 5 {
        connection.chunkedTail.removeFirst(connection.chunkedTail.count - 5)
      }
    }
    let lastChunk: [UInt8] = Array("0\r\n\r\n".utf8)
    if connection.chunkedTail == lastChunk {
      refuse(
        connection, status: 411,
        message: "a request body needs a Content-Length (chunked bodies are not accepted)\n")
    }
    return 0
  }

  /// 413, then close: the rest of the body is never buffered (RFC 9110 §15.5.14).
  private func refuseTooLarge(_ connection: Connection) {
    refuse(connection, status: 413, message: "request body larger than \(configuration.maxBodyBytes) bytes\n")
  }

  /// A completion reported again: bytes follow a complete body (HTTP/1.1 pipelining, which no
  /// browser does). libwebsockets 4.1 reports the completion again for them at every turn and
  /// never consumes them, so the connection cannot wait for an answer: it is refused with 400 now,
  /// before the handler has seen the request, and closed. (It used to run the first request and
  /// answer neither.)
  private func refusePipelined(_ connection: Connection) -> Int32 {
    switch connection.phase {
    case .complete:
      connection.phase = .responding
      connection.refused = true
      connection.body = []
      connection.closeAfterResponse = true
      connection.response = HTTPResponse(
        status: 400, contentType: "text/plain; charset=utf-8",
        body: Array(
          "bad request: another request followed this one before its answer (HTTP pipelining is not supported); send each request after the previous answer\n"
            .utf8))
    case .responding:
      // The answer is here: it goes out now, and the connection closes after it.
      connection.closeAfterResponse = true
    default:
      return -1
    }
    // Written here, in this callback: the loop would not get to a writeable callback.
    while connection.phase == .responding {
      if httpWriteable(connection) != 0 { break }
    }
    return -1
  }

  /// The requests whose body completed in the pass that just ended, with nothing behind them.
  private func dispatchPending() {
    let pending = pendingDispatch
    pendingDispatch.removeAll()
    for connection in pending
    where connection.phase == .complete && connections[connection.tag] === connection {
      dispatch(connection)
    }
  }

  private func refuse(_ connection: Connection, status: Int, message: String) {
    connection.refused = true
    connection.body = []
    connection.chunkedTail = []
    connection.phase = .responding
    connection.closeAfterResponse = true
    connection.response = HTTPResponse(
      status: status, contentType: "text/plain; charset=utf-8", body: Array(message.utf8))
    cws_request_writeable(connection.wsi)
  }

  private func dispatch(_ connection: Connection) {
    connection.phase = .awaiting
    touch(connection)
    requestOwners[connection.requestID] = connection.tag
    // The request is complete: its answer is the handler's to give, with no library timeout.
    cws_clear_timeout(connection.wsi)
    cws_set_deadline(connection.wsi, -1)
    // Nothing more is read until the answer comes: libwebsockets 4.1 would otherwise spin on a
    // connection that has bytes (a pipelined request) or an end of file (a client that left) it
    // will not consume in this state.
    cws_rx_allow(connection.wsi, 0)
    let request = HTTPRequest(
      id: connection.requestID, method: connection.method, path: connection.path,
      headers: connection.headers, body: connection.body)
    connection.body = []
    handler.request(request)
  }

  private func respond(_ requestID: UInt64, _ response: HTTPResponse) {
    guard let tag = requestOwners.removeValue(forKey: requestID), let connection = connections[tag],
      connection.phase == .awaiting, connection.requestID == requestID
    else { return }  // the connection has gone: dropped
    connection.phase = .responding
    connection.response = response
    // Reading resumes first: libwebsockets 4.1 withholds the writeable of a connection it does not read.
    cws_rx_allow(connection.wsi, 1)
    cws_request_writeable(connection.wsi)
  }

  /// Writes the response: headers first, then the body in pieces of at most 64 KiB, one per
  /// writeable callback.
  private func httpWriteable(_ connection: Connection) -> Int32 {
    guard connection.phase == .responding, let response = connection.response else { return 0 }
    let wsi = connection.wsi
    if !connection.headersWritten {
      var fields: [UInt8] = []
      var headers = response.headers
      if let contentType = response.contentType { headers.append(("Content-Type", contentType)) }
      for (name, value) in headers {
        // A name or value with NUL, CR or LF would split the header: such a header is not sent.
        let bad: (UInt8) -> Bool = { $0 == 0 || $0 == 13 || $0 == 10 }
        guard !name.isEmpty, !name.utf8.contains(where: bad), !value.utf8.contains(where: bad),
          name.lowercased() != "content-length"
        else { continue }
        fields += Array(name.utf8) + [0] + Array(value.utf8) + [0]
      }
      let status = UInt32(clamping: (100...999).contains(response.status) ? response.status : 500)
      let rc = fields.withUnsafeBufferPointer {
        cws_write_response(
          wsi, status, $0.baseAddress, $0.count, UInt64(response.body.count),
          connection.closeAfterResponse ? 1 : 0, connection.upgradeRefusal ? 1 : 0)
      }
      if rc != 0 { return -1 }
      connection.headersWritten = true
    }
    let sendsBody = connection.method != "HEAD"
    let remaining = sendsBody ? response.body.count - connection.responseOffset : 0
    if remaining > 0 {
      let piece = min(remaining, 1 << 16)
      let final = piece == remaining
      let rc = response.body.withUnsafeBufferPointer {
        cws_write_body(wsi, $0.baseAddress! + connection.responseOffset, piece, final ? 1 : 0)
      }
      if rc != 0 { return -1 }
      connection.responseOffset += piece
      if !final {
        cws_request_writeable(wsi)
        return 0
      }
    }
    // Complete: the next request on a kept-alive connection, or the close.
    connection.response = nil
    connection.phase = .idle
    touch(connection)
    if connection.closeAfterResponse || shuttingDown { return -1 }
    if cws_transaction_completed(wsi) != 0 { return -1 }
    armDeadline(wsi)
    return 0
  }

  // MARK: WebSocket

  private func upgrade(_ connection: Connection, protocolName: [UInt8]) -> Int32 {
    if shuttingDown { return -1 }
    // Only WebSocket upgrades (not h2c): anything else is hung up.
    guard String(decoding: protocolName, as: UTF8.self).lowercased() == "websocket" else { return -1 }
    let wsi = connection.wsi
    let (headers, incomplete) = readHeaders(wsi)
    let request = HTTPRequest(
      id: nextRequestID, method: requestMethod(wsi), path: requestPath(wsi), headers: headers, body: [])
    nextRequestID += 1
    let answer: HTTPResponse? = incomplete ? Self.unreadableHeaderResponse : handler.upgrade(request)
    guard let refusal = answer else {
      connection.upgradeRequest = request
      return 0
    }
    // The refusal is the HTTP reply instead of the handshake; the connection closes after it.
    connection.method = request.method
    connection.phase = .responding
    connection.response = refusal
    connection.responseOffset = 0
    connection.headersWritten = false
    connection.closeAfterResponse = true
    connection.upgradeRefusal = true
    while connection.phase == .responding {
      if httpWriteable(connection) != 0 { break }
    }
    return 1
  }

  private func webSocketOpened(_ connection: Connection) -> Int32 {
    if shuttingDown { return -1 }
    cws_set_deadline(connection.wsi, -1)
    let id = nextSocketID
    nextSocketID += 1
    connection.phase = .webSocket
    connection.socket = id
    socketOwners[id] = connection.tag
    shared.mutex.withLock { $0.outboxes[id] = Outbox() }
    let request =
      connection.upgradeRequest
      ?? HTTPRequest(id: 0, method: "GET", path: requestPath(connection.wsi), headers: [:], body: [])
    connection.upgradeRequest = nil
    handler.opened(WebSocketID(id), request: request)
    return 0
  }

  private func webSocketReceive(_ connection: Connection, _ data: UnsafePointer<UInt8>?, _ length: Int)
    -> Int32
  {
    guard connection.phase == .webSocket, connection.closeRequest == nil else { return 0 }
    let wsi = connection.wsi
    if cws_ws_is_binary(wsi) != 0 {
      return closeNow(connection, code: 1003, reason: "binary frames are not accepted")
    }
    if cws_ws_is_first_fragment(wsi) != 0 { connection.message.removeAll(keepingCapacity: true) }
    guard length <= configuration.maxMessageBytes - connection.message.count else {
      connection.message = []
      return closeNow(
        connection, code: 1009, reason: "message larger than \(configuration.maxMessageBytes) bytes")
    }
    if let data, length > 0 {
      connection.message.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
    }
    if cws_ws_is_final_fragment(wsi) != 0 {
      let message = connection.message
      connection.message = []
      handler.text(WebSocketID(connection.socket), message)
    }
    return 0
  }

  /// Sends the close frame and closes (a -1 from the callback after lws_close_reason).
  private func closeNow(_ connection: Connection, code: UInt16, reason: String) -> Int32 {
    let reasonBytes = closeReasonBytes(reason)
    reasonBytes.withUnsafeBufferPointer {
      cws_ws_close_reason(connection.wsi, code, $0.baseAddress, $0.count)
    }
    return -1
  }

  /// At most 123 bytes (RFC 6455 §5.5: a control frame's payload is 125 bytes, 2 of them the code),
  /// cut at a character boundary.
  private func closeReasonBytes(_ reason: String) -> [UInt8] {
    var bytes: [UInt8] = []
    for scalar in reason.unicodeScalars {
      let encoded = Array(String(scalar).utf8)
      if bytes.count + encoded.count > 123 { break }
      bytes += encoded
    }
    return bytes
  }

  private func webSocketWriteable(_ connection: Connection) -> Int32 {
    guard connection.phase == .webSocket else { return 0 }
    if let close = connection.closeRequest {
      return closeNow(connection, code: close.code, reason: close.reason)
    }
    let socket = connection.socket
    let (frame, more) = shared.mutex.withLock { state -> ([UInt8]?, Bool) in
      guard state.outboxes[socket] != nil else { return (nil, false) }
      let frame = state.outboxes[socket]!.pop()
      let more = !state.outboxes[socket]!.isEmpty
      if !more { state.outboxes[socket]!.wakePending = false }
      return (frame, more)
    }
    if let frame {
      let rc = frame.withUnsafeBufferPointer { cws_ws_write_text(connection.wsi, $0.baseAddress, $0.count) }
      if rc != 0 { return -1 }
    }
    if more { cws_request_writeable(connection.wsi) }
    return 0
  }

  private func requestClose(_ connection: Connection, code: UInt16, reason: String) {
    guard connection.phase == .webSocket, connection.closeRequest == nil else { return }
    connection.closeRequest = (code, reason)
    let socket = connection.socket
    shared.mutex.withLock { state in state.outboxes[socket]?.closing = true }
    cws_request_writeable(connection.wsi)
    // A client that stopped reading never lets the close frame out: drop it after the grace.
    cws_set_kill_timeout(connection.wsi, Int32(clamping: max(configuration.closeGraceSeconds, 1)))
  }

  /// `closed` once per opened socket; its outbox goes, so `send` returns false from now on.
  private func reportClosed(_ connection: Connection) {
    guard connection.socket != 0, !connection.closedReported else { return }
    connection.closedReported = true
    let socket = connection.socket
    socketOwners.removeValue(forKey: socket)
    shared.mutex.withLock { _ = $0.outboxes.removeValue(forKey: socket) }
    handler.closed(WebSocketID(socket))
  }

  // MARK: Commands

  private func drainCommands() {
    let commands = shared.mutex.withLock { state in
      let commands = state.commands
      state.commands.removeAll()
      return commands
    }
    for command in commands {
      switch command {
      case .respond(let id, let response):
        if !shuttingDown { respond(id, response) }
      case .writable(let socket):
        if let tag = socketOwners[socket], let connection = connections[tag] {
          cws_request_writeable(connection.wsi)
        }
      case .close(let socket, let code, let reason):
        if let tag = socketOwners[socket], let connection = connections[tag] {
          requestClose(connection, code: code, reason: reason)
        }
      case .markInUse(let socket):
        if let tag = socketOwners[socket], let connection = connections[tag] { connection.inUse = true }
      case .shutdown(let code, let reason):
        beginShutdown(code: code, reason: reason)
      }
    }
  }

  private func beginShutdown(code: UInt16, reason: String) {
    guard !shuttingDown, let server else { return }
    shuttingDown = true
    shutdownDeadline = monotonicSeconds() + Double(max(configuration.closeGraceSeconds, 1)) + 1
    cws_server_unwatch_listener(server)
    for connection in connections.values {
      if connection.phase == .webSocket {
        requestClose(connection, code: code, reason: reason)
      } else {
        cws_kill(connection.wsi)
      }
    }
  }
}

func monotonicSeconds() -> Double {
  var now = timespec()
  clock_gettime(CLOCK_MONOTONIC, &now)
  return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// libwebsockets' error and warning lines, routed to the `Configuration.log` of every server that
/// has one (libwebsockets 4.1 logs process-wide, so a line cannot be told apart by server; `capture
/// serve` runs one). Without a server to take them they are dropped, never written to stderr.
enum LibraryLog {
  private static let sinks = Mutex<[ObjectIdentifier: @Sendable (String) -> Void]>([:])

  static func add(_ owner: ObjectIdentifier, _ sink: @escaping @Sendable (String) -> Void) {
    sinks.withLock { $0[owner] = sink }
    cws_set_log(logTrampoline)
  }

  static func remove(_ owner: ObjectIdentifier) {
    _ = sinks.withLock { $0.removeValue(forKey: owner) }
  }

  static func emit(_ line: String) {
    for sink in sinks.withLock({ Array($0.values) }) { sink(line) }
  }
}

private let logTrampoline: cws_log_fn = { _, line in
  guard let line else { return }
  var text = String(cString: line)
  while text.last?.isNewline == true { text.removeLast() }
  LibraryLog.emit(text)
}

/// The one C callback: `owner` is the EventLoop (unretained; the loop outlives its context).
private let eventTrampoline: cws_event_fn = { owner, wsi, event, data, length in
  guard let owner else { return 0 }
  return Unmanaged<EventLoop>.fromOpaque(owner).takeUnretainedValue().handle(
    wsi, event, data, length)
}
