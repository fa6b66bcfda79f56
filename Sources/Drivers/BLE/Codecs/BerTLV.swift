// BER-like TLVs of SpringCore Smart Reader events (docs/device-protocols.md §3.4, SC-DOC TLV pages, AXM).

/// Why a TLV list could not be parsed. Offsets index the input.
public enum TLVError: Error, Sendable, Hashable {
  /// The input ends after a tag, or inside a long-form length.
  case truncatedLength(offset: Int)
  /// Length byte 0x80 (BER's indefinite form) or 0x85…0xFF.
  case invalidLength(offset: Int, byte: UInt8)
  /// The value would run past the end of the input.
  case overrun(offset: Int, length: UInt64, available: Int)
  /// A tag byte whose low five bits are all set: a multi-byte BER tag, which SpringCore does not use.
  case multiByteTag(offset: Int)
}

/// Single-byte tags, lengths below 0x80 written directly, 0x81…0x84 followed by 1–4 big-endian length
/// bytes (docs/device-protocols.md §3.4, SC-DOC, AXM). Non-minimal long forms (`81 05`) are accepted.
public enum BerTLV {
  public static func parse(_ bytes: [UInt8]) -> Result<[(tag: UInt8, value: [UInt8])], TLVError> {
    var items: [(tag: UInt8, value: [UInt8])] = []
    var index = bytes.startIndex
    while index < bytes.endIndex {
      let tagOffset = index
      let tag = bytes[index]
      if tag & 0x1F == 0x1F { return .failure(.multiByteTag(offset: tagOffset)) }
      index += 1
      guard index < bytes.endIndex else { return .failure(.truncatedLength(offset: index)) }
      let first = bytes[index]
      index += 1
      var length = UInt64(first)
      if first >= 0x80 {
        let count = Int(first & 0x7F)
        guard (1...4).contains(count) else { return .failure(.invalidLength(offset: index - 1, byte: first)) }
        guard bytes.endIndex - index >= count else { return .failure(.truncatedLength(offset: index)) }
        length = 0
        for byte in bytes[index..<(index + count)] { length = length << 8 | UInt64(byte) }
        index += count
      }
      let available = bytes.endIndex - index
      guard length <= UInt64(available) else {
        return .failure(.overrun(offset: tagOffset, length: length, available: available))
      }
      items.append((tag: tag, value: Array(bytes[index..<(index + Int(length))])))
      index += Int(length)
    }
    return .success(items)
  }

  /// The shortest encoding of each item (lengths 0x81…0x84 only when needed).
  public static func encode(_ items: [(tag: UInt8, value: [UInt8])]) -> [UInt8] {
    var bytes: [UInt8] = []
    for item in items {
      bytes.append(item.tag)
      let length = UInt64(item.value.count)
      if length < 0x80 {
        bytes.append(UInt8(length))
      } else {
        var lengthBytes: [UInt8] = []
        var rest = length
        while rest > 0 {
          lengthBytes.insert(UInt8(truncatingIfNeeded: rest), at: 0)
          rest >>= 8
        }
        bytes.append(0x80 | UInt8(lengthBytes.count))
        bytes += lengthBytes
      }
      bytes += item.value
    }
    return bytes
  }
}
