// Who may reach the service and what one client may hold. Each test fails on the service
// before the fix it names.

import CaptureCore
import HTTPTransport
import TestSupport
import Testing

@testable import CaptureService

@Suite("capture serve: Origin null, handles, appInfo and socket bounds")
struct HardeningTests {
  static let api = SecurityTests.api

  /// Every sandboxed iframe on any website and every opaque origin sends `Origin: null`.
  @Test(
    "Origin null is refused on the preflight (Private Network Access too), the POST and the upgrade",
    arguments: [[], ["*"]])
  func nullOriginRefused(allowed: [String]) async throws {
    let h = Harness(allowedOrigins: allowed)
    let headers = [
      "host": "127.0.0.1:18481", "origin": "null", "access-control-request-method": "POST",
      "access-control-request-headers": "content-type", "access-control-request-private-network": "true",
    ]
    let preflight = try await h.request("OPTIONS", headers: headers)
    #expect(preflight.status == 403)
    #expect(!preflight.headers.contains { $0.0.hasPrefix("Access-Control-Allow") })
    let post = try await h.request(headers: ["host": "127.0.0.1:18481", "origin": "null"], body: Self.api)
    #expect(post.status == 403)
    let upgrade = h.service.upgrade(
      HTTPRequest(
        id: 0, method: "GET", path: "/Capture/v1/api",
        headers: ["host": "127.0.0.1:18481", "origin": "null"],
        body: []))
    #expect(upgrade?.status == 403)
    #expect(h.service.clientCount == 0)
  }

  @Test("--allow-origin null, written out, admits the opaque origin")
  func nullOriginNamed() async throws {
    let h = Harness(allowedOrigins: ["null"])
    let post = try await h.request(headers: ["host": "127.0.0.1:18481", "origin": "null"], body: Self.api)
    #expect(post.status == 200)
    #expect(post.headers.first { $0.0 == "Access-Control-Allow-Origin" }?.1 == "null")
  }

  @Test(
    "file:// and malformed origins are refused, * or not",
    arguments: [
      "file://", "file:///home/user/page.html", "http://localhost:1, https://evil.example", "*", "",
    ])
  func opaqueAndMalformedOriginsRefused(origin: String) async throws {
    for allowed in [[], ["*"]] {
      let h = Harness(allowedOrigins: allowed)
      let post = try await h.request(headers: ["host": "127.0.0.1:18481", "origin": origin], body: Self.api)
      #expect(post.status == 403, "\(origin) with \(allowed)")
    }
  }

  @Test("* still admits a named-less tuple origin such as https://shop.example")
  func starAdmitsTupleOrigins() async throws {
    let h = Harness(allowedOrigins: ["*"])
    let post = try await h.request(
      headers: ["host": "127.0.0.1:18481", "origin": "https://shop.example:8443"], body: Self.api)
    #expect(post.status == 200)
  }

  @Test("a refused origin is shown at most 200 characters long in the stderr line")
  func longOriginShownBounded() async throws {
    let h = Harness()
    let origin = "https://evil.example/" + String(repeating: "a", count: 5000)
    let post = try await h.request(headers: ["host": "127.0.0.1:18481", "origin": origin], body: Self.api)
    #expect(post.status == 403)
    let line = try #require(h.warnings.all.first)
    #expect(line.count < 700, "\(line.count) characters")
  }

  @Test("handles are random in 1..<2^30, not 1, 2, 3…")
  func handlesNotSequential() async throws {
    let h = Harness()
    var handles: [Int] = []
    for _ in 0..<32 { handles.append(try await h.openClient()) }
    #expect(Set(handles).count == 32)
    #expect(handles.allSatisfy { $0 >= 1 && $0 < 1 << 30 })
    // Counting up gave 1...32; 32 random draws from 2^30 land that close together practically never.
    #expect(handles.max()! - handles.min()! > 1000, "\(handles)")
  }

  @Test("a second socket asking for a client's events is refused; the first keeps its stream")
  func secondSocketCannotTakeOver() async throws {
    let s = try await Scene.make(device: FakeDevice(id: "serial:/dev/pts/9"))
    let (h, device, client, own) = (s.h, s.device, s.client, s.socket)
    let device1 = try await s.openDevice()
    // Another page's socket names the same handle.
    let thief = try await h.socket(for: client, id: 2)
    let refusal = try await h.output.frames(thief, count: 1)
    #expect(refusal.count == 1)
    #expect(refusal[0].hasPrefix(#"{"error":{"code":-11,"message":"\#(client) is not an open client handle"#))
    // A socket serving one client cannot ask for another's either.
    let other = try await h.openClient()
    h.service.text(
      own,
      Array(#"{"jsonrpc":"2.0","id":2,"method":"waitforcaptureevent","params":{"handle":\#(other)}}"#.utf8))
    let ownFrames = try await h.output.frames(own, count: 2)
    #expect(ownFrames[1].hasPrefix(#"{"error":{"code":-11,"#))
    // The page's own socket still gets its codes; the thief gets nothing more and nothing was closed.
    device.code("STILL-MINE")
    let frames = try await h.output.frames(own, count: 3)
    #expect(frames[2].contains(#""handle":\#(device1)"#))
    #expect(h.output.frames(thief).count == 1)
    #expect(h.output.closed.isEmpty)
    #expect(h.service.state.withLock { $0.clients[UInt32(client)]?.socket } == own)
    #expect(h.output.socketsInUse == [own])
  }

  @Test("appInfo strings are at most 256 bytes: a longer one is ESKT_INVALIDAPPINFO and no client is kept")
  func appInfoBounded() async throws {
    let h = Harness()
    let long = String(repeating: "x", count: 257)
    for params in [
      #"{"appId":"web:\#(long)","developerId":"b","appKey":"c"}"#,
      #"{"appId":"a","developerId":"\#(long)","appKey":"c"}"#,
      #"{"appId":"a","developerId":"b","appKey":"\#(long)"}"#,
    ] {
      let reply = try await h.rpc("openclient", params)
      #expect(reply.hasPrefix(#"{"error":{"code":-93,"message":"appInfo's "#), "\(reply)")
    }
    #expect(h.service.clientCount == 0)
    let exact = String(repeating: "y", count: 256)
    let ok = try await h.rpc("openclient", #"{"appId":"\#(exact)","developerId":"b","appKey":"c"}"#)
    #expect(ok.contains(#""result":{"handle":"#))
  }

  @Test(
    "client memory is accounted: past the bound openclient frees the oldest socketless client, then is refused"
  )
  func clientMemoryBounded() async throws {
    // Room for three clients with no device handle.
    let h = Harness {
      $0.maximumClientBytes = 3 * CaptureService.cost(appID: "web:com.example.test", handles: 0)
    }
    let first = try await h.openClient()
    let second = try await h.openClient()
    _ = try await h.socket(for: second, id: 2)
    let third = try await h.openClient()
    _ = try await h.socket(for: third, id: 3)
    // The fourth frees the first (no socket), not the two with their sockets.
    let fourth = try await h.openClient()
    _ = try await h.socket(for: fourth, id: 4)
    #expect(h.service.clientCount == 3)
    let gone = try await h.rpc("close", #"{"handle":\#(first)}"#)
    #expect(gone.hasPrefix(#"{"error":{"code":-11,"#))
    // Every client has its socket now: a fifth is refused, and a device handle does not fit either.
    let refused = try await h.rpc(
      "openclient", #"{"appId":"web:com.example.test","developerId":"b","appKey":"c"}"#)
    #expect(refused.hasPrefix(#"{"error":{"code":-32,"#), "\(refused)")
    let manager = try #require(Harness.guid(try await h.output.frames(WebSocketID(2), count: 1)[0]))
    let device = try await h.rpc("opendevice", #"{"handle":\#(second),"guid":"\#(manager)"}"#)
    #expect(device.hasPrefix(#"{"error":{"code":-32,"#), "\(device)")
    // Closing gives the memory back.
    _ = try await h.rpc("close", #"{"handle":\#(fourth)}"#)
    #expect(try await h.openClient() != 0)
    #expect(
      h.service.state.withLock { $0.clientBytes } == 3
        * CaptureService.cost(appID: "web:com.example.test", handles: 0))
  }

  @Test("a WebSocket that does not ask for a client's events within the deadline is closed with 1008")
  func unboundSocketClosed() async throws {
    let h = Harness { $0.bindDeadline = .milliseconds(200) }
    let idle = WebSocketID(7)
    let upgrade = HTTPRequest(id: 0, method: "GET", path: "/", headers: Harness.loopback, body: [])
    h.service.opened(idle, request: upgrade)
    let client = try await h.openClient()
    let bound = try await h.socket(for: client, id: 8)
    try await eventually("the idle socket closed") { h.output.closed.isEmpty ? nil : true }
    #expect(
      h.output.closed == [
        .init(socket: idle, code: 1008, reason: "no waitforcaptureevent within 0.2 s of opening")
      ])
    // The bound one stays open past its own deadline: its events keep it (waited for by a second
    // idle socket's close, which comes after it).
    let later = WebSocketID(9)
    h.service.opened(later, request: upgrade)
    try await eventually("the second idle socket closed") { h.output.closed.count == 2 ? true : nil }
    #expect(!h.output.closed.contains { $0.socket == bound })
  }
}
