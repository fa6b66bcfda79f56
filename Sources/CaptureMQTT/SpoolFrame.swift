// The spool's record framing (docs/fleet.md §4). Imports nothing (its checksum, CRC32.swift, only
// zlib), so fuzz/spool.swift compiles the two on their own with plain swiftc (fuzz/README.md).

/// One record on disk: `u32 length | u32 CRC-32 of the body | body`, both numbers little-endian. The
/// body's meaning (a JSON header line and the payload) is SpoolFiles' business; this layer only says
/// whether a whole, undamaged record starts at an offset.
enum SpoolFrame {
  /// The length and the CRC.
  static let headerSize = 8

  /// The record holding `body`.
  static func encode(body: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(body.count + headerSize)
    appendLE(UInt32(truncatingIfNeeded: body.count), to: &out)
    appendLE(CRC32.checksum(body), to: &out)
    out += body
    return out
  }

  /// The body's range and the record's whole length when a record of at most `limit` body bytes
  /// starts at `offset`, lies wholly inside `bytes` and passes its CRC; nil for anything else (an
  /// offset outside `bytes` too). Never traps, whatever the bytes: every length is compared before it
  /// is added to anything.
  static func decode(_ bytes: [UInt8], at offset: Int, limit: Int) -> (body: Range<Int>, total: Int)? {
    guard offset >= 0, offset <= bytes.count, bytes.count - offset >= headerSize else { return nil }
    let length = Int(readLE(bytes, offset))
    let crc = readLE(bytes, offset + 4)
    guard length <= limit, bytes.count - offset - headerSize >= length else { return nil }
    let body = (offset + headerSize)..<(offset + headerSize + length)
    guard CRC32.checksum(bytes[body]) == crc else { return nil }
    return (body, headerSize + length)
  }

  /// The whole records from the start of `bytes`, in order, up to the first one that does not decode
  /// or whose body `accept` refuses (a torn or damaged tail); `end` is where that one starts (the
  /// length to keep), `bytes.count` when every byte belongs to a whole record.
  static func scan(
    _ bytes: [UInt8], limit: Int, accept: (ArraySlice<UInt8>) -> Bool
  ) -> (records: [(offset: Int, length: Int)], end: Int) {
    var records: [(offset: Int, length: Int)] = []
    var offset = 0
    while offset < bytes.count {
      guard let (body, total) = decode(bytes, at: offset, limit: limit), accept(bytes[body]) else { break }
      records.append((offset, total))
      offset += total
    }
    return (records, offset)
  }

  static func appendLE(_ value: UInt32, to out: inout [UInt8]) {
    for shift in stride(from: 0, to: 32, by: 8) {
      out.append(UInt8(truncatingIfNeeded: value >> UInt32(shift)))
    }
  }

  /// The u32 at `offset` (the caller has checked that 4 bytes are there).
  static func readLE(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
    UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
      | UInt32(bytes[offset + 3]) << 24
  }
}
