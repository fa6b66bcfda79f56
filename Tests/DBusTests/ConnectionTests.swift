import Glibc
import Testing

@testable import DBus

/// Against a real dbus-daemon started per test (TestBus).
@Suite struct ConnectionTests {
  static let testInterface = "org.example.Test"

  /// Exports an object on `connection` that answers `Echo` with its arguments, `Fail` with the error
  /// named by its two string arguments and `Hang` never; the result counts the `Hang` calls that have
  /// reached the object (each one is pending at its caller from then on).
  @discardableResult
  static func exportTestObject(
    on connection: DBusConnection, path: String = "/org/example/Object"
  ) throws -> Counter {
    let hangs = Counter()
    try connection.export(path: path) { call in
      switch call.member {
      case "Echo":
        return .values(call.body)
      case "Fail":
        return .error(
          DBusError(name: call.body[0].stringValue ?? "", message: call.body[1].stringValue ?? ""))
      case "Hang":
        hangs.increment()
        try? await Task.sleep(for: .seconds(3600))
        return .values([])
      default:
        return .error(DBusError(name: DBusError.Name.unknownMethod, message: "no \(call.member)"))
      }
    }
    return hangs
  }

  @Test func connectsAndHasAUniqueName() async throws {
    let bus = try await TestBus.started()
    defer { bus.stop() }
    let connection = try bus.connect()
    defer { connection.close() }
    #expect(connection.uniqueName.hasPrefix(":"))
    #expect(connection.isConnected)
    let other = try bus.connect()
    defer { other.close() }
    #expect(other.uniqueName != connection.uniqueName)
  }

  @Test func callsTheBusDriver() async throws {
    let bus = try await TestBus.started()
    defer { bus.stop() }
    let connection = try bus.connect()
    defer { connection.close() }
    try await withDeadline {
      let names = try await connection.listNames()
      #expect(names.contains("org.freedesktop.DBus"))
      #expect(names.contains(connection.uniqueName))
      let raw = try await connection.testCall(
        destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
        member: "ListNames")
      #expect(raw.count == 1 && raw[0].signature == "as")
      let id = try await connection.testCall(
        destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
        member: "GetId")
      #expect(id.count == 1)
      let text = try #require(id[0].stringValue)
      #expect(text.utf8.count == 32)
      #expect(
        text.utf8.allSatisfy {
          (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
            || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
        })
      let ownsItsName = try await connection.nameHasOwner(connection.uniqueName)
      #expect(ownsItsName)
      let nobodyOwned = try await connection.nameHasOwner("org.example.Nobody")
      #expect(nobodyOwned == false)
      let acquired = try await connection.requestName("org.example.Owned")
      #expect(acquired)
      let ownedNow = try await connection.nameHasOwner("org.example.Owned")
      #expect(ownedNow)
      try await connection.flush()
    }
  }

  @Test func roundTripsEveryValueType() async throws {
    let pair = try await TestBus.pair()
    defer { pair.close() }
    let (server, client) = (pair.server, pair.client)
    try Self.exportTestObject(on: server)
    let values: [DBusValue] = [
      .byte(0), .byte(255), .boolean(true), .boolean(false),
      .int16(.min), .int16(.max), .uint16(.min), .uint16(.max),
      .int32(.min), .int32(.max), .uint32(.min), .uint32(.max),
      .int64(.min), .int64(.max), .uint64(.min), .uint64(.max),
      .double(-0.0), .double(3.141592653589793), .double(.greatestFiniteMagnitude), .double(.infinity),
      .string(""), .string("Grüße, 世界 ✓ 🎉"), .objectPath("/"), .objectPath("/org/example/A_1"),
      .signature(""), .signature("a{sv}(ii)aay"),
      .stringDict([
        "name": .string("scanner"), "rssi": .int16(-60), "uuids": .strings(["180f", "180a"]),
        "nested": .stringDict(["deep": .stringDict(["x": .bytes([1, 2, 3])])]),
        "empty": .stringDict([:]),
      ]),
      .array(
        elementSignature: "(ii)",
        [.structure([.int32(1), .int32(-2)]), .structure([.int32(.max), .int32(.min)])]),
      .array(elementSignature: "ay", [.bytes([]), .bytes([0]), .bytes(Array(0...255))]),
      .variant(.variant(.variant(.string("three deep")))),
      .variant(.bytes([9, 8])),
      .variant(.stringDict(["k": .int32(1)])),
      .array(elementSignature: "s", []), .array(elementSignature: "a{sv}", []),
      .array(elementSignature: "v", []),
      .array(elementSignature: "(sv)", [.structure([.string("a"), .variant(.double(1.5))])]),
      .structure([
        .string("x"), .structure([.boolean(true), .array(elementSignature: "o", [.objectPath("/o")])]),
      ]),
      .array(
        elementSignature: "{ys}",
        [.dictEntry(.byte(1), .string("one")), .dictEntry(.byte(2), .string("two"))]),
      .array(elementSignature: "{ia{sv}}", [.dictEntry(.int32(7), .stringDict(["a": .boolean(false)]))]),
      .objectPaths(["/a", "/a/b"]),
    ]
    try await withDeadline {
      let reply = try await client.testCall(
        destination: server.uniqueName, path: "/org/example/Object", interface: Self.testInterface,
        member: "Echo", values)
      #expect(reply.count == values.count)
      for (sent, received) in zip(values, reply) {
        #expect(sent == received)
        #expect(sent.signature == received.signature)
      }
      // NaN is not equal to itself: compare its bits.
      let nan = try await client.testCall(
        destination: server.uniqueName, path: "/org/example/Object", interface: Self.testInterface,
        member: "Echo", [.double(.nan)])
      #expect(nan.first?.doubleValue?.isNaN == true)
      // An empty body.
      let empty = try await client.testCall(
        destination: server.uniqueName, path: "/org/example/Object", interface: Self.testInterface,
        member: "Echo")
      #expect(empty.isEmpty)
      // 1 MiB of bytes goes through the fixed-array path both ways.
      let big = DBusValue.bytes((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
      let echoed = try await client.testCall(
        destination: server.uniqueName, path: "/org/example/Object", interface: Self.testInterface,
        member: "Echo", [big])
      #expect(echoed == [big])
    }
  }

  @Test func passesFileDescriptors() async throws {
    let pair = try await TestBus.pair()
    defer { pair.close() }
    let (server, client) = (pair.server, pair.client)
    try Self.exportTestObject(on: server)
    var pipeFDs: [Int32] = [-1, -1]
    #expect(pipe(&pipeFDs) == 0)
    let fds = pipeFDs
    defer {
      close(fds[0])
      close(fds[1])
    }
    try await withDeadline {
      let reply = try await client.testCall(
        destination: server.uniqueName, path: "/org/example/Object", interface: Self.testInterface,
        member: "Echo", [.unixFD(fds[0])])
      let received = try #require(reply.first?.unixFDValue)
      defer { close(received) }
      #expect(received != fds[0])
      var byte: UInt8 = 42
      #expect(write(fds[1], &byte, 1) == 1)
      byte = 0
      #expect(read(received, &byte, 1) == 1)
      #expect(byte == 42)
    }
  }

  @Test func errorRepliesKeepTheirNameAndMessage() async throws {
    let pair = try await TestBus.pair()
    defer { pair.close() }
    let (server, client) = (pair.server, pair.client)
    try Self.exportTestObject(on: server)
    try await withDeadline {
      let error = await dbusError {
        try await client.testCall(
          destination: server.uniqueName, path: "/org/example/Object", interface: Self.testInterface,
          member: "Fail", [.string("org.bluez.Error.Failed"), .string("Not connected")])
      }
      #expect(error == DBusError(name: "org.bluez.Error.Failed", message: "Not connected"))
      #expect(error?.description == "org.bluez.Error.Failed: Not connected")
      // An invalid error name from a handler goes out as Failed instead of aborting in libdbus.
      let invalid = await dbusError {
        try await client.testCall(
          destination: server.uniqueName, path: "/org/example/Object", interface: Self.testInterface,
          member: "Fail", [.string("not an error name"), .string("text")])
      }
      #expect(invalid == DBusError(name: DBusError.Name.failed, message: "text"))
      // No object at that path: libdbus answers for the server.
      let missingObject = await dbusError {
        try await client.testCall(
          destination: server.uniqueName, path: "/org/example/Nothing", interface: Self.testInterface,
          member: "Echo")
      }
      #expect(missingObject?.name == DBusError.Name.unknownMethod)
    }
  }

  @Test func introspectionAndPeerAreAnswered() async throws {
    let pair = try await TestBus.pair()
    defer { pair.close() }
    let (server, client) = (pair.server, pair.client)
    try Self.exportTestObject(on: server, path: "/org/example")
    try Self.exportTestObject(on: server, path: "/org/example/child")
    try await withDeadline {
      let xml = try await client.testCall(
        destination: server.uniqueName, path: "/org/example",
        interface: "org.freedesktop.DBus.Introspectable",
        member: "Introspect")
      let text = try #require(xml.first?.stringValue)
      #expect(text.contains("<interface name=\"org.freedesktop.DBus.Introspectable\">"))
      #expect(text.contains("<node name=\"child\"/>"))
      let ping = try await client.testCall(
        destination: server.uniqueName, path: "/org/example", interface: "org.freedesktop.DBus.Peer",
        member: "Ping")
      #expect(ping.isEmpty)
    }
    let duplicate = dbusError {
      try Self.exportTestObject(on: server, path: "/org/example")
    }
    #expect(duplicate?.name == "org.freedesktop.DBus.Error.ObjectPathInUse")
    server.unexport(path: "/org/example/child")
    try await withDeadline {
      let error = await dbusError {
        try await client.testCall(
          destination: server.uniqueName, path: "/org/example/child", interface: Self.testInterface,
          member: "Echo")
      }
      #expect(error?.name == DBusError.Name.unknownMethod)
    }
  }

  @Test func callTimeoutGivesNoReply() async throws {
    let pair = try await TestBus.pair()
    defer { pair.close() }
    let (server, client) = (pair.server, pair.client)
    try Self.exportTestObject(on: server)
    try await withDeadline {
      let start = monotonicSeconds()
      let error = await dbusError {
        try await client.testCall(
          destination: server.uniqueName, path: "/org/example/Object", interface: Self.testInterface,
          member: "Hang", timeout: .milliseconds(300))
      }
      let elapsed = monotonicSeconds() - start
      #expect(error?.name == DBusError.Name.noReply)
      #expect(elapsed >= 0.29)
      // Only "it ends": these machines are noisy (two cores, the whole suite in parallel), so speed is
      // for bench/, not for an assertion here.
      #expect(elapsed < 30)
      // The connection is still usable.
      let stillUsable = try await client.nameHasOwner(server.uniqueName)
      #expect(stillUsable)
    }
  }

  @Test func cancellingTheTaskCancelsTheCall() async throws {
    let pair = try await TestBus.pair()
    defer { pair.close() }
    let (server, client) = (pair.server, pair.client)
    let hangs = try Self.exportTestObject(on: server)
    try await withDeadline {
      let task = Task {
        await dbusError {
          try await client.testCall(
            destination: server.uniqueName, path: "/org/example/Object", interface: Self.testInterface,
            member: "Hang")
        }
      }
      // Cancelled while the call is pending, not before it was sent.
      try await waitUntil("the Hang call at the server") { hangs.value == 1 }
      task.cancel()
      let error = await task.value
      #expect(error?.name == DBusError.Name.cancelled)
      // Already cancelled before the call starts.
      let early = Task {
        withUnsafeCurrentTask { $0?.cancel() }
        return await dbusError {
          try await client.testCall(
            destination: server.uniqueName, path: "/org/example/Object", interface: Self.testInterface,
            member: "Echo")
        }
      }
      #expect(await early.value?.name == DBusError.Name.cancelled)
      let stillUsable = try await client.nameHasOwner(server.uniqueName)
      #expect(stillUsable)
    }
  }

  @Test func missingNameGivesServiceUnknown() async throws {
    let bus = try await TestBus.started()
    defer { bus.stop() }
    let client = try bus.connect()
    defer { client.close() }
    try await withDeadline {
      let error = await dbusError {
        try await client.testCall(
          destination: "org.example.Missing", path: "/", interface: Self.testInterface, member: "Echo")
      }
      #expect(error?.name == DBusError.Name.serviceUnknown)
      #expect(error?.message.isEmpty == false)
    }
  }

  @Test func signalsAreFilteredByMemberPathAndArg0InOrder() async throws {
    let bus = try await TestBus.started()
    defer { bus.stop() }
    let emitter = try bus.connect()
    defer { emitter.close() }
    let receiver = try bus.connect()
    defer { receiver.close() }
    try await withDeadline {
      let stream = try await receiver.signals(
        MatchRule(interface: Self.testInterface, member: "Tick", path: "/test/a", arg0: "yes"))
      let nothing = try await receiver.signals(MatchRule(interface: Self.testInterface, member: "Never"))
      // The watcher's result is the count it saw, read after it has been cancelled.
      let watcher = Task {
        var seen = 0
        for await _ in nothing { seen += 1 }
        return seen
      }
      for i in 0..<20 {
        try emitter.emitSignal(
          path: "/test/a", interface: Self.testInterface, member: "Tick", [.string("yes"), .int32(Int32(i))])
        try emitter.emitSignal(
          path: "/test/b", interface: Self.testInterface, member: "Tick", [.string("yes"), .int32(-1)])
        try emitter.emitSignal(
          path: "/test/a", interface: Self.testInterface, member: "Tock", [.string("yes"), .int32(-1)])
        try emitter.emitSignal(
          path: "/test/a", interface: Self.testInterface, member: "Tick", [.string("no"), .int32(-1)])
        try emitter.emitSignal(
          path: "/test/a", interface: "org.example.Other", member: "Tick", [.string("yes"), .int32(-1)])
      }
      let received = await collect(stream, count: 20)
      #expect(received.map { $0.body[1].int32Value } == (0..<20).map { Int32($0) })
      #expect(received.allSatisfy { $0.sender == emitter.uniqueName })
      #expect(
        received.allSatisfy {
          $0.path == "/test/a" && $0.member == "Tick" && $0.interface == Self.testInterface
        })
      // A value with an apostrophe and a comma survives the match rule's quoting.
      let quoted = try await receiver.signals(
        MatchRule(interface: Self.testInterface, arg0: "it's, quoted\\"))
      try emitter.emitSignal(
        path: "/", interface: Self.testInterface, member: "Q", [.string("its, quoted\\")])
      try emitter.emitSignal(
        path: "/", interface: Self.testInterface, member: "Q", [.string("it's, quoted\\")])
      #expect(await collect(quoted, count: 1).first?.body == [.string("it's, quoted\\")])
      // Everything emitted has reached the bus, and the bus has answered this receiver since.
      try await emitter.flush()
      try await receiver.flush()
      watcher.cancel()
      #expect(await watcher.value == 0)
    }
  }

  @Test func streamsTenThousandSignalsWithoutLoss() async throws {
    let bus = try await TestBus.started()
    defer { bus.stop() }
    let emitter = try bus.connect()
    defer { emitter.close() }
    let receiver = try bus.connect()
    defer { receiver.close() }
    let count = 10_000
    try await withDeadline(60) {
      let stream = try await receiver.signals(
        MatchRule(
          sender: emitter.uniqueName, interface: "org.freedesktop.DBus.Properties",
          member: "PropertiesChanged",
          path: "/org/bluez/hci0/dev_00_11_22_33_44_55/service0010/char0011"))
      let start = monotonicSeconds()
      let emitting = Task {
        for i in 0..<count {
          // Share the two cooperative threads with the tests running alongside.
          if i % 256 == 0 { await Task.yield() }
          try emitter.emitSignal(
            path: "/org/bluez/hci0/dev_00_11_22_33_44_55/service0010/char0011",
            interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            [
              .string("org.bluez.GattCharacteristic1"),
              .stringDict(["Value": .bytes([UInt8(truncatingIfNeeded: i), 0x01, 0x02, 0x03, 0x04, 0x05])]),
              .strings([]),
            ])
        }
      }
      var next = 0
      var inOrder = true
      for await signal in stream {
        let value = signal.body[1].stringDictValue?["Value"]?.bytesValue
        if value?.first != UInt8(truncatingIfNeeded: next) { inOrder = false }
        next += 1
        if next == count { break }
        if next % 256 == 0 { await Task.yield() }
      }
      try await emitting.value
      let elapsed = monotonicSeconds() - start
      #expect(next == count)
      #expect(inOrder)
      let rate = Double(count) / elapsed
      print(
        "DBus signal throughput: \(count) PropertiesChanged in \(Int(elapsed * 1000)) ms = \(Int(rate)) signals/s"
      )
    }
  }

  @Test func endingAStreamRemovesItsMatch() async throws {
    let bus = try await TestBus.started()
    defer { bus.stop() }
    let emitter = try bus.connect()
    defer { emitter.close() }
    let receiver = try bus.connect()
    defer { receiver.close() }
    try await withDeadline {
      // The bus's own count of this connection's match rules (org.freedesktop.DBus.Debug.Stats, in
      // Debian's dbus-daemon build).
      @Sendable func matchRules() async throws -> UInt32? {
        let stats = try await emitter.testCall(
          destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
          interface: "org.freedesktop.DBus.Debug.Stats", member: "GetConnectionStats",
          [.string(receiver.uniqueName)])
        return stats.first?.stringDictValue?["MatchRules"]?.uint32Value
      }
      let before = try await matchRules()
      let rule = MatchRule(interface: Self.testInterface, member: "Ping")
      let stream = try await receiver.signals(rule)
      let rulesWhileSubscribed = try await matchRules()
      #expect(rulesWhileSubscribed == before.map { $0 + 1 })
      #expect(receiver.core.subscriptionCount == 1)
      let received = Counter()
      let consumer = Task {
        var delivered = 0
        for await _ in stream {
          delivered += 1
          received.increment()
        }
        return delivered
      }
      try emitter.emitSignal(path: "/", interface: Self.testInterface, member: "Ping")
      // Cancelled once the Ping has been taken from the stream.
      try await waitUntil("the Ping at the consumer") { received.value == 1 }
      consumer.cancel()
      let delivered = await consumer.value
      #expect(delivered == 1)
      // Termination removes the subscription and sends RemoveMatch, both on the connection's queue.
      try await waitUntil("the subscription's removal") { receiver.core.subscriptionCount == 0 }
      try await receiver.flush()
      let rulesAfterEnd = try await matchRules()
      #expect(rulesAfterEnd == before)
      // Signals after the removal reach nobody and break nothing.
      for _ in 0..<10 { try emitter.emitSignal(path: "/", interface: Self.testInterface, member: "Ping") }
      try await emitter.flush()
      #expect(receiver.isConnected)
      // A second subscription to the same rule works independently.
      let again = try await receiver.signals(rule)
      try emitter.emitSignal(path: "/", interface: Self.testInterface, member: "Ping", [.int32(2)])
      #expect(await collect(again, count: 1).first?.body == [.int32(2)])
    }
  }

  @Test func losingTheBusFailsCallsEndsStreamsAndWakesWaiters() async throws {
    let pair = try await TestBus.pair()
    defer { pair.close() }
    let (server, client) = (pair.server, pair.client)
    let hangs = try Self.exportTestObject(on: server)
    try await withDeadline {
      let stream = try await client.signals(MatchRule(interface: Self.testInterface))
      let streamEnded = Task { await collect(stream, count: 1_000).count }
      let waiter = Task { await client.waitUntilDisconnected() }
      let pending = Task {
        await dbusError {
          try await client.testCall(
            destination: server.uniqueName, path: "/org/example/Object", interface: Self.testInterface,
            member: "Hang")
        }
      }
      // The call is pending (the server has it) when the bus goes.
      try await waitUntil("the Hang call at the server") { hangs.value == 1 }
      pair.bus.stop()
      let error = await pending.value
      #expect(error?.name == DBusError.Name.disconnected)
      #expect(await streamEnded.value == 0)
      await waiter.value
      #expect(!client.isConnected)
      await server.waitUntilDisconnected()
      #expect(!server.isConnected)
      let after = await dbusError { try await client.nameHasOwner("org.freedesktop.DBus") }
      #expect(after?.name == DBusError.Name.disconnected)
      let emitError = dbusError {
        try client.emitSignal(path: "/", interface: Self.testInterface, member: "Late")
      }
      #expect(emitError?.name == DBusError.Name.disconnected)
      let subscribeError = await dbusError { try await client.signals(MatchRule()) }
      #expect(subscribeError?.name == DBusError.Name.disconnected)
    }
  }

  @Test func closingEndsEverything() async throws {
    let bus = try await TestBus.started()
    defer { bus.stop() }
    let server = try bus.connect()
    defer { server.close() }
    let client = try bus.connect()
    let hangs = try Self.exportTestObject(on: server)
    try await withDeadline {
      let stream = try await client.signals(MatchRule(interface: Self.testInterface))
      let streamEnded = Task { await collect(stream, count: 1_000).count }
      let pending = Task {
        await dbusError {
          try await client.testCall(
            destination: server.uniqueName, path: "/org/example/Object", interface: Self.testInterface,
            member: "Hang")
        }
      }
      // The call is pending (the server has it) when the client closes.
      try await waitUntil("the Hang call at the server") { hangs.value == 1 }
      client.close()
      #expect(!client.isConnected)
      await client.waitUntilDisconnected()
      #expect(await pending.value?.name == DBusError.Name.disconnected)
      #expect(await streamEnded.value == 0)
      client.close()
      // The bus saw the client go.
      let clientStillOwned = try await server.nameHasOwner(client.uniqueName)
      #expect(clientStillOwned == false)
    }
  }

  @Test func waitingCanBeCancelled() async throws {
    let bus = try await TestBus.started()
    defer { bus.stop() }
    let connection = try bus.connect()
    defer { connection.close() }
    try await withDeadline {
      let asked = Counter()
      let waiter = Task {
        asked.increment()
        await connection.waitUntilDisconnected()
      }
      // Cancelled while it waits, not before: the waiter has started, and it queues its registration
      // on the connection's serial queue right after counting, with no suspension in between; this
      // synchronous read on that queue then comes after the registration.
      try await waitUntil("the waiter to start") { asked.value == 1 }
      _ = connection.core.subscriptionCount
      waiter.cancel()
      await waiter.value
      #expect(connection.isConnected)
    }
  }

  @Test func parsesManagedObjectsAndProperties() async throws {
    let pair = try await TestBus.pair()
    defer { pair.close() }
    let (server, client) = (pair.server, pair.client)
    let adapter: [String: DBusValue] = ["Address": .string("00:11:22:33:44:55"), "Powered": .boolean(true)]
    let device: [String: DBusValue] = [
      "Name": .string("Socket S740"), "RSSI": .int16(-52),
      "UUIDs": .strings(["0000180f-0000-1000-8000-00805f9b34fb"]),
      "ManufacturerData": .array(
        elementSignature: "{qv}", [.dictEntry(.uint16(0x0131), .variant(.bytes([1, 2])))]),
    ]
    let properties = PropertyStore(["Powered": .boolean(true), "Alias": .string("hci0")])
    try server.export(path: "/") { call in
      guard call.interface == "org.freedesktop.DBus.ObjectManager", call.member == "GetManagedObjects" else {
        return .error(DBusError(name: DBusError.Name.unknownMethod, message: call.member))
      }
      func interfaces(_ entries: [(String, [String: DBusValue])]) -> DBusValue {
        .array(elementSignature: "{sa{sv}}", entries.map { .dictEntry(.string($0.0), .stringDict($0.1)) })
      }
      return .values([
        .array(
          elementSignature: "{oa{sa{sv}}}",
          [
            .dictEntry(.objectPath("/org/bluez"), interfaces([("org.bluez.AgentManager1", [:])])),
            .dictEntry(.objectPath("/org/bluez/hci0"), interfaces([("org.bluez.Adapter1", adapter)])),
            .dictEntry(
              .objectPath("/org/bluez/hci0/dev_00_11_22_33_44_55"),
              interfaces([("org.bluez.Device1", device), ("org.freedesktop.DBus.Properties", [:])])),
          ])
      ])
    }
    try server.export(path: "/org/bluez/hci0") { call in
      guard call.interface == "org.freedesktop.DBus.Properties" else {
        return .error(DBusError(name: DBusError.Name.unknownMethod, message: call.member))
      }
      switch (call.member, call.body.count) {
      case ("GetAll", 1): return .values([.stringDict(await properties.all)])
      case ("Get", 2):
        guard let value = await properties.all[call.body[1].stringValue ?? ""] else {
          return .error(
            DBusError(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no such property"))
        }
        return .values([.variant(value)])
      case ("Set", 3):
        guard case .variant(let value) = call.body[2], let name = call.body[1].stringValue else {
          return .error(.invalidArgs("Set takes ssv"))
        }
        await properties.set(name, value)
        return .values([])
      default:
        return .error(DBusError(name: DBusError.Name.unknownMethod, message: call.member))
      }
    }
    try await withDeadline {
      let objects = try await client.getManagedObjects(destination: server.uniqueName)
      #expect(
        objects == [
          "/org/bluez": ["org.bluez.AgentManager1": [:]],
          "/org/bluez/hci0": ["org.bluez.Adapter1": adapter],
          "/org/bluez/hci0/dev_00_11_22_33_44_55": [
            "org.bluez.Device1": device, "org.freedesktop.DBus.Properties": [:],
          ],
        ])
      let all = try await client.getAllProperties(
        destination: server.uniqueName, path: "/org/bluez/hci0", interface: "org.bluez.Adapter1")
      #expect(all == ["Powered": .boolean(true), "Alias": .string("hci0")])
      let alias = try await client.getProperty(
        destination: server.uniqueName, path: "/org/bluez/hci0", interface: "org.bluez.Adapter1",
        name: "Alias")
      #expect(alias == .string("hci0"))
      try await client.setProperty(
        destination: server.uniqueName, path: "/org/bluez/hci0", interface: "org.bluez.Adapter1",
        name: "Alias",
        value: .string("scanner"))
      let newAlias = try await client.getProperty(
        destination: server.uniqueName, path: "/org/bluez/hci0", interface: "org.bluez.Adapter1",
        name: "Alias")
      #expect(newAlias == .string("scanner"))
      let unknown = await dbusError {
        try await client.getProperty(
          destination: server.uniqueName, path: "/org/bluez/hci0", interface: "org.bluez.Adapter1",
          name: "Nope")
      }
      #expect(
        unknown == DBusError(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no such property"))
      // A reply of the wrong shape is InvalidSignature, not a crash or a silent empty result.
      let wrongShape = await dbusError {
        try await client.getManagedObjects(destination: server.uniqueName, path: "/org/bluez/hci0")
      }
      #expect(wrongShape?.name == DBusError.Name.unknownMethod)
      try server.export(path: "/wrong") { _ in .values([.string("not a dictionary")]) }
      let invalid = await dbusError {
        try await client.getManagedObjects(destination: server.uniqueName, path: "/wrong")
      }
      #expect(invalid?.name == DBusError.Name.invalidSignature)
      #expect(invalid?.message == "expected a reply of type 'a{oa{sa{sv}}}', got 's'")
    }
  }

  @Test func systemHonoursTheEnvironment() async throws {
    let bus = try await TestBus.started()
    defer { bus.stop() }
    setenv("DBUS_SYSTEM_BUS_ADDRESS", bus.address, 1)
    defer { unsetenv("DBUS_SYSTEM_BUS_ADDRESS") }
    let system = try DBusConnection.system()
    defer { system.close() }
    let other = try bus.connect()
    defer { other.close() }
    try await withDeadline {
      let acquired = try await system.requestName("org.example.First")
      #expect(acquired)
      let systemSeen = try await other.nameHasOwner("org.example.First")
      #expect(systemSeen)
    }
    // Read again on every call: a second bus at another address.
    let second = try await TestBus.started()
    defer { second.stop() }
    setenv("DBUS_SYSTEM_BUS_ADDRESS", second.address, 1)
    let again = try DBusConnection.system()
    defer { again.close() }
    let onSecond = try second.connect()
    defer { onSecond.close() }
    try await withDeadline {
      let acquired = try await again.requestName("org.example.Second")
      #expect(acquired)
      let againSeen = try await onSecond.nameHasOwner("org.example.Second")
      #expect(againSeen)
      let firstSeenOnSecond = try await onSecond.nameHasOwner("org.example.First")
      #expect(firstSeenOnSecond == false)
    }
  }

  @Test func badAddressesFailWithoutCrashing() {
    let missing = dbusError {
      try DBusConnection(address: "unix:path=/nonexistent/dbus/socket")
    }
    #expect(missing?.name == "org.freedesktop.DBus.Error.FileNotFound")
    let garbage = dbusError { try DBusConnection(address: "not an address") }
    #expect(garbage?.name == "org.freedesktop.DBus.Error.BadAddress")
    let nul = dbusError { try DBusConnection(address: "unix:path=/a\0b") }
    #expect(nul?.name == DBusError.Name.invalidArgs)
  }

  @Test func invalidArgumentsAreRefusedNotFatal() async throws {
    let bus = try await TestBus.started()
    defer { bus.stop() }
    let connection = try bus.connect()
    defer { connection.close() }
    let invalidArgs = DBusError.Name.invalidArgs
    @Sendable func callError(
      destination: String = "org.freedesktop.DBus", path: String = "/org/freedesktop/DBus",
      interface: String = "org.freedesktop.DBus", member: String = "GetId", _ arguments: [DBusValue] = []
    ) async -> String? {
      await dbusError {
        try await connection.testCall(
          destination: destination, path: path, interface: interface, member: member, arguments)
      }?.name
    }
    try await withDeadline {
      #expect(await callError(path: "no-slash") == invalidArgs)
      #expect(await callError(path: "/a/") == invalidArgs)
      #expect(await callError(path: "") == invalidArgs)
      #expect(await callError(destination: "not a name") == invalidArgs)
      #expect(await callError(destination: "") == invalidArgs)
      #expect(await callError(interface: "nodots") == invalidArgs)
      #expect(await callError(interface: "org.freedesktop.DBus.Local") == invalidArgs)
      #expect(await callError(member: "has.dot") == invalidArgs)
      #expect(await callError(member: "") == invalidArgs)
      #expect(await callError([.objectPath("relative/path")]) == invalidArgs)
      #expect(await callError([.signature("a{sv")]) == invalidArgs)
      #expect(await callError([.signature("z")]) == invalidArgs)
      #expect(await callError([.string("a\0b")]) == invalidArgs)
      #expect(await callError([.array(elementSignature: "i", [.int64(1)])]) == invalidArgs)
      #expect(
        await callError([.array(elementSignature: "{sv}", [.dictEntry(.string("k"), .int32(1))])])
          == invalidArgs)
      #expect(await callError([.dictEntry(.string("k"), .variant(.int32(1)))]) == invalidArgs)
      #expect(await callError([.structure([])]) == invalidArgs)
      let emit = dbusError {
        try connection.emitSignal(path: "bad path", interface: Self.testInterface, member: "M")
      }
      #expect(emit?.name == invalidArgs)
      let local = dbusError {
        try connection.emitSignal(
          path: "/org/freedesktop/DBus/Local", interface: Self.testInterface, member: "M")
      }
      #expect(local?.name == invalidArgs)
      let export = dbusError { try connection.export(path: "x") { _ in .values([]) } }
      #expect(export?.name == invalidArgs)
      connection.unexport(path: "not a path")
      let rules = [
        MatchRule(type: "bogus"), MatchRule(type: "method_call"), MatchRule(sender: "bad sender"),
        MatchRule(interface: "x"),
        MatchRule(member: "a.b"), MatchRule(path: "p"), MatchRule(path: "/a", pathNamespace: "/a"),
        MatchRule(arg0: "nul\0"),
      ]
      for rule in rules {
        let error = await dbusError { try await connection.signals(rule) }
        #expect(error?.name == invalidArgs, "\(rule)")
      }
      #expect(connection.core.subscriptionCount == 0)
      // Still connected and working.
      #expect(connection.isConnected)
      let stillWorks = try await connection.nameHasOwner(connection.uniqueName)
      #expect(stillWorks)
    }
  }

  @Test func droppingTheConnectionClosesIt() async throws {
    let bus = try await TestBus.started()
    defer { bus.stop() }
    let observer = try bus.connect()
    defer { observer.close() }
    func subscribeAndDrop() async throws -> (name: String, stream: AsyncStream<DBusSignal>) {
      let connection = try bus.connect()
      return (connection.uniqueName, try await connection.signals(MatchRule(interface: Self.testInterface)))
    }
    let (name, stream) = try await subscribeAndDrop()
    // The only reference went with the function: the deinit closes the connection and ends the stream.
    try await withDeadline {
      #expect(await collect(stream, count: 10).isEmpty)
      try await waitUntil("the bus to drop \(name)") { try await !observer.nameHasOwner(name) }
    }
  }

  @Test func connectionsFreeTheirCoreWhenClosedOrDropped() async throws {
    let bus = try await TestBus.started()
    defer { bus.stop() }
    let cores = try await withDeadline {
      let server = try bus.connect()
      let client = try bus.connect()
      try Self.exportTestObject(on: server)
      let stream = try await client.signals(MatchRule(interface: Self.testInterface))
      try server.emitSignal(path: "/", interface: Self.testInterface, member: "Hello")
      #expect(await collect(stream, count: 1).count == 1)
      let reply = try await client.testCall(
        destination: server.uniqueName, path: "/org/example/Object", interface: Self.testInterface,
        member: "Echo", [.int32(1)])
      #expect(reply == [.int32(1)])
      // The client is closed; the server only dropped.
      client.close()
      return [client.core, server.core]
    }
    weak let closed = cores[0]
    weak let dropped = cores[1]
    _ = consume cores
    // Every libdbus context held a reference to the core; teardown released them all.
    try await waitUntil("both cores to be freed", seconds: 30) { closed == nil && dropped == nil }
    #expect(closed == nil)
    #expect(dropped == nil)
  }

  @Test func handlersAreCancelledWhenTheConnectionCloses() async throws {
    let bus = try await TestBus.started()
    defer { bus.stop() }
    let server = try bus.connect()
    let client = try bus.connect()
    defer { client.close() }
    let (started, startedContinuation) = AsyncStream.makeStream(of: Void.self)
    let (ended, endedContinuation) = AsyncStream.makeStream(of: Bool.self)
    try server.export(path: "/org/example/Agent") { _ in
      startedContinuation.yield()
      try? await Task.sleep(for: .seconds(3600))
      endedContinuation.yield(Task.isCancelled)
      return .values([])
    }
    try await withDeadline {
      let pending = Task {
        await dbusError {
          try await client.testCall(
            destination: server.uniqueName, path: "/org/example/Agent", interface: Self.testInterface,
            member: "RequestConfirmation")
        }
      }
      for await _ in started { break }
      server.close()
      var cancelled: Bool?
      for await value in ended {
        cancelled = value
        break
      }
      #expect(cancelled == true)
      // The bus tells the caller its peer left.
      #expect(await pending.value?.name == "org.freedesktop.DBus.Error.NoReply")
    }
  }
}

/// Properties of a test object, shared by its handler's concurrent tasks. An actor rather than a
/// `Mutex`: the thread sanitizer cannot see Synchronization's futex-based lock, which is compiled
/// into the toolchain uninstrumented, and reports false races.
actor PropertyStore {
  private(set) var all: [String: DBusValue]
  init(_ all: [String: DBusValue]) { self.all = all }
  func set(_ name: String, _ value: DBusValue) { all[name] = value }
}
