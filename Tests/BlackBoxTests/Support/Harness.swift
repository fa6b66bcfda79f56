// The built `capture` binary, a private sandbox per test (its own XDG_STATE_HOME and HOME, so no test
// shares state with another or touches the user's), and the shape checks every test repeats.

import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

struct HarnessError: Error, CustomStringConvertible {
  var description: String
}

enum Product {
  /// `capture`, next to the test bundle (both live in the build's bin directory); CAPTURE_BINARY
  /// overrides it.
  static let binary: String? = {
    if let override = ProcessInfo.processInfo.environment["CAPTURE_BINARY"], access(override, X_OK) == 0 {
      return override
    }
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard n > 0 else { return nil }
    let exe = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    var dir = exe
    // The bundle is either the executable itself or a directory holding it.
    while let slash = dir.lastIndex(of: "/") {
      dir = String(dir[..<slash])
      let candidate = dir + "/capture"
      var info = stat()
      if stat(candidate, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && access(candidate, X_OK) == 0 {
        return candidate
      }
      if dir.hasSuffix(".xctest") { continue }
      break
    }
    return nil
  }()

  static func path() throws -> String {
    guard let binary else {
      throw HarnessError(
        description:
          "the capture binary was not found next to the test bundle; build it (swift build) or set CAPTURE_BINARY"
      )
    }
    return binary
  }
}

/// A temporary directory for one test: images, profiles, and the state directory capture uses.
final class Sandbox: @unchecked Sendable {
  let root: String

  init() throws {
    var template = Array("/tmp/capture-blackbox.XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw HarnessError(description: "mkdtemp failed: \(errno)") }
    root = String(cString: made)
  }

  deinit { try? FileManager.default.removeItem(atPath: root) }

  var stateHome: String { root + "/state" }
  var stateDirectory: String { stateHome + "/capture" }
  var statePath: String { stateDirectory + "/devices.json" }

  func path(_ name: String) -> String { root + "/" + name }

  /// Added to every child's environment (e.g. DBUS_SYSTEM_BUS_ADDRESS of a BlueZ rig).
  var extraEnvironment: [String: String] = [:]

  var environment: [String: String] {
    [
      "XDG_STATE_HOME": stateHome, "HOME": root + "/home", "PATH": "/usr/local/bin:/usr/bin:/bin",
      "LANG": "C.UTF-8",
      // No system bus unless a test gives one: never reach the host's real bluetoothd.
      "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=" + root + "/no-system-bus",
    ].merging(extraEnvironment) { _, extra in extra }
  }

  /// Runs capture with `arguments` in this sandbox (working directory = the sandbox root).
  func capture(
    _ arguments: [String], stdin: [UInt8] = [], timeLimit: Double = 120,
    interaction: Interaction = Interaction()
  ) async throws -> Outcome {
    let outcome = try await Runner.run(
      try Product.path(), arguments, environment: environment, stdin: stdin, directory: root,
      timeLimit: timeLimit,
      interaction: interaction)
    if outcome.timedOut {
      Issue.record("capture \(arguments.joined(separator: " ")) was killed after \(timeLimit) s")
    }
    return outcome
  }

  func capture(_ arguments: String...) async throws -> Outcome { try await capture(arguments) }

  @discardableResult
  func write(_ name: String, _ bytes: [UInt8]) throws -> String {
    let full = path(name)
    let parent = (full as NSString).deletingLastPathComponent
    try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
    guard FileManager.default.createFile(atPath: full, contents: Data(bytes)) else {
      throw HarnessError(description: "cannot write \(full)")
    }
    return full
  }

  @discardableResult
  func write(_ name: String, _ text: String) throws -> String { try write(name, Array(text.utf8)) }

  /// Copies an image into the sandbox under `name` (directories are created as needed).
  @discardableResult
  func copy(_ source: String, to name: String) throws -> String { try write(name, try read(source)) }

  func makeDirectory(_ name: String) throws -> String {
    try FileManager.default.createDirectory(atPath: path(name), withIntermediateDirectories: true)
    return path(name)
  }

  func read(_ path: String) throws -> [UInt8] {
    guard let data = FileManager.default.contents(atPath: path) else {
      throw HarnessError(description: "cannot read \(path)")
    }
    return [UInt8](data)
  }

  func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }
}

// MARK: - shape checks

enum Shape {
  static let invalidParameterPrefix = "capture: ESKT_INVALIDPARAMETER (-18): "

  /// The usage block `capture COMMAND --help` starts with (after its title line), as the parser
  /// prints it after a usage error.
  static let usage: [String: [String]] = [
    "": ["usage: capture [GLOBAL] COMMAND [ARGS]   (capture --help for more)"],
    "discover": ["usage: capture discover [--le | --classic] [--name GLOB] [--timeout DUR] [--all]"],
    "connect": ["usage: capture connect DEVICE [--pair] [--alias NAME]"],
    "remove": ["usage: capture remove DEVICE"],
    "list": ["usage: capture list"],
    "doctor": ["usage: capture doctor"],
    "fleet": [
      "usage: capture fleet hosts [--hosts GLOB] [--host ID]... --mqtt URL",
      "       capture fleet run [--hosts GLOB] [--host ID]... --mqtt URL -- COMMAND [ARGS...]",
      "       capture fleet watch [--hosts GLOB] [--host ID]... [--events LIST] [--count N] --mqtt URL",
      "       capture fleet apply PROFILE [--device SELECTOR] [--dry-run] [--wait DUR] [--hosts GLOB] [--host ID]... --mqtt URL",
      "       capture fleet status [--hosts GLOB] [--host ID]... --mqtt URL",
    ],
    "trigger": ["usage: capture trigger DEVICE start|stop|continuous|enable|disable [--wait] [SOURCE]"],
    "get": [
      "usage: capture get DEVICE PROPERTY...", "       capture get DEVICE --all", "       capture get --list",
    ],
    "set": [
      "usage: capture set DEVICE PROPERTY VALUE...", "       capture set DEVICE --from FILE [--dry-run]",
    ],
    "listen": [
      "usage: capture listen [DEVICE...] [--count N] [--timeout DUR] [--events LIST] [--confirm CMD] [SOURCE]"
    ],
    "serve": [
      "usage: capture serve [DEVICE...] [--listen HOST:PORT] [--allow-origin ORIGIN]... [SOURCE] [--output FILE]"
    ],
    "partnership": ["usage: capture partnership status|set|reset DEVICE [...]"],
  ]

  /// A usage error: exit 18, stderr = the one-line message then the command's usage, stdout empty
  /// (or, with --json, exactly the error object).
  static func expectUsageError(
    _ outcome: Outcome, command: String, message: String, json: Bool = false,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    #expect(outcome.status == 18, "\(outcome)", sourceLocation: sourceLocation)
    #expect(
      outcome.errLines == [invalidParameterPrefix + message] + (usage[command] ?? ["?"]), "\(outcome)",
      sourceLocation: sourceLocation)
    if json {
      expectErrorObject(
        outcome, code: -18, name: "ESKT_INVALIDPARAMETER", message: message, sourceLocation: sourceLocation)
    } else {
      #expect(outcome.stdout.isEmpty, "stdout must be empty: \(outcome)", sourceLocation: sourceLocation)
    }
  }

  /// stdout is exactly one `{"error":{"code":…,"message":…,"name":…}}` line.
  static func expectErrorObject(
    _ outcome: Outcome, code: Int, name: String, message: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    #expect(outcome.outLines.count == 1, "\(outcome)", sourceLocation: sourceLocation)
    guard let line = outcome.outLines.first, let value = try? parseJSON(line) else {
      Issue.record("stdout is not one JSON document: \(outcome)", sourceLocation: sourceLocation)
      return
    }
    let expected = JSONValue.object([
      (
        "error",
        .object([("code", .number(String(code))), ("message", .string(message)), ("name", .string(name))])
      )
    ])
    #expect(value == expected, sourceLocation: sourceLocation)
  }

  /// A runtime error: exit |code|, stderr one line `capture: NAME (code): message`, stdout empty.
  static func expectFailure(
    _ outcome: Outcome, status: Int32, name: String, message: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    #expect(outcome.status == status, "\(outcome)", sourceLocation: sourceLocation)
    #expect(
      outcome.errLines == ["capture: \(name) (-\(status)): \(message)"], "\(outcome)",
      sourceLocation: sourceLocation)
    #expect(outcome.stdout.isEmpty, "\(outcome)", sourceLocation: sourceLocation)
  }

  static let socketCamDevice = JSONValue.object([
    ("id", .string("socketcam")), ("name", .string("SocketCam C820")), ("type", .number("5")),
    ("typeName", .string("SocketCamC820")),
  ])

  /// ISO 8601 UTC with milliseconds, e.g. 2025-01-31T09:08:07.123Z.
  static func isTime(_ value: JSONValue?) -> Bool {
    guard let text = value?.string, let pattern = try? Regex(#"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"#)
    else {
      return false
    }
    return (try? pattern.wholeMatch(in: text)) != nil
  }

  /// Every stdout line parsed as one JSON document with sorted keys.
  static func jsonLines(_ outcome: Outcome, sourceLocation: SourceLocation = #_sourceLocation) -> [JSONValue]
  {
    var values: [JSONValue] = []
    for line in outcome.outLines {
      do {
        let value = try parseJSON(line)
        #expect(value.keysAreSorted, "keys not sorted: \(line)", sourceLocation: sourceLocation)
        #expect(value.keysAreCamelCase, "keys not camelCase: \(line)", sourceLocation: sourceLocation)
        values.append(value)
      } catch {
        Issue.record("\(error): \(line)", sourceLocation: sourceLocation)
      }
    }
    return values
  }

  /// A decodedData event with exactly the published keys and these values.
  static func expectDecoded(
    _ event: JSONValue?, text: String, source: (id: Int, name: String), base64: String, origin: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    guard let event else {
      Issue.record("missing decodedData event", sourceLocation: sourceLocation)
      return
    }
    #expect(
      event.keys == ["bytes", "dataSource", "device", "event", "origin", "points", "text", "time"],
      "\(event)",
      sourceLocation: sourceLocation)
    #expect(event["event"] == .string("decodedData"), sourceLocation: sourceLocation)
    #expect(event["text"] == .string(text), sourceLocation: sourceLocation)
    #expect(event["bytes"] == .string(base64), sourceLocation: sourceLocation)
    #expect(
      event["dataSource"] == .object([("id", .number(String(source.id))), ("name", .string(source.name))]),
      sourceLocation: sourceLocation)
    #expect(event["device"] == socketCamDevice, sourceLocation: sourceLocation)
    #expect(event["origin"] == .string(origin), sourceLocation: sourceLocation)
    #expect(
      isTime(event["time"]), "time: \(event["time"].map(\.description) ?? "nil")",
      sourceLocation: sourceLocation)
    let points = event["points"]?.array ?? []
    #expect(points.count == 4, "points: \(points)", sourceLocation: sourceLocation)
    for point in points {
      #expect(
        point.keys == ["x", "y"] && point["x"]?.int != nil && point["y"]?.int != nil,
        sourceLocation: sourceLocation)
    }
  }

  static func expectArrivalOrRemoval(
    _ event: JSONValue?, _ kind: String, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    guard let event else {
      Issue.record("missing \(kind) event", sourceLocation: sourceLocation)
      return
    }
    #expect(event.keys == ["device", "event", "time"], "\(event)", sourceLocation: sourceLocation)
    #expect(event["event"] == .string(kind), sourceLocation: sourceLocation)
    #expect(event["device"] == socketCamDevice, sourceLocation: sourceLocation)
    #expect(isTime(event["time"]), sourceLocation: sourceLocation)
  }
}
