// Notifications: NotificationsDevice on the devices that have it, and listen
// reading the setting first and setting it only when a wanted bit is off (docs/capture-sdk.md §7.6), against
// the BlueZ rig for BLE battery notifications and SocketCam for a device without the setting.

import Foundation
import Testing

private let generic = "00:11:22:99:99:98"
private let d600 = "00:11:22:7E:F6:18"
private let batteryLevelUUID = "00002a19-0000-1000-8000-00805f9b34fb"
private let scanDataUUID = "ce3e81b8-d871-4613-ba78-5ffc0b1520a6"
/// bluetoothd started with `-P battery`: 0x180F is exported as GATT (0x2A19 read + notify).
private let gattBattery = ["TemporaryTimeout": "2", "BatteryPlugin": "false"]

private func batteryEvents(_ outcome: Outcome) -> [JSONValue] {
  outcome.outLines.compactMap { try? parseJSON($0) }.filter { $0["event"]?.string == "batteryLevel" }
}

/// A stdout line that is a batteryLevel event: the moment a test stops its listen.
@Sendable private func isBatteryEvent(_ line: String) -> Bool {
  (try? parseJSON(line))?["event"]?.string == "batteryLevel"
}

/// The notify sessions on a characteristic (client unique names), from the rig's GetState.
private func sessions(_ rig: BlueZRig, _ address: String, _ uuid: String) async throws -> [String] {
  let state = try parseJSON(try await rig.ctl("GetState", BlueZRig.devicePath(address)))
  return state["NotifySessions"]?[uuid]?.array?.compactMap(\.string) ?? []
}

/// The CCCD writes the device received on a characteristic, as hex ("0100" on, "0000" off).
private func cccdWrites(_ rig: BlueZRig, _ address: String, _ uuid: String) async throws -> [String] {
  let writes = try parseJSON(try await rig.ctl("GetCccdWrites", BlueZRig.devicePath(address))).array ?? []
  return writes.filter { $0[0]?.string == uuid }.compactMap { $0[1]?.string }
}

/// Polls until `uuid` has exactly `count` notify sessions.
private func waitForSessions(_ rig: BlueZRig, _ address: String, _ uuid: String, count: Int) async throws {
  try await waitUntil("\(count) notify session(s) on \(uuid)", every: .milliseconds(100)) {
    try await sessions(rig, address, uuid).count == count
  }
}

@Suite("Notifications: battery, power and buttons events (rig)", .serialized)
struct NotificationTests {
  @Test(
    "listen --events batteryLevel turns 0x2A19 notifications on (one CCCD write) and a level change is a batteryLevel event; power is warned about"
  )
  func batteryEventFromGATT() async throws {
    try await withRig(gattBattery) { rig, sandbox in
      try await rig.ctl("AddLEDevice", generic, "Thermo [999998]", "generic", "--", "-50", "true")
      async let listening = sandbox.capture(
        ["--json", "listen", generic, "--events", "batteryLevel,power"], timeLimit: 120,
        interaction: .signal(SIGINT, once: { $0.contains(where: isBatteryEvent) }))
      try await waitForSessions(rig, generic, batteryLevelUUID, count: 1)
      try await rig.ctl("SetBattery", BlueZRig.devicePath(generic), "42")
      let outcome = try await listening
      #expect(outcome.status == 0, "SIGINT after the event: \(outcome)")
      let events = batteryEvents(outcome)
      #expect(events.count == 1, "\(outcome)")
      // ScanAPI packing (docs/capture-sdk.md §7.3): max 100 << 24 | min 0 << 16 | current 42 << 8.
      #expect(events.first?["percent"]?.int == 42)
      #expect(events.first?["current"]?.int == 42)
      #expect(events.first?["minimum"]?.int == 0)
      #expect(events.first?["maximum"]?.int == 100)
      #expect(events.first?["value"]?.int == (100 << 24) | (42 << 8))
      #expect(events.first?["device"]?["id"]?.string == generic)
      #expect(
        outcome.errLines.contains(
          "capture: Thermo [999998] cannot report power events (it has no notification for them)"),
        "\(outcome.err)")
      // Turned on once, and off when listen closed its session.
      #expect(try await cccdWrites(rig, generic, batteryLevelUUID) == ["0100", "0000"])
    }
  }

  @Test(
    "notifications already on (another listener's session): a second listen writes nothing, still gets the events, and takes over when the first one leaves"
  )
  func noWriteWhenAlreadyOn() async throws {
    try await withRig(gattBattery) { rig, sandbox in
      try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF618]", "d600", "--", "-50", "true")
      async let first = sandbox.capture(
        ["--json", "listen", d600, "--events", "batteryLevel"], timeLimit: 120,
        interaction: .signal(SIGINT, once: { $0.contains(where: isBatteryEvent) }))
      try await waitForSessions(rig, d600, batteryLevelUUID, count: 1)
      let firstSession = try await sessions(rig, d600, batteryLevelUUID)
      async let second = sandbox.capture(
        ["--json", "listen", d600, "--events", "batteryLevel"], timeLimit: 120,
        interaction: .signal(SIGINT, once: { $0.filter(isBatteryEvent).count == 2 }))
      // The second listen is up when it holds its own scan-data session (the D600's data channel), and
      // past its battery decision once it has made bring-up's last step, the D600's config write
      // (each listen makes one).
      try await waitForSessions(rig, d600, scanDataUUID, count: 2)
      try await waitForBringUp(rig, d600, times: 2)
      #expect(try await sessions(rig, d600, batteryLevelUUID) == firstSession, "no second 0x2A19 session")
      #expect(try await cccdWrites(rig, d600, batteryLevelUUID) == ["0100"], "the CCCD was written once")
      try await rig.ctl("SetBattery", BlueZRig.devicePath(d600), "42")

      let firstOutcome = try await first
      #expect(firstOutcome.status == 0, "SIGINT after its event: \(firstOutcome)")
      #expect(batteryEvents(firstOutcome).compactMap { $0["percent"]?.int } == [42])
      // The first listener's session ended: the second one holds the setting on by itself.
      try await waitForSessions(rig, d600, batteryLevelUUID, count: 1)
      #expect(try await sessions(rig, d600, batteryLevelUUID) != firstSession)
      try await rig.ctl("SetBattery", BlueZRig.devicePath(d600), "43")

      let secondOutcome = try await second
      #expect(secondOutcome.status == 0, "SIGINT after its two events: \(secondOutcome)")
      #expect(batteryEvents(secondOutcome).compactMap { $0["percent"]?.int } == [42, 43])
      #expect(try await cccdWrites(rig, d600, batteryLevelUUID) == ["0100", "0000", "0100", "0000"])
    }
  }

  @Test(
    "get and set notifications: Battery1 holds battery-level-change on; a one-shot GATT set that differs is 15"
  )
  func getAndSetNotifications() async throws {
    // Default rig: bluetoothd's battery plugin exports Battery1 and keeps the notification on itself.
    try await withRig { rig, sandbox in
      try await rig.ctl("AddLEDevice", generic, "Thermo [999998]", "generic", "--", "-50", "true")
      let get = try await sandbox.capture(["--json", "get", generic, "notifications"])
      #expect(get.status == 0, "\(get)")
      let property = try parseJSON(get.out)["properties"]?[0]
      #expect(property?["value"]?.int == 32)
      #expect(property?["valueName"]?.string == "battery-level-change")
      let same = try await sandbox.capture(["set", generic, "notifications", "battery-level-change"])
      #expect(same.status == 0, "already set: nothing to write: \(same)")
      let off = try await sandbox.capture(["set", generic, "notifications", "none"])
      #expect(off.status == 15, "\(off)")
      #expect(off.err.contains("battery plugin"), "\(off.err)")
      let power = try await sandbox.capture([
        "set", generic, "notifications", "power-state,battery-level-change",
      ])
      #expect(power.status == 15, "\(power)")
      #expect(power.err.contains("cannot report power-state"), "\(power.err)")
    }
    try await withRig(gattBattery) { rig, sandbox in
      try await rig.ctl("AddLEDevice", generic, "Thermo [999998]", "generic", "--", "-50", "true")
      let get = try await sandbox.capture(["get", generic, "notifications"])
      #expect(get.outLines == ["none"], "\(get)")
      let on = try await sandbox.capture(["set", generic, "notifications", "32"])
      #expect(on.status == 15, "a notify session would end with this process: \(on)")
      #expect(on.err.contains("capture listen"), "\(on.err)")
      #expect(try await cccdWrites(rig, generic, batteryLevelUUID) == [])
      let same = try await sandbox.capture(["set", generic, "notifications", "none"])
      #expect(same.status == 0, "\(same)")
    }
  }

  @Test(
    "a device without notifications: --events batteryLevel warns and exits 15; with decodedData it goes on")
  func deviceWithoutNotifications() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let get = try await sandbox.capture(["get", "socketcam", "notifications"])
    #expect(get.status == 15, "\(get)")
    let only = try await sandbox.capture(["listen", "--events", "batteryLevel", "--image", images.qr.path])
    #expect(only.status == 15, "\(only)")
    #expect(only.out.isEmpty)
    #expect(
      only.errLines.contains {
        $0.hasSuffix("cannot report batteryLevel events (it has no notification for them)")
      })
    #expect(
      only.errLines.last == "capture: ESKT_NOTSUPPORTED (-15): no device here can report batteryLevel events",
      "\(only.err)")
    let mixed = try await sandbox.capture([
      "listen", "--events", "decodedData,batteryLevel", "--image", images.qr.path,
    ])
    #expect(mixed.status == 0, "\(mixed)")
    #expect(mixed.outLines == [images.qr.text])
    #expect(
      mixed.errLines.contains {
        $0.hasSuffix("cannot report batteryLevel events (it has no notification for them)")
      })
  }
}
