import Bluetooth

/// The command barcode texts that put a Socket Mobile Classic scanner in SPP initiator mode towards
/// this host (docs/device-protocols.md §5.2: 1D scanners read Code 128 `#FNI<addr>#`, 2D scanners read
/// `#FNC SPP Initiator <addr>#`; the address is 12 hex digits without colons).
public struct PairingCode: Sendable, Equatable {
  public var host: BluetoothAddress
  public init(host: BluetoothAddress) { self.host = host }
  /// The host address as capture prints addresses (`AA:BB:CC:DD:EE:FF`).
  public var hostText: String { host.description }
  /// For 1D scanners (Code 128).
  public var linear: String { "#FNI\(host.compact)#" }
  /// For 2D scanners (DataMatrix or QR).
  public var twoDimensional: String { "#FNC SPP Initiator \(host.compact)#" }
}
