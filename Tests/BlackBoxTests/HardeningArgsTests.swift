// Hostile arguments, profiles and names against the built binary: bytes that are not UTF-8 in argv
// and XDG_STATE_HOME, a profile validated as a whole before anything is written, messages that say
// what is true, aliases that name one device, and plain output that keeps one code on one line.

import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Runs capture with arguments (and optionally XDG_STATE_HOME) given as raw bytes. Test runners and
/// posix_spawn wrappers take `String`s, which cannot hold a byte like 0xFF, so a python3 shim execs
/// capture with the bytes decoded from hex.
enum RawArguments {
  static let shim = """
    import os, sys
    env = dict(os.environb)
    raw = env.pop(b'RAW_XDG_STATE_HOME', None)
    if raw is not None:
        env[b'XDG_STATE_HOME'] = bytes.fromhex(raw.decode())
    os.execve(sys.argv[1], [sys.argv[1].encode()] + [bytes.fromhex(a) for a in sys.argv[2:]], env)
    """

  static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

  static func run(_ sandbox: Sandbox, _ arguments: [[UInt8]], stateHome: [UInt8]? = nil) async throws
    -> Outcome
  {
    var environment = sandbox.environment
    if let stateHome { environment["RAW_XDG_STATE_HOME"] = hex(stateHome) }
    return try await Runner.run(
      "/usr/bin/python3", ["-c", shim, try Product.path()] + arguments.map(hex), environment: environment,
      directory: sandbox.root)
  }

  /// Whether a file exists at exactly these bytes.
  static func exists(_ path: [UInt8]) -> Bool {
    (path.map { CChar(bitPattern: $0) } + [0]).withUnsafeBufferPointer { access($0.baseAddress!, F_OK) } == 0
  }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

@Suite("Hardening: arguments, profiles, messages")
struct HardeningArgsTests {
  static let python = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")

  // MARK: bytes that are not UTF-8

  @Test(
    "a text value that is not UTF-8 is a usage error (18) and nothing is stored", .enabled(if: python))
  func nonUTF8TextValue() async throws {
    let sandbox = try Sandbox()
    let outcome = try await RawArguments.run(
      sandbox, [bytes("set"), bytes("socketcam"), bytes("friendly-name"), [0xFF, 0xFE]])
    Shape.expectUsageError(
      outcome, command: "set",
      message: "'\\xFF\\xFE' is not valid UTF-8 text (only a file name may hold other bytes)")
    #expect(!sandbox.exists(sandbox.statePath), "nothing may be written: \(outcome)")

    let option = try await RawArguments.run(
      sandbox, [bytes("--timeout"), [0x31, 0xFF, 0x73], bytes("list")])
    Shape.expectUsageError(option, command: "", message: "--timeout: '1\\xFFs' is not valid UTF-8 text")
  }

  @Test("XDG_STATE_HOME that is not UTF-8: the state lands in exactly that directory", .enabled(if: python))
  func stateHomeBytes() async throws {
    let sandbox = try Sandbox()
    let home = bytes(sandbox.root + "/st") + [0xFF]
    let set = try await RawArguments.run(
      sandbox, [bytes("set"), bytes("socketcam"), bytes("friendly-name"), bytes("Dock 4")], stateHome: home)
    #expect(set.status == 0, "\(set)")
    #expect(RawArguments.exists(home + bytes("/capture/devices.json")))
    // Not under the U+FFFD spelling of the name.
    #expect(!sandbox.exists(sandbox.root + "/st\u{FFFD}"))
    let get = try await RawArguments.run(
      sandbox, [bytes("get"), bytes("socketcam"), bytes("friendly-name")], stateHome: home)
    #expect(get.outLines == ["Dock 4"], "\(get)")
  }

  @Test("set --from opens a profile whose name is not UTF-8 by its exact bytes", .enabled(if: python))
  func profileNameBytes() async throws {
    let sandbox = try Sandbox()
    let name = bytes(sandbox.root + "/p") + [0xFF] + bytes(".json")
    let profile = #"{"properties":[{"name":"friendly-name","value":"Till"}]}"#
    #expect(
      FileManager.default.createFile(
        atPath: sandbox.path("staging.json"), contents: Data(profile.utf8)))
    // Rename to the byte name with the C call: Foundation's paths are Strings.
    let renamed = (bytes(sandbox.path("staging.json")).map { CChar(bitPattern: $0) } + [0])
      .withUnsafeBufferPointer {
        from in
        (name.map { CChar(bitPattern: $0) } + [0]).withUnsafeBufferPointer {
          rename(from.baseAddress!, $0.baseAddress!)
        }
      }
    #expect(renamed == 0)
    let dry = try await RawArguments.run(
      sandbox, [bytes("set"), bytes("socketcam"), bytes("--from=") + name, bytes("--dry-run")])
    #expect(dry.status == 0, "\(dry)")
    #expect(dry.outLines == ["friendly-name\twould change"], "\(dry)")
    let real = try await RawArguments.run(sandbox, [bytes("set"), bytes("socketcam"), bytes("--from"), name])
    #expect(real.outLines == ["friendly-name\tchanged"], "\(real)")
    #expect(try await sandbox.capture("get", "socketcam", "friendly-name").outLines == ["Till"])
  }

  // MARK: set --from is one validation

  func profile(_ sandbox: Sandbox, _ entries: String) throws -> String {
    try sandbox.write("profile.json", #"{"properties":["# + entries + "]}")
  }

  @Test(
    "a friendly-name of 100 characters or with a control character fails --dry-run as the real run: 18",
    arguments: [
      (String(repeating: "n", count: 100), "friendly-name must be 1 to 31 UTF-8 bytes"),
      ("a\\u0001b", "friendly-name cannot contain control characters (newline, tab, ...)"),
    ])
  func dryRunValidatesAsTheRealRun(_ value: String, _ problem: String) async throws {
    let sandbox = try Sandbox()
    let path = try profile(sandbox, #"{"name":"friendly-name","value":"\#(value)"}"#)
    let message = "profile '\(path)' rejected: entry 1 (friendly-name): \(problem)"
    for dryRun in [true, false] {
      let outcome = try await sandbox.capture(
        ["set", "socketcam", "--from", path] + (dryRun ? ["--dry-run"] : []))
      Shape.expectUsageError(outcome, command: "set", message: message)
    }
    #expect(!sandbox.exists(sandbox.statePath), "nothing may be written")
  }

  @Test("one bad entry among good ones: nothing written, 18, the error on stderr and as the JSON error")
  func oneBadEntryWritesNothing() async throws {
    let sandbox = try Sandbox()
    let path = try profile(
      sandbox,
      #"{"name":"socket-cam-status","value":1},{"name":"friendly-name","value":"Good"},{"name":"friendly-name","value":"a\nb"}"#
    )
    let message =
      "profile '\(path)' rejected: entry 3 (friendly-name): friendly-name cannot contain control characters (newline, tab, ...)"
    let outcome = try await sandbox.capture("--json", "set", "socketcam", "--from", path)
    Shape.expectUsageError(outcome, command: "set", message: message, json: true)
    #expect(!sandbox.exists(sandbox.statePath), "nothing may be written")
    #expect(try await sandbox.capture("get", "socketcam", "socket-cam-status").outLines == ["enable"])
  }

  @Test("an entry the device cannot write rejects the whole profile before any write: 15, nothing written")
  func deviceValidationBeforeWrites() async throws {
    let sandbox = try Sandbox()
    let path = try profile(
      sandbox, #"{"name":"friendly-name","value":"Good"},{"name":"preamble","value":"x"}"#)
    let message =
      "profile '\(path)' rejected, nothing written: entry 2 (preamble): SocketCam C820 does not support preamble (0x00050007)"
    for dryRun in [true, false] {
      let outcome = try await sandbox.capture(
        ["--json", "set", "socketcam", "--from", path] + (dryRun ? ["--dry-run"] : []))
      #expect(outcome.status == 15, "\(outcome)")
      #expect(outcome.errLines == ["capture: ESKT_NOTSUPPORTED (-15): " + message], "\(outcome)")
      Shape.expectErrorObject(outcome, code: -15, name: "ESKT_NOTSUPPORTED", message: message)
    }
    #expect(try await sandbox.capture("get", "socketcam", "friendly-name").outLines == ["SocketCam C820"])
  }

  @Test("\"value\":1.5 and \"id\":1e300 are values out of range, not invalid JSON")
  func fractionsAreOutOfRange() async throws {
    let sandbox = try Sandbox()
    let path = try profile(
      sandbox, #"{"name":"socket-cam-status","value":1.5},{"id":1e300,"value":1}"#)
    let outcome = try await sandbox.capture("set", "socketcam", "--from", path)
    Shape.expectUsageError(
      outcome, command: "set",
      message:
        "profile '\(path)' rejected: entry 1 (socket-cam-status): value 1.5 is out of range for Byte (a whole number); entry 2: property id 1e+300 is out of range (a 32-bit whole number)"
    )
  }

  // MARK: messages

  @Test("get socketcam -1: the device answers 15 for an id it does not know, not \"write-only\"")
  func unknownPropertyID() async throws {
    let outcome = try await Sandbox().capture("get", "socketcam", "-1")
    Shape.expectFailure(
      outcome, status: 15, name: "ESKT_NOTSUPPORTED", message: "SocketCam C820 does not support 0xFFFFFFFF")
  }

  @Test("set socketcam abort 1: abort takes no value (not a second property)")
  func actionTakesNoValue() async throws {
    let outcome = try await Sandbox().capture("set", "socketcam", "abort", "1")
    Shape.expectUsageError(outcome, command: "set", message: "abort takes no value; unexpected '1'")
  }

  @Test("transports that exist say what is true, not \"not available in this build\"")
  func transportMessages() async throws {
    let sandbox = try Sandbox()
    let cases: [([String], String)] = [
      (
        ["partnership", "status", "tcp://127.0.0.1:1"],
        "tcp://127.0.0.1:1: partnership is for Bluetooth devices; a TCP (Cognex DataMan DMCC) device has none"
      ),
      (
        ["partnership", "status", "serial:/dev/null"],
        "serial:/dev/null: partnership is for Bluetooth devices; a serial tty device has none"
      ),
      (
        ["connect", "hid:/dev/input/event0"],
        "hid:/dev/input/event0: a keyboard-wedge scanner is used where it is plugged in (capture listen hid:/dev/input/event0); there is nothing to connect or remember"
      ),
      (
        ["remove", "hid:/dev/input/event0"],
        "hid:/dev/input/event0: a keyboard-wedge scanner is never remembered, so there is nothing to remove"
      ),
      (
        ["get", "serial:/dev/null?protocol=line", "friendly-name"],
        "serial protocol 'line' is not supported: protocol is spp (the default) or dmcc; framing=line reads codes ended by a line break"
      ),
    ]
    for (arguments, message) in cases {
      let outcome = try await sandbox.capture(arguments)
      #expect(outcome.status == 15, "\(arguments): \(outcome)")
      #expect(
        outcome.errLines == ["capture: ESKT_NOTSUPPORTED (-15): " + message], "\(arguments): \(outcome)")
      #expect(!outcome.err.contains("not available in this build"))
    }
  }

  @Test("an argument of 100 KB is elided to 80 characters and an ellipsis in the message")
  func longArgumentsElided() async throws {
    let sandbox = try Sandbox()
    let long = String(repeating: "x", count: 100_000)
    let shown = String(repeating: "x", count: 80) + "…"
    let unknown = try await sandbox.capture("get", "socketcam", long)
    Shape.expectUsageError(
      unknown, command: "get", message: "unknown property '\(shown)' (capture get --list shows them)")
    let name = try await sandbox.capture("get", long, "friendly-name")
    Shape.expectFailure(
      name, status: 17, name: "ESKT_NOTFOUND",
      message: "no remembered device is called '\(shown)' (see capture list)")
    let option = try await sandbox.capture("--timeout", long, "list")
    #expect(option.status == 18)
    #expect(option.stderr.count < 300, "\(option.stderr.count) bytes on stderr")
  }

  @Test("a state entry without an id says where, once: \"devices[0] lacks \"id\"\"")
  func lacksMessage() async throws {
    let sandbox = try Sandbox()
    try sandbox.write(
      "state/capture/devices.json",
      #"{"schemaVersion":1,"devices":[{"name":"x","type":0,"transport":"tcp"}]}"#)
    let outcome = try await sandbox.capture("list")
    #expect(outcome.status == 85, "\(outcome)")
    let first = outcome.errLines.first ?? ""
    #expect(first.contains(#"is corrupt (devices[0] lacks "id")"#), "\(outcome)")
    #expect(!first.contains("has the wrong type lacks"))
  }

  // MARK: aliases

  static let twoDevices =
    #"{"schemaVersion":1,"devices":[{"id":"tcp://127.0.0.1:1","name":"Dock","type":0,"transport":"tcp"},"#
    + #"{"id":"tcp://127.0.0.1:2","alias":"Front","name":"Other","type":0,"transport":"tcp"}]}"#

  @Test("connect --alias refuses a name another remembered device already answers to (18, nothing connected)")
  func duplicateAliasRefused() async throws {
    let sandbox = try Sandbox()
    try sandbox.write("state/capture/devices.json", Self.twoDevices)
    let before = try sandbox.read(sandbox.statePath)
    let cases: [(String, String)] = [
      ("Front", "alias 'Front' is already taken by tcp://127.0.0.1:2"),
      ("Dock", "'Dock' is the friendly name of tcp://127.0.0.1:1; an alias must name one device"),
    ]
    for (alias, reason) in cases {
      let outcome = try await sandbox.capture("connect", "tcp://127.0.0.1:3", "--alias", alias)
      Shape.expectUsageError(
        outcome, command: "connect",
        message: "--alias: \(reason); pick another name (capture list shows the remembered ones)")
    }
    #expect(try sandbox.read(sandbox.statePath) == before)
  }

  @Test("a word is looked up as id, then alias, then friendly name")
  func lookupPrecedence() async throws {
    let sandbox = try Sandbox()
    // "Dock" is device 1's friendly name and device 2's alias: the alias wins.
    try sandbox.write(
      "state/capture/devices.json",
      #"{"schemaVersion":1,"devices":[{"id":"tcp://127.0.0.1:1","name":"Dock","type":0,"transport":"tcp"},"#
        + #"{"id":"tcp://127.0.0.1:2","alias":"Dock","name":"Other","type":0,"transport":"tcp"}]}"#)
    let outcome = try await sandbox.capture("--timeout", "2s", "get", "Dock", "friendly-name")
    // Nothing listens on either port: the error names the device the word resolved to.
    #expect(outcome.status != 0, "\(outcome)")
    #expect(outcome.err.contains("127.0.0.1:2"), "\(outcome)")
    #expect(!outcome.err.contains("127.0.0.1:1"), "\(outcome)")
  }

  // MARK: help, man page and behaviour agree

  @Test("the exit table lists 36 (a checksum failure), and discover's --timeout says it ends with 0")
  func documentedStatuses() async throws {
    let sandbox = try Sandbox()
    let help = try await sandbox.capture("--help")
    #expect(help.outLines.contains { $0.contains("36") && $0.contains("ESKT_INVALIDCHECKSUM") }, "\(help)")
    let discover = try await sandbox.capture("discover", "--help")
    #expect(
      discover.out.contains("The end of the search is its normal end: discoveryEnd, exit 0"), "\(discover)")
    let man = try String(contentsOfFile: Self.repository + "/man/capture.1", encoding: .utf8)
    #expect(man.contains("ESKT_INVALIDCHECKSUM"))
  }

  static let repository: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.path
  }()

  // MARK: plain output: one code, one line

  @Test("plain output escapes line breaks, tabs, the backslash and control bytes C-style; --json is exact")
  func plainEscaping() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let expected = #"\x00\xFF\x01\x80binary\xFE\n\x7F"#
    for command in [["trigger", "socketcam", "start"], ["listen"]] {
      let plain = try await sandbox.capture(command + ["--image", images.binaryQR.path])
      #expect(plain.status == 0, "\(plain)")
      #expect(plain.out == expected + "\n", "\(plain)")
    }
    let json = try await sandbox.capture(
      "--json", "trigger", "socketcam", "start", "--image", images.binaryQR.path)
    let event = Shape.jsonLines(json).first
    #expect(event?["text"] == .string(images.binaryQR.text))
    #expect(event?["bytes"] == .string(images.binaryQR.base64))
  }

  @Test(
    "a QR Code holding CR LF, a tab and a backslash is one plain line",
    .enabled(if: Runner.which("qrencode") != nil))
  func plainEscapingText() async throws {
    let sandbox = try Sandbox()
    let text = "line one\r\nline\ttwo\\end"
    let image = sandbox.path("lines.png")
    let made = try await Runner.run(
      try #require(Runner.which("qrencode")), ["-o", image, text], environment: ["PATH": "/usr/bin:/bin"])
    #expect(made.status == 0, "\(made)")
    let plain = try await sandbox.capture("trigger", "socketcam", "start", "--image", image)
    #expect(plain.outLines == [#"line one\r\nline\ttwo\\end"#], "\(plain)")
  }
}
