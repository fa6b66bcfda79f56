// Data sources: barcode symbologies and NFC/RFID tag types (docs/capture-sdk.md §6). A decoded-data event
// carries one (§8), and DataSourceDevice enables or disables one (§2.2, §6.3).

public struct DataSource: Hashable, Sendable, CustomStringConvertible {
  public let rawValue: Int32
  public init(_ rawValue: Int32) { self.rawValue = rawValue }

  /// The docs/capture-sdk.md §6.1 name, e.g. "SymbologyQRCode", "TagTypeFelica", "NotSpecified"; nil for an
  /// unknown id.
  public var sdkName: String? { Self.byRawValue[rawValue]?.sdkName }
  /// A display name in the style of the SDK's `DataSourceName` (docs/capture-sdk.md §8), e.g. "QR Code", "EAN
  /// 13"; "Unknown (n)" for an id §6.1 does not list.
  public var name: String { Self.byRawValue[rawValue]?.display ?? "Unknown (\(rawValue))" }
  /// Kebab-case of the SDK name without its `Symbology`/`TagType` prefix ("qr-code", "iso14443-type-a");
  /// the decimal id for an unknown one.
  public var cliName: String {
    guard let sdkName else { return "\(rawValue)" }
    return kebabCase(Self.strippingPrefix(sdkName))
  }
  /// A barcode symbology: 1…51 (docs/capture-sdk.md §6.1; 0 is NotSpecified and 52 the sentinel).
  public var isSymbology: Bool { (1...51).contains(rawValue) }
  /// One of the data sources capture adds where the SDK has none (docs/capture-sdk.md §6.4):
  /// 0x200…0x2FF, clear of the SDK's symbologies (0…0x34) and tag types (0x100…0x10C).
  public var isCaptureExtension: Bool { Self.extensions.contains { $0.source == self } }
  /// An NFC/RFID tag type: 0x100…0x10B (docs/capture-sdk.md §6.1; 0x10C is the sentinel).
  public var isTagType: Bool { (0x100...0x10B).contains(rawValue) }
  /// The "Last…" entries: LastSymbologyID (52) and TagTypeLastTagType (0x10C); not real data sources.
  public var isSentinel: Bool { rawValue == 52 || rawValue == 0x10C }
  /// Whether docs/capture-sdk.md §6.1 lists this id (sentinels included).
  public var isKnown: Bool { Self.byRawValue[rawValue] != nil }
  public var description: String { name }

  // MARK: Parsing

  /// Parses a data source as a user types it (docs/architecture.md §1): a known numeric id (decimal or `0x`
  /// hex), or a name matched case-insensitively ignoring `-`, `_`, spaces and a leading `Symbology` /
  /// `TagType` prefix against the SDK name or the display name (so "qr-code", "QRCode",
  /// "SymbologyQRCode", "QR Code" are one), or one of a few common aliases ("qr", "dm", "upc-e", "itf",
  /// "databar", "isbn", …).
  public static func parse(_ text: String) -> DataSource? {
    let trimmed = text.trimmingWhitespace()
    guard !trimmed.isEmpty else { return nil }
    if let n = parseInteger(trimmed) {
      guard let v = Int32(exactly: n) else { return nil }
      let source = DataSource(v)
      return source.isKnown ? source : nil
    }
    var key = lookupKey(trimmed)
    if let alias = aliases[key] { return alias }
    for prefix in ["symbology", "tagtype"] where key.hasPrefix(prefix) && key.count > prefix.count {
      key = String(key.dropFirst(prefix.count))
      break
    }
    if let alias = aliases[key] { return alias }
    return (catalog + extensions).first {
      lookupKey(strippingPrefix($0.sdkName)) == key || lookupKey($0.display) == key
    }?.source
  }

  /// Names people use that differ from the SDK's; keys are already normalised by `lookupKey`.
  static let aliases: [String: DataSource] = [
    "qr": .qrCode,
    "dm": .dataMatrix,
    "upce": .upcE0,
    "itf": .interleaved2of5,
    "i2of5": .interleaved2of5,
    "i25": .interleaved2of5,
    "databar": .gs1Databar,
    "rss14": .gs1Databar,
    "databarlimited": .gs1DatabarLimited,
    "rsslimited": .gs1DatabarLimited,
    "databarexpanded": .gs1DatabarExpanded,
    "rssexpanded": .gs1DatabarExpanded,
    "microqr": .microQRCode,
    "micropdf417": .pdf417Micro,
    "micropdf": .pdf417Micro,
    "gs1128": .ean128,
    "ucc128": .ean128,
    "dpm": .directPartMarking,
    "isbn": .booklandEan,
    "rmqr": .rmqrCode,
    "dx": .dxFilmEdge,
    "addon": .eanAddOn,
    "addons": .eanAddOn,
  ]

  static func strippingPrefix(_ sdkName: String) -> String {
    for prefix in ["Symbology", "TagType", "Capture"] where sdkName.hasPrefix(prefix) {
      return String(sdkName.dropFirst(prefix.count))
    }
    return sdkName
  }

  // MARK: Known data sources (docs/capture-sdk.md §6.1)

  /// NotSpecified (0, 0x000).
  public static let notSpecified = DataSource(0)
  /// SymbologyAustraliaPost (1, 0x001).
  public static let australiaPost = DataSource(1)
  /// SymbologyAztec (2, 0x002).
  public static let aztec = DataSource(2)
  /// SymbologyBooklandEan (3, 0x003).
  public static let booklandEan = DataSource(3)
  /// SymbologyBritishPost (4, 0x004).
  public static let britishPost = DataSource(4)
  /// SymbologyCanadaPost (5, 0x005).
  public static let canadaPost = DataSource(5)
  /// SymbologyChinese2of5 (6, 0x006).
  public static let chinese2of5 = DataSource(6)
  /// SymbologyCodabar (7, 0x007).
  public static let codabar = DataSource(7)
  /// SymbologyCodablockA (8, 0x008).
  public static let codablockA = DataSource(8)
  /// SymbologyCodablockF (9, 0x009).
  public static let codablockF = DataSource(9)
  /// SymbologyCode11 (10, 0x00A).
  public static let code11 = DataSource(10)
  /// SymbologyCode39 (11, 0x00B).
  public static let code39 = DataSource(11)
  /// SymbologyCode39Extended (12, 0x00C).
  public static let code39Extended = DataSource(12)
  /// SymbologyCode39Trioptic (13, 0x00D).
  public static let code39Trioptic = DataSource(13)
  /// SymbologyCode93 (14, 0x00E).
  public static let code93 = DataSource(14)
  /// SymbologyCode128 (15, 0x00F).
  public static let code128 = DataSource(15)
  /// SymbologyDataMatrix (16, 0x010).
  public static let dataMatrix = DataSource(16)
  /// SymbologyDutchPost (17, 0x011).
  public static let dutchPost = DataSource(17)
  /// SymbologyEan8 (18, 0x012).
  public static let ean8 = DataSource(18)
  /// SymbologyEan13 (19, 0x013).
  public static let ean13 = DataSource(19)
  /// SymbologyEan128 (20, 0x014).
  public static let ean128 = DataSource(20)
  /// SymbologyEan128Irregular (21, 0x015).
  public static let ean128Irregular = DataSource(21)
  /// SymbologyEanUccCompositeAB (22, 0x016).
  public static let eanUccCompositeAB = DataSource(22)
  /// SymbologyEanUccCompositeC (23, 0x017).
  public static let eanUccCompositeC = DataSource(23)
  /// SymbologyGs1Databar (24, 0x018).
  public static let gs1Databar = DataSource(24)
  /// SymbologyGs1DatabarLimited (25, 0x019).
  public static let gs1DatabarLimited = DataSource(25)
  /// SymbologyGs1DatabarExpanded (26, 0x01A).
  public static let gs1DatabarExpanded = DataSource(26)
  /// SymbologyInterleaved2of5 (27, 0x01B).
  public static let interleaved2of5 = DataSource(27)
  /// SymbologyIsbt128 (28, 0x01C).
  public static let isbt128 = DataSource(28)
  /// SymbologyJapanPost (29, 0x01D).
  public static let japanPost = DataSource(29)
  /// SymbologyMatrix2of5 (30, 0x01E).
  public static let matrix2of5 = DataSource(30)
  /// SymbologyMaxicode (31, 0x01F).
  public static let maxicode = DataSource(31)
  /// SymbologyMsi (32, 0x020).
  public static let msi = DataSource(32)
  /// SymbologyPdf417 (33, 0x021).
  public static let pdf417 = DataSource(33)
  /// SymbologyPdf417Micro (34, 0x022).
  public static let pdf417Micro = DataSource(34)
  /// SymbologyPlanet (35, 0x023).
  public static let planet = DataSource(35)
  /// SymbologyPlessey (36, 0x024).
  public static let plessey = DataSource(36)
  /// SymbologyPostnet (37, 0x025).
  public static let postnet = DataSource(37)
  /// SymbologyQRCode (38, 0x026).
  public static let qrCode = DataSource(38)
  /// SymbologyStandard2of5 (39, 0x027).
  public static let standard2of5 = DataSource(39)
  /// SymbologyTelepen (40, 0x028).
  public static let telepen = DataSource(40)
  /// SymbologyTlc39 (41, 0x029).
  public static let tlc39 = DataSource(41)
  /// SymbologyUpcA (42, 0x02A).
  public static let upcA = DataSource(42)
  /// SymbologyUpcE0 (43, 0x02B).
  public static let upcE0 = DataSource(43)
  /// SymbologyUpcE1 (44, 0x02C).
  public static let upcE1 = DataSource(44)
  /// SymbologyUspsIntelligentMail (45, 0x02D).
  public static let uspsIntelligentMail = DataSource(45)
  /// SymbologyDirectPartMarking (46, 0x02E).
  public static let directPartMarking = DataSource(46)
  /// SymbologyHanXin (47, 0x02F).
  public static let hanXin = DataSource(47)
  /// SymbologyDotCode (48, 0x030).
  public static let dotCode = DataSource(48)
  /// SymbologyDigimarc (49, 0x031).
  public static let digimarc = DataSource(49)
  /// SymbologyKoreaPost (50, 0x032).
  public static let koreaPost = DataSource(50)
  /// SymbologyMicroQRCode (51, 0x033).
  public static let microQRCode = DataSource(51)
  /// LastSymbologyID (52, 0x034).
  public static let lastSymbologyID = DataSource(52)
  /// TagTypeISO14443TypeA (256, 0x100).
  public static let iso14443TypeA = DataSource(256)
  /// TagTypeISO14443TypeB (257, 0x101).
  public static let iso14443TypeB = DataSource(257)
  /// TagTypeFelica (258, 0x102).
  public static let felica = DataSource(258)
  /// TagTypeISO15693 (259, 0x103).
  public static let iso15693 = DataSource(259)
  /// TagTypeNXPICODE1 (260, 0x104).
  public static let nxpIcode1 = DataSource(260)
  /// TagTypeInsideSecurePicoTag (261, 0x105).
  public static let insideSecurePicoTag = DataSource(261)
  /// TagTypeInnovisionTopazJewel (262, 0x106).
  public static let innovisionTopazJewel = DataSource(262)
  /// TagTypeThinfilmNFCBarcode (263, 0x107).
  public static let thinfilmNFCBarcode = DataSource(263)
  /// TagTypeSTMicroElectronicsSR (264, 0x108).
  public static let stMicroElectronicsSR = DataSource(264)
  /// TagTypeASKCTS256BOrCTS512B (265, 0x109).
  public static let askCTS256BOrCTS512B = DataSource(265)
  /// TagTypeNFCForum (266, 0x10A).
  public static let nfcForum = DataSource(266)
  /// TagTypeInnovatronRadioProtocol (267, 0x10B).
  public static let innovatronRadioProtocol = DataSource(267)
  /// TagTypeLastTagType (268, 0x10C).
  public static let lastTagType = DataSource(268)

  // MARK: capture's own (docs/capture-sdk.md §6.4)

  /// rMQR Code (ISO/IEC 23941), which SocketCam reads and the SDK has no data source for.
  public static let rmqrCode = DataSource(0x200)
  /// DX film edge (the DX code on 35 mm film), which SocketCam reads and the SDK has no data source for.
  public static let dxFilmEdge = DataSource(0x201)
  /// Not a symbology: whether SocketCam reads the EAN-2/EAN-5 add-on beside an EAN/UPC symbol
  /// (DecodedData then carries it as today, docs/capture-sdk.md §6.4); the SDK's scanners have this as a
  /// setting of their own, off as they ship.
  public static let eanAddOn = DataSource(0x202)

  /// capture's own data sources, in id order: same columns as `catalog`, the SDK-style name prefixed
  /// `Capture` (no SDK spells one so).
  static let extensions: [(source: DataSource, sdkName: String, display: String)] = [
    (.rmqrCode, "CaptureRmqrCode", "rMQR Code"),
    (.dxFilmEdge, "CaptureDxFilmEdge", "DX Film Edge"),
    (.eanAddOn, "CaptureEanAddOn", "EAN/UPC Add-On"),
  ]

  /// capture's own data sources (docs/capture-sdk.md §6.4), in id order.
  public static let captureExtensions: [DataSource] = extensions.map(\.source)

  /// Every docs/capture-sdk.md §6.1 entry in table order, sentinels included.
  public static let known: [DataSource] = catalog.map(\.source)
  /// The real symbologies, 1…51.
  public static let symbologies: [DataSource] = known.filter(\.isSymbology)
  /// The real NFC/RFID tag types, 0x100…0x10B.
  public static let tagTypes: [DataSource] = known.filter(\.isTagType)

  static let byRawValue: [Int32: (sdkName: String, display: String)] = Dictionary(
    (catalog + extensions).map { ($0.source.rawValue, (sdkName: $0.sdkName, display: $0.display)) },
    uniquingKeysWith: { first, _ in first })

  static let catalog: [(source: DataSource, sdkName: String, display: String)] = [
    (.notSpecified, "NotSpecified", "Not Specified"),
    (.australiaPost, "SymbologyAustraliaPost", "Australia Post"),
    (.aztec, "SymbologyAztec", "Aztec"),
    (.booklandEan, "SymbologyBooklandEan", "Bookland EAN"),
    (.britishPost, "SymbologyBritishPost", "British Post"),
    (.canadaPost, "SymbologyCanadaPost", "Canada Post"),
    (.chinese2of5, "SymbologyChinese2of5", "Chinese 2 of 5"),
    (.codabar, "SymbologyCodabar", "Codabar"),
    (.codablockA, "SymbologyCodablockA", "Codablock A"),
    (.codablockF, "SymbologyCodablockF", "Codablock F"),
    (.code11, "SymbologyCode11", "Code 11"),
    (.code39, "SymbologyCode39", "Code 39"),
    (.code39Extended, "SymbologyCode39Extended", "Code 39 Extended"),
    (.code39Trioptic, "SymbologyCode39Trioptic", "Code 39 Trioptic"),
    (.code93, "SymbologyCode93", "Code 93"),
    (.code128, "SymbologyCode128", "Code 128"),
    (.dataMatrix, "SymbologyDataMatrix", "Data Matrix"),
    (.dutchPost, "SymbologyDutchPost", "Dutch Post"),
    (.ean8, "SymbologyEan8", "EAN 8"),
    (.ean13, "SymbologyEan13", "EAN 13"),
    (.ean128, "SymbologyEan128", "EAN 128"),
    (.ean128Irregular, "SymbologyEan128Irregular", "EAN 128 Irregular"),
    (.eanUccCompositeAB, "SymbologyEanUccCompositeAB", "EAN UCC Composite AB"),
    (.eanUccCompositeC, "SymbologyEanUccCompositeC", "EAN UCC Composite C"),
    (.gs1Databar, "SymbologyGs1Databar", "GS1 DataBar"),
    (.gs1DatabarLimited, "SymbologyGs1DatabarLimited", "GS1 DataBar Limited"),
    (.gs1DatabarExpanded, "SymbologyGs1DatabarExpanded", "GS1 DataBar Expanded"),
    (.interleaved2of5, "SymbologyInterleaved2of5", "Interleaved 2 of 5"),
    (.isbt128, "SymbologyIsbt128", "ISBT 128"),
    (.japanPost, "SymbologyJapanPost", "Japan Post"),
    (.matrix2of5, "SymbologyMatrix2of5", "Matrix 2 of 5"),
    (.maxicode, "SymbologyMaxicode", "Maxicode"),
    (.msi, "SymbologyMsi", "MSI"),
    (.pdf417, "SymbologyPdf417", "PDF 417"),
    (.pdf417Micro, "SymbologyPdf417Micro", "PDF 417 Micro"),
    (.planet, "SymbologyPlanet", "Planet"),
    (.plessey, "SymbologyPlessey", "Plessey"),
    (.postnet, "SymbologyPostnet", "Postnet"),
    (.qrCode, "SymbologyQRCode", "QR Code"),
    (.standard2of5, "SymbologyStandard2of5", "Standard 2 of 5"),
    (.telepen, "SymbologyTelepen", "Telepen"),
    (.tlc39, "SymbologyTlc39", "TLC 39"),
    (.upcA, "SymbologyUpcA", "UPC A"),
    (.upcE0, "SymbologyUpcE0", "UPC E0"),
    (.upcE1, "SymbologyUpcE1", "UPC E1"),
    (.uspsIntelligentMail, "SymbologyUspsIntelligentMail", "USPS Intelligent Mail"),
    (.directPartMarking, "SymbologyDirectPartMarking", "Direct Part Marking"),
    (.hanXin, "SymbologyHanXin", "Han Xin"),
    (.dotCode, "SymbologyDotCode", "DotCode"),
    (.digimarc, "SymbologyDigimarc", "Digimarc"),
    (.koreaPost, "SymbologyKoreaPost", "Korea Post"),
    (.microQRCode, "SymbologyMicroQRCode", "Micro QR Code"),
    (.lastSymbologyID, "LastSymbologyID", "Last Symbology ID"),
    (.iso14443TypeA, "TagTypeISO14443TypeA", "ISO 14443 Type A"),
    (.iso14443TypeB, "TagTypeISO14443TypeB", "ISO 14443 Type B"),
    (.felica, "TagTypeFelica", "FeliCa"),
    (.iso15693, "TagTypeISO15693", "ISO 15693"),
    (.nxpIcode1, "TagTypeNXPICODE1", "NXP ICODE1"),
    (.insideSecurePicoTag, "TagTypeInsideSecurePicoTag", "Inside Secure PicoTag"),
    (.innovisionTopazJewel, "TagTypeInnovisionTopazJewel", "Innovision Topaz/Jewel"),
    (.thinfilmNFCBarcode, "TagTypeThinfilmNFCBarcode", "Thinfilm NFC Barcode"),
    (.stMicroElectronicsSR, "TagTypeSTMicroElectronicsSR", "STMicroelectronics SR"),
    (.askCTS256BOrCTS512B, "TagTypeASKCTS256BOrCTS512B", "ASK CTS256B or CTS512B"),
    (.nfcForum, "TagTypeNFCForum", "NFC Forum"),
    (.innovatronRadioProtocol, "TagTypeInnovatronRadioProtocol", "Innovatron Radio Protocol"),
    (.lastTagType, "TagTypeLastTagType", "Last Tag Type"),
  ]
}

/// Whether a data source is on (docs/capture-sdk.md §6.2). `defaultStatus` (-1) is what a get request sends.
public enum DataSourceStatus: Int8, Sendable, CaseIterable {
  case defaultStatus = -1
  case disable = 0
  case enable = 1
  case notSupported = 2

  /// The lower-case CLI spelling: "default", "disable", "enable", "not-supported".
  public var name: String {
    switch self {
    case .defaultStatus: "default"
    case .disable: "disable"
    case .enable: "enable"
    case .notSupported: "not-supported"
    }
  }

  /// The docs/capture-sdk.md §6.2 SDK spelling: "Default", "Disable", "Enable", "NotSupported".
  public var sdkName: String {
    switch self {
    case .defaultStatus: "Default"
    case .disable: "Disable"
    case .enable: "Enable"
    case .notSupported: "NotSupported"
    }
  }

  /// Accepts the name, the number, and the usual on/off words ("on", "true", "yes", "off", "false", "no").
  public static func parse(_ text: String) -> DataSourceStatus? {
    if let n = parseInteger(text) { return Int8(exactly: n).flatMap { DataSourceStatus(rawValue: $0) } }
    switch lookupKey(text.trimmingWhitespace()) {
    case "enable", "enabled", "on", "true", "yes": return .enable
    case "disable", "disabled", "off", "false", "no": return .disable
    case "default", "defaultstatus": return .defaultStatus
    case "notsupported": return .notSupported
    default: return nil
    }
  }
}

/// Which parts of a DataSource struct are meaningful (docs/capture-sdk.md §6.3).
public struct DataSourceFlags: OptionSet, Sendable, Hashable {
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  /// The struct carries a status; every source sends this flag.
  public static let status = DataSourceFlags(rawValue: 1)
  /// The struct carries parameters.
  public static let param = DataSourceFlags(rawValue: 2)
}

/// A named set of data sources that `set DEVICE data-source GROUP STATUS` and `get DEVICE data-source
/// GROUP` expand to the members the device supports. The SDK has no such groups: membership is this
/// project's reading of the symbology each docs/capture-sdk.md §6.1 id names (docs/capture-sdk.md §6.1).
///
/// - `all`: every real symbology and tag type (not NotSpecified, not the two Last… sentinels).
/// - `1d`: the linear symbologies, stacked-linear GS1 DataBar included.
/// - `2d`: the matrix and stacked symbologies (PDF417, Codablock), GS1 composites (their 2D part is what
///   needs enabling) and Direct Part Marking (DataMatrix or QR marked on a part).
/// - `nfc`: the NFC/RFID tag types (0x100…0x10B).
///
/// The postal symbologies (Australia, British, Canada, Dutch, Japan and Korea Post, Planet, Postnet,
/// USPS Intelligent Mail) and Digimarc belong to no group but `all`.
public enum DataSourceGroup: String, Sendable, CaseIterable {
  case all
  case oneD = "1d"
  case twoD = "2d"
  case nfc

  /// The group named by `text`, compared case-insensitively ("1D", "All").
  public static func parse(_ text: String) -> DataSourceGroup? {
    DataSourceGroup(rawValue: text.trimmingWhitespace().lowercased())
  }

  public func contains(_ source: DataSource) -> Bool {
    switch self {
    case .all: source.isSymbology || source.isTagType || source.isCaptureExtension
    case .oneD: Self.linear.contains(source)
    case .twoD: Self.matrix.contains(source)
    case .nfc: source.isTagType
    }
  }

  /// The members of this group among `supported`, in SDK id order (a stable order whatever order the
  /// driver lists them in).
  public func members(of supported: [DataSource]) -> [DataSource] {
    Array(Set(supported.filter(contains))).sorted { $0.rawValue < $1.rawValue }
  }

  static let linear: Set<DataSource> = [
    .booklandEan, .chinese2of5, .codabar, .code11, .code39, .code39Extended, .code39Trioptic, .code93,
    .code128, .ean8, .ean13, .ean128, .ean128Irregular, .gs1Databar, .gs1DatabarLimited, .gs1DatabarExpanded,
    .interleaved2of5, .isbt128, .matrix2of5, .msi, .plessey, .standard2of5, .telepen, .tlc39, .upcA, .upcE0,
    .upcE1, .dxFilmEdge, .eanAddOn,
  ]

  static let matrix: Set<DataSource> = [
    .aztec, .codablockA, .codablockF, .dataMatrix, .eanUccCompositeAB, .eanUccCompositeC, .maxicode, .pdf417,
    .pdf417Micro, .qrCode, .directPartMarking, .hanXin, .dotCode, .microQRCode, .rmqrCode,
  ]
}

/// What a `data-source` word names: one data source, or a group of them.
public enum DataSourceSelector: Sendable, Hashable {
  case source(DataSource)
  case group(DataSourceGroup)

  /// A group name first (no data source is spelled `all`, `1d`, `2d` or `nfc`), then a data source as
  /// `DataSource.parse` reads it; nil for neither.
  public static func parse(_ text: String) -> DataSourceSelector? {
    if let group = DataSourceGroup.parse(text) { return .group(group) }
    return DataSource.parse(text).map { .source($0) }
  }

  /// The data sources this names on a device supporting `supported`: a group only touches supported
  /// members; a single source is itself, supported or not, so the device answers for it.
  public func expand(_ supported: [DataSource]) -> [DataSource] {
    switch self {
    case .source(let source): [source]
    case .group(let group): group.members(of: supported)
    }
  }
}
