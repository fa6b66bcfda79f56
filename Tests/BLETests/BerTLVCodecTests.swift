import Drivers
import Testing

/// The parse result with the tuples turned into comparable arrays.
private func parse(_ bytes: [UInt8]) -> Result<[[UInt8]], TLVError> {
  BerTLV.parse(bytes).map { items in items.map { [$0.tag] + $0.value } }
}

@Suite struct BerTLVCodecTests {
  @Test func workedExampleData() {
    // docs/device-protocols.md §3.4, AXM: the data of the S550 worked example.
    let data: [UInt8] =
      [0xC1, 0x04, 0x20, 0x03, 0x01, 0x00, 0xC2, 0x07, 0x02, 0xC4, 0x00, 0x44, 0xF9, 0x9D, 0xB6, 0xC3, 0x0F]
      + Array("st.com/nfc-rfid".utf8)
    #expect(
      parse(data)
        == .success([
          [0xC1, 0x20, 0x03, 0x01, 0x00], [0xC2, 0x02, 0xC4, 0x00, 0x44, 0xF9, 0x9D, 0xB6],
          [0xC3] + Array("st.com/nfc-rfid".utf8),
        ]))
  }

  @Test func emptyAndZeroLength() {
    #expect(parse([]) == .success([]))
    #expect(parse([0xC0, 0x00, 0xC3, 0x00]) == .success([[0xC0], [0xC3]]))
  }

  @Test func longLengths() {
    let value128 = [UInt8](repeating: 0x41, count: 128)
    #expect(parse([0xC3, 0x81, 0x80] + value128) == .success([[0xC3] + value128]))
    #expect(parse([0xC3, 0x81, 0x02, 0x01, 0x02]) == .success([[0xC3, 0x01, 0x02]]))  // non-minimal
    let value256 = [UInt8](repeating: 0x42, count: 256)
    #expect(
      parse([0xC3, 0x82, 0x01, 0x00] + value256 + [0xC4, 0x01, 0x09])
        == .success([[0xC3] + value256, [0xC4, 0x09]]))
    #expect(parse([0xC3, 0x83, 0x00, 0x00, 0x02, 0xAA, 0xBB]) == .success([[0xC3, 0xAA, 0xBB]]))
    #expect(parse([0xC3, 0x84, 0x00, 0x00, 0x00, 0x01, 0xAA]) == .success([[0xC3, 0xAA]]))
  }

  @Test func overruns() {
    #expect(parse([0xC3, 0x05, 0x01, 0x02]) == .failure(.overrun(offset: 0, length: 5, available: 2)))
    #expect(parse([0xC3, 0x81, 0x10, 0x01]) == .failure(.overrun(offset: 0, length: 16, available: 1)))
    #expect(
      parse([0xC0, 0x00, 0xC3, 0x82, 0xFF, 0xFF])
        == .failure(.overrun(offset: 2, length: 65535, available: 0)))
    #expect(
      parse([0xC3, 0x84, 0xFF, 0xFF, 0xFF, 0xFF, 0x00])
        == .failure(.overrun(offset: 0, length: 0xFFFF_FFFF, available: 1)))
  }

  @Test func truncatedAndInvalidLengths() {
    #expect(parse([0xC3]) == .failure(.truncatedLength(offset: 1)))
    #expect(parse([0xC3, 0x82, 0x01]) == .failure(.truncatedLength(offset: 2)))
    #expect(parse([0xC3, 0x84]) == .failure(.truncatedLength(offset: 2)))
    #expect(parse([0xC3, 0x80, 0x00, 0x00]) == .failure(.invalidLength(offset: 1, byte: 0x80)))
    #expect(parse([0xC3, 0x85, 0, 0, 0, 0, 1]) == .failure(.invalidLength(offset: 1, byte: 0x85)))
    #expect(parse([0xC3, 0xFF]) == .failure(.invalidLength(offset: 1, byte: 0xFF)))
  }

  @Test func multiByteTagsAreRejected() {
    #expect(parse([0xDF, 0x01, 0x00]) == .failure(.multiByteTag(offset: 0)))
    #expect(parse([0xC0, 0x00, 0x1F, 0x00]) == .failure(.multiByteTag(offset: 2)))
  }

  @Test func encodeUsesTheShortestLength() {
    let value128 = [UInt8](repeating: 0x41, count: 128)
    let value256 = [UInt8](repeating: 0x42, count: 256)
    #expect(BerTLV.encode([(tag: 0xC0, value: [0x01])]) == [0xC0, 0x01, 0x01])
    #expect(BerTLV.encode([(tag: 0xC3, value: Array(value128.prefix(127)))]).prefix(2) == [0xC3, 0x7F])
    #expect(BerTLV.encode([(tag: 0xC3, value: value128)]).prefix(3) == [0xC3, 0x81, 0x80])
    #expect(BerTLV.encode([(tag: 0xC3, value: value256)]).prefix(4) == [0xC3, 0x82, 0x01, 0x00])
    let items: [(tag: UInt8, value: [UInt8])] = [(0xC1, [1, 2, 3, 4]), (0xC3, value256), (0xC4, [])]
    #expect(parse(BerTLV.encode(items)) == .success(items.map { [$0.tag] + $0.value }))
  }
}
