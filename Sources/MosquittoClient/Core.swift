import CLazyLibraries
import CMosquitto
import CaptureCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The libmosquitto client. `@unchecked Sendable`: once mosquitto_threaded_set(true) is set,
/// libmosquitto's own mutexes make mosquitto_publish, mosquitto_subscribe and mosquitto_disconnect
/// safe from any thread while another runs mosquitto_loop (mosquitto.h, mosquitto_threaded_set and
/// mosquitto_loop_start). Core makes those calls only under its mutex while the phase is `.running`
/// or `.stopping`; every other call (connect, reconnect, loop, destroy) is made before the loop
/// thread starts or by the loop thread itself, which sets the phase to `.ended` under the mutex
/// before mosquitto_destroy, so no call can reach a destroyed client.
struct Handle: @unchecked Sendable {
  let pointer: OpaquePointer
}

/// Mutable state shared by the caller's threads and the loop thread, always under `Core.state`.
struct ConnectionState {
  enum Phase { case created, running, stopping, ended }
  var phase = Phase.created
  /// A CONNACK was accepted and the connection has not ended since.
  var connected = false
  /// The current connection attempt got an accepted CONNACK (resets the backoff).
  var accepted = false
  /// Message ids `publish` returned that await their acknowledgement, with their QoS.
  var outstanding: [Int32: Int] = [:]
  /// The CONNACK refusal on_connect saw, for the loop thread to report.
  var refusal: MQTTError?
  /// The last OpenSSL error libmosquitto logged during the current attempt.
  var tlsDetail: String?
  /// stop's final message, until its acknowledgement.
  var finalID: Int32?
  /// stop waiting for the final message's acknowledgement and every other outstanding one.
  var settleWaiter: CheckedContinuation<Void, Never>?
  /// stop has settled: the DISCONNECT may be sent.
  var disconnectWanted = false
  /// A DISCONNECT is queued (stop's, or the loop thread's for a connection made while stopping).
  var disconnectSent = false

  /// Nothing published awaits an acknowledgement (QoS 0 messages have none to wait for).
  var settled: Bool { finalID == nil && !outstanding.values.contains { $0 > 0 } }

  /// The settle waiter, if the wait is over.
  mutating func takeSettleWaiter(force: Bool) -> CheckedContinuation<Void, Never>? {
    guard force || settled else { return nil }
    defer { settleWaiter = nil }
    return settleWaiter
  }
  /// Waiters for the end of the loop thread, by a number of their own.
  var endWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
  var nextWaiter = 0
}

final class Core: Sendable {
  let endpoint: MQTTEndpoint
  let delegate: any MQTTConnectionDelegate
  let handle: Handle
  let state = Mutex(ConnectionState())
  /// "HOST:PORT", as messages name the broker.
  let broker: String

  init(endpoint: MQTTEndpoint, will: MQTTMessage?, delegate: any MQTTConnectionDelegate) throws(MQTTError) {
    // libmosquitto is loaded by the first connection, not at start-up (docs/architecture.md, "Libraries
    // loaded on demand"); everything below and every later call works on what this made.
    guard cll_load(CLL_MOSQUITTO) == 0 else {
      throw .library("libmosquitto cannot be loaded: \(String(cString: cll_error()))")
    }
    try Settings.check(endpoint, will: will)
    self.endpoint = endpoint
    self.delegate = delegate
    broker = Settings.brokerName(endpoint)
    let initialized = cmq_lib_init()
    guard initialized == MOSQ_ERR_SUCCESS.rawValue else {
      throw .library("libmosquitto cannot start: \(Settings.text(initialized))")
    }
    guard let pointer = mosquitto_new(endpoint.clientID, true, nil) else {
      throw .library("libmosquitto cannot make a client: \(String(cString: strerror(cmq_errno())))")
    }
    handle = Handle(pointer: pointer)
    do {
      try configure(will: will)
    } catch {
      mosquitto_destroy(pointer)
      throw error
    }
  }

  /// Everything set before the first connection: protocol, threading, credentials, TLS, the Will,
  /// and the callbacks (their `obj` is this Core, kept alive by the loop thread while it runs them).
  private func configure(will: MQTTMessage?) throws(MQTTError) {
    let mosq = handle.pointer
    let check = { (rc: Int32, what: String) throws(MQTTError) in
      guard rc == MOSQ_ERR_SUCCESS.rawValue else {
        throw .library("libmosquitto: \(what): \(Settings.text(rc))")
      }
    }
    try check(mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311), "protocol version")
    try check(mosquitto_threaded_set(mosq, true), "threaded mode")
    if let username = endpoint.username {
      try check(mosquitto_username_pw_set(mosq, username, endpoint.password), "user name")
    }
    if let tls = endpoint.tls {
      let rc = mosquitto_tls_set(mosq, tls.caFile, nil, tls.certFile, tls.keyFile, nil)
      guard rc == MOSQ_ERR_SUCCESS.rawValue else {
        throw .tls("TLS settings for the MQTT broker \(broker) cannot be used: \(Settings.text(rc))")
      }
      if tls.caFile == nil {
        // No --mqtt-ca: verify the broker against the system's CA store.
        try check(mosquitto_int_option(mosq, MOSQ_OPT_TLS_USE_OS_CERTS, 1), "system CA certificates")
      }
      // SSL_VERIFY_PEER (1): the broker's certificate must verify; with tls_insecure false (the
      // default, set explicitly) libmosquitto also checks that it names the host connected to.
      try check(mosquitto_tls_opts_set(mosq, 1, nil, nil), "TLS options")
      try check(mosquitto_tls_insecure_set(mosq, false), "TLS host name check")
      // The log is read only for OpenSSL's reason of a TLS failure: with a log callback set,
      // libmosquitto formats a line for every packet, a cost plain connections need not pay.
      mosquitto_log_callback_set(mosq) { _, obj, _, line in
        guard let obj, let line else { return }
        Unmanaged<Core>.fromOpaque(obj).takeUnretainedValue().logged(String(cString: line))
      }
    }
    if let will {
      let rc = will.topic.withCString { topic in
        will.payload.withUnsafeBytes { raw in
          mosquitto_will_set(mosq, topic, Int32(raw.count), raw.baseAddress, Int32(will.qos), will.retain)
        }
      }
      guard rc == MOSQ_ERR_SUCCESS.rawValue else {
        throw .invalidConfiguration(
          "the MQTT Last Will on \"\(will.topic)\" cannot be used: \(Settings.text(rc))")
      }
    }
    mosquitto_user_data_set(mosq, Unmanaged.passUnretained(self).toOpaque())
    mosquitto_connect_callback_set(mosq) { _, obj, rc in
      guard let obj else { return }
      Unmanaged<Core>.fromOpaque(obj).takeUnretainedValue().connack(rc)
    }
    mosquitto_disconnect_callback_set(mosq) { _, obj, _ in
      guard let obj else { return }
      Unmanaged<Core>.fromOpaque(obj).takeUnretainedValue().connectionEnded()
    }
    mosquitto_publish_callback_set(mosq) { _, obj, mid in
      guard let obj else { return }
      Unmanaged<Core>.fromOpaque(obj).takeUnretainedValue().published(mid)
    }
    mosquitto_message_callback_set(mosq) { _, obj, message in
      guard let obj, let message else { return }
      Unmanaged<Core>.fromOpaque(obj).takeUnretainedValue().arrived(message.pointee)
    }
  }

  // MARK: - The caller's side

  func start() {
    let go = state.withLock { state -> Bool in
      guard state.phase == .created else { return false }
      state.phase = .running
      return true
    }
    guard go else { return }
    // The network loop blocks in select(2) and connect(2) for the life of the client: a `ReaderThread`
    // of its own, which ends when the loop sees the phase it is told to stop by.
    do throws(Errno) {
      try ReaderThread(name: "mqtt-loop").start { [self] in
        run()
        finish()
      }
    } catch {
      // No thread: report it as a failure retrying cannot fix, and free the client.
      state.withLock { $0.phase = .ended }
      mosquitto_destroy(handle.pointer)
      delegate.disconnected(
        .library("cannot start the MQTT network thread: \(error.message)"), willRetry: false)
    }
  }

  func publish(_ message: MQTTMessage) -> Int32? {
    state.withLock { state -> Int32? in
      guard state.phase == .running, state.connected,
        state.outstanding.count < MQTTConnection.outstandingLimit
      else { return nil }
      // Sent under the lock: the acknowledgement (on the loop thread) finds the id recorded.
      guard let mid = send(message) else { return nil }
      state.outstanding[mid] = message.qos
      return mid
    }
  }

  /// mosquitto_publish; the message id, or nil when libmosquitto refused the message.
  private func send(_ message: MQTTMessage) -> Int32? {
    guard (0...2).contains(message.qos), message.payload.count <= Settings.maximumPayload else { return nil }
    var mid: Int32 = 0
    let rc = message.topic.withCString { topic in
      message.payload.withUnsafeBytes { raw in
        mosquitto_publish(
          handle.pointer, &mid, topic, Int32(raw.count), raw.baseAddress, Int32(message.qos), message.retain)
      }
    }
    return rc == MOSQ_ERR_SUCCESS.rawValue ? mid : nil
  }

  func subscribe(_ topic: String, qos: Int) {
    guard (0...2).contains(qos) else { return }
    state.withLock { state in
      guard state.phase == .running, state.connected else { return }
      _ = mosquitto_subscribe(handle.pointer, nil, topic, Int32(qos))
    }
  }

  func stop(final: MQTTMessage?) async {
    enum Step { case done, destroyUnstarted, stop(publishFinal: Bool) }
    let step = state.withLock { state -> Step in
      switch state.phase {
      case .created:
        state.phase = .ended
        return .destroyUnstarted
      case .ended: return .done
      case .stopping: return .stop(publishFinal: false)
      case .running:
        state.phase = .stopping
        return .stop(publishFinal: state.connected && final != nil)
      }
    }
    switch step {
    case .done: return
    case .destroyUnstarted:
      mosquitto_destroy(handle.pointer)
      return
    case .stop(let publishFinal):
      await settle(final: publishFinal ? final : nil)
      state.withLock { $0.disconnectWanted = true }
      disconnect()
      await loopEnd(within: 5)
    }
  }

  /// The object went away without `stop`: an unstarted client is freed, a running one disconnects
  /// cleanly (no final message) and its thread, which keeps Core alive, ends by itself.
  func abandon() {
    let destroy = state.withLock { state -> Bool in
      switch state.phase {
      case .created:
        state.phase = .ended
        return true
      case .running:
        state.phase = .stopping
        state.disconnectWanted = true
        return false
      case .stopping, .ended: return false
      }
    }
    if destroy { mosquitto_destroy(handle.pointer) } else { disconnect() }
  }

  /// Queues a DISCONNECT if a connection is up and none is queued. Called by `stop` (it wakes the loop
  /// thread at once) and by the loop thread, for a connection completed after `stop` ran.
  func disconnect() {
    state.withLock { state in
      guard state.phase == .stopping, state.disconnectWanted, !state.disconnectSent else { return }
      if mosquitto_disconnect(handle.pointer) == MOSQ_ERR_SUCCESS.rawValue { state.disconnectSent = true }
    }
  }

  /// Publishes `final` (if given) and waits, at most 2 s, until it and every message still
  /// outstanding are acknowledged or the connection ends. Why wait for all: libmosquitto 2.0 treats a
  /// PUBACK arriving after mosquitto_disconnect as a protocol error and closes the socket without
  /// sending the DISCONNECT, and the broker then publishes the Will. The broker acknowledges one
  /// client's messages in order, so once `final` is acknowledged no PUBACK is still on its way. (A
  /// command the broker sends in the instant between DISCONNECT queued and written has the same
  /// effect; the Will and the final message say the same thing, offline, so it costs nothing.)
  private func settle(final: MQTTMessage?) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let waiting = state.withLock { state -> Bool in
        if let final, state.phase == .stopping, state.connected, let mid = send(final) {
          state.finalID = mid
        }
        guard state.connected, !state.settled else { return false }
        state.settleWaiter = continuation
        return true
      }
      guard waiting else { return continuation.resume() }
      Task { [self] in
        try? await Task.sleep(for: .seconds(2))
        state.withLock { $0.takeSettleWaiter(force: true) }?.resume()
      }
    }
  }

  /// Returns once the loop thread has ended, or after `seconds`.
  private func loopEnd(within seconds: Int) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let number = state.withLock { state -> Int? in
        guard state.phase != .ended else { return nil }
        state.nextWaiter += 1
        state.endWaiters[state.nextWaiter] = continuation
        return state.nextWaiter
      }
      guard let number else { return continuation.resume() }
      Task { [self] in
        try? await Task.sleep(for: .seconds(seconds))
        state.withLock { $0.endWaiters.removeValue(forKey: number) }?.resume()
      }
    }
  }

  /// For tests: the loop thread has ended (after a refusal, or `stop`).
  var loopEnded: Bool { state.withLock { $0.phase == .ended } }

  // MARK: - The loop thread

  private var stopping: Bool { state.withLock { $0.phase != .running } }

  /// Connects, runs the connection, reports how it ended, waits, and tries again, until `stop` or a
  /// failure retrying cannot fix.
  private func run() {
    // The project's one reconnect policy (CaptureCore Backoff: 0.25 s doubling to 5 s).
    var backoff = Backoff().delays()
    var first = true
    while !stopping {
      state.withLock { state in
        state.accepted = false
        state.refusal = nil
        state.tlsDetail = nil
      }
      let rc =
        first
        ? mosquitto_connect(handle.pointer, endpoint.host, Int32(endpoint.port), Int32(endpoint.keepAlive))
        : mosquitto_reconnect(handle.pointer)
      let attemptErrno = cmq_errno()
      first = false
      let outcome: Outcome
      if rc == MOSQ_ERR_SUCCESS.rawValue {
        var loopRC: Int32
        repeat {
          loopRC = mosquitto_loop(handle.pointer, 1000, 1)
          disconnect()
        } while loopRC == MOSQ_ERR_SUCCESS.rawValue
        outcome = ended(loopRC, errno: cmq_errno())
      } else {
        outcome = ended(rc, errno: attemptErrno)
      }
      if stopping {
        if outcome.wasConnected { delegate.disconnected(nil, willRetry: false) }
        return
      }
      delegate.disconnected(outcome.error, willRetry: !outcome.final)
      if outcome.final { return }
      if outcome.wasConnected { backoff.reset() }
      pause(Self.seconds(backoff.next()))
    }
  }

  private struct Outcome {
    var error: MQTTError
    var final: Bool
    var wasConnected: Bool
  }

  /// What a failed attempt (`attempt`: mosquitto_connect/reconnect failed) or an ended connection
  /// means for the caller.
  private func ended(_ rc: Int32, errno code: Int32) -> Outcome {
    let (refusal, tlsDetail, accepted) = state.withLock { ($0.refusal, $0.tlsDetail, $0.accepted) }
    if let refusal {
      let final: Bool
      switch refusal {
      case .notAuthorized, .refused: final = true
      default: final = false
      }
      return Outcome(error: refusal, final: final, wasConnected: false)
    }
    let reason = rc == MOSQ_ERR_ERRNO.rawValue ? String(cString: strerror(code)) : Settings.text(rc)
    let tlsFailed =
      rc == MOSQ_ERR_TLS.rawValue || rc == MOSQ_ERR_TLS_HANDSHAKE.rawValue || (!accepted && tlsDetail != nil)
    if tlsFailed && !accepted {
      return Outcome(
        error: .tls("TLS with the MQTT broker \(broker) failed: \(tlsDetail ?? reason)"), final: true,
        wasConnected: false)
    }
    if rc == MOSQ_ERR_INVAL.rawValue || rc == MOSQ_ERR_NOMEM.rawValue {
      return Outcome(
        error: .library("libmosquitto cannot connect to the MQTT broker \(broker): \(reason)"), final: true,
        wasConnected: accepted)
    }
    if rc == MOSQ_ERR_EAI.rawValue {
      return Outcome(
        error: .unreachable("cannot resolve the MQTT broker host \(endpoint.host)"), final: false,
        wasConnected: false)
    }
    if accepted {
      return Outcome(
        error: .unreachable("the connection to the MQTT broker \(broker) was lost: \(reason)"), final: false,
        wasConnected: true)
    }
    return Outcome(
      error: .unreachable("cannot connect to the MQTT broker \(broker): \(reason)"), final: false,
      wasConnected: false)
  }

  /// Waits `seconds` in short slices, so `stop` does not wait for the whole backoff.
  static func seconds(_ duration: Duration) -> Double {
    let (whole, fraction) = duration.components
    return Double(whole) + Double(fraction) / 1e18
  }

  private func pause(_ seconds: Double) {
    var left = seconds
    while left > 0 && !stopping {
      let slice = min(left, 0.05)
      usleep(UInt32(slice * 1_000_000))
      left -= slice
    }
  }

  /// The loop thread is ending: free the client and wake every `stop` waiting.
  private func finish() {
    let (waiters, final) = state.withLock {
      state -> ([CheckedContinuation<Void, Never>], CheckedContinuation<Void, Never>?) in
      state.phase = .ended
      state.connected = false
      let waiting = Array(state.endWaiters.values)
      state.endWaiters.removeAll()
      return (waiting, state.takeSettleWaiter(force: true))
    }
    mosquitto_destroy(handle.pointer)
    final?.resume()
    for waiter in waiters { waiter.resume() }
  }

  // MARK: - libmosquitto's callbacks (on the loop thread)

  fileprivate func connack(_ rc: Int32) {
    guard rc == 0 else {
      let refusal = Settings.refusal(rc, broker: broker, username: endpoint.username)
      state.withLock { $0.refusal = refusal }
      return
    }
    let report = state.withLock { state -> Bool in
      state.accepted = true
      state.connected = state.phase == .running
      return state.connected
    }
    if report { delegate.connected() }
  }

  fileprivate func connectionEnded() {
    let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
      state.connected = false
      // QoS 0 messages not yet written are dropped by libmosquitto: no acknowledgement will come.
      state.outstanding = state.outstanding.filter { $0.value > 0 }
      return state.takeSettleWaiter(force: true)
    }
    waiter?.resume()
  }

  fileprivate func published(_ mid: Int32) {
    let (report, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
      if mid == state.finalID {
        state.finalID = nil
        return (false, state.takeSettleWaiter(force: false))
      }
      let known = state.outstanding.removeValue(forKey: mid) != nil
      return (known, state.takeSettleWaiter(force: false))
    }
    // The caller hears of every message it published, stop's final message aside.
    if report { delegate.acknowledged(mid) }
    waiter?.resume()
  }

  fileprivate func arrived(_ message: mosquitto_message) {
    guard let topic = message.topic else { return }
    let count = Int(max(0, message.payloadlen))
    let payload: [UInt8] =
      if let bytes = message.payload, count > 0 {
        Array(UnsafeRawBufferPointer(start: bytes, count: count))
      } else {
        []
      }
    delegate.received(
      MQTTMessage(
        topic: String(cString: topic), payload: payload, qos: Int(message.qos), retain: message.retain))
  }

  fileprivate func logged(_ line: String) {
    // libmosquitto logs a TLS failure as "OpenSSL Error[n]: error:…:reason" lines, the reason last.
    guard line.hasPrefix("OpenSSL Error") else { return }
    let reason = line.split(separator: ":").last.map { String($0.drop { $0 == " " }) } ?? line
    state.withLock { $0.tlsDetail = String(reason.prefix(200)) }
  }
}
