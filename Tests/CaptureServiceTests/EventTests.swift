import CaptureCore
import HTTPTransport
import TestSupport
import Testing

@testable import CaptureService

@Suite("capture serve: events on the WebSocket")
struct EventTests {
  @Test("right after waitforcaptureevent: the arrival of the connected device, on the client handle")
  func replay() async throws {
    let s = try await Scene.make()
    #expect(
      s.h.output.frames(s.socket) == [
        #"{"jsonrpc":"2.0","result":{"event":{"id":1,"type":6,"value":{"guid":"\#(s.guid)","name":"Socket S740 [E537BA]","type":196624}},"handle":\#(s.client)}}"#
      ])
    // UUID v4, upper-case, in braces.
    let bare = Array(s.guid.dropFirst().dropLast())
    #expect(s.guid.first == "{" && s.guid.last == "}" && bare.count == 36)
    #expect(bare[14] == "4")
    #expect("89AB".contains(bare[19]))
    #expect(s.guid == s.guid.uppercased())
  }

  @Test("with Bluetooth LE there, DeviceManagerArrival comes first (type DeviceManagerBle)")
  func managerArrival() async throws {
    let s = try await Scene.make(bluetooth: true)
    let first = s.h.output.frames(s.socket)[0]
    let guid = try #require(Harness.guid(first))
    #expect(
      first
        == #"{"jsonrpc":"2.0","result":{"event":{"id":11,"type":6,"value":{"guid":"\#(guid)","name":"Device Manager","type":17104897}},"handle":\#(s.client)}}"#
    )
  }

  @Test("decoded data after opendevice: on the device handle, bytes 0-255, name and id; tagId as hex")
  func decodedData() async throws {
    let s = try await Scene.make()
    let device = try await s.h.openDevice(client: s.client, guid: s.guid)
    #expect(device != s.client && device != 0)
    s.device.code("4006")
    s.device.send(
      .decodedData(
        DecodedData(dataSource: DataSource(0x101), bytes: [0xFF, 0x00, 0x80], tagID: [0x04, 0xA2, 0x1F])))
    let frames = try await s.h.output.frames(s.socket, count: 3)
    #expect(
      frames[1]
        == #"{"jsonrpc":"2.0","result":{"event":{"id":5,"type":5,"value":{"data":[52,48,48,54],"id":19,"name":"\#(DataSource(19).name)"}},"handle":\#(device)}}"#
    )
    #expect(
      frames[2]
        == #"{"jsonrpc":"2.0","result":{"event":{"id":5,"type":5,"value":{"data":[255,0,128],"id":257,"name":"\#(DataSource(0x101).name)","tagId":"04A21F"}},"handle":\#(device)}}"#
    )
  }

  @Test("decoded data of a device the client has not opened does not reach it")
  func notOpened() async throws {
    let s = try await Scene.make()
    s.device.code("hidden")
    s.device.send(.error(CaptureError(.communicationError, "link noise")))
    // The error still reaches the client, on its own handle; the code does not.
    let frames = try await s.h.output.frames(s.socket, count: 2)
    #expect(
      frames[1]
        == #"{"jsonrpc":"2.0","result":{"event":{"id":4,"type":2,"value":-38},"handle":\#(s.client)}}"#)
    // The device's events reach the client in order: the code, sent before the error, would be here
    // before it.
    #expect(s.h.output.frames(s.socket).count == 2)
  }

  @Test("Power, Buttons, BatteryLevel and Error on the device handle, with the event data types of the SDK")
  func deviceEvents() async throws {
    let s = try await Scene.make()
    let d = try await s.h.openDevice(client: s.client, guid: s.guid)
    s.device.send(.power(.onCradle))
    s.device.send(.buttons([.left, .middle]))
    s.device.send(.batteryLevel(BatteryLevel(current: 80, minimum: 0, maximum: 100)))
    s.device.send(.error(CaptureError(.queueReseted, "behind")))
    s.device.send(.undecodedData(UndecodedData(bytes: [1, 2], origin: nil)))
    s.device.code("after")
    let frames = try await s.h.output.frames(s.socket, count: 6)
    func event(_ body: String) -> String { #"{"jsonrpc":"2.0","result":{"event":\#(body),"handle":\#(d)}}"# }
    #expect(frames[1] == event(#"{"id":6,"type":2,"value":2}"#))
    #expect(frames[2] == event(#"{"id":7,"type":2,"value":5}"#))
    #expect(frames[3] == event(#"{"id":8,"type":2,"value":\#(BatteryLevel(current: 80).packed)}"#))
    #expect(frames[4] == event(#"{"id":4,"type":2,"value":-45}"#))
    // Bytes that were not a barcode have no CaptureJS event: the next frame is the code.
    #expect(frames[5].contains(#""id":5,"type":5"#))
  }

  /// Flutter's helper finds the device of a Power, Buttons or BatteryLevel event by the event's handle
  /// among the handles `opendevice` gave it and drops the rest (capturesdk_flutter
  /// lib/capture_helper.dart:402-418, `_handleEvent`); so each must come on every handle opened on the
  /// device, in every client that opened it, as a plain number (`event.value as int`), and nowhere else.
  @Test(
    "BatteryLevel, Power and Buttons reach every handle opened on the device, in each client that opened it, and no other client"
  )
  func deviceEventsOnEveryOpenedHandle() async throws {
    let s = try await Scene.make()
    let other = try await s.h.openClient()
    let otherSocket = try await s.h.socket(for: other, id: 2)
    _ = try await s.h.output.frames(otherSocket, count: 1)
    let bystander = try await s.h.openClient()
    let bystanderSocket = try await s.h.socket(for: bystander, id: 3)
    _ = try await s.h.output.frames(bystanderSocket, count: 1)
    let first = try await s.h.openDevice(client: s.client, guid: s.guid)
    let second = try await s.h.openDevice(client: s.client, guid: s.guid)
    let theirs = try await s.h.openDevice(client: other, guid: s.guid)
    let level = BatteryLevel(current: 42)
    s.device.send(.batteryLevel(level))
    s.device.send(.power(.onBattery))
    s.device.send(.buttons([.power]))
    func event(_ body: String, _ handle: Int) -> String {
      #"{"jsonrpc":"2.0","result":{"event":\#(body),"handle":\#(handle)}}"#
    }
    let battery = #"{"id":8,"type":2,"value":\#(level.packed)}"#
    let power = #"{"id":6,"type":2,"value":\#(PowerState.onBattery.rawValue)}"#
    let buttons = #"{"id":7,"type":2,"value":\#(ButtonsState.power.rawValue)}"#
    // The handles in increasing order for each event (the service sends them sorted).
    let mine = [first, second].sorted()
    #expect(
      try await s.h.output.frames(s.socket, count: 7).dropFirst()
        == ArraySlice(
          [battery, power, buttons].flatMap { body in mine.map { event(body, $0) } }))
    #expect(
      try await s.h.output.frames(otherSocket, count: 4).dropFirst()
        == [event(battery, theirs), event(power, theirs), event(buttons, theirs)])
    // A client that opened nothing hears of the device only by its arrival and removal (device events
    // need an open handle, docs/capturejs.md §4): a client's events keep the device's order, so any of
    // the three would come before the removal.
    s.device.leave()
    let seen = try await s.h.output.frames(bystanderSocket, count: 2)
    #expect(seen[1].contains(#""event":{"id":2,"#) && seen[1].hasSuffix(#""handle":\#(bystander)}}"#))
  }

  @Test(
    "a device that leaves and comes back: removal with the old GUID, arrival with a new one; the old handle is not open"
  )
  func newGUID() async throws {
    let s = try await Scene.make()
    let d = try await s.h.openDevice(client: s.client, guid: s.guid)
    s.device.leave()
    s.device.comeBack()
    let frames = try await s.h.output.frames(s.socket, count: 3)
    #expect(
      frames[1]
        == #"{"jsonrpc":"2.0","result":{"event":{"id":2,"type":6,"value":{"guid":"\#(s.guid)","name":"Socket S740 [E537BA]","type":196624}},"handle":\#(s.client)}}"#
    )
    let second = try #require(Harness.guid(frames[2]))
    #expect(frames[2].contains(#""event":{"id":1,"type":6"#))
    #expect(second != s.guid)
    let stale = try await s.h.rpc(
      "getproperty", #"{"handle":\#(d),"property":{"id":327936,"type":0,"value":{}}}"#)
    #expect(stale.hasPrefix(#"{"error":{"code":-31,"#), "\(stale)")
    #expect(
      try await s.h.rpc("opendevice", #"{"handle":\#(s.client),"guid":"\#(s.guid)"}"#).hasPrefix(
        #"{"error":{"code":-17,"#))
    let d2 = try await s.h.openDevice(client: s.client, guid: second)
    #expect(d2 != d)
    s.device.code("x")
    let more = try await s.h.output.frames(s.socket, count: 4)
    #expect(more[3].hasSuffix(#""handle":\#(d2)}}"#))
  }

  @Test("a device arriving after waitforcaptureevent is told once")
  func laterArrival() async throws {
    let h = Harness(bluetooth: false)
    let client = try await h.openClient()
    let socket = try await h.socket(for: client, id: 5, path: "/")
    // waitforcaptureevent has bound the socket (its replay, of no device, is done) before the arrival.
    try await eventually("waitforcaptureevent to bind the socket") {
      h.service.state.withLock { $0.bound[socket] } != nil ? true : nil
    }
    let device = FakeDevice(id: "tcp://10.0.0.5:23", name: "DM8072", type: .none)
    h.engine.attach([device])
    let frames = try await h.output.frames(socket, count: 1)
    #expect(frames[0].contains(#""name":"DM8072","type":0}},"handle":\#(client)}}"#))
    // A later event of the device, on the client handle (the client has not opened it): a second
    // arrival would have come before it.
    device.send(.error(CaptureError(.communicationError, "link noise")))
    let after = try await h.output.frames(socket, count: 2)
    #expect(
      after[1] == #"{"jsonrpc":"2.0","result":{"event":{"id":4,"type":2,"value":-38},"handle":\#(client)}}"#)
    #expect(h.output.frames(socket).count == 2)
  }

  @Test("two clients: both get every arrival and removal; decoded data only where the device is open")
  func twoClients() async throws {
    let s = try await Scene.make()
    let other = try await s.h.openClient()
    let otherSocket = try await s.h.socket(for: other, id: 2)
    let otherFrames = try await s.h.output.frames(otherSocket, count: 1)
    #expect(Harness.guid(otherFrames[0]) == s.guid)
    let d = try await s.h.openDevice(client: s.client, guid: s.guid)
    s.device.code("one")
    s.device.leave()
    let mine = try await s.h.output.frames(s.socket, count: 3)
    let theirs = try await s.h.output.frames(otherSocket, count: 2)
    #expect(mine[1].contains(#""data":[111,110,101]"#) && mine[1].hasSuffix(#""handle":\#(d)}}"#))
    #expect(mine[2].contains(#""event":{"id":2,"#))
    #expect(theirs[1].contains(#""event":{"id":2,"#) && theirs[1].hasSuffix(#""handle":\#(other)}}"#))
    #expect(theirs.count == 2)
  }

  @Test("a client whose socket closes loses its handles and nothing else")
  func vanished() async throws {
    let s = try await Scene.make()
    let other = try await s.h.openClient()
    let otherSocket = try await s.h.socket(for: other, id: 2)
    _ = try await s.h.output.frames(otherSocket, count: 1)
    let d = try await s.h.openDevice(client: s.client, guid: s.guid)
    let otherD = try await s.h.openDevice(client: other, guid: s.guid)
    s.h.service.closed(s.socket)
    #expect(
      try await s.h.rpc("getproperty", #"{"handle":\#(d),"property":{"id":327936,"type":0}}"#).hasPrefix(
        #"{"error":{"code":-11,"#))
    #expect(try await s.h.rpc("close", #"{"handle":\#(s.client)}"#).hasPrefix(#"{"error":{"code":-11,"#))
    s.device.code("still")
    let theirs = try await s.h.output.frames(otherSocket, count: 2)
    #expect(theirs[1].hasSuffix(#""handle":\#(otherD)}}"#))
    #expect(s.h.output.frames(s.socket).count == 1)
    #expect(s.h.engine.subscribers.count == 1)
  }

  @Test("a client that stops reading is closed with 1008 and its handles freed; the other client goes on")
  func stoppedReading() async throws {
    let s = try await Scene.make()
    let other = try await s.h.openClient()
    let otherSocket = try await s.h.socket(for: other, id: 2)
    _ = try await s.h.output.frames(otherSocket, count: 1)
    _ = try await s.h.openDevice(client: s.client, guid: s.guid)
    let otherD = try await s.h.openDevice(client: other, guid: s.guid)
    s.h.output.refused.withLock { _ = $0.insert(s.socket) }
    s.device.code("a")
    s.device.code("b")
    let closes = try await eventually("a close") { s.h.output.closed.isEmpty ? nil : s.h.output.closed }
    #expect(
      closes == [
        .init(socket: s.socket, code: 1008, reason: "client \(s.client) stopped reading its WebSocket")
      ])
    let theirs = try await s.h.output.frames(otherSocket, count: 3)
    #expect(theirs[2].hasSuffix(#""handle":\#(otherD)}}"#))
    #expect(try await s.h.rpc("close", #"{"handle":\#(s.client)}"#).hasPrefix(#"{"error":{"code":-11,"#))
    #expect(
      s.h.warnings.all == ["dropped client \(s.client): client \(s.client) stopped reading its WebSocket"])
  }

  @Test("shutdown: every WebSocket gets close code 1001")
  func shutdown() async throws {
    let s = try await Scene.make()
    let idle = WebSocketID(9)
    s.h.service.opened(
      idle, request: HTTPRequest(id: 0, method: "GET", path: "/", headers: Harness.loopback, body: []))
    s.h.service.shutdown()
    let closes = Set(s.h.output.closed.map { "\($0.socket) \($0.code)" })
    #expect(closes == ["ws#1 1001", "ws#9 1001"])
    #expect(
      s.h.service.upgrade(HTTPRequest(id: 0, method: "GET", path: "/", headers: Harness.loopback, body: []))?
        .status == 503)
  }
}
