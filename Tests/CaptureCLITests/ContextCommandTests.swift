import CaptureContract
import CaptureCore
import Synchronization
import TestSupport
import Testing

@testable import CaptureCLI

#if canImport(Glibc)
  import Glibc
#endif

/// A scanner the fake system opens: arrival, the codes it was given, removal on close; every property
/// read fails as a scanner that does not answer.
private func fakeScanner(id: String, codes: [String]) -> FakeDevice {
  var behaviour = FakeDevice.Behaviour()
  behaviour.getFailure = CaptureError(.communicationError, "the fake scanner did not answer")
  behaviour.triggerFailure = .notSupported("fake")
  let scanner = FakeDevice(
    DeviceInfo(id: id, name: "Fake scanner", type: .none),
    capabilities: Capabilities(
      readable: [.friendlyNameDevice], writable: [], triggers: [], events: [.decodedData]),
    behaviour: behaviour)
  scanner.feed(codes)
  return scanner
}

/// A scanner that takes every trigger and never reads a code: `trigger --wait` waits on it until its
/// own timeout, a signal or, run remotely, the cut at its deadline.
private func silentScanner(id: String) -> FakeDevice {
  var behaviour = FakeDevice.Behaviour()
  behaviour.removalOnClose = false
  return FakeDevice(
    DeviceInfo(id: id, name: "Silent scanner", type: .none),
    capabilities: Capabilities(readable: [], writable: [], triggers: [.start], events: [.decodedData]),
    start: .silent, behaviour: behaviour)
}

/// Device management without Bluetooth: `connect` of a D600 succeeds, and every call is recorded.
/// `silent`: it opens `silentScanner`s instead, which take a trigger and never read a code.
private func fakeSystem(codes: [String] = [], silent: Bool = false) -> FakeDeviceSystem {
  var answers = FakeDeviceSystem.Answers()
  answers.bluetoothd = true
  answers.discovered = [
    DiscoveredDeviceInfo(
      address: "00:11:22:7E:F6:19", addressType: "public", name: "Socket D600", rssi: -40, uuids: [],
      isSocketMobile: true, type: .scannerD600)
  ]
  answers.connectsAnyAs = "Socket D600"
  answers.unknown = { CaptureError(.notFound, "\($0) is not known to bluetoothd on hci0") }
  answers.pairingBarcodes = PairingBarcodes(
    host: "00:1A:7D:DA:71:13", linear: "#FNI001A7DDA7113#", twoDimensional: "#FNC SPP Initiator 001A7DDA7113#"
  )
  answers.opens = { request in
    silent
      ? silentScanner(id: request.selector.description)
      : fakeScanner(id: request.selector.description, codes: codes)
  }
  return FakeDeviceSystem(answers)
}

/// Runs `arguments` through CaptureCLI.run with `system`, stdout and stderr captured in files.
private func run(_ arguments: [String], system: FakeDeviceSystem, state: StateStore) async throws
  -> CommandRun
{
  try await runCommand(arguments, system: system, state: state)
}

@Suite("commands end to end through a Context with fake device management")
struct ContextCommandTests {
  @Test(
    "connect ADDR: the device management connects (no --pair asked), the device is remembered, its arrival printed"
  )
  func connectRemembers() async throws {
    let temporary = TemporaryDirectory()
    let system = fakeSystem()
    let state = temporary.stateStore()
    let result = try await run(
      ["connect", "00:11:22:7e:f6:19", "--alias", "dock"], system: system, state: state)
    #expect(result.status == 0)
    #expect(result.stdout == "00:11:22:7E:F6:19\tSocket D600\tScannerD600\n")
    #expect(result.stderr == "")
    #expect(system.calls == ["connect 00:11:22:7E:F6:19 pair=false adapter=-"])
    let remembered = try state.load().devices
    #expect(remembered.map(\.id) == ["00:11:22:7E:F6:19"])
    #expect(remembered.first?.alias == "dock")
    #expect(remembered.first?.transport == "ble")
    #expect(remembered.first?.type == DeviceType.scannerD600.rawValue)
  }

  @Test(
    "listen DEVICE --count 2: the listen subscriber prints exactly two codes and the removal stops it, exit 0"
  )
  func listenCount() async throws {
    let temporary = TemporaryDirectory()
    let system = fakeSystem(codes: ["first", "second", "third"])
    let result = try await run(
      ["listen", "serial:/dev/ttyFAKE", "--count", "2"], system: system, state: temporary.stateStore())
    #expect(result.status == 0)
    #expect(result.stdout == "first\nsecond\n")
    #expect(system.calls == ["open serial:/dev/ttyFAKE"])
  }

  @Test("listen DEVICE --timeout: the codes, then exit 42 with one error line rendered by CaptureCLI.run")
  func listenTimeout() async throws {
    let temporary = TemporaryDirectory()
    let system = fakeSystem(codes: ["only"])
    let result = try await run(
      ["--json", "listen", "serial:/dev/ttyFAKE", "--count", "5", "--timeout", "300ms"], system: system,
      state: temporary.stateStore())
    #expect(result.status == 42)
    #expect(
      result.stderr == "capture: ESKT_REQUESTTIMEDOUT (-42): --timeout ran out after 1 decoded code(s)\n")
    let lines = result.stdout.split(separator: "\n").map(String.init)
    #expect(lines.count == 4)
    #expect(lines.first?.contains(#""event":"deviceArrival""#) == true)
    #expect(lines[1].contains(#""text":"only""#))
    #expect(lines[2].contains(#""event":"deviceRemoval""#))
    #expect(
      lines.last
        == #"{"error":{"code":-42,"message":"--timeout ran out after 1 decoded code(s)","name":"ESKT_REQUESTTIMEDOUT"}}"#
    )
  }

  @Test(
    "get of a property the device fails: one stderr line and, with --json, the bare error object; exit 38")
  func getFailure() async throws {
    let temporary = TemporaryDirectory()
    let result = try await run(
      ["--json", "get", "serial:/dev/ttyFAKE", "friendly-name"], system: fakeSystem(),
      state: temporary.stateStore())
    #expect(result.status == 38)
    #expect(result.stderr == "capture: ESKT_COMMUNICATIONERROR (-38): the fake scanner did not answer\n")
    #expect(
      result.stdout
        == #"{"error":{"code":-38,"message":"the fake scanner did not answer","name":"ESKT_COMMUNICATIONERROR"}}"#
        + "\n")
  }

  @Test("partnership status: the device management's NOTFOUND is the command's error, rendered once")
  func partnershipNotFound() async throws {
    let temporary = TemporaryDirectory()
    let result = try await run(
      ["partnership", "status", "00:11:22:33:44:55"], system: fakeSystem(), state: temporary.stateStore())
    #expect(result.status == 17)
    #expect(
      result.stderr == "capture: ESKT_NOTFOUND (-17): 00:11:22:33:44:55 is not known to bluetoothd on hci0\n")
    #expect(result.stdout == "")
  }

  @Test("discover goes through the device management: one line per device found")
  func discoverFake() async throws {
    let temporary = TemporaryDirectory()
    let system = fakeSystem()
    let result = try await run(
      ["discover", "--le", "--timeout", "1s"], system: system, state: temporary.stateStore())
    #expect(result.status == 0)
    #expect(result.stdout == "00:11:22:7E:F6:19\tSocket D600\tScannerD600\t-40\n")
    #expect(system.calls == ["discover le 1.0 seconds"])
  }
}

/// A remote command cut at its deadline (CommandService cancels the runner's task) ends as the command
/// line does on SIGINT, releasing its device, instead of waiting for its own timeout (docs/fleet.md §5, --mqtt-command-timeout).
@Suite("Remote commands: the cut ends the command", .timeLimit(.minutes(5)))
struct RemoteCutRunTests {
  @Test("a remote trigger --wait --timeout 1h, cut: ends at once with ESKT_CANCEL, its device closed")
  func triggerWaitCut() async throws {
    let temporary = TemporaryDirectory()
    let system = fakeSystem(silent: true)
    let state = temporary.stateStore()
    let output = Output(mode: .json, quiet: true, verbose: false, noColor: true)
    let context = Context(globals: GlobalOptions(), output: output, state: state, system: system)
    let runner = RemoteRunner(context: context, engine: CaptureEngine(system: system, store: state))
    let run = Task {
      await runner.run(["trigger", "tcp://10.0.0.9", "start", "--wait", "--timeout", "1h"], nil)
    }
    let opened = ContinuousClock.now.advanced(by: .seconds(120))
    while system.opened.isEmpty && ContinuousClock.now < opened {
      try await Task.sleep(for: .milliseconds(5))
    }
    let scanner = try #require(system.opened.first as? FakeDevice)
    let cut = ContinuousClock.now
    run.cancel()
    let (exit, _) = await run.value
    // The trigger waits up to an hour by itself: ending within the hang guard is ending by the cut.
    #expect(ContinuousClock.now - cut < .seconds(120))
    #expect(exit == 91, "ESKT_CANCEL, as trigger ends on SIGINT")
    #expect(scanner.closed)
  }

  @Test("an engine device lent to a command and closed before its events are asked for: they end at once")
  func lentDeviceClosedFirst() async {
    let temporary = TemporaryDirectory()
    let system = fakeSystem(silent: true)
    let state = temporary.stateStore()
    let engine = CaptureEngine(system: system, store: state)
    let lent = LentDevice(silentScanner(id: "tcp://10.0.0.9"), engine: engine)
    await lent.close()
    var count = 0
    for await _ in lent.events { count += 1 }
    #expect(count == 0)
  }
}

/// A remote command's reply is made of the documents the command produced, kept as values
/// (Output(collecting:)): no temporary file, nothing parsed back from text, no stderr line in it.
@Suite("Remote commands: the reply takes the command's documents as values", .timeLimit(.minutes(5)))
struct RemoteDocumentTests {
  fileprivate static func runner(_ system: FakeDeviceSystem, state: StateStore) -> RemoteRunner {
    let output = Output(mode: .json, quiet: true, verbose: false, noColor: true)
    let context = Context(globals: GlobalOptions(), output: output, state: state, system: system)
    return RemoteRunner(context: context, engine: CaptureEngine(system: system, store: state))
  }

  @Test("a remote list answers with its one document, the value list made")
  func listIsOneDocument() async {
    let temporary = TemporaryDirectory()
    let (exit, documents) = await Self.runner(fakeSystem(), state: temporary.stateStore()).run(["list"], nil)
    #expect(exit == 0)
    // SocketCam is always listed (docs/architecture.md); nothing is remembered in the sandbox.
    let socketCam: JSON = .object([
      "id": .string("socketcam"), "name": .string("SocketCam C820"), "type": .int(5),
      "typeName": .string("SocketCamC820"), "transport": .string("socketcam"), "state": .string("enabled"),
    ])
    #expect(documents == [.object(["devices": .array([socketCam]), "favorite": .string("")])])
  }

  @Test("a remote get that read nothing answers with the contract's error object alone, not its stderr line")
  func failedGetIsTheErrorDocument() async {
    let temporary = TemporaryDirectory()
    let (exit, documents) = await Self.runner(fakeSystem(), state: temporary.stateStore()).run(
      ["get", "tcp://10.0.0.9", "friendly-name"], nil)
    let error = CaptureError(.communicationError, "the fake scanner did not answer")
    #expect(exit == ExitStatus.of(error.code))
    #expect(documents == [Render.errorDocument(error)])
  }

  @Test("a remote usage error answers with the error object; the usage text (stderr) is not a document")
  func usageErrorIsTheErrorDocument() async throws {
    let temporary = TemporaryDirectory()
    let (exit, documents) = await Self.runner(fakeSystem(), state: temporary.stateStore()).run(["get"], nil)
    #expect(exit == 18)
    #expect(documents.count == 1)
    guard case .object(let members) = try #require(documents.first),
      case .object(let error)? = members["error"]
    else {
      Issue.record("not an error document: \(documents)")
      return
    }
    #expect(error["name"] == .string("ESKT_INVALIDPARAMETER"))
  }

  @Test("the documents kept stop at the reply's limit: later ones are dropped and counted, none after a gap")
  func collectorIsBounded() {
    // "aaaaaaaaaa" serializes to 12 bytes, 13 with its line end.
    let collector = DocumentCollector(limit: 20)
    collector.append(.string("aaaaaaaaaa"))
    collector.append(.string("bbbbbbbbbb"))
    collector.append(.int(1))
    #expect(collector.documents == [.string("aaaaaaaaaa")])
    #expect(collector.dropped == 2)
  }
}

/// What the runner asked of the front ends, in order.
private final class StepLog: Sendable {
  private let steps = Mutex<[String]>([])
  func add(_ step: String) { steps.withLock { $0.append(step) } }
  var all: [String] { steps.withLock { $0 } }
}

/// A front end that records what the runner asks of it, in one log shared by several.
private final class RecordingFrontEnd: FrontEnd {
  let name: String
  let log: StepLog
  let prepareFailure: CaptureError?
  /// Started, it ends the run with this failure (as a broker refusing the password does).
  let startFailure: CaptureError?
  private let failed = Mutex<CaptureError?>(nil)

  init(
    _ name: String, log: StepLog, prepareFailure: CaptureError? = nil,
    startFailure: CaptureError? = nil
  ) {
    self.name = name
    self.log = log
    self.prepareFailure = prepareFailure
    self.startFailure = startFailure
  }

  private func note(_ step: String) { log.add("\(name) \(step)") }

  func prepare(_ engine: CaptureEngine) async throws(CaptureError) {
    note("prepare")
    if let prepareFailure { throw prepareFailure }
  }
  func start(_ engine: CaptureEngine, host: FrontEndHost) async throws(CaptureError) {
    note("start")
    if let startFailure {
      failed.withLock { $0 = startFailure }
      host.finish()
    }
  }
  func engineStarted() throws(CaptureError) { note("engineStarted") }
  func stopping(interrupted: Bool) { note("stopping \(interrupted)") }
  func stop() async { note("stop") }
  var failure: CaptureError? { failed.withLock { $0 } }
}

/// listen and serve are the engine run with front ends (EngineRun, docs/engine.md §1): one order of
/// start-up and shutdown, one exit status.
@Suite("EngineRun: front ends started in order, stopped in reverse", .timeLimit(.minutes(5)))
struct EngineRunTests {
  /// Runs under `isNested`, so the process's signal handling is left alone (as a remote command's is).
  fileprivate static func run(
    _ frontEnds: [any FrontEnd], log: StepLog, engine: CaptureEngine, device: (any Device)? = nil,
    stopWhileRunning: Bool = true
  ) async -> Result<CommandOutcome, CaptureError> {
    let run = EngineRun(engine: engine, frontEnds: frontEnds, serving: false, servesEmpty: false) { _ in }
    return await Interruption.$isNested.withValue(true) {
      do throws(CaptureError) {
        let outcome = try await run.run(
          open: { () throws(CaptureError) in
            log.add("open")
            return device.map { [$0] } ?? []
          },
          running: { _ in
            log.add("running")
            if stopWhileRunning { await engine.stop() }
          },
          outcome: { _ in .success })
        return .success(outcome)
      } catch {
        return .failure(error)
      }
    }
  }

  @Test("prepared, devices opened, started and told the engine runs in order; stopped in reverse")
  func order() async throws {
    let temporary = TemporaryDirectory()
    let log = StepLog()
    let engine = CaptureEngine(system: fakeSystem(silent: true), store: temporary.stateStore())
    let device = silentScanner(id: "tcp://10.0.0.9")
    let result = await Self.run(
      [RecordingFrontEnd("A", log: log), RecordingFrontEnd("B", log: log)], log: log, engine: engine,
      device: device)
    #expect(try result.get().status == ResultCode.noError)
    #expect(
      log.all
        == [
          "A prepare", "B prepare", "open", "A start", "B start", "A engineStarted", "B engineStarted",
          "running",
          "B stop", "A stop",
        ])
    #expect(device.closed, "the engine closed the device it was handed")
  }

  @Test("a front end that cannot be prepared fails the run: no device is opened, those before it are stopped")
  func failedPrepare() async {
    let temporary = TemporaryDirectory()
    let log = StepLog()
    let engine = CaptureEngine(system: fakeSystem(silent: true), store: temporary.stateStore())
    let inUse = CaptureError(.alreadyExisting, "port 18481 is in use")
    let result = await Self.run(
      [
        RecordingFrontEnd("A", log: log), RecordingFrontEnd("B", log: log, prepareFailure: inUse),
        RecordingFrontEnd("C", log: log),
      ], log: log, engine: engine)
    #expect(throws: inUse) { try result.get() }
    #expect(log.all == ["A prepare", "B prepare", "A stop"])
  }

  @Test("a front end's failure ends the run and is its error, before the command's own outcome")
  func frontEndFailure() async throws {
    let temporary = TemporaryDirectory()
    let log = StepLog()
    let engine = CaptureEngine(system: fakeSystem(silent: true), store: temporary.stateStore())
    let refused = CaptureError(.commandDenied, "the broker refused the password")
    let device = silentScanner(id: "tcp://10.0.0.9")
    let result = await Self.run(
      [RecordingFrontEnd("A", log: log, startFailure: refused), RecordingFrontEnd("B", log: log)], log: log,
      engine: engine, device: device, stopWhileRunning: false)
    let outcome = try result.get()
    #expect(outcome.status == ResultCode.commandDenied && outcome.errors == [refused])
    #expect(Array(log.all.suffix(2)) == ["B stop", "A stop"])
  }
}
