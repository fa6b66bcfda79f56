import TestSupport
import Testing

@testable import CaptureCore

/// A device whose properties are a table: `get` reads it, `set` writes it (and records the write), and
/// a property listed in `readsBack` reads back that value after any write, as a device that ignored it.
private func tableDevice(
  _ id: String, writable: [PropertyID], values: [PropertyID: PropertyValue] = [:],
  readsBack: [PropertyID: PropertyValue] = [:]
) -> FakeDevice {
  var behaviour = FakeDevice.Behaviour()
  behaviour.writes = .capabilities
  behaviour.readsBack = readsBack
  behaviour.triggerFailure = .notSupported("table")
  behaviour.removalOnClose = false
  return FakeDevice(
    DeviceInfo(id: id, name: "Table \(id)", type: .scannerD600),
    capabilities: Capabilities(readable: writable, writable: writable, triggers: [], events: []),
    values: values,
    start: .finished, behaviour: behaviour)
}

/// bluetoothd as a table: `connect` answers from `known` (recording whether it paired), `remove`
/// forgets and answers what it knew, or throws `removeError`; `open` answers from `devices`.
private func managerSystem(
  known: [BluetoothDeviceInfo] = [], devices: [String: FakeDevice] = [:], removeError: CaptureError? = nil
) -> FakeDeviceSystem {
  var answers = FakeDeviceSystem.Answers()
  answers.removeFailure = removeError
  return FakeDeviceSystem(answers, known: known, devices: devices)
}

private let d600 = BluetoothDeviceInfo(
  address: "AA:BB:CC:DD:EE:01", name: "D600 [1]", deviceTypes: [.scannerD600], isPaired: true)
private let s370 = BluetoothDeviceInfo(
  address: "AA:BB:CC:DD:EE:02", name: "S370 [2]", deviceTypes: [.scannerS370, .nfcS370], isPaired: true)

private func remembered(_ id: String, alias: String? = nil, transport: String = "ble") -> RememberedDevice {
  RememberedDevice(id: id, alias: alias, name: "old \(id)", type: 7, transport: transport, lastSeen: nil)
}

@Suite("Device manager: the operations every front end shares", .timeLimit(.minutes(10)))
struct DeviceManagerTests {
  @Test("connectAndRemember connects on the manager's adapter and remembers the device under its address")
  func connectRemembers() async throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore("capture")
    let system = managerSystem(known: [d600])
    let manager = DeviceManager(system: system, store: store, adapter: "hci1")
    let connected = try await manager.connectAndRemember(address: d600.address, pair: true, alias: "dock")
    #expect(connected == d600)
    #expect(system.managementCalls == ["connect \(d600.address) pair=true adapter=hci1"])
    let entries = try store.load().devices
    #expect(entries.map(\.id) == [d600.address])
    #expect(entries.first?.alias == "dock")
    #expect(entries.first?.name == "D600 [1]")
    #expect(entries.first?.transport == RememberedDevice.bluetoothLETransport)
  }

  @Test("an automatic connect (keepingAlias) keeps the alias the user gave; a plain one replaces the entry")
  func keepingAlias() async throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore("capture")
    try store.remember(remembered(d600.address, alias: "till 3"))
    let manager = DeviceManager(system: managerSystem(known: [d600]), store: store)
    _ = try await manager.connectAndRemember(address: d600.address, keepingAlias: true)
    #expect(try store.load().devices.map(\.alias) == ["till 3"])
    _ = try await manager.connectAndRemember(address: d600.address)
    #expect(try store.load().devices.map(\.alias) == [nil])
  }

  @Test("an alias another device holds is refused and nothing is remembered")
  func aliasTaken() async throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore("capture")
    try store.remember(remembered("tcp://10.0.0.9:23", alias: "dock"))
    let manager = DeviceManager(system: managerSystem(known: [d600]), store: store)
    await #expect(throws: CaptureError.self) {
      try await manager.connectAndRemember(address: d600.address, alias: "dock")
    }
    #expect(try store.load().devices.map(\.id) == ["tcp://10.0.0.9:23"])
  }

  @Test("forget drops the entry and returns it; a device not remembered is nil and the file unchanged")
  func forget() async throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore("capture")
    try store.remember(remembered(d600.address))
    try store.remember(remembered("tcp://10.0.0.9:23"))
    let manager = DeviceManager(system: managerSystem(), store: store)
    #expect(try await manager.forget(d600.address)?.id == d600.address)
    #expect(try store.load().devices.map(\.id) == ["tcp://10.0.0.9:23"])
    #expect(try await manager.forget(d600.address) == nil)
    #expect(try store.load().devices.map(\.id) == ["tcp://10.0.0.9:23"])
  }

  @Test("remove unpairs and forgets a Bluetooth device, one removal per type it arrives as")
  func removeBluetooth() async throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore("capture")
    try store.remember(remembered(s370.address))
    let system = managerSystem(known: [s370])
    let removal = try await DeviceManager(system: system, store: store).remove(.bluetooth(s370.address))
    #expect(
      removal.removals == [
        DeviceInfo(id: s370.address, name: "S370 [2]", type: .scannerS370),
        DeviceInfo(id: s370.address, name: "S370 [2]", type: .nfcS370),
      ])
    #expect(system.managementCalls == ["remove \(s370.address)"])
    #expect(try store.load().devices.isEmpty)
  }

  @Test("remove of a remembered Classic scanner without bluetoothd forgets it under its remembered name")
  func removeClassicWithoutBluetoothd() async throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore("capture")
    try store.remember(remembered(d600.address, transport: RememberedDevice.classicTransport))
    let system = managerSystem(removeError: CaptureError(.notAvailable, "no bluetoothd"))
    let removal = try await DeviceManager(system: system, store: store).remove(.bluetooth(d600.address))
    #expect(
      removal.removals == [DeviceInfo(id: d600.address, name: "old \(d600.address)", type: DeviceType(7))])
    #expect(try store.load().devices.isEmpty)
  }

  @Test("remove: no bluetoothd is an error for a BLE entry, which stays remembered")
  func removeBLEWithoutBluetoothd() async throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore("capture")
    try store.remember(remembered(d600.address))
    let system = managerSystem(removeError: CaptureError(.notAvailable, "no bluetoothd"))
    await #expect(throws: CaptureError(.notAvailable, "no bluetoothd")) {
      try await DeviceManager(system: system, store: store).remove(.bluetooth(d600.address))
    }
    #expect(try store.load().devices.map(\.id) == [d600.address])
  }

  @Test("remove of what neither bluetoothd nor the state file knows is ESKT_NOTFOUND")
  func removeUnknown() async throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore("capture")
    let manager = DeviceManager(system: managerSystem(), store: store)
    await #expect(
      throws: CaptureError(.notFound, "\(d600.address) is neither known to bluetoothd nor remembered")
    ) { try await manager.remove(.bluetooth(d600.address)) }
    await #expect(throws: CaptureError(.notFound, "tcp://10.0.0.9:23 is not remembered")) {
      try await manager.remove(try DeviceSelector.parse("tcp://10.0.0.9:23"))
    }
  }

  @Test("remove of a TCP device forgets it without asking bluetoothd")
  func removeTCP() async throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore("capture")
    try store.remember(remembered("tcp://10.0.0.9:23"))
    let system = managerSystem()
    let removal = try await DeviceManager(system: system, store: store).remove(
      try DeviceSelector.parse("tcp://10.0.0.9:23"))
    #expect(removal.removals.map(\.id) == ["tcp://10.0.0.9:23"])
    #expect(system.managementCalls.isEmpty)
    #expect(try store.load().devices.isEmpty)
  }

  @Test("partnership reset deletes the device's bonds, closes it, then unpairs it on the host")
  func resetPartnership() async throws {
    let device = tableDevice(d600.address, writable: [.deletePairingBondingDevice])
    let system = managerSystem(known: [d600], devices: [d600.address: device])
    let temporary = TemporaryDirectory()
    let manager = DeviceManager(system: system, store: temporary.stateStore("capture"))
    try await manager.resetPartnership(address: d600.address)
    #expect(
      device.writesAndClose == [
        "set \(PropertyID.deletePairingBondingDevice.cliName) \(PropertyValue.byte(DeletePairing.all.rawValue))",
        "close",
      ])
    #expect(system.managementCalls == ["remove \(d600.address)"])
  }

  @Test("partnership reset of a model without the command is ESKT_NOTSUPPORTED; the host keeps its bond")
  func resetPartnershipUnsupported() async throws {
    let device = tableDevice(d600.address, writable: [])
    let system = managerSystem(known: [d600], devices: [d600.address: device])
    let temporary = TemporaryDirectory()
    let manager = DeviceManager(system: system, store: temporary.stateStore("capture"))
    await #expect(throws: CaptureError.self) { try await manager.resetPartnership(address: d600.address) }
    #expect(device.writesAndClose == ["close"])
    #expect(system.managementCalls.isEmpty)
  }

  @Test("apply writes only what differs, reads each write back, and puts link-dropping settings last")
  func applyProfile() async throws {
    let device = tableDevice(
      "dev", writable: [.securityModeDevice, .friendlyNameDevice, .localDecodeActionDevice],
      values: [
        .securityModeDevice: .byte(0), .friendlyNameDevice: .string("old"),
        .localDecodeActionDevice: .byte(1),
      ])
    let entries = [
      ProfileEntry(property: .securityModeDevice, value: .byte(1), label: "security-mode"),
      ProfileEntry(property: .friendlyNameDevice, value: .string("new"), label: "friendly-name"),
      ProfileEntry(property: .localDecodeActionDevice, value: .byte(1), label: "local-decode-action"),
    ]
    let results = try await DeviceManager.apply(entries, to: device, dryRun: false, profile: "p.json")
    #expect(
      results == [
        ProfileResult(label: "friendly-name", status: .changed),
        ProfileResult(label: "local-decode-action", status: .unchanged),
        ProfileResult(label: "security-mode", status: .changed),
      ])
    #expect(
      device.writesAndClose == [
        "set \(PropertyID.friendlyNameDevice.cliName) \(PropertyValue.string("new"))",
        "set \(PropertyID.securityModeDevice.cliName) \(PropertyValue.byte(1))",
      ])
    // Applying it again changes nothing: idempotent.
    let again = try await DeviceManager.apply(entries, to: device, dryRun: false, profile: "p.json")
    #expect(again.map(\.status) == [.unchanged, .unchanged, .unchanged])
    #expect(device.writesAndClose.count == 2)
  }

  @Test("apply --dry-run writes nothing; a write that reads back differently fails with INVALIDVALUE")
  func applyDryRunAndReadBack() async throws {
    let device = tableDevice(
      "dev", writable: [.friendlyNameDevice], values: [.friendlyNameDevice: .string("old")],
      readsBack: [.friendlyNameDevice: .string("old")])
    let entries = [ProfileEntry(property: .friendlyNameDevice, value: .string("new"), label: "friendly-name")]
    let dry = try await DeviceManager.apply(entries, to: device, dryRun: true, profile: "p.json")
    #expect(dry == [ProfileResult(label: "friendly-name", status: .wouldChange)])
    #expect(device.writesAndClose.isEmpty)
    let real = try await DeviceManager.apply(entries, to: device, dryRun: false, profile: "p.json")
    #expect(real.map(\.status) == [.failed])
    #expect(real.first?.error?.code == .invalidValue)
  }

  @Test("apply rejects the whole profile, nothing written, when one entry cannot be written")
  func applyRejects() async throws {
    let device = tableDevice(
      "dev", writable: [.friendlyNameDevice], values: [.friendlyNameDevice: .string("old")])
    let entries = [
      ProfileEntry(property: .friendlyNameDevice, value: .string("new"), label: "friendly-name"),
      ProfileEntry(property: .securityModeDevice, value: .byte(1), label: "security-mode"),
    ]
    let error = await #expect(throws: CaptureError.self) {
      try await DeviceManager.apply(entries, to: device, dryRun: false, profile: "p.json")
    }
    #expect(error?.code == .notSupported)
    #expect(
      error?.message.hasPrefix("profile 'p.json' rejected, nothing written: entry 2 (security-mode): ")
        == true)
    #expect(device.writesAndClose.isEmpty)
  }

  @Test("a verdict goes to a device that writes DataConfirmationDevice as good (0x15) or bad (0x2A)")
  func dataConfirmation() async throws {
    let device = tableDevice("dev", writable: [.dataConfirmationDevice])
    let target = try #require(DataConfirmationTarget(device))
    try await target.tell(good: true)
    try await target.tell(good: false)
    #expect(
      device.writesAndClose == [
        "set \(PropertyID.dataConfirmationDevice.cliName) \(PropertyValue.ulong(DataConfirmation.good.packed))",
        "set \(PropertyID.dataConfirmationDevice.cliName) \(PropertyValue.ulong(DataConfirmation.bad.packed))",
      ])
    #expect(DataConfirmationTarget(tableDevice("other", writable: [])) == nil)
  }

  @Test("the engine's devices work on the engine's state, and its open devices take verdicts")
  func engineOwnsManager() async throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore("capture")
    let device = tableDevice("dev", writable: [.dataConfirmationDevice])
    let engine = CaptureEngine(system: managerSystem(known: [d600]), store: store)
    _ = try await engine.devices.connectAndRemember(address: d600.address, keepingAlias: true)
    #expect(try store.load().devices.map(\.id) == [d600.address])
    engine.attach([device])
    #expect(engine.dataConfirmationTarget(id: "dev") != nil)
    #expect(engine.dataConfirmationTarget(id: "absent") == nil)
    await engine.stop()
    await engine.wait()
  }
}
