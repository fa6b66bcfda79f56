// Help, version and usage errors of every command (docs/architecture.md §1): exit 18, one line
// `capture: ESKT_INVALIDPARAMETER (-18): message` then the command's usage on stderr, nothing on stdout
// (with --json: exactly the error object).

import Testing

@Suite("Help, version and usage errors")
struct UsageTests {
  static let commands: [(name: String, abstract: String)] = [
    ("discover", "Discover nearby scanners and readers (a stream of devices found)."),
    ("connect", "Connect a device, remember it and print its arrival."),
    ("remove", "Disconnect a device, unpair it and forget it."),
    ("list", "List remembered and connected devices."),
    ("trigger", "Start or stop a read, or enable or disable the trigger."),
    ("get", "Read device properties."),
    ("set", "Write device properties."),
    ("listen", "Stream events: decoded data, arrivals, removals, battery."),
    ("serve", "Serve CaptureJS web apps: the Capture service on 127.0.0.1:18481."),
    ("partnership", "Show, set or reset the Bluetooth partnership (bond) with a device."),
    ("fleet", "See and provision every host of a fleet through its MQTT broker."),
    ("doctor", "Check what stands between this host and its scanners, and say how to fix it."),
  ]

  @Test("COMMAND --help, COMMAND -h and help COMMAND print the command's help", arguments: commands)
  func commandHelp(_ command: (name: String, abstract: String)) async throws {
    let sandbox = try Sandbox()
    let expectedStart = ["capture \(command.name) - \(command.abstract)", ""] + Shape.usage[command.name]!
    var first: String?
    for arguments in [
      [command.name, "--help"], [command.name, "-h"], ["help", command.name], ["--help", command.name],
    ] {
      let outcome = try await sandbox.capture(arguments)
      #expect(outcome.status == 0, "\(arguments): \(outcome)")
      #expect(outcome.stderr.isEmpty, "\(arguments): \(outcome)")
      #expect(
        Array(outcome.outLines.prefix(expectedStart.count)) == expectedStart, "\(arguments): \(outcome)")
      #expect(outcome.out.contains("\nGlobal options:\n"), "\(arguments)")
      if let first { #expect(outcome.out == first, "\(arguments) differs from \(command.name) --help") }
      first = first ?? outcome.out
    }
    // --help wins over everything else on the line, including bad operands: nothing is run.
    let withOperands = try await sandbox.capture(command.name, "nonsense-operand", "--help")
    #expect(withOperands.status == 0)
    #expect(withOperands.out == first)
    #expect(!sandbox.exists(sandbox.statePath))
  }

  @Test("capture --help lists every visible command, the global options and the exit status table")
  func topLevelHelp() async throws {
    let sandbox = try Sandbox()
    let version = try await sandbox.capture("--version")
    let outcome = try await sandbox.capture("--help")
    #expect(outcome.status == 0)
    #expect(outcome.stderr.isEmpty)
    let lines = outcome.outLines
    let name = version.out.dropFirst("capture ".count).dropLast()
    #expect(
      Array(lines.prefix(3)) == [
        "capture \(name) - barcode scanners and NFC readers from the command line", "",
        "usage: capture [GLOBAL] COMMAND [ARGS]",
      ])
    for command in Self.commands {
      let padding = String(repeating: " ", count: "partnership".count + 3 - command.name.count)
      #expect(lines.contains("  \(command.name)\(padding)\(command.abstract)"), "missing \(command.name)")
    }
    #expect(!outcome.out.contains("__generate-docs"), "the hidden command must not be listed")
    for option in [
      "--json", "-q, --quiet", "-v, --verbose", "--timeout DUR", "--adapter hciN", "--no-color", "-h, --help",
      "--version",
    ] {
      #expect(lines.contains { $0.hasPrefix("  \(option) ") }, "missing global option \(option)")
    }
    for (status, name) in [
      (0, "ESKT_NOERROR"), (15, "ESKT_NOTSUPPORTED"), (17, "ESKT_NOTFOUND"), (18, "ESKT_INVALIDPARAMETER"),
      (32, "ESKT_NOTAVAILABLE"), (34, "ESKT_UNABLEREADFILE"), (42, "ESKT_REQUESTTIMEDOUT"),
      (63, "ESKT_FILENOTFOUND"),
      (64, "ESKT_FILEACCESSDENIED"), (85, "ESKT_INVALIDFORMAT"),
    ] {
      let prefix = "  \(status)" + String(repeating: " ", count: 5 - String(status).count) + name + " "
      #expect(lines.contains { $0.hasPrefix(prefix) }, "exit status table lacks \(status) \(name)")
    }
    let help = try await sandbox.capture("help")
    #expect(help.status == 0)
    #expect(help.out == outcome.out)
  }

  @Test("--version prints one line 'capture X.Y.Z' and exits 0")
  func version() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture("--version")
    #expect(outcome.status == 0)
    #expect(outcome.stderr.isEmpty)
    #expect(outcome.outLines.count == 1)
    #expect(
      (try? Regex(#"capture \d+\.\d+\.\d+"#).wholeMatch(in: outcome.outLines.first ?? "")) != nil,
      "\(outcome)")
  }

  @Test("--version is never silently ignored: with a command it still prints the version, like --help")
  func versionWithCommand() async throws {
    let sandbox = try Sandbox()
    let version = try await sandbox.capture("--version")
    for arguments in [
      ["--version", "list"], ["list", "--version"], ["get", "socketcam", "friendly-name", "--version"],
    ] {
      let outcome = try await sandbox.capture(arguments)
      #expect(outcome.status == 0, "\(arguments): \(outcome)")
      #expect(outcome.out == version.out, "\(arguments): \(outcome)")
    }
  }

  /// (arguments, command whose usage follows, message)
  static let usageErrors: [([String], String, String)] = [
    ([], "", "no command given"),
    (["lsit"], "", "unknown command 'lsit'; did you mean 'list'?"),
    (["trigerr", "socketcam", "start"], "", "unknown command 'trigerr'; did you mean 'trigger'?"),
    (["frobnicate"], "", "unknown command 'frobnicate'"),
    (["-x", "list"], "", "unknown option -x"),
    (["--bogus", "list"], "", "unknown option --bogus"),
    (["list", "--jsn"], "list", "unknown option --jsn; did you mean --json?"),
    (["list", "--json=yes"], "list", "--json takes no value"),
    (["list", "extra"], "list", "unexpected argument 'extra'"),
    (["--timeout", "5x", "list"], "list", "--timeout: '5x' is not a duration (e.g. 500ms, 10s, 2m)"),
    (["--adapter", "foo", "list"], "list", "--adapter must be hciN (e.g. hci0), not 'foo'"),
    (
      ["discover", "--le", "--classic"], "discover",
      "--le and --classic cannot be combined (give neither for both)"
    ),
    (["discover", "--timeout", "5x"], "discover", "--timeout: '5x' is not a duration (e.g. 500ms, 10s, 2m)"),
    (
      ["discover", "--timeout", "-1s"], "discover", "--timeout: '-1s' is not a duration (e.g. 500ms, 10s, 2m)"
    ),
    (["discover", "extra"], "discover", "unexpected argument 'extra'"),
    (["connect"], "connect", "missing DEVICE"),
    (["connect", "socketcam", "AA:BB:CC:DD:EE:FF"], "connect", "unexpected argument 'AA:BB:CC:DD:EE:FF'"),
    (
      ["connect", "socketcam", "--alias", "AA:BB:CC:DD:EE:FF"], "connect",
      "--alias 'AA:BB:CC:DD:EE:FF' is empty or looks like a device selector; pick a plain name"
    ),
    (["remove"], "remove", "missing DEVICE"),
    (["trigger"], "trigger", "missing DEVICE"),
    (["trigger", "socketcam"], "trigger", "missing ACTION (start, stop, continuous, enable or disable)"),
    (
      ["trigger", "socketcam", "jump", "--image", "x.png"], "trigger",
      "unknown trigger action 'jump'; use start, stop, continuous, enable or disable"
    ),
    (
      ["trigger", "socketcam", "start"], "trigger",
      "socketcam needs a frame source: --image FILE, --dir DIR or --camera /dev/videoN"
    ),
    (
      ["trigger", "socketcam", "start", "--image", "x.png", "--timeout", "5x"], "trigger",
      "--timeout: '5x' is not a duration (e.g. 500ms, 10s, 2m)"
    ),
    (
      ["trigger", "AA:BB:CC:DD:EE:FF", "start", "--image", "x.png"], "trigger",
      "--image, --dir and --camera are SocketCam sources; the device is AA:BB:CC:DD:EE:FF"
    ),
    (["trigger", "socketcam", "start", "--image"], "trigger", "--image needs a value (FILE)"),
    (["get"], "get", "missing DEVICE"),
    (["get", "socketcam"], "get", "missing PROPERTY (or --all, --list)"),
    (["get", "socketcam", "bogus"], "get", "unknown property 'bogus' (capture get --list shows them)"),
    (
      ["get", "socketcam", "frendly-name"], "get",
      "unknown property 'frendly-name'; did you mean 'friendly-name'? (capture get --list shows them)"
    ),
    // A typo anywhere in a run of data-source pairs is caught before anything is written.
    (
      ["set", "socketcam", "data-source", "all", "disable", "qr-cod", "enable"], "set",
      "unknown data source 'qr-cod'"
    ),
    (
      ["set", "socketcam", "data-source", "2d", "disable", "qr-code"], "set",
      "data-source needs a data source and enable or disable"
    ),
    (["get", "socketcam", "data-source", "bogus"], "get", "unknown data source 'bogus'"),
    (["get", "socketcam", "trigger"], "get", "trigger cannot be read (it is write-only)"),
    (
      ["set", "socketcam", "data-source", "aztec", "maybe"], "set",
      "data source status must be enable or disable, not 'maybe'"
    ),
    (["set", "socketcam", "device-type", "3"], "set", "device-type is read-only"),
    (
      ["set", "socketcam", "socket-cam-status", "bogus"], "set",
      "'bogus' is not a valid socket-cam-status value (enable or disable)"
    ),
    (
      ["get", "socketcam", "--all", "friendly-name"], "get",
      "--all reads every property; unexpected 'friendly-name'"
    ),
    (["get", "--list", "--all"], "get", "--list and --all cannot be combined"),
    (["set"], "set", "missing DEVICE"),
    (["set", "socketcam"], "set", "missing PROPERTY VALUE (or --from FILE)"),
    (["set", "socketcam", "friendly-name"], "set", "friendly-name needs a value"),
    (
      ["set", "socketcam", "data-source", "qr-code"], "set",
      "data-source needs a data source and enable or disable"
    ),
    (["set", "socketcam", "--dry-run"], "set", "--dry-run works with --from FILE"),
    (
      ["set", "socketcam", "--from", "p.json", "friendly-name", "X"], "set",
      "--from applies a whole profile; unexpected 'friendly-name'"
    ),
    (["listen", "--count", "0", "--dir", "d"], "listen", "--count: '0' is not a positive whole number"),
    (["listen", "--count", "-3", "--dir", "d"], "listen", "--count: '-3' is not a positive whole number"),
    (["listen", "--count", "two", "--dir", "d"], "listen", "--count: 'two' is not a positive whole number"),
    (["listen", "--count", "1", "--count", "2", "--dir", "d"], "listen", "--count given more than once"),
    (
      ["listen", "--timeout", "5x", "--dir", "d"], "listen",
      "--timeout: '5x' is not a duration (e.g. 500ms, 10s, 2m)"
    ),
    (["listen", "--cuont", "1", "--dir", "d"], "listen", "unknown option --cuont; did you mean --count?"),
    (
      ["listen", "--events", "bogus", "--dir", "d"], "listen",
      "--events: unknown event 'bogus' (known: deviceArrival, deviceRemoval, decodedData, undecodedData, batteryLevel, power, buttons, error, deviceDiscovered, discoveryEnd)"
    ),
    (["listen", "--dir"], "listen", "--dir needs a value (DIR)"),
    (
      ["listen", "--camera", "/dev/video0", "--dir", "d"], "listen",
      "--camera cannot be combined with --image or --dir"
    ),
    (["listen", "--camera", "video0"], "listen", "--camera needs a device path like /dev/video0"),
    (["listen", "--image", "-", "--image", "-"], "listen", "--image - can be given once"),
    (["partnership"], "partnership", "missing ACTION (status, set or reset)"),
    (["partnership", "status"], "partnership", "missing DEVICE"),
    (
      ["partnership", "bond", "socketcam"], "partnership",
      "unknown partnership action 'bond'; use status, set or reset"
    ),
    // Bad device selectors.
    (["get", "tcp://", "friendly-name"], "get", "'tcp://': missing host in tcp://HOST[:PORT]"),
    (["get", "tcp://host:99999", "version"], "get", "'tcp://host:99999': port must be 1-65535"),
    (["get", "serial:relative", "friendly-name"], "get", "'serial:relative': expected serial:/dev/PATH"),
    (["get", "hid:event3", "version"], "get", "'hid:event3': expected hid:/dev/input/eventN or hid:auto"),
    (
      ["get", "ftp://host", "version"], "get",
      "'ftp://host': unknown device scheme; use tcp://, serial: or hid:"
    ),
    (
      ["connect", "AA:BB:CC:DD:EE:F"], "connect",
      "'AA:BB:CC:DD:EE:F' is not a Bluetooth address (AA:BB:CC:DD:EE:FF)"
    ),
    // Five bytes, not six: a mistyped address, not the name of a remembered device.
    (
      ["get", "AA:BB:CC:DD:EE", "friendly-name"], "get",
      "'AA:BB:CC:DD:EE' is not a Bluetooth address (AA:BB:CC:DD:EE:FF)"
    ),
    // Nothing to listen to is a missing operand.
    (
      ["listen"], "listen",
      "nothing to listen to: no device is remembered; give a DEVICE or a SocketCam source (--image, --dir, --camera)"
    ),
  ]

  @Test("usage errors exit 18 with one line and the usage; nothing on stdout", arguments: usageErrors)
  func usageError(_ arguments: [String], _ command: String, _ message: String) async throws {
    let sandbox = try Sandbox()
    Shape.expectUsageError(try await sandbox.capture(arguments), command: command, message: message)
    // Rejected before any device or state is touched.
    #expect(!sandbox.exists(sandbox.stateDirectory))
  }

  @Test("with --json a usage error also prints exactly the error object on stdout", arguments: usageErrors)
  func usageErrorJSON(_ arguments: [String], _ command: String, _ message: String) async throws {
    let sandbox = try Sandbox()
    Shape.expectUsageError(
      try await sandbox.capture(["--json"] + arguments), command: command, message: message, json: true)
  }

  @Test("--json after the command and after the error still selects the JSON error object")
  func jsonAnywhere() async throws {
    let sandbox = try Sandbox()
    Shape.expectUsageError(
      try await sandbox.capture("list", "--bogus", "--json"), command: "list",
      message: "unknown option --bogus",
      json: true)
  }
}
