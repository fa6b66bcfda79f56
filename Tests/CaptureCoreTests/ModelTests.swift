// Model tests: exact values from docs/capture-sdk.md, checked table by table.
import Testing

@testable import CaptureCore

// MARK: - Result codes (docs/capture-sdk.md §1)

struct ResultCodeTests {
  @Test func notSupportedIsMinus15() {
    #expect(ResultCode.notSupported.rawValue == -15)
    #expect(ResultCode.notSupported.name == "ESKT_NOTSUPPORTED")
    #expect(ResultCode.notSupported.description == "ESKT_NOTSUPPORTED (-15)")
    #expect(!ResultCode.notSupported.isSuccess)
  }

  @Test func tableHasEveryRowAndOnlyMinus90Twice() {
    #expect(ResultCode.all.count >= 93)
    var seen: [Int32: Int] = [:]
    for row in ResultCode.all { seen[row.code.rawValue, default: 0] += 1 }
    let duplicates = seen.filter { $0.value > 1 }.map(\.key)
    #expect(duplicates == [-90])
    #expect(Set(ResultCode.all.map(\.name)).count == ResultCode.all.count)
  }

  @Test func minus90PrefersTheCurrentName() {
    #expect(ResultCode(-90).name == "ESKT_LASSOIDALREADYSET")
    #expect(ResultCode.lassoIdAlreadySet == ResultCode.overlayViewNotSet)
    #expect(ResultCode.all.contains { $0.code.rawValue == -90 && $0.name == "ESKT_OVERLAYVIEWNOTSET" })
  }

  @Test(arguments: ResultCode.all.filter { $0.name != "ESKT_OVERLAYVIEWNOTSET" })
  func nameAndMeaningComeFromTheTable(row: (code: ResultCode, name: String, meaning: String)) {
    #expect(row.code.name == row.name)
    #expect(row.code.meaning == row.meaning)
    #expect(row.code.isKnown)
    #expect(row.code.isSuccess == (row.code.rawValue >= 0))
    #expect(ResultCode.named(row.name) == row.code)
  }

  static let spot: [(ResultCode, Int32, String)] = [
    (.noError, 0, "ESKT_NOERROR"), (.waitTimeout, 1, "ESKT_WAITTIMEOUT"),
    (.alreadyDone, 2, "ESKT_ALREADYDONE"),
    (.pending, 3, "ESKT_PENDING"), (.stillPending, 4, "ESKT_STILLPENDING"), (.created, 5, "ESKT_CREATED"),
    (.noData, 6, "ESKT_NODATA"), (.deprecated, 7, "ESKT_DEPRECATED"),
    (.lassoDisabled, 8, "ESKT_LASSODISABLED"),
    (.testFailed, -1, "ESKT_TESTFAILED"), (.notEnoughMemory, -2, "ESKT_NOTENOUGHMEMORY"),
    (.pendingOperationNotCompleted, -16, "ESKT_PENDINGOPERATIONNOTCOMPLETED"),
    (.notFound, -17, "ESKT_NOTFOUND"),
    (.invalidParameter, -18, "ESKT_INVALIDPARAMETER"), (.notInitialized, -19, "ESKT_NOTINITIALIZED"),
    (.deviceNotOpen, -31, "ESKT_DEVICENOTOPEN"), (.notAvailable, -32, "ESKT_NOTAVAILABLE"),
    (.unableWriteFile, -33, "ESKT_UNABLEWRITEFILE"), (.unableReadFile, -34, "ESKT_UNABLEREADFILE"),
    (.waitFailed, -35, "ESKT_WAITFAILED"), (.invalidChecksum, -36, "ESKT_INVALIDCHECKSUM"),
    (.commandDenied, -37, "ESKT_COMMANDDENIED"), (.communicationError, -38, "ESKT_COMMUNICATIONERROR"),
    (.invalidValue, -41, "ESKT_INVALIDVALUE"), (.requestTimedOut, -42, "ESKT_REQUESTTIMEDOUT"),
    (.unableOpenFile, -53, "ESKT_UNABLEOPENFILE"),
    (.unableCreateDirectory, -55, "ESKT_UNABLECREATEDIRECTORY"),
    (.fileNotFound, -63, "ESKT_FILENOTFOUND"), (.fileAccessDenied, -64, "ESKT_FILEACCESSDENIED"),
    (.invalidFormat, -85, "ESKT_INVALIDFORMAT"), (.invalidVersion, -86, "ESKT_INVALIDVERSION"),
    (.serviceNotCommunicating, -87, "ESKT_SERVICENOTCOMMUNICATING"),
    (.lassoIdNotMatching, -89, "ESKT_LASSOIDTNOTMATCHING"), (.cancel, -91, "ESKT_CANCEL"),
    (.expired, -92, "ESKT_EXPIRED"), (.invalidAppInfo, -93, "ESKT_INVALIDAPPINFO"),
    (.bleGatt, -94, "ESKT_BLEGATT"),
    (.favoriteNotEmpty, -95, "ESKT_FAVORITENOTEMPTY"),
    (.locationPermissionMissing, -96, "ESKT_LOCATIONPERMISSIONMISSING"),
    (.unableToCompleteOperation, -97, "ESKT_UNABLETOCOMPLETEOPERATION"),
    (.locationServiceDisabled, -98, "ESKT_LOCATIONSERVICEDISABLED"),
    (.bluetoothPermissionMissing, -99, "ESKT_BLUETOOTHPERMISSIONMISSING"),
  ]

  @Test(arguments: spot)
  func staticsHaveTheReferenceValues(code: ResultCode, raw: Int32, name: String) {
    #expect(code.rawValue == raw)
    #expect(code.name == name)
  }

  @Test func unknownCodesAndLookup() {
    #expect(ResultCode(-58).name == "ESKT_UNKNOWN")
    #expect(!ResultCode(-58).isKnown)
    #expect(ResultCode(1).isSuccess && ResultCode(1).isWarning)
    #expect(ResultCode.named("notsupported") == .notSupported)
    #expect(ResultCode.named("E_NOTSUPPORTED") == .notSupported)
    #expect(ResultCode.named("ESKT_OVERLAYVIEWNOTSET") == ResultCode(-90))
    #expect(ResultCode.named("nonsense") == nil)
  }
}

// MARK: - Property types and values (docs/capture-sdk.md §3)

struct PropertyTypeTests {
  @Test func rawValuesAndNames() {
    #expect(PropertyType.allCases.map(\.rawValue) == Array(0...10))
    #expect(
      PropertyType.allCases.map(\.name) == [
        "None", "NotApplicable", "Byte", "Ulong", "Array", "String", "Version", "DataSource", "Enum",
        "Object",
        "LastType",
      ])
  }

  @Test func valueTypes() {
    #expect(PropertyValue.none.type == .none)
    #expect(PropertyValue.byte(1).type == .byte)
    #expect(PropertyValue.ulong(1).type == .ulong)
    #expect(PropertyValue.array([1]).type == .array)
    #expect(PropertyValue.string("a").type == .string)
    #expect(PropertyValue.version(VersionValue(major: 1, middle: 2, minor: 3, build: 4)).type == .version)
    let ds = DataSourceValue(id: .qrCode, status: .enable)
    #expect(ds.flags == .status)
    #expect(PropertyValue.dataSource(ds).type == .dataSource)
    #expect(PropertyValue.byte(7).byteValue == 7)
    #expect(PropertyValue.byte(7).ulongValue == nil)
  }

  @Test func versionDescription() {
    #expect(VersionValue(major: 1, middle: 2, minor: 3, build: 4).description == "1.2.3.4")
    let dated = VersionValue(
      major: 1, middle: 5, minor: 0, build: 288, year: 2024, month: 3, day: 7, hour: 9, minute: 5)
    #expect(dated.description == "1.5.0.288 2024-03-07 09:05")
  }
}

// MARK: - Property ids (docs/capture-sdk.md §2)

struct PropertyRow: Sendable, CustomTestStringConvertible {
  let raw: Int32
  let name: String
  let scope: PropertyScope
  let get: PropertyType
  let set: PropertyType
  let group: PropertyGroup
  let id: UInt8
  init(
    _ raw: Int32, _ name: String, _ scope: PropertyScope, _ get: PropertyType, _ set: PropertyType,
    _ group: PropertyGroup, _ id: UInt8
  ) {
    (self.raw, self.name, self.scope, self.get, self.set, self.group, self.id) = (
      raw, name, scope, get, set, group, id
    )
  }
  var testDescription: String { name }
}

/// docs/capture-sdk.md §2.2, every row: the Get/Set/Group columns must equal what the bits decode to.
let propertyTable: [PropertyRow] = [
  PropertyRow(-2146435072, "Abort", .capture, .notApplicable, .none, .general, 0),
  PropertyRow(-2147418111, "Version", .capture, .none, .notApplicable, .general, 1),
  PropertyRow(-2147418112, "InterfaceVersion", .capture, .none, .notApplicable, .general, 0),
  PropertyRow(-2141913085, "Configuration", .capture, .string, .string, .general, 3),
  PropertyRow(-2147352572, "DataConfirmationMode", .capture, .none, .byte, .general, 4),
  PropertyRow(-2147287035, "DataConfirmationAction", .capture, .none, .ulong, .general, 5),
  PropertyRow(-2145124346, "MonitorMode", .capture, .byte, .array, .general, 6),
  PropertyRow(-2147352569, "SocketCamStatus", .capture, .none, .byte, .general, 7),
  PropertyRow(65536, "VersionDevice", .device, .none, .notApplicable, .general, 0),
  PropertyRow(65538, "DeviceType", .device, .none, .notApplicable, .general, 2),
  PropertyRow(4456451, "DeviceSpecific", .device, .array, .array, .general, 3),
  PropertyRow(7798788, "DataSourceDevice", .device, .dataSource, .dataSource, .general, 4),
  PropertyRow(1179653, "TriggerDevice", .device, .notApplicable, .byte, .general, 5),
  PropertyRow(1048582, "ApplyConfigDevice", .device, .notApplicable, .none, .general, 6),
  PropertyRow(327687, "PreambleDevice", .device, .none, .string, .general, 7),
  PropertyRow(327688, "PostambleDevice", .device, .none, .string, .general, 8),
  PropertyRow(2162697, "CapabilitiesDevice", .device, .byte, .notApplicable, .general, 9),
  PropertyRow(65546, "ChangeIdDevice", .device, .none, .notApplicable, .general, 10),
  PropertyRow(131083, "DataFormatDevice", .device, .none, .byte, .general, 11),
  PropertyRow(327936, "FriendlyNameDevice", .device, .none, .string, .localFunctions, 0),
  PropertyRow(131329, "SecurityModeDevice", .device, .none, .byte, .localFunctions, 1),
  PropertyRow(1376514, "PinCodeDevice", .device, .notApplicable, .string, .localFunctions, 2),
  PropertyRow(1179907, "DeletePairingBondingDevice", .device, .notApplicable, .byte, .localFunctions, 3),
  PropertyRow(1048836, "RestoreFactoryDefaultsDevice", .device, .notApplicable, .none, .localFunctions, 4),
  PropertyRow(1048837, "SetPowerOffDevice", .device, .notApplicable, .none, .localFunctions, 5),
  PropertyRow(65792, "ButtonsStatusDevice", .device, .none, .notApplicable, .localFunctions, 0),
  PropertyRow(2359559, "SoundConfigDevice", .device, .byte, .array, .localFunctions, 7),
  PropertyRow(262408, "TimersDevice", .device, .none, .array, .localFunctions, 8),
  PropertyRow(131337, "LocalAcknowledgmentDevice", .device, .none, .byte, .localFunctions, 9),
  PropertyRow(1245450, "DataConfirmationDevice", .device, .notApplicable, .ulong, .localFunctions, 10),
  PropertyRow(65803, "BatteryLevelDevice", .device, .none, .notApplicable, .localFunctions, 11),
  PropertyRow(131340, "LocalDecodeActionDevice", .device, .none, .byte, .localFunctions, 12),
  PropertyRow(65805, "BluetoothAddressDevice", .device, .none, .notApplicable, .localFunctions, 13),
  PropertyRow(65806, "StatisticCountersDevice", .device, .none, .notApplicable, .localFunctions, 14),
  PropertyRow(2359567, "RumbleConfigDevice", .device, .byte, .array, .localFunctions, 15),
  PropertyRow(262416, "ProfileConfigDevice", .device, .none, .array, .localFunctions, 16),
  PropertyRow(1179921, "DisconnectDevice", .device, .notApplicable, .byte, .localFunctions, 17),
  PropertyRow(4456722, "DataStoreDevice", .device, .array, .array, .localFunctions, 18),
  PropertyRow(196883, "NotificationsDevice", .device, .none, .ulong, .localFunctions, 19),
  PropertyRow(65812, "ConnectReasonDevice", .device, .none, .notApplicable, .localFunctions, 20),
  PropertyRow(65813, "PowerStateDevice", .device, .none, .notApplicable, .localFunctions, 21),
  PropertyRow(131350, "StartUpRoleSPPDevice", .device, .none, .byte, .localFunctions, 22),
  PropertyRow(131351, "ConnectionBeepConfigDevice", .device, .none, .byte, .localFunctions, 23),
  PropertyRow(131352, "FlashDevice", .device, .none, .byte, .localFunctions, 24),
  PropertyRow(590105, "OverlayViewDevice", .device, .none, .object, .localFunctions, 25),
  PropertyRow(196890, "StandConfigDevice", .device, .none, .ulong, .localFunctions, 26),
  PropertyRow(1245696, "StartDiscovery", .deviceManager, .notApplicable, .ulong, .managerFunctions, 0),
  PropertyRow(328193, "Favorite", .deviceManager, .none, .string, .managerFunctions, 1),
  PropertyRow(
    5308930, "UniqueDeviceIdentifier", .deviceManager, .string, .notApplicable, .managerFunctions, 2),
  PropertyRow(4456731, "PcScTagTransmit", .device, .array, .array, .localFunctions, 27),
  PropertyRow(4456732, "PcScCouplerControl", .device, .array, .array, .localFunctions, 28),
  PropertyRow(262429, "ThemeSelectionDevice", .device, .none, .array, .localFunctions, 29),
  PropertyRow(262430, "ThemeSelectionMaskDevice", .device, .none, .array, .localFunctions, 30),
  PropertyRow(131359, "LassoStatusDevice", .device, .none, .byte, .localFunctions, 31),
  PropertyRow(1311008, "LassoIdDevice", .device, .notApplicable, .array, .localFunctions, 32),
  PropertyRow(196897, "LassoLifeSpanDevice", .device, .none, .ulong, .localFunctions, 33),
  PropertyRow(-2147221214, "SinglePartnership", .capture, .none, .array, .localFunctions, 34),
  PropertyRow(-2147417821, "SinglePartnershipStamp", .capture, .none, .notApplicable, .localFunctions, 35),
  PropertyRow(292, "ResetSinglePartnershipDevice", .device, .none, .none, .localFunctions, 36),
  PropertyRow(
    1376771, "ConnectDiscoveredDevice", .deviceManager, .notApplicable, .string, .managerFunctions, 3),
  PropertyRow(
    1376768, "DisconnectDiscoveredDevice", .deviceManager, .notApplicable, .string, .managerFunctions, 0),
  PropertyRow(-2146303981, "AddDevice", .capture, .notApplicable, .byte, .general, 19),
  PropertyRow(-2146107372, "RemoveDevice", .capture, .notApplicable, .string, .general, 20),
  PropertyRow(1048832, "ResetDevice", .device, .notApplicable, .none, .localFunctions, 0),

]

struct PropertyIDTests {
  @Test(arguments: propertyTable)
  func bitLayoutMatchesTheTable(row: PropertyRow) {
    let p = PropertyID(row.raw)
    #expect(p.sdkName == row.name)
    #expect(p.getType == row.get)
    #expect(p.setType == row.set)
    #expect(p.group == row.group)
    #expect(p.idInGroup == row.id)
    #expect(p.scope == row.scope)
    #expect(p.isReadable == (row.get != .notApplicable))
    #expect(p.isWritable == (row.set != .notApplicable))
    #expect(!p.isDeprecated)
    #expect(p.meaning?.isEmpty == false)
  }

  @Test func knownListsTheTableThenTheDeprecatedOnes() {
    #expect(PropertyID.known.count == 74)
    #expect(PropertyID.known.prefix(64).map(\.rawValue) == propertyTable.map(\.raw))
    #expect(PropertyID.known.suffix(10).allSatisfy { $0.isDeprecated })
    #expect(PropertyID.current.count == 64)
    #expect(Set(PropertyID.known).count == 74)
  }

  @Test func triggerDevice() {
    let p = PropertyID.triggerDevice
    #expect(p.rawValue == 0x0012_0005)
    #expect(p.getType == .notApplicable)
    #expect(p.setType == .byte)
    #expect(p.group == .general)
    #expect(p.idInGroup == 5)
    #expect(p.scope == .device)
    #expect(p.cliName == "trigger")
    #expect(!p.isCaptureProperty)
    #expect(!p.isReadable && p.isWritable)
    #expect(p.hex == "0x00120005")
    #expect(p.description == "TriggerDevice")
  }

  @Test func version() {
    let p = PropertyID.version
    #expect(p.rawValue == Int32(bitPattern: 0x8001_0001))
    #expect(p.rawValue == -2_147_418_111)
    #expect(p.isCaptureProperty)
    #expect(p.getType == PropertyType.none)
    #expect(p.setType == .notApplicable)
    #expect(p.scope == .capture)
    #expect(p.hex == "0x80010001")
  }

  @Test func localFunctionsAndButtons() {
    #expect(PropertyID.friendlyNameDevice.rawValue == 0x0005_0100)
    #expect(PropertyID.friendlyNameDevice.group == .localFunctions)
    #expect(PropertyID.friendlyNameDevice.idInGroup == 0)
    #expect(PropertyID.buttonsStatusDevice.rawValue == 65792)
    #expect(PropertyID.batteryLevelDevice.hex == "0x0001010B")
    #expect(PropertyID.singlePartnership.scope == .capture)
    #expect(PropertyID.singlePartnership.group == .localFunctions)
    #expect(PropertyID.startDiscovery.scope == .deviceManager)
    #expect(PropertyID.startDiscovery.group == .managerFunctions)
  }

  @Test func deprecatedDataEditing() {
    #expect(PropertyID.dataEditingProfile.rawValue == -2_147_155_959)
    #expect(PropertyID.dataEditingImportExport.rawValue == -2_141_913_070)
    #expect(PropertyID.dataEditingTriggerMinLength.hex == "0x8055000C")
    #expect(PropertyID.dataEditingProfile.isDeprecated)
    #expect(PropertyID.dataEditingProfile.scope == .capture)
  }

  static let cliNames: [(PropertyID, String)] = [
    (.triggerDevice, "trigger"), (.friendlyNameDevice, "friendly-name"),
    (.batteryLevelDevice, "battery-level"),
    (.versionDevice, "version"), (.version, "version"), (.deviceType, "device-type"),
    (.dataSourceDevice, "data-source"), (.socketCamStatus, "socket-cam-status"),
    (.startUpRoleSPPDevice, "start-up-role-spp"), (.pcScTagTransmit, "pc-sc-tag-transmit"),
    (.powerStateDevice, "power-state"), (.notificationsDevice, "notifications"),
    (.dataConfirmationDevice, "data-confirmation"), (.localDecodeActionDevice, "local-decode-action"),
    (.dataFormatDevice, "data-format"), (.bluetoothAddressDevice, "bluetooth-address"),
    (.uniqueDeviceIdentifier, "unique-device-identifier"), (.resetDevice, "reset"), (.addDevice, "add"),
    (.interfaceVersion, "interface-version"), (.dataConfirmationMode, "data-confirmation-mode"),
  ]

  @Test(arguments: cliNames)
  func cliName(property: PropertyID, expected: String) {
    #expect(property.cliName == expected)
  }

  @Test(arguments: PropertyID.known)
  func everyNameRoundTrips(property: PropertyID) {
    #expect(PropertyID.parse(property.cliName, preferring: property.scope) == property)
    #expect(PropertyID.parse(property.sdkName!, preferring: property.scope) == property)
    #expect(
      PropertyID.parse(property.cliName.uppercased().replacingUnderscores(), preferring: property.scope)
        == property)
    #expect(PropertyID.parse(property.hex) == property)
    #expect(PropertyID.parse("\(property.rawValue)") == property)
    #expect(PropertyID.named(property.cliName).contains(property))
  }

  @Test func cliNamesAreUniqueExceptVersion() {
    var counts: [String: Int] = [:]
    for p in PropertyID.known { counts[p.cliName, default: 0] += 1 }
    #expect(counts.filter { $0.value > 1 }.map(\.key) == ["version"])
    #expect(PropertyID.named("version") == [.version, .versionDevice])
  }

  @Test func parsing() {
    #expect(PropertyID.parse("version") == .versionDevice)
    #expect(PropertyID.parse("version", preferring: .capture) == .version)
    #expect(PropertyID.parse("version", preferring: .deviceManager) == .versionDevice)
    #expect(PropertyID.parse("0x0001010B") == .batteryLevelDevice)
    #expect(PropertyID.parse("0x0001010b") == .batteryLevelDevice)
    #expect(PropertyID.parse("-2147418111") == .version)
    #expect(PropertyID.parse("2147549185") == .version)
    #expect(PropertyID.parse("1179653") == .triggerDevice)
    #expect(PropertyID.parse("0x00120005") == .triggerDevice)
    #expect(PropertyID.parse("TriggerDevice") == .triggerDevice)
    #expect(PropertyID.parse("triggerdevice") == .triggerDevice)
    #expect(PropertyID.parse("friendly_name") == .friendlyNameDevice)
    #expect(PropertyID.parse(" Battery-Level ") == .batteryLevelDevice)
    #expect(PropertyID.parse("no-such-property") == nil)
    #expect(PropertyID.parse("") == nil)
    #expect(PropertyID.parse("0x1FFFFFFFF") == nil)
  }

  @Test func unknownIds() {
    let device = PropertyID.parse("0x00010199")
    #expect(device == PropertyID(0x0001_0199))
    #expect(device?.isKnown == false)
    #expect(device?.sdkName == nil)
    #expect(device?.cliName == "0x00010199")
    #expect(device?.scope == .device)
    #expect(PropertyID(0x0013_0299).scope == .deviceManager)
    #expect(PropertyID(Int32(bitPattern: 0x8001_0099)).scope == .capture)
    #expect(PropertyID(0x00F0_0000).getType == nil)
    #expect(!PropertyID(0x00F0_0000).isReadable)
    #expect(PropertyID(rawValue: 65792) == .buttonsStatusDevice)
  }
}

extension String {
  fileprivate func replacingUnderscores() -> String { String(map { $0 == "-" ? "_" : $0 }) }
}

struct NamingTests {
  @Test func groupsInterfacesAndEventTypes() {
    #expect(PropertyGroup(id: 0) == .general && PropertyGroup(id: 2) == .managerFunctions)
    #expect(PropertyGroup(id: 8) == .other(8))
    #expect(PropertyGroup.localFunctions.description == "LocalFunctions")
    #expect(PropertyGroup.other(8).id == 8)
    #expect(DeviceInterface.allCases.map(\.rawValue) == Array(0...6))
    #expect(
      DeviceInterface.allCases.map(\.name) == ["None", "SD", "CF", "Bluetooth", "Serial", "Ble", "NFC"])
    #expect(DeviceType.scannerD740.hex == "0x0003000B")
    #expect(EventDataType.allCases.map(\.rawValue) == Array(0...8))
    #expect(EventDataType.decodedData.name == "DecodedData")
    #expect(PropertyScope.deviceManager.rawValue == "deviceManager")
  }
}

// MARK: - kebab-case

struct NameTests {
  static let kebab: [(String, String)] = [
    ("QRCode", "qr-code"), ("Gs1Databar", "gs1-databar"), ("Interleaved2of5", "interleaved2of5"),
    ("UpcE0", "upc-e0"),
    ("MicroQRCode", "micro-qr-code"), ("TriggerDevice", "trigger-device"), ("FriendlyName", "friendly-name"),
    ("StartUpRoleSPP", "start-up-role-spp"), ("PcScTagTransmit", "pc-sc-tag-transmit"), ("Ean13", "ean13"),
    ("ISO14443TypeA", "iso14443-type-a"), ("NotSpecified", "not-specified"),
    ("Code39Extended", "code39-extended"),
    ("DeviceType", "device-type"), ("SocketCamStatus", "socket-cam-status"), ("webUIPrompt", "web-ui-prompt"),
    ("", ""), ("abc", "abc"), ("ABC", "abc"),
  ]

  @Test(arguments: kebab)
  func kebabCase(input: String, expected: String) {
    #expect(CaptureCore.kebabCase(input) == expected)
  }
}

// MARK: - Device types (docs/capture-sdk.md §5)

struct DeviceRow: Sendable, CustomTestStringConvertible {
  let raw: UInt32
  let name: String
  let classID: UInt8
  let interface: DeviceInterface
  let functions: UInt8
  let product: UInt8
  init(
    _ raw: UInt32, _ name: String, _ classID: UInt8, _ interface: DeviceInterface, _ functions: UInt8,
    _ product: UInt8
  ) {
    (self.raw, self.name, self.classID, self.interface, self.functions, self.product) =
      (raw, name, classID, interface, functions, product)
  }
  var testDescription: String { name }
}

/// docs/capture-sdk.md §5.2, every row with its Class/Interface/Func/Product columns.
let deviceTable: [DeviceRow] = [
  DeviceRow(0, "None", 0, .none, 0, 0),
  DeviceRow(196609, "Scanner7", 0, .bluetooth, 0, 1),
  DeviceRow(196610, "Scanner7x", 0, .bluetooth, 0, 2),
  DeviceRow(196612, "Scanner7xi", 0, .bluetooth, 0, 4),
  DeviceRow(196611, "Scanner9", 0, .bluetooth, 0, 3),
  DeviceRow(5, "SocketCamC820", 0, .none, 0, 5),
  DeviceRow(29, "SocketCamC860", 0, .none, 0, 29),
  DeviceRow(196614, "ScannerS800", 0, .bluetooth, 0, 6),
  DeviceRow(196634, "ScannerS820", 0, .bluetooth, 0, 26),
  DeviceRow(196615, "ScannerS850", 0, .bluetooth, 0, 7),
  DeviceRow(196616, "ScannerS840", 0, .bluetooth, 0, 8),
  DeviceRow(196617, "ScannerD700", 0, .bluetooth, 0, 9),
  DeviceRow(196633, "ScannerD720", 0, .bluetooth, 0, 25),
  DeviceRow(196618, "ScannerD730", 0, .bluetooth, 0, 10),
  DeviceRow(196619, "ScannerD740", 0, .bluetooth, 0, 11),
  DeviceRow(196620, "ScannerD750", 0, .bluetooth, 0, 12),
  DeviceRow(196621, "ScannerD760", 0, .bluetooth, 0, 13),
  DeviceRow(196622, "ScannerS700", 0, .bluetooth, 0, 14),
  DeviceRow(196632, "ScannerS720", 0, .bluetooth, 0, 24),
  DeviceRow(196623, "ScannerS730", 0, .bluetooth, 0, 15),
  DeviceRow(196624, "ScannerS740", 0, .bluetooth, 0, 16),
  DeviceRow(196625, "ScannerS750", 0, .bluetooth, 0, 17),
  DeviceRow(196626, "ScannerS760", 0, .bluetooth, 0, 18),
  DeviceRow(196627, "ScannerS860", 0, .bluetooth, 0, 19),
  DeviceRow(196628, "ScannerD790", 0, .bluetooth, 0, 20),
  DeviceRow(327701, "ScannerD600", 0, .ble, 0, 21),
  DeviceRow(327702, "ScannerS550", 0, .ble, 0, 22),
  DeviceRow(327963, "ScannerS370", 0, .ble, 1, 27),
  DeviceRow(329243, "NFCS370", 0, .ble, 6, 27),
  DeviceRow(327964, "ScannerS320", 0, .ble, 1, 28),
  DeviceRow(393239, "NFCTag", 0, .nfc, 0, 23),
  DeviceRow(196894, "ScannerM930", 0, .bluetooth, 1, 30),
  DeviceRow(196895, "ScannerM940", 0, .bluetooth, 1, 31),
  DeviceRow(196896, "DeviceD761", 0, .bluetooth, 1, 32),
  DeviceRow(196897, "DeviceD762", 0, .bluetooth, 1, 33),
  DeviceRow(327970, "DeviceD763", 0, .ble, 1, 34),
  DeviceRow(196899, "DeviceD764", 0, .bluetooth, 1, 35),
  DeviceRow(196900, "DeviceD765", 0, .bluetooth, 1, 36),
  DeviceRow(329253, "DeviceD751", 0, .ble, 6, 37),
  DeviceRow(327974, "DeviceM942", 0, .ble, 1, 38),
  DeviceRow(327975, "DeviceM963", 0, .ble, 1, 39),
  DeviceRow(327976, "DeviceXS663", 0, .ble, 1, 40),
  DeviceRow(327977, "DeviceS721", 0, .ble, 1, 41),
  DeviceRow(327978, "DeviceS741", 0, .ble, 1, 42),
  DeviceRow(196651, "BtUnknown", 0, .bluetooth, 0, 43),
  DeviceRow(17104897, "DeviceManagerBle", 1, .ble, 0, 1),
  DeviceRow(329771, "BleUnknown", 0, .ble, 8, 43),

]

struct DeviceTypeTests {
  @Test(arguments: deviceTable)
  func bitFieldsMatchTheTable(row: DeviceRow) {
    let t = DeviceType(row.raw)
    #expect(t.sdkName == row.name)
    #expect(t.typeName == row.name)
    #expect(t.classID == row.classID)
    #expect(t.isDeviceManager == (row.classID == 1))
    #expect(t.interface == row.interface)
    #expect(t.functions.rawValue == row.functions)
    #expect(t.productID == row.product)
    #expect(t.modelName != nil)
    #expect(DeviceType.named(row.name) == t)
    #expect(DeviceType.named(row.name.uppercased()) == t)
  }

  @Test func knownIsTheTable() {
    #expect(DeviceType.known.map(\.rawValue) == deviceTable.map(\.raw))
    #expect(Set(DeviceType.known).count == deviceTable.count)
  }

  @Test func s370HasTwoHalves() {
    #expect(DeviceType.nfcS370.rawValue == 0x5061B)
    #expect(DeviceType.nfcS370.functions == [.nfcReader, .nfcWriter])
    #expect(DeviceType.nfcS370.interface == .ble)
    #expect(DeviceType.nfcS370.productID == 27)
    #expect(DeviceType.scannerS370.rawValue == 0x5011B)
    #expect(DeviceType.scannerS370.functions == .scanner)
    #expect(DeviceType.nfcS370.functions.names == ["NFCReader", "NFCWriter"])
  }

  @Test func socketCamAndManager() {
    #expect(DeviceType.socketCamC820.rawValue == 5)
    #expect(DeviceType.socketCamC820.interface == DeviceInterface.none)
    #expect(DeviceType.socketCamC820.modelName == "SocketCam C820")
    #expect(DeviceType.socketCamC820.isSocketCam)
    #expect(DeviceType.socketCamC860.rawValue == 29)
    #expect(DeviceType.named("SoftScan") == .socketCamC820)
    #expect(DeviceType.deviceManagerBle.isDeviceManager)
    #expect(DeviceType.deviceManagerBle.rawValue == 17_104_897)
    #expect(!DeviceType.scannerD740.isDeviceManager)
    #expect(DeviceType.scannerD740.rawValue == 196_619)
    #expect(DeviceType.scannerD750.rawValue == 0x3000C)
    #expect(DeviceType.bleUnknown.functions == .unknown)
  }

  @Test func unknownType() {
    let t = DeviceType(0x0007_0299)
    #expect(t.sdkName == nil)
    #expect(t.typeName == "Unknown")
    #expect(t.interface == nil)
    #expect(t.interfaceID == 7)
    #expect(t.functions == [.nfcReader])
    #expect(t.productID == 0x99)
    #expect(t.description == "Unknown(0x00070299)")
    #expect(DeviceType.named("nothing") == nil)
  }
}

// MARK: - Data sources (docs/capture-sdk.md §6)

struct DataSourceTests {
  @Test(arguments: [
    "qr-code", "QRCode", "38", "0x26", "symbology_qr_code", "QR", "qr", "SymbologyQRCode", "QR Code",
  ])
  func qrCodeSpellings(text: String) {
    #expect(DataSource.parse(text) == .qrCode)
    #expect(DataSource.parse(text)?.rawValue == 38)
  }

  static let parsed: [(String, Int32)] = [
    ("ean-13", 19), ("ean13", 19), ("EAN 13", 19), ("upc-e", 43), ("upce", 43), ("upca", 42), ("upc-a", 42),
    ("datamatrix", 16), ("dm", 16), ("data-matrix", 16), ("itf", 27), ("i2of5", 27), ("i25", 27),
    ("interleaved-2-of-5", 27), ("databar", 24), ("rss14", 24), ("databar-expanded", 26),
    ("rss-expanded", 26),
    ("pdf417", 33), ("micro-qr", 51), ("code-128", 15), ("Code128", 15), ("isbn", 3), ("felica", 258),
    ("TagTypeFelica", 258), ("iso14443-type-a", 256), ("nfc-forum", 266), ("not-specified", 0), ("0", 0),
    ("268", 268), ("0x10C", 268),
  ]

  @Test(arguments: parsed)
  func parse(text: String, id: Int32) {
    #expect(DataSource.parse(text)?.rawValue == id)
  }

  @Test(arguments: ["", "53", "255", "269", "-1", "nothing", "symbology"])
  func parseRejects(text: String) {
    #expect(DataSource.parse(text) == nil)
  }

  @Test func ranges() {
    #expect(DataSource.known.count == 66)
    #expect(DataSource.symbologies.map(\.rawValue) == Array(1...51))
    #expect(DataSource.tagTypes.map(\.rawValue) == Array(256...267))
    #expect(DataSource.known.filter(\.isTagType).count + 1 == Array(256...268).count)
    #expect(DataSource.known.filter { (256...268).contains($0.rawValue) }.count == 13)
    #expect(DataSource.lastSymbologyID.rawValue == 52 && DataSource.lastSymbologyID.isSentinel)
    #expect(DataSource.lastTagType.rawValue == 0x10C && DataSource.lastTagType.isSentinel)
    #expect(!DataSource.notSpecified.isSymbology && !DataSource.notSpecified.isSentinel)
    #expect(DataSource.microQRCode.rawValue == 51)
    #expect(DataSource.iso14443TypeA.rawValue == 256)
    #expect(DataSource.nfcForum.rawValue == 266)
  }

  static let names: [(DataSource, String, String, String)] = [
    (.qrCode, "SymbologyQRCode", "QR Code", "qr-code"),
    (.dataMatrix, "SymbologyDataMatrix", "Data Matrix", "data-matrix"),
    (.ean13, "SymbologyEan13", "EAN 13", "ean13"), (.ean8, "SymbologyEan8", "EAN 8", "ean8"),
    (.upcA, "SymbologyUpcA", "UPC A", "upc-a"), (.upcE0, "SymbologyUpcE0", "UPC E0", "upc-e0"),
    (.code128, "SymbologyCode128", "Code 128", "code128"), (.code39, "SymbologyCode39", "Code 39", "code39"),
    (.interleaved2of5, "SymbologyInterleaved2of5", "Interleaved 2 of 5", "interleaved2of5"),
    (.codabar, "SymbologyCodabar", "Codabar", "codabar"),
    (.gs1Databar, "SymbologyGs1Databar", "GS1 DataBar", "gs1-databar"),
    (.pdf417, "SymbologyPdf417", "PDF 417", "pdf417"), (.aztec, "SymbologyAztec", "Aztec", "aztec"),
    (.microQRCode, "SymbologyMicroQRCode", "Micro QR Code", "micro-qr-code"),
    (.iso14443TypeA, "TagTypeISO14443TypeA", "ISO 14443 Type A", "iso14443-type-a"),
    (.felica, "TagTypeFelica", "FeliCa", "felica"),
    (.notSpecified, "NotSpecified", "Not Specified", "not-specified"),
    (.lastSymbologyID, "LastSymbologyID", "Last Symbology ID", "last-symbology-id"),
  ]

  @Test(arguments: names)
  func namesOf(source: DataSource, sdkName: String, name: String, cliName: String) {
    #expect(source.sdkName == sdkName)
    #expect(source.name == name)
    #expect(source.cliName == cliName)
  }

  @Test(arguments: DataSource.known)
  func everyNameRoundTrips(source: DataSource) {
    #expect(DataSource.parse(source.cliName) == source)
    #expect(DataSource.parse(source.sdkName!) == source)
    #expect(DataSource.parse(source.name) == source)
    #expect(DataSource.parse("\(source.rawValue)") == source)
    #expect(source.isSymbology != source.isTagType || source.isSentinel || source == .notSpecified)
  }

  @Test func namesAreUnique() {
    #expect(Set(DataSource.known.map(\.cliName)).count == DataSource.known.count)
    #expect(Set(DataSource.known.map(\.name)).count == DataSource.known.count)
    #expect(DataSource(999).name == "Unknown (999)")
    #expect(DataSource(999).sdkName == nil)
  }

  @Test func status() {
    #expect(DataSourceStatus.allCases.map(\.rawValue) == [-1, 0, 1, 2])
    for text in ["enable", "on", "1", "true", "Enable"] { #expect(DataSourceStatus.parse(text) == .enable) }
    for text in ["disable", "off", "0", "false"] { #expect(DataSourceStatus.parse(text) == .disable) }
    #expect(DataSourceStatus.parse("-1") == .defaultStatus)
    #expect(DataSourceStatus.parse("not-supported") == .notSupported)
    #expect(DataSourceStatus.parse("maybe") == nil)
    #expect(DataSourceStatus.notSupported.name == "not-supported")
    #expect(DataSourceFlags.status.rawValue == 1 && DataSourceFlags.param.rawValue == 2)
  }
}

// MARK: - Value enums (docs/capture-sdk.md §7)

struct ValueEnumTests {
  @Test func dataConfirmation() {
    #expect(DataConfirmation.good.packed == 0x15)
    #expect(DataConfirmation.bad.packed == 0x2A)
    #expect(DataConfirmation(led: .green, beep: .good).packed == 0x05)
    #expect(DataConfirmation(packed: 0x15) == .good)
    #expect(DataConfirmation(packed: 0x2A) == .bad)
    #expect(DataConfirmation.parse("good") == .good)
    #expect(DataConfirmation.parse("bad") == .bad)
    #expect(DataConfirmation.parse("led=green,beep=good,rumble=none")?.packed == 0x05)
    #expect(DataConfirmation.parse("led=red") == DataConfirmation(led: .red))
    #expect(DataConfirmation.parse("21") == .good)
    #expect(DataConfirmation.parse("led=blue") == nil)
    #expect(DataConfirmation.parse("colour=green") == nil)
    #expect(DataConfirmation.good.description == "led=green,beep=good,rumble=good")
  }

  @Test func batteryLevel() {
    let b = BatteryLevel(packed: 0x6400_5A00)
    #expect(b.current == 90)
    #expect(b.minimum == 0)
    #expect(b.maximum == 100)
    #expect(b.percent == 90)
    #expect(b.packed == 0x6400_5A00)
    #expect(BatteryLevel(packed: 1_677_744_640) == b)
    #expect(BatteryLevel(reported: 0x6400_5A00) == b)
    #expect(BatteryLevel(reported: 90) == b)
    #expect(BatteryLevel(current: 50, minimum: 0, maximum: 0).percent == 50)
  }

  @Test func trigger() {
    #expect(Trigger.parse("continuous") == .continuousScan)
    #expect(Trigger.parse("continuous-scan") == .continuousScan)
    #expect(Trigger.parse("START") == .start)
    #expect(Trigger.parse("2") == .stop)
    #expect(Trigger.parse("7") == nil)
    #expect(Trigger.parse("bogus") == nil)
    #expect(Trigger.allCases.map(\.rawValue) == [1, 2, 3, 4, 5, 6])
    #expect(Trigger.continuousScan.cliName == "continuous")
  }

  @Test func rawValues() {
    #expect(SocketCamStatus.enable.rawValue == 0)
    #expect(SocketCamStatus.disable.rawValue == 1)
    #expect(SocketCamStatus.notSupported.rawValue == 2)
    #expect(PowerState.allCases.map(\.rawValue) == [0, 1, 2, 4])
    #expect(PowerState.from(ulong: 0x0000_0102) == .onCradle)
    #expect(PowerState.from(ulong: 0x03) == .unknown)
    #expect(DataFormat.allCases.map(\.rawValue) == [0, 1, 2, 4, 10, 12])
    #expect(StandConfig.allCases.map(\.rawValue) == [0, 1, 2, 3, 4])
    #expect(StandConfig.parse("auto") == .autoMode)
    #expect(DataConfirmationMode.app.rawValue == 3)
    #expect(BluetoothDiscoveryMode.ble.rawValue == 1 && BluetoothDiscoveryMode.classic.rawValue == 2)
    #expect(SinglePartnershipMode.deviceId.rawValue == 5)
    #expect(SinglePartnershipMode.webUIPrompt.cliName == "web-ui-prompt")
    #expect(Disconnect.makeAvailable.rawValue == 2)
    #expect(ConnectReason.retry.rawValue == 5)
    #expect(ProfileSelect.coupler.rawValue == 4)
    #expect(StatisticCounter.skip.rawValue == -1 && StatisticCounter.standModeChange.rawValue == 30)
    #expect(StatisticCounter.parse("-1") == .skip)
  }

  @Test func optionSets() {
    #expect(LocalDecodeAction.parse("beep,flash") == [.beep, .flash])
    #expect(LocalDecodeAction.parse("none") == [])
    #expect(LocalDecodeAction.parse("7") == [.beep, .flash, .rumble])
    #expect(LocalDecodeAction.parse("beep,laser") == nil)
    #expect(Notifications.parse("trigger-button-press, battery-level-change")?.rawValue == 33)
    #expect(Notifications.parse("all")?.rawValue == 63)
    #expect(Notifications.parse("none")?.rawValue == 0)
    #expect(Notifications(rawValue: 0x11).names == ["trigger-button-press", "power-state"])
    #expect(Notifications(rawValue: 0x40).unknownBits == 0x40)
    #expect(ButtonsState.ringDetach.rawValue == 0x10)
    #expect(ButtonsState(rawValue: 0x14).names == ["middle", "ring-detach"])
    #expect(TimerMask.all.rawValue == 7)
  }

  @Test func enumNamesRoundTrip() {
    func check<E: CaptureValueEnum>(_ type: E.Type) {
      #expect(Set(E.allCases.map(\.cliName)).count == E.allCases.count)
      for value in E.allCases {
        #expect(E.parse(value.cliName) == value)
        #expect(E.parse(value.cliName.uppercased()) == value)
        #expect(E.parse("\(value.rawValue)") == value)
      }
    }
    check(Trigger.self)
    check(TriggerMode.self)
    check(PowerState.self)
    check(DataConfirmationLed.self)
    check(DataConfirmationBeep.self)
    check(DataConfirmationRumble.self)
    check(DataConfirmationMode.self)
    check(DeviceDataAcknowledgment.self)
    check(DataFormat.self)
    check(SecurityMode.self)
    check(DeletePairing.self)
    check(ProfileSelect.self)
    check(ProfileConfigRole.self)
    check(Disconnect.self)
    check(ConnectReason.self)
    check(StartUpRoleSpp.self)
    check(ConnectBeepConfig.self)
    check(StandConfig.self)
    check(SocketCamStatus.self)
    check(Flash.self)
    check(SinglePartnershipMode.self)
    check(BluetoothDiscoveryMode.self)
    check(SoundActionType.self)
    check(SoundFrequency.self)
    check(MonitorDbg.self)
    check(StatisticCounter.self)
    check(ThemeSelection.self)
    check(LassoDeviceStatus.self)
  }
}

// MARK: - Events (docs/capture-sdk.md §4)

struct EventIDTests {
  @Test func numbering() {
    #expect(EventID.allCases.map(\.rawValue) == Array(0...22))
    #expect(EventID.decodedData.rawValue == 5)
    #expect(EventID.decodedData.name == "decodedData")
    #expect(EventID.decodedData.sdkName == "DecodedData")
    #expect(EventID.decodedData.dataType == .decodedData)
    #expect(EventID.deviceManagerArrival.rawValue == 11)
    #expect(EventID.logTrace.rawValue == 21)
    #expect(EventID.lastID.rawValue == 22)
    #expect(EventID.pcscCouplerArrival.rawValue == 15)
    #expect(EventDataType.deviceInfo.rawValue == 6)
  }

  @Test(arguments: EventID.allCases)
  func parse(event: EventID) {
    #expect(EventID.parse(event.name) == event)
    #expect(EventID.parse(event.cliName) == event)
    #expect(EventID.parse("\(event.rawValue)") == event)
  }
}
