import BlueZ
import Bluetooth
import CaptureCore

/// Bluetooth Classic look-ups that need no connection: HCI inquiry for `discover --classic` when
/// bluetoothd is absent, and this host's adapter address for the pairing barcodes.
public enum ClassicDiscovery {
  /// A device an inquiry found.
  public struct Found: Sendable, Equatable {
    public var address: BluetoothAddress
    public var name: String?
    /// The 24-bit Class of Device.
    public var classOfDevice: UInt32
    /// `AA:BB:CC:DD:EE:FF`.
    public var addressText: String { address.description }
    public var isSocketMobile: Bool { name.map(ClassicDiscovery.isSocketMobileName) ?? false }
  }

  /// `Socket <model> [xxxxxx]`, xxxxxx being the last 6 hex digits of the BD address
  /// (device-protocols.md §5.1, e.g. `Socket 7Xi [0A1B2C]`, `Socket CHS [0A1B2C]`).
  public static func isSocketMobileName(_ name: String) -> Bool {
    guard name.hasPrefix("Socket "), name.hasSuffix("]"), let open = name.lastIndex(of: "[") else {
      return false
    }
    let model = name[name.index(name.startIndex, offsetBy: 7)..<open].trimmingSpaces
    let digits = name[name.index(after: open)..<name.index(before: name.endIndex)]
    return !model.isEmpty && digits.count == 6 && digits.allSatisfy(\.isHexDigit)
  }

  /// An HCI inquiry of about `seconds`, with names; Socket Mobile devices only unless `all`.
  public static func inquiry(
    adapter: String?, seconds: Double, all: Bool, system: any BluetoothSystem = LibBluetoothSystem()
  ) throws(CaptureError) -> [Found] {
    let found = try ClassicCalls(system: system).inquiry(adapter: adapter, seconds: seconds)
    return found.map { Found(address: $0.address, name: $0.name, classOfDevice: $0.classOfDevice) }
      .filter { all || $0.isSocketMobile }
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
    return try ClassicCalls(system: system).adapterAddress(adapter: adapter)
  }
}

extension Substring {
  fileprivate var trimmingSpaces: Substring {
    var s = self
    while s.first == " " { s = s.dropFirst() }
    while s.last == " " { s = s.dropLast() }
    return s
  }
}
