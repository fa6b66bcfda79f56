import CaptureCore
import HTTPTransport
import TestSupport
import Testing

@testable import CaptureService

/// The requests of the SDK 2.0 clients beyond CaptureJS 1.3.50 (docs/capturejs.md §3.1), in the
/// shapes Flutter's helpers send them (capturesdk_flutter lib/capture_helper.dart,
/// lib/capture_helper_device.dart).
@Suite("capture serve: the SDK 2.0 clients' Configuration, SocketCam cancel and partnership properties")
struct ClientPropertyTests {
  private func opened(type: DeviceType = .scannerS740, writable extra: [PropertyID] = []) async throws -> (
    Harness, FakeDevice, client: Int, device: Int, socket: WebSocketID
  ) {
    let device = FakeDevice(id: "AA:BB:CC:DD:EE:FF", type: type)
    device.values.withLock { values in for id in extra { values[id] = PropertyValue.none } }
    return try await Scene.opened(device)
  }

  @Test(
    "Configuration SocketCamSymbologySelector=disabled on the client handle is accepted and read back; unknown keys -23, bad values -24"
  )
  func configuration() async throws {
    let (h, _, client, _, _) = try await opened()
    // setSocketCamSymbologySelectorDisabled(disabled: true): a String set on the root client.
    let set = try await h.rpc(
      "setproperty",
      #"{"handle":\#(client),"property":{"id":-2141913085,"type":5,"value":"SocketCamSymbologySelector=disabled"}}"#
    )
    #expect(
      set
        == #"{"id":1,"jsonrpc":"2.0","result":{"handle":\#(client),"property":{"id":-2141913085,"type":5,"value":"SocketCamSymbologySelector=disabled"}}}"#
    )
    let get = try await h.rpc(
      "getproperty",
      #"{"handle":\#(client),"property":{"id":-2141913085,"type":5,"value":"SocketCamSymbologySelector"}}"#)
    #expect(
      get.hasSuffix(
        #""property":{"id":-2141913085,"type":5,"value":"SocketCamSymbologySelector=disabled"}}}"#))
    _ = try await h.rpc(
      "setproperty",
      #"{"handle":\#(client),"property":{"id":-2141913085,"type":5,"value":"SocketCamSymbologySelector=enabled"}}"#
    )
    #expect(
      try await h.rpc(
        "getproperty", #"{"handle":\#(client),"property":{"id":-2141913085,"type":0,"value":{}}}"#
      )
      .hasSuffix(#""value":"SocketCamSymbologySelector=enabled"}}}"#))
    let unknown = try await h.rpc(
      "setproperty", #"{"handle":\#(client),"property":{"id":-2141913085,"type":5,"value":"Beeper=loud"}}"#)
    #expect(unknown.hasPrefix(#"{"error":{"code":-23,"message":"unknown Configuration key 'Beeper'"#))
    let badValue = try await h.rpc(
      "setproperty",
      #"{"handle":\#(client),"property":{"id":-2141913085,"type":5,"value":"SocketCamSymbologySelector=off"}}"#
    )
    #expect(badValue.hasPrefix(#"{"error":{"code":-24,"#))
    // A hostile key is named in the error at most 200 characters long, without control characters.
    let long = try await h.rpc(
      "setproperty",
      #"{"handle":\#(client),"property":{"id":-2141913085,"type":5,"value":"\#(String(repeating: "k", count: 100_000))\u0007=1"}}"#
    )
    #expect(long.hasPrefix(#"{"error":{"code":-23,"#) && long.utf8.count < 400, "\(long.prefix(300))")
    let noEquals = try await h.rpc(
      "setproperty", #"{"handle":\#(client),"property":{"id":-2141913085,"type":5,"value":"disabled"}}"#)
    #expect(noEquals.hasPrefix(#"{"error":{"code":-24,"#))
  }

  @Test(
    "a SocketCam read stopped before a code sends DecodedData with result -91 on the device handle; a read that got a code does not"
  )
  func socketCamCancel() async throws {
    let (h, device, _, d, socket) = try await opened(type: .socketCamC820)
    func trigger(_ action: Int) async throws {
      let reply = try await h.rpc(
        "setproperty", #"{"handle":\#(d),"property":{"id":1179653,"type":2,"value":\#(action)}}"#)
      #expect(reply.hasPrefix(#"{"id":1,"jsonrpc":"2.0","result":"#), "\(reply)")
    }
    let cancel =
      #"{"jsonrpc":"2.0","result":{"event":{"id":5,"result":-91,"type":5,"value":{"data":[],"id":0,"name":""}},"handle":\#(d)}}"#
    try await trigger(1)
    try await trigger(2)
    #expect(try await h.output.frames(socket, count: 3)[2] == cancel)
    // A read that a code ended: its stop cancels nothing; the next empty read's stop does.
    try await trigger(1)
    device.code("4006381333931")
    try await eventually("the code ended the read") {
      h.service.state.withLock { $0.pendingReads.isEmpty } ? true : nil
    }
    try await trigger(2)
    try await trigger(6)
    try await trigger(2)
    let frames = try await h.output.frames(socket, count: 5)
    #expect(frames[3].contains(#""event":{"id":5,"type":5,"value":{"data":[52,48"#))
    #expect(frames[4] == cancel)
    #expect(frames.count == 5)
    #expect(
      device.lines == [
        "trigger start", "trigger stop", "trigger start", "trigger stop", "trigger continuous-until-read",
        "trigger stop",
      ])
  }

  @Test("a scanner's stop sends no cancel: only SocketCam's reads are followed")
  func scannerStopSendsNothing() async throws {
    let (h, device, _, d, socket) = try await opened()
    _ = try await h.rpc("setproperty", #"{"handle":\#(d),"property":{"id":1179653,"type":2,"value":1}}"#)
    _ = try await h.rpc("setproperty", #"{"handle":\#(d),"property":{"id":1179653,"type":2,"value":2}}"#)
    device.code("A1")
    let frames = try await h.output.frames(socket, count: 3)
    #expect(frames[2].contains(#""event":{"id":5,"type":5,"value":{"data":[65,49]"#))
    #expect(h.service.state.withLock { $0.pendingReads.isEmpty })
  }

  @Test(
    "ResetSinglePartnershipDevice deletes the device's bonds and bluetoothd's, as capture partnership reset does; a device without the command is -15"
  )
  func resetSinglePartnership() async throws {
    let (h, device, _, d, _) = try await opened(writable: [.deletePairingBondingDevice])
    let reply = try await h.rpc("setproperty", #"{"handle":\#(d),"property":{"id":292,"type":0,"value":{}}}"#)
    #expect(reply == #"{"id":1,"jsonrpc":"2.0","result":{"handle":\#(d),"property":{"id":292,"type":0}}}"#)
    #expect(device.lines == ["set \(PropertyID.deletePairingBondingDevice.cliName) byte(1)"])
    #expect(h.system.calls == ["remove AA:BB:CC:DD:EE:FF"])

    let (other, plain, _, od, _) = try await opened()
    let refused = try await other.rpc(
      "setproperty", #"{"handle":\#(od),"property":{"id":292,"type":0,"value":{}}}"#)
    #expect(refused.hasPrefix(#"{"error":{"code":-15,"message":"Socket S740 [E537BA] has no public command"#))
    #expect(plain.lines.isEmpty)
    #expect(other.system.calls.isEmpty)
  }

  @Test("ResetDevice (set None with {}) reaches the device, which answers -15 when it cannot reset")
  func resetDevice() async throws {
    let (h, device, _, d, _) = try await opened(writable: [.resetDevice])
    let reply = try await h.rpc(
      "setproperty", #"{"handle":\#(d),"property":{"id":1048832,"type":0,"value":{}}}"#)
    #expect(
      reply == #"{"id":1,"jsonrpc":"2.0","result":{"handle":\#(d),"property":{"id":1048832,"type":0}}}"#)
    #expect(device.lines == ["set \(PropertyID.resetDevice.cliName) none"])
    let (other, _, _, od, _) = try await opened()
    #expect(
      try await other.rpc("setproperty", #"{"handle":\#(od),"property":{"id":1048832,"type":0,"value":{}}}"#)
        .hasPrefix(#"{"error":{"code":-15,"#))
  }

  @Test("SinglePartnership and SinglePartnershipStamp on the client handle are -15 with the reason")
  func singlePartnership() async throws {
    let (h, _, client, _, _) = try await opened()
    for id in [-2147221214, -2147417821] {
      let reply = try await h.rpc(
        "getproperty", #"{"handle":\#(client),"property":{"id":\#(id),"type":0,"value":{}}}"#)
      #expect(
        reply.hasPrefix(#"{"error":{"code":-15,"#) && reply.contains("layout is not published"), "\(reply)")
    }
  }

  @Test("ConnectDiscoveredDevice takes Flutter's iOS form identifierUuid;serviceUuid as well as the bare one")
  func connectWithServiceUUID() async throws {
    let (h, _, client, _, socket) = try await opened()
    let m = try await h.openDevice(
      client: client, guid: try #require(Harness.guid(h.output.frames(socket)[0])))
    let reply = try await h.rpc(
      "setproperty",
      #"{"handle":\#(m),"property":{"id":1376771,"type":5,"value":"00:11:22:7E:F6:19;6CB501B7-96F6-4EEF-ACB1-D7535F153CF0"}}"#
    )
    #expect(reply.hasPrefix(#"{"id":1,"jsonrpc":"2.0","result":"#), "\(reply)")
    #expect(h.system.calls.first?.hasPrefix("connect 00:11:22:7E:F6:19 ") == true)
  }
}

/// Favorite (SDK 1.x) and AddDevice / ConnectDiscoveredDevice / RemoveDevice (SDK 2.0) on one state:
/// the state file's remembered devices and Favorite list, which `capture get manager favorite` reads.
@Suite("capture serve: Favorite and ConnectDiscoveredDevice / RemoveDevice work on the same state")
struct DeviceManagerStateTests {
  private func manager() async throws -> (Harness, client: Int, manager: Int) {
    let h = Harness(bluetooth: true)
    let client = try await h.openClient()
    let socket = try await h.socket(for: client, id: 1)
    let frames = try await h.output.frames(socket, count: 1)
    let m = try await h.openDevice(client: client, guid: try #require(Harness.guid(frames[0])))
    return (h, client, m)
  }

  private func favorite(_ h: Harness, _ m: Int) async throws -> String? {
    let reply = try await h.rpc(
      "getproperty", #"{"handle":\#(m),"property":{"id":328193,"type":0,"value":{}}}"#)
    guard let range = reply.firstRange(of: #""type":5,"value":""#) else { return nil }
    return String(reply[range.upperBound...].prefix { $0 != "\"" })
  }

  @Test(
    "ConnectDiscoveredDevice adds the device to the Favorite list; RemoveDevice by GUID or address takes it off both lists"
  )
  func connectThenRemove() async throws {
    let (h, client, m) = try await manager()
    _ = try await h.rpc(
      "setproperty", #"{"handle":\#(m),"property":{"id":328193,"type":5,"value":"AA:BB:CC:DD:EE:01"}}"#)
    _ = try await h.rpc(
      "setproperty", #"{"handle":\#(m),"property":{"id":1376771,"type":5,"value":"00:11:22:7E:F6:19"}}"#)
    #expect(try await favorite(h, m) == "AA:BB:CC:DD:EE:01;00:11:22:7E:F6:19")
    #expect(try h.store.load().devices.map(\.id) == ["00:11:22:7E:F6:19"])

    let removed = try await h.rpc(
      "setproperty",
      #"{"handle":\#(client),"property":{"id":-2146107372,"type":5,"value":"00:11:22:7E:F6:19"}}"#)
    #expect(removed.hasPrefix(#"{"id":1,"jsonrpc":"2.0","result":"#), "\(removed)")
    #expect(try await favorite(h, m) == "AA:BB:CC:DD:EE:01")
    #expect(try h.store.load().devices.isEmpty)
    #expect(h.system.calls.contains("remove 00:11:22:7E:F6:19"))

    // A device only the Favorite list names (the engine connects it from there) is removed from it.
    _ = try await h.rpc(
      "setproperty",
      #"{"handle":\#(client),"property":{"id":-2146107372,"type":5,"value":"AA:BB:CC:DD:EE:01"}}"#)
    #expect(try await favorite(h, m) == "")
    let again = try await h.rpc(
      "setproperty",
      #"{"handle":\#(client),"property":{"id":-2146107372,"type":5,"value":"AA:BB:CC:DD:EE:01"}}"#)
    #expect(again.hasPrefix(#"{"error":{"code":-17,"#))
  }

  @Test(
    "a Favorite of * stays * through ConnectDiscoveredDevice and RemoveDevice; off becomes the one device")
  func starAndOff() async throws {
    let (h, client, m) = try await manager()
    _ = try await h.rpc(
      "setproperty", #"{"handle":\#(m),"property":{"id":1376771,"type":5,"value":"00:11:22:7E:F6:19"}}"#)
    #expect(try await favorite(h, m) == "00:11:22:7E:F6:19")
    _ = try await h.rpc("setproperty", #"{"handle":\#(m),"property":{"id":328193,"type":5,"value":"*"}}"#)
    _ = try await h.rpc(
      "setproperty", #"{"handle":\#(m),"property":{"id":1376771,"type":5,"value":"00:11:22:7E:F6:20"}}"#)
    #expect(try await favorite(h, m) == "*")
    _ = try await h.rpc(
      "setproperty",
      #"{"handle":\#(client),"property":{"id":-2146107372,"type":5,"value":"00:11:22:7E:F6:20"}}"#)
    #expect(try await favorite(h, m) == "*")
    #expect(try h.store.load().devices.map(\.id) == ["00:11:22:7E:F6:19"])
  }

  @Test("the Lasso properties are device properties no device has: -15 on a device, -15 on the client handle")
  func lasso() async throws {
    let s = try await Scene.make(device: FakeDevice(id: "AA:BB:CC:DD:EE:FF"))
    let (h, device, client) = (s.h, s.device, s.client)
    let d = try await s.openDevice()
    for (handle, request) in [
      (d, #"{"id":131359,"type":0,"value":{}}"#), (d, #"{"id":131359,"type":2,"value":1}"#),
      (d, #"{"id":1311008,"type":4,"value":[1,2,3,4]}"#), (d, #"{"id":196897,"type":3,"value":60}"#),
      (client, #"{"id":131359,"type":2,"value":1}"#),
    ] {
      let method = request.contains(#""type":0"#) ? "getproperty" : "setproperty"
      let reply = try await h.rpc(method, #"{"handle":\#(handle),"property":\#(request)}"#)
      #expect(reply.hasPrefix(#"{"error":{"code":-15,"#), "\(request): \(reply)")
    }
    #expect(device.lines.count == 4)
  }
}
