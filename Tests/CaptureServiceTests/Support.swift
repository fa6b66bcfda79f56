import CaptureCore
import HTTPTransport
import Synchronization
import TestSupport
import Testing

@testable import CaptureService

/// The transport's side as a test double: every response, frame and close the service asks for is
/// recorded; `refuse` makes `send` report a socket whose unsent frames are over the bound.
final class RecordingOutput: ServerOutput, Sendable {
  struct Close: Equatable {
    var socket: WebSocketID
    var code: UInt16
    var reason: String
  }

  private let responses = Mutex<[UInt64: HTTPResponse]>([:])
  private let frames = Mutex<[WebSocketID: [String]]>([:])
  private let closes = Mutex<[Close]>([])
  let refused = Mutex<Set<WebSocketID>>([])

  func respond(_ requestID: UInt64, _ response: HTTPResponse) {
    responses.withLock { $0[requestID] = response }
  }

  func send(_ socket: WebSocketID, text: [UInt8]) -> Bool {
    if refused.withLock({ $0.contains(socket) }) { return false }
    frames.withLock { $0[socket, default: []].append(String(decoding: text, as: UTF8.self)) }
    return true
  }

  func close(_ socket: WebSocketID, code: UInt16, reason: String) {
    closes.withLock { $0.append(Close(socket: socket, code: code, reason: reason)) }
  }

  private let inUse = Mutex<Set<WebSocketID>>([])
  func markInUse(_ socket: WebSocketID) { _ = inUse.withLock { $0.insert(socket) } }
  /// The sockets the service marked in use (bound to a client).
  var socketsInUse: Set<WebSocketID> { inUse.withLock { $0 } }

  func response(_ id: UInt64) async throws -> HTTPResponse {
    try await eventually("a response to request \(id)") { self.responses.withLock { $0[id] } }
  }

  func frames(_ socket: WebSocketID) -> [String] { frames.withLock { $0[socket] ?? [] } }

  /// Waits until `socket` has received at least `count` frames, and returns them all.
  func frames(_ socket: WebSocketID, count: Int) async throws -> [String] {
    try await eventually("\(count) frames on \(socket)") {
      let all = self.frames(socket)
      return all.count >= count ? all : nil
    }
  }

  var closed: [Close] { closes.withLock { $0 } }
}

struct Timeout: Error, CustomStringConvertible {
  var what: String
  var description: String { "timed out waiting for \(what)" }
}

/// Polls `probe` every 5 ms until it gives a value, at most 30 s (generous: the machine is shared).
@discardableResult
func eventually<T: Sendable>(_ what: String, _ probe: @Sendable () -> T?) async throws -> T {
  let deadline = ContinuousClock.now + .seconds(120)
  while true {
    if let value = probe() { return value }
    guard ContinuousClock.now < deadline else { throw Timeout(what: what) }
    try await Task.sleep(for: .milliseconds(5))
  }
}

extension FakeDevice {
  /// An S740 whose events the test sends, with a property table it answers from and every call it
  /// was given recorded (`lines`: the calls `capture get`/`set`/`trigger` make on a driver); it takes
  /// DataConfirmationDevice and DataSourceDevice writes, and answers a data source as enabled.
  convenience init(
    id: String, name: String = "Socket S740 [E537BA]", type: DeviceType = .scannerS740, arrive: Bool = true
  ) {
    var behaviour = FakeDevice.Behaviour()
    behaviour.acceptsWithoutStoring = [.dataConfirmationDevice, .dataSourceDevice]
    behaviour.echoesDataSources = true
    self.init(
      DeviceInfo(id: id, name: name, type: type),
      capabilities: .fromValues(
        alsoWritable: [.triggerDevice, .dataConfirmationDevice], triggers: [.start, .stop],
        events: [.decodedData]),
      values: [
        .friendlyNameDevice: .string(name), .batteryLevelDevice: .ulong(BatteryLevel(current: 90).packed),
        .versionDevice: .version(
          VersionValue(
            major: 1, middle: 2, minor: 3, build: 4, year: 2024, month: 5, day: 6, hour: 7, minute: 8)),
        .localDecodeActionDevice: .byte(1), .notificationsDevice: .ulong(0),
        .timersDevice: .array([0, 1, 0, 30, 0, 60, 0, 120]),
      ],
      start: arrive ? .arrival : .silent, behaviour: behaviour)
  }
}

/// Device management without Bluetooth hardware: bluetoothd "reachable" as the test says, one D600
/// found by discovery, connect succeeds; every call recorded; it opens nothing by itself.
func serviceSystem(bluetooth: Bool) -> FakeDeviceSystem {
  var answers = FakeDeviceSystem.Answers()
  answers.bluetoothd = bluetooth
  answers.discovered = [
    DiscoveredDeviceInfo(
      address: "00:11:22:7E:F6:19", addressType: "public", name: "Socket D600 [7EF619]", rssi: -40,
      uuids: ["6CB501B7-96F6-4EEF-ACB1-D7535F153CF0"], isSocketMobile: true, type: .scannerD600)
  ]
  answers.connectsAnyAs = "Socket D600 [7EF619]"
  answers.unknown = { _ in CaptureError(.notFound, "not known") }
  answers.openFailure = { _ in CaptureError(.notAvailable, "the fake system opens nothing by itself") }
  return FakeDeviceSystem(answers)
}

/// What a callback was given, in order.
final class Log<T: Sendable>: Sendable {
  private let items = Mutex<[T]>([])
  func append(_ item: T) { items.withLock { $0.append(item) } }
  var all: [T] { items.withLock { $0 } }
}

/// A service over an engine with the fake system, driven the way the transport drives it.
final class Harness: Sendable {
  let system: FakeDeviceSystem
  let temporary = TemporaryDirectory()
  let store: StateStore
  let engine: CaptureEngine
  let service: CaptureService
  let output = RecordingOutput()
  let warnings = Log<String>()
  private let nextID = Atomic<UInt64>(1)

  init(
    bluetooth: Bool = true, allowedOrigins: [String] = [],
    configure: (inout CaptureService.Configuration) -> Void = { _ in }
  ) {
    system = serviceSystem(bluetooth: bluetooth)
    store = temporary.stateStore()
    engine = CaptureEngine(system: system, store: store)
    let warnings = self.warnings
    var configuration = CaptureService.Configuration(
      policy: AccessPolicy(listenHost: "127.0.0.1", port: 18481, allowedOrigins: allowedOrigins),
      warn: { line in warnings.append(line) },
      discoveryWindow: .milliseconds(50))
    configure(&configuration)
    service = CaptureService(engine: engine, configuration: configuration)
    service.attach(output)
  }

  static let loopback = ["host": "127.0.0.1:18481"]

  func request(
    _ method: String = "POST", path: String = "/Capture/v1/api", headers: [String: String] = loopback,
    body: String = ""
  ) async throws -> HTTPResponse {
    let id = nextID.add(1, ordering: .relaxed).newValue
    service.request(HTTPRequest(id: id, method: method, path: path, headers: headers, body: Array(body.utf8)))
    return try await output.response(id)
  }

  /// POSTs one JSON-RPC body and returns the reply's text (the status must be 200).
  func call(_ body: String, headers: [String: String] = loopback) async throws -> String {
    let response = try await request(body: body)
    #expect(response.status == 200)
    #expect(response.contentType == "application/json")
    return String(decoding: response.body, as: UTF8.self)
  }

  func rpc(_ method: String, _ params: String, id: Int = 1) async throws -> String {
    try await call(#"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)","params":\#(params)}"#)
  }

  /// openclient with good appInfo: the client handle.
  func openClient() async throws -> Int {
    let reply = try await rpc(
      "openclient",
      #"{"appId":"web:com.example.test","developerId":"bb57d8e1-f911-47ba-b510-693be162686a","appKey":"MC4CFQ"}"#
    )
    return try #require(Self.integer(reply, after: #""result":{"handle":"#))
  }

  /// A WebSocket opened on `path` and bound to `client` with waitforcaptureevent.
  func socket(for client: Int, id: UInt64, path: String = "/Capture/v1/api") async throws -> WebSocketID {
    let socket = WebSocketID(id)
    let upgrade = HTTPRequest(id: 0, method: "GET", path: path, headers: Self.loopback, body: [])
    #expect(service.upgrade(upgrade)?.status == nil)
    service.opened(socket, request: upgrade)
    service.text(
      socket,
      Array(#"{"jsonrpc":"2.0","id":1,"method":"waitforcaptureevent","params":{"handle":\#(client)}}"#.utf8))
    return socket
  }

  func openDevice(client: Int, guid: String) async throws -> Int {
    let reply = try await rpc("opendevice", #"{"handle":\#(client),"guid":"\#(guid)"}"#)
    return try #require(Self.integer(reply, after: #""result":{"handle":"#), "opendevice: \(reply)")
  }

  static func integer(_ text: String, after marker: String) -> Int? {
    guard let range = text.firstRange(of: marker) else { return nil }
    let digits = text[range.upperBound...].prefix { $0 == "-" || $0.isNumber }
    return Int(digits)
  }

  /// The GUID in a DeviceArrival frame.
  static func guid(_ frame: String) -> String? {
    guard let range = frame.firstRange(of: #""guid":""#) else { return nil }
    return String(frame[range.upperBound...].prefix { $0 != "\"" })
  }
}

/// A client with its socket bound and one fake device attached before it subscribed: what most tests
/// of the service start from.
struct Scene {
  let h: Harness
  let device: FakeDevice
  let client: Int
  let socket: WebSocketID
  /// The device's arrival GUID, from the replay.
  let guid: String

  /// With `bluetooth`, the replay's DeviceManagerArrival comes first and the device's arrival second.
  static func make(bluetooth: Bool = false, device: FakeDevice = FakeDevice(id: "serial:/dev/pts/7"))
    async throws -> Scene
  {
    let h = Harness(bluetooth: bluetooth)
    h.engine.attach([device])
    try await eventually("the arrival recorded") {
      h.service.state.withLock { $0.connections.current.isEmpty } ? nil : true
    }
    let client = try await h.openClient()
    let socket = try await h.socket(for: client, id: 1)
    let frames = try await h.output.frames(socket, count: bluetooth ? 2 : 1)
    let guid = try #require(Harness.guid(frames.last!))
    return Scene(h: h, device: device, client: client, socket: socket, guid: guid)
  }

  /// `opendevice` of the device's GUID: its device handle.
  func openDevice() async throws -> Int { try await h.openDevice(client: client, guid: guid) }

  /// The scene with the device opened, as the property tests take it apart.
  static func opened(_ device: FakeDevice) async throws -> (
    Harness, FakeDevice, client: Int, device: Int, socket: WebSocketID
  ) {
    let s = try await make(bluetooth: true, device: device)
    return (s.h, s.device, s.client, try await s.openDevice(), s.socket)
  }
}
