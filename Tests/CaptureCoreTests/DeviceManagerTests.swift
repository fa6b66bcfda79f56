import Synchronization
import Testing

@testable import CaptureCore

/// A device whose properties are a table: `get` reads it, `set` writes it (and records the write), and
/// a property listed in `readsBack` reads back that value after any write, as a device that ignored it.
private final class TableDevice: Device, Sendable {
  let info: DeviceInfo
  let capabilities: Capabilities
  let events = AsyncStream<Event> { $0.finish() }
  private let table: Mutex<[PropertyID: PropertyValue]>
  private let readsBack: [PropertyID: PropertyValue]
  private let log = Mutex<[String]>([])

  init(
    _ id: String, writable: [PropertyID], values: [PropertyID: PropertyValue] = [:],
    readsBack: [PropertyID: PropertyValue] = [:]
  ) {
    info = DeviceInfo(id: id, name: "Table \(id)", type: .scannerD600)
    capabilities = Capabilities(readable: writable, writable: writable, triggers: [], events: [])
    table = Mutex(values)
    self.readsBack = readsBack
  }

  /// "set NAME VALUE" and "close", in the order they happened.
  var calls: [String] { log.withLock { $0 } }

  func get(_ property: PropertyID, argument: PropertyValue) async throws(CaptureError) -> PropertyValue {
    guard let value = table.withLock({ $0[property] }) else { throw unsupported(property) }
    return value
  }
  func set(_ property: PropertyID, _ value: PropertyValue) async throws(CaptureError) {
    guard capabilities.canWrite(property) else { throw unsupported(property) }
    log.withLock { $0.append("set \(property.cliName) \(value)") }
    table.withLock { $0[property] = readsBack[property] ?? value }
  }
  func trigger(_ action: Trigger) async throws(CaptureError) { throw .notSupported("table") }
  func close() async { log.withLock { $0.append("close") } }
}

/// bluetoothd as a table: `connect` answers from `known` (recording whether it paired), `remove`
/// forgets and answers what it knew, or throws `removeError`; `open` answers from `devices`.
private final class ManagerSystem: DeviceSystem, Sendable {
  let known: Mutex<[String: BluetoothDeviceInfo]>
  let devices: [String: TableDevice]
  let removeError: CaptureError?
  let log = Mutex<[String]>([])

  init(
    known: [BluetoothDeviceInfo] = [], devices: [String: TableDevice] = [:], removeError: CaptureError? = nil
  ) {
    self.known = Mutex(Dictionary(uniqueKeysWithValues: known.map { ($0.address, $0) }))
    self.devices = devices
    self.removeError = removeError
  }

  var calls: [String] { log.withLock { $0 } }

  func open(_ request: OpenRequest, state: StateStore) async throws(CaptureError) -> any Device {
    guard let device = devices[request.selector.description] else {
      throw CaptureError(.fileNotFound, "\(request.selector) is not here")
    }
    return device
  }
  func connect(address: String, adapter: String?, pair: Bool, timeout: Duration?)
    async throws(CaptureError) -> BluetoothDeviceInfo
  {
    log.withLock { $0.append("connect \(address) pair=\(pair) adapter=\(adapter ?? "-")") }
    guard let info = known.withLock({ $0[address] }) else {
      throw CaptureError(.notFound, "\(address) unseen")
    }
    return info
  }
  func remove(address: String, adapter: String?) async throws(CaptureError) -> BluetoothDeviceInfo? {
    log.withLock { $0.append("remove \(address)") }
    if let removeError { throw removeError }
    return known.withLock { $0.removeValue(forKey: address) }
  }
  func partnership(address: String, adapter: String?) async throws(CaptureError) -> PartnershipInfo {
    guard let info = known.withLock({ $0[address] }) else {
      throw CaptureError(.notFound, "\(address) unseen")
    }
    return PartnershipInfo(
      device: info, isBonded: true, isTrusted: true, isConnected: true, variant: "no-pairing")
  }
  func discover(_ request: DiscoveryRequest, found: @escaping @Sendable (DiscoveredDeviceInfo) -> Void)
    async throws(CaptureError) -> Int
  { throw CaptureError(.notAvailable, "no bluetoothd here") }
  func bluetoothdReachable(adapter: String?) async -> Bool { false }
  func inquire(adapter: String?, seconds: Double, all: Bool, note: (String) -> Void)
    async throws(CaptureError) -> [DiscoveredDeviceInfo]
  { throw CaptureError(.notAvailable, "no adapter") }
  func pairClassic(address: String, adapter: String?, timeout: Duration?) async throws(CaptureError) -> String
  {
    throw CaptureError(.notAvailable, "no bluetoothd here")
  }
  func probeClassic(address: String, request: OpenRequest, name: String?)
    async throws(CaptureError) -> ClassicProbe
  { throw CaptureError(.notAvailable, "no adapter") }
  func connected(adapter: String?) async throws(CaptureError) -> [BluetoothDeviceInfo] { [] }
  func accept(channel: Int, request: OpenRequest) async throws(CaptureError) -> any Device {
    throw CaptureError(.notAvailable, "no adapter")
  }
  func pairingBarcodes(adapter: String?) async throws(CaptureError) -> PairingBarcodes {
    throw CaptureError(.notAvailable, "no adapter")
  }
  func inputDevices() -> (devices: [InputDeviceInfo], unreadable: [String]) { ([], []) }
  func diagnose(_ request: DiagnosisRequest) async -> [HostCheck] { [] }
}

private let d600 = BluetoothDeviceInfo(
  address: "AA:BB:CC:DD:EE:01", name: "D600 [1]", deviceTypes: [.scannerD600], isPaired: true)
private let s370 = BluetoothDeviceInfo(
  address: "AA:BB:CC:DD:EE:02", name: "S370 [2]", deviceTypes: [.scannerS370, .nfcS370], isPaired: true)

private func remembered(_ id: String, alias: String? = nil, transport: String = "ble") -> RememberedDevice {
  RememberedDevice(id: id, alias: alias, name: "old \(id)", type: 7, transport: transport, lastSeen: nil)
}

@Suite("Device manager: the operations every front end shares", .timeLimit(.minutes(1)))
struct DeviceManagerTests {
  @Test("connectAndRemember connects on the manager's adapter and remembers the device under its address")
  func connectRemembers() async throws {
    let store = StateStore(directory: tempDir() + "/capture")
    let system = ManagerSystem(known: [d600])
    let manager = DeviceManager(system: system, store: store, adapter: "hci1")
    let connected = try await manager.connectAndRemember(address: d600.address, pair: true, alias: "dock")
    #expect(connected == d600)
    #expect(system.calls == ["connect \(d600.address) pair=true adapter=hci1"])
    let entries = try store.load().devices
    #expect(entries.map(\.id) == [d600.address])
    #expect(entries.first?.alias == "dock")
    #expect(entries.first?.name == "D600 [1]")
    #expect(entries.first?.transport == RememberedDevice.bluetoothLETransport)
  }

  @Test("an automatic connect (keepingAlias) keeps the alias the user gave; a plain one replaces the entry")
  func keepingAlias() async throws {
    let store = StateStore(directory: tempDir() + "/capture")
    try store.remember(remembered(d600.address, alias: "till 3"))
    let manager = DeviceManager(system: ManagerSystem(known: [d600]), store: store)
    _ = try await manager.connectAndRemember(address: d600.address, keepingAlias: true)
    #expect(try store.load().devices.map(\.alias) == ["till 3"])
    _ = try await manager.connectAndRemember(address: d600.address)
    #expect(try store.load().devices.map(\.alias) == [nil])
  }

  @Test("an alias another device holds is refused and nothing is remembered")
  func aliasTaken() async throws {
    let store = StateStore(directory: tempDir() + "/capture")
    try store.remember(remembered("tcp://10.0.0.9:23", alias: "dock"))
    let manager = DeviceManager(system: ManagerSystem(known: [d600]), store: store)
    await #expect(throws: CaptureError.self) {
      try await manager.connectAndRemember(address: d600.address, alias: "dock")
    }
    #expect(try store.load().devices.map(\.id) == ["tcp://10.0.0.9:23"])
  }

  @Test("forget drops the entry and returns it; a device not remembered is nil and the file unchanged")
  func forget() async throws {
    let store = StateStore(directory: tempDir() + "/capture")
    try store.remember(remembered(d600.address))
    try store.remember(remembered("tcp://10.0.0.9:23"))
    let manager = DeviceManager(system: ManagerSystem(), store: store)
    #expect(try await manager.forget(d600.address)?.id == d600.address)
    #expect(try store.load().devices.map(\.id) == ["tcp://10.0.0.9:23"])
    #expect(try await manager.forget(d600.address) == nil)
    #expect(try store.load().devices.map(\.id) == ["tcp://10.0.0.9:23"])
  }

  @Test("remove unpairs and forgets a Bluetooth device, one removal per type it arrives as")
  func removeBluetooth() async throws {
    let store = StateStore(directory: tempDir() + "/capture")
    try store.remember(remembered(s370.address))
    let system = ManagerSystem(known: [s370])
    let removal = try await DeviceManager(system: system, store: store).remove(.bluetooth(s370.address))
    #expect(
      removal.removals == [
        DeviceInfo(id: s370.address, name: "S370 [2]", type: .scannerS370),
        DeviceInfo(id: s370.address, name: "S370 [2]", type: .nfcS370),
      ])
    #expect(system.calls == ["remove \(s370.address)"])
    #expect(try store.load().devices.isEmpty)
  }

  @Test("remove of a remembered Classic scanner without bluetoothd forgets it under its remembered name")
  func removeClassicWithoutBluetoothd() async throws {
    let store = StateStore(directory: tempDir() + "/capture")
    try store.remember(remembered(d600.address, transport: RememberedDevice.classicTransport))
    let system = ManagerSystem(removeError: CaptureError(.notAvailable, "no bluetoothd"))
    let removal = try await DeviceManager(system: system, store: store).remove(.bluetooth(d600.address))
    #expect(
      removal.removals == [DeviceInfo(id: d600.address, name: "old \(d600.address)", type: DeviceType(7))])
    #expect(try store.load().devices.isEmpty)
  }

  @Test("remove: no bluetoothd is an error for a BLE entry, which stays remembered")
  func removeBLEWithoutBluetoothd() async throws {
    let store = StateStore(directory: tempDir() + "/capture")
    try store.remember(remembered(d600.address))
    let system = ManagerSystem(removeError: CaptureError(.notAvailable, "no bluetoothd"))
    await #expect(throws: CaptureError(.notAvailable, "no bluetoothd")) {
      try await DeviceManager(system: system, store: store).remove(.bluetooth(d600.address))
    }
    #expect(try store.load().devices.map(\.id) == [d600.address])
  }

  @Test("remove of what neither bluetoothd nor the state file knows is ESKT_NOTFOUND")
  func removeUnknown() async throws {
    let store = StateStore(directory: tempDir() + "/capture")
    let manager = DeviceManager(system: ManagerSystem(), store: store)
    await #expect(
      throws: CaptureError(.notFound, "\(d600.address) is neither known to bluetoothd nor remembered")
    ) { try await manager.remove(.bluetooth(d600.address)) }
    await #expect(throws: CaptureError(.notFound, "tcp://10.0.0.9:23 is not remembered")) {
      try await manager.remove(try DeviceSelector.parse("tcp://10.0.0.9:23"))
    }
  }

  @Test("remove of a TCP device forgets it without asking bluetoothd")
  func removeTCP() async throws {
    let store = StateStore(directory: tempDir() + "/capture")
    try store.remember(remembered("tcp://10.0.0.9:23"))
    let system = ManagerSystem()
    let removal = try await DeviceManager(system: system, store: store).remove(
      try DeviceSelector.parse("tcp://10.0.0.9:23"))
    #expect(removal.removals.map(\.id) == ["tcp://10.0.0.9:23"])
    #expect(system.calls.isEmpty)
    #expect(try store.load().devices.isEmpty)
  }

  @Test("partnership reset deletes the device's bonds, closes it, then unpairs it on the host")
  func resetPartnership() async throws {
    let device = TableDevice(d600.address, writable: [.deletePairingBondingDevice])
    let system = ManagerSystem(known: [d600], devices: [d600.address: device])
    let manager = DeviceManager(system: system, store: StateStore(directory: tempDir() + "/capture"))
    try await manager.resetPartnership(address: d600.address)
    #expect(
      device.calls == [
        "set \(PropertyID.deletePairingBondingDevice.cliName) \(PropertyValue.byte(DeletePairing.all.rawValue))",
        "close",
      ])
    #expect(system.calls == ["remove \(d600.address)"])
  }

  @Test("partnership reset of a model without the command is ESKT_NOTSUPPORTED; the host keeps its bond")
  func resetPartnershipUnsupported() async throws {
    let device = TableDevice(d600.address, writable: [])
    let system = ManagerSystem(known: [d600], devices: [d600.address: device])
    let manager = DeviceManager(system: system, store: StateStore(directory: tempDir() + "/capture"))
    await #expect(throws: CaptureError.self) { try await manager.resetPartnership(address: d600.address) }
    #expect(device.calls == ["close"])
    #expect(system.calls.isEmpty)
  }

  @Test("apply writes only what differs, reads each write back, and puts link-dropping settings last")
  func applyProfile() async throws {
    let device = TableDevice(
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
      device.calls == [
        "set \(PropertyID.friendlyNameDevice.cliName) \(PropertyValue.string("new"))",
        "set \(PropertyID.securityModeDevice.cliName) \(PropertyValue.byte(1))",
      ])
    // Applying it again changes nothing: idempotent.
    let again = try await DeviceManager.apply(entries, to: device, dryRun: false, profile: "p.json")
    #expect(again.map(\.status) == [.unchanged, .unchanged, .unchanged])
    #expect(device.calls.count == 2)
  }

  @Test("apply --dry-run writes nothing; a write that reads back differently fails with INVALIDVALUE")
  func applyDryRunAndReadBack() async throws {
    let device = TableDevice(
      "dev", writable: [.friendlyNameDevice], values: [.friendlyNameDevice: .string("old")],
      readsBack: [.friendlyNameDevice: .string("old")])
    let entries = [ProfileEntry(property: .friendlyNameDevice, value: .string("new"), label: "friendly-name")]
    let dry = try await DeviceManager.apply(entries, to: device, dryRun: true, profile: "p.json")
    #expect(dry == [ProfileResult(label: "friendly-name", status: .wouldChange)])
    #expect(device.calls.isEmpty)
    let real = try await DeviceManager.apply(entries, to: device, dryRun: false, profile: "p.json")
    #expect(real.map(\.status) == [.failed])
    #expect(real.first?.error?.code == .invalidValue)
  }

  @Test("apply rejects the whole profile, nothing written, when one entry cannot be written")
  func applyRejects() async throws {
    let device = TableDevice(
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
    #expect(device.calls.isEmpty)
  }

  @Test("a verdict goes to a device that writes DataConfirmationDevice as good (0x15) or bad (0x2A)")
  func dataConfirmation() async throws {
    let device = TableDevice("dev", writable: [.dataConfirmationDevice])
    let target = try #require(DataConfirmationTarget(device))
    try await target.tell(good: true)
    try await target.tell(good: false)
    #expect(
      device.calls == [
        "set \(PropertyID.dataConfirmationDevice.cliName) \(PropertyValue.ulong(DataConfirmation.good.packed))",
        "set \(PropertyID.dataConfirmationDevice.cliName) \(PropertyValue.ulong(DataConfirmation.bad.packed))",
      ])
    #expect(DataConfirmationTarget(TableDevice("other", writable: [])) == nil)
  }

  @Test("the engine's devices work on the engine's state, and its open devices take verdicts")
  func engineOwnsManager() async throws {
    let store = StateStore(directory: tempDir() + "/capture")
    let device = TableDevice("dev", writable: [.dataConfirmationDevice])
    let engine = CaptureEngine(system: ManagerSystem(known: [d600]), store: store)
    _ = try await engine.devices.connectAndRemember(address: d600.address, keepingAlias: true)
    #expect(try store.load().devices.map(\.id) == [d600.address])
    engine.attach([device])
    #expect(engine.dataConfirmationTarget(id: "dev") != nil)
    #expect(engine.dataConfirmationTarget(id: "absent") == nil)
    await engine.stop()
    await engine.wait()
  }
}
