// The transport's defences against clients that hold connections, pipeline, or send what it cannot
// read (docs/capturejs.md §1.3): each test fails on the transport before the fix it names.

import Foundation
import Synchronization
import Testing

@testable import HTTPTransport

#if canImport(Glibc)
  import Glibc
#endif

@Suite("HTTP transport: limits and hostile clients")
struct HardeningTests {
  @Test func aRequestWithABodyAndAnotherPipelinedBehindItIsRefused400BeforeEitherRuns() async throws {
    let served = try Served()
    let port = served.port
    let (first, end, after) = try await onOwnThread {
      () -> (RawResponse?, (bytes: [UInt8], closed: Bool), RawResponse?) in
      let client = try RawClient(port: port, timeoutSeconds: 30)
      client.write(
        "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nA"
          + "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nB")
      let first = client.readResponse()
      let end = client.readAll()
      let other = try RawClient(port: port)
      other.write("GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
      return (first, end, other.readResponse())
    }
    await served.stop()
    // One clear answer, then the close; neither request was run (it used to run /a and answer none).
    #expect(first?.status == 400)
    #expect(first?.headers["connection"] == "close")
    let text = String(decoding: first?.body ?? [], as: UTF8.self)
    #expect(text.contains("HTTP pipelining is not supported"))
    #expect(end.closed)
    #expect(end.bytes.isEmpty)
    #expect(after?.status == 200)
    #expect(served.recorder.requests.map(\.path) == ["/after"])
  }

  @Test func pipelinedRequestsWithoutABodyAreAnsweredInOrder() async throws {
    let served = try Served()
    let port = served.port
    let answers = try await onOwnThread { () -> [RawResponse?] in
      let client = try RawClient(port: port, timeoutSeconds: 30)
      client.write("GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n\r\n")
      return [client.readResponse(), client.readResponse()]
    }
    await served.stop()
    #expect(answers.map { $0?.headers["x-path"] } == ["/one", "/two"])
    #expect(served.recorder.requests.map(\.path) == ["/one", "/two"])
  }

  /// An answer is two writes (headers, body); with Nagle's algorithm the second waited for the
  /// client's delayed ACK, 40 ms on Linux, on every request after the first on a connection.
  @Test func requestsOnAKeptAliveConnectionAreAnsweredWithoutWaitingForADelayedACK() async throws {
    let served = try Served()
    let port = served.port
    let count = 20
    let (statuses, kept, fresh, noDelay) = try await onOwnThread { () -> ([Int], Double, Double, Int32?) in
      func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
      let client = try RawClient(port: port, timeoutSeconds: 30)
      var statuses: [Int] = []
      var kept: [Double] = []
      var fresh: [Double] = []
      for index in 0..<count {
        let request = "POST /k\(index) HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
        var start = monotonicSeconds()
        client.write(request)
        statuses.append(client.readResponse()?.status ?? 0)
        kept.append(monotonicSeconds() - start)
        // The same request on a new connection, in turn, so both see the same load.
        start = monotonicSeconds()
        let other = try RawClient(port: port, timeoutSeconds: 30)
        other.write(request)
        statuses.append(other.readResponse()?.status ?? 0)
        fresh.append(monotonicSeconds() - start)
      }
      return (statuses, median(kept), median(fresh), serverSideNoDelay(port: port, client: client.fd))
    }
    await served.stop()
    #expect(statuses == Array(repeating: 200, count: 2 * count))
    // The cause: the server's end of the connection sends at once.
    #expect(noDelay == 1)
    // The effect: a kept-alive request is no slower than a new connection's, give or take the load
    // (a delayed ACK is 40 ms on every one of them).
    #expect(kept < fresh + 0.02, "median \(Int(kept * 1000)) ms kept alive, \(Int(fresh * 1000)) ms new")
  }

  /// Values of 4,096 bytes or more were left out, so a long Origin looked absent.
  @Test func aHeaderOfMoreThan4KiBReachesTheHandlerWhole() async throws {
    let served = try Served()
    let port = served.port
    let origin = "https://evil.example/" + String(repeating: "o", count: 5000)
    let (response, upgrade) = try await onOwnThread { () -> (RawResponse?, RawResponse?) in
      let client = try RawClient(port: port)
      client.write("POST /long HTTP/1.1\r\nHost: x\r\nOrigin: \(origin)\r\nContent-Length: 0\r\n\r\n")
      let response = client.readResponse()
      let socket = try RawClient(port: port)
      socket.write(
        "GET /ws HTTP/1.1\r\nHost: x\r\nOrigin: \(origin)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
          + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
      return (response, socket.readResponse())
    }
    await served.stop()
    #expect(response?.status == 200)
    #expect(served.recorder.requests.first?.headers["origin"] == origin)
    #expect(upgrade?.status == 101)
    #expect(served.recorder.upgrades.first?.headers["origin"] == origin)
  }

  @Test func atTheConnectionLimitANewClientClosesTheIdlestWebSocketNoClientUses() async throws {
    let served = try Served { $0.maxConnections = 4 }
    let recorder = served.recorder
    let port = served.port
    let sockets = try await upgradedClients(4, port: port)
    #expect(await recorder.wait { _ in recorder.openedSockets.count == 4 })
    let answer = try await onOwnThread { () -> RawResponse? in
      let client = try RawClient(port: port)
      client.write("GET /real HTTP/1.1\r\nHost: x\r\n\r\n")
      return client.readResponse()
    }
    // The real client is served (it used to be accepted and closed), and the socket that waited
    // longest made room.
    #expect(answer?.status == 200)
    let first = recorder.openedSockets.first
    #expect(await recorder.wait { _ in recorder.closedSockets == [first].compactMap { $0 } })
    await served.stop()
    _ = sockets
  }

  @Test func aWebSocketMarkedInUseIsNeverClosedToMakeRoom() async throws {
    let served = try Served { $0.maxConnections = 2 }
    let recorder = served.recorder
    let port = served.port
    let sockets = try await upgradedClients(2, port: port)
    #expect(await recorder.wait { _ in recorder.openedSockets.count == 2 })
    for socket in recorder.openedSockets {
      served.server.markInUse(socket)
      // Queued after the mark: once its frame arrives, the loop has taken the mark.
      #expect(served.server.send(socket, text: Array("marked".utf8)))
    }
    let delivered = try await onOwnThread { () -> Bool in
      sockets.allSatisfy { client in
        var chunk = [UInt8](repeating: 0, count: 64)
        return chunk.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) } > 0
      }
    }
    #expect(delivered)
    let refused = try await onOwnThread { () -> (bytes: [UInt8], closed: Bool) in
      let client = try RawClient(port: port)
      client.write("GET /late HTTP/1.1\r\nHost: x\r\n\r\n")
      return client.readAll()
    }
    #expect(refused.closed)
    #expect(refused.bytes.isEmpty)
    #expect(recorder.closedSockets.isEmpty)
    #expect(recorder.requests.isEmpty)
    await served.stop()
  }

  @Test func onePeerAtItsBoundClosesItsOwnIdlestConnectionForANewOne() async throws {
    let served = try Served {
      $0.maxConnectionsPerPeer = 2
      $0.requestTimeoutSeconds = 120
    }
    let port = served.port
    let (oldestClosed, answer, newerOpen) = try await onOwnThread { () -> (Bool, RawResponse?, Bool) in
      let oldest = try RawClient(port: port, timeoutSeconds: 5)
      // Connected in turn: the first is accepted before the second exists.
      oldest.write("GET /warm HTTP/1.1\r\nHost: x\r\n\r\n")
      _ = oldest.readResponse()
      let newer = try RawClient(port: port, timeoutSeconds: 1)
      newer.write("GET /warm2 HTTP/1.1\r\nHost: x\r\n\r\n")
      _ = newer.readResponse()
      let third = try RawClient(port: port)
      third.write("GET /third HTTP/1.1\r\nHost: x\r\n\r\n")
      let answer = third.readResponse()
      let oldestClosed = oldest.readUntilClosed()
      // The newer one stays: its read runs into the 1 s receive timeout.
      let newerOpen = !newer.readUntilClosed()
      return (oldestClosed, answer, newerOpen)
    }
    await served.stop()
    #expect(answer?.status == 200)
    #expect(oldestClosed)
    #expect(newerOpen)
  }

  @Test func libwebsocketsLinesGoToTheConfiguredLog() async throws {
    let lines = Mutex<[String]>([])
    let served = try Served {
      $0.maxHeaderBytes = 2048
      $0.log = { line in lines.withLock { $0.append(line) } }
    }
    let port = served.port
    _ = try await onOwnThread { () -> Bool in
      let client = try RawClient(port: port)
      client.write("GET /big HTTP/1.1\r\nHost: x\r\nCookie: \(String(repeating: "c", count: 8192))\r\n\r\n")
      return client.readUntilClosed()
    }
    #expect(await eventually { lines.withLock { $0.contains("Ran out of header data space") } })
    await served.stop()
  }
}

/// TCP_NODELAY (0 or 1) of this process's end of the TCP connection whose other end is `client`, on
/// the server's `port`; nil when no descriptor of the process is that end.
func serverSideNoDelay(port: UInt16, client: Int32) -> Int32? {
  func ports(_ fd: Int32) -> (local: UInt16, remote: UInt16)? {
    var local = sockaddr_in()
    var remote = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let a = withUnsafeMutablePointer(to: &local) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let b = withUnsafeMutablePointer(to: &remote) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
    }
    guard a == 0, b == 0, local.sin_family == sa_family_t(AF_INET) else { return nil }
    return (UInt16(bigEndian: local.sin_port), UInt16(bigEndian: remote.sin_port))
  }
  guard let mine = ports(client) else { return nil }
  let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
  for name in names {
    guard let fd = Int32(name), fd != client, let theirs = ports(fd),
      theirs.local == port, theirs.remote == mine.local
    else { continue }
    var value: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &value, &length) == 0 else { return nil }
    return value
  }
  return nil
}

/// `count` clients that upgraded to WebSocket and then send nothing (on a thread of their own: the
/// connects and reads block).
private func upgradedClients(_ count: Int, port: UInt16) async throws -> [RawClient] {
  try await onOwnThread { () -> [RawClient] in
    try (0..<count).map { _ in
      let client = try RawClient(port: port)
      _ = client.upgrade(path: "/", port: port)
      return client
    }
  }
}
