/// Helpers over the standard interfaces (D-Bus specification, "Standard Interfaces") and the bus
/// driver (`org.freedesktop.DBus`). Each checks the reply's type and throws
/// `org.freedesktop.DBus.Error.InvalidSignature` when it is not what the interface defines.
extension DBusConnection {
  /// `org.freedesktop.DBus.ObjectManager.GetManagedObjects` (`a{oa{sa{sv}}}`): object path →
  /// interface → property → value, with property values' variants unwrapped.
  public func getManagedObjects(
    destination: String, path: String = "/", timeout: Duration = .seconds(25)
  ) async throws(DBusError) -> [String: [String: [String: DBusValue]]] {
    let reply = try await call(
      destination: destination, path: path, interface: DBusNames.objectManager, member: "GetManagedObjects",
      timeout: timeout)
    guard reply.count == 1, case .array("{oa{sa{sv}}}", let objects) = reply[0] else {
      throw .unexpectedReply("a{oa{sa{sv}}}", reply)
    }
    var result: [String: [String: [String: DBusValue]]] = [:]
    result.reserveCapacity(objects.count)
    for object in objects {
      guard case .dictEntry(.objectPath(let objectPath), .array(_, let interfaces)) = object else {
        throw .unexpectedReply("a{oa{sa{sv}}}", reply)
      }
      var byInterface: [String: [String: DBusValue]] = [:]
      for entry in interfaces {
        guard case .dictEntry(.string(let interface), let properties) = entry,
          let dict = properties.stringDictValue
        else { throw .unexpectedReply("a{oa{sa{sv}}}", reply) }
        byInterface[interface] = dict
      }
      result[objectPath] = byInterface
    }
    return result
  }

  /// `org.freedesktop.DBus.Properties.GetAll` (`a{sv}`), values unwrapped.
  public func getAllProperties(destination: String, path: String, interface: String) async throws(DBusError)
    -> [String: DBusValue]
  {
    let reply = try await call(
      destination: destination, path: path, interface: DBusNames.properties, member: "GetAll",
      [.string(interface)])
    guard reply.count == 1, case .array("{sv}", _) = reply[0], let dict = reply[0].stringDictValue else {
      throw .unexpectedReply("a{sv}", reply)
    }
    return dict
  }

  /// `org.freedesktop.DBus.Properties.Get` (`v`): the property's value, unwrapped.
  public func getProperty(destination: String, path: String, interface: String, name: String)
    async throws(DBusError) -> DBusValue
  {
    let reply = try await call(
      destination: destination, path: path, interface: DBusNames.properties, member: "Get",
      [.string(interface), .string(name)])
    guard reply.count == 1, case .variant = reply[0] else { throw .unexpectedReply("v", reply) }
    return reply[0].unwrapped
  }

  /// `org.freedesktop.DBus.Properties.Set`: `value` is the property's value; it is sent wrapped in the
  /// variant the method's `v` argument needs.
  public func setProperty(
    destination: String, path: String, interface: String, name: String, value: DBusValue
  ) async throws(DBusError) {
    _ = try await call(
      destination: destination, path: path, interface: DBusNames.properties, member: "Set",
      [.string(interface), .string(name), .variant(value)])
  }

  /// `org.freedesktop.DBus.NameHasOwner`.
  public func nameHasOwner(_ name: String, timeout: Duration = .seconds(25)) async throws(DBusError) -> Bool {
    let reply = try await call(
      destination: DBusNames.bus, path: DBusNames.busPath, interface: DBusNames.busInterface,
      member: "NameHasOwner", [.string(name)], timeout: timeout)
    guard reply.count == 1, let owned = reply[0].boolValue else { throw .unexpectedReply("b", reply) }
    return owned
  }

  /// `org.freedesktop.DBus.GetConnectionUnixProcessID`: the pid of the process that owns `name`
  /// (the bus daemon's credentials of its connection). `NameHasNoOwner` when nobody owns it.
  public func connectionUnixProcessID(_ name: String, timeout: Duration = .seconds(25))
    async throws(DBusError)
    -> UInt32
  {
    let reply = try await call(
      destination: DBusNames.bus, path: DBusNames.busPath, interface: DBusNames.busInterface,
      member: "GetConnectionUnixProcessID", [.string(name)], timeout: timeout)
    guard reply.count == 1, let pid = reply[0].uint32Value else { throw .unexpectedReply("u", reply) }
    return pid
  }

  /// `org.freedesktop.DBus.ListNames`.
  public func listNames() async throws(DBusError) -> [String] {
    let reply = try await call(
      destination: DBusNames.bus, path: DBusNames.busPath, interface: DBusNames.busInterface,
      member: "ListNames")
    guard reply.count == 1, let names = reply[0].stringsValue else { throw .unexpectedReply("as", reply) }
    return names
  }

  /// `org.freedesktop.DBus.RequestName` with no flags; true when this connection became the primary
  /// owner (reply 1, DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER) or already was (4).
  public func requestName(_ name: String) async throws(DBusError) -> Bool {
    let reply = try await call(
      destination: DBusNames.bus, path: DBusNames.busPath, interface: DBusNames.busInterface,
      member: "RequestName", [.string(name), .uint32(0)])
    guard reply.count == 1, let code = reply[0].uint32Value else { throw .unexpectedReply("u", reply) }
    return code == 1 || code == 4
  }
}
