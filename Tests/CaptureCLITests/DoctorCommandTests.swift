import CaptureCore
import TestSupport
import Testing

@testable import CaptureCLI

#if canImport(Glibc)
  import Glibc
#endif

/// Drivers whose only answer is the doctor's rows it was given; it records the request.
private func doctorSystem(_ rows: [HostCheck]) -> FakeDeviceSystem {
  var answers = FakeDeviceSystem.Answers()
  answers.checks = rows
  return FakeDeviceSystem(answers)
}

private struct DoctorRun {
  var status: Int32
  var stdout: [String]
  var stderr: [String]
}

private func doctor(_ arguments: [String], _ system: FakeDeviceSystem, state: StateStore? = nil) async throws
  -> DoctorRun
{
  let run = try await runCommand(
    arguments, system: system, state: state ?? StateStore(directory: "/nonexistent/capture-doctor"))
  return DoctorRun(status: run.status, stdout: run.stdoutLines, stderr: run.stderrLines)
}

@Suite("capture doctor: rendering and exit status")
struct DoctorCommandTests {
  static let busFailure = HostCheck(
    .systemBus, status: .failure, message: "cannot connect to the system bus at unix:path=/x: gone",
    fix: "sudo systemctl start dbus", code: .notAvailable)
  static let notChecked = HostCheck(
    .bluetoothd, status: .failure,
    message: "not checked: cannot connect to the system bus at unix:path=/x: gone",
    code: .notAvailable)
  static let adapterWarning = HostCheck(
    .adapter, subject: "hci1", status: .warning, message: "powered off",
    fix: "busctl set-property org.bluez /org/bluez/hci1 org.bluez.Adapter1 Powered b true",
    code: .notAvailable)
  static let serialDenied = HostCheck(
    .serial, subject: "/dev/ttyUSB0", status: .failure,
    message: "permission denied: only group dialout may read and write it, and this user is not in it",
    fix: "sudo usermod -aG dialout \"$USER\"", code: .fileAccessDenied)
  static let zbar = HostCheck(.zbar, status: .ok, message: "ZBar 0.23.92")

  @Test(
    "plain: one STATUS CHECK[ SUBJECT]: MESSAGE[; fix: FIX] line per row, exit |code| of the first failure")
  func plain() async throws {
    let run = try await doctor(
      ["doctor"],
      doctorSystem([Self.busFailure, Self.notChecked, Self.adapterWarning, Self.serialDenied, Self.zbar]))
    #expect(run.status == 32)
    #expect(
      run.stdout == [
        "failure system-bus: cannot connect to the system bus at unix:path=/x: gone; fix: sudo systemctl start dbus",
        "failure bluetoothd: not checked: cannot connect to the system bus at unix:path=/x: gone",
        "warning adapter hci1: powered off; fix: busctl set-property org.bluez /org/bluez/hci1 org.bluez.Adapter1 Powered b true",
        "failure serial /dev/ttyUSB0: permission denied: only group dialout may read and write it, and this user is not in it; fix: sudo usermod -aG dialout \"$USER\"",
        "ok zbar: ZBar 0.23.92",
      ])
    #expect(
      run.stderr == [
        "capture: ESKT_NOTAVAILABLE (-32): doctor: 3 checks failed; the first: system-bus: cannot connect to the system bus at unix:path=/x: gone"
      ])
  }

  @Test("-q prints only the warnings and failures")
  func quiet() async throws {
    let run = try await doctor(
      ["-q", "doctor"], doctorSystem([Self.zbar, Self.adapterWarning, Self.serialDenied]))
    #expect(run.stdout.count == 2)
    #expect(run.stdout[0].hasPrefix("warning adapter hci1: "))
    #expect(run.stdout[1].hasPrefix("failure serial /dev/ttyUSB0: "))
    #expect(run.status == 64)
    #expect(
      run.stderr == [
        "capture: ESKT_FILEACCESSDENIED (-64): doctor: 1 check failed; the first: serial /dev/ttyUSB0: permission denied: only group dialout may read and write it, and this user is not in it"
      ])
  }

  @Test("warnings alone do not fail: exit 0, nothing on stderr")
  func warningsOnly() async throws {
    let run = try await doctor(["doctor"], doctorSystem([Self.adapterWarning, Self.zbar]))
    #expect(run.status == 0)
    #expect(run.stderr.isEmpty)
  }

  @Test(
    "--json: one document, every key present, null where there is none, the error object beside the checks")
  func json() async throws {
    let run = try await doctor(
      ["--json", "doctor"], doctorSystem([Self.busFailure, Self.adapterWarning, Self.zbar]))
    #expect(run.status == 32)
    #expect(
      run.stdout == [
        #"{"checks":[{"check":"system-bus","code":-32,"fix":"sudo systemctl start dbus","message":"cannot connect to the system bus at unix:path=/x: gone","status":"failure","subject":null},{"check":"adapter","code":-32,"fix":"busctl set-property org.bluez /org/bluez/hci1 org.bluez.Adapter1 Powered b true","message":"powered off","status":"warning","subject":"hci1"},{"check":"zbar","code":null,"fix":null,"message":"ZBar 0.23.92","status":"ok","subject":null}],"error":{"code":-32,"message":"doctor: 1 check failed; the first: system-bus: cannot connect to the system bus at unix:path=/x: gone","name":"ESKT_NOTAVAILABLE"},"failures":1,"warnings":1}"#
      ])
    #expect(run.stderr.count == 1)
  }

  @Test("--json with nothing failed: error is null, exit 0")
  func jsonClean() async throws {
    let run = try await doctor(["--json", "doctor"], doctorSystem([Self.zbar]))
    #expect(run.status == 0)
    #expect(
      run.stdout == [
        #"{"checks":[{"check":"zbar","code":null,"fix":null,"message":"ZBar 0.23.92","status":"ok","subject":null}],"error":null,"failures":0,"warnings":0}"#
      ])
  }

  @Test("--adapter and the state file (whose serial: and hid: nodes doctor checks) reach the drivers")
  func request() async throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore()
    try store.remember(
      RememberedDevice(
        id: "serial:/dev/ttyACM3", alias: nil, name: "S", type: 0, transport: "serial", lastSeen: nil))
    try store.remember(
      RememberedDevice(
        id: "hid:/dev/input/event7", alias: nil, name: "H", type: 0, transport: "hid", lastSeen: nil))
    let fake = doctorSystem([Self.zbar])
    _ = try await doctor(["--adapter", "hci1", "doctor"], fake, state: store)
    let seen = try #require(fake.diagnosisRequests.first)
    #expect(seen.adapter == "hci1")
    #expect(seen.state.path == store.path)
  }

  @Test("doctor takes no operands")
  func operands() async throws {
    let run = try await doctor(["doctor", "extra"], doctorSystem([]))
    #expect(run.status == 18)
  }
}
