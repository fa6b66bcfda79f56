/// The HTTP + WebSocket transport of `capture serve`, as the service sees it. The implementation (an
/// event loop over Debian's libwebsockets, `HTTPServer`) parses HTTP and frames WebSocket messages;
/// nothing in the project does either by hand. Every callback of `HTTPServerHandler` runs on the
/// server's one event-loop thread and must not block it: the handler answers later, from any thread,
/// through `ServerOutput`.

/// One HTTP request, its body complete and within the configured bound.
public struct HTTPRequest: Sendable {
  /// Answers this request through `ServerOutput.respond`. Unique for the server's lifetime.
  public let id: UInt64
  /// "GET", "POST", "OPTIONS", …
  public let method: String
  /// The URI path without query or fragment, e.g. "/Capture/v1/api".
  public let path: String
  /// Header values by lower-cased name ("host", "origin", "content-type",
  /// "access-control-request-method", "access-control-request-headers",
  /// "access-control-request-private-network", …). A header the request did not send is absent.
  public let headers: [String: String]
  public let body: [UInt8]

  public init(id: UInt64, method: String, path: String, headers: [String: String], body: [UInt8]) {
    self.id = id
    self.method = method
    self.path = path
    self.headers = headers
    self.body = body
  }
}

public struct HTTPResponse: Sendable {
  public var status: Int
  /// Extra headers (name, value), in order. The transport adds Content-Length itself.
  public var headers: [(String, String)]
  public var contentType: String?
  public var body: [UInt8]

  public init(status: Int, headers: [(String, String)] = [], contentType: String? = nil, body: [UInt8] = []) {
    self.status = status
    self.headers = headers
    self.contentType = contentType
    self.body = body
  }
}

/// One accepted WebSocket connection, unique for the server's lifetime (never reused).
public struct WebSocketID: Sendable, Hashable, CustomStringConvertible {
  public let value: UInt64
  public init(_ value: UInt64) { self.value = value }
  public var description: String { "ws#\(value)" }
}

/// What the service sends back. Thread-safe and non-blocking: every call only queues work for the
/// event loop and wakes it.
public protocol ServerOutput: AnyObject, Sendable {
  /// Sends the response of `requestID`; ignored when that connection has gone.
  func respond(_ requestID: UInt64, _ response: HTTPResponse)
  /// Queues one text frame. False when the socket has gone or its unsent frames exceed the server's
  /// per-socket bound (the caller then closes it: a client that stopped reading).
  @discardableResult func send(_ socket: WebSocketID, text: [UInt8]) -> Bool
  /// Sends a close frame with `code` (RFC 6455 §7.4) and closes the socket; `closed` follows.
  func close(_ socket: WebSocketID, code: UInt16, reason: String)
  /// The socket serves a client from now on: it is never closed to make room for a new connection
  /// (`HTTPServer.Configuration.maxConnections`). Until then an open WebSocket counts as idle.
  func markInUse(_ socket: WebSocketID)
}

/// The service's side of the transport. Every method runs on the event-loop thread and must return
/// quickly (a table lookup, a `Task` started); no device I/O here.
public protocol HTTPServerHandler: AnyObject, Sendable {
  /// A complete request (not an upgrade). Answer later with `ServerOutput.respond(request.id, …)`.
  func request(_ request: HTTPRequest)
  /// A WebSocket upgrade request: nil accepts it, a response (403) refuses it and is sent instead of
  /// the handshake.
  func upgrade(_ request: HTTPRequest) -> HTTPResponse?
  /// The handshake completed; `request` is the upgrade request (path, headers).
  func opened(_ socket: WebSocketID, request: HTTPRequest)
  /// One complete text message (fragments joined by the transport, bounded like a request body).
  func text(_ socket: WebSocketID, _ message: [UInt8])
  /// The socket is gone (closed by either side, or the TCP connection dropped). No call for it follows.
  func closed(_ socket: WebSocketID)
}
