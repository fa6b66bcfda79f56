import CZlib

/// CRC-32 (ISO-HDLC, the polynomial of zlib and Ethernet, reflected 0xEDB88320): a torn or damaged
/// record fails it. zlib's `crc32` computes exactly this (zlib.h: "the CRC-32 ... used by gzip"), so
/// spools written before it was used verify unchanged; it reads several bytes a step where a table
/// lookup per byte was a tenth of a published event's instructions (bench/instructions.py).
enum CRC32 {
  static func checksum(_ bytes: some Collection<UInt8>) -> UInt32 {
    if let crc = bytes.withContiguousStorageIfAvailable({ checksum($0) }) { return crc }
    return Array(bytes).withUnsafeBufferPointer { checksum($0) }
  }

  static func checksum(_ buffer: UnsafeBufferPointer<UInt8>) -> UInt32 {
    guard var base = buffer.baseAddress else { return UInt32(truncatingIfNeeded: crc32(0, nil, 0)) }
    var crc = crc32(0, nil, 0)
    var left = buffer.count
    // zlib takes a 32-bit length: longer buffers go in pieces (a record is at most 1 MiB, so one).
    while left > 0 {
      let piece = Swift.min(left, Int(UInt32.max))
      crc = crc32(crc, base, UInt32(piece))
      base += piece
      left -= piece
    }
    return UInt32(truncatingIfNeeded: crc)
  }
}
