import CaptureCore
import DBus

/// One process's view of bluetoothd: its own system-bus connection (several capture processes can work
/// on one device at once, ARCHITECTURE.md §2), typed calls per interface, and the object-tree events.
/// Every method converts D-Bus errors to CaptureError exactly once, through BlueZErrorMap.
public final class BlueZClient: Sendable {
  public let bus: DBusConnection
  public let adapterName: String

  init(bus: DBusConnection, adapterName: String) {
    self.bus = bus
    self.adapterName = adapterName
  }

  /// Connects to the system bus and checks that bluetoothd is there.
  public static func connect(adapter: String?) async throws(CaptureError) -> BlueZClient {
    let bus: DBusConnection
    do { bus = try DBusConnection.system() } catch {
      if error.name == "org.freedesktop.DBus.Error.AccessDenied" {
        throw CaptureError(.bluetoothPermissionMissing, "the system bus refused this user: \(error.message)")
      }
      throw CaptureError(.notAvailable, "cannot reach the system bus, so no Bluetooth: \(error.message)")
    }
    let client = BlueZClient(bus: bus, adapterName: adapter ?? "hci0")
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
        .notAvailable, "Bluetooth adapter \(adapterName) is powered off (bluetoothctl power on)")
    }
    return adapter
  }

  /// InterfacesAdded/Removed and PropertiesChanged from bluetoothd, plus its leaving and returning.
  /// The match rules are in place when this returns: read state afterwards (subscribe, then read).
  public func events() async throws(CaptureError) -> AsyncStream<BlueZEvent> {
    let added: AsyncStream<DBusSignal>
    let removed: AsyncStream<DBusSignal>
    let changed: AsyncStream<DBusSignal>
    let owner: AsyncStream<DBusSignal>
    do {
      added = try await bus.signals(
        MatchRule(sender: BlueZName.service, interface: BlueZName.objectManager, member: "InterfacesAdded"))
      removed = try await bus.signals(
        MatchRule(sender: BlueZName.service, interface: BlueZName.objectManager, member: "InterfacesRemoved"))
      changed = try await bus.signals(
        MatchRule(
          sender: BlueZName.service, interface: BlueZName.properties, member: "PropertiesChanged",
          pathNamespace: BlueZName.root))
      owner = try await bus.signals(
        MatchRule(
          sender: BlueZName.dbus, interface: BlueZName.dbus, member: "NameOwnerChanged",
          arg0: BlueZName.service))
    } catch {
      throw BlueZErrorMap.captureError(error, "subscribing to bluetoothd's signals")
    }
    let (stream, continuation) = AsyncStream.makeStream(of: BlueZEvent.self, bufferingPolicy: .unbounded)
    let tasks = [
      Task {
        for await s in added {
          guard let path = s.body.first?.objectPathValue, s.body.count > 1 else { continue }
          var interfaces: [String: [String: DBusValue]] = [:]
          for entry in s.body[1].arrayValue ?? [] {
            guard case .dictEntry(let k, let v) = entry, let name = k.stringValue else { continue }
            interfaces[name] = v.stringDictValue ?? [:]
          }
          continuation.yield(.interfacesAdded(path: path, interfaces: interfaces))
        }
      },
      Task {
        for await s in removed {
          guard let path = s.body.first?.objectPathValue, s.body.count > 1 else { continue }
          continuation.yield(
            .interfacesRemoved(path: path, interfaces: s.body[1].arrayValue?.compactMap(\.stringValue) ?? []))
        }
      },
      Task {
        for await s in changed {
          guard s.body.count >= 2, let interface = s.body[0].stringValue else { continue }
          continuation.yield(
            .propertiesChanged(
              path: s.path, interface: interface, changed: s.body[1].stringDictValue ?? [:],
              invalidated: s.body.count > 2 ? (s.body[2].arrayValue?.compactMap(\.stringValue) ?? []) : []))
        }
      },
      Task {
        for await s in owner {
          guard s.body.count == 3, let newOwner = s.body[2].stringValue else { continue }
          continuation.yield(newOwner.isEmpty ? .serviceVanished : .serviceAppeared)
        }
      },
    ]
    let bus = self.bus
    Task {
      await bus.waitUntilDisconnected()
      continuation.finish()
    }
    continuation.onTermination = { _ in for task in tasks { task.cancel() } }
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
  public func setDiscoveryFilter(_ filter: [String: DBusValue]) async throws(CaptureError) {
    _ = try await call(
      adapterPath, BlueZName.adapter, "SetDiscoveryFilter", [.stringDict(filter)],
      context: "setting the discovery filter")
  }
  public func startDiscovery() async throws(CaptureError) {
    _ = try await call(adapterPath, BlueZName.adapter, "StartDiscovery", context: "starting discovery")
  }
  public func stopDiscovery() async throws(CaptureError) {
    _ = try await call(adapterPath, BlueZName.adapter, "StopDiscovery", context: "stopping discovery")
  }
  public func removeDevice(_ devicePath: String) async throws(CaptureError) {
    _ = try await call(
      adapterPath, BlueZName.adapter, "RemoveDevice", [.objectPath(devicePath)],
      context: "removing the device")
  }

  // Device1
  public func connect(_ devicePath: String, timeout: Duration) async throws(CaptureError) {
    _ = try await call(devicePath, BlueZName.device, "Connect", timeout: timeout, context: "connecting")
  }
  public func disconnect(_ devicePath: String) async throws(CaptureError) {
    _ = try await call(devicePath, BlueZName.device, "Disconnect", context: "disconnecting")
  }
  /// Pairs. A device that is paired already answers `org.bluez.Error.AlreadyExists`
  /// (doc/org.bluez.Device.rst, Pair), which counts as success: the goal is a paired device.
  public func pair(_ devicePath: String, timeout: Duration) async throws(CaptureError) {
    do {
      _ = try await bus.call(
        destination: BlueZName.service, path: devicePath, interface: BlueZName.device, member: "Pair", [],
        timeout: timeout)
    } catch  where error.name == BlueZName.Error.alreadyExists {
      return
    } catch {
      throw BlueZErrorMap.captureError(error, "pairing")
    }
  }
  public func setDeviceProperty(_ devicePath: String, _ name: String, _ value: DBusValue)
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
        destination: BlueZName.service, path: devicePath, interface: BlueZName.battery, name: "Percentage")
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
      path, BlueZName.gattCharacteristic, "ReadValue", [.stringDict([:])], timeout: .seconds(10),
      context: "GATT read")
    guard let bytes = reply.first?.bytesValue else {
      throw CaptureError(
        .communicationError, "GATT read: bluetoothd replied with \(reply.map(\.signature)), not ay")
    }
    return bytes
  }
  /// `type`: "request" (with response), "command" (without) or "reliable" (doc/org.bluez.GattCharacteristic.rst).
  public func writeValue(_ path: String, _ bytes: [UInt8], type: String = "request")
    async throws(CaptureError)
  {
    _ = try await call(
      path, BlueZName.gattCharacteristic, "WriteValue",
      [.bytes(bytes), .stringDict(["type": .string(type)])],
      timeout: .seconds(10), context: "GATT write")
  }
  public func startNotify(_ path: String) async throws(CaptureError) {
    _ = try await call(path, BlueZName.gattCharacteristic, "StartNotify", context: "GATT start-notify")
  }
  public func stopNotify(_ path: String) async throws(CaptureError) {
    _ = try await call(path, BlueZName.gattCharacteristic, "StopNotify", context: "GATT stop-notify")
  }
  /// GattCharacteristic1.Notifying: true while any client holds a notify session on the current link,
  /// i.e. bluetoothd has the device's CCCD on (bluez-testing.md: sessions are per client).
  public func isNotifying(_ path: String) async throws(CaptureError) -> Bool {
    let value: DBusValue
    do {
      value = try await bus.getProperty(
        destination: BlueZName.service, path: path, interface: BlueZName.gattCharacteristic, name: "Notifying"
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
        switch call.member {
        case "Release", "Cancel", "RequestConfirmation", "RequestAuthorization", "AuthorizeService",
          "DisplayPasskey", "DisplayPinCode":
          return .values([])
        default:
          return .error(
            DBusError(name: BlueZName.Error.rejected, message: "capture has no way to enter a PIN"))
        }
      }
    } catch {
      throw BlueZErrorMap.captureError(error, "exporting the pairing agent")
    }
    _ = try await call(
      BlueZName.root, BlueZName.agentManager, "RegisterAgent",
      [.objectPath(Self.agentPath), .string("NoInputNoOutput")], context: "registering the pairing agent")
    _ = try await call(
      BlueZName.root, BlueZName.agentManager, "RequestDefaultAgent", [.objectPath(Self.agentPath)],
      context: "registering the pairing agent")
  }
}
