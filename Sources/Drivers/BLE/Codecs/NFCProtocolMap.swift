// NFC tag families ↔ CaptureSDK data source ids.

/// The docs/device-protocols.md §2.4 family codes (docs/device-protocols.md §2.4, AXM + TS; the same table is
/// the SpringCore HF protocol list, §3.4, AXM) mapped to the CaptureSDK tag-type data source ids
/// (docs/capture-sdk.md §6.1).
public enum NFCProtocolMap {
  /// (family code, SDK id) pairs, in family order.
  public static let pairs: [(family: UInt8, sdkTagTypeID: Int32)] = [
    (0x01, 0x100),  // ISO 14443-A → TagTypeISO14443TypeA
    (0x02, 0x101),  // ISO 14443-B → TagTypeISO14443TypeB
    (0x03, 0x102),  // FeliCa → TagTypeFelica
    (0x04, 0x103),  // ISO 15693 → TagTypeISO15693
    (0x08, 0x104),  // NXP ICODE1 → TagTypeNXPICODE1
    (0x10, 0x105),  // Inside PicoPass/PicoTag → TagTypeInsideSecurePicoTag
    (0x11, 0x106),  // Innovision Topaz/Jewel → TagTypeInnovisionTopazJewel
    (0x18, 0x107),  // Thinfilm/Kovio → TagTypeThinfilmNFCBarcode
    (0x20, 0x108),  // ST SR → TagTypeSTMicroElectronicsSR
    (0x40, 0x109),  // ASK CTS256B/512B → TagTypeASKCTS256BOrCTS512B
    (0x4F, 0x10A),  // NFC Forum → TagTypeNFCForum
    (0x80, 0x10B),  // Innovatron → TagTypeInnovatronRadioProtocol
  ]

  /// The SDK id for a family; nil for families the SDK has no id for (14 EM4134, 34 EPC HF) and for
  /// codes not in the table.
  public static func sdkTagTypeID(family: UInt8) -> Int32? {
    pairs.first { $0.family == family }?.sdkTagTypeID
  }

  /// The family code for an SDK tag-type id, nil for any other id.
  public static func family(sdkTagTypeID: Int32) -> UInt8? {
    pairs.first { $0.sdkTagTypeID == sdkTagTypeID }?.family
  }
}
