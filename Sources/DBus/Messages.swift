/// A received signal, converted to Sendable values on the connection's queue.
public struct DBusSignal: Sendable {
  /// The sender's unique name (`:1.42`), or `org.freedesktop.DBus` for the bus itself; nil only on a
  /// peer-to-peer connection.
  public var sender: String?
  public var path: String
  public var interface: String
  public var member: String
  public var body: [DBusValue]

  public init(sender: String?, path: String, interface: String, member: String, body: [DBusValue]) {
    self.sender = sender
    self.path = path
    self.interface = interface
    self.member = member
    self.body = body
  }
}

/// A method call to an exported object.
public struct DBusMethodCall: Sendable {
  /// The caller's unique name.
  public var sender: String?
  public var path: String
  /// Nil when the caller left the optional INTERFACE header out (the D-Bus specification allows it
  /// for method calls).
  public var interface: String?
  public var member: String
  public var body: [DBusValue]

  public init(sender: String?, path: String, interface: String?, member: String, body: [DBusValue]) {
    self.sender = sender
    self.path = path
    self.interface = interface
    self.member = member
    self.body = body
  }
}

/// What an exported object's handler answers: a METHOD_RETURN with these values, or an ERROR.
public enum DBusReply: Sendable {
  case values([DBusValue])
  case error(DBusError)
}

/// A D-Bus match rule (D-Bus specification, "Match Rules"): which broadcast messages the bus sends
/// this connection. Nil fields match anything.
public struct MatchRule: Sendable, Hashable {
  /// The message type; this client routes only `signal` messages to streams.
  public var type: String
  /// A unique name (`:1.42`) or well-known name (`org.bluez`). The bus resolves a well-known name to
  /// its current owner; locally, with several streams on one connection, a stream whose rule names a
  /// well-known sender also sees signals that the bus delivered for another stream's rule (this
  /// client does not track name owners). Unique names and `org.freedesktop.DBus` are compared exactly.
  public var sender: String?
  public var interface: String?
  public var member: String?
  public var path: String?
  /// Matches this path and every path below it (spec: `path_namespace`); cannot be combined with
  /// `path`.
  public var pathNamespace: String?
  /// Matches when the first argument is a string equal to this.
  public var arg0: String?

  public init(
    type: String = "signal", sender: String? = nil, interface: String? = nil, member: String? = nil,
    path: String? = nil, pathNamespace: String? = nil, arg0: String? = nil
  ) {
    self.type = type
    self.sender = sender
    self.interface = interface
    self.member = member
    self.path = path
    self.pathNamespace = pathNamespace
    self.arg0 = arg0
  }

  /// The rule as the bus's AddMatch expects it: `key='value'` pairs joined by commas. Inside single
  /// quotes a backslash stands for itself and there is no escape for an apostrophe, so the spec's
  /// way to write one is to close the quotes, write `\'`, and reopen them (`O'Brien` becomes
  /// `'O'\''Brien'`).
  public var text: String {
    var parts = ["type=" + Self.quote(type)]
    if let sender { parts.append("sender=" + Self.quote(sender)) }
    if let interface { parts.append("interface=" + Self.quote(interface)) }
    if let member { parts.append("member=" + Self.quote(member)) }
    if let path { parts.append("path=" + Self.quote(path)) }
    if let pathNamespace { parts.append("path_namespace=" + Self.quote(pathNamespace)) }
    if let arg0 { parts.append("arg0=" + Self.quote(arg0)) }
    return parts.joined(separator: ",")
  }

  static func quote(_ value: String) -> String {
    "'" + value.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
  }

  /// Refuses rules the bus would reject, before anything is sent.
  func validate() throws(DBusError) {
    guard ["signal", "method_call", "method_return", "error"].contains(type) else {
      throw .invalidArgs("'\(Marshalling.printable(type))' is not a D-Bus message type")
    }
    if let sender { try Marshalling.checkBusName(sender) }
    if let interface { try Marshalling.checkInterface(interface) }
    if let member { try Marshalling.checkMember(member) }
    if let path { try Marshalling.checkObjectPath(path) }
    if let pathNamespace { try Marshalling.checkObjectPath(pathNamespace) }
    if path != nil && pathNamespace != nil {
      // The spec: "it is an error to specify both path and path_namespace in the same rule".
      throw .invalidArgs("a match rule cannot have both path and path_namespace")
    }
    if let arg0 { try Marshalling.checkString(arg0) }
    // DBUS_MAXIMUM_MATCH_RULE_LENGTH.
    if text.utf8.count > 1024 { throw .invalidArgs("a match rule is limited to 1024 bytes") }
  }

  /// The local half of matching: the bus already filtered, but one connection's signals for all its
  /// rules arrive together, so each stream checks its own rule.
  func matches(
    type messageType: String, sender messageSender: String?, path messagePath: String?,
    interface messageInterface: String?, member messageMember: String?, arg0 firstArgument: () -> String?
  ) -> Bool {
    if type != messageType { return false }
    if let sender, sender.first == ":" || sender == DBusNames.bus, sender != messageSender {
      return false
    }
    if let interface, interface != messageInterface { return false }
    if let member, member != messageMember { return false }
    if let path, path != messagePath { return false }
    if let pathNamespace {
      guard let messagePath else { return false }
      if pathNamespace != "/" && messagePath != pathNamespace
        && !messagePath.hasPrefix(pathNamespace + "/")
      {
        return false
      }
    }
    if let arg0, arg0 != firstArgument() { return false }
    return true
  }
}
