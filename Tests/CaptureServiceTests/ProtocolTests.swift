import CaptureCore
import HTTPTransport
import Testing

@testable import CaptureService

@Suite("capture serve: JSON-RPC methods, envelopes and refusals")
struct ProtocolTests {
  @Test("openclient answers HTTP 200 with a non-zero handle; the id is echoed")
  func openClient() async throws {
    let h = Harness()
    let reply = try await h.rpc(
      "openclient", #"{"appId":"web:a","developerId":"b","appKey":"c"}"#, id: 0)
    let first = try #require(Harness.integer(reply, after: #""result":{"handle":"#))
    #expect(reply == #"{"id":0,"jsonrpc":"2.0","result":{"handle":\#(first)}}"#)
    #expect(first != 0)
    let second = try await h.openClient()
    #expect(second != 0 && second != first)
  }

  @Test(
    "ids are echoed with their JSON type: integer, string, null, fraction, exponent; absent is null",
    arguments: [
      (#""id":7,"#, #""id":7"#), (#""id":"7","#, #""id":"7""#), (#""id":null,"#, #""id":null"#),
      (#""id":1.5,"#, #""id":1.5"#), (#""id":2e3,"#, #""id":2e3"#), ("", #""id":null"#),
    ])
  func idsEchoed(sent: String, echoed: String) async throws {
    let h = Harness()
    let reply = try await h.call(
      #"{"jsonrpc":"2.0",\#(sent)"method":"openclient","params":{"appId":"a","developerId":"b","appKey":"c"}}"#
    )
    #expect(reply.hasPrefix("{" + echoed + ","), "\(reply)")
    #expect(reply.contains(#","jsonrpc":"2.0","result":{"handle":"#))
  }

  @Test("method names are case-insensitive")
  func caseInsensitive() async throws {
    let h = Harness()
    let reply = try await h.rpc("OpenClient", #"{"appId":"a","developerId":"b","appKey":"c"}"#)
    let client = try #require(Harness.integer(reply, after: #""result":{"handle":"#))
    #expect(reply == #"{"id":1,"jsonrpc":"2.0","result":{"handle":\#(client)}}"#)
    let version = try await h.rpc(
      "GETPROPERTY", #"{"handle":\#(client),"property":{"id":-2147418111,"type":0,"value":{}}}"#, id: 2)
    #expect(version.contains(#""property":{"id":-2147418111,"type":6,"value":{"#))
  }

  @Test(
    "appInfo that is not three non-empty strings is ESKT_INVALIDAPPINFO (-93), HTTP 200",
    arguments: [
      #"{"appId":"a","developerId":"b"}"#, #"{"appId":"a","developerId":"","appKey":"c"}"#,
      #"{"appId":1,"developerId":"b","appKey":"c"}"#, #"{}"#, #"null"#,
    ])
  func badAppInfo(params: String) async throws {
    let h = Harness()
    let reply = try await h.rpc("openclient", params)
    #expect(
      reply.hasPrefix(#"{"error":{"code":-93,"message":"appInfo needs appId, developerId and appKey"#),
      "\(reply)")
    #expect(reply.hasSuffix(#""id":1,"jsonrpc":"2.0"}"#))
    #expect(h.service.clientCount == 0)
  }

  @Test("a body that is not JSON is -32700 with id null, HTTP 200; the service goes on")
  func malformed() async throws {
    let h = Harness()
    for body in [
      "{", "not json", #"{"a":1}x"#, "",
      String(repeating: "[", count: 100) + String(repeating: "]", count: 100),
    ] {
      let reply = try await h.call(body)
      #expect(
        reply.hasPrefix(#"{"error":{"code":-32700,"message":"parse error: the request is not JSON"#),
        "\(body): \(reply)")
      #expect(reply.hasSuffix(#""id":null,"jsonrpc":"2.0"}"#))
    }
    #expect(try await h.openClient() != 0)
  }

  @Test("JSON that is not a request object is -32600; an unknown method is -32601")
  func invalidRequests() async throws {
    let h = Harness()
    #expect(try await h.call("[1,2]").hasPrefix(#"{"error":{"code":-32600,"#))
    #expect(try await h.call(#"{"id":4,"method":7}"#).hasPrefix(#"{"error":{"code":-32600,"#))
    let unknown = try await h.rpc("fly", "{}", id: 9)
    #expect(
      unknown
        == #"{"error":{"code":-32601,"message":"method not found: 'fly' (openclient, opendevice, close, getproperty, setproperty, waitforcaptureevent)"},"id":9,"jsonrpc":"2.0"}"#
    )
  }

  @Test("an unknown handle is ESKT_INVALIDHANDLE (-11) for every method that takes one")
  func unknownHandle() async throws {
    let h = Harness()
    _ = try await h.openClient()
    for (method, params) in [
      ("getproperty", #"{"handle":99,"property":{"id":-2147418111,"type":0,"value":{}}}"#),
      ("setproperty", #"{"handle":99,"property":{"id":1179653,"type":2,"value":1}}"#),
      ("close", #"{"handle":99}"#),
      ("opendevice", #"{"handle":99,"guid":"{00000000-0000-4000-8000-000000000000}"}"#),
      ("close", #"{"handle":0}"#),
    ] {
      let reply = try await h.rpc(method, params)
      #expect(reply.hasPrefix(#"{"error":{"code":-11,"#), "\(method): \(reply)")
    }
  }

  @Test("missing params are ESKT_INVALIDPARAMETER (-18); null keys are tolerated")
  func badParams() async throws {
    let h = Harness()
    let client = try await h.openClient()
    #expect(try await h.rpc("getproperty", #"{"property":{"id":1}}"#).hasPrefix(#"{"error":{"code":-18,"#))
    #expect(try await h.rpc("getproperty", #"{"handle":\#(client)}"#).hasPrefix(#"{"error":{"code":-18,"#))
    #expect(
      try await h.rpc("opendevice", #"{"handle":\#(client),"guid":null}"#).hasPrefix(
        #"{"error":{"code":-18,"#))
    let version = try await h.rpc(
      "getproperty", #"{"handle":\#(client),"guid":null,"property":{"id":-2147418111,"type":0,"value":null}}"#
    )
    #expect(version.contains(#""result":{"handle":\#(client),"property":{"id":-2147418111,"type":6,"#))
  }

  @Test("opendevice of a GUID no device has is ESKT_NOTFOUND (-17)")
  func unknownGUID() async throws {
    let h = Harness()
    let client = try await h.openClient()
    let reply = try await h.rpc(
      "opendevice", #"{"handle":\#(client),"guid":"{2EAAAA3F-B51E-4537-851C-31CA683C3BEF}"}"#)
    #expect(reply.hasPrefix(#"{"error":{"code":-17,"message":"no device is connected with GUID"#))
  }

  @Test("waitforcaptureevent over HTTP is ESKT_NOTSUPPORTED (-15): it works over the WebSocket")
  func waitOverHTTP() async throws {
    let h = Harness()
    let client = try await h.openClient()
    let reply = try await h.rpc("waitforcaptureevent", #"{"handle":\#(client)}"#)
    #expect(reply.hasPrefix(#"{"error":{"code":-15,"message":"waitforcaptureevent works over the WebSocket"#))
  }

  @Test("close of a client frees its handles, answers {handle}, and closes its socket normally (1000)")
  func closeClient() async throws {
    let h = Harness()
    let client = try await h.openClient()
    let socket = try await h.socket(for: client, id: 1)
    _ = try await h.output.frames(socket, count: 1)
    let manager = try #require(Harness.guid(h.output.frames(socket)[0]))
    let managerHandle = try await h.openDevice(client: client, guid: manager)
    let reply = try await h.rpc("close", #"{"handle":\#(client)}"#)
    #expect(reply == #"{"id":1,"jsonrpc":"2.0","result":{"handle":\#(client)}}"#)
    #expect(h.output.closed == [.init(socket: socket, code: 1000, reason: "client closed")])
    let again = try await h.rpc(
      "getproperty", #"{"handle":\#(managerHandle),"property":{"id":328193,"type":0}}"#)
    #expect(again.hasPrefix(#"{"error":{"code":-11,"#))
    #expect(h.service.clientCount == 0)
  }

  @Test("handles are non-zero and never reused while open")
  func handlesUnique() async throws {
    let h = Harness()
    var open: Set<Int> = []
    for round in 0..<20 {
      let handle = try await h.openClient()
      #expect(handle != 0)
      #expect(!open.contains(handle))
      open.insert(handle)
      if round % 3 == 0 {
        _ = try await h.rpc("close", #"{"handle":\#(handle)}"#)
        open.remove(handle)
      }
    }
  }
}

@Suite("capture serve: Host, Origin and CORS")
struct SecurityTests {
  static let api =
    #"{"jsonrpc":"2.0","id":1,"method":"openclient","params":{"appId":"a","developerId":"b","appKey":"c"}}"#

  @Test(
    "a Host that is not a loopback name or the --listen host with the served port is 403",
    arguments: [
      "evil.example:18481", "evil.example", "localhost:9999", "127.0.0.1", "127.0.0.1:18481.evil",
      "[::2]:18481",
      "127.0.0.256:18481", "",
    ])
  func refusedHost(host: String) async throws {
    let h = Harness()
    let response = try await h.request(headers: host.isEmpty ? [:] : ["host": host], body: Self.api)
    #expect(response.status == 403)
    #expect(String(decoding: response.body, as: UTF8.self).hasPrefix("forbidden: Host"))
    let upgrade = h.service.upgrade(
      HTTPRequest(id: 0, method: "GET", path: "/", headers: host.isEmpty ? [:] : ["host": host], body: []))
    #expect(upgrade?.status == 403)
    #expect(h.service.clientCount == 0)
  }

  @Test(
    "loopback Hosts with the served port are served",
    arguments: ["127.0.0.1:18481", "localhost:18481", "LOCALHOST:18481", "[::1]:18481", "127.4.5.6:18481"])
  func loopbackHost(host: String) async throws {
    let h = Harness()
    let response = try await h.request(headers: ["host": host], body: Self.api)
    #expect(response.status == 200)
  }

  @Test("the host --listen names is served too")
  func listenHost() async throws {
    let policy = AccessPolicy(listenHost: "192.168.7.2", port: 8080, allowedOrigins: [])
    #expect(policy.allowsHost("192.168.7.2:8080"))
    #expect(!policy.allowsHost("192.168.7.2:18481"))
    #expect(policy.allowsHost("localhost:8080"))
    let v6 = AccessPolicy(listenHost: "fd00::1", port: 18481, allowedOrigins: [])
    #expect(v6.allowsHost("[fd00::1]:18481"))
  }

  @Test("a refused origin gets 403 on the preflight, the POST and the upgrade, and one stderr line")
  func refusedOrigin() async throws {
    let h = Harness()
    let headers = ["host": "127.0.0.1:18481", "origin": "https://shop.example"]
    let preflight = try await h.request("OPTIONS", headers: headers)
    let post = try await h.request(headers: headers, body: Self.api)
    let upgrade = h.service.upgrade(
      HTTPRequest(id: 0, method: "GET", path: "/Capture/v1/api", headers: headers, body: []))
    #expect(preflight.status == 403)
    #expect(post.status == 403)
    #expect(upgrade?.status == 403)
    #expect(!preflight.headers.contains { $0.0 == "Access-Control-Allow-Origin" })
    #expect(
      h.warnings.all == [
        "refused a request from origin https://shop.example; to allow it, run capture serve with --allow-origin https://shop.example"
      ])
    #expect(h.service.clientCount == 0)
  }

  @Test(
    "absent and loopback origins are allowed; null and others only with --allow-origin",
    arguments: [
      ("http://localhost:8000", true), ("http://127.0.0.1", true), ("http://[::1]:3000", true),
      ("null", false),
      ("https://localhost:8443", true), ("http://localhost.evil.example", false),
      ("http://127.0.0.1.evil:80", false),
      ("https://singleentry.socketmobile.dev", false),
    ])
  func defaultOrigins(origin: String, allowed: Bool) async throws {
    let h = Harness()
    let response = try await h.request(
      headers: ["host": "127.0.0.1:18481", "origin": origin], body: Self.api)
    #expect(response.status == (allowed ? 200 : 403))
    if allowed {
      #expect(response.headers.first { $0.0 == "Access-Control-Allow-Origin" }?.1 == origin)
    }
  }

  @Test("--allow-origin adds exactly the origins given; * allows any when written out")
  func allowOrigin() async throws {
    let h = Harness(allowedOrigins: ["https://singleentry.socketmobile.dev"])
    let ok = try await h.request(
      headers: ["host": "127.0.0.1:18481", "origin": "https://SingleEntry.socketmobile.dev"], body: Self.api)
    #expect(ok.status == 200)
    let other = try await h.request(
      headers: ["host": "127.0.0.1:18481", "origin": "https://other.example"], body: Self.api)
    #expect(other.status == 403)
    let any = Harness(allowedOrigins: ["*"])
    let star = try await any.request(
      headers: ["host": "127.0.0.1:18481", "origin": "https://other.example"], body: Self.api)
    #expect(star.status == 200)
    #expect(star.headers.first { $0.0 == "Access-Control-Allow-Origin" }?.1 == "https://other.example")
  }

  @Test("the preflight: 204 with the CORS headers, and Private Network Access only when asked")
  func preflight() async throws {
    let h = Harness()
    var headers = [
      "host": "127.0.0.1:18481", "origin": "http://localhost:8000", "access-control-request-method": "POST",
      "access-control-request-headers": "content-type",
    ]
    let plain = try await h.request("OPTIONS", headers: headers)
    #expect(plain.status == 204)
    #expect(
      plain.headers.map { "\($0.0): \($0.1)" } == [
        "Access-Control-Allow-Origin: http://localhost:8000", "Vary: Origin",
        "Access-Control-Allow-Methods: POST, OPTIONS", "Access-Control-Allow-Headers: Content-Type",
        "Access-Control-Max-Age: 600",
      ])
    headers["access-control-request-private-network"] = "true"
    let pna = try await h.request("OPTIONS", headers: headers)
    #expect(pna.headers.contains { $0 == ("Access-Control-Allow-Private-Network", "true") })
    let post = try await h.request(
      headers: ["host": "127.0.0.1:18481", "origin": "http://localhost:8000"], body: Self.api)
    #expect(post.headers.first { $0.0 == "Access-Control-Allow-Origin" }?.1 == "http://localhost:8000")
    #expect(post.headers.contains { $0 == ("Vary", "Origin") })
  }

  @Test("paths: the API path (and //Capture/v1/api) takes POST; others are 404, other methods 405")
  func paths() async throws {
    let h = Harness()
    #expect(try await h.request(path: "//Capture/v1/api", body: Self.api).status == 200)
    #expect(try await h.request(path: "/other", body: Self.api).status == 404)
    let get = try await h.request("GET")
    #expect(get.status == 405)
    #expect(get.headers.contains { $0 == ("Allow", "POST, OPTIONS") })
  }

  @Test("WebSocket upgrades are accepted on / and /Capture/v1/api, refused elsewhere")
  func upgradePaths() {
    let h = Harness()
    func upgrade(_ path: String) -> Int? {
      h.service.upgrade(HTTPRequest(id: 0, method: "GET", path: path, headers: Harness.loopback, body: []))?
        .status
    }
    #expect(upgrade("/") == nil)
    #expect(upgrade("/Capture/v1/api") == nil)
    #expect(upgrade("/ws") == 404)
  }
}
