// SpringCore Smart Reader tag events: READER class 5B, EVT B0 (tag read) and B1 (tag inserted/removed)
// (docs/device-protocols.md §3.4, SC-DOC `Events/Tag` + TLV pages, AXM `springCoreUtils.js`).

/// A tag event decoded from a Direct message.
public struct SpringCoreTagEvent: Sendable, Hashable {
  public enum Kind: Sendable, Hashable {
    /// EVT B0.
    case read
    /// EVT B1 carrying TagInfo or TagId.
    case inserted
    /// EVT B1 carrying only TagIndex.
    case removed
  }

  /// TLV C1, 4 bytes: flags, interface, protocol, template (docs/device-protocols.md §3.4, SC-DOC, AXM).
  public struct TagInfo: Sendable, Hashable {
    public var flags: UInt8
    /// 00 unknown, 03 NFC/RFID HF, 06 RFID UHF, 84 Bluetooth (AXM).
    public var interface: UInt8
    /// For HF the docs/device-protocols.md §2.4 family codes; UHF 03 = ISO 18000-6C; BLE 10/11/12 (AXM).
    public var `protocol`: UInt8
    public var template: UInt8

    public init(flags: UInt8, interface: UInt8, protocol: UInt8, template: UInt8) {
      self.flags = flags
      self.interface = interface
      self.protocol = `protocol`
      self.template = template
    }

    /// Flags b7.
    public var isNew: Bool { flags & 0x80 != 0 }
    /// Flags b6.
    public var isOriginal: Bool { flags & 0x40 != 0 }
    /// Flags b5: TagData is text.
    public var dataIsString: Bool { flags & 0x20 != 0 }
    /// Flags b4: TagDetails is text.
    public var detailsIsString: Bool { flags & 0x10 != 0 }

    /// Interface id 03: NFC/RFID HF.
    public static let interfaceHF: UInt8 = 0x03
    public static let interfaceUHF: UInt8 = 0x06
    public static let interfaceBluetooth: UInt8 = 0x84
  }

  /// TLV tags (docs/device-protocols.md §3.4, SC-DOC, AXM).
  public static let tagInterfaceAndProtocols: UInt8 = 0x85
  public static let tagTagIndex: UInt8 = 0xC0
  public static let tagTagInfo: UInt8 = 0xC1
  public static let tagTagID: UInt8 = 0xC2
  public static let tagTagData: UInt8 = 0xC3
  public static let tagTagDetails: UInt8 = 0xC4
  /// EVT codes in CLA 5B.
  public static let eventTagRead: UInt8 = 0xB0
  public static let eventTagInsertedOrRemoved: UInt8 = 0xB1

  public var kind: Kind
  /// TLV C0 (1 byte).
  public var tagIndex: UInt8?
  /// TLV C1.
  public var info: TagInfo?
  /// TLV C2; empty when absent.
  public var tagID: [UInt8]
  /// TLV C3; empty when absent.
  public var data: [UInt8]
  /// TLV C4; empty when absent.
  public var details: [UInt8]
  /// TLV 85, when present (layout not decoded here).
  public var interfaceAndProtocols: [UInt8]?

  public init(
    kind: Kind, tagIndex: UInt8? = nil, info: TagInfo? = nil, tagID: [UInt8] = [], data: [UInt8] = [],
    details: [UInt8] = [], interfaceAndProtocols: [UInt8]? = nil
  ) {
    self.kind = kind
    self.tagIndex = tagIndex
    self.info = info
    self.tagID = tagID
    self.data = data
    self.details = details
    self.interfaceAndProtocols = interfaceAndProtocols
  }

  /// The UID in uppercase hex, e.g. `02C40044F99DB6`.
  public var tagIDHex: String { CodecHex.string(tagID) }

  /// TagData as UTF-8 text when TagInfo says it is a string (and it is valid UTF-8).
  public var dataText: String? {
    guard info?.dataIsString == true else { return nil }
    return String(validating: data, as: UTF8.self)
  }

  /// TagDetails as UTF-8 text when TagInfo says it is a string (and it is valid UTF-8).
  public var detailsText: String? {
    guard info?.detailsIsString == true else { return nil }
    return String(validating: details, as: UTF8.self)
  }

  /// The CaptureSDK tag-type data source id for an HF tag (``NFCProtocolMap``).
  public var sdkTagTypeID: Int32? {
    guard let info, info.interface == TagInfo.interfaceHF else { return nil }
    return NFCProtocolMap.sdkTagTypeID(family: info.protocol)
  }

  /// Decodes a device→host message with CLA 5B and EVT B0 or B1; nil for any other message, for data that
  /// are not a valid TLV list, for a TagIndex that is not 1 byte or a TagInfo shorter than 4 bytes (extra
  /// TagInfo bytes are ignored), and for a B1 with neither TagIndex, TagInfo nor TagId.
  ///
  /// B1 is "inserted" when it carries TagInfo or TagId and "removed" when it carries only TagIndex
  /// (SC-DOC `Events/Tag`). When a tag repeats, the first occurrence counts; unknown tags are skipped.
  public static func decode(_ message: DirectMessage) -> SpringCoreTagEvent? {
    guard message.isFromDevice, message.cla == DirectClass.reader,
      message.code == eventTagRead || message.code == eventTagInsertedOrRemoved,
      case .success(let items) = BerTLV.parse(message.data)
    else { return nil }
    func value(_ tag: UInt8) -> [UInt8]? { items.first { $0.tag == tag }?.value }

    var tagIndex: UInt8?
    if let index = value(tagTagIndex) {
      guard index.count == 1 else { return nil }
      tagIndex = index[0]
    }
    var info: TagInfo?
    if let bytes = value(tagTagInfo) {
      guard bytes.count >= 4 else { return nil }
      info = TagInfo(flags: bytes[0], interface: bytes[1], protocol: bytes[2], template: bytes[3])
    }
    let tagID = value(tagTagID)
    let kind: Kind
    if message.code == eventTagRead {
      kind = .read
    } else if info != nil || tagID != nil {
      kind = .inserted
    } else if tagIndex != nil {
      kind = .removed
    } else {
      return nil
    }
    return SpringCoreTagEvent(
      kind: kind, tagIndex: tagIndex, info: info, tagID: tagID ?? [], data: value(tagTagData) ?? [],
      details: value(tagTagDetails) ?? [], interfaceAndProtocols: value(tagInterfaceAndProtocols))
  }
}
