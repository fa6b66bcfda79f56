import BlueZ
import Bluetooth
import CaptureCore

/// Bluetooth Classic look-ups that need no connection: HCI inquiry for `discover --classic` when
/// bluetoothd is absent, and this host's adapter address for the pairing barcodes.
public enum ClassicDiscovery {
  /// The SDP service class Windows recognises Bluetooth barcode scanners in SPP mode by, which Socket
  /// Mobile Classic scanners list (docs/device-protocols.md §5.3, MS
  /// barcode-scanner-bluetooth-service-uuids).
  public static let scannerServiceClass = UUID128("A1220169-E854-473E-9CB5-873ACBDF1F13")!

  /// How a device was recognised as a Socket Mobile scanner; the raw value is the `recognizedBy` JSON
  /// value of `discover`.
  public enum Recognition: String, Sendable, Equatable {
    /// `Socket <model> [xxxxxx]` (docs/device-protocols.md §5.1).
    case name
    /// SDP service class `scannerServiceClass` (docs/device-protocols.md §5.3): from an SDP search, or
    /// bluetoothd's Device1.UUIDs.
    case serviceClass
  }

  /// A device an inquiry found.
  public struct Found: Sendable, Equatable {
    public var address: BluetoothAddress
    public var name: String?
    /// The 24-bit Class of Device.
    public var classOfDevice: UInt32
    /// nil: not recognised as a Socket Mobile scanner (listed only with --all).
    public var recognition: Recognition?
    /// `AA:BB:CC:DD:EE:FF`.
    public var addressText: String { address.description }
    public var isSocketMobile: Bool { recognition != nil }
  }

  /// `Socket <model> [xxxxxx]`, xxxxxx being the last 6 hex digits of the BD address
  /// (docs/device-protocols.md §5.1, e.g. `Socket 7Xi [0A1B2C]`, `Socket CHS [0A1B2C]`).
  public static func isSocketMobileName(_ name: String) -> Bool {
    guard name.hasPrefix("Socket "), name.hasSuffix("]"), let open = name.lastIndex(of: "[") else {
      return false
    }
    let model = name[name.index(name.startIndex, offsetBy: 7)..<open].trimmingSpaces([" "])
    let digits = name[name.index(after: open)..<name.index(before: name.endIndex)]
    return !model.isEmpty && digits.count == 6 && digits.allSatisfy(\.isHexDigit)
  }

  /// How a device bluetoothd lists is recognised: the service class among its UUIDs (bluetoothd fills
  /// Device1.UUIDs from EIR and SDP, lower case) wins over the name.
  public static func recognize(name: String?, uuids: some Sequence<String>) -> Recognition? {
    let wanted = scannerServiceClass.description
    if uuids.contains(where: { $0.lowercased() == wanted }) { return .serviceClass }
    if let name, isSocketMobileName(name) { return .name }
    return nil
  }

  /// An HCI inquiry of about `seconds`, with names; Socket Mobile devices only unless `all`. A device
  /// whose name does not say Socket is asked over SDP for the scanner service class; when that SDP
  /// search fails (out of range by now, refused) the device is left unrecognised and `note` says why.
  /// The inquiry, the name requests and the SDP searches block for seconds: they run on the
  /// `BlockingExecutor`, and cancelling the caller skips the look-ups not yet started.
  public static func inquiry(
    adapter: String?, seconds: Double, all: Bool, system: any BluetoothSystem = LibBluetoothSystem(),
    note: (String) -> Void = { _ in }
  ) async throws(CaptureError) -> [Found] {
    let (found, notes) = try await BlockingExecutor.shared.run { (job) throws(CaptureError) in
      try inquiryBlocking(adapter: adapter, seconds: seconds, system: system, cancelled: { job.isCancelled })
    }
    for line in notes { note(line) }
    return found.filter { all || $0.isSocketMobile }
  }

  /// The blocking part of `inquiry`: every device found, and the notes for the SDP searches that failed.
  static func inquiryBlocking(
    adapter: String?, seconds: Double, system: any BluetoothSystem, cancelled: () -> Bool
  ) throws(CaptureError) -> ([Found], [String]) {
    let calls = ClassicCalls(system: system)
    let found = try calls.inquiry(adapter: adapter, seconds: seconds)
    // The SDP searches go out from the adapter that made the inquiry (--adapter), not any adapter.
    let sdp = try calls.pinned(to: adapter)
    var notes: [String] = []
    let devices = found.map { device in
      var recognition: Recognition? = nil
      if let name = device.name, isSocketMobileName(name) {
        recognition = .name
      } else if cancelled() {
        notes.append("\(device.address): not recognised, SDP search skipped: cancelled")
      } else {
        do throws(CaptureError) {
          if try sdp.hasServiceClass(device.address, scannerServiceClass) { recognition = .serviceClass }
        } catch {
          notes.append("\(device.address): not recognised, SDP failed: \(error.message)")
        }
      }
      return Found(
        address: device.address, name: device.name, classOfDevice: device.classOfDevice,
        recognition: recognition)
    }
    return (devices, notes)
  }

  /// The scanner's friendly name: bluetoothd's Device1.Alias (the user's alias, else the remote
  /// name) when bluetoothd runs and knows the device, else an HCI Remote Name Request.
  public static func friendlyName(
    _ address: BluetoothAddress, adapter: String?, system: any BluetoothSystem = LibBluetoothSystem()
  ) async throws(CaptureError) -> String {
    if let client = try? await BlueZClient.connect(adapter: adapter) {
      defer { client.close() }
      let objects = try await client.objects()
      if let device = objects.device(address: address.description, on: client.adapterPath),
        device.hasAlias || device.name != nil
      {
        return device.alias
      }
    }
    // An HCI Remote Name Request waits up to 5 s for the device: on the blocking executor.
    return try await BlockingExecutor.shared.run { _ throws(CaptureError) in
      try ClassicCalls(system: system).remoteName(address, adapter: adapter)
    }
  }

  /// Is bluetoothd on the system bus? (BlueZ is preferred whenever it is.)
  public static func bluetoothdReachable(adapter: String?) async -> Bool {
    guard let client = try? await BlueZClient.connect(adapter: adapter) else { return false }
    client.close()
    return true
  }

  /// The SPP initiator barcodes for this host.
  public static func pairingCode(adapter: String?) async throws(CaptureError) -> PairingCode {
    PairingCode(host: try await hostAddress(adapter: adapter))
  }

  /// This host's adapter address: BlueZ `Adapter1.Address` when bluetoothd runs, else HCI.
  public static func hostAddress(adapter: String?, system: any BluetoothSystem = LibBluetoothSystem())
    async throws(CaptureError) -> BluetoothAddress
  {
    if let client = try? await BlueZClient.connect(adapter: adapter) {
      defer { client.close() }
      let info = try client.adapter(in: try await client.objects())
      guard let address = BluetoothAddress(info.address) else {
        throw CaptureError(
          .notAvailable, "bluetoothd gave adapter \(info.name) no usable address '\(info.address)'")
      }
      return address
    }
    return try await BlockingExecutor.shared.run { _ throws(CaptureError) in
      try ClassicCalls(system: system).adapterAddress(adapter: adapter)
    }
  }
}
