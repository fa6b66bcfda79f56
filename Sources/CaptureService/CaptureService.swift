import CaptureContract
import CaptureCore
import HTTPTransport
import Synchronization

/// The Capture service for CaptureJS web apps (docs/capturejs.md): JSON-RPC over HTTP and a WebSocket
/// per client, on top of the engine.
public enum CaptureServiceInfo {
  /// The port CaptureJS connects to by default (its DEFAULT_HOST is http://127.0.0.1:18481).
  public static let defaultPort: UInt16 = 18481
  /// The JSON-RPC path (docs/capturejs.md §1.1); WebSocket upgrades are taken here and on `/`.
  public static let apiPath = "/Capture/v1/api"
}

/// JSON-RPC 2.0's own error codes (JSON-RPC 2.0 specification §5.1), for requests that are not a
/// Capture call at all; every other failure is an SKT result code.
public enum JSONRPCCode {
  /// The body is not JSON.
  public static let parseError: Int32 = -32700
  /// JSON, but not a request object with a string `method`.
  public static let invalidRequest: Int32 = -32600
  /// A method the service does not have.
  public static let methodNotFound: Int32 = -32601
}

/// The service as the transport sees it (`HTTPServerHandler`): clients, their handles and their
/// event pumps. Transport callbacks only look things up and start tasks; the JSON-RPC work runs on
/// those tasks and answers through `ServerOutput`; engine events reach each client through its own
/// subscription (docs/engine.md §3), pumped into the transport without ever waiting on the client.
public final class CaptureService: HTTPServerHandler, Sendable {
  public struct Configuration: Sendable {
    public var policy: AccessPolicy
    /// One-line diagnostics (stderr): a refused origin, a client dropped.
    public var warn: @Sendable (String) -> Void
    /// AddDevice's discovery window (StartDiscovery names its own).
    public var discoveryWindow: Duration
    /// Clients at most; at the limit a new openclient first frees the oldest client that never
    /// opened its WebSocket.
    public var maximumClients: Int
    /// The memory all clients may hold, as `CaptureService.cost` accounts it; at the bound openclient
    /// frees the oldest client that never opened its WebSocket, or is refused, and opendevice is
    /// refused (ESKT_NOTAVAILABLE).
    public var maximumClientBytes: Int
    /// How long a WebSocket may stay open without sending `waitforcaptureevent` for a client
    /// handle; then it is closed with 1008. CaptureJS and Flutter send it as soon as the socket
    /// opens (docs/capturejs.md §1.4), so only a socket that holds a connection slot for nothing
    /// waits this long.
    public var bindDeadline: Duration

    public init(
      policy: AccessPolicy, warn: @escaping @Sendable (String) -> Void = { _ in },
      discoveryWindow: Duration = .seconds(10), maximumClients: Int = 4096,
      maximumClientBytes: Int = 16 << 20, bindDeadline: Duration = .seconds(10)
    ) {
      self.policy = policy
      self.warn = warn
      self.discoveryWindow = discoveryWindow
      self.maximumClients = maximumClients
      self.maximumClientBytes = maximumClientBytes
      self.bindDeadline = bindDeadline
    }
  }

  /// What a handle stands for. Handles are one namespace, non-zero, never reused while open, and
  /// random (`allocate`): a handle is a client's only credential on HTTP, where requests carry no
  /// connection of their own.
  enum Target: Sendable, Equatable {
    case client
    /// An opened device connection: its key and GUID (`Connections`).
    case device(client: UInt32, key: String, guid: String)
    case deviceManager(client: UInt32)

    var owner: UInt32? {
      switch self {
      case .client: nil
      case .device(let client, _, _), .deviceManager(let client): client
      }
    }
  }

  struct Client {
    let handle: UInt32
    let appID: String
    /// The WebSocket that asked for this client's events: the only one that ever gets them
    /// (`waitForEvents` refuses every other). Set when `waitforcaptureevent` is accepted, before
    /// its subscription exists.
    var socket: WebSocketID?
    var subscription: EngineSubscription?
    /// The connections this client was told about (arrived, not removed yet), by device key.
    var seen: [String: Connections.Connection] = [:]
    /// The device and device-manager handles it opened: each one's connection key and GUID.
    var opened: [UInt32: (key: String, guid: String)] = [:]
    var order: UInt64
  }

  struct State {
    var output: (any ServerOutput)?
    var handles: [UInt32: Target] = [:]
    var clients: [UInt32: Client] = [:]
    var clientOrder: UInt64 = 0
    /// What the clients hold, as `cost` accounts it (bounded by `maximumClientBytes`).
    var clientBytes = 0
    /// Sockets bound to a client by waitforcaptureevent.
    var bound: [WebSocketID: UInt32] = [:]
    /// Every open WebSocket (each gets a close frame when the service stops).
    var sockets: Set<WebSocketID> = []
    var connections = Connections()
    /// Refused origins already told on stderr: one line each, so a page retrying cannot flood it.
    var toldOrigins: Set<String> = []
    var isStopping = false
    /// The Configuration strings set on client handles (`Properties.swift`), by key: the service's,
    /// as the SDK's Configuration is its Capture object's; only known keys with known values.
    var configuration: [String: String] = [:]
    /// SocketCam reads a trigger started and no code has ended yet, by connection key: a stop that
    /// finds its read here sends the SDK's cancel (`ClientProperties.swift`).
    var pendingReads: Set<String> = []
  }

  public let engine: CaptureEngine
  let configuration: Configuration
  let state = Mutex(State())
  private let policy: Mutex<AccessPolicy>
  /// The device manager's GUID: one for the service's lifetime (it does not come and go here).
  let managerGUID = Connections.newGUID()
  private let observer = Mutex<LaneSubscription?>(nil)

  /// Subscribes to the engine's arrivals and removals at once, so devices the engine opens from now
  /// on are known by GUID before any client asks; create it before starting the engine's devices.
  public init(engine: CaptureEngine, configuration: Configuration) {
    self.engine = engine
    self.configuration = configuration
    self.policy = Mutex(configuration.policy)
    let lane = engine.subscribe("capture serve connections") { [weak self] event in
      guard let self else { return }
      switch event.payload {
      case .deviceArrival, .deviceRemoval:
        self.state.withLock { s in
          s.connections.observe(event)
          // A read ends with its device's connection: the app closes the device on its removal.
          s.pendingReads.remove(Connections.key(event.device))
        }
      case .decodedData where event.device.type.isSocketCam:
        // A code ended the read: a stop after it cancels nothing. This lane runs after every client's
        // queue was offered the code, in the device's own order. Only SocketCam has reads to end
        // (`triggerSocketCam`): a scanner's code costs no lock here (serve-throughput measured the
        // lock and key on every code at about 0.3 µs per delivered event).
        _ = self.state.withLock { $0.pendingReads.remove(Connections.key(event.device)) }
      default: break
      }
    }
    observer.withLock { $0 = lane }
  }

  /// The transport's output, once the server exists (it is made with this handler).
  public func attach(_ output: any ServerOutput) { state.withLock { $0.output = output } }

  /// The port actually served (socket activation hands over a socket bound elsewhere).
  public func setServedPort(_ port: UInt16) { policy.withLock { $0.port = port } }

  var accessPolicy: AccessPolicy { policy.withLock { $0 } }

  private var output: (any ServerOutput)? { state.withLock { $0.output } }

  /// SIGINT/SIGTERM: every WebSocket gets close code 1001 "going away" (RFC 6455 §7.4.1) and no
  /// client is served again.
  public func shutdown() {
    let (sockets, output, subscriptions) = state.withLock {
      s -> ([WebSocketID], (any ServerOutput)?, [EngineSubscription]) in
      s.isStopping = true
      let subscriptions = s.clients.values.compactMap(\.subscription)
      return (Array(s.sockets), s.output, subscriptions)
    }
    for subscription in subscriptions { subscription.cancel() }
    for socket in sockets { output?.close(socket, code: 1001, reason: "capture serve is stopping") }
    observer.withLock { $0?.cancel() }
  }

  /// Open clients now (status, tests).
  public var clientCount: Int { state.withLock { $0.clients.count } }

  // MARK: HTTPServerHandler

  public func request(_ request: HTTPRequest) {
    guard let output else { return }
    let id = request.id
    let path = Self.normalisePath(request.path)
    guard path == CaptureServiceInfo.apiPath else {
      output.respond(id, Self.plain(404, "not found: the Capture API is \(CaptureServiceInfo.apiPath)"))
      return
    }
    var cors: [(String, String)]
    switch admit(request) {
    case .refused(let response):
      output.respond(id, response)
      return
    case .admitted(let headers): cors = headers
    }
    switch request.method.uppercased() {
    case "OPTIONS":
      // The preflight of CaptureJS's POST (docs/capturejs.md §1.3).
      if request.headers["access-control-request-private-network"]?.lowercased() == "true" {
        cors.append(("Access-Control-Allow-Private-Network", "true"))
      }
      cors.append(("Access-Control-Max-Age", "600"))
      output.respond(id, HTTPResponse(status: 204, headers: cors))
    case "POST":
      let body = request.body
      Task {
        let reply = await self.handle(body, socket: nil)
        output.respond(
          id, HTTPResponse(status: 200, headers: cors, contentType: "application/json", body: reply ?? []))
      }
    default:
      output.respond(
        id,
        Self.plain(
          405, "the Capture API takes POST (and OPTIONS)", headers: cors + [("Allow", "POST, OPTIONS")]))
    }
  }

  public func upgrade(_ request: HTTPRequest) -> HTTPResponse? {
    let path = Self.normalisePath(request.path)
    // CaptureJS opens the API path, Flutter the root (docs/capturejs.md §1.1).
    guard path == CaptureServiceInfo.apiPath || path == "/" else {
      return Self.plain(404, "not found: WebSockets are taken on / and \(CaptureServiceInfo.apiPath)")
    }
    if state.withLock({ $0.isStopping }) { return Self.plain(503, "capture serve is stopping") }
    if case .refused(let response) = admit(request) { return response }
    return nil
  }

  public func opened(_ socket: WebSocketID, request: HTTPRequest) {
    let stopping = state.withLock { s -> Bool in
      if !s.isStopping { s.sockets.insert(socket) }
      return s.isStopping
    }
    if stopping {
      output?.close(socket, code: 1001, reason: "capture serve is stopping")
      return
    }
    // A socket that never asks for a client's events holds one of the transport's connections for
    // nothing: 1,024 of them took every slot. It gets `bindDeadline` to ask.
    let deadline = configuration.bindDeadline
    Task { [weak self] in
      try? await Task.sleep(for: deadline)
      self?.closeIfUnbound(socket)
    }
  }

  /// The bind deadline has passed: a socket still open that has not asked for a client's events is
  /// closed with 1008 (policy violation, RFC 6455 §7.4.1).
  func closeIfUnbound(_ socket: WebSocketID) {
    let output = state.withLock { s -> (any ServerOutput)? in
      guard !s.isStopping, s.sockets.contains(socket), s.bound[socket] == nil else { return nil }
      return s.output
    }
    guard let output else { return }
    output.close(
      socket, code: 1008,
      reason: "no waitforcaptureevent within \(Self.seconds(configuration.bindDeadline)) of opening")
  }

  static func seconds(_ duration: Duration) -> String {
    let (whole, fraction) = duration.components
    if fraction == 0 { return "\(whole) s" }
    return "\(Double(whole) + Double(fraction) / 1e18) s"
  }

  public func text(_ socket: WebSocketID, _ message: [UInt8]) {
    Task {
      guard let reply = await self.handle(message, socket: socket) else { return }
      self.output?.send(socket, text: reply)
    }
  }

  public func closed(_ socket: WebSocketID) {
    let subscription = state.withLock { s -> EngineSubscription? in
      s.sockets.remove(socket)
      guard let handle = s.bound.removeValue(forKey: socket) else { return nil }
      return Self.removeClient(handle, &s)
    }
    // A page that went away (closed, reloaded) loses its handles and nothing else.
    subscription?.cancel()
  }

  // MARK: admission

  enum Admission {
    case admitted(cors: [(String, String)])
    case refused(HTTPResponse)
  }

  /// The Host and Origin checks of `AccessPolicy`; for an admitted request, the CORS headers its
  /// responses carry (docs/capturejs.md §1.3).
  func admit(_ request: HTTPRequest) -> Admission {
    let policy = accessPolicy
    guard policy.allowsHost(request.headers["host"]) else {
      return .refused(
        Self.plain(403, "forbidden: Host '\(request.headers["host"] ?? "")' is not this service's address"))
    }
    switch policy.judgeOrigin(request.headers["origin"]) {
    case .absent:
      return .admitted(cors: [("Vary", "Origin")])
    case .allowed(let origin):
      return .admitted(cors: [
        ("Access-Control-Allow-Origin", origin), ("Vary", "Origin"),
        ("Access-Control-Allow-Methods", "POST, OPTIONS"), ("Access-Control-Allow-Headers", "Content-Type"),
      ])
    case .refused(let header):
      // Quoted, bounded and without control characters: the header is the client's.
      let origin = Self.shown(header)
      let first = state.withLock { s -> Bool in
        // Bounded: a hostile page could invent origins without end.
        guard s.toldOrigins.count < 256 else { return false }
        return s.toldOrigins.insert(origin).inserted
      }
      if first {
        configuration.warn(
          "refused a request from origin \(origin); to allow it, run capture serve with --allow-origin \(origin)"
        )
      }
      return .refused(
        Self.plain(403, "forbidden: origin \(origin) is not allowed (see capture serve --allow-origin)"))
    }
  }

  /// A client's text as a diagnostic shows it: at most 200 characters (then "…"), control
  /// characters as "?" (an Origin of 4 KB was written to stderr whole).
  static func shown(_ text: String) -> String {
    var out = ""
    for (index, ch) in text.enumerated() {
      if index == 200 {
        out += "…"
        break
      }
      out.append(ch.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F } ? "?" : ch)
    }
    return out
  }

  /// `//Capture/v1/api` (a host written with a trailing slash) is the API path too.
  static func normalisePath(_ path: String) -> String {
    var p = Substring(path)
    while p.hasPrefix("//") { p = p.dropFirst() }
    return p.isEmpty ? "/" : String(p)
  }

  static func plain(_ status: Int, _ text: String, headers: [(String, String)] = []) -> HTTPResponse {
    HTTPResponse(
      status: status, headers: headers, contentType: "text/plain; charset=utf-8",
      body: Array((text + "\n").utf8))
  }

  // MARK: JSON-RPC

  /// The largest request read: the transport's own bound on a body and a WebSocket message
  /// (HTTPServer.Configuration's maxBodyBytes and maxMessageBytes, 1 MiB), checked again by the parser
  /// so it never relies on what reached it.
  static let maximumRequestBytes = 1 << 20

  /// One JSON-RPC message from a POST body or a WebSocket frame; the reply's bytes, or nil when none
  /// is due (waitforcaptureevent answers with events).
  func handle(_ bytes: [UInt8], socket: WebSocketID?) async -> [UInt8]? {
    let json: JSON
    do { json = try JSONParser.parse(bytes, maximumSize: Self.maximumRequestBytes) } catch {
      return Self.reply(
        id: .null, error: JSONRPCCode.parseError, "parse error: the request is not JSON (\(error.message))")
    }
    guard case .object(let members) = json else {
      return Self.reply(
        id: .null, error: JSONRPCCode.invalidRequest, "invalid request: not a JSON-RPC request object")
    }
    let id = members["id"] ?? .null
    guard let method = members["method"]?.string else {
      return Self.reply(id: id, error: JSONRPCCode.invalidRequest, "invalid request: method must be a string")
    }
    let params = members["params"] ?? .object([:])
    let name = method.lowercased()
    if name == "waitforcaptureevent" {
      guard let socket else {
        return Self.reply(
          id: id, error: ResultCode.notSupported.rawValue,
          "waitforcaptureevent works over the WebSocket (ws://HOST:PORT\(CaptureServiceInfo.apiPath))")
      }
      do throws(CaptureError) {
        try await waitForEvents(params, socket: socket)
        return nil
      } catch {
        return Self.reply(id: id, error: error.code.rawValue, error.message)
      }
    }
    do throws(CaptureError) {
      let result: JSON
      switch name {
      case "openclient": result = try openClient(params)
      case "opendevice": result = try openDevice(params)
      case "close": result = try close(params)
      case "getproperty": result = try await property(params, set: false)
      case "setproperty": result = try await property(params, set: true)
      default:
        return Self.reply(
          id: id, error: JSONRPCCode.methodNotFound,
          "method not found: '\(method)' (openclient, opendevice, close, getproperty, setproperty, waitforcaptureevent)"
        )
      }
      return Self.reply(id: id, result: result)
    } catch {
      return Self.reply(id: id, error: error.code.rawValue, error.message)
    }
  }

  static func reply(id: JSON, result: JSON) -> [UInt8] {
    var out: [UInt8] = []
    JSON.object(["jsonrpc": .string("2.0"), "id": id, "result": result]).write(to: &out)
    return out
  }

  static func reply(id: JSON, error code: Int32, _ message: String) -> [UInt8] {
    var out: [UInt8] = []
    JSON.object([
      "jsonrpc": .string("2.0"), "id": id,
      "error": .object(["code": .int(code), "message": .string(message)]),
    ]).write(to: &out)
    return out
  }

  static func handle(_ params: JSON, _ key: String = "handle") throws(CaptureError) -> UInt32 {
    guard let n = params[key]?.integer else {
      throw .invalidParameter("params.\(key) must be a handle (a number from openclient or opendevice)")
    }
    guard let handle = UInt32(exactly: n), handle != 0 else {
      throw CaptureError(.invalidHandle, "no open handle \(n)")
    }
    return handle
  }

  // MARK: methods

  /// The longest appInfo string, in UTF-8 bytes. The SDK's are short (docs/capturejs.md §5): an
  /// appId `web:<bundle id>`, a developerId UUID (36), an appKey of base64 DER (about 64); a longer
  /// one is refused rather than kept for the client's lifetime (a page kept a 1 MiB appId).
  static let maximumAppInfoBytes = 256

  /// What one client is accounted to hold: its record, tables and subscription (a fixed 1 KiB,
  /// more than their size with no device), its appId, and 256 bytes for each device handle it has
  /// open (two table entries, a key and a GUID).
  static func cost(appID: String, handles: Int) -> Int {
    1024 + appID.utf8.count + handles * deviceHandleCost
  }
  static let deviceHandleCost = 256

  /// openclient: appInfo is three non-empty strings of at most `maximumAppInfoBytes`. No signature
  /// can be checked (no key is public, docs/capturejs.md §5), so any three are taken.
  func openClient(_ params: JSON) throws(CaptureError) -> JSON {
    var info: [String] = []
    for key in ["appId", "developerId", "appKey"] {
      guard let value = params[key]?.string, !value.isEmpty else {
        throw CaptureError(
          .invalidAppInfo,
          "appInfo needs appId, developerId and appKey, each a non-empty string (\(key) is not)")
      }
      guard value.utf8.count <= Self.maximumAppInfoBytes else {
        throw CaptureError(
          .invalidAppInfo,
          "appInfo's \(key) is \(value.utf8.count) bytes; at most \(Self.maximumAppInfoBytes) are accepted")
      }
      info.append(value)
    }
    let cost = Self.cost(appID: info[0], handles: 0)
    let (handle, evicted) = state.withLock { s -> (UInt32?, [EngineSubscription]) in
      if s.isStopping { return (nil, []) }
      var evicted: [EngineSubscription] = []
      // Room is made by freeing the oldest clients that never opened their WebSocket (a page that
      // went away before it did); a client with its socket is never dropped for a newcomer.
      while s.clients.count >= configuration.maximumClients
        || s.clientBytes > configuration.maximumClientBytes - cost
      {
        guard let oldest = s.clients.values.filter({ $0.socket == nil }).min(by: { $0.order < $1.order })
        else {
          return (nil, evicted)
        }
        if let subscription = Self.removeClient(oldest.handle, &s) { evicted.append(subscription) }
      }
      let handle = Self.allocate(.client, &s)
      s.clientOrder += 1
      s.clients[handle] = Client(handle: handle, appID: info[0], order: s.clientOrder)
      s.clientBytes += cost
      return (handle, evicted)
    }
    for subscription in evicted { subscription.cancel() }
    guard let handle else {
      throw CaptureError(.notAvailable, "capture serve cannot take another client now")
    }
    return .object(["handle": .int(handle)])
  }

  /// opendevice: a GUID from a DeviceArrival or the DeviceManagerArrival, on the client's handle.
  func openDevice(_ params: JSON) throws(CaptureError) -> JSON {
    let client = try Self.handle(params)
    guard let guid = params["guid"]?.string, !guid.isEmpty else {
      throw .invalidParameter("params.guid must be the GUID of a DeviceArrival or DeviceManagerArrival event")
    }
    let wanted = Connections.normaliseGUID(guid)
    let handle = try state.withLock { s throws(CaptureError) -> UInt32 in
      guard s.handles[client] == .client else {
        throw CaptureError(.invalidHandle, "\(client) is not an open client handle (openclient gives one)")
      }
      // Bounded: a page opening without closing cannot grow the table without end.
      guard let opened = s.clients[client]?.opened.count, opened < Self.maximumHandlesPerClient else {
        throw CaptureError(
          .notAvailable,
          "client \(client) has \(Self.maximumHandlesPerClient) device handles open; close some first")
      }
      guard s.clientBytes <= configuration.maximumClientBytes - Self.deviceHandleCost else {
        throw CaptureError(
          .notAvailable, "capture serve's clients hold all the memory they may; close some handles first")
      }
      if wanted == managerGUID {
        let handle = Self.allocate(.deviceManager(client: client), &s)
        s.clients[client]?.opened[handle] = (Self.managerKey, managerGUID)
        s.clientBytes += Self.deviceHandleCost
        return handle
      }
      guard let connection = s.connections.connection(guid: wanted) else {
        throw CaptureError(.notFound, "no device is connected with GUID \(guid) (it left, or never arrived)")
      }
      let handle = Self.allocate(.device(client: client, key: connection.key, guid: connection.guid), &s)
      s.clients[client]?.opened[handle] = (connection.key, connection.guid)
      s.clientBytes += Self.deviceHandleCost
      return handle
    }
    return .object(["handle": .int(handle)])
  }

  func close(_ params: JSON) throws(CaptureError) -> JSON {
    let handle = try Self.handle(params)
    let (subscription, socket, output) = try state.withLock {
      s throws(CaptureError) -> (EngineSubscription?, WebSocketID?, (any ServerOutput)?) in
      guard let target = s.handles[handle] else {
        throw CaptureError(.invalidHandle, "no open handle \(handle)")
      }
      if target == .client {
        let socket = s.clients[handle]?.socket
        if let socket { s.bound[socket] = nil }
        return (Self.removeClient(handle, &s), socket, s.output)
      }
      s.handles[handle] = nil
      if let owner = target.owner, s.clients[owner]?.opened.removeValue(forKey: handle) != nil {
        s.clientBytes -= Self.deviceHandleCost
      }
      return (nil, nil, nil)
    }
    subscription?.cancel()
    // The client's events end with it; its socket is closed normally (CaptureJS only reports 1006).
    if let socket { output?.close(socket, code: 1000, reason: "client closed") }
    return .object(["handle": .int(handle)])
  }

  /// Device and device-manager handles one client may hold open at once.
  static let maximumHandlesPerClient = 1024
  /// The device manager's entry in `Client.opened` (no device key has this form).
  static let managerKey = "device manager"

  /// Handles are drawn from 1..<2^30: non-zero (CaptureJS tests the handle for truth) and well
  /// inside 2^31 (Flutter reads it as an int; other clients keep handles in 32-bit ints).
  static let handleRange: Range<UInt32> = 1..<(1 << 30)

  /// A new handle for `target`: random in `handleRange` from the system's generator, skipping every
  /// handle still open. Counting up from 1 let any page name another client's handle (a second
  /// socket took over client 1's events); a random one is known only to the client it was given
  /// to. At most 4,096 clients of at most 1,024 handles are open, a tiny part of 2^30, so a draw
  /// hits a free handle almost every time.
  static func allocate(_ target: Target, _ s: inout State) -> UInt32 {
    var generator = SystemRandomNumberGenerator()
    var handle = UInt32.random(in: handleRange, using: &generator)
    while s.handles[handle] != nil { handle = UInt32.random(in: handleRange, using: &generator) }
    s.handles[handle] = target
    return handle
  }

  /// Forgets a client and every handle it opened; its subscription is for the caller to cancel
  /// (outside the lock).
  static func removeClient(_ handle: UInt32, _ s: inout State) -> EngineSubscription? {
    guard let client = s.clients.removeValue(forKey: handle) else { return nil }
    s.handles[handle] = nil
    for opened in client.opened.keys { s.handles[opened] = nil }
    s.clientBytes -= cost(appID: client.appID, handles: client.opened.count)
    return client.subscription
  }

  // MARK: events

  /// waitforcaptureevent on a WebSocket: binds the socket to the client, tells it the device manager
  /// (when Bluetooth LE is there) and the devices already connected, then pushes every later event of
  /// the client and of the devices it opened (docs/capturejs.md §1.4). A repeat on the same socket
  /// changes nothing.
  ///
  /// A client's events go to the one socket that asked first, for the client's lifetime: another
  /// socket asking for the same handle, or a socket already serving another client asking for a
  /// second one, is refused with ESKT_INVALIDHANDLE and the same message as a handle that does not
  /// exist (so the refusal tells nothing about other clients), and the first socket goes on. Moving
  /// the stream let a second socket take over a page's events while its own socket starved, open.
  func waitForEvents(_ params: JSON, socket: WebSocketID) async throws(CaptureError) {
    let handle = try Self.handle(params)
    let claimed = try state.withLock { s throws(CaptureError) -> Bool in
      guard s.handles[handle] == .client, var client = s.clients[handle], !s.isStopping,
        s.sockets.contains(socket), client.socket == nil || client.socket == socket,
        s.bound[socket] == nil || s.bound[socket] == handle
      else {
        throw CaptureError(
          .invalidHandle,
          "\(handle) is not an open client handle this WebSocket may use (openclient gives one)")
      }
      if client.socket == socket { return false }
      // Claimed now, before the await below: a second socket asking meanwhile is refused.
      client.socket = socket
      s.clients[handle] = client
      s.bound[socket] = handle
      return true
    }
    guard claimed else { return }
    // The socket serves a client now: the transport never closes it to make room for another.
    output?.markInUse(socket)
    let managerAvailable = await engine.devices.bluetoothdReachable()
    // Back-pressure, not dropWhenBehind: the pump never waits on the client (the transport queues
    // each message, and a client whose unsent messages pass the transport's bound, one that stopped
    // reading, is dropped by `send` failing), so this queue only fills when the service itself cannot
    // keep up with the devices, and then the devices wait, as for `listen`, instead of every client
    // being dropped for the service's own pace (a flooding scanner did that to ten reading clients).
    let subscription = engine.subscribe("client \(handle)", policy: .backPressure)
    let start = state.withLock {
      s -> (replay: [JSON], output: (any ServerOutput)?)? in
      // The client closed, or its socket went, while bluetoothd was asked.
      guard !s.isStopping, var client = s.clients[handle], client.socket == socket, client.subscription == nil
      else { return nil }
      client.subscription = subscription
      client.seen = s.connections.current
      s.clients[handle] = client
      var replay: [JSON] = []
      if managerAvailable {
        replay.append(
          EventWire.message(
            handle: handle, id: .deviceManagerArrival,
            value: EventWire.deviceInfo(guid: managerGUID, DeviceManagerHandle.deviceInfo)))
      }
      for connection in s.connections.current.values.sorted(by: { $0.arrival < $1.arrival }) {
        replay.append(
          EventWire.message(
            handle: handle, id: .deviceArrival,
            value: EventWire.deviceInfo(guid: connection.guid, connection.info)))
      }
      return (replay, s.output)
    }
    guard let start, let output = start.output else {
      subscription.cancel()
      return
    }
    for message in start.replay {
      guard send(message, to: socket, output) else {
        drop(handle, socket: socket, reason: "the client stopped reading", output)
        subscription.cancel()
        return
      }
    }
    Task { await self.pump(subscription, client: handle, socket: socket, output) }
  }

  private func send(_ message: JSON, to socket: WebSocketID, _ output: any ServerOutput) -> Bool {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(160)
    message.write(to: &bytes)
    return output.send(socket, text: bytes)
  }

  /// One client's events until its subscription ends: translated (`messages`) and sent on its socket.
  /// A send the transport refuses (the client stopped reading) or a drop by the engine closes the
  /// socket with 1008 and frees the client's handles, nothing else.
  func pump(
    _ subscription: EngineSubscription, client handle: UInt32, socket: WebSocketID, _ output: any ServerOutput
  )
    async
  {
    for await event in subscription.events {
      let messages = state.withLock { s -> [JSON]? in
        guard var client = s.clients[handle], client.subscription === subscription else { return nil }
        let messages = Self.messages(for: event, &client, &s)
        s.clients[handle] = client
        return messages
      }
      guard let messages else { return }
      for message in messages where !send(message, to: socket, output) {
        subscription.cancel()
        drop(handle, socket: socket, reason: "client \(handle) stopped reading its WebSocket", output)
        return
      }
    }
    if let reason = subscription.dropReason {
      drop(handle, socket: socket, reason: reason.message, output)
    }
  }

  private func drop(_ handle: UInt32, socket: WebSocketID, reason: String, _ output: any ServerOutput) {
    let removed = state.withLock { s -> Bool in
      guard s.bound[socket] == handle else { return false }
      s.bound[socket] = nil
      _ = Self.removeClient(handle, &s)
      return true
    }
    guard removed else { return }
    configuration.warn("dropped client \(handle): \(reason)")
    output.close(socket, code: 1008, reason: Self.closeReason(reason))
  }

  /// A close frame's reason is at most 123 bytes of UTF-8 (RFC 6455 §5.5: 125 with the code).
  static func closeReason(_ text: String) -> String {
    guard text.utf8.count > 123 else { return text }
    var out = ""
    for ch in text {
      if out.utf8.count + String(ch).utf8.count > 123 { break }
      out.append(ch)
    }
    return out
  }

  /// The messages one engine event makes for one client (docs/capturejs.md §4): arrivals and removals
  /// on the client handle, a device's own events on each handle the client opened for that
  /// connection. An error of a device the client has not opened goes on the client handle, so it is
  /// not lost.
  static func messages(for event: Event, _ client: inout Client, _ s: inout State) -> [JSON] {
    let key = Connections.key(event.device)
    switch event.payload {
    case .deviceArrival:
      let guid = s.connections.guid(key: key, arrival: event.time)
      // Already told by the replay of waitforcaptureevent.
      if client.seen[key]?.guid == guid { return [] }
      client.seen[key] = Connections.Connection(key: key, guid: guid, info: event.device, arrival: event.time)
      return [
        EventWire.message(
          handle: client.handle, id: .deviceArrival, value: EventWire.deviceInfo(guid: guid, event.device))
      ]
    case .deviceRemoval:
      guard let connection = client.seen.removeValue(forKey: key) else { return [] }
      return [
        EventWire.message(
          handle: client.handle, id: .deviceRemoval,
          value: EventWire.deviceInfo(guid: connection.guid, event.device))
      ]
    default:
      var out: [JSON] = []
      var connection = client.seen[key]
      if connection == nil, let current = s.connections.current[key] {
        // The device arrived as this client subscribed, between the engine handing the arrival to the
        // subscribers and recording it: tell the arrival now, before its first event.
        client.seen[key] = current
        connection = current
        out.append(
          EventWire.message(
            handle: client.handle, id: .deviceArrival,
            value: EventWire.deviceInfo(guid: current.guid, current.info)))
      }
      let handles =
        connection.map { connection in
          client.opened.compactMap { handle, opened in
            opened.key == connection.key && opened.guid == connection.guid ? handle : nil
          }.sorted()
        } ?? []
      if handles.isEmpty {
        if case .error = event.payload,
          let message = EventWire.deviceEvent(handle: client.handle, event.payload)
        {
          out.append(message)
        }
        return out
      }
      for handle in handles {
        if let message = EventWire.deviceEvent(handle: handle, event.payload) { out.append(message) }
      }
      return out
    }
  }

  /// Sends events the service makes itself (discovery) on `handle`'s client socket.
  func emit(_ messages: [JSON], client: UInt32) {
    let target = state.withLock { s -> (WebSocketID, any ServerOutput)? in
      guard let socket = s.clients[client]?.socket, let output = s.output else { return nil }
      return (socket, output)
    }
    guard let (socket, output) = target else { return }
    for message in messages where !send(message, to: socket, output) { return }
  }
}
