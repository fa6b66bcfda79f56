import Drivers
import Testing

@Suite struct NFCProtocolMapCodecTests {
  @Test func familiesToSDKTagTypes() {
    // docs/device-protocols.md §2.4 family codes → docs/capture-sdk.md §6.1 data source ids.
    let expected: [(UInt8, Int32?)] = [
      (0x01, 0x100), (0x02, 0x101), (0x03, 0x102), (0x04, 0x103), (0x08, 0x104), (0x10, 0x105), (0x11, 0x106),
      (0x18, 0x107), (0x20, 0x108), (0x40, 0x109), (0x4F, 0x10A), (0x80, 0x10B),
      (0x14, nil), (0x34, nil), (0x00, nil), (0x05, nil), (0x99, nil), (0xFF, nil),
    ]
    for (family, id) in expected {
      #expect(NFCProtocolMap.sdkTagTypeID(family: family) == id, "family \(family)")
    }
  }

  @Test func reverse() {
    #expect(NFCProtocolMap.family(sdkTagTypeID: 0x10A) == 0x4F)
    #expect(NFCProtocolMap.family(sdkTagTypeID: 0x100) == 0x01)
    #expect(NFCProtocolMap.family(sdkTagTypeID: 0x10C) == nil)
    #expect(NFCProtocolMap.family(sdkTagTypeID: 15) == nil)
    for pair in NFCProtocolMap.pairs {
      #expect(NFCProtocolMap.family(sdkTagTypeID: pair.sdkTagTypeID) == pair.family)
    }
  }
}
