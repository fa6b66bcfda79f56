internal import CDBus

/// One reference to a `DBusMessage`, released on deinit.
///
/// libdbus messages are reference counted with atomic counts (thread-safe once
/// `dbus_threads_init_default` has run), so a message built on the caller's thread can be handed to
/// the connection queue; the box is what lets the pointer cross into a `@Sendable` closure. Nothing
/// mutates a message after it has been built or received.
final class Message: @unchecked Sendable {
  let pointer: OpaquePointer

  /// Takes ownership of one reference.
  init(owning pointer: OpaquePointer) { self.pointer = pointer }

  /// Adds a reference (for a message libdbus lends to a callback).
  init(retaining pointer: OpaquePointer) {
    self.pointer = dbus_message_ref(pointer)
  }

  deinit { dbus_message_unref(pointer) }

  static func string(_ pointer: UnsafePointer<CChar>?) -> String? {
    pointer.map { String(cString: $0) }
  }

  /// A method call, every name validated so libdbus's argument checks (fatal in Debian's build)
  /// never fire.
  static func methodCall(
    destination: String?, path: String, interface: String?, member: String, body: [DBusValue]
  ) throws(DBusError) -> Message {
    if let destination { try Marshalling.checkBusName(destination) }
    try Marshalling.checkObjectPath(path)
    if let interface { try Marshalling.checkInterface(interface) }
    try Marshalling.checkMember(member)
    try checkNotLocal(path: path, interface: interface)
    guard let pointer = dbus_message_new_method_call(destination, path, interface, member) else {
      throw .noMemory()
    }
    let message = Message(owning: pointer)
    try Marshalling.append(body, to: pointer)
    return message
  }

  static func signal(
    path: String, interface: String, member: String, destination: String?, body: [DBusValue]
  ) throws(DBusError) -> Message {
    try Marshalling.checkObjectPath(path)
    try Marshalling.checkInterface(interface)
    try Marshalling.checkMember(member)
    if let destination { try Marshalling.checkBusName(destination) }
    try checkNotLocal(path: path, interface: interface)
    guard let pointer = dbus_message_new_signal(path, interface, member) else { throw .noMemory() }
    let message = Message(owning: pointer)
    if let destination, dbus_message_set_destination(pointer, destination) == 0 { throw .noMemory() }
    try Marshalling.append(body, to: pointer)
    return message
  }

  /// The D-Bus specification reserves `org.freedesktop.DBus.Local` and `/org/freedesktop/DBus/Local`
  /// for messages an implementation generates itself; the bus daemon disconnects a client that sends
  /// them.
  private static func checkNotLocal(path: String, interface: String?) throws(DBusError) {
    if path == DBusNames.localPath || interface == DBusNames.localInterface {
      throw .invalidArgs("\(DBusNames.localInterface) and \(DBusNames.localPath) are reserved")
    }
  }

  /// The outcome carried by a reply (METHOD_RETURN or ERROR message).
  func replyResult() -> Result<[DBusValue], DBusError> {
    if dbus_message_get_type(pointer) == DBUS_MESSAGE_TYPE_ERROR {
      let name = Message.string(dbus_message_get_error_name(pointer)) ?? DBusError.Name.failed
      // By convention (spec, "Message Types": ERROR) the first argument, if a string, is the message.
      let text = Marshalling.firstStringArgument(of: pointer) ?? ""
      return .failure(DBusError(name: name, message: text))
    }
    return .success(Marshalling.body(of: pointer))
  }
}

/// The well-known names of the bus and of the standard interfaces (D-Bus specification, "Message Bus
/// Specification" and "Standard Interfaces"), in one place.
enum DBusNames {
  static let bus = "org.freedesktop.DBus"
  static let busPath = "/org/freedesktop/DBus"
  static let busInterface = "org.freedesktop.DBus"
  static let properties = "org.freedesktop.DBus.Properties"
  static let objectManager = "org.freedesktop.DBus.ObjectManager"
  static let introspectable = "org.freedesktop.DBus.Introspectable"
  static let peer = "org.freedesktop.DBus.Peer"
  /// libdbus delivers connection loss as the signal `Disconnected` on this interface and path.
  static let localInterface = "org.freedesktop.DBus.Local"
  static let localPath = "/org/freedesktop/DBus/Local"
}
