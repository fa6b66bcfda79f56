import BlueZ
import CaptureCore
import Synchronization

/// The Socket Mobile D600 (docs/device-protocols.md §2): scan data notified on its scan-data
/// characteristic, scan control written to another, and a config channel (`D600ConfigChannel`).
/// Both UUID variants (pairing-required and no-pairing) behave alike.
final class D600Handler: BLEFamilyHandler {
  private let emitter: BLEEmitter
  private let client: BlueZClient
  private let noPairing: Bool
  private let scan = Mutex(D600ScanAssembler())
  /// The config characteristic's path on the current link (set at bring-up).
  private let configPath = PathBox()
  let config: D600ConfigChannel

  init(emitter: BLEEmitter, client: BlueZClient, noPairing: Bool) {
    self.emitter = emitter
    self.client = client
    self.noPairing = noPairing
    let configPath = self.configPath
    config = D600ConfigChannel { block throws(CaptureError) in
      guard let path = configPath.path.withLock({ $0 }) else {
        throw CaptureError(.bleGatt, "the D600's config characteristic is not known on this link")
      }
      try await client.writeValue(path, block, type: BlueZName.WriteOption.request)
    }
  }

  var scanDataUUID: String { noPairing ? GattUUID.d600ScanDataNoPairing : GattUUID.d600ScanData }
  var configUUID: String { noPairing ? GattUUID.d600ConfigIONoPairing : GattUUID.d600ConfigIO }
  var scanControlUUID: String { noPairing ? GattUUID.d600ScanControlNoPairing : GattUUID.d600ScanControl }

  func dataRoutes(_ gatt: BLEGatt) throws(CaptureError) -> [String: NotifyRoute] {
    let scan = try gatt.require(scanDataUUID, "scan data")
    let config = try gatt.require(configUUID, "config")
    configPath.path.withLock { $0 = config.path }
    return [scan.path: .d600ScanData, config.path: .d600Config]
  }

  /// Scanner mode (config AE 07, docs/device-protocols.md §2.3): without it the D600 sends no scan data.
  func broughtUp(_ gatt: BLEGatt) async throws(CaptureError) {
    let answer = try await config.command(
      D600ConfigCommand.operatingMode.rawValue, [D600OperatingMode.scanner])
    if let answer {
      if !answer.isSuccess {
        emitter.warn("\(gatt.deviceName): scanner mode (config AE 07) answered status \(answer.status)")
      }
    } else {
      emitter.warn("\(gatt.deviceName): no answer to scanner mode (config AE 07) within 2 s")
    }
  }

  func receive(_ bytes: [UInt8], on route: NotifyRoute) {
    switch route {
    case .d600ScanData:
      let frames = scan.withLock { $0.feed(bytes) }
      for frame in frames { emit(frame) }
    case .d600Config:
      config.receive(bytes)
    default:
      break
    }
  }

  func linkDown() {
    scan.withLock { $0 = D600ScanAssembler() }
    config.failCurrent()
  }

  var readable: [PropertyID] { [.deviceSpecific] }
  var writable: [PropertyID] {
    [
      .triggerDevice, .dataConfirmationDevice, .restoreFactoryDefaultsDevice, .deletePairingBondingDevice,
      .deviceSpecific,
    ]
  }
  var triggers: Set<Trigger> { [.start, .stop, .continuousScan] }
  var events: Set<EventKind> { [.decodedData] }

  func get(_ property: PropertyID, argument: PropertyValue, _ gatt: BLEGatt) async throws(CaptureError)
    -> PropertyValue
  {
    guard property == .deviceSpecific else {
      throw .notSupported("\(gatt.deviceName) does not support \(property.cliName) (\(property.hex))")
    }
    // A raw D600 config command: first byte the command code, the rest its payload (docs/device-protocols.md
    // §2.6); the answer's data comes back. Register read = 0E <addr>, write = 0D <addr> <bytes>.
    guard case .array(let bytes) = argument, let command = bytes.first else {
      throw .invalidParameter("device-specific needs the command bytes (e.g. 0e 01)")
    }
    return .array(try await expectingSuccess(command, Array(bytes.dropFirst())).data)
  }

  func set(_ property: PropertyID, _ value: PropertyValue, _ gatt: BLEGatt) async throws(CaptureError) {
    switch (property, value) {
    case (.triggerDevice, .byte(let raw)):
      guard let action = Trigger(rawValue: raw) else {
        throw .invalidParameter("unknown trigger value \(raw)")
      }
      try await trigger(action, gatt)
    case (.dataConfirmationDevice, .ulong(let packed)):
      let confirmation = DataConfirmation(packed: packed)
      let good = confirmation.led == .green || confirmation.beep == .good || confirmation.rumble == .good
      for command in D600Control.confirmation(
        good: good, led: confirmation.led != .none, beep: confirmation.beep != .none,
        rumble: confirmation.rumble != .none, firmware: nil)
      {
        try await scanControl(command, gatt)
      }
    case (.restoreFactoryDefaultsDevice, _):
      _ = try await expectingSuccess(
        D600ConfigCommand.resetOrDeleteBonds.rawValue, D600ResetMagic.factoryReset)
    case (.deletePairingBondingDevice, _):
      _ = try await expectingSuccess(
        D600ConfigCommand.resetOrDeleteBonds.rawValue, D600ResetMagic.deleteBonds)
    case (.deviceSpecific, .array(let bytes)):
      guard let command = bytes.first else {
        throw .invalidParameter("device-specific needs the command bytes")
      }
      _ = try await expectingSuccess(command, Array(bytes.dropFirst()))
    default:
      throw .invalidParameter("wrong value type \(value.type.name) for \(property.cliName)")
    }
  }

  /// D600 scan-control opcodes A1/A0/A3 (docs/device-protocols.md §2.5). Their exact semantics are not
  /// public: this follows the SpringCore CONTROL class they coincide with (A0 READER_STOP, A1 reader start)
  /// and TS's use of A3 for the automatic mode.
  func trigger(_ action: Trigger, _ gatt: BLEGatt) async throws(CaptureError) {
    switch action {
    case .start: try await scanControl(D600Control.scanMode(0xA1), gatt)
    case .stop: try await scanControl(D600Control.scanMode(0xA0), gatt)
    case .continuousScan: try await scanControl(D600Control.scanMode(0xA3), gatt)
    default: throw .notSupported("\(gatt.deviceName) cannot \(action.cliName)")
    }
  }

  private func scanControl(_ bytes: [UInt8], _ gatt: BLEGatt) async throws(CaptureError) {
    let control = try gatt.require(scanControlUUID, "scan control")
    try await gatt.client.writeValue(control.path, bytes, type: BlueZName.WriteOption.request)
  }

  private func expectingSuccess(_ command: UInt8, _ payload: [UInt8]) async throws(CaptureError)
    -> D600ConfigAnswer
  {
    guard let answer = try await config.command(command, payload) else {
      throw CaptureError(.requestTimedOut, "the D600 did not answer config command \(hex(command))")
    }
    guard answer.isSuccess else {
      throw CaptureError(
        .commandDenied, "the D600 refused config command \(hex(command)) (status \(answer.status))")
    }
    return answer
  }

  /// D600 scan data: the 2-hex-digit family names the tag type; malformed and oversized frames are
  /// reported as errors with their bytes kept, never dropped silently (docs/device-protocols.md §2.4).
  private func emit(_ event: D600ScanEvent) {
    switch event {
    case .frame(let frame):
      let source = frame.family.flatMap(NFCProtocolMap.sdkTagTypeID).map(DataSource.init) ?? .notSpecified
      emitter.emit(.decodedData(DecodedData(dataSource: source, bytes: frame.payload)))
    case .oversized(let raw):
      emitter.emit(
        .error(CaptureError(.invalidFormat, "D600 frame longer than 4096 bytes (\(raw.count) bytes kept)")))
    case .malformed(let raw):
      emitter.emit(.decodedData(DecodedData(dataSource: .notSpecified, bytes: raw)))
    }
  }
}

func hex(_ b: UInt8) -> String {
  let s = String(b, radix: 16, uppercase: true)
  return s.count == 1 ? "0" + s : s
}

/// Shared between the handler and its channel's writer (a Mutex cannot be captured by value).
private final class PathBox: Sendable {
  let path = Mutex<String?>(nil)
}
