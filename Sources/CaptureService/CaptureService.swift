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

    public init(
      policy: AccessPolicy, warn: @escaping @Sendable (String) -> Void = { _ in },
      discoveryWindow: Duration = .seconds(10), maximumClients: Int = 4096
    ) {
      self.policy = policy
      self.warn = warn
      self.discoveryWindow = discoveryWindow
      self.maximumClients = maximumClients
    }
  }

  /// What a handle stands for. Handles are one namespace, non-zero, and never reused while open.
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
    var nextHandle: UInt32 = 1
    var handles: [UInt32: Target] = [:]
    var clients: [UInt32: Client] = [:]
    var clientOrder: UInt64 = 0
    /// Sockets bound to a client by waitforcaptureevent.
    var bound: [WebSocketID: UInt32] = [:]
    /// Every open WebSocket (each gets a close frame when the service stops).
    var sockets: Set<WebSocketID> = []
    var connections = Connections()
    /// Refused origins already told on stderr: one line each, so a page retrying cannot flood it.
    var toldOrigins: Set<String> = []
    var isStopping = false
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
      case .deviceArrival, .deviceRemoval: self.state.withLock { $0.connections.observe(event) }
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
    if stopping { output?.close(socket, code: 1001, reason: "capture serve is stopping") }
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
    case .refused(let origin):
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

  /// One JSON-RPC message from a POST body or a WebSocket frame; the reply's bytes, or nil when none
  /// is due (waitforcaptureevent answers with events).
  func handle(_ bytes: [UInt8], socket: WebSocketID?) async -> [UInt8]? {
    let json: JSON
    do { json = try JSONParser.parse(bytes) } catch {
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

  /// openclient: appInfo is three non-empty strings. No signature can be checked (no key is public,
  /// docs/capturejs.md §5), so any three are taken.
  func openClient(_ params: JSON) throws(CaptureError) -> JSON {
    var info: [String] = []
    for key in ["appId", "developerId", "appKey"] {
      guard let value = params[key]?.string, !value.isEmpty else {
        throw CaptureError(
          .invalidAppInfo,
          "appInfo needs appId, developerId and appKey, each a non-empty string (\(key) is not)")
      }
      info.append(value)
    }
    let (handle, evicted) = state.withLock { s -> (UInt32?, EngineSubscription?) in
      if s.isStopping { return (nil, nil) }
      var evicted: EngineSubscription?
      if s.clients.count >= configuration.maximumClients {
        guard let oldest = s.clients.values.filter({ $0.socket == nil }).min(by: { $0.order < $1.order })
        else {
          return (nil, nil)
        }
        evicted = Self.removeClient(oldest.handle, &s)
      }
      let handle = Self.allocate(.client, &s)
      s.clientOrder += 1
      s.clients[handle] = Client(handle: handle, appID: info[0], order: s.clientOrder)
      return (handle, evicted)
    }
    evicted?.cancel()
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
      if wanted == managerGUID {
        let handle = Self.allocate(.deviceManager(client: client), &s)
        s.clients[client]?.opened[handle] = (Self.managerKey, managerGUID)
        return handle
      }
      guard let connection = s.connections.connection(guid: wanted) else {
        throw CaptureError(.notFound, "no device is connected with GUID \(guid) (it left, or never arrived)")
      }
      let handle = Self.allocate(.device(client: client, key: connection.key, guid: connection.guid), &s)
      s.clients[client]?.opened[handle] = (connection.key, connection.guid)
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
      if let owner = target.owner { s.clients[owner]?.opened[handle] = nil }
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

  /// A new handle for `target`: counting up from 1, wrapping before 2^31 (some clients keep handles
  /// in 32-bit ints), skipping 0 and every handle still open.
  static func allocate(_ target: Target, _ s: inout State) -> UInt32 {
    while s.handles[s.nextHandle] != nil || s.nextHandle == 0 {
      s.nextHandle = s.nextHandle >= UInt32(Int32.max) ? 1 : s.nextHandle + 1
    }
    let handle = s.nextHandle
    s.nextHandle = handle >= UInt32(Int32.max) ? 1 : handle + 1
    s.handles[handle] = target
    return handle
  }

  /// Forgets a client and every handle it opened; its subscription is for the caller to cancel
  /// (outside the lock).
  static func removeClient(_ handle: UInt32, _ s: inout State) -> EngineSubscription? {
    guard let client = s.clients.removeValue(forKey: handle) else { return nil }
    s.handles[handle] = nil
    for opened in client.opened.keys { s.handles[opened] = nil }
    return client.subscription
  }

  // MARK: events

  /// waitforcaptureevent on a WebSocket: binds the socket to the client, tells it the device manager
  /// (when Bluetooth LE is there) and the devices already connected, then pushes every later event of
  /// the client and of the devices it opened (docs/capturejs.md §1.4). A repeat on the same socket
  /// changes nothing.
  func waitForEvents(_ params: JSON, socket: WebSocketID) async throws(CaptureError) {
    let handle = try Self.handle(params)
    try state.withLock { s throws(CaptureError) in
      guard s.handles[handle] == .client else {
        throw CaptureError(.invalidHandle, "\(handle) is not an open client handle (openclient gives one)")
      }
    }
    let managerAvailable = await engine.system.bluetoothdReachable(adapter: engine.configuration.adapter)
    // Back-pressure, not dropWhenBehind: the pump never waits on the client (the transport queues
    // each message, and a client whose unsent messages pass the transport's bound, one that stopped
    // reading, is dropped by `send` failing), so this queue only fills when the service itself cannot
    // keep up with the devices, and then the devices wait, as for `listen`, instead of every client
    // being dropped for the service's own pace (a flooding scanner did that to ten reading clients).
    let subscription = engine.subscribe("client \(handle)", policy: .backPressure)
    let start = state.withLock {
      s -> (replay: [JSON], previous: EngineSubscription?, output: (any ServerOutput)?)? in
      guard !s.isStopping, var client = s.clients[handle], s.sockets.contains(socket) else { return nil }
      if client.socket == socket { return nil }
      let previous = client.subscription
      if let old = client.socket { s.bound[old] = nil }
      if let other = s.bound[socket], other != handle, let stale = Self.removeClient(other, &s) {
        stale.cancel()
      }
      client.socket = socket
      client.subscription = subscription
      client.seen = s.connections.current
      s.clients[handle] = client
      s.bound[socket] = handle
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
      return (replay, previous, s.output)
    }
    guard let start, let output = start.output else {
      subscription.cancel()
      return
    }
    start.previous?.cancel()
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
