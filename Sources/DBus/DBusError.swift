/// A D-Bus error: the error name and its human-readable message, exactly as the D-Bus specification
/// models an ERROR message (an error name header plus, by convention, a string as the first body
/// argument).
///
/// Remote errors keep the name the peer sent (`org.bluez.Error.Failed`, ...). Failures that happen on
/// this side of the socket use the standard `org.freedesktop.DBus.Error.*` names that libdbus itself
/// uses, listed in ``Name``, so callers match one kind of value whatever its origin. This is the only
/// error type the `DBus` module throws.
public struct DBusError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The D-Bus error name, e.g. `org.freedesktop.DBus.Error.ServiceUnknown`.
  public var name: String
  /// The human-readable message (may be empty).
  public var message: String

  public init(name: String, message: String) {
    self.name = name
    self.message = message
  }

  /// `name: message`, or the name alone when there is no message.
  public var description: String { message.isEmpty ? name : "\(name): \(message)" }

  /// Error names this module produces or that callers commonly test for.
  public enum Name {
    /// No reply within the call's timeout (libdbus synthesises this error when its timeout fires).
    public static let noReply = "org.freedesktop.DBus.Error.NoReply"
    /// The connection was lost or closed; pending calls fail with this and new calls are refused.
    public static let disconnected = "org.freedesktop.DBus.Error.Disconnected"
    /// A reply body did not have the D-Bus type the caller needed.
    public static let invalidSignature = "org.freedesktop.DBus.Error.InvalidSignature"
    /// An argument (object path, name, signature, string) is not valid D-Bus; refused before sending.
    public static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
    /// The destination name has no owner and the bus cannot start one.
    public static let serviceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown"
    /// The peer has no such method (or object).
    public static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
    /// The peer has no such object.
    public static let unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
    /// A generic failure.
    public static let failed = "org.freedesktop.DBus.Error.Failed"
    /// The request is not supported (e.g. file descriptors on a transport that cannot pass them).
    public static let notSupported = "org.freedesktop.DBus.Error.NotSupported"
    /// Out of memory inside libdbus.
    public static let noMemory = "org.freedesktop.DBus.Error.NoMemory"
    /// The awaiting task was cancelled before the reply came. This name is produced locally and never
    /// sent on the wire; it is distinct from ``noReply`` so a caller can tell "the user gave up" from
    /// "the peer did not answer in time".
    public static let cancelled = "org.freedesktop.DBus.Error.Cancelled"
  }

  public static func noReply(_ message: String = "No reply within the timeout") -> DBusError {
    DBusError(name: Name.noReply, message: message)
  }
  public static func disconnected(_ message: String = "The D-Bus connection is closed") -> DBusError {
    DBusError(name: Name.disconnected, message: message)
  }
  public static func invalidSignature(_ message: String) -> DBusError {
    DBusError(name: Name.invalidSignature, message: message)
  }
  public static func invalidArgs(_ message: String) -> DBusError {
    DBusError(name: Name.invalidArgs, message: message)
  }
  public static func failed(_ message: String) -> DBusError {
    DBusError(name: Name.failed, message: message)
  }
  public static func cancelled(_ message: String = "The call was cancelled") -> DBusError {
    DBusError(name: Name.cancelled, message: message)
  }
  static func noMemory() -> DBusError {
    DBusError(name: Name.noMemory, message: "libdbus ran out of memory")
  }

  /// A reply body of signature `actual` where the caller needed `expected`.
  static func unexpectedReply(_ expected: String, _ actual: [DBusValue]) -> DBusError {
    .invalidSignature("expected a reply of type '\(expected)', got '\(actual.map(\.signature).joined())'")
  }

  public var isNoReply: Bool { name == Name.noReply }
  public var isDisconnected: Bool { name == Name.disconnected }
  public var isCancelled: Bool { name == Name.cancelled }
}
