// Capture event ids (docs/capture-sdk.md §4.1, current numbering: LogTrace = 21, LastID = 22) and event data
// types (§4.2). JS 1.3.50 numbered 15/16 differently (CcidStatus/LastID); the 2026 headers win.

public enum EventID: Int32, Sendable, CaseIterable, CustomStringConvertible {
  /// Capture was not initialised correctly after open.
  case notInitialized = 0
  /// a device connected and is ready; open it by GUID.
  case deviceArrival = 1
  /// a device disconnected.
  case deviceRemoval = 2
  /// Capture closed; the value is a result code.
  case terminate = 3
  /// an unsolicited error; the value is the error code.
  case error = 4
  /// a scan or tag read.
  case decodedData = 5
  /// power state changed (needs the Notifications bit).
  case power = 6
  /// button state changed (needs the Notifications bit).
  case buttons = 7
  /// battery level changed (needs the Notifications bit).
  case batteryLevel = 8
  /// the service's listener (Bluetooth Classic) started.
  case listenerStarted = 9
  /// ownership GUID changed; the all-zero GUID means another app took the device.
  case deviceOwnership = 10
  /// the BLE device manager is available; open it by GUID.
  case deviceManagerArrival = 11
  /// the BLE device manager is gone.
  case deviceManagerRemoval = 12
  /// a BLE or Bluetooth device was found during discovery.
  case deviceDiscovered = 13
  /// discovery finished; the event's result holds a result code.
  case discoveryEnd = 14
  /// PC/SC coupler present.
  case pcscCouplerArrival = 15
  /// PC/SC coupler gone.
  case pcscCouplerRemoval = 16
  /// tag present (PC/SC).
  case pcscTagArrival = 17
  /// tag gone (PC/SC).
  case pcscTagRemoval = 18
  /// APDU response.
  case pcscTagTransmitResponse = 19
  /// coupler control response.
  case pcscDeviceControlResponse = 20
  /// SDK log line.
  case logTrace = 21
  /// sentinel.
  case lastID = 22

  /// The lowerCamel name, e.g. "decodedData": the JSON output's `event` key (docs/architecture.md §1).
  public var name: String {
    switch self {
    case .notInitialized: "notInitialized"
    case .deviceArrival: "deviceArrival"
    case .deviceRemoval: "deviceRemoval"
    case .terminate: "terminate"
    case .error: "error"
    case .decodedData: "decodedData"
    case .power: "power"
    case .buttons: "buttons"
    case .batteryLevel: "batteryLevel"
    case .listenerStarted: "listenerStarted"
    case .deviceOwnership: "deviceOwnership"
    case .deviceManagerArrival: "deviceManagerArrival"
    case .deviceManagerRemoval: "deviceManagerRemoval"
    case .deviceDiscovered: "deviceDiscovered"
    case .discoveryEnd: "discoveryEnd"
    case .pcscCouplerArrival: "pcscCouplerArrival"
    case .pcscCouplerRemoval: "pcscCouplerRemoval"
    case .pcscTagArrival: "pcscTagArrival"
    case .pcscTagRemoval: "pcscTagRemoval"
    case .pcscTagTransmitResponse: "pcscTagTransmitResponse"
    case .pcscDeviceControlResponse: "pcscDeviceControlResponse"
    case .logTrace: "logTrace"
    case .lastID: "lastID"
    }
  }

  /// The SDK spelling from docs/capture-sdk.md §4.1, e.g. "DecodedData".
  public var sdkName: String {
    switch self {
    case .notInitialized: "NotInitialized"
    case .deviceArrival: "DeviceArrival"
    case .deviceRemoval: "DeviceRemoval"
    case .terminate: "Terminate"
    case .error: "Error"
    case .decodedData: "DecodedData"
    case .power: "Power"
    case .buttons: "Buttons"
    case .batteryLevel: "BatteryLevel"
    case .listenerStarted: "ListenerStarted"
    case .deviceOwnership: "DeviceOwnership"
    case .deviceManagerArrival: "DeviceManagerArrival"
    case .deviceManagerRemoval: "DeviceManagerRemoval"
    case .deviceDiscovered: "DeviceDiscovered"
    case .discoveryEnd: "DiscoveryEnd"
    case .pcscCouplerArrival: "PcscCouplerArrival"
    case .pcscCouplerRemoval: "PcscCouplerRemoval"
    case .pcscTagArrival: "PcscTagArrival"
    case .pcscTagRemoval: "PcscTagRemoval"
    case .pcscTagTransmitResponse: "PcscTagTransmitResponse"
    case .pcscDeviceControlResponse: "PcscDeviceControlResponse"
    case .logTrace: "LogTrace"
    case .lastID: "LastID"
    }
  }

  /// Kebab-case, for `--events` lists ("decoded-data").
  public var cliName: String { kebabCase(sdkName) }

  /// The data type the event carries (docs/capture-sdk.md §4.1 "Data type", from the 2026 iOS header).
  public var dataType: EventDataType {
    switch self {
    case .notInitialized: .none
    case .deviceArrival: .deviceInfo
    case .deviceRemoval: .deviceInfo
    case .terminate: .ulong
    case .error: .ulong
    case .decodedData: .decodedData
    case .power: .ulong
    case .buttons: .ulong
    case .batteryLevel: .ulong
    case .listenerStarted: .ulong
    case .deviceOwnership: .string
    case .deviceManagerArrival: .deviceInfo
    case .deviceManagerRemoval: .deviceInfo
    case .deviceDiscovered: .deviceInfo
    case .discoveryEnd: .none
    case .pcscCouplerArrival: .deviceInfo
    case .pcscCouplerRemoval: .deviceInfo
    case .pcscTagArrival: .deviceInfo
    case .pcscTagRemoval: .deviceInfo
    case .pcscTagTransmitResponse: .array
    case .pcscDeviceControlResponse: .array
    case .logTrace: .string
    case .lastID: .none
    }
  }

  /// The docs/capture-sdk.md §4.1 one-line meaning.
  public var meaning: String {
    switch self {
    case .notInitialized: "Capture was not initialised correctly after open"
    case .deviceArrival: "a device connected and is ready; open it by GUID"
    case .deviceRemoval: "a device disconnected"
    case .terminate: "Capture closed; the value is a result code"
    case .error: "an unsolicited error; the value is the error code"
    case .decodedData: "a scan or tag read"
    case .power: "power state changed (needs the Notifications bit)"
    case .buttons: "button state changed (needs the Notifications bit)"
    case .batteryLevel: "battery level changed (needs the Notifications bit)"
    case .listenerStarted: "the service's listener (Bluetooth Classic) started"
    case .deviceOwnership: "ownership GUID changed; the all-zero GUID means another app took the device"
    case .deviceManagerArrival: "the BLE device manager is available; open it by GUID"
    case .deviceManagerRemoval: "the BLE device manager is gone"
    case .deviceDiscovered: "a BLE or Bluetooth device was found during discovery"
    case .discoveryEnd: "discovery finished; the event's result holds a result code"
    case .pcscCouplerArrival: "PC/SC coupler present"
    case .pcscCouplerRemoval: "PC/SC coupler gone"
    case .pcscTagArrival: "tag present (PC/SC)"
    case .pcscTagRemoval: "tag gone (PC/SC)"
    case .pcscTagTransmitResponse: "APDU response"
    case .pcscDeviceControlResponse: "coupler control response"
    case .logTrace: "SDK log line"
    case .lastID: "sentinel"
    }
  }

  public var description: String { name }

  /// An event by name ("decodedData", "decoded-data", "DecodedData"; case-insensitive, `-`/`_` ignored)
  /// or by number.
  public static func parse(_ text: String) -> EventID? {
    let trimmed = text.trimmingWhitespace()
    if let n = parseInteger(trimmed) { return Int32(exactly: n).flatMap(EventID.init(rawValue:)) }
    let key = lookupKey(trimmed)
    guard !key.isEmpty else { return nil }
    return allCases.first { lookupKey($0.sdkName) == key }
  }
}

/// The `type` of an event's value (docs/capture-sdk.md §4.2). These numbers differ from the property types:
/// Byte is 1 here but 2 for properties.
public enum EventDataType: UInt8, Sendable, CaseIterable {
  case none = 0
  case byte = 1
  case ulong = 2
  case array = 3
  case string = 4
  case decodedData = 5
  case deviceInfo = 6
  /// Present in the 2026 sources; older ones had LastID = 7 and no Object.
  case object = 7
  case lastID = 8

  /// The docs/capture-sdk.md §4.2 spelling ("DecodedData").
  public var name: String {
    switch self {
    case .none: "None"
    case .byte: "Byte"
    case .ulong: "Ulong"
    case .array: "Array"
    case .string: "String"
    case .decodedData: "DecodedData"
    case .deviceInfo: "DeviceInfo"
    case .object: "Object"
    case .lastID: "LastID"
    }
  }
}
