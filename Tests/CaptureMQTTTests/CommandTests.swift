import CaptureCore
import Synchronization
import Testing

@testable import CaptureMQTT

/// Records the replies and how the runner was called.
final class CommandRig: Sendable {
  let replies = Mutex<[(topic: String, body: String)]>([])
  let warnings = Mutex<[String]>([])
  let calls = Mutex<[[String]]>([])
  let profiles = Mutex<[JSON?]>([])

  func service(_ allowed: FleetSettings.Commands = .standard, path: FilePath? = nil) -> CommandService {
    CommandService(
      topics: Topics(prefix: "acme", host: "h1"), allowed: CommandAllowList.allowed(allowed), path: path,
      runner: { [self] argv, profile in
        calls.withLock { $0.append(argv) }
        profiles.withLock { $0.append(profile) }
        return (
          0,
          Array(
            JSON.object(["device": .string(argv.count > 1 ? argv[1] : ""), "value": .int(87)]).serialized.utf8
          ) + [10]
        )
      },
      reply: { [self] topic, bytes in
        replies.withLock { $0.append((topic, String(decoding: bytes, as: UTF8.self))) }
      },
      warn: { [self] text in warnings.withLock { $0.append(text) } })
  }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

@Suite struct CommandTests {
  @Test func aRequestRunsAndIsAnsweredOnItsReplyTopic() async {
    let rig = CommandRig()
    let service = rig.service()
    let reply = await service.handle(bytes(#"{"id":"r1","argv":["get","dock","battery-level"]}"#))
    #expect(
      reply.map { String(decoding: $0, as: UTF8.self) } == #"{"device":"dock","exit":0,"id":"r1","value":87}"#
    )
    #expect(rig.calls.withLock { $0 } == [["get", "dock", "battery-level"]])
    #expect(rig.replies.withLock { $0.map(\.topic) } == ["acme/h1/replies/r1"])
  }

  @Test func aDuplicateIdIsAnsweredFromTheFirstResultNotRunTwice() async {
    let rig = CommandRig()
    let service = rig.service()
    let first = await service.handle(bytes(#"{"id":"r1","argv":["trigger","dock"]}"#))
    let second = await service.handle(bytes(#"{"id":"r1","argv":["trigger","dock"]}"#))
    #expect(first == second)
    #expect(service.runCount == 1)
    #expect(rig.calls.withLock { $0.count } == 1)
    #expect(rig.replies.withLock { $0.count } == 2)
  }

  @Test func aDuplicateIdAfterARestartIsNotRunAgain() async {
    let dir = TemporaryDirectory()
    let path = dir.filePath + "/replies.json"
    let rig = CommandRig()
    let first = await rig.service(path: path).handle(bytes(#"{"id":"r9","argv":["set","dock","beep","on"]}"#))
    let again = CommandRig()
    let service = again.service(path: path)
    let second = await service.handle(bytes(#"{"id":"r9","argv":["set","dock","beep","on"]}"#))
    #expect(first == second)
    #expect(again.calls.withLock { $0.isEmpty })
  }

  @Test(arguments: [
    (#"{"id":"m1","argv":"get dock"}"#, "argv"),
    (#"{"id":"m1","argv":["get",3]}"#, "argv"),
    (#"{"id":"m1","argv":[]}"#, "argv"),
    (#"{"id":"m1"}"#, "argv"),
    (#"{"id":"m1","argv":["set","dock","--from","-"],"profile":[1]}"#, "profile"),
    (#"{"id":"m1","argv":["get","dock"],"extra":1}"#, "extra"),
  ])
  func malformedRequestsWithAnIdGetAnErrorReplyAndRunNothing(_ request: String, _ word: String) async throws {
    let rig = CommandRig()
    let service = rig.service()
    let reply = try #require(await service.handle(bytes(request)))
    let text = String(decoding: reply, as: UTF8.self)
    #expect(text.hasPrefix(#"{"error":{"code":-85,"message":""#))
    #expect(text.contains(word))
    #expect(text.hasSuffix(#""name":"ESKT_INVALIDFORMAT"},"exit":85,"id":"m1"}"#))
    #expect(rig.calls.withLock { $0.isEmpty })
    #expect(rig.replies.withLock { $0.map(\.topic) } == ["acme/h1/replies/m1"])
  }

  @Test(arguments: [
    "not json", "[1,2]", #"{"argv":["list"]}"#, #"{"id":7,"argv":["list"]}"#, #"{"id":"","argv":["list"]}"#,
  ])
  func malformedRequestsWithoutAnIdAreAWarning(_ request: String) async {
    let rig = CommandRig()
    let reply = await rig.service().handle(bytes(request))
    #expect(reply == nil)
    #expect(rig.replies.withLock { $0.isEmpty })
    #expect(rig.warnings.withLock { $0.count } == 1)
    #expect(rig.calls.withLock { $0.isEmpty })
  }

  @Test func aTooLargeRequestIsRefused() async throws {
    let rig = CommandRig()
    let big = String(repeating: "x", count: CommandRequest.maximumSize)
    let reply = try #require(await rig.service().handle(bytes(#"{"id":"big","argv":["get","\#(big)"]}"#)))
    #expect(String(decoding: reply, as: UTF8.self).contains("larger than 65536 bytes"))
    #expect(rig.calls.withLock { $0.isEmpty })
  }

  @Test func onlyTheAllowedCommandsRun() async throws {
    let rig = CommandRig()
    let service = rig.service()
    for (i, name) in ["connect", "remove", "listen", "serve", "discover", "partnership"].enumerated() {
      let reply = try #require(await service.handle(bytes(#"{"id":"a\#(i)","argv":["\#(name)","x"]}"#)))
      let text = String(decoding: reply, as: UTF8.self)
      #expect(text.contains(#""code":-37"#) && text.contains(#""exit":37"#))
    }
    #expect(rig.calls.withLock { $0.isEmpty })
    for (i, name) in ["list", "get", "set", "trigger"].enumerated() {
      _ = await service.handle(bytes(#"{"id":"b\#(i)","argv":["\#(name)","x"]}"#))
    }
    #expect(rig.calls.withLock { $0.map { $0[0] } } == ["list", "get", "set", "trigger"])
    let all = CommandRig().service(.all)
    let connect = try #require(await all.handle(bytes(#"{"id":"c","argv":["connect","00:11:22:33:44:55"]}"#)))
    #expect(String(decoding: connect, as: UTF8.self).contains(#""exit":0"#))
    #expect(CommandAllowList.standard == ["list", "get", "set", "trigger"])
    #expect(CommandAllowList.all == ["list", "get", "set", "trigger", "connect", "remove"])
  }

  @Test func anInlineProfileGoesToSetFrom() async throws {
    let rig = CommandRig()
    _ = await rig.service().handle(
      bytes(#"{"id":"p","argv":["set","dock","--from","-"],"profile":{"properties":{"beep":"on"}}}"#))
    #expect(rig.profiles.withLock { $0 } == [.object(["properties": .object(["beep": .string("on")])])])
    let refused = try #require(
      await rig.service().handle(bytes(#"{"id":"q","argv":["get","dock"],"profile":{}}"#)))
    #expect(String(decoding: refused, as: UTF8.self).contains(#""exit":18"#))
  }
}

@Suite struct CommandReplyTests {
  @Test func oneDocumentIsMergedSeveralLinesAreAnArrayNothingIsNull() {
    #expect(CommandService.document(bytes("{\"a\":1}\n")) == .object(["a": .int(1)]))
    #expect(
      CommandService.document(bytes("{\"a\":1}\n{\"b\":2}\n"))
        == .array([.object(["a": .int(1)]), .object(["b": .int(2)])]))
    #expect(CommandService.document([]) == .null)
    let reply = CommandService.reply(id: "x", exit: 0, document: .array([.int(1)]))
    #expect(String(decoding: reply, as: UTF8.self) == #"{"exit":0,"id":"x","output":[1]}"#)
    let empty = CommandService.reply(id: "x", exit: 17, document: .null)
    #expect(String(decoding: empty, as: UTF8.self) == #"{"exit":17,"id":"x"}"#)
  }

  @Test func theRequestIdIsEscapedInTheReplyTopic() async {
    let rig = CommandRig()
    _ = await rig.service().handle(bytes(#"{"id":"a/b+#","argv":["list"]}"#))
    #expect(rig.replies.withLock { $0.map(\.topic) } == ["acme/h1/replies/a%2Fb%2B%23"])
  }

  @Test func concurrentDuplicatesRunOnce() async {
    let rig = CommandRig()
    let service = rig.service()
    let request = bytes(#"{"id":"same","argv":["get","dock","battery-level"]}"#)
    let replies = await withTaskGroup(of: [UInt8]?.self) { group in
      for _ in 0..<8 { group.addTask { await service.handle(request) } }
      var all: [[UInt8]?] = []
      for await r in group { all.append(r) }
      return all
    }
    #expect(replies.count == 8 && Set(replies.compactMap { $0 }).count == 1)
    #expect(service.runCount == 1)
  }
}
