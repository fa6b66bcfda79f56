// A private system bus with the project's bluetoothd 5.66 model (Tests/Rigs), one per test, started
// and stopped through Tests/Rigs/rig.py.

import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

final class BlueZRig: @unchecked Sendable {
  static let rigScript = DocsTests.repositoryRoot + "/Tests/Rigs/rig.py"
  let directory: String
  let busAddress: String
  /// The pid of the bluetoothd model (the process owning org.bluez).
  let mockPID: Int32?

  /// `powerState`: hci0's Adapter1.PowerState (`on`, `off`, `off-blocked`, …), nil for no adapter at
  /// all; `denyBluezFor`: users the bus refuses messages to org.bluez (AccessDenied from dbus-daemon).
  /// `reachableByAll`: the rig directory is made 0755 so another user's process reaches the bus socket.
  init(
    parameters: [String: String] = ["TemporaryTimeout": "2"], powerState: String? = "on",
    denyBluezFor: [String] = [], reachableByAll: Bool = false, bluetoothdArgv0: String? = nil
  ) async throws {
    var arguments = [Self.rigScript, "start", "--stop-with", String(getpid())]
    for (key, value) in parameters.sorted(by: { $0.key < $1.key }) {
      arguments += ["--param", "\(key)=\(value)"]
    }
    if let powerState {
      arguments += ["--power-state", powerState]
    } else {
      arguments.append("--no-adapter")
    }
    for user in denyBluezFor { arguments += ["--deny-bluez-for", user] }
    if let bluetoothdArgv0 { arguments += ["--bluetoothd-argv0", bluetoothdArgv0] }
    let outcome = try await Runner.run(
      "/usr/bin/python3", arguments, environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"], timeLimit: 120
    )
    guard outcome.status == 0 else { throw HarnessError(description: "rig.py start failed: \(outcome)") }
    var values: [String: String] = [:]
    for line in outcome.outLines {
      let parts = line.split(separator: "=", maxSplits: 1)
      if parts.count == 2 { values[String(parts[0])] = String(parts[1]) }
    }
    guard let dir = values["RIG_DIR"], let bus = values["DBUS_SYSTEM_BUS_ADDRESS"] else {
      throw HarnessError(description: "rig.py start printed no address: \(outcome)")
    }
    directory = dir
    busAddress = bus
    mockPID = values["RIG_MOCK_PID"].flatMap { Int32($0) }
    if reachableByAll && chmod(dir, 0o755) != 0 {
      throw HarnessError(description: "chmod \(dir): \(String(cString: strerror(errno)))")
    }
  }

  /// bluetoothd stops: the bus stays, org.bluez has no owner when this returns.
  func stopBluez() async throws {
    let outcome = try await Runner.run(
      "/usr/bin/python3", [Self.rigScript, "stop-bluez", "--dir", directory],
      environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"], timeLimit: 120)
    guard outcome.status == 0 else { throw HarnessError(description: "stop-bluez failed: \(outcome)") }
  }

  func stop() async {
    _ = try? await Runner.run(
      "/usr/bin/python3", [Self.rigScript, "stop", "--dir", directory],
      environment: ["PATH": "/usr/bin:/bin"],
      timeLimit: 120)
  }

  /// Calls the rig's control API (org.bluez.Mock); returns rig.py's JSON reply text.
  @discardableResult
  func ctl(_ arguments: String...) async throws -> String {
    try await ctl(arguments)
  }

  @discardableResult
  func ctl(_ arguments: [String]) async throws -> String {
    let outcome = try await Runner.run(
      "/usr/bin/python3", [Self.rigScript, "ctl", "--dir", directory] + arguments,
      environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"], timeLimit: 120)
    guard outcome.status == 0 else {
      throw HarnessError(description: "rig.py ctl \(arguments.joined(separator: " ")) failed: \(outcome)")
    }
    return outcome.out.trimmingCharacters(in: .whitespacesAndNewlines)
  }

  func restartBluez() async throws {
    let outcome = try await Runner.run(
      "/usr/bin/python3", [Self.rigScript, "restart-bluez", "--dir", directory],
      environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"], timeLimit: 120)
    guard outcome.status == 0 else { throw HarnessError(description: "restart-bluez failed: \(outcome)") }
  }

  static func devicePath(_ address: String) -> String {
    "/org/bluez/hci0/dev_" + address.replacingOccurrences(of: ":", with: "_")
  }

  /// A sandbox whose capture processes use this rig as their system bus.
  func sandbox() throws -> Sandbox {
    let sandbox = try Sandbox()
    sandbox.extraEnvironment = ["DBUS_SYSTEM_BUS_ADDRESS": busAddress]
    return sandbox
  }
}

/// Runs `body` with a fresh rig and always stops it.
func withRig(
  _ parameters: [String: String] = ["TemporaryTimeout": "2"], powerState: String? = "on",
  denyBluezFor: [String] = [], reachableByAll: Bool = false, bluetoothdArgv0: String? = nil,
  _ body: (BlueZRig, Sandbox) async throws -> Void
) async throws {
  let rig = try await BlueZRig(
    parameters: parameters, powerState: powerState, denyBluezFor: denyBluezFor,
    reachableByAll: reachableByAll,
    bluetoothdArgv0: bluetoothdArgv0)
  do {
    try await body(rig, try rig.sandbox())
  } catch {
    await rig.stop()
    throw error
  }
  await rig.stop()
}

/// Method calls on a rig's bus as they happen (dbus-monitor): capture's attempts made observable. Each
/// of its attempts to open a remembered BLE device starts on a new connection with GetManagedObjects,
/// each attempt to discover with NameHasOwner, so counting them says how many attempts were made
/// instead of guessing it from how long the test slept.
final class BusMonitor: Sendable {
  let member: String
  private let watch = OutputWatch()
  private let pid = ChildProcess()
  private let running: Task<Outcome, any Error>

  /// Starts monitoring calls of `member` on the rig's bus; returns once the monitor is in place.
  init(_ rig: BlueZRig, member: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    self.member = member
    let monitor = try #require(Runner.which("dbus-monitor"), "dbus-monitor is not installed")
    let (watch, pid) = (watch, pid)
    running = Task {
      try await Runner.run(
        monitor, ["--address", rig.busAddress, "type='method_call',member='\(member)'"],
        environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"], timeLimit: 120,
        interaction: Interaction(started: { child in pid.id.withLock { $0 = child } }, watch: watch))
    }
    // dbus-monitor becomes a monitor by BecomeMonitor, which takes its name away: NameLost says the
    // bus now copies every matching call to it.
    await watch.waitForLine(.stdout, containing: "member=NameLost", sourceLocation: sourceLocation)
  }

  /// The calls seen so far.
  var calls: Int { watch.lines(.stdout).filter { $0.contains("member=\(member)") }.count }

  /// Waits until at least `count` calls have been seen.
  func waitForCalls(_ count: Int, sourceLocation: SourceLocation = #_sourceLocation) async {
    await waitUntil("\(count) \(member) calls on the bus (seen: \(calls))", sourceLocation: sourceLocation) {
      calls >= count
    }
  }

  /// The monitor's pid, known once it was spawned.
  private final class ChildProcess: Sendable {
    let id = Mutex<pid_t>(0)
  }

  func stop() async {
    let child = pid.id.withLock { $0 }
    if child > 0 { kill(child, SIGTERM) }
    _ = try? await running.value
  }
}
