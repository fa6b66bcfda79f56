import BlueZ
import CaptureCore

/// Which driver a BLE device gets, from its GATT services and advertised UUIDs
/// (docs/device-protocols.md §2.1–2.2, §3.1, §3.4, §4).
public enum BLEFamily: String, Sendable {
  /// Pairing-required UUID variant: capture pairs it on connect (AXM's bonded handler).
  case d600
  case d600NoPairing
  case s550
  case s370
  case s320
  case s721
  case generic

  public static func identify(uuids: Set<String>, name: String?) -> BLEFamily {
    if uuids.contains(GattUUID.d600Service) { return .d600 }
    if uuids.contains(GattUUID.d600ServiceNoPairing) { return .d600NoPairing }
    if uuids.contains(GattUUID.s370Service) || uuids.contains(GattUUID.s370ServiceBound) { return .s370 }
    if uuids.contains(GattUUID.s320Service) || uuids.contains(GattUUID.s320ServiceBound) { return .s320 }
    // The Direct open service UUID is also the D600's config service; D600s were matched above.
    if uuids.contains(GattUUID.directService) || uuids.contains(GattUUID.directServiceBound) { return .s550 }
    if let name, name.hasPrefix("S721") || name.contains(" S721") { return .s721 }
    return .generic
  }

  /// Is this a Socket Mobile device (for discover without --all)?
  public static func isSocketMobile(uuids: Set<String>, name: String?) -> Bool {
    identify(uuids: uuids, name: name) != .generic || (name?.hasPrefix("Socket ") ?? false)
  }

  public var needsBonding: Bool { self == .d600 }

  /// The SDK device types this device arrives as: the S370 arrives twice, its barcode half and its
  /// NFC half (docs/capture-sdk.md §5.2).
  public var deviceTypes: [DeviceType] {
    switch self {
    case .d600, .d600NoPairing: [.scannerD600]
    case .s550: [.scannerS550]
    case .s370: [.scannerS370, .nfcS370]
    case .s320: [.scannerS320]
    case .s721: [.deviceS721]
    case .generic: [.bleUnknown]
    }
  }
}
