/// A Bluetooth device address (BD_ADDR), kept in the order people write it: `AA:BB:CC:DD:EE:FF` has
/// `bytes[0] == 0xAA`. The kernel's `bdaddr_t` stores the same six bytes little-endian (last printed
/// byte first, BlueZ `str2ba`/`ba2str`); `littleEndianBytes` and `init(littleEndianBytes:)` are the one
/// place that reverses them (docs/swift-on-linux.md).
public struct BluetoothAddress: Sendable, Hashable, CustomStringConvertible {
  public let bytes: [UInt8]

  public init?(bytes: [UInt8]) {
    guard bytes.count == 6 else { return nil }
    self.bytes = bytes
  }

  /// Parses `AA:BB:CC:DD:EE:FF` (either case; `-` also accepted as separator) or the 12 hex digits
  /// without separators used in command barcodes (docs/device-protocols.md §5.2).
  public init?(_ text: String) {
    var groups = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
    if groups.count != 6 {
      groups = text.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
    }
    if groups.count != 6, text.count == 12 {
      let chars = Array(text)
      groups = stride(from: 0, to: 12, by: 2).map { String(chars[$0..<$0 + 2]) }
    }
    guard groups.count == 6 else { return nil }
    var parsed: [UInt8] = []
    for group in groups {
      guard group.count == 2, group.allSatisfy(\.isHexDigit), let byte = UInt8(group, radix: 16) else {
        return nil
      }
      parsed.append(byte)
    }
    bytes = parsed
  }

  /// The `bdaddr_t` byte order.
  public init?(littleEndianBytes: [UInt8]) {
    self.init(bytes: littleEndianBytes.reversed())
  }

  /// The `bdaddr_t` byte order, for the C shim.
  public var littleEndianBytes: [UInt8] { bytes.reversed() }

  /// Upper case with colons, as BlueZ's `ba2str` and the rest of capture print it.
  public var description: String { bytes.map(Self.hex).joined(separator: ":") }

  /// The 12 hex digits without separators that command barcodes carry (`#FNI<addr>#`).
  public var compact: String { bytes.map(Self.hex).joined() }

  /// BDADDR_ANY (00:00:00:00:00:00): bind to any local adapter.
  public static let any = BluetoothAddress(bytes: [0, 0, 0, 0, 0, 0])!

  static func hex(_ byte: UInt8) -> String {
    let digits = String(byte, radix: 16, uppercase: true)
    return byte < 0x10 ? "0" + digits : digits
  }
}
