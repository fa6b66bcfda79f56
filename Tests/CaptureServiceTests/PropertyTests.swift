import CaptureContract
import CaptureCore
import HTTPTransport
import TestSupport
import Testing

@testable import CaptureService

@Suite("capture serve: the property wire types, both ways")
struct PropertyWireTests {
  static func json(_ text: String) throws -> JSON {
    try JSONParser.parse(Array(text.utf8), maximumSize: CaptureService.maximumRequestBytes)
  }

  @Test(
    "each wire type decodes to the typed value get/set use and encodes back to the same JSON",
    arguments: [
      (PropertyType.byte, "7", PropertyValue.byte(7)),
      (.ulong, "4294967295", .ulong(4_294_967_295)),
      (.array, "[0,1,128,255]", .array([0, 1, 128, 255])),
      (.string, #""Dock \"4\" ☃""#, .string("Dock \"4\" ☃")),
      (
        .version,
        #"{"build":4,"day":6,"hour":7,"major":1,"middle":2,"minor":3,"minute":8,"minutes":8,"month":5,"year":2024}"#,
        .version(
          VersionValue(
            major: 1, middle: 2, minor: 3, build: 4, year: 2024, month: 5, day: 6, hour: 7, minute: 8))
      ),
      (
        .dataSource, #"{"flags":1,"id":26,"name":"\#(DataSource(26).name)","status":1}"#,
        .dataSource(DataSourceValue(id: DataSource(26), status: .enable))
      ),
    ])
  func roundTrip(type: PropertyType, text: String, value: PropertyValue) throws {
    #expect(try PropertyWire.decode(type, Self.json(text)) == value)
    #expect(PropertyWire.encode(value)?.serialized == text)
  }

  @Test("None and NotApplicable carry no value: decoded from {} or nothing, encoded without a value key")
  func noneType() throws {
    #expect(try PropertyWire.decode(.none, Self.json("{}")) == PropertyValue.none)
    #expect(try PropertyWire.decode(.none, nil) == PropertyValue.none)
    #expect(try PropertyWire.decode(.notApplicable, nil) == PropertyValue.none)
    #expect(PropertyWire.encode(.none) == nil)
    #expect(PropertyWire.property(.applyConfigDevice, .none).serialized == #"{"id":1048582,"type":0}"#)
  }

  @Test(
    "signed spellings: Array bytes -128…-1 and a negative Ulong keep their 32 bits; Version takes minutes alone"
  )
  func signedAndAlternatives() throws {
    #expect(try PropertyWire.decode(.array, Self.json("[-1,-128]")) == .array([255, 128]))
    #expect(try PropertyWire.decode(.ulong, Self.json("-45")) == .ulong(UInt32(bitPattern: -45)))
    #expect(try PropertyWire.decode(.byte, Self.json("-1")) == .byte(255))
    let v = try PropertyWire.decode(.version, Self.json(#"{"major":2,"minutes":30}"#))
    #expect(v == .version(VersionValue(major: 2, middle: 0, minor: 0, build: 0, minute: 30)))
  }

  @Test(
    "out-of-range and mistyped values are ESKT_INVALIDPARAMETER",
    arguments: [
      (PropertyType.byte, "256"), (.byte, "1.5"), (.byte, #""1""#), (.ulong, "4294967296"), (.array, "[256]"),
      (.array, "7"), (.string, "7"), (.version, "[]"), (.dataSource, #"{"status":1}"#),
      (.dataSource, #"{"id":1,"status":5}"#),
    ])
  func refused(type: PropertyType, text: String) throws {
    #expect(throws: CaptureError.self) { try PropertyWire.decode(type, Self.json(text)) }
    do { _ = try PropertyWire.decode(type, Self.json(text)) } catch let error as CaptureError {
      #expect(error.code == .invalidParameter)
    }
  }

  @Test("Enum and Object values are ESKT_NOTSUPPORTED")
  func unsupportedTypes() throws {
    #expect(throws: CaptureError(.notSupported, "property values of type Object are not supported")) {
      try PropertyWire.decode(.object, Self.json("{}"))
    }
  }

  @Test(
    "a property's id is signed 32-bit; its unsigned spelling means the same id; DataSource under dataSource")
  func requests() throws {
    let version = try PropertyWire.request(Self.json(#"{"id":-2147418111,"type":0,"value":{}}"#))
    #expect(version.id == .version && version.type == .none)
    let unsigned = try PropertyWire.request(Self.json(#"{"id":2147549185,"type":0}"#))
    #expect(unsigned.id == .version)
    let ds = try PropertyWire.request(
      Self.json(#"{"id":7798788,"type":7,"dataSource":{"id":26,"status":-1,"flags":1}}"#))
    #expect(ds.value == (try Self.json(#"{"id":26,"status":-1,"flags":1}"#)))
    #expect(throws: CaptureError.self) { try PropertyWire.request(Self.json(#"{"id":4294967296,"type":0}"#)) }
    #expect(throws: CaptureError.self) { try PropertyWire.request(Self.json(#"{"id":1,"type":11}"#)) }
  }

  @Test("the parser keeps numbers exactly, bounds nesting and reads surrogate pairs")
  func parser() throws {
    #expect(try Self.json("1.50") == .literal("1.50"))
    #expect(try Self.json("-0") == .number(0))
    #expect(try Self.json("92233720368547758070") == .literal("92233720368547758070"))
    #expect(try Self.json(#""\ud83d\ude00""#) == .string("😀"))
    #expect(throws: JSONParser.Failure.self) {
      try Self.json(String(repeating: "[", count: 65) + String(repeating: "]", count: 65))
    }
    #expect(throws: JSONParser.Failure.self) { try Self.json("01") }
    #expect(throws: JSONParser.Failure.self) { try Self.json("\"a\u{01}\"") }
  }
}

@Suite("capture serve: getproperty and setproperty reach the engine's devices and settings")
struct PropertyCallTests {
  private func opened() async throws -> (Harness, FakeDevice, client: Int, device: Int, socket: WebSocketID) {
    try await Scene.opened(FakeDevice(id: "AA:BB:CC:DD:EE:FF"))
  }

  @Test(
    "device gets answer with the value's own type: String, Ulong (packed battery), Version, Byte, Array, DataSource"
  )
  func deviceGets() async throws {
    let (h, _, _, d, _) = try await opened()
    func get(_ id: Int32, _ type: Int = 0, _ value: String = "{}") async throws -> String {
      try await h.rpc(
        "getproperty", #"{"handle":\#(d),"property":{"id":\#(id),"type":\#(type),"value":\#(value)}}"#)
    }
    #expect(
      try await get(327936)
        == #"{"id":1,"jsonrpc":"2.0","result":{"handle":\#(d),"property":{"id":327936,"type":5,"value":"Socket S740 [E537BA]"}}}"#
    )
    let battery = BatteryLevel(current: 90).packed
    #expect(try await get(65803).hasSuffix(#""property":{"id":65803,"type":3,"value":\#(battery)}}}"#))
    #expect((battery & 0xFF00) >> 8 == 90)
    #expect(
      try await get(65536).contains(
        #""type":6,"value":{"build":4,"day":6,"hour":7,"major":1,"middle":2,"minor":3,"minute":8,"minutes":8,"month":5,"year":2024}"#
      ))
    #expect(try await get(131340).hasSuffix(#""property":{"id":131340,"type":2,"value":1}}}"#))
    #expect(
      try await get(262408).hasSuffix(#""property":{"id":262408,"type":4,"value":[0,1,0,30,0,60,0,120]}}}"#))
    let source = try await get(7798788, 7, #"{"id":26,"name":"","status":-1,"flags":1}"#)
    #expect(
      source.hasSuffix(
        #""property":{"id":7798788,"type":7,"value":{"flags":1,"id":26,"name":"\#(DataSource(26).name)","status":1}}}}"#
      ))
  }

  @Test("a property the device does not have is ESKT_NOTSUPPORTED (-15); one that cannot be read too")
  func unsupported() async throws {
    let (h, _, _, d, _) = try await opened()
    let missing = try await h.rpc(
      "getproperty", #"{"handle":\#(d),"property":{"id":65813,"type":0,"value":{}}}"#)
    #expect(missing.hasPrefix(#"{"error":{"code":-15,"#))
    let writeOnly = try await h.rpc("getproperty", #"{"handle":\#(d),"property":{"id":1179653,"type":1}}"#)
    #expect(writeOnly.hasPrefix(#"{"error":{"code":-15,"message":"TriggerDevice (1179653) cannot be read"#))
    let unknown = try await h.rpc("getproperty", #"{"handle":\#(d),"property":{"id":66,"type":0}}"#)
    #expect(unknown.hasPrefix(#"{"error":{"code":-15,"#))
  }

  @Test(
    "sets reach the device: TriggerDevice as a trigger, DataConfirmationDevice, FriendlyName, DataSource; the reply echoes the set type"
  )
  func deviceSets() async throws {
    let (h, device, _, d, _) = try await opened()
    let trigger = try await h.rpc(
      "setproperty", #"{"handle":\#(d),"property":{"id":1179653,"type":2,"value":1}}"#)
    #expect(
      trigger
        == #"{"id":1,"jsonrpc":"2.0","result":{"handle":\#(d),"property":{"id":1179653,"type":2,"value":1}}}"#
    )
    _ = try await h.rpc("setproperty", #"{"handle":\#(d),"property":{"id":1179653,"type":2,"value":2}}"#)
    _ = try await h.rpc("setproperty", #"{"handle":\#(d),"property":{"id":1245450,"type":3,"value":21}}"#)
    _ = try await h.rpc(
      "setproperty", #"{"handle":\#(d),"property":{"id":327936,"type":5,"value":"Dock 4"}}"#)
    _ = try await h.rpc(
      "setproperty",
      #"{"handle":\#(d),"property":{"id":7798788,"type":7,"dataSource":{"id":26,"status":0,"flags":1}}}"#)
    #expect(
      device.lines == [
        "trigger start", "trigger stop", "set data-confirmation ulong(21)",
        "set friendly-name string(\"Dock 4\")",
        "set data-source dataSource(CaptureCore.DataSourceValue(id: \(DataSource(26).name), status: CaptureCore.DataSourceStatus.disable, flags: CaptureCore.DataSourceFlags(rawValue: 1)))",
      ])
  }

  @Test("set checks: the wrong type is -18, a value the rules refuse is -18, a read-only property -15")
  func setRefusals() async throws {
    let (h, device, _, d, _) = try await opened()
    let wrongType = try await h.rpc(
      "setproperty", #"{"handle":\#(d),"property":{"id":327936,"type":3,"value":5}}"#)
    #expect(
      wrongType.hasPrefix(
        #"{"error":{"code":-18,"message":"FriendlyNameDevice (327936) is set with type 5 (String), not 3"#))
    let tooLong = try await h.rpc(
      "setproperty",
      #"{"handle":\#(d),"property":{"id":327936,"type":5,"value":"\#(String(repeating: "x", count: 32))"}}"#)
    #expect(tooLong.hasPrefix(#"{"error":{"code":-18,"#))
    let badTrigger = try await h.rpc(
      "setproperty", #"{"handle":\#(d),"property":{"id":1179653,"type":2,"value":9}}"#)
    #expect(badTrigger.hasPrefix(#"{"error":{"code":-18,"#))
    let readOnly = try await h.rpc("setproperty", #"{"handle":\#(d),"property":{"id":65803,"type":1}}"#)
    #expect(readOnly.hasPrefix(#"{"error":{"code":-15,"#))
    #expect(device.lines.isEmpty)
  }

  @Test(
    "Capture-level properties on the client handle: Version (signed id), InterfaceVersion, SocketCamStatus through the engine"
  )
  func captureProperties() async throws {
    let (h, _, client, d, _) = try await opened()
    let version = try await h.rpc(
      "getproperty", #"{"handle":\#(client),"property":{"id":-2147418111,"type":0,"value":{}}}"#)
    #expect(
      version
        == #"{"id":1,"jsonrpc":"2.0","result":{"handle":\#(client),"property":{"id":-2147418111,"type":6,"value":{"build":\#(CaptureVersion.build),"day":0,"hour":0,"major":\#(CaptureVersion.major),"middle":\#(CaptureVersion.middle),"minor":\#(CaptureVersion.minor),"minute":0,"minutes":0,"month":0,"year":0}}}}"#
    )
    #expect(
      try await h.rpc("getproperty", #"{"handle":\#(client),"property":{"id":-2147418112,"type":0}}"#)
        .hasSuffix(#""type":3,"value":1}}}"#))
    // Without a SOURCE SocketCam is NotSupported (2); Disable is still persisted, Enable is -15.
    #expect(
      try await h.rpc("getproperty", #"{"handle":\#(client),"property":{"id":-2147352569,"type":0}}"#)
        .hasSuffix(#""type":2,"value":2}}}"#))
    let disable = try await h.rpc(
      "setproperty", #"{"handle":\#(client),"property":{"id":-2147352569,"type":2,"value":1}}"#)
    #expect(disable.hasSuffix(#""property":{"id":-2147352569,"type":2,"value":1}}}"#))
    #expect(try h.store.load().socketCam.status == SocketCamStatus.disable.rawValue)
    #expect(
      try await h.rpc(
        "setproperty", #"{"handle":\#(client),"property":{"id":-2147352569,"type":2,"value":0}}"#
      ).hasPrefix(#"{"error":{"code":-15,"message":"SocketCam has no frame source here"#))
    #expect(
      try await h.rpc(
        "setproperty", #"{"handle":\#(client),"property":{"id":-2147352569,"type":2,"value":2}}"#
      ).hasPrefix(#"{"error":{"code":-18,"#))
    // A device property on the client handle, a Capture one it has not on a device: -15.
    #expect(
      try await h.rpc("getproperty", #"{"handle":\#(client),"property":{"id":327936,"type":0}}"#).hasPrefix(
        #"{"error":{"code":-15,"#))
    #expect(
      try await h.rpc("getproperty", #"{"handle":\#(d),"property":{"id":-2147418111,"type":0}}"#).hasPrefix(
        #"{"error":{"code":-15,"#))
  }

  @Test("the device manager: Favorite is the persisted setting of capture set manager favorite")
  func favorite() async throws {
    let (h, _, client, _, socket) = try await opened()
    let manager = try #require(Harness.guid(h.output.frames(socket)[0]))
    let m = try await h.openDevice(client: client, guid: manager)
    #expect(
      try await h.rpc("getproperty", #"{"handle":\#(m),"property":{"id":328193,"type":0,"value":{}}}"#)
        .hasSuffix(#""property":{"id":328193,"type":5,"value":""}}}"#))
    let set = try await h.rpc(
      "setproperty", #"{"handle":\#(m),"property":{"id":328193,"type":5,"value":"aa-bb-cc-dd-ee-01"}}"#)
    #expect(set.hasPrefix(#"{"id":1,"jsonrpc":"2.0","result":{"handle":\#(m),"#))
    #expect(try h.store.load().favorite == "AA:BB:CC:DD:EE:01")
    let bad = try await h.rpc(
      "setproperty", #"{"handle":\#(m),"property":{"id":328193,"type":5,"value":"socketcam"}}"#)
    #expect(bad.hasPrefix(#"{"error":{"code":-18,"#))
    #expect(
      try await h.rpc("getproperty", #"{"handle":\#(m),"property":{"id":327936,"type":0}}"#).hasPrefix(
        #"{"error":{"code":-15,"#))
  }

  @Test(
    "discovery: StartDiscovery on the manager, AddDevice on the client: DeviceDiscovered then DiscoveryEnd")
  func discovery() async throws {
    let (h, _, client, _, socket) = try await opened()
    let manager = try #require(Harness.guid(h.output.frames(socket)[0]))
    let m = try await h.openDevice(client: client, guid: manager)
    _ = try await h.rpc("setproperty", #"{"handle":\#(m),"property":{"id":1245696,"type":3,"value":5000}}"#)
    let frames = try await h.output.frames(socket, count: 4)
    #expect(
      frames[2]
        == #"{"jsonrpc":"2.0","result":{"event":{"id":13,"type":7,"value":{"identifierUuid":"00:11:22:7E:F6:19","name":"Socket D600 [7EF619]","serviceUuid":"6CB501B7-96F6-4EEF-ACB1-D7535F153CF0"}},"handle":\#(m)}}"#
    )
    #expect(
      frames[3] == #"{"jsonrpc":"2.0","result":{"event":{"id":14,"result":0,"type":0},"handle":\#(m)}}"#)
    _ = try await h.rpc(
      "setproperty", #"{"handle":\#(client),"property":{"id":-2146303981,"type":2,"value":1}}"#)
    let more = try await h.output.frames(socket, count: 6)
    #expect(more[4].contains(#""event":{"id":13,"type":7"#) && more[4].hasSuffix(#""handle":\#(client)}}"#))
    #expect(
      more[5] == #"{"jsonrpc":"2.0","result":{"event":{"id":14,"result":0,"type":0},"handle":\#(client)}}"#)
    #expect(h.system.calls == ["discover le 5.0 seconds", "discover le 0.05 seconds"])
  }

  @Test("ConnectDiscoveredDevice connects and remembers the device, as capture connect does")
  func connectDiscovered() async throws {
    let (h, _, client, _, socket) = try await opened()
    let manager = try #require(Harness.guid(h.output.frames(socket)[0]))
    let m = try await h.openDevice(client: client, guid: manager)
    let reply = try await h.rpc(
      "setproperty", #"{"handle":\#(m),"property":{"id":1376771,"type":5,"value":"00:11:22:7E:F6:19"}}"#)
    #expect(reply.hasPrefix(#"{"id":1,"jsonrpc":"2.0","result":"#), "\(reply)")
    #expect(h.system.calls.first?.hasPrefix("connect 00:11:22:7E:F6:19 ") == true)
    #expect(try h.store.load().devices.map(\.id) == ["00:11:22:7E:F6:19"])
  }
}
