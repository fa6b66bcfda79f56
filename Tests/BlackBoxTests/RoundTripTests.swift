// `capture set D P "$(capture get D P)"` is accepted and changes nothing, for every property each
// family can both read and write; the device's own state (SocketCam's profile, the DataMan
// simulator's parameters, the BlueZ rig's device) is compared, not just the exit status.

import Foundation
import Simulators
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The `name`s a `--json get DEVICE --list` document marks readable and writable.
func readWriteProperties(_ sandbox: Sandbox, _ device: String) async throws -> Set<String> {
  let list = try await sandbox.capture("--json", "get", device, "--list")
  #expect(list.status == 0, "\(list)")
  let properties = try parseJSON(list.out)["properties"]?.array ?? []
  return Set(
    properties.filter { $0["readable"] == .bool(true) && $0["writable"] == .bool(true) }.compactMap {
      $0["name"]?.string
    })
}

/// get, then set with what get printed (as `"$(...)"` passes it: trailing newlines dropped), then get
/// again: set exits 0 with nothing on stdout or stderr, and both gets print the same bytes.
@discardableResult
func roundTrip(
  _ sandbox: Sandbox, _ device: String, _ words: [String], sourceLocation: SourceLocation = #_sourceLocation
) async throws -> String {
  let before = try await sandbox.capture(["get", device] + words)
  #expect(before.status == 0, "get \(words): \(before)", sourceLocation: sourceLocation)
  #expect(before.outLines.count == 1, "get \(words): \(before)", sourceLocation: sourceLocation)
  var value = before.out
  while value.hasSuffix("\n") { value.removeLast() }
  let set = try await sandbox.capture(["set", device] + words + [value])
  #expect(set.status == 0, "set \(words) \(value.debugDescription): \(set)", sourceLocation: sourceLocation)
  #expect(set.stdout.isEmpty && set.stderr.isEmpty, "\(set)", sourceLocation: sourceLocation)
  let after = try await sandbox.capture(["get", device] + words)
  #expect(after.stdout == before.stdout, "get \(words) after set: \(after)", sourceLocation: sourceLocation)
  return value
}

@Suite("get prints what set takes back")
struct RoundTripTests {
  @Test("SocketCam: friendly-name, socket-cam-status and every data source; the profile is unchanged")
  func socketCam() async throws {
    let sandbox = try Sandbox()
    #expect(
      try await readWriteProperties(sandbox, "socketcam") == [
        "friendly-name", "socket-cam-status", "data-source",
      ])
    // A non-default state, so "unchanged" is not just "still the default".
    #expect(try await sandbox.capture("set", "socketcam", "friendly-name", "Dock  \"4\" é").status == 0)
    #expect(try await sandbox.capture("set", "socketcam", "socket-cam-status", "disable").status == 0)
    #expect(try await sandbox.capture("set", "socketcam", "data-source", "aztec", "disable").status == 0)
    let profile = try await sandbox.capture("--json", "get", "socketcam", "--all")
    let state = try sandbox.read(sandbox.statePath)

    #expect(try await roundTrip(sandbox, "socketcam", ["friendly-name"]) == "Dock  \"4\" é")
    #expect(try await roundTrip(sandbox, "socketcam", ["socket-cam-status"]) == "disable")
    let listing = try await sandbox.capture("get", "socketcam", "data-source")
    #expect(listing.status == 0)
    #expect(listing.outLines.count > 10, "\(listing)")
    for line in listing.outLines {
      let name = String(line.split(separator: " ")[0])
      let status = try await roundTrip(sandbox, "socketcam", ["data-source", name])
      #expect(line == "\(name) \(status)")
    }
    // The whole listing is NAME STATUS pairs that set takes back in one command.
    let words = listing.outLines.flatMap { $0.split(separator: " ").map(String.init) }
    let all = try await sandbox.capture(["set", "socketcam", "data-source"] + words)
    #expect(all.status == 0, "\(all)")
    #expect(try await sandbox.capture("get", "socketcam", "data-source").stdout == listing.stdout)

    #expect(try await sandbox.capture("--json", "get", "socketcam", "--all").stdout == profile.stdout)
    // The state file may now spell out a default it left implicit, but every value it held is the same.
    let stateBefore = try parseJSON(String(decoding: state, as: UTF8.self))["socketCam"]
    let stateAfter = try parseJSON(String(decoding: try sandbox.read(sandbox.statePath), as: UTF8.self))[
      "socketCam"]
    #expect(stateAfter?["status"] == stateBefore?["status"])
    #expect(stateAfter?["friendlyName"] == stateBefore?["friendlyName"])
    guard case .object(let sources)? = stateBefore?["dataSources"] else {
      Issue.record("no dataSources in \(String(describing: stateBefore))")
      return
    }
    for (id, status) in sources { #expect(stateAfter?["dataSources"]?[id] == status, "data source \(id)") }
  }

  @Test("the device manager: favorite, as capture list reports it")
  func manager() async throws {
    let sandbox = try Sandbox()
    #expect(try await readWriteProperties(sandbox, "manager") == ["favorite"])
    // set stores a favourite normalised (tcp:// with its port), and get prints it so.
    for (favorite, stored) in [
      ("*", "*"), ("AA:BB:CC:DD:EE:FF;tcp://10.0.0.5", "AA:BB:CC:DD:EE:FF;tcp://10.0.0.5:23"), ("", ""),
    ] {
      #expect(try await sandbox.capture("set", "manager", "favorite", favorite).status == 0)
      let state = try sandbox.read(sandbox.statePath)
      #expect(try await roundTrip(sandbox, "manager", ["favorite"]) == stored)
      #expect(try sandbox.read(sandbox.statePath) == state)
    }
  }

  @Test("DataMan: friendly-name and every data source; the reader's parameters are unchanged")
  func dataMan() async throws {
    let simulator = try DMCCSimulator()
    defer { simulator.stop() }
    let sandbox = try Sandbox()
    let device = "tcp://127.0.0.1:\(simulator.port)"
    #expect(try await readWriteProperties(sandbox, device) == ["friendly-name", "data-source"])
    let names = [
      "DEVICE.NAME", "SYMBOL.QR", "SYMBOL.C39", "SYMBOL.UPC-EAN", "SYMBOL.PDF417", "SYMBOL.DATABAR",
    ]
    let before = names.map(simulator.parameter)

    #expect(try await roundTrip(sandbox, device, ["friendly-name"]) == "Line 3 reader")
    let listing = try await sandbox.capture("get", device, "data-source")
    #expect(listing.status == 0, "\(listing)")
    #expect(listing.outLines.contains("qr-code enable"), "\(listing)")
    #expect(listing.outLines.contains("code39 disable"), "\(listing)")
    for line in listing.outLines {
      _ = try await roundTrip(sandbox, device, ["data-source", String(line.split(separator: " ")[0])])
    }
    #expect(names.map(simulator.parameter) == before)
    // The writes were made, with the values the reader already had.
    let sets = simulator.commands.filter { $0.uppercased().hasPrefix("SET ") }
    #expect(sets.contains { $0.contains("SYMBOL.QR ON") }, "\(sets)")
    #expect(sets.contains { $0.contains("SYMBOL.C39 OFF") }, "\(sets)")
    #expect(!sets.contains { $0.contains("SYMBOL.QR OFF") || $0.contains("SYMBOL.C39 ON") }, "\(sets)")
  }

  @Test("serial and keyboard-wedge scanners have nothing to write")
  func readOnlyFamilies() async throws {
    let sandbox = try Sandbox()
    let pty = try ScannerPTY()
    #expect(try await readWriteProperties(sandbox, "serial:\(pty.slavePath)").isEmpty)
    // A FIFO someone holds open stands in for the event device (no evdev node here).
    let fifo = sandbox.path("wedge")
    #expect(mkfifo(fifo, 0o600) == 0)
    let holder = open(fifo, O_RDWR | O_CLOEXEC)
    #expect(holder >= 0)
    defer { close(holder) }
    #expect(try await readWriteProperties(sandbox, "hid:\(fifo)").isEmpty)
  }
}

@Suite("get prints what set takes back: BLE (rig)", .serialized)
struct BLERoundTripTests {
  static let d600 = "00:11:22:7E:F6:19"
  static let s550 = "00:11:22:33:44:55"
  static let generic = "00:11:22:99:99:99"

  @Test(
    "D600, S550, generic: friendly-name and notifications round trip; the rig's device state is unchanged"
  )
  func ble() async throws {
    try await withRig { rig, sandbox in
      try await rig.ctl("AddLEDevice", Self.d600, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
      try await rig.ctl("AddLEDevice", Self.s550, "S550 [334455]", "s550", "--", "-60", "true")
      try await rig.ctl("AddLEDevice", Self.generic, "Thermo \"B\"  2", "generic", "--", "-70", "true")
      let families: [(String, Set<String>, String)] = [
        // device-specific is a command and its reply (get takes the command bytes), not a setting.
        (Self.d600, ["friendly-name", "notifications", "device-specific"], "Socket D600 [7EF619]"),
        (Self.s550, ["friendly-name", "notifications"], "S550 [334455]"),
        (Self.generic, ["friendly-name", "notifications"], "Thermo \"B\"  2"),
      ]
      for (address, expected, name) in families {
        let properties = try await readWriteProperties(sandbox, address)
        #expect(properties == expected, "\(address): \(properties)")
        let path = BlueZRig.devicePath(address)
        _ = try await sandbox.capture("get", address, "friendly-name")
        let state = try await rig.ctl("GetState", path)
        #expect(state.contains("\"Paired\": true"), "\(state)")
        try await rig.ctl("ClearWrites", path)
        #expect(try await roundTrip(sandbox, address, ["friendly-name"]) == name)
        if properties.contains("notifications") {
          _ = try await roundTrip(sandbox, address, ["notifications"])
        }
        #expect(try await rig.ctl("GetState", path) == state, "\(address)")
        // No characteristic was written but a D600's config channel by its bring-up (scanner mode).
        let writes = try await rig.ctl("GetWrites", path).lowercased()
        let written = writes.matches(of: /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/).map {
          String($0.output)
        }
        #expect(Set(written).isSubset(of: ["1254fc72-336e-4bb2-a0a8-71c7d28d73ce"]), "\(address): \(writes)")
      }
      // The address as DEVICE selectors spell it; the battery as a percentage.
      let address = try await sandbox.capture("get", Self.d600, "bluetooth-address")
      #expect(address.outLines == [Self.d600], "\(address)")
      try await rig.ctl("SetBattery", BlueZRig.devicePath(Self.d600), "73")
      let battery = try await sandbox.capture("get", Self.d600, "battery-level")
      #expect(battery.outLines == ["73%"], "\(battery)")
    }
  }

  @Test("a remembered Classic scanner has nothing to write; its address prints as AA:BB:CC:DD:EE:FF")
  func classic() async throws {
    try await withRig { rig, sandbox in
      let address = "00:06:66:0A:1B:2D"
      try await rig.ctl(
        "AddClassicDevice", address, "Socket CHS [0A1B2D]", "0x000540", "1101", "--", "-60", "true")
      _ = try sandbox.write(
        "state/capture/devices.json",
        #"{"schemaVersion":1,"devices":[{"id":"00:06:66:0A:1B:2D","alias":"dock","name":"CHS","type":0,"transport":"classic","channel":1}],"socketCam":{"status":0,"dataSources":{}}}"#
      )
      #expect(try await readWriteProperties(sandbox, "dock").isEmpty)
      let plain = try await sandbox.capture("get", "dock", "bluetooth-address")
      #expect(plain.outLines == [address], "\(plain)")
    }
  }
}
