import Foundation
import Testing

@testable import HTTPTransport

#if canImport(Glibc)
  import Glibc
#endif

@Suite struct HTTPRefusalTests {
  /// A small bound keeps the tests quick; the default (1 MiB) has its own test.
  static func small(_ configuration: inout HTTPServer.Configuration) { configuration.maxBodyBytes = 1024 }

  @Test func theDefaultBodyBoundIsOneMebibyteAndAContentLengthOverItGets413AndTheServerKeepsServing()
    async throws
  {
    #expect(HTTPServer.Configuration().maxBodyBytes == 1 << 20)
    let served = try Served()
    let port = served.port
    let (refused, after) = try await onOwnThread { () -> (RawResponse?, RawResponse?) in
      let client = try RawClient(port: port)
      client.write("POST /Capture/v1/api HTTP/1.1\r\nHost: x\r\nContent-Length: \((1 << 20) + 1)\r\n\r\n")
      client.write([UInt8](repeating: 0x41, count: 4096))
      let refused = client.readResponse()
      let other = try RawClient(port: port)
      other.write("GET /still HTTP/1.1\r\nHost: x\r\n\r\n")
      return (refused, other.readResponse())
    }
    await served.stop()
    #expect(refused?.status == 413)
    #expect(refused?.headers["connection"] == "close")
    #expect(after?.status == 200)
    #expect(after?.headers["x-path"] == "/still")
    // The refused request never reached the handler.
    #expect(served.recorder.requests.map(\.path) == ["/still"])
  }

  @Test func aBodyOfExactlyTheBoundIsAcceptedAndOneByteMoreIsRefusedWhileItStreams() async throws {
    let served = try Served(configure: Self.small)
    let port = served.port
    let (exact, over) = try await onOwnThread { () -> (RawResponse?, RawResponse?) in
      let client = try RawClient(port: port)
      client.write("POST /exact HTTP/1.1\r\nHost: x\r\nContent-Length: 1024\r\n\r\n")
      client.write([UInt8](repeating: 0x42, count: 1024))
      let exact = client.readResponse()
      // A body sent whole, much larger than the bound: the 413 still arrives.
      let big = try RawClient(port: port)
      big.write("POST /over HTTP/1.1\r\nHost: x\r\nContent-Length: 1025\r\n\r\n")
      big.write([UInt8](repeating: 0x43, count: 1025))
      return (exact, big.readResponse())
    }
    await served.stop()
    #expect(exact?.status == 200)
    #expect(exact?.body == [UInt8](repeating: 0x42, count: 1024))
    #expect(over?.status == 413)
    #expect(served.recorder.requests.map(\.path) == ["/exact"])
  }

  @Test func aChunkedBodyOverTheBoundGets413WithoutBeingBufferedAndASmallOneGets411() async throws {
    let served = try Served(configure: Self.small)
    let port = served.port
    let (over, small, after) = try await onOwnThread { () -> (RawResponse?, RawResponse?, RawResponse?) in
      let client = try RawClient(port: port)
      client.write("POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
      // 64 chunks of 512 bytes: 32 KiB, far past the bound; the server stops at 1 KiB.
      let chunk = Array("200\r\n".utf8) + [UInt8](repeating: 0x44, count: 512) + Array("\r\n".utf8)
      for _ in 0..<64 { if !client.write(chunk) { break } }
      let over = client.readResponse()
      let second = try RawClient(port: port)
      second.write(
        "POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
      let small = second.readResponse()
      let third = try RawClient(port: port)
      third.write("GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
      return (over, small, third.readResponse())
    }
    await served.stop()
    #expect(over?.status == 413)
    #expect(small?.status == 411)
    #expect(after?.status == 200)
    #expect(served.recorder.requests.map(\.path) == ["/after"])
  }

  @Test func garbageGetsAnErrorStatusFromLibwebsocketsAndTheServerKeepsServing() async throws {
    let served = try Served()
    let port = served.port
    let (garbage, binary, after) = try await onOwnThread { () -> ([UInt8], [UInt8], RawResponse?) in
      let client = try RawClient(port: port)
      client.write("NOT A REQUEST\r\n\r\n")
      let garbage = client.readToEnd()
      let noise = try RawClient(port: port)
      noise.write((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
      let binary = noise.readToEnd()
      let other = try RawClient(port: port)
      other.write("GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
      return (garbage, binary, other.readResponse())
    }
    await served.stop()
    let status = String(decoding: garbage.prefix(12), as: UTF8.self)
    #expect(
      status.hasPrefix("HTTP/1.") && (status.hasSuffix(" 400") || status.hasSuffix(" 403")), "\(status)")
    _ = binary  // closed (with or without a status); the point is the next client
    #expect(after?.status == 200)
    #expect(served.recorder.requests.map(\.path) == ["/after"])
  }

  @Test func headersBeyondTheBoundDoNotReachTheHandler() async throws {
    let served = try Served { $0.maxHeaderBytes = 2048 }
    let port = served.port
    let (big, after) = try await onOwnThread { () -> ((bytes: [UInt8], closed: Bool), RawResponse?) in
      let client = try RawClient(port: port)
      client.write("GET /big HTTP/1.1\r\nHost: x\r\nCookie: \(String(repeating: "c", count: 8192))\r\n\r\n")
      let big = client.readAll()
      let other = try RawClient(port: port)
      other.write("GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
      return (big, other.readResponse())
    }
    await served.stop()
    #expect(big.closed)
    #expect(!String(decoding: big.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
    #expect(after?.status == 200)
    #expect(served.recorder.requests.map(\.path) == ["/after"])
  }

  @Test func aConnectionThatNeverCompletesItsRequestIsClosedAfterTheRequestTimeout() async throws {
    let served = try Served { $0.requestTimeoutSeconds = 1 }
    let port = served.port
    let ended = try await onOwnThread { () -> Bool in
      let client = try RawClient(port: port, timeoutSeconds: 60)
      // Slowloris: a request line and one header, then silence.
      client.write("GET /slow HTTP/1.1\r\nHost: x\r\n")
      return client.readUntilClosed()
    }
    await served.stop()
    #expect(ended)
    #expect(served.recorder.requests.isEmpty)
  }

  @Test func aResponseForAConnectionThatHasGoneIsDroppedAndTheServerKeepsServing() async throws {
    // The handler answers nothing by itself: the test answers after the client left.
    let recorder = Recorder(answer: { request in request.path == "/later" ? nil : Recorder.echo(request) })
    let served = try Served(recorder)
    let port = served.port
    var client: RawClient? = try await onOwnThread {
      let client = try RawClient(port: port)
      client.write("GET /later HTTP/1.1\r\nHost: x\r\n\r\n")
      return client
    }
    #expect(await recorder.wait { $0.contains(.request(id: 1, method: "GET", path: "/later")) })
    let clientPort = localPort(client!.fd)
    #expect(tcpState(local: port, remote: clientPort) == TCPState.established)
    client = nil  // closed
    // The client has gone: the server's end of the connection has its FIN (it is no longer
    // established) before the answer comes.
    #expect(await eventually { tcpState(local: port, remote: clientPort) != TCPState.established })
    served.server.respond(1, HTTPResponse(status: 200, body: Array("late".utf8)))
    served.server.respond(999, HTTPResponse(status: 200))
    let after = try await onOwnThread { () -> RawResponse? in
      let other = try RawClient(port: port)
      other.write("GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
      return other.readResponse()
    }
    await served.stop()
    #expect(after?.status == 200)
  }

  @Test func theHostHeaderIsTheHandlersToJudgeNotTheLibrarys() async throws {
    let served = try Served()
    let port = served.port
    let reply = try await onOwnThread { () -> RawResponse? in
      let client = try RawClient(port: port)
      client.write("GET / HTTP/1.1\r\nHost: evil.example:18481\r\n\r\n")
      return client.readResponse()
    }
    await served.stop()
    #expect(reply?.status == 200)
    #expect(served.recorder.requests.first?.headers["host"] == "evil.example:18481")
  }
}

@Suite struct HTTPListenTests {
  @Test func aPortAlreadyInUseIsTheAddressInUseErrorNamingHostAndPort() async throws {
    let first = try Served()
    let port = first.port
    #expect(port != 0)
    let error = #expect(throws: HTTPServerError.self) {
      _ = try HTTPServer(configuration: .init(host: "127.0.0.1", port: port), handler: Recorder())
    }
    await first.stop()
    #expect(error == .addressInUse(host: "127.0.0.1", port: port))
    #expect(
      error?.description
        == "cannot listen on 127.0.0.1:\(port): address already in use (another program listens there)")
  }

  @Test func aHostThatIsNoIPv4AddressIsTheBadAddressError() throws {
    let error = #expect(throws: HTTPServerError.self) {
      _ = try HTTPServer(configuration: .init(host: "no such host.invalid", port: 0), handler: Recorder())
    }
    guard case .badAddress(let host, let port, _) = error else {
      Issue.record("expected badAddress, got \(String(describing: error))")
      return
    }
    #expect(host == "no such host.invalid")
    #expect(port == 0)
    #expect(error?.description.hasPrefix("cannot listen on no such host.invalid:0: ") == true)
  }

  @Test func aNameIsResolvedToItsIPv4Address() async throws {
    let served = try Served { $0.host = "localhost" }
    let port = served.port
    let reply = try await onOwnThread { () -> RawResponse? in
      let client = try RawClient(port: port)
      client.write("GET /named HTTP/1.1\r\nHost: localhost\r\n\r\n")
      return client.readResponse()
    }
    await served.stop()
    #expect(reply?.status == 200)
  }

  @Test func anInheritedListeningDescriptorIsServedAndItsPortReported() async throws {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    #expect(bound == 0)
    #expect(listen(fd, 16) == 0)
    let port = Listener.localPort(fd)
    var status = stat()
    #expect(fstat(fd, &status) == 0)
    let inode = status.st_ino
    let served = try Served { $0.listenDescriptor = fd }
    #expect(served.port == port)
    let reply = try await onOwnThread { () -> RawResponse? in
      let client = try RawClient(port: port)
      client.write("GET /inherited HTTP/1.1\r\nHost: x\r\n\r\n")
      return client.readResponse()
    }
    await served.stop()
    #expect(reply?.status == 200)
    #expect(reply?.headers["x-path"] == "/inherited")
    // Shutdown closed the descriptor: no descriptor of the process refers to its socket any more
    // (by inode: the number itself may already have been reused by a parallel test).
    #expect(!openDescriptorInodes().contains(inode))
  }

  @Test func aDescriptorThatIsNotListeningIsRefused() throws {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    defer { close(fd) }
    #expect(throws: HTTPServerError.self) {
      _ = try HTTPServer(configuration: .init(listenDescriptor: fd), handler: Recorder())
    }
  }

  @Test func systemdSocketActivationNamesFd3OnlyForThisProcess() {
    let rule = HTTPServer.Configuration.systemdListenDescriptor(listenPID:listenFDs:processID:)
    #expect(rule("1234", "1", 1234) == 3)
    #expect(rule("1234", "2", 1234) == 3)
    #expect(rule("1235", "1", 1234) == nil)
    #expect(rule("1234", "0", 1234) == nil)
    #expect(rule(nil, "1", 1234) == nil)
    #expect(rule("1234", nil, 1234) == nil)
    #expect(rule("x", "1", 1234) == nil)
  }

  @Test func shutdownIsIdempotentAndWorksWithoutStart() async throws {
    let unstarted = try HTTPServer(configuration: .init(), handler: Recorder())
    await unstarted.shutdown()
    await unstarted.shutdown()
    let served = try Served()
    async let one: Void = served.server.shutdown()
    async let two: Void = served.server.shutdown()
    _ = await (one, two)
    await served.server.shutdown()
    #expect(served.server.send(WebSocketID(1), text: []) == false)
  }
}

@Suite struct HTTPSlowClientTests {
  /// Sends `text` a byte every 100 ms until the server closes; true when it closed before the end.
  static func trickle(_ text: String, port: UInt16) throws -> Bool {
    let client = try RawClient(port: port, timeoutSeconds: 60)
    for byte in Array(text.utf8) {
      guard client.write([byte]) else { return true }
      usleep(100_000)
    }
    return client.readUntilClosed()
  }

  @Test func headersTrickledAByteAtATimeAreCutOffAtTheRequestTimeout() async throws {
    let served = try Served { $0.requestTimeoutSeconds = 1 }
    let port = served.port
    // 300 header bytes at 10 a second: 30 s, far past the 1 s bound however late the server's timer.
    let cut = try await onOwnThread {
      try Self.trickle(
        "GET /slow HTTP/1.1\r\nHost: x\r\nX-Pad: \(String(repeating: "p", count: 270))\r\n\r\n", port: port)
    }
    await served.stop()
    #expect(cut)
    #expect(served.recorder.requests.isEmpty)
  }

  @Test func aBodyTrickledAByteAtATimeIsCutOffAtTheRequestTimeout() async throws {
    let served = try Served { $0.requestTimeoutSeconds = 1 }
    let port = served.port
    let cut = try await onOwnThread { () -> Bool in
      let client = try RawClient(port: port, timeoutSeconds: 60)
      // 300 body bytes at 10 a second: 30 s, far past the 1 s bound however late the server's timer.
      client.write("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 300\r\n\r\n")
      for _ in 0..<300 {
        guard client.write([0x62]) else { return true }
        usleep(100_000)
      }
      return client.readUntilClosed()
    }
    await served.stop()
    #expect(cut)
    #expect(served.recorder.requests.isEmpty)
  }

  @Test func anOpenWebSocketHasNoIdleTimeout() async throws {
    let served = try Served { $0.requestTimeoutSeconds = 1 }
    let recorder = served.recorder
    let port = served.port
    let client = try await onOwnThread { () -> RawClient in
      let client = try RawClient(port: port)
      _ = client.upgrade(path: "/", port: port)
      return client
    }
    #expect(await recorder.wait { _ in recorder.openedSockets.count == 1 })
    // Two connections without a whole request, one after the other, are each cut at the 1 s request
    // timeout: the server's timers have gone past the WebSocket's first second twice over.
    for _ in 0..<2 {
      let cut = try await onOwnThread { () -> Bool in
        let other = try RawClient(port: port, timeoutSeconds: 60)
        other.write("GET /slow HTTP/1.1\r\nHost: x\r\n")
        return other.readUntilClosed()
      }
      #expect(cut, "a connection without a whole request was not cut at the request timeout")
    }
    #expect(recorder.closedSockets.isEmpty)
    await served.stop()
    #expect(recorder.closedSockets.count == 1)
    _ = client
  }
}

/// The inodes of every open descriptor of this process (from /proc/self/fd).
func openDescriptorInodes() -> Set<UInt> {
  var inodes: Set<UInt> = []
  guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return [] }
  for name in names {
    var status = stat()
    if stat("/proc/self/fd/\(name)", &status) == 0 { inodes.insert(status.st_ino) }
  }
  return inodes
}
