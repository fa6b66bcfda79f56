// Small helpers shared by the BLE frame codecs.
//
// Every file in this directory is pure Swift and imports nothing (not even Foundation): fuzz/run.sh
// compiles them on their own with `swiftc -sanitize=fuzzer`.

/// Hex digits in and out, without Foundation.
enum CodecHex {
  private static let digits: [Character] = Array("0123456789ABCDEF")

  /// The value of one ASCII hex digit (`0-9`, `A-F`, `a-f`), or nil.
  static func digitValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case 0x30...0x39: return byte - 0x30
    case 0x41...0x46: return byte - 0x41 + 10
    case 0x61...0x66: return byte - 0x61 + 10
    default: return nil
    }
  }

  /// Two uppercase hex digits, e.g. `4F`.
  static func byte(_ value: UInt8) -> String {
    String([digits[Int(value >> 4)], digits[Int(value & 0x0F)]])
  }

  /// Uppercase hex digits for every byte, e.g. `02C40044F99DB6`.
  static func string(_ bytes: some Sequence<UInt8>) -> String {
    var text = ""
    for value in bytes { text += byte(value) }
    return text
  }
}
