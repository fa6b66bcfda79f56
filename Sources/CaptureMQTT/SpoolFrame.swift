// The spool's record framing (docs/fleet.md §4). Imports nothing, so fuzz/spool.swift compiles it on
// its own with plain swiftc (fuzz/README.md).

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

/// CRC-32 (ISO-HDLC, the polynomial of zlib and Ethernet, reflected 0xEDB88320): a torn or damaged
/// record fails it. Slicing by 8 (eight tables, eight bytes a step) instead of a table lookup per byte:
/// the byte loop was a tenth of a published event's instructions (bench/instructions.py). The value
/// is the same, so spools written before verify unchanged.
enum CRC32 {
  /// table[k * 256 + n]: the CRC of byte n followed by k zero bytes; table[0..<256] is the classic one.
  static let table: [UInt32] = {
    var t = [UInt32](repeating: 0, count: 8 * 256)
    for n in 0..<256 {
      var c = UInt32(n)
      for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
      t[n] = c
    }
    for k in 1..<8 {
      for n in 0..<256 {
        let previous = t[(k - 1) * 256 + n]
        t[k * 256 + n] = (previous >> 8) ^ t[Int(previous & 0xFF)]
      }
    }
    return t
  }()

  static func checksum(_ bytes: some Collection<UInt8>) -> UInt32 {
    if let crc = bytes.withContiguousStorageIfAvailable({ checksum($0) }) { return crc }
    return Array(bytes).withUnsafeBufferPointer { checksum($0) }
  }

  static func checksum(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt32 {
    var c: UInt32 = 0xFFFF_FFFF
    table.withUnsafeBufferPointer { t in
      var i = 0
      while i + 8 <= bytes.count {
        let low =
          c
          ^ (UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3])
            << 24)
        let high =
          UInt32(bytes[i + 4]) | UInt32(bytes[i + 5]) << 8 | UInt32(bytes[i + 6]) << 16 | UInt32(bytes[i + 7])
          << 24
        c =
          t[7 * 256 + Int(low & 0xFF)] ^ t[6 * 256 + Int((low >> 8) & 0xFF)]
          ^ t[5 * 256 + Int((low >> 16) & 0xFF)]
          ^ t[4 * 256 + Int(low >> 24)] ^ t[3 * 256 + Int(high & 0xFF)] ^ t[2 * 256 + Int((high >> 8) & 0xFF)]
          ^ t[256 + Int((high >> 16) & 0xFF)] ^ t[Int(high >> 24)]
        i += 8
      }
      while i < bytes.count {
        c = t[Int((c ^ UInt32(bytes[i])) & 0xFF)] ^ (c >> 8)
        i += 1
      }
    }
    return c ^ 0xFFFF_FFFF
  }
}
