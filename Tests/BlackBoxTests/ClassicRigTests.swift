// Bluetooth Classic through bluetoothd (the rig's BR/EDR devices): discovery recognising Socket Mobile
// scanners by name or by the SDP service class in Device1.UUIDs, pairing for `connect --classic
// --pair`, and the scanner's friendly name from Device1.Alias. RFCOMM itself fails here (no
// AF_BLUETOOTH), so a connect ends 32 after pairing.

import Foundation
import Testing

private let byUUID = "00:06:66:0A:1B:2C"
private let byName = "00:06:66:0A:1B:2D"
private let headset = "00:06:66:0A:1B:2E"
private let d600 = "00:11:22:7E:F6:19"
/// The SDP service class of Bluetooth barcode scanners in SPP mode (docs/device-protocols.md §5.3).
private let scannerClass = "a1220169-e854-473e-9cb5-873acbdf1f13"
private let serialPort = "00001101-0000-1000-8000-00805f9b34fb"
/// Class of Device: major Peripheral (0x05), minor 0x40 (keyboard-like), as a scanner reports itself.
private let peripheralClass = "0x000540"

private func events(_ outcome: Outcome) -> [JSONValue] {
  outcome.outLines.compactMap { try? parseJSON($0) }
}

private func rigState(_ rig: BlueZRig, _ address: String) async throws -> JSONValue {
  try parseJSON(try await rig.ctl("GetState", BlueZRig.devicePath(address)))
}

@Suite("Bluetooth Classic through bluetoothd (rig)", .serialized)
struct ClassicRigTests {
  @Test(
    "discover --classic: a scanner recognised by SDP service class or by name; others only with --all; no LE devices"
  )
  func discoverClassic() async throws {
    try await withRig { rig, sandbox in
      try await rig.ctl(
        "AddClassicDevice", byUUID, "Barcode scanner", peripheralClass, "1101,\(scannerClass)", "--", "-55",
        "false")
      try await rig.ctl(
        "AddClassicDevice", byName, "Socket CHS [0A1B2D]", peripheralClass, "1101", "--", "-60", "false")
      try await rig.ctl("AddClassicDevice", headset, "Headset", "0x240404", "110b", "--", "-70", "false")
      try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "false")

      let outcome = try await sandbox.capture(["--json", "discover", "--classic", "--timeout", "1500ms"])
      #expect(outcome.status == 0, "\(outcome)")
      let found = events(outcome)
      #expect(found.last?["event"]?.string == "discoveryEnd")
      #expect(found.last?["count"]?.int == 2)
      let byAddress = Dictionary(
        uniqueKeysWithValues: found.dropLast().compactMap { e in e["address"]?.string.map { ($0, e) } })
      #expect(Set(byAddress.keys) == [byUUID, byName], "\(outcome)")
      let uuidOnly = byAddress[byUUID]
      #expect(uuidOnly?["event"]?.string == "deviceDiscovered")
      #expect(uuidOnly?["recognizedBy"]?.string == "serviceClass")
      #expect(uuidOnly?["socketMobile"] == .bool(true))
      #expect(uuidOnly?["classOfDevice"]?.int == 0x000540)
      #expect(uuidOnly?["addressType"]?.string == "public")
      #expect(uuidOnly?["device"]?["type"]?.int == 0)
      #expect(uuidOnly?["device"]?["typeName"]?.string == "None")
      #expect(uuidOnly?["device"]?["name"]?.string == "Barcode scanner")
      #expect(uuidOnly?["uuids"]?.array?.compactMap(\.string) == [serialPort, scannerClass])
      #expect(byAddress[byName]?["recognizedBy"]?.string == "name")
      #expect(found.allSatisfy { $0.keysAreCamelCase })

      let all = try await sandbox.capture(["--json", "discover", "--classic", "--all", "--timeout", "1500ms"])
      #expect(all.status == 0, "\(all)")
      let allByAddress = Dictionary(
        uniqueKeysWithValues: events(all).compactMap { e in e["address"]?.string.map { ($0, e) } })
      #expect(Set(allByAddress.keys) == [byUUID, byName, headset], "\(all)")
      #expect(allByAddress[headset]?["recognizedBy"] == .null)
      #expect(allByAddress[headset]?["socketMobile"] == .bool(false))

      let plain = try await sandbox.capture(["discover", "--classic", "--timeout", "1s"])
      #expect(plain.status == 0, "\(plain)")
      #expect(
        Set(plain.outLines) == [
          "\(byUUID)\tBarcode scanner\tNone\t-55", "\(byName)\tSocket CHS [0A1B2D]\tNone\t-60",
        ])
    }
  }

  @Test(
    "connect --classic --pair: bluetoothd finds (BR/EDR discovery), pairs and trusts it; RFCOMM then ends 32")
  func pairThenNoRFCOMM() async throws {
    try await withRig { rig, sandbox in
      try await rig.ctl(
        "AddClassicDevice", byUUID, "Barcode scanner", peripheralClass, "1101,\(scannerClass)", "--", "-55",
        "false")
      let outcome = try await sandbox.capture(["connect", byUUID, "--classic", "--pair", "--timeout", "10s"])
      #expect(outcome.status == 32, "\(outcome)")
      #expect(
        outcome.errLines == [
          "capture: ESKT_NOTAVAILABLE (-32): paired and trusted \(byUUID) through bluetoothd, then: no Bluetooth in this kernel/adapter: the kernel has no Bluetooth support (socket(AF_BLUETOOTH): Address family not supported by protocol); Bluetooth Classic and every adapter need it; fix: sudo modprobe bluetooth (capture doctor checks the host)"
        ], "\(outcome)")
      #expect(outcome.stdout.isEmpty)
      #expect(!sandbox.exists(sandbox.statePath), "nothing remembered without an RFCOMM link")
      let state = try await rigState(rig, byUUID)
      #expect(state["Paired"] == .bool(true), "\(state)")
      #expect(state["Trusted"] == .bool(true), "\(state)")
      #expect(state["Transport"]?.string == "bredr")

      // Paired already (AlreadyExists counts as paired): the same outcome, not a pairing error.
      let again = try await sandbox.capture(["connect", byUUID, "--classic", "--pair"])
      #expect(again.status == 32, "\(again)")
      #expect(
        again.errLines.first?.contains("paired and trusted \(byUUID) through bluetoothd, then:") == true)
    }
  }

  @Test("connect --classic --pair for a device nowhere in range: the --timeout runs out (42)")
  func pairNotFound() async throws {
    try await withRig { _, sandbox in
      let outcome = try await sandbox.capture(["connect", byUUID, "--classic", "--pair", "--timeout", "1s"])
      #expect(outcome.status == 42, "\(outcome)")
      #expect(
        outcome.errLines == [
          "capture: ESKT_REQUESTTIMEDOUT (-42): no Bluetooth device \(byUUID) was found on hci0 within the --timeout"
        ], "\(outcome)")
    }
  }

  @Test("connect --classic --pair without bluetoothd: exit 32 saying pairing needs bluetoothd")
  func pairWithoutBluetoothd() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture(["connect", byUUID, "--classic", "--pair"])
    #expect(outcome.status == 32, "\(outcome)")
    #expect(outcome.errLines.count == 1, "\(outcome)")
    #expect(
      outcome.errLines.first?.hasPrefix(
        "capture: ESKT_NOTAVAILABLE (-32): --pair with --classic pairs through bluetoothd, which is not reachable: "
      )
        == true, "\(outcome)")
    #expect(!sandbox.exists(sandbox.statePath))
  }

  @Test(
    "a remembered Classic scanner: friendly-name from Device1.Alias, bluetooth-address; set friendly-name is 15"
  )
  func properties() async throws {
    try await withRig { rig, sandbox in
      try await rig.ctl(
        "AddClassicDevice", byName, "Socket CHS [0A1B2D]", peripheralClass, "1101", "--", "-60", "true")
      _ = try sandbox.write(
        "state/capture/devices.json",
        #"{"schemaVersion":1,"devices":[{"id":"00:06:66:0A:1B:2D","alias":"dock","name":"old name","type":0,"transport":"classic","channel":1}],"socketCam":{"status":0,"dataSources":{}}}"#
      )
      let name = try await sandbox.capture(["get", "dock", "friendly-name"])
      #expect(name.status == 0, "\(name)")
      #expect(name.outLines == ["Socket CHS [0A1B2D]"])
      let address = try await sandbox.capture(["--json", "get", "dock", "bluetooth-address"])
      #expect(address.status == 0, "\(address)")
      let value = try parseJSON(address.outLines.first ?? "")["properties"]?[0]?["value"]
      #expect(value?.array?.compactMap(\.int) == [0x00, 0x06, 0x66, 0x0A, 0x1B, 0x2D], "\(address)")
      let set = try await sandbox.capture(["set", "dock", "friendly-name", "Dock"])
      #expect(set.status == 15, "\(set)")
      #expect(
        set.errLines == [
          "capture: ESKT_NOTSUPPORTED (-15): old name: the friendly name of a Classic scanner cannot be set: host→scanner commands in SPP mode are not public (docs/device-protocols.md §5.3)"
        ], "\(set)")
      let battery = try await sandbox.capture(["get", "dock", "battery-level"])
      #expect(battery.status == 15, "\(battery)")
      // --list needs the capabilities only: no RFCOMM link (which this kernel could not make: 32).
      let list = try await sandbox.capture(["--json", "get", "dock", "--list"])
      #expect(list.status == 0, "\(list)")
      let names = try parseJSON(list.outLines.first ?? "")["properties"]?.array?.compactMap {
        $0["name"]?.string
      }
      #expect(names.map(Set.init) == ["bluetooth-address", "device-type", "friendly-name"], "\(list)")
    }
  }
}
