// Devices other than SocketCam: transports not built yet answer exit 15 naming the transport; a name
// nobody remembered answers exit 17. list and connect for SocketCam; the corrupt state file.

import Testing

@Suite("Transports, names, list, connect, state file")
struct DeviceTests {
  /// Bluetooth commands when the system bus cannot be reached (the sandbox points
  /// DBUS_SYSTEM_BUS_ADDRESS at a socket that does not exist): exit 32 ESKT_NOTAVAILABLE.
  static let noBusCases: [[String]] = [
    ["get", "AA:BB:CC:DD:EE:FF", "friendly-name"], ["get", "aa-bb-cc-dd-ee-ff", "battery-level"],
    ["connect", "aa:bb:cc:dd:ee:ff"], ["remove", "AA:BB:CC:DD:EE:FF"],
    ["partnership", "status", "AA:BB:CC:DD:EE:FF"],
    ["trigger", "AA:BB:CC:DD:EE:FF", "start"], ["listen", "AA:BB:CC:DD:EE:FF"], ["discover"],
    ["discover", "--le", "--timeout", "1s"],
  ]

  @Test("without a system bus, every Bluetooth command exits 32 and says why", arguments: noBusCases)
  func noSystemBus(_ arguments: [String]) async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture(arguments)
    #expect(outcome.status == 32, "\(outcome)")
    #expect(outcome.outLines.isEmpty)
    #expect(outcome.errLines.count == 1)
    #expect(
      outcome.errLines.first?.hasPrefix(
        "capture: ESKT_NOTAVAILABLE (-32): cannot reach the system bus, so no Bluetooth: ") == true)
  }

  /// (arguments, message) — every one exits 15 ESKT_NOTSUPPORTED.
  static let notSupportedCases: [([String], String)] = [
    // SocketCam has no such thing.
    (["get", "socketcam", "battery-level"], "SocketCam C820 does not support battery-level (0x0001010B)"),
    (["get", "socketcam", "0x0001010B"], "SocketCam C820 does not support battery-level (0x0001010B)"),
    (
      ["remove", "socketcam"],
      "SocketCam is built in and cannot be removed; disable it with: capture set socketcam socket-cam-status disable"
    ),
    (["partnership", "status", "socketcam"], "SocketCam is built in; it has no Bluetooth partnership"),
    (["connect", "socketcam", "--pair"], "SocketCam is built in; it has nothing to pair"),
    (["trigger", "socketcam", "enable"], "SocketCam has no trigger to enable"),
    (["set", "socketcam", "data-source", "nfc-forum", "enable"], "SocketCam cannot decode NFC Forum (266)"),
  ]

  @Test("features not available yet exit 15 and say which", arguments: notSupportedCases)
  func notSupported(_ arguments: [String], _ message: String) async throws {
    let sandbox = try Sandbox()
    Shape.expectFailure(
      try await sandbox.capture(arguments), status: 15, name: "ESKT_NOTSUPPORTED", message: message)
    let json = try await sandbox.capture(["--json"] + arguments)
    #expect(json.status == 15)
    #expect(json.errLines == ["capture: ESKT_NOTSUPPORTED (-15): \(message)"])
    // Nothing could be read, so get prints the contract's bare error object, like every other command.
    Shape.expectErrorObject(json, code: -15, name: "ESKT_NOTSUPPORTED", message: message)
  }

  static let unknownNameCases: [[String]] = [
    ["get", "nosuch", "friendly-name"], ["connect", "nosuch"], ["remove", "nosuch"],
    ["partnership", "status", "nosuch"],
    ["trigger", "nosuch", "start"], ["listen", "nosuch"], ["set", "Dock 4", "friendly-name", "X"],
  ]

  @Test("a name nobody remembered exits 17", arguments: unknownNameCases)
  func unknownName(_ arguments: [String]) async throws {
    let sandbox = try Sandbox()
    let name = arguments[arguments[0] == "partnership" ? 2 : 1]
    let message = "no remembered device is called '\(name)' (see capture list)"
    Shape.expectFailure(
      try await sandbox.capture(arguments), status: 17, name: "ESKT_NOTFOUND", message: message)
    let json = try await sandbox.capture(["--json"] + arguments)
    #expect(json.status == 17)
    Shape.expectErrorObject(json, code: -17, name: "ESKT_NOTFOUND", message: message)
  }

  @Test("list shows SocketCam, plain and JSON")
  func list() async throws {
    let sandbox = try Sandbox()
    let plain = try await sandbox.capture("list")
    #expect(plain.status == 0)
    #expect(plain.stderr.isEmpty)
    #expect(plain.outLines == ["socketcam\tSocketCam C820\tSocketCamC820\tenabled"])
    let json = try await sandbox.capture("--json", "list")
    #expect(json.status == 0)
    #expect(
      json.outLines == [
        #"{"devices":[{"id":"socketcam","name":"SocketCam C820","state":"enabled","transport":"socketcam","type":5,"typeName":"SocketCamC820"}],"favorite":""}"#
      ])
    // Reading does not create state.
    #expect(!sandbox.exists(sandbox.stateDirectory))

    #expect(try await sandbox.capture("set", "socketcam", "socket-cam-status", "disable").status == 0)
    #expect(try await sandbox.capture("set", "socketcam", "friendly-name", "Dock 4").status == 0)
    let changed = try await sandbox.capture("list")
    #expect(changed.outLines == ["socketcam\tDock 4\tSocketCamC820\tdisabled"])
  }

  @Test("connect socketcam prints its arrival and enables it")
  func connectSocketCam() async throws {
    let sandbox = try Sandbox()
    #expect(try await sandbox.capture("set", "socketcam", "socket-cam-status", "disable").status == 0)
    let plain = try await sandbox.capture("connect", "socketcam")
    #expect(plain.status == 0, "\(plain)")
    #expect(plain.outLines == ["socketcam\tSocketCam C820\tSocketCamC820"])
    #expect(
      try await sandbox.capture("list").outLines == ["socketcam\tSocketCam C820\tSocketCamC820\tenabled"])
    let json = try await sandbox.capture("--json", "connect", "SocketCam")
    #expect(json.status == 0)
    let events = Shape.jsonLines(json)
    #expect(events.count == 1)
    Shape.expectArrivalOrRemoval(events.first, "deviceArrival")
  }

  @Test("a disabled SocketCam does not read: exit 32")
  func disabledSocketCam() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    #expect(try await sandbox.capture("set", "socketcam", "socket-cam-status", "disable").status == 0)
    #expect(try await sandbox.capture("get", "socketcam", "socket-cam-status").outLines == ["disable"])
    Shape.expectFailure(
      try await sandbox.capture("trigger", "socketcam", "start", "--image", images.qr.path), status: 32,
      name: "ESKT_NOTAVAILABLE",
      message: "SocketCam is disabled; enable it with: capture set socketcam socket-cam-status enable")
  }

  static let corruptStateCommands: [[String]] = [
    ["list"], ["get", "socketcam", "friendly-name"], ["set", "socketcam", "friendly-name", "X"],
    ["set", "socketcam", "data-source", "qr-code", "disable"], ["connect", "socketcam"],
    ["trigger", "socketcam", "start", "--image", "qr.png"], ["listen", "--image", "qr.png"],
  ]

  @Test(
    "a corrupt state file exits 85 naming it and where it was moved; the bytes are kept there and the next command starts empty",
    arguments: corruptStateCommands)
  func corruptState(_ arguments: [String]) async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    try sandbox.copy(images.qr.path, to: "qr.png")
    let garbage: [UInt8] = Array("{\"schemaVersion\": 1, \"devices\": [ garbage".utf8) + [0xFF, 0x00, 0x0A]
    try sandbox.write("state/capture/devices.json", garbage)
    let outcome = try await sandbox.capture(arguments)
    #expect(outcome.status == 85, "\(outcome)")
    #expect(outcome.stdout.isEmpty)
    let aside = try StateFiles.corruptCopies(sandbox)
    #expect(aside.count == 1, "\(aside)")
    #expect(
      outcome.errLines == [
        "capture: ESKT_INVALIDFORMAT (-85): state file \(sandbox.statePath) is corrupt (not a complete JSON object); moved it to \(sandbox.stateDirectory)/\(aside.first ?? "?"), the next command starts from an empty state"
      ], "\(outcome)")
    #expect(try sandbox.read(sandbox.stateDirectory + "/" + (aside.first ?? "?")) == garbage)
    #expect(!sandbox.exists(sandbox.statePath))
    // The next command starts from an empty state (list shows SocketCam alone).
    let list = try await sandbox.capture("list")
    #expect(list.status == 0, "\(list)")
    #expect(list.outLines == ["socketcam\tSocketCam C820\tSocketCamC820\tenabled"])

    // --json: the same error as the contract's object; the second corrupt file gets its own name.
    try sandbox.write("state/capture/devices.json", garbage)
    let json = try await sandbox.capture(["--json"] + arguments)
    #expect(json.status == 85)
    let object = Shape.jsonLines(json)
    #expect(object.first?["error"]?["code"] == .number("-85"))
    #expect(object.first?["error"]?["name"] == .string("ESKT_INVALIDFORMAT"))
    let both = try StateFiles.corruptCopies(sandbox)
    #expect(both.count == 2, "\(both)")
    for name in both { #expect(try sandbox.read(sandbox.stateDirectory + "/" + name) == garbage) }
  }

  @Test("a state file from a newer capture exits 86 and is left as it was")
  func newerSchema() async throws {
    let sandbox = try Sandbox()
    let newer = Array(#"{"schemaVersion": 2, "devices": [], "future": true}"#.utf8)
    try sandbox.write("state/capture/devices.json", newer)
    for arguments in [["list"], ["set", "socketcam", "friendly-name", "X"]] {
      Shape.expectFailure(
        try await sandbox.capture(arguments), status: 86, name: "ESKT_INVALIDVERSION",
        message: "state file \(sandbox.statePath) has schema version 2, newer than this capture (1)")
    }
    #expect(try sandbox.read(sandbox.statePath) == newer)
  }

  @Test("concurrent sets from many processes all persist; concurrent readers never see a broken file")
  func concurrentWriters() async throws {
    let sandbox = try Sandbox()
    let sources = [
      "aztec", "codabar", "code39", "code93", "code128", "data-matrix", "ean8", "ean13", "gs1-databar",
      "maxicode",
      "pdf417", "qr-code",
    ]
    try await withThrowingTaskGroup(of: (String, Outcome).self) { group in
      for source in sources {
        group.addTask {
          (source, try await sandbox.capture("set", "socketcam", "data-source", source, "disable"))
        }
        group.addTask { ("reader", try await sandbox.capture("get", "socketcam", "friendly-name")) }
      }
      for try await (what, outcome) in group {
        #expect(outcome.status == 0, "\(what): \(outcome)")
        if what == "reader" { #expect(outcome.outLines == ["SocketCam C820"]) }
      }
    }
    let all = try await sandbox.capture(["get", "socketcam"] + sources.flatMap { ["data-source", $0] })
    #expect(all.outLines == sources.map { "data-source \($0)\tdisable" })
  }

  static let rememberedState = #"""
    {"schemaVersion":1,"devices":[
      {"id":"AA:BB:CC:DD:EE:FF","alias":"front","name":"Socket S740 [E2ABCD]","type":196624,"transport":"bluetooth-le","lastSeen":"2025-01-01T00:00:00.000Z"},
      {"id":"tcp://127.0.0.1:1","name":"DataMan 8050","type":0,"transport":"tcp"}
    ],"socketCam":{"status":0,"dataSources":{}}}
    """#

  @Test("remembered devices are listed and found by alias, friendly name or id")
  func remembered() async throws {
    let sandbox = try Sandbox()
    try sandbox.write("state/capture/devices.json", Self.rememberedState)
    let list = try await sandbox.capture("list")
    #expect(list.status == 0)
    #expect(
      list.outLines == [
        "socketcam\tSocketCam C820\tSocketCamC820\tenabled",
        "AA:BB:CC:DD:EE:FF\tSocket S740 [E2ABCD]\tScannerS740\tremembered",
        "tcp://127.0.0.1:1\tDataMan 8050\tNone\tremembered",
      ])
    let json = try await sandbox.capture("--json", "list")
    let devices = Shape.jsonLines(json).first?["devices"]?.array ?? []
    #expect(devices.count == 3)
    #expect(
      devices.dropFirst().first
        == .object([
          ("alias", .string("front")), ("id", .string("AA:BB:CC:DD:EE:FF")),
          ("lastSeen", .string("2025-01-01T00:00:00.000Z")),
          ("name", .string("Socket S740 [E2ABCD]")), ("state", .string("remembered")),
          ("transport", .string("bluetooth-le")),
          ("type", .number("196624")), ("typeName", .string("ScannerS740")),
        ]))
    // A remembered DataMan resolves to its URI; nothing listens on port 1: refused is exit 32.
    let dataman = try await sandbox.capture(["get", "DataMan 8050", "version"])
    #expect(dataman.status == 32, "\(dataman)")
    // A remembered Bluetooth device resolves to its address: without a system bus that is exit 32.
    for arguments in [
      ["get", "front", "friendly-name"], ["get", "Socket S740 [E2ABCD]", "battery-level"],
      ["connect", "front"],
      ["partnership", "status", "front"],
    ] {
      let outcome = try await sandbox.capture(arguments)
      #expect(outcome.status == 32, "\(arguments): \(outcome)")
    }
    // listen without DEVICE listens to the remembered devices as a service: neither can be reached, so
    // each is tried again in the background (one warning each, and one for the discovery that would
    // find the Bluetooth one) until --timeout runs out.
    let listen = try await sandbox.capture(["listen", "--timeout", "2s"])
    #expect(listen.status == 42, "\(listen)")
    #expect(listen.errLines.count == 4, "\(listen)")
    #expect(
      listen.errLines.filter { $0.hasPrefix("capture: cannot discover Bluetooth devices (") }.count == 1,
      "\(listen)")
    #expect(
      listen.errLines.filter { $0.hasPrefix("capture: AA:BB:CC:DD:EE:FF: ") }.count == 1, "\(listen)")
    #expect(listen.errLines.filter { $0.hasPrefix("capture: tcp://127.0.0.1:1: ") }.count == 1, "\(listen)")
    #expect(
      listen.errLines.last == "capture: ESKT_REQUESTTIMEDOUT (-42): --timeout ran out after 0 decoded code(s)"
    )
    #expect(try sandbox.read(sandbox.statePath) == Array(Self.rememberedState.utf8))
  }
}
