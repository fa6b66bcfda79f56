internal import CDBus
import Glibc

/// libdbus's locks must be set up before a connection exists; `dbus_threads_init_default` is
/// idempotent and libdbus ≥ 1.7 would also do it lazily, but calling it says what this module needs.
private let threadsInitialized: Bool = dbus_threads_init_default() != 0

/// A private connection to a D-Bus message bus, driven by a Dispatch queue.
///
/// - Each connection owns one serial queue; libdbus's watches and timeouts are Dispatch sources on it,
///   and every signal, reply and method call is converted to Sendable values there.
/// - The connection is *private* (`dbus_connection_open_private`): closing it is ours, nothing else in
///   the process shares it, and libdbus's exit-on-disconnect is off, so losing the bus never ends
///   the process.
/// - The connection lives as long as this object: `close()` or dropping the last reference closes
///   it, which fails pending calls with `Disconnected`, finishes signal streams and resumes
///   ``waitUntilDisconnected()``. Keep the object alive for as long as its streams are read.
/// - Losing the bus (daemon gone) has the same effect; nothing reconnects automatically.
/// - Messages not yet written when the connection closes are dropped; ``flush()`` first if it matters.
public final class DBusConnection: Sendable {
  let core: ConnectionCore
  /// The unique name the bus assigned (`:1.42`).
  public let uniqueName: String

  /// The system bus at `DBUS_SYSTEM_BUS_ADDRESS` (read from the environment on every call; libdbus's
  /// own `dbus_bus_get` caches it once per process), else `unix:path=/var/run/dbus/system_bus_socket`,
  /// the default the D-Bus specification gives for the system bus.
  public static func system() throws(DBusError) -> DBusConnection {
    try DBusConnection(address: systemBusAddress)
  }

  /// The address `system()` connects to: `DBUS_SYSTEM_BUS_ADDRESS`, else the specification's default.
  public static var systemBusAddress: String {
    if let value = getenv("DBUS_SYSTEM_BUS_ADDRESS").map({ String(cString: $0) }), !value.isEmpty {
      return value
    }
    return "unix:path=/var/run/dbus/system_bus_socket"
  }

  /// Connects to the bus at `address` (D-Bus address syntax, e.g. `unix:path=/run/dbus/socket`) and
  /// registers with it (the `Hello` call), which gives the unique name. Blocks the calling thread for
  /// the connect and the Hello round trip.
  public init(address: String) throws(DBusError) {
    try Library.load()
    _ = threadsInitialized
    if address.utf8.contains(0) { throw .invalidArgs("a D-Bus address cannot contain NUL") }
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    guard let connection = dbus_connection_open_private(address, &error) else {
      throw DBusError(consuming: &error)
    }
    // libdbus defaults to exit-on-disconnect only for dbus_bus_get's shared connections; say it anyway.
    dbus_connection_set_exit_on_disconnect(connection, 0)
    guard dbus_bus_register(connection, &error) != 0, let name = dbus_bus_get_unique_name(connection) else {
      let failure =
        dbus_error_is_set(&error) != 0
        ? DBusError(consuming: &error) : DBusError.failed("The bus did not assign a unique name")
      // A private connection must be closed before its last reference goes (libdbus checks this).
      dbus_connection_close(connection)
      dbus_connection_unref(connection)
      throw failure
    }
    uniqueName = String(cString: name)
    core = ConnectionCore(connection: connection, label: "DBus \(uniqueName)")
    core.start()
  }

  deinit { core.teardownLater() }

  /// False once the connection has been lost or closed.
  public var isConnected: Bool { core.isConnected }

  /// Returns when the connection is lost (the bus went away) or closed, or when the awaiting task is
  /// cancelled.
  public func waitUntilDisconnected() async {
    await core.waitUntilDisconnected()
  }

  /// Closes the connection now. Idempotent.
  public func close() {
    core.teardown()
  }

  /// Calls a method and returns the reply's arguments.
  ///
  /// Errors: the remote error (its D-Bus name and message) for an ERROR reply;
  /// `org.freedesktop.DBus.Error.NoReply` when `timeout` passes first;
  /// `org.freedesktop.DBus.Error.Disconnected` when the connection is or gets lost;
  /// `org.freedesktop.DBus.Error.Cancelled` (``DBusError/Name/cancelled``, local only) when the
  /// awaiting task is cancelled, which also cancels the libdbus pending call so a late reply is
  /// dropped; `org.freedesktop.DBus.Error.InvalidArgs` for names, paths or values that are not valid
  /// D-Bus, before anything is sent.
  public func call(
    destination: String, path: String, interface: String, member: String, _ arguments: [DBusValue] = [],
    timeout: Duration = .seconds(25)
  ) async throws(DBusError) -> [DBusValue] {
    let message = try Message.methodCall(
      destination: destination, path: path, interface: interface, member: member, body: arguments)
    return try await core.call(message, timeout: Self.milliseconds(timeout)).get()
  }

  /// libdbus takes timeouts in milliseconds as an `int`; anything from INT_MAX up means "never"
  /// (DBUS_TIMEOUT_INFINITE). A partial millisecond rounds up so a tiny timeout is not zero.
  static func milliseconds(_ duration: Duration) -> Int32 {
    let (seconds, attoseconds) = duration.components
    if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 0 }
    let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
    if overflow { return CDBUS_TIMEOUT_INFINITE }
    let milliseconds = whole + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    return milliseconds >= Int64(CDBUS_TIMEOUT_INFINITE) ? CDBUS_TIMEOUT_INFINITE : Int32(milliseconds)
  }

  /// Subscribes to signals matching `rule`.
  ///
  /// The rule is added on the bus (AddMatch, awaited) before this returns, so a caller can subscribe
  /// and then read current state without missing a change in between. Signals are buffered without
  /// limit until read. The stream finishes when the connection is lost or closed. Ending the stream
  /// (its consuming task cancelled, or the stream dropped) removes the rule from the bus
  /// (RemoveMatch) and stops delivery. `InvalidArgs` for a rule the bus would refuse or whose type is
  /// not `signal`.
  public func signals(_ rule: MatchRule) async throws(DBusError) -> AsyncStream<DBusSignal> {
    try await signals(anyOf: [rule])
  }

  /// Subscribes to signals matching any of `rules` on ONE stream: a signal is delivered once even if
  /// several rules match it, and signals arrive in the order the bus sent them, which separate
  /// streams read by separate tasks cannot keep. Every rule is added (AddMatch, awaited) before
  /// this returns; otherwise as `signals(_:)`.
  public func signals(anyOf rules: [MatchRule]) async throws(DBusError) -> AsyncStream<DBusSignal> {
    guard !rules.isEmpty else { throw .invalidArgs("signals(anyOf:) needs at least one rule") }
    for rule in rules {
      try rule.validate()
      // Only signals are routed to streams; any other type would subscribe to nothing.
      guard rule.type == "signal" else { throw .invalidArgs("signals() needs a rule of type 'signal'") }
    }
    guard isConnected else { throw .disconnected() }
    let (stream, continuation) = AsyncStream.makeStream(of: DBusSignal.self, bufferingPolicy: .unbounded)
    let id = core.subscribe(rules, continuation)
    // The AddMatch calls go out together (the bus answers them in order): one round trip, not one per
    // rule. The first failure, in rule order, is reported.
    let results = await withTaskGroup(of: (Int, DBusError?).self) { group in
      for (index, rule) in rules.enumerated() {
        group.addTask {
          do throws(DBusError) {
            _ = try await self.call(
              destination: DBusNames.bus, path: DBusNames.busPath, interface: DBusNames.busInterface,
              member: "AddMatch", [.string(rule.text)])
            return (index, nil)
          } catch {
            return (index, error)
          }
        }
      }
      var failures: [Int: DBusError] = [:]
      for await (index, error) in group { if let error { failures[index] = error } }
      return failures
    }
    if let (_, error) = results.min(by: { $0.key < $1.key }) {
      // Other rules may have been added: they are removed with the subscription.
      let mayExist = results.count < rules.count || results.values.contains { $0.isCancelled || $0.isNoReply }
      core.subscriptionFailed(id, ruleMayExist: mayExist)
      throw error
    }
    return stream
  }

  /// Emits a signal (broadcast, or unicast to `destination`). Returns once the message is queued;
  /// messages from one connection reach the bus in the order they were emitted.
  public func emitSignal(
    path: String, interface: String, member: String, _ body: [DBusValue] = [], destination: String? = nil
  ) throws(DBusError) {
    let message = try Message.signal(
      path: path, interface: interface, member: member, destination: destination, body: body)
    try core.send(message)
  }

  /// Waits until everything sent before has reached the bus: a round trip to the bus daemon
  /// (org.freedesktop.DBus.Peer.Ping), which it answers in order after the earlier messages.
  public func flush() async throws(DBusError) {
    _ = try await call(
      destination: DBusNames.bus, path: DBusNames.busPath, interface: DBusNames.peer, member: "Ping")
  }

  /// Exports an object at `path`: method calls to it go to `handler`, whose reply is sent back
  /// (unless the caller asked for none). `org.freedesktop.DBus.Introspectable` is answered here
  /// (listing exported children) and `org.freedesktop.DBus.Peer` by libdbus; every other interface
  /// reaches the handler. Calls run concurrently, one task each; when the connection is lost or
  /// closed, the tasks of unanswered calls are cancelled. Throws `InvalidArgs` for an invalid
  /// path and `org.freedesktop.DBus.Error.ObjectPathInUse` when the path is already exported.
  public func export(path: String, handler: @escaping @Sendable (DBusMethodCall) async -> DBusReply)
    throws(DBusError)
  {
    try Marshalling.checkObjectPath(path)
    if let error = core.export(path: path, handler: handler) { throw error }
  }

  /// Stops exporting `path`; calls already running still send their replies.
  public func unexport(path: String) {
    core.unexport(path: path)
  }
}
