import BlueZ

/// GATT and advertised UUIDs of the devices capture knows: device knowledge, so it lives with the
/// drivers, not in the BlueZ transport (docs/device-protocols.md §2.2, §3.1, §3.4),
/// lower-case 128-bit strings as BlueZ writes them.
public enum GattUUID {
  public static func short(_ v: UInt16) -> String { bluetoothBaseUUID(v) }
  public static let battery = short(0x180F)
  public static let batteryLevel = short(0x2A19)
  public static let deviceInformation = short(0x180A)
  public static let manufacturerName = short(0x2A29)
  public static let modelNumber = short(0x2A24)
  public static let serialNumber = short(0x2A25)
  public static let firmwareRevision = short(0x2A26)
  public static let softwareRevision = short(0x2A28)

  /// D600, pairing-required variant (AXM, SC-AND).
  public static let d600Service = "6cb501b7-96f6-4eef-acb1-d7535f153cf0"
  public static let d600ScanData = "ce3e81b8-d871-4613-ba78-5ffc0b1520a6"
  public static let d600ScanControl = "833a2364-bca0-4647-8113-478e1fc449ba"
  public static let d600ConfigService = "7a4385c9-f7c7-4e22-9afd-16d68fc588ca"
  public static let d600ConfigIO = "1254fc72-336e-4bb2-a0a8-71c7d28d73ce"
  /// D600, no-pairing variant: the same UUIDs with the last two bytes swapped (SC-NET SoMoD600.cs, AXM).
  public static let d600ServiceNoPairing = "6cb501b7-96f6-4eef-acb1-d7535f15f03c"
  public static let d600ScanDataNoPairing = "ce3e81b8-d871-4613-ba78-5ffc0b15a620"
  public static let d600ScanControlNoPairing = "833a2364-bca0-4647-8113-478e1fc4ba49"
  public static let d600ConfigServiceNoPairing = "7a4385c9-f7c7-4e22-9afd-16d68fc5ca88"
  public static let d600ConfigIONoPairing = "1254fc72-336e-4bb2-a0a8-71c7d28dce73"

  /// SpringCore Direct (S550 "Smart Reader"), open and bound services (SC-DOC). The open service UUID
  /// equals the D600 config service: the D600 is told apart by its scanner service.
  public static let directService = "7a4385c9-f7c7-4e22-9afd-16d68fc588ca"
  public static let directCommand = "18227ca8-9574-4d92-850c-b55f84c6b577"
  public static let directResponse = "94382d3f-fd0f-4ee4-998c-046a6cdc67d6"
  public static let directEvents = "23d33996-e604-4f8b-baf7-547944030552"
  public static let directServiceBound = "60d4cee8-5e58-4338-876e-d71b48c732dd"
  public static let directCommandBound = "e19fb276-2114-46a2-ab69-cae47b60ef4c"
  public static let directResponseBound = "8de3ad7e-8a21-4e03-9e9e-b0098e0638b9"
  public static let directEventsBound = "2b09ecf6-0be3-4fcb-8e02-1b2917beeac0"

  /// SpringCore CCID services: generic, and the Socket Mobile S320/S370 advertised variants (SC-AND).
  public static let ccidService = "f91c914f-367c-4108-ac3e-3d30cfdd0a1a"
  public static let ccidServiceBound = "7f20cdc5-a9fc-4c70-9292-3acf9de71f73"
  public static let s320Service = "f91c914f-367c-4108-ac3e-3d3030323353"
  public static let s320ServiceBound = "7f20cdc5-a9fc-4c70-9292-3acf30323353"
  public static let s370Service = "f91c914f-367c-4108-ac3e-3d3030373353"
  public static let s370ServiceBound = "7f20cdc5-a9fc-4c70-9292-3acf30373353"

  /// What `discover` filters on unless --all: every Socket Mobile service above.
  public static let socketMobileAdvertised = [
    d600Service, d600ServiceNoPairing, directService, directServiceBound, s320Service, s320ServiceBound,
    s370Service, s370ServiceBound,
  ]
}
