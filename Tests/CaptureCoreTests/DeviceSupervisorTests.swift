import Synchronization
import TestSupport
import Testing

@testable import CaptureCore

/// A device whose stream opens with its arrival and ends with a removal on close(), as drivers do;
/// it counts the events its consumer has taken.
private func scriptedDevice(_ info: DeviceInfo) -> FakeDevice {
  var behaviour = FakeDevice.Behaviour()
  behaviour.triggerFailure = .notSupported("scripted")
  return FakeDevice(info, behaviour: behaviour, counted: true)
}

/// Answers each open with the next scripted error, then with the device.
private final class ScriptedOpener: DeviceOpener, Sendable {
  private let failures: Mutex<[CaptureError]>
  let attempts = Mutex(0)
  let device: FakeDevice

  init(failures: [CaptureError], device: FakeDevice) {
    self.failures = Mutex(failures)
    self.device = device
  }

  func open(_ request: OpenRequest, state: StateStore) async throws(CaptureError) -> any Device {
    attempts.withLock { $0 += 1 }
    if let failure = failures.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { throw failure }
    return device
  }
}

/// The warnings a supervisor gave.
private final class Warnings: Sendable {
  private let lines = Mutex<[String]>([])
  func add(_ line: String) { lines.withLock { $0.append(line) } }
  var all: [String] { lines.withLock { $0 } }
}

private let info = DeviceInfo(id: "serial:/dev/ttyTEST", name: "Test scanner", type: .none)

private func supervisor(_ opener: ScriptedOpener, warnings: Warnings) -> DeviceSupervisor {
  DeviceSupervisor(
    id: info.id, info: info, request: OpenRequest(selector: .serial(path: "/dev/ttyTEST", parameters: [:])),
    opener: opener, store: StateStore(directory: "/nonexistent"),
    backoff: .init(initial: .milliseconds(5), maximum: .milliseconds(20)),
    warn: { warnings.add($0) })
}

private func kind(_ event: Event) -> String { event.kind.rawValue }

@Suite("Device supervisor (listen as a service)")
struct DeviceSupervisorTests {
  @Test("an absent device is tried again until it opens: one warning for the whole outage, then its events")
  func retriesUntilOpen() async throws {
    let device = scriptedDevice(info)
    let absent = CaptureError(.fileNotFound, "serial device /dev/ttyTEST not found")
    let opener = ScriptedOpener(failures: Array(repeating: absent, count: 6), device: device)
    let warnings = Warnings()
    let watched = supervisor(opener, warnings: warnings)
    watched.start()
    var iterator = watched.events.makeAsyncIterator()
    let arrival = await iterator.next()
    #expect(arrival.map(kind) == "deviceArrival")
    #expect(opener.attempts.withLock { $0 } == 7)
    #expect(
      warnings.all == [
        "serial:/dev/ttyTEST: serial device /dev/ttyTEST not found; trying again in the background"
      ])
    #expect(watched.isOpen)
    device.feed(["after the outage"])
    let decoded = await iterator.next()
    if case .decodedData(let data)? = decoded?.payload {
      #expect(data.text == "after the outage")
    } else {
      Issue.record("expected decodedData, got \(String(describing: decoded))")
    }
    await watched.stop()
    #expect(await iterator.next().map(kind) == "deviceRemoval")
    #expect(await iterator.next() == nil)
  }

  @Test(
    "errors retrying cannot fix are reported once as an error event and the device is skipped",
    arguments: [ResultCode.invalidParameter, .notSupported, .fileAccessDenied, .bluetoothPermissionMissing])
  func permanentError(_ code: ResultCode) async throws {
    let opener = ScriptedOpener(failures: [CaptureError(code, "no way")], device: scriptedDevice(info))
    let warnings = Warnings()
    let watched = supervisor(opener, warnings: warnings)
    watched.start()
    var seen: [Event] = []
    for await event in watched.events { seen.append(event) }
    #expect(seen.count == 1)
    if case .error(let error)? = seen.first?.payload {
      #expect(error.code == code)
      #expect(
        error.message == "serial:/dev/ttyTEST: no way; skipped until the state file is re-read (SIGHUP)")
    } else {
      Issue.record("expected one error event, got \(seen)")
    }
    #expect(seen.first?.device == info)
    #expect(watched.hasGivenUp)
    #expect(opener.attempts.withLock { $0 } == 1)
    #expect(warnings.all.isEmpty)
  }

  @Test("stopping a device that never arrived ends its stream without a removal")
  func stopWhileAbsent() async throws {
    let opener = ScriptedOpener(
      failures: Array(repeating: CaptureError(.notFound, "not there"), count: 1000),
      device: scriptedDevice(info))
    let warnings = Warnings()
    let watched = supervisor(opener, warnings: warnings)
    watched.start()
    let retried = await eventually(until: .now + .seconds(120)) { opener.attempts.withLock { $0 } >= 3 }
    try #require(retried, "the supervisor did not try to open 3 times")
    await watched.stop()
    var seen: [Event] = []
    for await event in watched.events { seen.append(event) }
    #expect(seen.isEmpty)
    #expect(warnings.all == ["serial:/dev/ttyTEST: not there; trying again in the background"])
  }

  @Test("backoff is 0.25 s doubling to 5 s; absence and unavailability are retried, permissions are not")
  func backoffDefaults() {
    let backoff = Backoff()
    #expect(backoff.initial == .milliseconds(250))
    #expect(backoff.maximum == .seconds(5))
    var delays = backoff.delays()
    let first = (0..<7).map { _ in delays.next() }
    #expect(
      first == [
        .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(5),
        .seconds(5),
      ])
    delays.reset()
    #expect(delays.next() == .milliseconds(250))
    #expect(DeviceSupervisor.isPermanent(CaptureError(.fileNotFound, "")) == false)
    #expect(DeviceSupervisor.isPermanent(CaptureError(.notAvailable, "")) == false)
    #expect(DeviceSupervisor.isPermanent(CaptureError(.notFound, "")) == false)
    #expect(DeviceSupervisor.isPermanent(CaptureError(.fileAccessDenied, "")) == true)
  }

  /// Back-pressure in service mode (docs/architecture.md §2): while nobody takes the supervisor's events,
  /// forwarding waits once its queue is full (so the device's own queue fills and its reader stops); then
  /// every event arrives once, in order.
  @Test("forwarding stops at the queue's bound while the consumer is behind; nothing is lost")
  func forwardingIsBounded() async throws {
    let device = scriptedDevice(info)
    let opener = ScriptedOpener(failures: [], device: device)
    let watched = supervisor(opener, warnings: Warnings())
    let limit = watched.backlog.limit
    let total = limit * 2 + 10
    for i in 0..<total { device.feed(["C\(i)"]) }
    watched.start()
    let full = await eventually(until: .now + .seconds(120)) { watched.backlog.count >= limit }
    #expect(full, "the supervisor's queue never filled")
    // The forwarder has taken the event after the queue's last one from the device and holds it while
    // it waits for room: past the point where it would have pushed it.
    let holding = await eventually(until: .now + .seconds(120)) { device.taken == limit + 1 }
    #expect(holding, "the forwarder took \(device.taken) events, not the queue's \(limit) and one more")
    #expect(watched.backlog.count == limit)
    var texts: [String] = []
    for await event in watched.events {
      if case .decodedData(let data) = event.payload { texts.append(data.text) }
      if texts.count == total { break }
    }
    #expect(texts == (0..<total).map { "C\($0)" })
    #expect(watched.backlog.highWater == limit)
    await watched.stop()
  }
}
