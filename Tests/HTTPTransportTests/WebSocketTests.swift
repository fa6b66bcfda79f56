import Foundation
import Testing

@testable import HTTPTransport

#if canImport(Glibc)
  import Glibc
#endif

/// Python prelude of the WebSocket clients: `close_of(ws)` waits for the server's close and prints
/// its code and reason.
let prelude = """
  import asyncio, sys, websockets
  async def close_of(ws):
      try:
          while True:
              print("unexpected", await ws.recv())
      except websockets.exceptions.ConnectionClosed as e:
          print("close", e.rcvd.code if e.rcvd else None, e.rcvd.reason if e.rcvd else None)

  """

@Suite(.enabled(if: pythonAvailable, "needs /usr/bin/python3 with python3-websockets"))
struct WebSocketTests {
  @Test(arguments: ["/", "/Capture/v1/api"])
  func theHandshakeSucceedsOnEitherPathWithoutASubprotocolAndTextFlowsBothWays(path: String) async throws {
    let served = try Served(Recorder(echoText: true))
    let lines = try await python(
      prelude + """
        async def main():
            async with websockets.connect(sys.argv[1], compression=None) as ws:
                print("protocol", ws.response_headers.get("Sec-WebSocket-Protocol"))
                await ws.send("hello")
                print("echo", await ws.recv())
                pong = await ws.ping()
                await pong
                print("pong")
        asyncio.run(main())
        """, [served.url + path])
    let recorder = served.recorder
    #expect(await recorder.wait { $0.contains { if case .closed = $0 { true } else { false } } })
    await served.stop()
    #expect(lines == ["protocol None", "echo hello", "pong"])
    let socket = try #require(recorder.openedSockets.first)
    #expect(
      recorder.events == [
        .upgrade(path: path), .opened(socket, path: path), .text(socket, "hello"), .closed(socket),
      ])
    #expect(recorder.upgrades.first?.headers["upgrade"]?.lowercased() == "websocket")
  }

  @Test func aRefusedUpgradeGetsTheHandlersResponseInsteadOfTheHandshake() async throws {
    let recorder = Recorder(refuse: { _ in
      HTTPResponse(status: 403, contentType: "text/plain", body: Array("origin refused\n".utf8))
    })
    let served = try Served(recorder)
    let port = served.port
    let reply = try await onOwnThread { () -> RawResponse? in
      let client = try RawClient(port: port)
      return client.upgrade(path: "/Capture/v1/api", port: port)
    }
    await served.stop()
    #expect(reply?.statusLine.hasPrefix("HTTP/1.1 403") == true)
    #expect(reply?.body == Array("origin refused\n".utf8))
    #expect(recorder.events == [.upgrade(path: "/Capture/v1/api")])
  }

  @Test func aFragmentedMessageArrivesJoinedAndAnOversizeOneClosesWith1009() async throws {
    let served = try Served(Recorder(echoText: true)) { $0.maxMessageBytes = 1000 }
    let lines = try await python(
      prelude + """
        async def main():
            async with websockets.connect(sys.argv[1], compression=None, max_size=None) as ws:
                await ws.send(["frag", "mented ", "message"])
                print("echo", await ws.recv())
                await ws.send("x" * 1000)
                print("echo", len(await ws.recv()))
                await ws.send(["y" * 600, "y" * 600])
                await close_of(ws)
        asyncio.run(main())
        """, [served.url])
    let recorder = served.recorder
    #expect(await recorder.wait { !$0.isEmpty && recorder.closedSockets.count == 1 })
    await served.stop()
    #expect(lines == ["echo fragmented message", "echo 1000", "close 1009 message larger than 1000 bytes"])
    let socket = try #require(recorder.openedSockets.first)
    #expect(recorder.texts(socket) == ["fragmented message", String(repeating: "x", count: 1000)])
  }

  @Test func aBinaryFrameClosesWith1003() async throws {
    let served = try Served()
    let lines = try await python(
      prelude + """
        async def main():
            async with websockets.connect(sys.argv[1], compression=None) as ws:
                await ws.send(b"\\x00\\x01")
                await close_of(ws)
        asyncio.run(main())
        """, [served.url])
    #expect(await served.recorder.wait { _ in served.recorder.closedSockets.count == 1 })
    await served.stop()
    #expect(lines == ["close 1003 binary frames are not accepted"])
  }

  @Test func closeSendsItsCodeAndReasonAndClosedFollowsOnce() async throws {
    let served = try Served()
    let recorder = served.recorder
    async let lines = python(
      prelude + """
        async def main():
            async with websockets.connect(sys.argv[1], compression=None) as ws:
                await ws.send("ready")
                await close_of(ws)
        asyncio.run(main())
        """, [served.url])
    #expect(await recorder.wait { $0.contains { if case .text = $0 { true } else { false } } })
    let socket = try #require(recorder.openedSockets.first)
    served.server.close(socket, code: 1008, reason: "fell behind")
    #expect(try await lines == ["close 1008 fell behind"])
    #expect(await recorder.wait { _ in recorder.closedSockets == [socket] })
    #expect(served.server.send(socket, text: Array("gone".utf8)) == false)
    await served.stop()
    #expect(recorder.closedSockets == [socket])
  }

  @Test func shutdownSends1001ToEveryClient() async throws {
    let served = try Served()
    let recorder = served.recorder
    async let lines = python(
      prelude + """
        async def one(url):
            async with websockets.connect(url, compression=None) as ws:
                await ws.send("ready")
                await close_of(ws)
        async def main():
            await asyncio.gather(*[one(sys.argv[1]) for _ in range(3)])
        asyncio.run(main())
        """, [served.url])
    #expect(await recorder.wait { $0.filter { if case .text = $0 { true } else { false } }.count == 3 })
    await served.server.shutdown(reason: "service stopping")
    #expect(try await lines == Array(repeating: "close 1001 service stopping", count: 3))
    #expect(Set(recorder.closedSockets) == Set(recorder.openedSockets))
    #expect(recorder.closedSockets.count == 3)
  }

  @Test func aClientThatDropsItsTCPConnectionIsClosedOnceAndSendThenReturnsFalse() async throws {
    let served = try Served()
    let recorder = served.recorder
    let port = served.port
    let reply = try await onOwnThread { () -> RawResponse? in
      let client = try RawClient(port: port)
      let reply = client.upgrade(path: "/", port: port)
      return reply  // the client goes out of scope: its socket closes with no close frame
    }
    #expect(reply?.status == 101)
    #expect(reply?.headers["sec-websocket-protocol"] == nil)
    #expect(await recorder.wait { _ in recorder.closedSockets.count == 1 })
    let socket = try #require(recorder.openedSockets.first)
    #expect(recorder.closedSockets == [socket])
    #expect(served.server.send(socket, text: Array("anyone?".utf8)) == false)
    await served.stop()
    #expect(recorder.closedSockets == [socket])
  }

  @Test func sendReturnsFalseOnceAClientThatNeverReadsPassesTheOutboxBound() async throws {
    let served = try Served { $0.maxOutboxBytes = 256 * 1024 }
    let recorder = served.recorder
    let port = served.port
    let client = try await onOwnThread { () -> RawClient in
      let client = try RawClient(port: port)
      // A small receive buffer so the kernel does not soak up megabytes first.
      var size: Int32 = 4096
      setsockopt(client.fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
      _ = client.upgrade(path: "/", port: port)
      return client
    }
    #expect(await recorder.wait { _ in recorder.openedSockets.count == 1 })
    let socket = try #require(recorder.openedSockets.first)
    let frame = [UInt8](repeating: 0x61, count: 16 * 1024)
    var accepted = 0
    var refused = false
    // 4,096 frames are 64 MiB: far past what socket buffers and the 256 KiB bound can hold.
    for _ in 0..<4096 {
      if !served.server.send(socket, text: frame) {
        refused = true
        break
      }
      accepted += 1
      if accepted % 16 == 0 { try await Task.sleep(for: .milliseconds(1)) }
    }
    #expect(refused, "send never returned false after \(accepted) frames")
    #expect(accepted >= 16)  // the bound itself holds 16 frames
    served.server.close(socket, code: 1008, reason: "fell behind")
    #expect(await recorder.wait { _ in recorder.closedSockets == [socket] })
    await served.stop()
    _ = client
  }

  @Test func twoHundredConcurrentClientsEachGetTheirOwnMessagesAndIDsAreNeverReused() async throws {
    let served = try Served(Recorder(echoText: true))
    let recorder = served.recorder
    let lines = try await python(
      prelude + """
        async def one(url, i):
            async with websockets.connect(url, compression=None, open_timeout=60) as ws:
                for k in range(5):
                    await ws.send(f"{i}:{k}")
                got = [await ws.recv() for _ in range(5)]
                return got == [f"{i}:{k}" for k in range(5)]
        async def main():
            results = await asyncio.gather(*[one(sys.argv[1], i) for i in range(200)])
            print("ok", sum(results))
        asyncio.run(main())
        """, [served.url], timeLimit: 300)
    #expect(lines == ["ok 200"])
    #expect(await recorder.wait(seconds: 60) { _ in recorder.closedSockets.count == 200 })
    // A second round after the first closed: new ids, none reused.
    let again = try await python(
      prelude + """
        async def main():
            for _ in range(3):
                async with websockets.connect(sys.argv[1], compression=None) as ws:
                    await ws.send("again")
                    await ws.recv()
            print("done")
        asyncio.run(main())
        """, [served.url])
    #expect(again == ["done"])
    #expect(await recorder.wait { _ in recorder.closedSockets.count == 203 })
    await served.stop()
    let opened = recorder.openedSockets
    #expect(opened.count == 203)
    #expect(Set(opened).count == 203)
    #expect(Set(recorder.closedSockets) == Set(opened))
    #expect(recorder.closedSockets.count == 203)
    // Each socket got its own five messages, in order.
    for socket in opened.prefix(200) {
      let texts = recorder.texts(socket)
      let prefix = texts.first.map { String($0.split(separator: ":")[0]) } ?? ""
      #expect(texts == (0..<5).map { "\(prefix):\($0)" })
    }
  }

  @Test func textSentFromAnotherThreadArrivesInOrder() async throws {
    let served = try Served()
    let recorder = served.recorder
    async let lines = python(
      prelude + """
        async def main():
            async with websockets.connect(sys.argv[1], compression=None) as ws:
                await ws.send("ready")
                for _ in range(100):
                    print(await ws.recv())
        asyncio.run(main())
        """, [served.url])
    #expect(await recorder.wait { $0.contains { if case .text = $0 { true } else { false } } })
    let socket = try #require(recorder.openedSockets.first)
    let server = served.server
    let sent = try await onOwnThread { () -> Bool in
      (0..<100).allSatisfy { server.send(socket, text: Array("m\($0)".utf8)) }
    }
    #expect(sent)
    #expect(try await lines == (0..<100).map { "m\($0)" })
    await served.stop()
  }
}

@Suite struct ShutdownTests {
  @Test func shutdownEndsEveryKindOfConnectionAndReportsEverySocketClosed() async throws {
    // "/never" is never answered: shutdown must not wait for it.
    let recorder = Recorder(answer: { request in request.path == "/never" ? nil : Recorder.echo(request) })
    let served = try Served(recorder)
    let port = served.port
    let clients = try await onOwnThread { () -> [RawClient] in
      let waiting = try RawClient(port: port)
      waiting.write("GET /never HTTP/1.1\r\nHost: x\r\n\r\n")
      let partial = try RawClient(port: port)
      partial.write("GET /partial HTTP/1.1\r\n")
      // Two WebSockets that never read (nor answer the close frame).
      let first = try RawClient(port: port)
      _ = first.upgrade(path: "/", port: port)
      let second = try RawClient(port: port)
      _ = second.upgrade(path: "/Capture/v1/api", port: port)
      return [waiting, partial, first, second]
    }
    #expect(await recorder.wait { _ in recorder.openedSockets.count == 2 && recorder.requests.count == 1 })
    await served.stop()
    #expect(Set(recorder.closedSockets) == Set(recorder.openedSockets))
    #expect(recorder.closedSockets.count == 2)
    for socket in recorder.openedSockets { #expect(served.server.send(socket, text: [0x61]) == false) }
    // Every client sees its connection end.
    let ended = try await onOwnThread { clients.map { $0.readUntilClosed() } }
    #expect(ended == [true, true, true, true])
  }
}
