// Device type codes (docs/capture-sdk.md §5). The value is a bit field (§5.1): class, interface, functions
// and product id, so an unknown future model still decodes into something useful.

/// The interface byte of a device type (docs/capture-sdk.md §5.1, bits 23–16).
public enum DeviceInterface: UInt8, Sendable, CaseIterable {
  case none = 0
  case sd
  case cf
  /// Bluetooth Classic.
  case bluetooth
  case serial
  case ble
  case nfc

  /// The docs/capture-sdk.md §5.1 spelling: "None", "SD", "CF", "Bluetooth", "Serial", "Ble", "NFC".
  public var name: String {
    switch self {
    case .none: "None"
    case .sd: "SD"
    case .cf: "CF"
    case .bluetooth: "Bluetooth"
    case .serial: "Serial"
    case .ble: "Ble"
    case .nfc: "NFC"
    }
  }
}

/// The function bits of a device type (docs/capture-sdk.md §5.1, bits 13–8). An empty set is "Legacy": models
/// published before the bits existed (most Classic scanners) carry no function bits at all.
public struct DeviceFunctions: OptionSet, Sendable, Hashable {
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let scanner = DeviceFunctions(rawValue: 1)
  public static let nfcReader = DeviceFunctions(rawValue: 2)
  public static let nfcWriter = DeviceFunctions(rawValue: 4)
  public static let unknown = DeviceFunctions(rawValue: 8)

  /// The docs/capture-sdk.md §5.1 names of the bits that are set, e.g. ["NFCReader", "NFCWriter"]; empty for
  /// Legacy.
  public var names: [String] {
    [(Self.scanner, "Scanner"), (.nfcReader, "NFCReader"), (.nfcWriter, "NFCWriter"), (.unknown, "Unknown")]
      .filter { contains($0.0) }.map(\.1)
  }
}

public struct DeviceType: Hashable, Sendable, CustomStringConvertible {
  public let rawValue: UInt32
  public init(_ rawValue: UInt32) { self.rawValue = rawValue }

  // MARK: Bit layout (docs/capture-sdk.md §5.1)

  /// Bits 25–24: 0 = Device, 1 = DeviceManager.
  public var classID: UInt8 { UInt8((rawValue >> 24) & 0x3) }
  public var isDeviceManager: Bool { classID == 1 }
  /// Bits 23–16 as a number, for values `interface` does not know.
  public var interfaceID: UInt8 { UInt8((rawValue >> 16) & 0xFF) }
  /// Bits 23–16; nil when the byte is not one of the docs/capture-sdk.md §5.1 interfaces.
  public var interface: DeviceInterface? { DeviceInterface(rawValue: interfaceID) }
  /// Bits 13–8.
  public var functions: DeviceFunctions { DeviceFunctions(rawValue: UInt8((rawValue >> 8) & 0x3F)) }
  /// Bits 7–0; for a device manager this byte is the manager id (1 = Ble).
  public var productID: UInt8 { UInt8(rawValue & 0xFF) }

  // MARK: Names

  /// The SDK name, e.g. "SocketCamC820"; nil for a value docs/capture-sdk.md §5.2 does not list.
  public var sdkName: String? { Self.byRawValue[rawValue]?.sdkName }
  /// The docs/capture-sdk.md §5.2 "Model" column, e.g. "SocketCam C820", "Model D740".
  public var modelName: String? { Self.byRawValue[rawValue]?.model }
  /// The SDK name, or "Unknown" (the JSON output's `typeName`, docs/architecture.md §1).
  public var typeName: String { sdkName ?? "Unknown" }
  /// The two SocketCam types; both have interface None (docs/capture-sdk.md §5.2 product aliases).
  public var isSocketCam: Bool { self == .socketCamC820 || self == .socketCamC860 }
  public var hex: String { hexString(rawValue) }
  public var description: String { sdkName ?? "Unknown(\(hex))" }

  /// Looks up a docs/capture-sdk.md §5.2 SDK name, case-insensitive ("SocketCamC820", "scannerd740").
  /// "SoftScan", the 2021 name of C820 (§5.2 history), is accepted too.
  public static func named(_ sdkName: String) -> DeviceType? {
    let key = lookupKey(sdkName)
    if key == "softscan" { return .socketCamC820 }
    return catalog.first { lookupKey($0.sdkName) == key }?.type
  }

  // MARK: Known types (docs/capture-sdk.md §5.2)

  /// None 0x0: No device.
  public static let none = DeviceType(0)
  /// Scanner7 0x30001: Model 7.
  public static let scanner7 = DeviceType(196609)
  /// Scanner7x 0x30002: Model 7X.
  public static let scanner7x = DeviceType(196610)
  /// Scanner7xi 0x30004: Model 7Xi.
  public static let scanner7xi = DeviceType(196612)
  /// Scanner9 0x30003: Model 9 CRS.
  public static let scanner9 = DeviceType(196611)
  /// SocketCamC820 0x5: SocketCam C820.
  public static let socketCamC820 = DeviceType(5)
  /// SocketCamC860 0x1D: SocketCam C860.
  public static let socketCamC860 = DeviceType(29)
  /// ScannerS800 0x30006: Model S800.
  public static let scannerS800 = DeviceType(196614)
  /// ScannerS820 0x3001A: Model S820.
  public static let scannerS820 = DeviceType(196634)
  /// ScannerS850 0x30007: Model S850.
  public static let scannerS850 = DeviceType(196615)
  /// ScannerS840 0x30008: Model S840.
  public static let scannerS840 = DeviceType(196616)
  /// ScannerD700 0x30009: Model D700.
  public static let scannerD700 = DeviceType(196617)
  /// ScannerD720 0x30019: Model D720.
  public static let scannerD720 = DeviceType(196633)
  /// ScannerD730 0x3000A: Model D730.
  public static let scannerD730 = DeviceType(196618)
  /// ScannerD740 0x3000B: Model D740.
  public static let scannerD740 = DeviceType(196619)
  /// ScannerD750 0x3000C: Model D750.
  public static let scannerD750 = DeviceType(196620)
  /// ScannerD760 0x3000D: Model D760.
  public static let scannerD760 = DeviceType(196621)
  /// ScannerS700 0x3000E: Model S700.
  public static let scannerS700 = DeviceType(196622)
  /// ScannerS720 0x30018: Model S720.
  public static let scannerS720 = DeviceType(196632)
  /// ScannerS730 0x3000F: Model S730.
  public static let scannerS730 = DeviceType(196623)
  /// ScannerS740 0x30010: Model S740.
  public static let scannerS740 = DeviceType(196624)
  /// ScannerS750 0x30011: Model S750.
  public static let scannerS750 = DeviceType(196625)
  /// ScannerS760 0x30012: Model S760.
  public static let scannerS760 = DeviceType(196626)
  /// ScannerS860 0x30013: Model S860.
  public static let scannerS860 = DeviceType(196627)
  /// ScannerD790 0x30014: Model D790.
  public static let scannerD790 = DeviceType(196628)
  /// ScannerD600 0x50015: Model D600.
  public static let scannerD600 = DeviceType(327701)
  /// ScannerS550 0x50016: Model S550.
  public static let scannerS550 = DeviceType(327702)
  /// ScannerS370 0x5011B: Model S370 - Barcode scanner.
  public static let scannerS370 = DeviceType(327963)
  /// NFCS370 0x5061B: Model S370 - NFC Reader/Writer.
  public static let nfcS370 = DeviceType(329243)
  /// ScannerS320 0x5011C: Model S320.
  public static let scannerS320 = DeviceType(327964)
  /// NFCTag 0x60017: NFC Tag.
  public static let nfcTag = DeviceType(393239)
  /// ScannerM930 0x3011E: Model M930.
  public static let scannerM930 = DeviceType(196894)
  /// ScannerM940 0x3011F: Model M940.
  public static let scannerM940 = DeviceType(196895)
  /// DeviceD761 0x30120: Model D761.
  public static let deviceD761 = DeviceType(196896)
  /// DeviceD762 0x30121: Model D762.
  public static let deviceD762 = DeviceType(196897)
  /// DeviceD763 0x50122: Model D763.
  public static let deviceD763 = DeviceType(327970)
  /// DeviceD764 0x30123: Model D764.
  public static let deviceD764 = DeviceType(196899)
  /// DeviceD765 0x30124: Model D765.
  public static let deviceD765 = DeviceType(196900)
  /// DeviceD751 0x50625: Model D751 - NFC Reader/Writer.
  public static let deviceD751 = DeviceType(329253)
  /// DeviceM942 0x50126: Model M942.
  public static let deviceM942 = DeviceType(327974)
  /// DeviceM963 0x50127: Model M963.
  public static let deviceM963 = DeviceType(327975)
  /// DeviceXS663 0x50128: Model XS663.
  public static let deviceXS663 = DeviceType(327976)
  /// DeviceS721 0x50129: Model S721.
  public static let deviceS721 = DeviceType(327977)
  /// DeviceS741 0x5012A: Model S741.
  public static let deviceS741 = DeviceType(327978)
  /// BtUnknown 0x3002B: Bluetooth type unknown to this SDK version.
  public static let btUnknown = DeviceType(196651)
  /// DeviceManagerBle 0x1050001: BLE device manager.
  public static let deviceManagerBle = DeviceType(17104897)
  /// BleUnknown 0x5082B: Ble type unknown to this SDK version.
  public static let bleUnknown = DeviceType(329771)

  /// Every docs/capture-sdk.md §5.2 value in table order.
  public static let known: [DeviceType] = catalog.map(\.type)

  static let byRawValue: [UInt32: (sdkName: String, model: String)] = Dictionary(
    catalog.map { ($0.type.rawValue, (sdkName: $0.sdkName, model: $0.model)) },
    uniquingKeysWith: { first, _ in first })

  static let catalog: [(type: DeviceType, sdkName: String, model: String)] = [
    (.none, "None", "No device"),
    (.scanner7, "Scanner7", "Model 7"),
    (.scanner7x, "Scanner7x", "Model 7X"),
    (.scanner7xi, "Scanner7xi", "Model 7Xi"),
    (.scanner9, "Scanner9", "Model 9 CRS"),
    (.socketCamC820, "SocketCamC820", "SocketCam C820"),
    (.socketCamC860, "SocketCamC860", "SocketCam C860"),
    (.scannerS800, "ScannerS800", "Model S800"),
    (.scannerS820, "ScannerS820", "Model S820"),
    (.scannerS850, "ScannerS850", "Model S850"),
    (.scannerS840, "ScannerS840", "Model S840"),
    (.scannerD700, "ScannerD700", "Model D700"),
    (.scannerD720, "ScannerD720", "Model D720"),
    (.scannerD730, "ScannerD730", "Model D730"),
    (.scannerD740, "ScannerD740", "Model D740"),
    (.scannerD750, "ScannerD750", "Model D750"),
    (.scannerD760, "ScannerD760", "Model D760"),
    (.scannerS700, "ScannerS700", "Model S700"),
    (.scannerS720, "ScannerS720", "Model S720"),
    (.scannerS730, "ScannerS730", "Model S730"),
    (.scannerS740, "ScannerS740", "Model S740"),
    (.scannerS750, "ScannerS750", "Model S750"),
    (.scannerS760, "ScannerS760", "Model S760"),
    (.scannerS860, "ScannerS860", "Model S860"),
    (.scannerD790, "ScannerD790", "Model D790"),
    (.scannerD600, "ScannerD600", "Model D600"),
    (.scannerS550, "ScannerS550", "Model S550"),
    (.scannerS370, "ScannerS370", "Model S370 - Barcode scanner"),
    (.nfcS370, "NFCS370", "Model S370 - NFC Reader/Writer"),
    (.scannerS320, "ScannerS320", "Model S320"),
    (.nfcTag, "NFCTag", "NFC Tag"),
    (.scannerM930, "ScannerM930", "Model M930"),
    (.scannerM940, "ScannerM940", "Model M940"),
    (.deviceD761, "DeviceD761", "Model D761"),
    (.deviceD762, "DeviceD762", "Model D762"),
    (.deviceD763, "DeviceD763", "Model D763"),
    (.deviceD764, "DeviceD764", "Model D764"),
    (.deviceD765, "DeviceD765", "Model D765"),
    (.deviceD751, "DeviceD751", "Model D751 - NFC Reader/Writer"),
    (.deviceM942, "DeviceM942", "Model M942"),
    (.deviceM963, "DeviceM963", "Model M963"),
    (.deviceXS663, "DeviceXS663", "Model XS663"),
    (.deviceS721, "DeviceS721", "Model S721"),
    (.deviceS741, "DeviceS741", "Model S741"),
    (.btUnknown, "BtUnknown", "Bluetooth type unknown to this SDK version"),
    (.deviceManagerBle, "DeviceManagerBle", "BLE device manager"),
    (.bleUnknown, "BleUnknown", "Ble type unknown to this SDK version"),
  ]
}
