import CaptureCore
import Synchronization
import TestSupport
import Testing

@testable import CaptureMQTT

/// Records the replies and how the runner was called.
final class CommandRig: Sendable {
  let replies = Mutex<[(topic: String, body: String)]>([])
  let warnings = Mutex<[String]>([])
  let calls = Mutex<[[String]]>([])
  let profiles = Mutex<[JSON?]>([])

  func service(
    _ allowed: FleetSettings.Commands = .standard, path: FilePath? = nil,
    limits: CommandLimits = CommandLimits()
  ) -> CommandService {
    CommandService(
      topics: Topics(prefix: "acme", host: "h1"), allowed: CommandAllowList.allowed(allowed), limits: limits,
      path: path,
      runner: { [self] argv, profile in
        calls.withLock { $0.append(argv) }
        profiles.withLock { $0.append(profile) }
        return (0, [JSON.object(["device": .string(argv.count > 1 ? argv[1] : ""), "value": .int(87)])])
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
    #expect(CommandService.document([.object(["a": .int(1)])]) == .object(["a": .int(1)]))
    #expect(
      CommandService.document([.object(["a": .int(1)]), .object(["b": .int(2)])])
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

/// A runner that blocks until its task is cancelled (a command cut at its deadline that ends when
/// asked), or for ever (`ignoresCut`, one that does not), and counts the runs that have not returned.
final class BlockingRig: Sendable {
  let replies = Mutex<[(topic: String, body: String, at: ContinuousClock.Instant)]>([])
  let started = Mutex(0)
  let inside = Mutex(0)
  let release = Mutex<[CheckedContinuation<Void, Never>]>([])

  func service(_ limits: CommandLimits, ignoresCut: Bool = false) -> CommandService {
    CommandService(
      topics: Topics(prefix: "acme", host: "h1"), allowed: CommandAllowList.standard, limits: limits,
      path: nil,
      runner: { [self] argv, _ in
        started.withLock { $0 += 1 }
        inside.withLock { $0 += 1 }
        defer { inside.withLock { $0 -= 1 } }
        if argv.last == "quick" { return (0, [.object(["ok": .bool(true)])]) }
        if ignoresCut {
          await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            release.withLock { $0.append(c) }
          }
        } else {
          // Ends when the cut cancels it (the sleep throws at once), never by itself.
          _ = try? await Task.sleep(for: .seconds(3600))
        }
        return (0, [])
      },
      reply: { [self] topic, bytes in
        replies.withLock { $0.append((topic, String(decoding: bytes, as: UTF8.self), .now)) }
      },
      warn: { _ in })
  }

  /// Lets every run that ignored its cut return.
  func releaseAll() {
    for c in release.withLock({ r in
      defer { r = [] }; return r
    }) { c.resume() }
  }

}

/// The codes of the replies in the order they were given.
final class AnswerOrder: Sendable {
  let codes = Mutex<[Int?]>([])
}

@Suite struct CommandDeadlineTests {
  static func request(_ id: String, _ last: String = "start") -> [UInt8] {
    bytes(#"{"id":"\#(id)","argv":["trigger","dock","\#(last)"]}"#)
  }

  static func code(_ reply: [UInt8]?) -> Int? {
    guard let reply, let text = String(validating: reply, as: UTF8.self),
      let range = text.firstRange(of: #""code":"#)
    else { return nil }
    return Int(text[range.upperBound...].prefix { $0 == "-" || $0.isNumber })
  }

  @Test func aCommandRunningAtItsDeadlineIsAnsweredRequestTimedOutAndCancelled() async throws {
    let rig = BlockingRig()
    let service = rig.service(CommandLimits(deadline: .milliseconds(300)))
    let start = ContinuousClock.now
    let reply = try #require(await service.handle(Self.request("slow")))
    let took = ContinuousClock.now - start
    let text = String(decoding: reply, as: UTF8.self)
    #expect(Self.code(reply) == -42, "\(text)")
    #expect(text.contains(#""exit":42"#) && text.contains(#""name":"ESKT_REQUESTTIMEDOUT""#))
    #expect(text.contains("deadline of 300ms") && text.contains("--mqtt-command-timeout"))
    // Not before the deadline. The command never returns by itself (it runs until cancelled), so
    // any answer at all is the deadline's; the upper bound only guards against a hang.
    #expect(took >= .milliseconds(300) && took < .seconds(120), "\(took)")
    // The runner saw the cancellation and returned: its slot is free again.
    #expect(await eventually { service.activeCount == 0 && rig.inside.withLock { $0 } == 0 })
    #expect(rig.replies.withLock { $0.map(\.topic) } == ["acme/h1/replies/slow"])
  }

  @Test func aCutReplyIsRememberedForItsId() async throws {
    let rig = BlockingRig()
    let service = rig.service(CommandLimits(deadline: .milliseconds(100)))
    let first = try #require(await service.handle(Self.request("again")))
    #expect(await eventually { service.activeCount == 0 })
    let second = try #require(await service.handle(Self.request("again")))
    #expect(first == second)
    #expect(rig.started.withLock { $0 } == 1)
  }

  @Test func atMostRunningCommandsRunTheNextWaitAndTheRestAreBusyAtOnce() async throws {
    let rig = BlockingRig()
    // Long enough that every busy answer is given before it, however late a loaded machine runs them.
    let limits = CommandLimits(deadline: .seconds(20), running: 2, waiting: 3)
    let answered = AnswerOrder()
    let service = rig.service(limits, ignoresCut: true)
    let replies = await withTaskGroup(of: (Int, [UInt8]?, Duration).self) { group in
      for i in 0..<20 {
        group.addTask {
          let start = ContinuousClock.now
          let reply = await service.handle(Self.request("r\(i)"))
          answered.codes.withLock { $0.append(Self.code(reply)) }
          return (i, reply, ContinuousClock.now - start)
        }
      }
      var all: [(Int, [UInt8]?, Duration)] = []
      for await r in group { all.append(r) }
      return all
    }
    let codes = replies.map { Self.code($0.1) }
    // Two ran (cut at the deadline), three waited for a slot until the deadline, fifteen were busy.
    #expect(codes.filter { $0 == -42 }.count == 5, "\(codes)")
    #expect(codes.filter { $0 == -16 }.count == 15, "\(codes)")
    #expect(rig.started.withLock { $0 } == 2)
    // A busy answer waits for nothing: every one came before the first answer at the deadline (an
    // order, not a time a loaded machine can overrun).
    let order = answered.codes.withLock { $0 }
    #expect(order.prefix(15).allSatisfy { $0 == -16 } && order.suffix(5).allSatisfy { $0 == -42 }, "\(order)")
    for (_, reply, took) in replies {
      if Self.code(reply) == -16 {
        #expect(
          String(decoding: reply!, as: UTF8.self).contains(#""name":"ESKT_PENDINGOPERATIONNOTCOMPLETED""#))
      } else {
        #expect(took >= .seconds(20) && took < .seconds(300), "\(took)")
      }
    }
    // The two that ignore their cut keep their slots: a new request waits and is answered at its
    // deadline without running.
    #expect(service.activeCount == 2)
    let late = try #require(await service.handle(Self.request("late")))
    #expect(Self.code(late) == -42)
    #expect(String(decoding: late, as: UTF8.self).contains("did not run"))
    #expect(rig.started.withLock { $0 } == 2)
    // Once they return, the slots are free for new requests, and the one that never ran runs when
    // sent again (its timeout was not remembered).
    rig.releaseAll()
    #expect(await eventually { service.activeCount == 0 })
    let lateAgain = try #require(await service.handle(Self.request("late", "quick")))
    #expect(String(decoding: lateAgain, as: UTF8.self) == #"{"exit":0,"id":"late","ok":true}"#)
    let quick = try #require(await service.handle(Self.request("q", "quick")))
    #expect(String(decoding: quick, as: UTF8.self) == #"{"exit":0,"id":"q","ok":true}"#)
  }

  @Test func aBusyAnswerIsNotRememberedTheSameIdRunsWhenSentAgain() async throws {
    let rig = BlockingRig()
    let service = rig.service(
      CommandLimits(deadline: .seconds(600), running: 1, waiting: 0), ignoresCut: true)
    let blocker = Task { await service.handle(Self.request("hold")) }
    #expect(await eventually { rig.started.withLock { $0 } == 1 })
    let busy = try #require(await service.handle(Self.request("b1", "quick")))
    #expect(Self.code(busy) == -16)
    rig.releaseAll()
    _ = await blocker.value
    #expect(await eventually { service.activeCount == 0 })
    let ran = try #require(await service.handle(Self.request("b1", "quick")))
    #expect(String(decoding: ran, as: UTF8.self) == #"{"exit":0,"id":"b1","ok":true}"#)
    #expect(rig.started.withLock { $0 } == 2)
  }

  @Test func aWaitingRequestRunsWhenASlotFrees() async throws {
    let rig = BlockingRig()
    let service = rig.service(
      CommandLimits(deadline: .seconds(600), running: 1, waiting: 1), ignoresCut: true)
    let blocker = Task { await service.handle(Self.request("first")) }
    #expect(await eventually { rig.started.withLock { $0 } == 1 })
    let waiting = Task { await service.handle(Self.request("second", "quick")) }
    #expect(await eventually { service.waitingCount == 1 })
    #expect(rig.started.withLock { $0 } == 1)
    rig.releaseAll()
    let first = try #require(await blocker.value)
    let second = try #require(await waiting.value)
    #expect(String(decoding: first, as: UTF8.self) == #"{"exit":0,"id":"first"}"#)
    #expect(String(decoding: second, as: UTF8.self) == #"{"exit":0,"id":"second","ok":true}"#)
    #expect(rig.started.withLock { $0 } == 2)
  }

  @Test func stopCutsEveryRunningCommandWithoutWaitingForIt() async throws {
    let rig = BlockingRig()
    let service = rig.service(CommandLimits(deadline: .seconds(600)), ignoresCut: true)
    let running = (0..<3).map { i in Task { await service.handle(Self.request("s\(i)")) } }
    #expect(await eventually { rig.started.withLock { $0 } == 3 })
    let start = ContinuousClock.now
    service.stop()
    // The commands ignore their cut and never return before releaseAll: a stop that waited for them
    // would never return at all; the bound only guards against that hang.
    #expect(ContinuousClock.now - start < .seconds(60))
    rig.releaseAll()
    for task in running { _ = await task.value }
  }

  @Test func theDeadlineIsAFleetSetting() throws {
    let url = try BrokerURL.parse("mqtt://broker/acme")
    #expect(FleetSettings(url: url, hostID: "h").commandLimits == CommandLimits())
    #expect(
      CommandLimits().deadline == .seconds(60) && CommandLimits().running == 4
        && CommandLimits().waiting == 16)
    let short = FleetSettings(url: url, hostID: "h", commandTimeout: .milliseconds(1500))
    #expect(short.commandLimits.deadline == .milliseconds(1500))
    #expect(short.commandLimits.deadlineText == "1.5s")
    #expect(throws: CaptureError.self) {
      try FleetSettings(url: url, hostID: "h", commandTimeout: .zero).validate()
    }
  }
}

@Suite struct CommandSaveTests {
  @Test func aBurstOfRepliesIsSavedWholeAndEachReplyAfterItsSave() async throws {
    let dir = TemporaryDirectory()
    let path = dir.filePath + "/replies.json"
    let rig = CommandRig()
    let service = rig.service(path: path, limits: CommandLimits(running: 200))
    await withTaskGroup(of: Void.self) { group in
      for i in 0..<200 {
        group.addTask { _ = await service.handle(bytes(#"{"id":"s\#(i)","argv":["get","dock","x"]}"#)) }
      }
    }
    #expect(rig.calls.withLock { $0.count } == 200)
    // A restart answers every one from the file (fewer than `memory`), and runs none of them again.
    let again = CommandRig()
    let restarted = again.service(path: path)
    for i in 0..<200 {
      _ = await restarted.handle(bytes(#"{"id":"s\#(i)","argv":["get","dock","x"]}"#))
    }
    #expect(again.calls.withLock { $0.isEmpty })
  }
}
