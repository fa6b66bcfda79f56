import CaptureCore
import DBus

/// One process's view of bluetoothd: its own system-bus connection (several capture processes can work
/// on one device at once, docs/architecture.md §2), typed calls per interface, and the object-tree events.
/// Every method converts D-Bus errors to CaptureError exactly once, through BlueZErrorMap.
public final class BlueZClient: Sendable {
  public let bus: DBusConnection
  public let adapterName: String

  init(bus: DBusConnection, adapterName: String) {
    self.bus = bus
    self.adapterName = adapterName
  }

  /// The adapter every command uses without `--adapter` (docs/architecture.md §1 GLOBAL).
  public static let defaultAdapter = "hci0"

  /// Connects to the system bus and checks that bluetoothd is there.
  public static func connect(adapter: String?) async throws(CaptureError) -> BlueZClient {
    let bus: DBusConnection
    // Connecting authenticates and sends Hello, which can block for libdbus's reply timeout on a bus
    // that hangs: off the cooperative pool, on the one blocking executor.
    do {
      bus = try await BlockingExecutor.shared.run { (_) throws(DBusError) in try DBusConnection.system() }
    } catch {
      if error.name == BlueZName.BusError.accessDenied {
        throw CaptureError(.bluetoothPermissionMissing, "the system bus refused this user: \(error.message)")
      }
      throw CaptureError(.notAvailable, "cannot reach the system bus, so no Bluetooth: \(error.message)")
    }
    let client = BlueZClient(bus: bus, adapterName: adapter ?? defaultAdapter)
    let running: Bool
    do { running = try await bus.nameHasOwner(BlueZName.service) } catch {
      throw BlueZErrorMap.captureError(error, "asking for bluetoothd")
    }
    guard running else {
      bus.close()
      throw CaptureError(.notAvailable, "bluetoothd is not running (no org.bluez on the system bus)")
    }
    return client
  }

  public func close() { bus.close() }

  public var adapterPath: String { BlueZName.root + "/" + adapterName }

  // MARK: objects and events

  public func objects() async throws(CaptureError) -> BlueZObjects {
    do {
      return BlueZObjects(try await bus.getManagedObjects(destination: BlueZName.service, path: "/"))
    } catch {
      throw BlueZErrorMap.captureError(error, "reading bluetoothd's objects")
    }
  }

  /// The adapter this client uses, checked: absent → NOTAVAILABLE naming it, powered off → NOTAVAILABLE
  /// saying so (bleak's "unavailable carries a reason").
  public func adapter(in objects: BlueZObjects) throws(CaptureError) -> AdapterInfo {
    let adapters = objects.adapters()
    guard let adapter = adapters.first(where: { $0.path == adapterPath }) else {
      let known = adapters.map(\.name).joined(separator: ", ")
      throw CaptureError(
        .notAvailable,
        "no Bluetooth adapter \(adapterName)"
          + (known.isEmpty ? " (bluetoothd has none)" : " (have: \(known))"))
    }
    guard adapter.isPowered else {
      throw CaptureError(
        .notAvailable, "Bluetooth adapter \(adapterName): powered off (bluetoothctl power on)")
    }
    return adapter
  }

  /// bluetoothd's object-tree events, typed (`BlueZEvent`), from ONE subscription: InterfacesAdded and
  /// InterfacesRemoved, PropertiesChanged under /org/bluez and org.bluez's NameOwnerChanged reach the
  /// stream in the order the bus delivered them, so a device's removal never overtakes the property
  /// change sent before it, nor bluetoothd's return the last signals of the one that left. The match
  /// rules are in place when this returns: read state afterwards (subscribe, then read). The stream
  /// finishes when the bus connection is lost or closed; each call gives a stream of its own (ending a
  /// stream, as cancelling a task that iterates it does, ends only that one).
  public func events() async throws(CaptureError) -> AsyncStream<BlueZEvent> {
    let signals: AsyncStream<DBusSignal>
    do {
      signals = try await bus.signals(anyOf: BlueZEvent.matchRules)
    } catch {
      throw BlueZErrorMap.captureError(error, "subscribing to bluetoothd's signals")
    }
    // One consumer in order, no buffering policy but the signals' own (unbounded, as libdbus reads
    // them): the decode is cheap and never waits.
    let (stream, continuation) = AsyncStream.makeStream(of: BlueZEvent.self, bufferingPolicy: .unbounded)
    let pump = Task {
      for await signal in signals {
        for event in BlueZEvent.decode(signal) { continuation.yield(event) }
      }
      continuation.finish()
    }
    continuation.onTermination = { _ in pump.cancel() }
    return stream
  }

  // MARK: calls

  func call(
    _ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
    timeout: Duration = .seconds(25), context: String
  ) async throws(CaptureError) -> [DBusValue] {
    do {
      return try await bus.call(
        destination: BlueZName.service, path: path, interface: interface, member: member, arguments,
        timeout: timeout)
    } catch {
      throw BlueZErrorMap.captureError(error, context)
    }
  }

  // Adapter1
  public func setDiscoveryFilter(_ filter: DiscoveryFilter) async throws(CaptureError) {
    _ = try await call(
      adapterPath, BlueZName.adapter, BlueZName.Method.setDiscoveryFilter, [.stringDict(filter.dictionary)],
      context: "setting the discovery filter")
  }
  public func startDiscovery() async throws(CaptureError) {
    _ = try await call(
      adapterPath, BlueZName.adapter, BlueZName.Method.startDiscovery, context: "starting discovery")
  }
  public func stopDiscovery() async throws(CaptureError) {
    _ = try await call(
      adapterPath, BlueZName.adapter, BlueZName.Method.stopDiscovery, context: "stopping discovery")
  }
  public func removeDevice(_ devicePath: String) async throws(CaptureError) {
    _ = try await call(
      adapterPath, BlueZName.adapter, BlueZName.Method.removeDevice, [.objectPath(devicePath)],
      context: "removing the device")
  }

  // Device1
  /// Device1.Connect. Returns false when a connection of the device was already under way, so the
  /// caller waits for that one instead of failing: another client's Connect (InProgress,
  /// doc/org.bluez.Device.rst) or the kernel's own, where bluetoothd connects a bonded LE device in
  /// the background and a Connect then fails with `alreadyInProgressMessage` (EALREADY).
  @discardableResult
  public func connect(_ devicePath: String, timeout: Duration) async throws(CaptureError) -> Bool {
    do {
      _ = try await bus.call(
        destination: BlueZName.service, path: devicePath, interface: BlueZName.device,
        member: BlueZName.Method.connect, [], timeout: timeout)
      return true
    } catch
      where error.name == BlueZName.Error.inProgress
      || (error.name == BlueZName.Error.failed && error.message == BlueZName.Error.alreadyInProgressMessage)
    {
      return false
    } catch {
      throw BlueZErrorMap.captureError(error, "connecting")
    }
  }
  public func disconnect(_ devicePath: String) async throws(CaptureError) {
    _ = try await call(devicePath, BlueZName.device, BlueZName.Method.disconnect, context: "disconnecting")
  }
  /// Pairs. A device that is paired already answers `org.bluez.Error.AlreadyExists`
  /// (doc/org.bluez.Device.rst, Pair), which counts as success: the goal is a paired device.
  public func pair(_ devicePath: String, timeout: Duration) async throws(CaptureError) {
    do {
      _ = try await bus.call(
        destination: BlueZName.service, path: devicePath, interface: BlueZName.device,
        member: BlueZName.Method.pair, [],
        timeout: timeout)
    } catch  where error.name == BlueZName.Error.alreadyExists {
      return
    } catch {
      throw BlueZErrorMap.captureError(error, "pairing")
    }
  }
  /// Device1.Alias: the name shown for the device on this host (doc/org.bluez.Device.rst).
  public func setAlias(_ devicePath: String, _ alias: String) async throws(CaptureError) {
    try await setDeviceProperty(devicePath, BlueZName.Property.alias, .string(alias))
  }
  /// Device1.Trusted: bluetoothd lets a trusted device reconnect (doc/org.bluez.Device.rst).
  public func setTrusted(_ devicePath: String, _ trusted: Bool) async throws(CaptureError) {
    try await setDeviceProperty(devicePath, BlueZName.Property.trusted, .boolean(trusted))
  }
  func setDeviceProperty(_ devicePath: String, _ name: String, _ value: DBusValue)
    async throws(CaptureError)
  {
    do {
      try await bus.setProperty(
        destination: BlueZName.service, path: devicePath, interface: BlueZName.device, name: name,
        value: value)
    } catch {
      throw BlueZErrorMap.captureError(error, "setting \(name)")
    }
  }

  // Battery1
  public func batteryPercentage(_ devicePath: String) async throws(CaptureError) -> UInt8 {
    let value: DBusValue
    do {
      value = try await bus.getProperty(
        destination: BlueZName.service, path: devicePath, interface: BlueZName.battery,
        name: BlueZName.Property.percentage)
    } catch {
      throw BlueZErrorMap.captureError(error, "reading the battery level")
    }
    guard let percent = value.byteValue else {
      throw CaptureError(.communicationError, "Battery1.Percentage is \(value.signature), not a byte")
    }
    return percent
  }

  // GattCharacteristic1
  public func readValue(_ path: String) async throws(CaptureError) -> [UInt8] {
    let reply = try await call(
      path, BlueZName.gattCharacteristic, BlueZName.Method.readValue, [.stringDict([:])],
      timeout: .seconds(10),
      context: "GATT read")
    guard let bytes = reply.first?.bytesValue else {
      throw CaptureError(
        .communicationError, "GATT read: bluetoothd replied with \(reply.map(\.signature)), not ay")
    }
    return bytes
  }
  /// `type`: "request" (with response), "command" (without) or "reliable" (doc/org.bluez.GattCharacteristic.rst).
  public func writeValue(_ path: String, _ bytes: [UInt8], type: String = BlueZName.WriteOption.request)
    async throws(CaptureError)
  {
    _ = try await call(
      path, BlueZName.gattCharacteristic, BlueZName.Method.writeValue,
      [.bytes(bytes), .stringDict([BlueZName.WriteOption.type: .string(type)])],
      timeout: .seconds(10), context: "GATT write")
  }
  /// Starts this client's notify session. A client that holds one already gets Failed "Already
  /// notifying" from bluetoothd 5.66 (its session survived a link loss, or a concurrent call of ours
  /// won): that counts as success, the goal is a session.
  public func startNotify(_ path: String) async throws(CaptureError) {
    do {
      _ = try await bus.call(
        destination: BlueZName.service, path: path, interface: BlueZName.gattCharacteristic,
        member: BlueZName.Method.startNotify, [], timeout: .seconds(25))
    } catch
      where error.name == BlueZName.Error.failed && error.message == BlueZName.Error.alreadyNotifyingMessage
    {
      return
    } catch {
      throw BlueZErrorMap.captureError(error, "GATT start-notify")
    }
  }
  public func stopNotify(_ path: String) async throws(CaptureError) {
    _ = try await call(
      path, BlueZName.gattCharacteristic, BlueZName.Method.stopNotify, context: "GATT stop-notify")
  }
  /// GattCharacteristic1.Notifying: true while any client holds a notify session on the current link,
  /// i.e. bluetoothd has the device's CCCD on (docs/bluez-testing.md: sessions are per client).
  public func isNotifying(_ path: String) async throws(CaptureError) -> Bool {
    let value: DBusValue
    do {
      value = try await bus.getProperty(
        destination: BlueZName.service, path: path, interface: BlueZName.gattCharacteristic,
        name: BlueZName.Property.notifying
      )
    } catch {
      throw BlueZErrorMap.captureError(error, "reading Notifying")
    }
    return value.boolValue ?? false
  }

  // AgentManager1 + our Agent1
  public static let agentPath = "/capture/agent"

  /// Exports a NoInputNoOutput agent and makes it the default, so Pair works without a prompt: the
  /// agent confirms "just works" pairing and refuses requests for a PIN or passkey it cannot show.
  public func registerAgent() async throws(CaptureError) {
    do {
      try bus.export(path: Self.agentPath) { call in
        if BlueZName.Method.agentNoInput.contains(call.member) { return .values([]) }
        return .error(DBusError(name: BlueZName.Error.rejected, message: "capture has no way to enter a PIN"))
      }
    } catch {
      throw BlueZErrorMap.captureError(error, "exporting the pairing agent")
    }
    _ = try await call(
      BlueZName.root, BlueZName.agentManager, BlueZName.Method.registerAgent,
      [.objectPath(Self.agentPath), .string(BlueZName.noInputNoOutput)],
      context: "registering the pairing agent")
    _ = try await call(
      BlueZName.root, BlueZName.agentManager, BlueZName.Method.requestDefaultAgent,
      [.objectPath(Self.agentPath)],
      context: "registering the pairing agent")
  }
}

/// Adapter1.SetDiscoveryFilter's parameters (doc/org.bluez.Adapter.rst). bluetoothd merges the filters of
/// all its clients for the radio and reports to each only what its own filter lets through.
public struct DiscoveryFilter: Sendable, Equatable {
  /// "auto", "le" or "bredr".
  public var transport: String
  /// Only devices advertising one of these services (empty: any).
  public var uuids: [String]
  /// Report every advertisement, not only changes (more wake-ups; off unless asked).
  public var duplicateData: Bool?
  /// Only devices whose address or name starts with this.
  public var pattern: String?

  public init(transport: String, uuids: [String] = [], duplicateData: Bool? = nil, pattern: String? = nil) {
    self.transport = transport
    self.uuids = uuids
    self.duplicateData = duplicateData
    self.pattern = pattern
  }

  var dictionary: [String: DBusValue] {
    typealias K = BlueZName.DiscoveryFilterKey
    var d: [String: DBusValue] = [K.transport: .string(transport)]
    if !uuids.isEmpty { d[K.uuids] = .strings(uuids) }
    if let duplicateData { d[K.duplicateData] = .boolean(duplicateData) }
    if let pattern { d[K.pattern] = .string(pattern) }
    return d
  }
}
