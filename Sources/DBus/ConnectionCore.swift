internal import CDBus
import Dispatch
import Glibc
import Synchronization

/// The libdbus connection and everything attached to it, confined to one serial queue.
///
/// Every libdbus call on the connection after setup runs on `queue`, so every libdbus callback (watch,
/// timeout, dispatch status, filter, pending call, object path) also runs there and the mutable state
/// below needs no lock. Each registration passes libdbus a *retained* context with a free function:
/// libdbus may call back after the owning `DBusConnection` is gone (the local `Disconnected` message,
/// pending-call completion during close), and a retained context keeps those callbacks safe.
///
/// The retain cycles this creates (core → libdbus connection → context → core) are broken in
/// ``teardown()``, which `DBusConnection.close()` and `DBusConnection.deinit` run.
final class ConnectionCore: @unchecked Sendable {
  let queue: DispatchQueue
  private static let queueKey = DispatchSpecificKey<ObjectIdentifier>()

  /// The libdbus connection; nil after teardown.
  private var connection: OpaquePointer?
  /// Read from any thread by `DBusConnection.isConnected`.
  private let connected = Atomic<Bool>(true)
  /// Queue-confined mirror of `connected`, set when the loss has been handled.
  private var disconnected = false

  private var nextID: UInt64 = 0
  private let nextSubscriptionID = Atomic<UInt64>(0)
  private var calls: [UInt64: PendingCall] = [:]
  private var subscriptions: [UInt64: Subscription] = [:]
  private var waiters: [ObjectIdentifier: Waiter] = [:]
  private var exported: [String: ExportedObject] = [:]
  /// Method calls to exported objects whose handlers have not answered yet.
  private var requests: [UInt64: (message: Message, task: Task<Void, Never>)] = [:]
  private var filterContext: UnsafeMutableRawPointer?

  init(connection: OpaquePointer, label: String) {
    self.connection = connection
    queue = DispatchQueue(label: label)
    queue.setSpecific(key: Self.queueKey, value: ObjectIdentifier(self))
  }

  var isConnected: Bool { connected.load(ordering: .acquiring) }

  /// Runs `body` on the queue and waits for it; inline when already there (a `sync` onto the current
  /// serial queue would deadlock).
  func onQueue<T>(_ body: () -> T) -> T {
    if DispatchQueue.getSpecific(key: Self.queueKey) == ObjectIdentifier(self) { return body() }
    return queue.sync(execute: body)
  }

  private func makeID() -> UInt64 {
    nextID &+= 1
    return nextID
  }

  // MARK: - Setup and teardown

  /// Installs the main-loop integration. Called once, right after `dbus_bus_register`.
  func start() {
    onQueue {
      guard let connection else { return }
      _ = dbus_connection_set_watch_functions(
        connection,
        { watch, data in
          guard let watch, let data else { return 0 }
          return ConnectionCore.from(data).addWatch(watch) ? 1 : 0
        },
        { watch, data in
          guard let watch, let data else { return }
          ConnectionCore.from(data).removeWatch(watch)
        },
        { watch, data in
          guard let watch, let data else { return }
          ConnectionCore.from(data).toggleWatch(watch)
        },
        Unmanaged.passRetained(self).toOpaque(),
        { data in ConnectionCore.release(data) })
      _ = dbus_connection_set_timeout_functions(
        connection,
        { timeout, data in
          guard let timeout, let data else { return 0 }
          return ConnectionCore.from(data).addTimeout(timeout) ? 1 : 0
        },
        { timeout, data in
          guard let timeout, let data else { return }
          ConnectionCore.from(data).removeTimeout(timeout)
        },
        { timeout, data in
          guard let timeout, let data else { return }
          ConnectionCore.from(data).toggleTimeout(timeout)
        },
        Unmanaged.passRetained(self).toOpaque(),
        { data in ConnectionCore.release(data) })
      // libdbus calls this with its connection lock held, so it must not call back into libdbus: it
      // only schedules a dispatch on the queue.
      dbus_connection_set_dispatch_status_function(
        connection,
        { _, status, data in
          guard status == DBUS_DISPATCH_DATA_REMAINS, let data else { return }
          let core = ConnectionCore.from(data)
          core.queue.async { core.dispatchAll() }
        },
        Unmanaged.passRetained(self).toOpaque(),
        { data in ConnectionCore.release(data) })
      let context = Unmanaged.passRetained(self).toOpaque()
      let added = dbus_connection_add_filter(
        connection, ConnectionCore.filterFunction, context, ConnectionCore.release)
      if added != 0 {
        filterContext = context
      } else {
        Unmanaged<ConnectionCore>.fromOpaque(context).release()
      }
      // Messages that arrived during dbus_bus_register (NameAcquired) wait in libdbus's queue.
      queue.async { self.dispatchAll() }
    }
  }

  /// The one filter: the local Disconnected signal, and signals for the streams.
  private static let filterFunction: DBusHandleMessageFunction = { _, message, data in
    guard let message, let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    return ConnectionCore.from(data).filter(message)
  }

  private static func from(_ data: UnsafeMutableRawPointer) -> ConnectionCore {
    Unmanaged<ConnectionCore>.fromOpaque(data).takeUnretainedValue()
  }

  private static let release: DBusFreeFunction = { data in
    if let data { Unmanaged<ConnectionCore>.fromOpaque(data).release() }
  }

  /// Closes the connection and detaches every libdbus registration, breaking the retain cycles.
  /// Idempotent.
  func teardown() {
    onQueue {
      guard let connection else { return }
      // A private connection is ours to close (libdbus refuses to close a shared one). Closing queues
      // the local Disconnected message and completes pending calls; dispatching delivers both.
      dbus_connection_close(connection)
      dispatchAll()
      connectionLost()
      for path in exported.keys { _ = dbus_connection_unregister_object_path(connection, path) }
      exported.removeAll()
      if let filterContext {
        // remove_filter calls the free function, releasing the filter's reference.
        dbus_connection_remove_filter(connection, ConnectionCore.filterFunction, filterContext)
        self.filterContext = nil
      }
      // Replacing the functions removes every watch and timeout through the old remove functions
      // (cancelling their sources) and frees the old contexts.
      _ = dbus_connection_set_watch_functions(connection, nil, nil, nil, nil, nil)
      _ = dbus_connection_set_timeout_functions(connection, nil, nil, nil, nil, nil)
      dbus_connection_set_dispatch_status_function(connection, nil, nil, nil)
      self.connection = nil
      dbus_connection_unref(connection)
    }
  }

  /// For `deinit`: never waits.
  func teardownLater() {
    queue.async { self.teardown() }
  }

  // MARK: - Dispatch

  /// Runs libdbus's dispatch until its incoming queue is empty (DBUS_DISPATCH_COMPLETE). Each dispatch
  /// delivers one message to the filter, pending call or object path.
  func dispatchAll() {
    while let connection, dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
  }

  // MARK: - Watches

  /// One libdbus watch: a file descriptor and a direction, monitored while enabled.
  final class Watch: @unchecked Sendable {
    /// Valid until libdbus removes the watch; never touched once `removed` is set.
    let watch: OpaquePointer
    var removed = false
    var source: (any DispatchSourceProtocol)?
    /// The dup'd descriptor the source monitors.
    var fd: Int32 = -1
    init(watch: OpaquePointer) { self.watch = watch }
  }

  private func watchBox(_ watch: OpaquePointer) -> Watch? {
    dbus_watch_get_data(watch).map { Unmanaged<Watch>.fromOpaque($0).takeUnretainedValue() }
  }

  private func addWatch(_ watch: OpaquePointer) -> Bool {
    let box = Watch(watch: watch)
    dbus_watch_set_data(watch, Unmanaged.passRetained(box).toOpaque()) { data in
      if let data { Unmanaged<Watch>.fromOpaque(data).release() }
    }
    if dbus_watch_get_enabled(watch) != 0 { startWatch(box) }
    return true
  }

  private func removeWatch(_ watch: OpaquePointer) {
    guard let box = watchBox(watch) else { return }
    box.removed = true
    stopWatch(box)
  }

  private func toggleWatch(_ watch: OpaquePointer) {
    guard let box = watchBox(watch) else { return }
    if dbus_watch_get_enabled(watch) != 0 { startWatch(box) } else { stopWatch(box) }
  }

  private func startWatch(_ box: Watch) {
    guard box.source == nil, !box.removed else { return }
    // The source watches a duplicate that it closes when its cancellation completes: libdbus closes
    // its own descriptor right after removing the watch, while libdispatch unregisters a cancelled
    // source later, and must never act on a number the process may already have reused.
    let fd = fcntl(dbus_watch_get_unix_fd(box.watch), F_DUPFD_CLOEXEC, 0)
    guard fd >= 0 else { return }
    let source: any DispatchSourceProtocol
    // libdbus's socket transport makes one watch per direction, READABLE or WRITABLE.
    if dbus_watch_get_flags(box.watch) & DBUS_WATCH_READABLE.rawValue != 0 {
      source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
      source.setEventHandler { [weak self, weak box] in
        guard let self, let box else { return }
        self.readable(box)
      }
    } else {
      source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
      source.setEventHandler { [weak self, weak box] in
        guard let self, let box, !box.removed, box.source != nil, self.connection != nil else { return }
        _ = dbus_watch_handle(box.watch, DBUS_WATCH_WRITABLE.rawValue)
        self.dispatchAll()
      }
    }
    source.setCancelHandler { _ = Glibc.close(fd) }
    box.fd = fd
    box.source = source
    source.resume()
  }

  /// Cancelled on the queue the source runs on, so no handler is running or will start.
  private func stopWatch(_ box: Watch) {
    box.source?.cancel()
    box.source = nil
  }

  /// Reads and dispatches until the socket has no more input. One readiness event can stand for both
  /// data and end of file, and dbus_watch_handle reads only a bounded amount each time, so one call
  /// per event could leave the disconnect unseen.
  private func readable(_ box: Watch) {
    var rounds = 0
    while !box.removed, box.source != nil, connection != nil {
      _ = dbus_watch_handle(box.watch, DBUS_WATCH_READABLE.rawValue)
      dispatchAll()
      guard !box.removed, box.source != nil, Self.hasInput(box.fd) else { return }
      rounds += 1
      if rounds == 64 {
        // Let queued sends and timers run, then carry on draining.
        queue.async { [weak box] in
          guard let box else { return }
          self.readable(box)
        }
        return
      }
    }
  }

  private static func hasInput(_ fd: Int32) -> Bool {
    var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    return poll(&descriptor, 1, 0) > 0 && descriptor.revents != 0
  }

  // MARK: - Timeouts

  /// One libdbus timeout: a repeating interval while enabled (pending-call timeouts among them).
  final class Timeout: @unchecked Sendable {
    let timeout: OpaquePointer
    var removed = false
    var timer: (any DispatchSourceTimer)?
    init(timeout: OpaquePointer) { self.timeout = timeout }
  }

  private func timeoutBox(_ timeout: OpaquePointer) -> Timeout? {
    dbus_timeout_get_data(timeout).map { Unmanaged<Timeout>.fromOpaque($0).takeUnretainedValue() }
  }

  private func addTimeout(_ timeout: OpaquePointer) -> Bool {
    let box = Timeout(timeout: timeout)
    dbus_timeout_set_data(timeout, Unmanaged.passRetained(box).toOpaque()) { data in
      if let data { Unmanaged<Timeout>.fromOpaque(data).release() }
    }
    if dbus_timeout_get_enabled(timeout) != 0 { startTimeout(box) }
    return true
  }

  private func removeTimeout(_ timeout: OpaquePointer) {
    guard let box = timeoutBox(timeout) else { return }
    box.removed = true
    box.timer?.cancel()
    box.timer = nil
  }

  /// A toggle can also mean "restart with a new interval", so the timer is always rebuilt.
  private func toggleTimeout(_ timeout: OpaquePointer) {
    guard let box = timeoutBox(timeout) else { return }
    box.timer?.cancel()
    box.timer = nil
    if dbus_timeout_get_enabled(timeout) != 0 { startTimeout(box) }
  }

  private func startTimeout(_ box: Timeout) {
    let interval = DispatchTimeInterval.milliseconds(max(1, Int(dbus_timeout_get_interval(box.timeout))))
    let timer = DispatchSource.makeTimerSource(queue: queue)
    timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(1))
    timer.setEventHandler { [weak self, weak box] in
      guard let self, let box, !box.removed, self.connection != nil else { return }
      _ = dbus_timeout_handle(box.timeout)
      self.dispatchAll()
    }
    box.timer = timer
    timer.resume()
  }

  // MARK: - Connection loss

  /// Ends everything that waits on the connection: pending calls fail with Disconnected, streams
  /// finish, waiters resume. Runs when the local Disconnected signal is dispatched (libdbus
  /// synthesises it when the socket closes) and again, harmlessly, at teardown.
  private func connectionLost() {
    guard !disconnected else { return }
    disconnected = true
    connected.store(false, ordering: .releasing)
    let lostCalls = calls
    calls.removeAll()
    for call in lostCalls.values {
      if let pending = call.pending {
        call.pending = nil
        dbus_pending_call_cancel(pending)
        dbus_pending_call_unref(pending)
      }
      call.finish(.failure(.disconnected("The D-Bus connection was lost")))
    }
    let lostSubscriptions = subscriptions
    subscriptions.removeAll()
    for subscription in lostSubscriptions.values { subscription.continuation.finish() }
    let lostWaiters = waiters
    waiters.removeAll()
    for waiter in lostWaiters.values { waiter.finish() }
    // Nobody can receive their replies any more.
    let lostRequests = requests
    requests.removeAll()
    for request in lostRequests.values { request.task.cancel() }
  }

  // MARK: - Filter (signals)

  private struct Subscription {
    /// A signal matching any of them is delivered once, in the order the bus sent it.
    let rules: [MatchRule]
    let continuation: AsyncStream<DBusSignal>.Continuation
    /// Whether removal must send RemoveMatch: false once AddMatch is known to have been refused.
    var sendsRemoveMatch = true
  }

  private func filter(_ message: OpaquePointer) -> DBusHandlerResult {
    guard dbus_message_get_type(message) == DBUS_MESSAGE_TYPE_SIGNAL else {
      return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
    }
    if dbus_message_is_signal(message, DBusNames.localInterface, "Disconnected") != 0,
      dbus_message_has_path(message, DBusNames.localPath) != 0
    {
      connectionLost()
      // libdbus's own handling of this message is exit(1) when exit_on_disconnect is set; it is not.
      return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
    }
    guard !subscriptions.isEmpty else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    let sender = Message.string(dbus_message_get_sender(message))
    let path = Message.string(dbus_message_get_path(message))
    let interface = Message.string(dbus_message_get_interface(message))
    let member = Message.string(dbus_message_get_member(message))
    var firstArgument: String??
    var signal: DBusSignal?
    for subscription in subscriptions.values {
      let matches = subscription.rules.contains { rule in
        rule.matches(
          type: "signal", sender: sender, path: path, interface: interface, member: member,
          arg0: {
            if firstArgument == nil { firstArgument = .some(Marshalling.firstStringArgument(of: message)) }
            return firstArgument!
          })
      }
      guard matches else { continue }
      if signal == nil {
        // Converted once, on the queue, into Sendable values; the message itself never leaves.
        signal = DBusSignal(
          sender: sender, path: path ?? "", interface: interface ?? "", member: member ?? "",
          body: Marshalling.body(of: message))
      }
      subscription.continuation.yield(signal!)
    }
    return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
  }

  /// Registers a stream before AddMatch is sent: a matching signal can follow the AddMatch reply in
  /// the same read, and it must find the stream already there.
  func subscribe(_ rules: [MatchRule], _ continuation: AsyncStream<DBusSignal>.Continuation) -> UInt64 {
    let id = nextSubscriptionID.add(1, ordering: .relaxed).newValue
    continuation.onTermination = { _ in
      self.queue.async { self.unsubscribe(id) }
    }
    queue.async {
      if self.disconnected {
        continuation.finish()
        return
      }
      self.subscriptions[id] = Subscription(rules: rules, continuation: continuation)
    }
    return id
  }

  /// AddMatch failed: finish the stream; send RemoveMatch only if the bus may still have added the
  /// rule (the call was cancelled or timed out rather than refused).
  func subscriptionFailed(_ id: UInt64, ruleMayExist: Bool) {
    queue.async {
      guard var subscription = self.subscriptions[id] else { return }
      subscription.sendsRemoveMatch = ruleMayExist
      self.subscriptions[id] = subscription
      subscription.continuation.finish()
    }
  }

  private func unsubscribe(_ id: UInt64) {
    guard let subscription = subscriptions.removeValue(forKey: id) else { return }
    guard subscription.sendsRemoveMatch, !disconnected, let connection else { return }
    for rule in subscription.rules {
      // Fire and forget: with NO_REPLY_EXPECTED the bus sends no reply (spec, "Message Format": flags),
      // not even the error for a rule whose AddMatch never reached it.
      guard
        let message = try? Message.methodCall(
          destination: DBusNames.bus, path: DBusNames.busPath, interface: DBusNames.busInterface,
          member: "RemoveMatch", body: [.string(rule.text)])
      else { continue }
      dbus_message_set_no_reply(message.pointer, 1)
      _ = dbus_connection_send(connection, message.pointer, nil)
    }
  }

  var subscriptionCount: Int { onQueue { subscriptions.count } }

  // MARK: - Sending

  /// Queues a message that expects no reply (a signal).
  func send(_ message: Message) throws(DBusError) {
    guard isConnected else { throw .disconnected() }
    queue.async {
      guard let connection = self.connection, !self.disconnected else { return }
      _ = dbus_connection_send(connection, message.pointer, nil)
    }
  }

  // MARK: - Pending calls

  /// One method call awaiting its reply. Queue-confined.
  final class PendingCall: @unchecked Sendable {
    var id: UInt64 = 0
    var continuation: CheckedContinuation<Result<[DBusValue], DBusError>, Never>?
    var pending: OpaquePointer?
    var cancelled = false

    /// Resumes the awaiting task exactly once; later outcomes are dropped.
    func finish(_ result: Result<[DBusValue], DBusError>) {
      guard let continuation else { return }
      self.continuation = nil
      continuation.resume(returning: result)
    }
  }

  /// The retained context of a pending call's notify function.
  private final class CallContext {
    let core: ConnectionCore
    let call: PendingCall
    init(core: ConnectionCore, call: PendingCall) {
      self.core = core
      self.call = call
    }
  }

  /// Sends `message` and waits for its reply. Task cancellation cancels the libdbus pending call and
  /// gives ``DBusError/Name/cancelled``.
  func call(_ message: Message, timeout: Int32) async -> Result<[DBusValue], DBusError> {
    let call = PendingCall()
    return await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        queue.async { self.start(call, message, timeout, continuation) }
      }
    } onCancel: {
      queue.async { self.cancel(call) }
    }
  }

  private func start(
    _ call: PendingCall, _ message: Message, _ timeout: Int32,
    _ continuation: CheckedContinuation<Result<[DBusValue], DBusError>, Never>
  ) {
    call.continuation = continuation
    // The cancellation handler can run before this block does.
    if call.cancelled { return call.finish(.failure(.cancelled())) }
    guard let connection, !disconnected else { return call.finish(.failure(.disconnected())) }
    if dbus_message_contains_unix_fds(message.pointer) != 0,
      dbus_connection_can_send_type(connection, CDBUS_TYPE_UNIX_FD) == 0
    {
      return call.finish(
        .failure(
          DBusError(
            name: DBusError.Name.notSupported, message: "this connection cannot pass file descriptors")))
    }
    var pending: OpaquePointer?
    guard dbus_connection_send_with_reply(connection, message.pointer, &pending, timeout) != 0 else {
      return call.finish(.failure(.noMemory()))
    }
    // libdbus leaves the pending call NULL when the connection is already disconnected.
    guard let pending else { return call.finish(.failure(.disconnected())) }
    call.id = makeID()
    call.pending = pending
    calls[call.id] = call
    let context = Unmanaged.passRetained(CallContext(core: self, call: call)).toOpaque()
    let notify: DBusPendingCallNotifyFunction = { _, data in
      guard let data else { return }
      let context = Unmanaged<CallContext>.fromOpaque(data).takeUnretainedValue()
      context.core.complete(context.call)
    }
    let set = dbus_pending_call_set_notify(pending, notify, context) { data in
      if let data { Unmanaged<CallContext>.fromOpaque(data).release() }
    }
    if set == 0 {
      Unmanaged<CallContext>.fromOpaque(context).release()
      cancel(call)
      return
    }
    if dbus_pending_call_get_completed(pending) != 0 { complete(call) }
  }

  private func complete(_ call: PendingCall) {
    guard let pending = call.pending else { return }
    call.pending = nil
    calls[call.id] = nil
    let reply = dbus_pending_call_steal_reply(pending)
    // libdbus holds its own reference while it runs the notify function.
    dbus_pending_call_unref(pending)
    guard let reply else { return call.finish(.failure(.noReply())) }
    var result = Message(owning: reply).replyResult()
    // On disconnect libdbus completes every pending call with a synthesised NoReply error before it
    // queues the Disconnected message; report what actually happened.
    if case .failure(let error) = result, error.isNoReply, isLost {
      result = .failure(.disconnected("The D-Bus connection was lost before the reply"))
    }
    call.finish(result)
  }

  private var isLost: Bool {
    guard !disconnected, let connection else { return true }
    return dbus_connection_get_is_connected(connection) == 0
  }

  private func cancel(_ call: PendingCall) {
    call.cancelled = true
    if let pending = call.pending {
      call.pending = nil
      calls[call.id] = nil
      // The reply, if it still comes, is dropped by libdbus.
      dbus_pending_call_cancel(pending)
      dbus_pending_call_unref(pending)
    }
    call.finish(.failure(.cancelled()))
  }

  // MARK: - Waiting for loss

  final class Waiter: @unchecked Sendable {
    var continuation: CheckedContinuation<Void, Never>?
    var cancelled = false
    func finish() {
      continuation?.resume()
      continuation = nil
    }
  }

  func waitUntilDisconnected() async {
    let waiter = Waiter()
    await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        queue.async {
          waiter.continuation = continuation
          if self.disconnected || waiter.cancelled { return waiter.finish() }
          self.waiters[ObjectIdentifier(waiter)] = waiter
        }
      }
    } onCancel: {
      queue.async {
        waiter.cancelled = true
        self.waiters[ObjectIdentifier(waiter)] = nil
        waiter.finish()
      }
    }
  }

  // MARK: - Exported objects

  /// An exported path and its handler; the retained context of its object-path registration.
  final class ExportedObject: @unchecked Sendable {
    let core: ConnectionCore
    let path: String
    let handler: @Sendable (DBusMethodCall) async -> DBusReply
    init(core: ConnectionCore, path: String, handler: @escaping @Sendable (DBusMethodCall) async -> DBusReply)
    {
      self.core = core
      self.path = path
      self.handler = handler
    }
  }

  func export(path: String, handler: @escaping @Sendable (DBusMethodCall) async -> DBusReply) -> DBusError? {
    onQueue {
      guard let connection, !disconnected else { return .disconnected() }
      let object = ExportedObject(core: self, path: path, handler: handler)
      let context = Unmanaged.passRetained(object).toOpaque()
      var vtable = DBusObjectPathVTable()
      // Called on unregistration or when the connection is finalised: the context's free function.
      vtable.unregister_function = { _, data in
        if let data { Unmanaged<ExportedObject>.fromOpaque(data).release() }
      }
      vtable.message_function = { _, message, data in
        guard let message, let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
        let object = Unmanaged<ExportedObject>.fromOpaque(data).takeUnretainedValue()
        return object.core.handleMethodCall(message, object)
      }
      var error = CDBus.DBusError()
      dbus_error_init(&error)
      // libdbus copies the vtable's function pointers, so a local vtable is enough.
      guard dbus_connection_try_register_object_path(connection, path, &vtable, context, &error) != 0 else {
        // On failure libdbus keeps nothing, so the context is released here.
        Unmanaged<ExportedObject>.fromOpaque(context).release()
        return DBusError(consuming: &error)
      }
      exported[path] = object
      return nil
    }
  }

  func unexport(path: String) {
    onQueue {
      guard exported.removeValue(forKey: path) != nil, let connection else { return }
      _ = dbus_connection_unregister_object_path(connection, path)
    }
  }

  private func handleMethodCall(_ message: OpaquePointer, _ object: ExportedObject) -> DBusHandlerResult {
    guard dbus_message_get_type(message) == DBUS_MESSAGE_TYPE_METHOD_CALL,
      let member = Message.string(dbus_message_get_member(message))
    else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    let interface = Message.string(dbus_message_get_interface(message))
    if interface == DBusNames.introspectable || (interface == nil && member == "Introspect") {
      guard member == "Introspect" else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
      sendReply(.values([.string(introspection(of: object.path))]), to: Message(retaining: message))
      return DBUS_HANDLER_RESULT_HANDLED
    }
    // libdbus answers org.freedesktop.DBus.Peer (Ping, GetMachineId) in dbus_connection_dispatch before
    // any object path sees the message; anything else on Peer gets libdbus's UnknownMethod reply.
    if interface == DBusNames.peer { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    let call = DBusMethodCall(
      sender: Message.string(dbus_message_get_sender(message)),
      path: Message.string(dbus_message_get_path(message)) ?? object.path, interface: interface,
      member: member, body: Marshalling.body(of: message))
    // The request stays here, not in the handler's task: a received message's last release can make
    // libdbus re-enable the read watch (its live-messages counter), and that callback must run on the
    // queue like every other.
    let id = makeID()
    let handler = object.handler
    // Handlers run concurrently, one task per call, so a handler waiting on a user (a pairing agent)
    // does not hold up other calls. The completion is queued behind this block, so the request is
    // registered before it can be looked up.
    let task = Task {
      let reply = await handler(call)
      self.queue.async {
        guard let request = self.requests.removeValue(forKey: id) else { return }
        self.sendReply(reply, to: request.message)
      }
    }
    requests[id] = (Message(retaining: message), task)
    return DBUS_HANDLER_RESULT_HANDLED
  }

  private func sendReply(_ reply: DBusReply, to request: Message) {
    guard let connection, !disconnected else { return }
    // The caller set NO_REPLY_EXPECTED: the spec says not to reply.
    guard dbus_message_get_no_reply(request.pointer) == 0 else { return }
    let message: Message
    switch reply {
    case .values(let values):
      guard let pointer = dbus_message_new_method_return(request.pointer) else { return }
      message = Message(owning: pointer)
      do {
        try Marshalling.append(values, to: pointer)
      } catch {
        return sendReply(.error(.failed("The reply could not be marshalled: \(error.message)")), to: request)
      }
    case .error(let error):
      // dbus_message_new_error aborts on an invalid name or text: both are checked first.
      let name = Marshalling.isValidErrorName(error.name) ? error.name : DBusError.Name.failed
      var text = String(error.message.unicodeScalars.filter { $0 != "\0" })
      if (try? Marshalling.checkString(text)) == nil { text = "" }
      guard let pointer = dbus_message_new_error(request.pointer, name, text) else { return }
      message = Message(owning: pointer)
    }
    _ = dbus_connection_send(connection, message.pointer, nil)
  }

  /// Introspection data for an exported path: the standard interfaces this client answers, and the
  /// exported children (the handler's own interfaces are not known here).
  private func introspection(of path: String) -> String {
    var xml = """
      <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
      "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
      <node>
        <interface name="org.freedesktop.DBus.Introspectable">
          <method name="Introspect"><arg name="xml_data" type="s" direction="out"/></method>
        </interface>
        <interface name="org.freedesktop.DBus.Peer">
          <method name="Ping"/>
          <method name="GetMachineId"><arg name="machine_uuid" type="s" direction="out"/></method>
        </interface>

      """
    var children: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
    if let connection, dbus_connection_list_registered(connection, path, &children) != 0, let children {
      var index = 0
      while let child = children[index] {
        // Registered path elements are [A-Za-z0-9_] (dbus_validate_path), safe inside an attribute.
        xml += "  <node name=\"\(String(cString: child))\"/>\n"
        index += 1
      }
      dbus_free_string_array(children)
    }
    return xml + "</node>\n"
  }
}

extension DBusError {
  /// Takes the name and message out of a libdbus error and frees it.
  init(consuming error: inout CDBus.DBusError) {
    let name = error.name.map { String(cString: $0) } ?? DBusError.Name.failed
    let message = error.message.map { String(cString: $0) } ?? ""
    dbus_error_free(&error)
    self.init(name: name, message: message)
  }
}
