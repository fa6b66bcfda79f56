import CaptureContract
import CaptureCore
import Testing

@testable import CaptureMQTT

/// A remote command is read by the one bounded JSON reader (JSONParser, CaptureContract): the size
/// before any byte is parsed, the nesting while parsing.
@Suite("remote commands: the request's size and depth bounds")
struct RequestBoundsTests {
  @Test("the parser refuses a text over its size bound before reading it: too large, not malformed")
  func sizeBeforeParsing() throws {
    // Not JSON at all: had it been read, it would be refused as malformed at byte 0.
    let garbage = [UInt8](repeating: UInt8(ascii: "}"), count: 11)
    #expect(throws: JSONParser.Failure(kind: .tooLarge, message: "larger than 10 bytes")) {
      try JSONParser.parse(garbage, maximumSize: 10)
    }
    #expect(throws: JSONParser.Failure(kind: .malformed, message: "unexpected character at byte 0")) {
      try JSONParser.parse(garbage, maximumSize: 11)
    }
  }

  @Test("the parser refuses nesting deeper than 64 levels while reading, and takes 64")
  func depthWhileParsing() throws {
    func nested(_ depth: Int) -> [UInt8] {
      Array((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8)
    }
    #expect(try JSONParser.parse(nested(64), maximumSize: 1 << 20) != .null)
    #expect(throws: JSONParser.Failure(kind: .tooDeep, message: "nested deeper than 64 at byte 64")) {
      try JSONParser.parse(nested(65), maximumSize: 1 << 20)
    }
  }

  @Test(
    "an over-size request is refused before it is parsed: answered on its id, read from its first 64 KiB, even when the rest is not JSON"
  )
  func anOverSizeRequestIsRefusedBeforeParsing() async throws {
    let rig = CommandRig()
    // Unterminated and nested far past the depth bound after the id: parsing it whole would fail.
    let rest = String(repeating: "[", count: CommandRequest.maximumSize)
    let reply = try #require(await rig.service().handle(bytes(#"{"id":"big","argv":["get",\#(rest)"#)))
    let text = String(decoding: reply, as: UTF8.self)
    #expect(text.contains("larger than 65536 bytes"), "\(text)")
    #expect(text.contains(#""code":-85"#), "\(text)")
    #expect(rig.calls.withLock { $0.isEmpty })
    #expect(rig.replies.withLock { $0.map(\.topic) } == ["acme/h1/replies/big"])
  }

  @Test("an over-size request without an id in its first 64 KiB is a warning, with nowhere to reply")
  func anOverSizeRequestWithoutAnID() async {
    let rig = CommandRig()
    let filler = String(repeating: "x", count: CommandRequest.maximumSize)
    let reply = await rig.service().handle(bytes(#"{"argv":["get","\#(filler)"],"id":"late"}"#))
    #expect(reply == nil)
    #expect(rig.replies.withLock { $0.isEmpty })
    #expect(rig.warnings.withLock { $0 }.count == 1)
    #expect(rig.warnings.withLock { $0 }.first?.contains("larger than 65536 bytes") == true)
    #expect(rig.calls.withLock { $0.isEmpty })
  }

  @Test("an over-deep request is refused as not JSON, and nothing runs")
  func anOverDeepRequestIsRefused() async {
    let rig = CommandRig()
    let deep = String(repeating: #"{"a":"#, count: 70) + "1" + String(repeating: "}", count: 70)
    let reply = await rig.service().handle(
      bytes(#"{"id":"deep","argv":["set","x","--from","-"],"profile":\#(deep)}"#))
    #expect(reply == nil)
    #expect(rig.warnings.withLock { $0 }.count == 1)
    #expect(rig.warnings.withLock { $0 }.first?.contains("not JSON") == true)
    #expect(rig.calls.withLock { $0.isEmpty })
  }
}
