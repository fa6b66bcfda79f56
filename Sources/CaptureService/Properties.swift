import CaptureCore

/// getproperty and setproperty (docs/capturejs.md §3): Capture-level properties on the client handle,
/// a device's through its open Device (the same calls `capture get` and `capture set` make), the
/// device manager's on its handle.
extension CaptureService {
  /// The interface version this service answers InterfaceVersion with (its reply type is not
  /// published, docs/capturejs.md §9; a Ulong, as ScanAPI's was).
  public static let interfaceVersion: UInt32 = 1

  func property(_ params: JSON, set isSet: Bool) async throws(CaptureError) -> JSON {
    let handle = try Self.handle(params)
    let request = try PropertyWire.request(params["property"])
    guard let target = state.withLock({ $0.handles[handle] }) else {
      throw CaptureError(.invalidHandle, "no open handle \(handle)")
    }
    let id = request.id
    if isSet {
      guard id.isWritable, let setType = id.setType else {
        throw .notSupported("\(Self.describe(id)) cannot be set")
      }
      guard request.type == setType else {
        throw .invalidParameter(
          "\(Self.describe(id)) is set with type \(setType.rawValue) (\(setType.name)), not \(request.type.rawValue)"
        )
      }
      let value = try PropertyWire.decode(setType, request.value)
      try PropertyRules.check(id, value)
      switch target {
      case .client: try await setCapture(id, value, client: handle)
      case .device(_, let key, let guid): try await setDevice(id, value, key: key, guid: guid)
      case .deviceManager(let client): try await setManager(id, value, handle: handle, client: client)
      }
      var property: [String: JSON] = ["id": .int(id.rawValue), "type": .int(setType.rawValue)]
      if let echoed = PropertyWire.encode(value) { property["value"] = echoed }
      return .object(["handle": .int(handle), "property": .object(property)])
    }
    guard id.isReadable else { throw .notSupported("\(Self.describe(id)) cannot be read") }
    let argument = try PropertyWire.decode(request.type, request.value)
    let value: PropertyValue
    switch target {
    case .client: value = try getCapture(id, argument)
    case .device(_, let key, let guid):
      value = try await device(key: key, guid: guid).get(id, argument: argument)
    case .deviceManager: value = try getManager(id, argument)
    }
    return .object(["handle": .int(handle), "property": PropertyWire.property(id, value)])
  }

  static func describe(_ id: PropertyID) -> String {
    id.sdkName.map { "\($0) (\(id.rawValue))" } ?? "property \(id.rawValue) (\(id.hex))"
  }

  // MARK: Capture (the client handle)

  func getCapture(_ id: PropertyID, _ argument: PropertyValue = .none) throws(CaptureError) -> PropertyValue {
    switch id {
    case .version:
      return .version(
        VersionValue(
          major: CaptureVersion.major, middle: CaptureVersion.middle, minor: CaptureVersion.minor,
          build: CaptureVersion.build))
    case .interfaceVersion:
      return .ulong(Self.interfaceVersion)
    case .socketCamStatus:
      // The persisted setting `capture set socketcam socket-cam-status` writes; NotSupported when
      // serve has no SOURCE for SocketCam.
      return .byte(try engine.socketCamStatus().rawValue)
    case .configuration:
      return .string(try configurationItem(argument))
    case .singlePartnership, .singlePartnershipStamp:
      throw .notSupported(Self.singlePartnershipWhy(id))
    default:
      throw .notSupported("the Capture service has no \(Self.describe(id)) on the client handle")
    }
  }

  func setCapture(_ id: PropertyID, _ value: PropertyValue, client: UInt32) async throws(CaptureError) {
    switch (id, value) {
    case (.socketCamStatus, .byte(let raw)):
      // Persisted, then SocketCam opens with serve's SOURCE (its arrival reaches every client) or
      // closes (its removal does).
      guard let status = SocketCamStatus(rawValue: raw) else {
        throw .invalidParameter("socket-cam-status takes enable (0) or disable (1)")
      }
      try await engine.setSocketCamStatus(status)
    case (.addDevice, .byte(let mode)):
      // BluetoothDiscoveryMode (docs/capture-sdk.md §7.15): 1 Bluetooth LE, 2 Classic. The devices
      // found come as DeviceDiscovered on the client handle, then DiscoveryEnd.
      let transport: String
      switch mode {
      case 1: transport = "le"
      case 2: transport = "bredr"
      default:
        throw .invalidParameter("AddDevice takes 1 (Bluetooth LE) or 2 (Bluetooth Classic), not \(mode)")
      }
      startDiscovery(
        transport: transport, window: configuration.discoveryWindow, handle: client, client: client)
    case (.removeDevice, .string(let text)):
      try await removeDevice(text)
    case (.configuration, .string(let text)):
      try setConfiguration(text)
    case (.singlePartnership, _):
      throw .notSupported(Self.singlePartnershipWhy(id))
    default:
      throw .notSupported("the Capture service has no settable \(Self.describe(id)) on the client handle")
    }
  }

  /// RemoveDevice: a device's GUID (or its Bluetooth address, its id in the state file) is forgotten
  /// as `capture remove` does, and its removal follows.
  func removeDevice(_ text: String) async throws(CaptureError) {
    let id = state.withLock { $0.connections.connection(guid: text)?.info.id } ?? text
    let selector = try DeviceSelector.parse(id)
    if case .bluetooth(let address) = selector {
      _ = try await engine.devices.unpair(address: address)
    }
    try await forget(selector.description)
  }

  /// Drops a device from the state file and re-reads it: its supervisor stops and its removal reaches
  /// every client. The device leaves both lists the engine connects from (DeviceManager.forgetAndUnlist):
  /// the remembered devices and the Favorite list. Neither remembered nor listed: ESKT_NOTFOUND.
  func forget(_ id: String) async throws(CaptureError) {
    guard try await engine.devices.forgetAndUnlist(id) else {
      throw CaptureError(.notFound, "\(id) is not a remembered device")
    }
    engine.reload()
  }

  // MARK: devices

  /// The open device of a connection; a connection that has ended (the device left, perhaps to come
  /// back under a new GUID) is not open any more.
  func device(key: String, guid: String) throws(CaptureError) -> any Device {
    let current = state.withLock { $0.connections.current[key] }
    guard let current, current.guid == guid,
      let device = engine.openDevices.first(where: { Connections.key($0.info) == key })
        ?? engine.openDevices.first(where: { $0.info.id == current.info.id })
    else {
      throw CaptureError(
        .deviceNotOpen, "the device of GUID \(guid) has left; open it again with the GUID of its next arrival"
      )
    }
    return device
  }

  func setDevice(_ id: PropertyID, _ value: PropertyValue, key: String, guid: String)
    async throws(CaptureError)
  {
    let device = try device(key: key, guid: guid)
    // A trigger is the device's trigger action, as `capture trigger` sends it; SocketCam's reads are
    // followed so that a stop before a code sends the SDK's cancel (`ClientProperties.swift`).
    if id == .triggerDevice, case .byte(let raw) = value, let action = Trigger(rawValue: raw) {
      if device.info.type.isSocketCam {
        try await triggerSocketCam(device, action, key: key)
      } else {
        try await device.trigger(action)
      }
      return
    }
    if id == .resetSinglePartnershipDevice {
      try await resetPartnership(device)
      return
    }
    try await device.set(id, value)
  }

  // MARK: the device manager

  func getManager(_ id: PropertyID, _ argument: PropertyValue) throws(CaptureError) -> PropertyValue {
    switch (id, argument) {
    case (.favorite, _):
      return .string(try engine.devices.state().favorite)
    case (.uniqueDeviceIdentifier, .string(let guid)):
      // A device's GUID → the identifier a favourite names it by: its id (a Bluetooth address).
      guard let connection = state.withLock({ $0.connections.connection(guid: guid) }) else {
        throw CaptureError(.notFound, "no device is connected with GUID \(guid)")
      }
      return .string(connection.info.id)
    default:
      throw .notSupported("the device manager has no readable \(Self.describe(id))")
    }
  }

  func setManager(_ id: PropertyID, _ value: PropertyValue, handle: UInt32, client: UInt32)
    async throws(CaptureError)
  {
    switch (id, value) {
    case (.favorite, _):
      // The same persisted setting `capture set manager favorite` writes, then the engine follows it.
      try await engine.devices.handle.set(.favorite, value)
      engine.reload()
    case (.startDiscovery, .ulong(let timeout)):
      // The sources disagree on the unit (docs/capture-sdk.md §7.16: seconds, or 5000 in an example):
      // 1000 and more are milliseconds, less are seconds; at most a minute.
      let milliseconds = timeout >= 1000 ? Int64(timeout) : Int64(timeout) * 1000
      let window = Duration.milliseconds(min(max(milliseconds, 1000), 60_000))
      startDiscovery(transport: "le", window: window, handle: handle, client: client)
    case (.connectDiscoveredDevice, .string(let identifier)):
      try await connect(identifier)
    case (.disconnectDiscoveredDevice, .string(let identifier)):
      let selector = try DeviceSelector.parse(Self.identifierUUID(identifier))
      try await forget(selector.description)
    default:
      throw .notSupported("the device manager has no settable \(Self.describe(id))")
    }
  }

  /// ConnectDiscoveredDevice: connected the way `capture connect` does, remembered, then supervised
  /// by the engine like every remembered device (its arrival follows).
  func connect(_ identifier: String) async throws(CaptureError) {
    guard case .bluetooth(let address) = try DeviceSelector.parse(Self.identifierUUID(identifier)) else {
      throw .invalidParameter("ConnectDiscoveredDevice takes the identifierUuid of a DeviceDiscovered event")
    }
    let connected = try await engine.devices.connectAndRemember(address: address, keepingAlias: true)
    try await engine.devices.addFavorite(RememberedDevice(bluetooth: connected, alias: nil).id)
    engine.reload()
  }

  /// The identifierUuid of a ConnectDiscoveredDevice value: Flutter sends `identifierUuid;serviceUuid`
  /// off Android and the identifier alone on it (capturesdk_flutter lib/capture_helper.dart
  /// `connectDiscoveredDevice`); both name the same device.
  static func identifierUUID(_ value: String) -> String {
    value.firstIndex(of: ";").map { String(value[..<$0]) } ?? value
  }

  /// A discovery through the engine's device management; DeviceDiscovered for each device found and
  /// DiscoveryEnd (its result code in `result`) on `handle`, the client's or its device manager's.
  func startDiscovery(transport: String, window: Duration, handle: UInt32, client: UInt32) {
    let devices = engine.devices
    Task {
      var result = ResultCode.noError
      do throws(CaptureError) {
        _ = try await devices.discover(transport: transport, all: false, window: window) {
          [weak self] found in
          self?.emit([Self.discovered(found, handle: handle)], client: client)
        }
      } catch {
        result = error.code
      }
      self.emit(
        [EventWire.message(handle: handle, id: .discoveryEnd, value: nil, result: result)], client: client)
    }
  }

  /// DeviceDiscovered: `{name, identifierUuid, serviceUuid}` as CaptureJS 2.0 types it
  /// (docs/capturejs.md §4); on Linux the identifier is the Bluetooth address, which
  /// ConnectDiscoveredDevice takes back.
  static func discovered(_ device: DiscoveredDeviceInfo, handle: UInt32) -> JSON {
    EventWire.message(
      handle: handle, id: .deviceDiscovered,
      value: .object([
        "name": .string(device.name ?? device.address), "identifierUuid": .string(device.address),
        "serviceUuid": .string(device.uuids.first ?? ""),
      ]))
  }
}
