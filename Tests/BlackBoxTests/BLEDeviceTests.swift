// capture against the project's bluetoothd model (Tests/Rigs): every BLE command end to end, with the
// device simulators producing the frames the reference quotes.

import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

private let d600 = "00:11:22:7E:F6:19"
private let d600NoPair = "00:11:22:7E:F6:20"
private let s550 = "00:11:22:33:44:55"
private let s370 = "00:11:22:37:37:00"
private let generic = "00:11:22:99:99:99"
private let scanDataUUID = "ce3e81b8-d871-4613-ba78-5ffc0b1520a6"

private func events(_ outcome: Outcome) -> [JSONValue] {
  outcome.outLines.compactMap { try? parseJSON($0) }
}

private func kinds(_ outcome: Outcome) -> [String] { events(outcome).compactMap { $0["event"]?.string } }

/// Sends a D600 scan through the rig, retrying while the simulator drops it (it reports 0 notifications
/// sent when no notify session is armed yet — a real device drops such data too).
func scanText(_ rig: BlueZRig, _ address: String, _ family: String, _ text: String) async throws {
  let deadline = Runner.monotonicSeconds() + 120
  while Runner.monotonicSeconds() < deadline {
    let sent = try await rig.ctl("ScanText", BlueZRig.devicePath(address), family, text)
    if sent != "0" { return }
    try await Task.sleep(for: .milliseconds(100))
  }
  Issue.record("the rig dropped the scan '\(text)' for 120 s")
}

/// Polls until the D600 has been brought up again (its config write of AE 07 after ClearWrites), i.e.
/// a listen has reconnected and re-armed its notify sessions. The config write is bring-up's last
/// step, and whatever the test does next reaches the rig (and, through it, capture) after it in bus
/// order. Whether capture has also announced the device is another matter: a test that next takes the
/// link away passes `watch` (the listen's output) and waits for the `arrivals`-th deviceArrival line,
/// so the removal cannot overtake the arrival.
func waitForBringUp(
  _ rig: BlueZRig, _ address: String, times: Int = 1, watch: OutputWatch? = nil, arrivals: Int = 1,
  sourceLocation: SourceLocation = #_sourceLocation
) async throws {
  try await waitUntil(
    "the D600 brought up \(times) time(s) (its config write)", every: .milliseconds(100),
    sourceLocation: sourceLocation
  ) {
    let writes = try await rig.ctl("GetWrites", BlueZRig.devicePath(address)).lowercased()
    return writes.components(separatedBy: "1254fc72-336e-4bb2-a0a8-71c7d28d73ce").count - 1 >= times
  }
  if let watch {
    await watch.waitForLine(
      .stdout, containing: #""event":"deviceArrival""#, count: arrivals, sourceLocation: sourceLocation)
  }
}

/// Polls until the D600 (or S550) has a notify session from a capture process, i.e. listen is ready.
func waitForListener(
  _ rig: BlueZRig, _ address: String, uuid: String, sourceLocation: SourceLocation = #_sourceLocation
) async throws {
  try await waitUntil(
    "a notify session on \(uuid)", every: .milliseconds(100), sourceLocation: sourceLocation
  ) { try await rig.ctl("GetState", BlueZRig.devicePath(address)).contains(uuid) }
}

@Suite("BLE devices through BlueZ (rig)", .serialized)
struct BLEDeviceTests {
  @Test(
    "discover streams Socket Mobile devices with type, RSSI and UUIDs, then discoveryEnd; --all adds others")
  func discover() async throws {
    try await withRig { rig, sandbox in
      try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "false")
      try await rig.ctl("AddLEDevice", s550, "S550 [334455]", "s550", "--", "-61", "false")
      try await rig.ctl("AddLEDevice", generic, "Thermometer", "generic", "--", "-70", "false")
      let outcome = try await sandbox.capture(["--json", "discover", "--timeout", "1500ms"])
      #expect(outcome.status == 0, "\(outcome)")
      let found = events(outcome)
      #expect(found.last?["event"]?.string == "discoveryEnd")
      #expect(found.last?["count"]?.int == 2)
      let byAddress = Dictionary(
        uniqueKeysWithValues: found.dropLast().compactMap { e in e["address"]?.string.map { ($0, e) } })
      #expect(Set(byAddress.keys) == [d600, s550])
      #expect(byAddress[d600]?["device"]?["type"]?.int == 327701)
      #expect(byAddress[d600]?["device"]?["typeName"]?.string == "ScannerD600")
      #expect(byAddress[d600]?["rssi"]?.int == -50)
      #expect(byAddress[d600]?["uuids"]?.array?.first?.string == "6cb501b7-96f6-4eef-acb1-d7535f153cf0")
      #expect(byAddress[s550]?["device"]?["type"]?.int == 327702)
      #expect(found.allSatisfy { $0.keysAreCamelCase })

      let all = try await sandbox.capture(["--json", "discover", "--all", "--timeout", "1500ms"])
      #expect(Set(events(all).compactMap { $0["address"]?.string }) == [d600, s550, generic])
      let named = try await sandbox.capture(["discover", "--name", "S550*", "--timeout", "1s"])
      #expect(named.status == 0)
      #expect(named.outLines.map { $0.split(separator: "\t").first.map(String.init) } == [s550])
    }
  }

  @Test("no adapter, no bluetoothd, no bus: exit 32 with the reason")
  func unavailable() async throws {
    try await withRig { rig, sandbox in
      let noAdapter = try await sandbox.capture(["discover", "--adapter", "hci7", "--timeout", "1s"])
      #expect(noAdapter.status == 32)
      #expect(noAdapter.errLines.first?.contains("no Bluetooth adapter hci7") == true, "\(noAdapter)")
      _ = rig
    }
    let sandbox = try Sandbox()
    let noBus = try await sandbox.capture(["discover", "--timeout", "1s"])
    #expect(noBus.status == 32)
    #expect(noBus.errLines.first?.hasPrefix("capture: ESKT_NOTAVAILABLE (-32): ") == true, "\(noBus)")
  }

  @Test("connect pairs the pairing-required D600, trusts it, remembers it and prints its arrival")
  func connectD600() async throws {
    try await withRig { rig, sandbox in
      let path = try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "false")
      #expect(path.contains("dev_00_11_22_7E_F6_19"))
      let outcome = try await sandbox.capture(["--json", "connect", d600, "--alias", "dock"])
      #expect(outcome.status == 0, "\(outcome)")
      let arrival = events(outcome)
      #expect(arrival.count == 1)
      #expect(arrival.first?["event"]?.string == "deviceArrival")
      #expect(arrival.first?["device"]?["id"]?.string == d600)
      #expect(arrival.first?["device"]?["type"]?.int == 327701)
      let state = try await rig.ctl("GetState", BlueZRig.devicePath(d600))
      #expect(state.contains("\"Paired\": true") || state.contains("\"Paired\":true"), "\(state)")
      #expect(state.contains("\"Trusted\": true") || state.contains("\"Trusted\":true"), "\(state)")
      let list = try await sandbox.capture(["--json", "list"])
      let devices = try parseJSON(list.out)["devices"]?.array ?? []
      #expect(
        devices.contains {
          $0["id"]?.string == d600 && $0["alias"]?.string == "dock" && $0["state"]?.string == "connected"
            && $0["transport"]?.string == "ble"
        }, "\(list)")
      // The alias now names the device.
      let byAlias = try await sandbox.capture(["get", "dock", "device-type"])
      #expect(byAlias.outLines == ["ScannerD600"], "\(byAlias)")
    }
  }

  @Test(
    "a BLE device outside the SDK's type table reports its Device Information model number (0x2A24): plain get device-type prints it, JSON adds model"
  )
  func genericModel() async throws {
    try await withRig { rig, sandbox in
      try await rig.ctl("AddLEDevice", generic, "Thermometer", "generic", "--", "-70", "true")
      let plain = try await sandbox.capture(["get", generic, "device-type"])
      #expect(plain.status == 0, "\(plain)")
      #expect(plain.outLines == ["Generic"], "\(plain)")
      let json = try await sandbox.capture(["--json", "get", generic, "device-type"])
      #expect(json.status == 0, "\(json)")
      let document = try parseJSON(json.out)
      #expect(document["device"]?["model"]?.string == "Generic", "\(json)")
      #expect(document["device"]?["typeName"]?.string == "BleUnknown", "\(json)")
      #expect(document["properties"]?.array?.first?["model"]?.string == "Generic", "\(json)")
      // A family in the SDK's table reads no model: its device object has no model key.
      try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
      let d600JSON = try await sandbox.capture(["--json", "get", d600, "device-type"])
      #expect(d600JSON.status == 0, "\(d600JSON)")
      #expect(try parseJSON(d600JSON.out)["device"]?["model"] == nil, "\(d600JSON)")
    }
  }

  @Test("a device out of range: get exits 42 saying it did not answer; bluetoothd gone: exit 32")
  func vanished() async throws {
    try await withRig { rig, sandbox in
      try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
      try await rig.ctl("SetInRange", BlueZRig.devicePath(d600), "false")
      let outcome = try await sandbox.capture(["get", d600, "battery-level"])
      #expect(outcome.status == 42, "\(outcome)")
      #expect(outcome.errLines.first?.contains("the device did not answer") == true, "\(outcome)")
      // bluetoothd stops (SIGKILL): the bus is there, org.bluez has no owner once this returns.
      try await rig.stopBluez()
      let gone = try await sandbox.capture(["discover", "--timeout", "1s"])
      #expect(gone.status == 32, "\(gone)")
      #expect(
        gone.errLines == [
          "capture: ESKT_NOTAVAILABLE (-32): no Bluetooth: org.bluez has no owner: bluetoothd is not running (is bluez installed? sudo apt-get install bluez); fix: sudo systemctl enable --now bluetooth (capture doctor checks the host)"
        ])
    }
  }

  @Test("connect to an address bluetoothd never saw exits 17")
  func connectUnknown() async throws {
    try await withRig { _, sandbox in
      let outcome = try await sandbox.capture(["--timeout", "2s", "connect", "00:11:22:00:00:01"])
      #expect(outcome.status == 17, "\(outcome)")
      #expect(outcome.errLines.first?.hasPrefix("capture: ESKT_NOTFOUND (-17): ") == true)
    }
  }

  @Test("connect --timeout 40s finds a device that starts advertising after the default 10 s search")
  func connectSearchesForTheWholeTimeout() async throws {
    try await withRig { rig, sandbox in
      let adapter = "/org/bluez/hci0"
      func now() async throws -> Double {
        let state = try parseJSON(try await rig.ctl("GetDiscovery", adapter))
        guard case .number(let text)? = state["Now"], let value = Double(text) else { return -1 }
        return value
      }
      let connecting = Task {
        try await sandbox.capture(["--json", "--timeout", "40s", "connect", d600NoPair])
      }
      await waitUntil("capture's discovery under way", seconds: 60, every: .milliseconds(50)) {
        (try? parseJSON(try await rig.ctl("GetDiscovery", adapter)))?["Discovering"] == .bool(true)
      }
      // The device comes into range only once the search is 11 s old (the rig's monotonic clock):
      // a search cut at 10 s has ended by then and exits 17.
      let started = try await now()
      await waitUntil("the search 11 s old", seconds: 60, every: .milliseconds(200)) {
        ((try? await now()) ?? 0) >= started + 11
      }
      try await rig.ctl(
        "AddLEDevice", d600NoPair, "Socket D600 [7EF620]", "d600-nopair", "--", "-50", "false")
      let outcome = try await connecting.value
      #expect(outcome.status == 0, "\(outcome)")
      #expect(events(outcome).compactMap { $0["event"]?.string } == ["deviceArrival"])
    }
  }

  @Test(
    "connect while another connection of the device is under way waits for that one and succeeds, not ESKT_PENDINGOPERATIONNOTCOMPLETED"
  )
  func connectJoinsAConnectionUnderWay() async throws {
    try await withRig { rig, sandbox in
      try await rig.ctl("AddLEDevice", s370, "Socket S370 [373700]", "s370", "--", "-55", "false")
      // The first Connect stays pending for 3 s, as a real link takes time to come up; a second
      // Connect meanwhile is refused by bluetoothd (InProgress; the kernel's own background connect of
      // a bonded device gives Failed "Operation already in progress", met in the VM tier).
      try await rig.ctl("Configure", #"{"ConnectDelay": 3.0}"#)
      let dev = BlueZRig.devicePath(s370)
      let first = Task { try await sandbox.capture(["--json", "connect", s370]) }
      await waitUntil("the first Connect is pending", seconds: 60, every: .milliseconds(20)) {
        let calls = try? parseJSON(try await rig.ctl("GetConnectCalls", dev)).array
        return (calls?.count ?? 0) >= 1
      }
      let second = try await sandbox.capture(["--json", "connect", s370])
      #expect(second.status == 0, "\(second)")
      #expect(events(second).compactMap { $0["device"]?["type"]?.int } == [0x5011B, 0x5061B])
      let calls = try parseJSON(try await rig.ctl("GetConnectCalls", dev)).array ?? []
      // The second did call Connect and was refused as in progress: it went the waiting way.
      #expect(calls.count == 2, "\(calls)")
      let earlier = try await first.value
      #expect(earlier.status == 0, "\(earlier)")
    }
  }

  @Test("an S370 arrives twice: its barcode half 0x5011B and its NFC half 0x5061B")
  func s370TwoArrivals() async throws {
    try await withRig { rig, sandbox in
      try await rig.ctl("AddLEDevice", s370, "Socket S370 [373700]", "s370", "--", "-55", "false")
      let outcome = try await sandbox.capture(["--json", "connect", s370])
      #expect(outcome.status == 0, "\(outcome)")
      #expect(events(outcome).compactMap { $0["device"]?["type"]?.int } == [0x5011B, 0x5061B])
    }
  }

  @Test("get reads battery (Battery1), firmware version, type, address and the BlueZ alias; set renames")
  func getAndSet() async throws {
    try await withRig { rig, sandbox in
      try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
      try await rig.ctl("SetBattery", BlueZRig.devicePath(d600), "77")
      let outcome = try await sandbox.capture([
        "--json", "get", d600, "battery-level", "version", "device-type", "bluetooth-address",
        "friendly-name",
      ])
      #expect(outcome.status == 0, "\(outcome)")
      let properties = try parseJSON(outcome.out)["properties"]?.array ?? []
      let values = Dictionary(
        uniqueKeysWithValues: properties.compactMap { p in p["name"]?.string.map { ($0, p) } })
      // ScanAPI packing (docs/capture-sdk.md §7.3): max 100 << 24 | min 0 << 16 | current 77 << 8.
      #expect(values["battery-level"]?["value"]?.int == (100 << 24) | (77 << 8))
      #expect(values["battery-level"]?["valueName"]?.string == "77%")
      #expect(values["version"]?["value"]?["major"]?.int == 1)
      #expect(values["version"]?["value"]?["middle"]?.int == 50)
      #expect(values["device-type"]?["value"]?.int == 327701)
      #expect(
        values["bluetooth-address"]?["value"]?.array?.compactMap(\.int) == [
          0x00, 0x11, 0x22, 0x7E, 0xF6, 0x19,
        ])
      #expect(values["friendly-name"]?["value"]?.string == "Socket D600 [7EF619]")

      let set = try await sandbox.capture(["set", d600, "friendly-name", "Dock 4"])
      #expect(set.status == 0, "\(set)")
      let again = try await sandbox.capture(["get", d600, "friendly-name"])
      #expect(again.outLines == ["Dock 4"])
      let unsupported = try await sandbox.capture(["get", d600, "power-state"])
      #expect(unsupported.status == 15)
    }
  }

  @Test("listen decodes D600 frames (family → SDK tag type) and S550 tag events, battery changes too")
  func listenDecodes() async throws {
    try await withRig { rig, sandbox in
      try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
      try await rig.ctl("AddLEDevice", s550, "S550 [334455]", "s550", "--", "-60", "true")
      async let listening = sandbox.capture(["--json", "listen", d600, s550, "--count", "3"], timeLimit: 120)
      try await waitForBringUp(rig, d600)
      try await waitForListener(rig, s550, uuid: "23d33996-e604-4f8b-baf7-547944030552")
      // The AXM capture: "4F" (NFC Forum) + "st.com/nfc-rfid" + 00, in 20-byte notifications.
      try await scanText(rig, d600, "4F", "st.com/nfc-rfid")
      try await rig.ctl("SetBattery", BlueZRig.devicePath(d600), "41")
      try await rig.ctl("TagRead", BlueZRig.devicePath(s550), "02C40044F99DB6", "text:hello tag", "1")
      try await scanText(rig, d600, "01", "second")
      let outcome = try await listening
      #expect(outcome.status == 0, "\(outcome)")
      let all = events(outcome)
      let decoded = all.filter { $0["event"]?.string == "decodedData" }
      #expect(decoded.count == 3)
      #expect(decoded[0]["text"]?.string == "st.com/nfc-rfid")
      #expect(decoded[0]["dataSource"]?["id"]?.int == 0x10A)
      #expect(decoded[0]["device"]?["id"]?.string == d600)
      #expect(decoded[1]["text"]?.string == "hello tag")
      #expect(decoded[1]["tagId"]?.string == "02C40044F99DB6")
      #expect(decoded[1]["dataSource"]?["id"]?.int == 0x100)
      #expect(decoded[2]["text"]?.string == "second")
      #expect(decoded[2]["dataSource"]?["id"]?.int == 0x100)
      #expect(all.contains { $0["event"]?.string == "batteryLevel" && $0["percent"]?.int == 41 })
      #expect(kinds(outcome).first == "deviceArrival")
      #expect(kinds(outcome).last == "deviceRemoval")
    }
  }

  @Test("listen survives link loss and a bluetoothd restart: removal, arrival again, no code lost or doubled")
  func listenReconnects() async throws {
    try await withRig { rig, sandbox in
      let dev = BlueZRig.devicePath(d600)
      try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
      let watch = OutputWatch()
      async let listening = sandbox.capture(
        ["--json", "listen", d600, "--count", "3"], timeLimit: 120, interaction: watch.interaction)
      try await waitForBringUp(rig, d600, watch: watch)
      try await scanText(rig, d600, "4F", "before")
      // Each code is out before the link goes: one still in flight would be lost with it.
      await watch.waitForLine(.stdout, containing: #""text":"before""#)
      try await rig.ctl("ClearWrites", dev)
      try await rig.ctl("LinkLoss", dev)
      try await waitForBringUp(rig, d600, watch: watch, arrivals: 2)
      try await scanText(rig, d600, "4F", "after link loss")
      await watch.waitForLine(.stdout, containing: #""text":"after link loss""#)
      try await rig.restartBluez()
      try await waitForBringUp(rig, d600, watch: watch, arrivals: 3)
      try await scanText(rig, d600, "4F", "after restart")
      let outcome = try await listening
      #expect(outcome.status == 0, "\(outcome)")
      let texts = events(outcome).filter { $0["event"]?.string == "decodedData" }.compactMap {
        $0["text"]?.string
      }
      #expect(texts == ["before", "after link loss", "after restart"])
      #expect(
        kinds(outcome).filter { $0 != "decodedData" } == [
          "deviceArrival", "deviceRemoval", "deviceArrival", "deviceRemoval", "deviceArrival",
          "deviceRemoval",
        ])
    }
  }

  @Test("after link loss listen's D600 bring-up gets the scanner-mode answer (the event pump is not held up)")
  func reconnectBringUpGetsTheConfigAnswer() async throws {
    try await withRig { rig, sandbox in
      let dev = BlueZRig.devicePath(d600)
      try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
      let watch = OutputWatch()
      async let listening = sandbox.capture(
        ["--json", "listen", d600, "--count", "1"], timeLimit: 120, interaction: watch.interaction)
      try await waitForBringUp(rig, d600, watch: watch)
      try await rig.ctl("ClearWrites", dev)
      try await rig.ctl("LinkLoss", dev)
      try await waitForBringUp(rig, d600, watch: watch, arrivals: 2)
      try await scanText(rig, d600, "4F", "after link loss")
      let outcome = try await listening
      #expect(outcome.status == 0, "\(outcome)")
      #expect(!outcome.errLines.contains { $0.contains("no answer to scanner mode") }, "\(outcome)")
      #expect(
        events(outcome).filter { $0["event"]?.string == "decodedData" }.compactMap { $0["text"]?.string } == [
          "after link loss"
        ])
      #expect(
        kinds(outcome).filter { $0 != "decodedData" } == [
          "deviceArrival", "deviceRemoval", "deviceArrival", "deviceRemoval",
        ])
    }
  }

  @Test("bad frames: an oversized frame is reported and the next frame still decodes; a storm loses nothing")
  func badFramesAndStorm() async throws {
    try await withRig { rig, sandbox in
      let dev = BlueZRig.devicePath(d600)
      try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
      try await rig.ctl("SetChunkSize", "180")
      async let listening = sandbox.capture(["--json", "listen", d600, "--count", "501"], timeLimit: 120)
      try await waitForBringUp(rig, d600)
      // "4F" + 5000 bytes + 00: over the 4096-byte cap (TS's limit, docs/device-protocols.md §2.8).
      let oversized = (["34", "46"] + Array(repeating: "78", count: 5000) + ["00"]).joined(separator: " ")
      try await rig.ctl("Scan", dev, oversized)
      try await scanText(rig, d600, "4F", "after the big one")
      try await rig.ctl("Storm", dev, "500", "34 46 61 62 00")
      let outcome = try await listening
      #expect(outcome.status == 85, "\(outcome)")
      let all = events(outcome)
      #expect(all.contains { $0["event"]?.string == "error" && $0["error"]?["code"]?.int == -85 })
      let texts = all.filter { $0["event"]?.string == "decodedData" }.compactMap { $0["text"]?.string }
      #expect(texts.first == "after the big one")
      #expect(texts.dropFirst().count == 500)
      #expect(texts.dropFirst().allSatisfy { $0 == "ab" })
    }
  }

  @Test("trigger and data confirmation write the D600 scan-control commands")
  func triggerWrites() async throws {
    try await withRig { rig, sandbox in
      let dev = BlueZRig.devicePath(d600)
      try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
      let start = try await sandbox.capture(["trigger", d600, "start"])
      #expect(start.status == 0, "\(start)")
      let confirm = try await sandbox.capture(["set", d600, "data-confirmation", "good"])
      #expect(confirm.status == 0, "\(confirm)")
      let writes = try await rig.ctl("GetWrites", dev)
      // Config AE 07 (scanner mode) at bring-up, then A1 on scan control (20-byte buffer).
      #expect(writes.lowercased().contains("833a2364-bca0-4647-8113-478e1fc449ba"), "\(writes)")
      #expect(writes.lowercased().contains("1254fc72-336e-4bb2-a0a8-71c7d28d73ce"), "\(writes)")
      let unsupported = try await sandbox.capture(["trigger", d600, "enable"])
      #expect(unsupported.status == 15)
    }
  }

  @Test("listen --confirm tells a D600 the verdict through its scan control: confirmed true")
  func confirmOnD600() async throws {
    try await withRig { rig, sandbox in
      let dev = BlueZRig.devicePath(d600)
      try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
      async let listening = sandbox.capture(
        ["--json", "listen", d600, "--count", "1", "--confirm", "grep -q ok"], timeLimit: 120)
      try await waitForBringUp(rig, d600)
      try await rig.ctl("ClearWrites", dev)
      try await scanText(rig, d600, "4F", "ok-code")
      let outcome = try await listening
      #expect(outcome.status == 0, "\(outcome)")
      let decoded = events(outcome).filter { $0["event"]?.string == "decodedData" }
      #expect(decoded.first?["confirmation"]?.string == "good")
      #expect(decoded.first?["confirmed"] == .bool(true))
      let writes = try await rig.ctl("GetWrites", dev)
      #expect(writes.lowercased().contains("833a2364-bca0-4647-8113-478e1fc449ba"), "\(writes)")
    }
  }

  @Test(
    "a code whose line could not be written (stdout on /dev/full) is confirmed bad to the D600, never good; exit 33",
    .enabled(if: HardeningIOTests.hasPython))
  func unwrittenCodeIsNotConfirmedGood() async throws {
    try await withRig { rig, sandbox in
      let dev = BlueZRig.devicePath(d600)
      try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
      // The scan-control writes of a verdict, from two listens on a pipe: `true` says good, `false` bad.
      func verdictWrites(_ command: String) async throws -> String {
        async let listening = sandbox.capture(
          ["--json", "listen", d600, "--count", "1", "--confirm", command], timeLimit: 120)
        try await waitForBringUp(rig, d600)
        try await rig.ctl("ClearWrites", dev)
        try await scanText(rig, d600, "4F", "code")
        let outcome = try await listening
        #expect(outcome.status == 0, "\(outcome)")
        return try await rig.ctl("GetWrites", dev)
      }
      let good = try await verdictWrites("true")
      let bad = try await verdictWrites("false")
      #expect(good != bad, "good and bad must be told apart on the wire: \(good)")

      // The host says good, but the line cannot be written: the device hears bad. Plain output, whose
      // first write is the code itself (with --json the arrival line would fail first).
      async let full = HardeningIOTests.run(
        sandbox, .full, ["listen", d600, "--count", "1", "--confirm", "true"], timeLimit: 120)
      try await waitForBringUp(rig, d600)
      try await rig.ctl("ClearWrites", dev)
      try await scanText(rig, d600, "4F", "code")
      let outcome = try await full
      #expect(outcome.status == 33, "\(outcome)")
      #expect(
        outcome.errLines.contains { $0.hasPrefix(HardeningIOTests.writeFailed + "No space left on device") },
        "\(outcome)")
      let told = try await rig.ctl("GetWrites", dev)
      #expect(told == bad, "told \(told); bad is \(bad); good is \(good)")
    }
  }

  @Test(
    "listen --confirm-stdin: the co-process's good reaches a D600 (confirmed true); stdout is the question")
  func confirmStdinOnD600() async throws {
    try await withRig { rig, sandbox in
      let dev = BlueZRig.devicePath(d600)
      try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
      let host = CoProcessHost { _, line in line.contains("ok-code") ? "good\n" : "bad\n" }
      async let listening = sandbox.capture(
        ["--json", "listen", d600, "--count", "1", "--confirm-stdin", "--output", "events.jsonl"],
        timeLimit: 120, interaction: host.interaction)
      try await waitForBringUp(rig, d600)
      try await rig.ctl("ClearWrites", dev)
      try await scanText(rig, d600, "4F", "ok-code")
      let outcome = try await listening
      #expect(outcome.status == 0, "\(outcome)")
      #expect(events(outcome).map { $0["text"]?.string } == ["ok-code"])
      #expect(host.questions.count == 1)
      let file = String(decoding: try sandbox.read(sandbox.path("events.jsonl")), as: UTF8.self)
      let decoded = try Outcome.lines(file).map(parseJSON).filter { $0["event"]?.string == "decodedData" }
      #expect(decoded.map { $0["confirmation"]?.string } == ["good"])
      #expect(decoded.map { $0["confirmed"] } == [.bool(true)])
      let writes = try await rig.ctl("GetWrites", dev)
      #expect(writes.lowercased().contains("833a2364-bca0-4647-8113-478e1fc449ba"), "\(writes)")
    }
  }

  @Test("partnership status, reset (0F FE DA FA ED) and remove")
  func partnershipAndRemove() async throws {
    try await withRig { rig, sandbox in
      let dev = BlueZRig.devicePath(d600)
      try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "false")
      #expect(try await sandbox.capture(["connect", d600]).status == 0)
      let status = try await sandbox.capture(["--json", "partnership", "status", d600])
      #expect(status.status == 0, "\(status)")
      let doc = try parseJSON(status.out)
      #expect(doc["bonded"] == .bool(true))
      #expect(doc["variant"]?.string == "pairing-required")
      let reset = try await sandbox.capture(["partnership", "reset", d600])
      #expect(reset.status == 0, "\(reset)")
      let writes = try await rig.ctl("GetWrites", dev)
      #expect(writes.lowercased().replacingOccurrences(of: " ", with: "").contains("0f"), "\(writes)")

      try await rig.ctl("AddLEDevice", s550, "S550 [334455]", "s550", "--", "-60", "true")
      let removed = try await sandbox.capture(["--json", "remove", s550])
      #expect(removed.status == 0, "\(removed)")
      #expect(kinds(removed) == ["deviceRemoval"])
      let again = try await sandbox.capture(["remove", s550])
      #expect(again.status == 17, "\(again)")
      let s550Reset = try await sandbox.capture(["partnership", "reset", "00:11:22:33:44:56"])
      #expect(s550Reset.status == 17 || s550Reset.status == 15)
    }
  }
}
