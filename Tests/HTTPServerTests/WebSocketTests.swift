import Foundation
import Testing

@testable import HTTPServer

@Suite(.enabled(if: pythonAvailable, "needs /usr/bin/python3 with python3-websockets"))
struct WebSocketTests {
  @Test(arguments: ["/", "/Capture/v1/api"])
  func theHandshakeSucceedsOnEitherPathWithoutASubprotocolAndTextFlowsBothWays(path: String) async throws {
    let served = try Served(Recorder(echoText: true))
    let lines = try await python(
      """
      import asyncio, sys, websockets
      async def main():
          async with websockets.connect(sys.argv[1], compression=None) as ws:
              print("protocol", ws.response_headers.get("Sec-WebSocket-Protocol"))
              await ws.send("hello")
              print("echo", await ws.recv())
      asyncio.run(main())
      """, [served.url + path])
    let recorder = served.recorder
    #expect(await recorder.wait { $0.contains { if case .closed = $0 { true } else { false } } })
    await served.stop()
    #expect(lines == ["protocol None", "echo hello"])
    let socket = try #require(recorder.openedSockets.first)
    #expect(recorder.events == [.upgrade(path: path), .opened(socket, path: path), .text(socket, "hello"), .closed(socket)])
  }
}
