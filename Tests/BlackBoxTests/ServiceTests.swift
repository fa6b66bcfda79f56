// `listen` without DEVICE as a long-running service: every remembered device
// and the favourites, each on its own, absent ones retried, SIGHUP re-reading the state file.

import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

private let d600 = "00:11:22:7E:F6:19"
private let s550 = "00:11:22:33:44:55"
private let generic = "00:11:22:99:99:99"
private let directEventsUUID = "23d33996-e604-4f8b-baf7-547944030552"

/// One device entry of a state file written by hand, as `connect` would have remembered it.
private struct Entry {
  var id: String
  var name: String
  var type: Int
  var transport: String
}

/// Writes the sandbox's state file directly (another helper owns `set manager favorite`).
private func writeState(_ sandbox: Sandbox, _ entries: [Entry], favorite: String = "") throws {
  func quoted(_ s: String) -> String {
    "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
  }
  let devices = entries.map {
    "{\"id\":\(quoted($0.id)),\"name\":\(quoted($0.name)),\"type\":\($0.type),\"transport\":\(quoted($0.transport))}"
  }
  try sandbox.write(
    "state/capture/devices.json",
    "{\"schemaVersion\":1,\"devices\":[\(devices.joined(separator: ","))],\"favorite\":\(quoted(favorite))}\n"
  )
}

/// The listen's pid, for signals sent when the test is ready.
private final class ChildPID: Sendable {
  private let pid = Mutex<pid_t>(0)
  func set(_ value: pid_t) { pid.withLock { $0 = value } }
  func send(_ signal: Int32) {
    let target = pid.withLock { $0 }
    #expect(target > 0, "the listen was not started")
    if target > 0 { kill(target, signal) }
  }
}

/// (device id, event kind) for every event of the stream, in order.
private func stream(_ outcome: Outcome) -> [(id: String, kind: String)] {
  Shape.jsonLines(outcome).map { ($0["device"]?["id"]?.string ?? "?", $0["event"]?.string ?? "?") }
}

private func kinds(_ outcome: Outcome, of id: String) -> [String] {
  stream(outcome).filter { $0.id == id }.map(\.kind)
}

private func decodedTexts(_ outcome: Outcome) -> [String] {
  Shape.jsonLines(outcome).filter { $0["event"]?.string == "decodedData" }.compactMap { $0["text"]?.string }
}

/// Polls until no capture process holds a notify session on `uuid` of the device.
private func waitForNoListener(_ rig: BlueZRig, _ address: String, uuid: String) async throws {
  try await waitUntil("the end of the notify session on \(uuid)", every: .milliseconds(100)) {
    try await !rig.ctl("GetState", BlueZRig.devicePath(address)).contains(uuid)
  }
}

@Suite("listen as a service (no DEVICE)", .serialized)
struct ServiceTests {
  @Test(
    "a remembered D600 absent at start: one warning, then its arrival and data once bluetoothd has it",
    arguments: [true, false])
  func absentAtStart(_ bonded: Bool) async throws {
    try await withRig { rig, sandbox in
      try writeState(sandbox, [Entry(id: d600, name: "Socket D600 [7EF619]", type: 327701, transport: "ble")])
      let monitor = try await BusMonitor(rig, member: "GetManagedObjects")
      async let listening = sandbox.capture(["--json", "listen", "--count", "1"], timeLimit: 120)
      // Several attempts (each starts with GetManagedObjects; the watch for the device makes one
      // more): the warning must still come once.
      await monitor.waitForCalls(5)
      await monitor.stop()
      // bonded: bluetoothd loads it from storage at once; otherwise only discovery finds it.
      try await rig.ctl(
        "AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", bonded ? "true" : "false")
      try await waitForBringUp(rig, d600)
      try await scanText(rig, d600, "4F", "late")
      let outcome = try await listening
      #expect(outcome.status == 0, "\(outcome)")
      #expect(stream(outcome).map(\.kind) == ["deviceArrival", "decodedData", "deviceRemoval"], "\(outcome)")
      #expect(kinds(outcome, of: d600).count == 3)
      #expect(decodedTexts(outcome) == ["late"])
      #expect(
        outcome.errLines == [
          "capture: \(d600): \(d600) is not known to bluetoothd on hci0; run capture discover first; trying again in the background"
        ], "\(outcome)")
    }
  }

  @Test("favorite '*': a Socket Mobile device discovery finds is connected, remembered and listened to")
  func favoriteAny() async throws {
    try await withRig { rig, sandbox in
      try writeState(sandbox, [], favorite: "*")
      try await rig.ctl("AddLEDevice", s550, "S550 [334455]", "s550", "--", "-60", "false")
      try await rig.ctl("AddLEDevice", generic, "Thermometer", "generic", "--", "-70", "false")
      async let listening = sandbox.capture(["--json", "listen", "--count", "1"], timeLimit: 120)
      try await waitForListener(rig, s550, uuid: directEventsUUID)
      try await rig.ctl("TagRead", BlueZRig.devicePath(s550), "02C40044F99DB6", "text:hello tag", "1")
      let outcome = try await listening
      #expect(outcome.status == 0, "\(outcome)")
      #expect(outcome.stderr.isEmpty, "\(outcome)")
      #expect(
        stream(outcome).map { "\($0.id) \($0.kind)" } == [
          "\(s550) deviceArrival", "\(s550) decodedData", "\(s550) deviceRemoval",
        ], "\(outcome)")
      #expect(decodedTexts(outcome) == ["hello tag"])
      // Remembered the way `connect` does; the thermometer is no Socket Mobile device.
      let state = try parseJSON(String(decoding: try sandbox.read(sandbox.statePath), as: UTF8.self))
      let devices = state["devices"]?.array ?? []
      #expect(devices.count == 1, "\(state)")
      #expect(devices.first?["id"]?.string == s550)
      #expect(devices.first?["name"]?.string == "S550 [334455]")
      #expect(devices.first?["type"]?.int == 327702)
      #expect(devices.first?["transport"]?.string == "ble")
      #expect(devices.first?["lastSeen"]?.string.map { Shape.isTime(.string($0)) } == true)
      #expect(state["favorite"]?.string == "*")
    }
  }

  @Test(
    "favorite '*' while bluetoothd is down: one warning, and the device is connected once bluetoothd is back")
  func favoriteAnyAfterBluetoothdReturns() async throws {
    try await withRig { rig, sandbox in
      try writeState(sandbox, [], favorite: "*")
      try await rig.ctl("AddLEDevice", s550, "S550 [334455]", "s550", "--", "-60", "false")
      // bluetoothd stops: the bus stays, org.bluez goes.
      try await rig.stopBluez()
      let monitor = try await BusMonitor(rig, member: "NameHasOwner")
      async let listening = sandbox.capture(["--json", "listen", "--count", "1"], timeLimit: 120)
      // Several discovery attempts fail meanwhile (each asks whether org.bluez has an owner); one
      // warning says so.
      await monitor.waitForCalls(4)
      await monitor.stop()
      try await rig.restartBluez()
      try await waitForListener(rig, s550, uuid: directEventsUUID)
      try await rig.ctl("TagRead", BlueZRig.devicePath(s550), "02C40044F99DB6", "text:back", "1")
      let outcome = try await listening
      #expect(outcome.status == 0, "\(outcome)")
      #expect(decodedTexts(outcome) == ["back"])
      #expect(kinds(outcome, of: s550) == ["deviceArrival", "decodedData", "deviceRemoval"], "\(outcome)")
      #expect(
        outcome.errLines == [
          "capture: cannot discover Bluetooth devices (no Bluetooth: org.bluez has no owner: bluetoothd is not running (is bluez installed? sudo apt-get install bluez); fix: sudo systemctl enable --now bluetooth (capture doctor checks the host)); trying again in the background"
        ], "\(outcome)")
    }
  }

  @Test("--confirm in the service tells the remembered D600 the verdict: confirmed true")
  func confirmInService() async throws {
    try await withRig { rig, sandbox in
      try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
      try writeState(sandbox, [Entry(id: d600, name: "Socket D600 [7EF619]", type: 327701, transport: "ble")])
      async let listening = sandbox.capture(
        ["--json", "listen", "--count", "1", "--confirm", "grep -q ok"], timeLimit: 120)
      try await waitForBringUp(rig, d600)
      try await rig.ctl("ClearWrites", BlueZRig.devicePath(d600))
      try await scanText(rig, d600, "4F", "ok-code")
      let outcome = try await listening
      #expect(outcome.status == 0, "\(outcome)")
      let decoded = Shape.jsonLines(outcome).filter { $0["event"]?.string == "decodedData" }
      #expect(decoded.count == 1)
      #expect(decoded.first?["confirmation"]?.string == "good")
      #expect(decoded.first?["confirmed"] == .bool(true))
      let writes = try await rig.ctl("GetWrites", BlueZRig.devicePath(d600))
      #expect(writes.lowercased().contains("833a2364-bca0-4647-8113-478e1fc449ba"), "\(writes)")
    }
  }

  @Test("SIGHUP after another capture connect: the newly remembered device is listened to as well")
  func hangUpAddsDevice() async throws {
    try await withRig { rig, sandbox in
      try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
      try await rig.ctl("AddLEDevice", s550, "S550 [334455]", "s550", "--", "-60", "true")
      try writeState(sandbox, [Entry(id: d600, name: "Socket D600 [7EF619]", type: 327701, transport: "ble")])
      let child = ChildPID()
      async let listening = sandbox.capture(
        ["--json", "listen", "--count", "2"], timeLimit: 120,
        interaction: Interaction(started: { child.set($0) }))
      try await waitForBringUp(rig, d600)
      let connected = try await sandbox.capture(["connect", s550])
      #expect(connected.status == 0, "\(connected)")
      child.send(SIGHUP)
      try await waitForListener(rig, s550, uuid: directEventsUUID)
      try await rig.ctl("TagRead", BlueZRig.devicePath(s550), "02C40044F99DB6", "text:hello tag", "1")
      try await scanText(rig, d600, "4F", "dock code")
      let outcome = try await listening
      #expect(outcome.status == 0, "\(outcome)")
      #expect(outcome.stderr.isEmpty, "\(outcome)")
      #expect(decodedTexts(outcome).sorted() == ["dock code", "hello tag"], "\(outcome)")
      #expect(kinds(outcome, of: s550) == ["deviceArrival", "decodedData", "deviceRemoval"], "\(outcome)")
      #expect(kinds(outcome, of: d600) == ["deviceArrival", "decodedData", "deviceRemoval"], "\(outcome)")
    }
  }

  @Test(
    "SIGHUP after a device left the state file: its removal; a corrupt file on SIGHUP: one warning, nothing stops"
  )
  func hangUpRemovesDevice() async throws {
    try await withRig { rig, sandbox in
      try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
      try await rig.ctl("AddLEDevice", s550, "S550 [334455]", "s550", "--", "-60", "true")
      let dock = Entry(id: d600, name: "Socket D600 [7EF619]", type: 327701, transport: "ble")
      try writeState(sandbox, [dock, Entry(id: s550, name: "S550 [334455]", type: 327702, transport: "ble")])
      let child = ChildPID()
      let watch = OutputWatch()
      async let listening = sandbox.capture(
        ["--json", "listen"], timeLimit: 120,
        interaction: Interaction(started: { child.set($0) }, watch: watch))
      try await waitForBringUp(rig, d600)
      try await waitForListener(rig, s550, uuid: directEventsUUID)

      try sandbox.write("state/capture/devices.json", "{ not json")
      child.send(SIGHUP)
      // The reload is over once its warning is out; only then does "still listening" mean anything.
      await watch.waitForLine(.stderr, containing: "capture: SIGHUP: state file")
      #expect(try await rig.ctl("GetState", BlueZRig.devicePath(s550)).contains(directEventsUUID))

      try writeState(sandbox, [dock])
      child.send(SIGHUP)
      try await waitForNoListener(rig, s550, uuid: directEventsUUID)
      child.send(SIGTERM)
      let outcome = try await listening
      #expect(outcome.status == 0, "\(outcome)")
      #expect(kinds(outcome, of: s550) == ["deviceArrival", "deviceRemoval"], "\(outcome)")
      #expect(kinds(outcome, of: d600) == ["deviceArrival", "deviceRemoval"], "\(outcome)")
      // The corrupt file is moved aside (kept, never overwritten) and named; the running set stays.
      #expect(outcome.errLines.count == 1, "\(outcome)")
      let line = outcome.errLines.first ?? ""
      #expect(
        line.hasPrefix(
          "capture: SIGHUP: state file \(sandbox.statePath) is corrupt (not a complete JSON object); moved it to \(sandbox.statePath).corrupt-"
        ), "\(outcome)")
      #expect(line.hasSuffix("; still listening to the devices read before"), "\(outcome)")
    }
  }

  @Test(
    "no bluetoothd: one warning each for discovery and the BLE device, and a serial scanner absent at start still arrives"
  )
  func noBluetoothdSerialLater() async throws {
    let sandbox = try Sandbox()
    let pty = try ScannerPTY()
    let link = sandbox.path("scanner")
    let selector = "serial:\(link)"
    try writeState(
      sandbox,
      [
        Entry(id: selector, name: "Till scanner", type: 0, transport: "serial"),
        Entry(id: d600, name: "Socket D600 [7EF619]", type: 327701, transport: "ble"),
      ], favorite: "*")
    let watch = OutputWatch()
    let writer = Task {
      // The scanner appears only after every first attempt has failed and been reported: the serial
      // scanner's, the D600's and discovery's.
      await watch.waitForLines(.stderr, "the three warnings", count: 3) {
        $0.hasSuffix("; trying again in the background")
      }
      guard symlink(pty.slavePath, link) == 0 else { return false }
      guard await pty.waitUntilOpened() else { return false }
      pty.write(sppFrame("EQ0000013158", aim: "C0"))
      return true
    }
    let outcome = try await sandbox.capture(
      ["--json", "listen", "--count", "1"], timeLimit: 120, interaction: watch.interaction)
    #expect(await writer.value, "capture never opened \(link)")
    #expect(outcome.status == 0, "\(outcome)")
    #expect(
      stream(outcome).map { "\($0.id) \($0.kind)" } == [
        "\(selector) deviceArrival", "\(selector) decodedData", "\(selector) deviceRemoval",
      ], "\(outcome)")
    #expect(decodedTexts(outcome) == ["EQ0000013158"])
    let warnings = outcome.errLines
    #expect(warnings.count == 3, "\(outcome)")
    #expect(
      warnings.contains(
        "capture: \(selector): serial device \(link) not found; trying again in the background"), "\(outcome)"
    )
    #expect(
      warnings.filter {
        $0.hasPrefix("capture: \(d600): ") && $0.hasSuffix("; trying again in the background")
      }
      .count == 1, "\(outcome)")
    #expect(
      warnings.filter {
        $0.hasPrefix("capture: cannot discover Bluetooth devices (")
          && $0.hasSuffix("; trying again in the background")
      }.count == 1, "\(outcome)")
  }

  @Test(
    "entries retrying cannot fix are reported once each (error events, exit status) and the rest is listened to"
  )
  func permanentErrors() async throws {
    let sandbox = try Sandbox()
    let pty = try ScannerPTY()
    let good = "serial:\(pty.slavePath)"
    let badBaud = "serial:/dev/null?baud=12345"
    try writeState(
      sandbox,
      [
        Entry(id: "bogus", name: "Old entry", type: 0, transport: "ble"),
        Entry(id: badBaud, name: "Bad baud", type: 0, transport: "serial"),
        Entry(id: good, name: "Till scanner", type: 0, transport: "serial"),
      ])
    let writer = Task {
      guard await pty.waitUntilOpened() else { return false }
      pty.write(sppFrame("EQ0000013158", aim: "C0"))
      return true
    }
    let outcome = try await sandbox.capture(["--json", "listen", "--count", "1"], timeLimit: 120)
    #expect(await writer.value, "capture never opened \(pty.slavePath)")
    // The first error found decides the exit status: the unusable id, found when the file is read.
    #expect(outcome.status == 85, "\(outcome)")
    #expect(decodedTexts(outcome) == ["EQ0000013158"])
    let skipped = "; skipped until the state file is re-read (SIGHUP)"
    #expect(outcome.errLines.count == 2, "\(outcome)")
    #expect(
      outcome.errLines.contains(
        "capture: ESKT_INVALIDFORMAT (-85): remembered device id 'bogus' is not a Bluetooth address or a tcp://, serial: or hid: device\(skipped)"
      ), "\(outcome)")
    #expect(
      outcome.errLines.contains {
        $0.hasPrefix("capture: ESKT_INVALIDPARAMETER (-18): \(badBaud): unsupported baud rate '12345'")
          && $0.hasSuffix(skipped)
      }, "\(outcome)")
    let errors = Shape.jsonLines(outcome).filter { $0["event"]?.string == "error" }
    #expect(
      errors.map { "\($0["device"]?["id"]?.string ?? "?") \($0["error"]?["code"]?.int ?? 0)" }.sorted() == [
        "bogus -85", "\(badBaud) -18",
      ])
    #expect(kinds(outcome, of: good) == ["deviceArrival", "decodedData", "deviceRemoval"])
  }

  @Test("only unusable entries and favorites off: each is reported and listen ends at once with 85")
  func nothingUsable() async throws {
    let sandbox = try Sandbox()
    try writeState(sandbox, [Entry(id: "bogus", name: "Old entry", type: 0, transport: "ble")])
    let outcome = try await sandbox.capture(["listen"], timeLimit: 120)
    Shape.expectFailure(
      outcome, status: 85, name: "ESKT_INVALIDFORMAT",
      message:
        "remembered device id 'bogus' is not a Bluetooth address or a tcp://, serial: or hid: device; skipped until the state file is re-read (SIGHUP)"
    )
  }

  @Test("--events and --timeout across two remembered serial scanners: each code once, then exit 42")
  func eventsAndTimeoutAcrossDevices() async throws {
    let sandbox = try Sandbox()
    let first = try ScannerPTY()
    let second = try ScannerPTY()
    try writeState(
      sandbox,
      [
        Entry(id: "serial:\(first.slavePath)", name: "Till 1", type: 0, transport: "serial"),
        Entry(id: "serial:\(second.slavePath)", name: "Till 2", type: 0, transport: "serial"),
      ])
    let writer = Task {
      guard await first.waitUntilOpened(), await second.waitUntilOpened() else { return false }
      first.write(sppFrame("EQ0000013158", aim: "C0"))
      second.write(sppFrame("4006381333931", aim: "E0"))
      return true
    }
    let outcome = try await sandbox.capture(
      // The window holds capture's start and both opens on a loaded machine; it is the behaviour
      // under test, so it is not cut short.
      ["--json", "listen", "--events", "decodedData", "--timeout", "20s"], timeLimit: 120)
    #expect(await writer.value, "capture never opened both ptys")
    #expect(outcome.status == 42, "\(outcome)")
    #expect(
      outcome.errLines == ["capture: ESKT_REQUESTTIMEDOUT (-42): --timeout ran out after 2 decoded code(s)"],
      "\(outcome)")
    let lines = Shape.jsonLines(outcome)
    #expect(lines.last?["error"]?["code"]?.int == -42)
    let decoded = lines.dropLast()
    #expect(decoded.allSatisfy { $0["event"]?.string == "decodedData" }, "\(outcome)")
    #expect(
      decoded.map { "\($0["device"]?["id"]?.string ?? "?") \($0["text"]?.string ?? "?")" }.sorted()
        == [
          "serial:\(first.slavePath) EQ0000013158", "serial:\(second.slavePath) 4006381333931",
        ].sorted(), "\(outcome)")
  }
}
