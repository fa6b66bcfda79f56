// The state file and the device manager's favourites through the built binary, with its faults:
// `get`/`set manager favorite`, the state file's faults (corrupt, truncated, newer, unreadable), 50 processes
// writing it at once, and writers killed at any instant.

import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// What is in a sandbox's state directory besides devices.json.
enum StateFiles {
  static func names(_ sandbox: Sandbox) throws -> [String] {
    guard sandbox.exists(sandbox.stateDirectory) else { return [] }
    return try FileManager.default.contentsOfDirectory(atPath: sandbox.stateDirectory).sorted()
  }

  /// The `devices.json.corrupt-<UTC time>[.N]` copies, sorted; each name is checked for that shape.
  static func corruptCopies(
    _ sandbox: Sandbox, sourceLocation: SourceLocation = #_sourceLocation
  ) throws -> [String] {
    let copies = try names(sandbox).filter { $0.hasPrefix("devices.json.corrupt-") }
    let shape = try Regex(#"devices\.json\.corrupt-\d{8}T\d{6}\.\d{3}Z(\.\d+)?"#)
    for name in copies {
      #expect((try? shape.wholeMatch(in: name)) != nil, "\(name)", sourceLocation: sourceLocation)
    }
    return copies
  }

  static func temporaries(_ sandbox: Sandbox) throws -> [String] {
    try names(sandbox).filter { $0.hasPrefix("devices.json.tmp.") }
  }

  /// devices.json parsed, or nil when it is not one JSON document.
  static func parsed(_ sandbox: Sandbox) -> JSONValue? {
    guard let bytes = try? sandbox.read(sandbox.statePath) else { return nil }
    return try? parseJSON(String(decoding: bytes, as: UTF8.self))
  }

  static func mode(_ path: String) -> mode_t? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return info.st_mode & 0o777
  }

  /// A state file remembering `count` serial devices `serial:/dev/PREFIX-N` (no hardware needed: `remove`
  /// of a serial device only forgets it).
  static func remembering(_ ids: [String]) -> String {
    let devices = ids.map {
      #"{"id":"\#($0)","name":"Till scanner","type":0,"transport":"serial","lastSeen":"2026-01-01T00:00:00.000Z"}"#
    }
    return #"{"schemaVersion":1,"devices":["# + devices.joined(separator: ",") + "]}"
  }
}

@Suite("Favourites: get and set manager favorite")
struct FavoriteTests {
  static let managerDevice =
    #"{"id":"manager","name":"Device Manager","type":17104897,"typeName":"DeviceManagerBle"}"#

  static func favoriteDocument(_ value: String) -> String {
    #"{"device":\#(managerDevice),"properties":[{"id":328193,"name":"favorite","type":"String","value":"\#(value)"}]}"#
  }

  @Test("set manager favorite \"*\", a list and \"\": get prints the value alone, --json the property shape")
  func roundTrip() async throws {
    let sandbox = try Sandbox()
    // Nothing set yet: the empty string, alone on its line; reading creates no state.
    let initial = try await sandbox.capture("get", "manager", "favorite")
    #expect(initial.status == 0, "\(initial)")
    #expect(initial.outLines == [""])
    #expect(!sandbox.exists(sandbox.stateDirectory))

    let star = try await sandbox.capture("set", "manager", "favorite", "*")
    #expect(star.status == 0, "\(star)")
    #expect(star.stdout.isEmpty && star.stderr.isEmpty, "\(star)")
    #expect(try await sandbox.capture("get", "manager", "favorite").outLines == ["*"])
    #expect(
      try await sandbox.capture("--json", "get", "MANAGER", "favorite").outLines == [
        Self.favoriteDocument("*")
      ])
    #expect(StateFiles.parsed(sandbox)?["favorite"] == .string("*"))
    #expect(StateFiles.mode(sandbox.statePath) == 0o600)

    // A list: addresses normalised (dashes, case), tcp:// gets its port, duplicates dropped.
    let list = try await sandbox.capture(
      "--json", "set", "manager", "favorite", "aa-bb-cc-dd-ee-ff; tcp://10.0.0.5;AA:BB:CC:DD:EE:FF")
    #expect(list.status == 0, "\(list)")
    #expect(list.outLines == [Self.favoriteDocument("AA:BB:CC:DD:EE:FF;tcp://10.0.0.5:23")])
    #expect(
      try await sandbox.capture("get", "manager", "favorite").outLines == [
        "AA:BB:CC:DD:EE:FF;tcp://10.0.0.5:23"
      ])
    #expect(
      try await sandbox.capture("get", "manager", "0x00050201").outLines == [
        "AA:BB:CC:DD:EE:FF;tcp://10.0.0.5:23"
      ])

    let off = try await sandbox.capture("set", "manager", "favorite", "")
    #expect(off.status == 0, "\(off)")
    #expect(try await sandbox.capture("get", "manager", "favorite").outLines == [""])
    #expect(
      try await sandbox.capture("--json", "get", "manager", "favorite").outLines == [
        Self.favoriteDocument("")
      ])
    #expect(StateFiles.parsed(sandbox)?["favorite"] == .string(""))
  }

  @Test("list keeps its shape: plain rows on stdout and the favourite on stderr; --json adds a favorite key")
  func listShowsFavorite() async throws {
    let sandbox = try Sandbox()
    #expect(
      try await sandbox.capture("set", "manager", "favorite", "serial:/dev/ttyUSB0;11:22:33:44:55:66").status
        == 0)
    let plain = try await sandbox.capture("list")
    #expect(plain.status == 0, "\(plain)")
    #expect(plain.outLines == ["socketcam\tSocketCam C820\tSocketCamC820\tenabled"])
    #expect(
      plain.errLines == [
        "capture: auto-connect favorite: serial:/dev/ttyUSB0;11:22:33:44:55:66 (capture get manager favorite)"
      ])
    #expect(try await sandbox.capture("-q", "list").stderr.isEmpty)
    let json = try await sandbox.capture("--json", "list")
    #expect(
      json.outLines == [
        #"{"devices":[{"id":"socketcam","name":"SocketCam C820","state":"enabled","transport":"socketcam","type":5,"typeName":"SocketCamC820"}],"favorite":"serial:/dev/ttyUSB0;11:22:33:44:55:66"}"#
      ])
    #expect(try await sandbox.capture("set", "manager", "favorite", "").status == 0)
    let off = try await sandbox.capture("list")
    #expect(off.stderr.isEmpty, "\(off)")
    #expect(Shape.jsonLines(try await sandbox.capture("--json", "list")).first?["favorite"] == .string(""))
  }

  static let invalidFavorites: [(String, String)] = [
    ("Dock 4", "favorite 'Dock 4': expected a Bluetooth address or a tcp://, serial: or hid: device"),
    ("socketcam", "favorite 'socketcam': expected a Bluetooth address or a tcp://, serial: or hid: device"),
    ("manager", "favorite 'manager': expected a Bluetooth address or a tcp://, serial: or hid: device"),
    (
      "AA:BB:CC:DD:EE:FF;front",
      "favorite 'front': expected a Bluetooth address or a tcp://, serial: or hid: device"
    ),
    (
      "AA:BB:CC:DD:EE:FF;;tcp://10.0.0.5",
      "favorite 'AA:BB:CC:DD:EE:FF;;tcp://10.0.0.5': empty identifier between ';'"
    ),
    ("AA:BB:CC:DD:EE:FF;", "favorite 'AA:BB:CC:DD:EE:FF;': empty identifier between ';'"),
    (";", "favorite ';': empty identifier between ';'"),
    ("*;AA:BB:CC:DD:EE:FF", "favorite '*;AA:BB:CC:DD:EE:FF': '*' stands alone (any Socket Mobile device)"),
    ("AA:BB:CC:DD:EE", "'AA:BB:CC:DD:EE' is not a Bluetooth address (AA:BB:CC:DD:EE:FF)"),
    ("tcp://", "'tcp://': missing host in tcp://HOST[:PORT]"),
  ]

  @Test("an invalid favourite exits 18 with the reason and writes nothing", arguments: invalidFavorites)
  func invalid(_ value: String, _ message: String) async throws {
    let sandbox = try Sandbox()
    Shape.expectUsageError(
      try await sandbox.capture("set", "manager", "favorite", value), command: "set", message: message)
    #expect(!sandbox.exists(sandbox.stateDirectory))
    // An existing setting survives a bad one, byte for byte.
    #expect(try await sandbox.capture("set", "manager", "favorite", "*").status == 0)
    let before = try sandbox.read(sandbox.statePath)
    Shape.expectUsageError(
      try await sandbox.capture("--json", "set", "manager", "favorite", value), command: "set",
      message: message,
      json: true)
    #expect(try sandbox.read(sandbox.statePath) == before)
  }

  static let otherCommands: [[String]] = [
    ["connect", "manager"], ["remove", "manager"], ["trigger", "manager", "start"], ["listen", "manager"],
    ["listen", "socketcam", "Manager"], ["partnership", "status", "manager"],
  ]

  @Test("manager is a DEVICE for get and set only: other commands exit 18", arguments: otherCommands)
  func otherCommandsRefuse(_ arguments: [String]) async throws {
    let sandbox = try Sandbox()
    let word = arguments.last { $0.lowercased() == "manager" }!
    Shape.expectUsageError(
      try await sandbox.capture(arguments), command: arguments[0],
      message: "'\(word)' is the device manager; only get and set take it (e.g. capture get manager favorite)"
    )
    #expect(!sandbox.exists(sandbox.stateDirectory))
  }

  @Test("get manager --all and --list show the manager's one property")
  func allAndList() async throws {
    let sandbox = try Sandbox()
    #expect(try await sandbox.capture("set", "manager", "favorite", "*").status == 0)
    #expect(try await sandbox.capture("get", "manager", "--all").outLines == ["favorite\t*"])
    #expect(
      try await sandbox.capture("--json", "get", "manager", "--all").outLines == [Self.favoriteDocument("*")])
    let list = try await sandbox.capture("get", "--list", "manager")
    #expect(list.status == 0, "\(list)")
    #expect(list.outLines == ["favorite  0x00050201  rw  deviceManager"])
    let json = try await sandbox.capture("--json", "get", "--list", "manager")
    #expect(
      json.outLines == [
        #"{"device":\#(Self.managerDevice),"properties":[{"getType":"None","hex":"0x00050201","id":328193,"name":"favorite","readable":true,"scope":"deviceManager","setType":"String","writable":true}]}"#
      ])
  }

  @Test("a manager profile (get manager --all --json) provisions the favourite with set --from, idempotently")
  func profile() async throws {
    let sandbox = try Sandbox()
    #expect(try await sandbox.capture("set", "manager", "favorite", "tcp://10.0.0.5").status == 0)
    let saved = try await sandbox.capture("--json", "get", "manager", "--all")
    try sandbox.write("manager.json", saved.stdout)
    #expect(try await sandbox.capture("set", "manager", "favorite", "").status == 0)
    let applied = try await sandbox.capture("set", "manager", "--from", "manager.json")
    #expect(applied.status == 0, "\(applied)")
    #expect(applied.outLines == ["favorite\tchanged"])
    #expect(try await sandbox.capture("get", "manager", "favorite").outLines == ["tcp://10.0.0.5:23"])
    let again = try await sandbox.capture("set", "manager", "--from", "manager.json")
    #expect(again.outLines == ["favorite\tunchanged"], "\(again)")
  }

  /// (arguments, property shown in the message). The manager keeps Favorite only; the SDK judges a
  /// property by the handle it is sent on, so any other one is NOTSUPPORTED, whatever its scope.
  static let unsupported: [([String], String)] = [
    (["set", "manager", "start-discovery", "5000"], "start-discovery (0x00130200)"),
    (
      ["get", "manager", "unique-device-identifier", "{2EAAAA3F-B51E-4537-851C-31CA683C3BEF}"],
      "unique-device-identifier (0x00510202)"
    ),
    (
      ["set", "manager", "connect-discovered-device", "AA:BB:CC:DD:EE:FF"],
      "connect-discovered (0x00150203)"
    ),
    (["get", "manager", "friendly-name"], "friendly-name (0x00050100)"),
    (["set", "manager", "friendly-name", "Dock"], "friendly-name (0x00050100)"),
    (["get", "manager", "socket-cam-status"], "socket-cam-status (0x80020007)"),
  ]

  @Test("every other property on manager exits 15 and names it", arguments: unsupported)
  func otherProperties(_ arguments: [String], _ property: String) async throws {
    let sandbox = try Sandbox()
    Shape.expectFailure(
      try await sandbox.capture(arguments), status: 15, name: "ESKT_NOTSUPPORTED",
      message: "Device Manager does not support \(property)")
    #expect(!sandbox.exists(sandbox.statePath))
  }
}

@Suite("State file faults and concurrent writers")
struct StateFileTests {
  @Test(
    "a truncated state file (empty, or cut mid-document) exits 85, is moved aside, and the next command starts empty"
  )
  func truncated() async throws {
    let sandbox = try Sandbox()
    try sandbox.write("state/capture/devices.json", StateFiles.remembering(["serial:/dev/a"]))
    #expect(try await sandbox.capture("set", "manager", "favorite", "*").status == 0)
    let whole = try sandbox.read(sandbox.statePath)
    let cuts: [[UInt8]] = [[], Array(whole.prefix(whole.count / 2)), Array(whole.dropLast(2))]
    for (index, cut) in cuts.enumerated() {
      try sandbox.write("state/capture/devices.json", cut)
      let outcome = try await sandbox.capture("set", "manager", "favorite", "tcp://10.0.0.\(index + 1)")
      #expect(outcome.status == 85, "\(outcome)")
      let copies = try StateFiles.corruptCopies(sandbox)
      #expect(copies.count == index + 1, "\(copies)")
      let newest = try copies.first { try sandbox.read(sandbox.stateDirectory + "/" + $0) == cut }
      let reason = cut.isEmpty ? "is empty (truncated)" : "is corrupt (not a complete JSON object)"
      #expect(
        outcome.errLines == [
          "capture: ESKT_INVALIDFORMAT (-85): state file \(sandbox.statePath) \(reason); moved it to \(sandbox.stateDirectory)/\(newest ?? "?"), the next command starts from an empty state"
        ], "\(outcome)")
      // Nothing was written in its place.
      #expect(!sandbox.exists(sandbox.statePath))
      let next = try await sandbox.capture("get", "manager", "favorite")
      #expect(next.status == 0, "\(next)")
      #expect(next.outLines == [""])
    }
  }

  @Test(
    "20 processes meeting one corrupt file at once: exactly one moves it aside (85), the rest go on from the empty state"
  )
  func corruptFileMeetsACrowd() async throws {
    let sandbox = try Sandbox()
    let garbage = Array(#"{"schemaVersion":1,"devices":[{"id":"#.utf8)
    try sandbox.write("state/capture/devices.json", garbage)
    var runs: [[String]] = []
    for i in 1...10 {
      runs.append(["get", "manager", "favorite"])
      runs.append(["set", "manager", "favorite", "tcp://10.0.0.\(i):23"])
    }
    let children = try runs.enumerated().map { index, arguments in
      try sandbox.start(arguments, tag: "\(index)")
    }
    let outcomes = try await sandbox.finish(children)
    #expect(outcomes.filter { $0.status == 85 }.count == 1, "\(outcomes.map(\.status))")
    #expect(outcomes.filter { $0.status == 0 }.count == runs.count - 1, "\(outcomes)")
    let copies = try StateFiles.corruptCopies(sandbox)
    #expect(copies.count == 1, "\(copies)")
    #expect(try sandbox.read(sandbox.stateDirectory + "/" + (copies.first ?? "?")) == garbage)
    let favorites = (1...10).map { "tcp://10.0.0.\($0):23" }
    let state = StateFiles.parsed(sandbox)
    #expect(state?["schemaVersion"] == .number("1"))
    // At least nine writers succeeded after the move-aside: the file holds one of their values.
    #expect(favorites.contains(state?["favorite"]?.string ?? "-"), "\(state.map(\.description) ?? "nil")")
  }

  @Test("a state file from a newer capture exits 86 for readers and writers and is never replaced")
  func newer() async throws {
    let sandbox = try Sandbox()
    let newer = Array(#"{"schemaVersion": 2, "devices": [], "favorite": "*", "future": true}"#.utf8)
    try sandbox.write("state/capture/devices.json", newer)
    let message = "state file \(sandbox.statePath) has schema version 2, newer than this capture (1)"
    for arguments in [
      ["get", "manager", "favorite"], ["set", "manager", "favorite", ""], ["list"],
      ["remove", "serial:/dev/a"],
    ] {
      Shape.expectFailure(
        try await sandbox.capture(arguments), status: 86, name: "ESKT_INVALIDVERSION", message: message)
    }
    #expect(try sandbox.read(sandbox.statePath) == newer)
    #expect(try StateFiles.names(sandbox).filter { $0 != "devices.lock" } == ["devices.json"])
  }

  @Test(
    "an unreadable state file exits 64 and is left untouched",
    .enabled(
      if: geteuid() != 0 || Runner.which("setpriv") != nil, "root needs setpriv to lose CAP_DAC_OVERRIDE"))
  func unreadable() async throws {
    let sandbox = try Sandbox()
    let text = StateFiles.remembering(["serial:/dev/a"])
    try sandbox.write("state/capture/devices.json", text)
    chmod(sandbox.statePath, 0)
    for arguments in [["list"], ["get", "manager", "favorite"], ["set", "manager", "favorite", "*"]] {
      // Root reads any file: run capture without the capabilities that bypass file permissions.
      let capture = try Product.path()
      let (path, argv) =
        geteuid() == 0
        ? (Runner.which("setpriv")!, ["--inh-caps=-all", "--bounding-set=-all", capture] + arguments)
        : (capture, arguments)
      let outcome = try await Runner.run(
        path, argv, environment: sandbox.environment, directory: sandbox.root)
      Shape.expectFailure(
        outcome, status: 64, name: "ESKT_FILEACCESSDENIED",
        message: "cannot read \(sandbox.statePath): Permission denied")
    }
    #expect(StateFiles.mode(sandbox.statePath) == 0)
    chmod(sandbox.statePath, 0o600)
    #expect(try sandbox.read(sandbox.statePath) == Array(text.utf8))
    #expect(try StateFiles.corruptCopies(sandbox).isEmpty)
  }

  @Test("50 capture processes writing at once: every one exits 0 and the file holds every write")
  func fiftyWriters() async throws {
    let sandbox = try Sandbox()
    // Ten remembered devices to remove and five to keep; twenty ptys to connect; twenty favourites.
    let gone = (0..<10).map { "serial:/dev/gone-\($0)" }
    let kept = (0..<5).map { "serial:/dev/kept-\($0)" }
    try sandbox.write("state/capture/devices.json", StateFiles.remembering(gone + kept))
    let ptys = try (0..<20).map { _ in try ScannerPTY() }
    let connected = ptys.map { "serial:\($0.slavePath)" }
    let favorites = (1...20).map { "tcp://10.0.0.\($0):23" }
    var runs: [[String]] = []
    for i in 0..<20 {
      runs.append(["set", "manager", "favorite", favorites[i]])
      runs.append(["connect", connected[i], "--alias", "till-\(i)"])
      if i < 10 { runs.append(["remove", gone[i]]) }
    }
    #expect(runs.count == 50)
    let children = try runs.enumerated().map { index, arguments in
      try sandbox.start(arguments, tag: "\(index)")
    }
    let outcomes = try await sandbox.finish(children)
    for (arguments, outcome) in zip(runs, outcomes) {
      #expect(outcome.status == 0, "\(arguments): \(outcome)")
    }
    withExtendedLifetime(ptys) {}

    let raw = try sandbox.read(sandbox.statePath)
    guard let state = StateFiles.parsed(sandbox) else {
      Issue.record("devices.json is not valid JSON: \(String(decoding: raw, as: UTF8.self))")
      return
    }
    #expect(state["schemaVersion"] == .number("1"))
    #expect(StateFiles.mode(sandbox.statePath) == 0o600)
    let ids = (state["devices"]?.array ?? []).compactMap { $0["id"]?.string }
    #expect(ids.count == Set(ids).count, "duplicates: \(ids)")
    #expect(Set(ids) == Set(kept + connected), "\(ids)")
    let aliases = (state["devices"]?.array ?? []).compactMap { $0["alias"]?.string }
    #expect(Set(aliases) == Set((0..<20).map { "till-\($0)" }))
    #expect(
      favorites.contains(state["favorite"]?.string ?? "-"), "\(state["favorite"].map(\.description) ?? "nil")"
    )
    #expect(try StateFiles.temporaries(sandbox).isEmpty)
    #expect(try StateFiles.corruptCopies(sandbox).isEmpty)
  }

  @Test(
    "a writer killed with SIGKILL at random instants leaves the old or the new complete file, never a part")
  func killedWriters() async throws {
    let sandbox = try Sandbox()
    // A large file (2,000 remembered devices, about 300 KB) keeps each write busy long enough for
    // some kills to land in it.
    let remembered = (0..<2000).map { "serial:/dev/scanner-\($0)" }
    try sandbox.write("state/capture/devices.json", StateFiles.remembering(remembered))
    // How long one unkilled write takes here: the kills are spread over that span.
    let baseline = try await sandbox.capture("set", "manager", "favorite", "tcp://10.0.0.1:23")
    #expect(baseline.status == 0, "\(baseline)")
    var current = "tcp://10.0.0.1:23"
    var generator = SystemRandomNumberGenerator()
    var (completed, killedBefore) = (0, 0)
    for round in 2...41 {
      let next = "tcp://10.0.\(round / 256).\(round % 256):23"
      let child = try sandbox.start(["set", "manager", "favorite", next], tag: "kill")
      let delay = Double.random(in: 0...(baseline.elapsed * 1.2), using: &generator)
      try await Task.sleep(for: .seconds(delay))
      kill(child.pid, SIGKILL)
      let outcome = try await sandbox.finish([child]).first!
      #expect(outcome.signal == SIGKILL || outcome.status == 0, "\(outcome)")

      let bytes = try sandbox.read(sandbox.statePath)
      guard let state = StateFiles.parsed(sandbox) else {
        Issue.record("round \(round): devices.json is not one JSON document (\(bytes.count) bytes)")
        return
      }
      #expect(state["schemaVersion"] == .number("1"))
      #expect(state["devices"]?.array?.count == remembered.count, "round \(round)")
      #expect(StateFiles.mode(sandbox.statePath) == 0o600)
      let favorite = state["favorite"]?.string
      #expect(favorite == current || favorite == next, "round \(round): \(favorite ?? "nil")")
      if favorite == next {
        current = next
        completed += 1
      } else {
        killedBefore += 1
      }
    }
    // A temp file a killed writer left is never the state, and the next writer clears it away.
    let after = try await sandbox.capture("set", "manager", "favorite", "*")
    #expect(after.status == 0, "\(after)")
    #expect(try StateFiles.temporaries(sandbox).isEmpty)
    #expect(StateFiles.parsed(sandbox)?["favorite"] == .string("*"))
    #expect(StateFiles.parsed(sandbox)?["devices"]?.array?.count == remembered.count)
    #expect(try StateFiles.corruptCopies(sandbox).isEmpty)
    #expect(completed + killedBefore == 40)
  }
}

@Suite("The state directory's location")
struct StateLocationTests {
  /// XDG Base Directory: $XDG_STATE_HOME defaults to $HOME/.local/state; without a usable HOME there is
  /// no default, so capture refuses rather than keep its state at /.local/state/capture.
  @Test(
    "Without HOME (unset, empty or relative) and XDG_STATE_HOME: exit 63 with one line naming both",
    arguments: [nil, "", "relative/home"] as [String?])
  func noHomeHasNoStateDirectory(home: String?) async throws {
    let sandbox = try Sandbox()
    var environment = sandbox.environment
    environment["XDG_STATE_HOME"] = nil
    environment["HOME"] = home
    for arguments in [["get", "manager", "favorite"], ["set", "manager", "favorite", "*"]] {
      let outcome = try await Runner.run(
        try Product.path(), arguments, environment: environment, directory: sandbox.root)
      #expect(outcome.status == 63, "\(arguments): \(outcome)")
      #expect(
        outcome.err
          == "capture: ESKT_FILENOTFOUND (-63): no state directory: HOME is not set (or not an absolute path) and XDG_STATE_HOME is not an absolute path; set either\n",
        "\(arguments): \(outcome)")
      #expect(outcome.out.isEmpty, "\(arguments): \(outcome)")
    }
    #expect(!sandbox.exists(sandbox.root + "/relative"), "a relative HOME was used")
  }
}
