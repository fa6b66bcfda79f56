import CaptureCore
import MosquittoClient
import Synchronization

/// `capture fleet` (docs/fleet.md §9): one more client of the broker, next to the hosts. It reads the
/// retained state, subscribes and publishes on the hosts' topics; the command line does the rest
/// through CaptureCore's `FleetControl`.
///
/// The end of the retained burst: a broker sends the retained messages of a subscription right after
/// its SUBACK, and SUBACK says nothing about when they are all out. So after subscribing, the
/// controller publishes a marker (QoS 1, not retained) on a topic of its own that it subscribed to
/// as well, `PREFIX/@fleet/CLIENTID/N`, and the burst is over when the marker comes back: the broker
/// handles one client's packets in order and queues what it sends that client in one ordered queue
/// (mosquitto does; the MQTT 3.1.1 standard, section 4.6, orders the messages of one topic only, so
/// a broker that reorders across topics could end the wait early — the retained state is then read
/// again by the next call).
/// `@` cannot be in a host id (docs/fleet.md §1), so the marker never looks like a host's topic.
public final class FleetController: FleetControl, MQTTConnectionDelegate {
  private let url: BrokerURL
  /// The endpoint, with the password file read (called once, on the blocking executor).
  private let endpoint: @Sendable () throws(CaptureError) -> MQTTEndpoint
  private let warn: @Sendable (String) -> Void
  /// `capture-fleet-RANDOM`: two controllers (two operators) never take each other's session.
  public let clientID: String

  private struct State {
    var connection: MQTTConnection?
    var connected = false
    /// Waiting for the first CONNACK, or a refusal.
    var connectWaiters: [FirstAnswer<CaptureError?>] = []
    var refusal: CaptureError?
    var lastProblem: String?
    /// Every filter subscribed, made again on each connection (the session is clean).
    var filters: [String] = []
    var deliveries: [Int: @Sendable (FleetMessage) -> Void] = [:]
    var nextID = 0
    /// Markers sent and not yet back, by number, with the message that carries them.
    var markers: [Int: FirstAnswer<Bool>] = [:]
    var acknowledgements: [Int32: FirstAnswer<Bool>] = [:]
    /// PUBACKs that came before anyone waited for them.
    var early: Set<Int32> = []
  }
  private let state = Mutex(State())

  public init(
    url: BrokerURL, endpoint: @escaping @Sendable () throws(CaptureError) -> MQTTEndpoint,
    clientID: String, warn: @escaping @Sendable (String) -> Void
  ) {
    self.url = url
    self.endpoint = endpoint
    self.clientID = clientID
    self.warn = warn
  }

  public var prefix: String { url.prefix }

  private var markerBase: String { "\(url.prefix)/@fleet/\(clientID)" }

  private var broker: String { "MQTT broker \(url.host):\(url.port)" }

  // MARK: - FleetControl

  public func retained(_ kinds: [String], until deadline: ContinuousClock.Instant) async throws(CaptureError)
    -> [FleetMessage]
  {
    let collected = Mutex<[FleetMessage]>([])
    let token = try await subscribeAndMark(kinds.map { "+/\($0)" }, until: deadline) { message in
      guard message.retained, message.levels.count == 1, kinds.contains(message.levels[0]) else { return }
      collected.withLock { $0.append(message) }
    }
    state.withLock { _ = $0.deliveries.removeValue(forKey: token) }
    return collected.withLock { $0 }
  }

  public func subscribe(
    _ filters: [String], until deadline: ContinuousClock.Instant,
    deliver: @escaping @Sendable (FleetMessage) -> Void
  ) async throws(CaptureError) {
    _ = try await subscribeAndMark(filters, until: deadline, deliver: deliver)
  }

  public func publish(
    host: String, levels: [String], payload: [UInt8], retain: Bool, until deadline: ContinuousClock.Instant
  ) async throws(CaptureError) {
    try await connect(until: deadline)
    let topic = ([url.prefix, host] + levels).joined(separator: "/")
    try await publishAcknowledged(
      MQTTMessage(topic: topic, payload: payload, qos: 1, retain: retain), until: deadline)
  }

  public func close() async {
    let connection = state.withLock { s -> MQTTConnection? in
      defer { s.connection = nil }
      return s.connection
    }
    await connection?.stop(final: nil)
  }

  // MARK: - Connecting, subscribing, publishing

  private func connect(until deadline: ContinuousClock.Instant) async throws(CaptureError) {
    enum Step {
      case ready
      case refused(CaptureError)
      case make
      case wait(FirstAnswer<CaptureError?>)
    }
    let answer = FirstAnswer<CaptureError?>()
    let step = state.withLock { s -> Step in
      if let refusal = s.refusal { return .refused(refusal) }
      if s.connected { return .ready }
      s.connectWaiters.append(answer)
      return s.connection == nil ? .make : .wait(answer)
    }
    switch step {
    case .ready: return
    case .refused(let error): throw error
    case .wait, .make: break
    }
    if case .make = step {
      let endpoint = self.endpoint
      let made = try await BlockingExecutor.shared.run { _ throws(CaptureError) -> MQTTEndpoint in
        try endpoint()
      }
      let connection: MQTTConnection
      do {
        connection = try MQTTConnection(endpoint: made, will: nil, delegate: self)
      } catch {
        throw Fleet.refusal(error, FleetSettings(url: url, hostID: "fleet"))
      }
      state.withLock { $0.connection = connection }
      connection.start()
    }
    let outcome = await answer.wait(until: deadline, orElse: .some(timedOut("connecting")))
    if let outcome { throw outcome }
  }

  private func timedOut(_ what: String) -> CaptureError {
    let problem = state.withLock { $0.lastProblem }
    return CaptureError(
      .requestTimedOut,
      "\(broker): the time ran out \(what)\(problem.map { " (\($0))" } ?? "") (--timeout)")
  }

  /// Subscribes `filters` (under PREFIX) and the marker, publishes the marker and returns once it
  /// came back: the subscriptions are in place and their retained messages delivered.
  private func subscribeAndMark(
    _ filters: [String], until deadline: ContinuousClock.Instant,
    deliver: @escaping @Sendable (FleetMessage) -> Void
  ) async throws(CaptureError) -> Int {
    try await connect(until: deadline)
    let full = filters.map { "\(url.prefix)/\($0)" } + ["\(markerBase)/#"]
    let arrived = FirstAnswer<Bool>()
    let (token, connection) = state.withLock { s -> (Int, MQTTConnection?) in
      for filter in full where !s.filters.contains(filter) { s.filters.append(filter) }
      s.nextID += 1
      s.deliveries[s.nextID] = deliver
      s.markers[s.nextID] = arrived
      return (s.nextID, s.connection)
    }
    // Again even when subscribed before: a repeated SUBSCRIBE sends the retained messages again
    // (the MQTT 3.1.1 standard, section 3.8.4).
    for filter in full { connection?.subscribe(filter, qos: 1) }
    try await publishAcknowledged(
      MQTTMessage(topic: "\(markerBase)/\(token)", payload: [], qos: 1, retain: false), until: deadline)
    let back = await arrived.wait(until: deadline, orElse: false)
    state.withLock { _ = $0.markers.removeValue(forKey: token) }
    guard back else {
      state.withLock { _ = $0.deliveries.removeValue(forKey: token) }
      throw timedOut("waiting for the retained messages")
    }
    return token
  }

  /// Publishes with QoS 1 and waits for the PUBACK; a publish the transport cannot take now (not
  /// connected, 256 awaiting their PUBACK) is tried again until `deadline`.
  private func publishAcknowledged(_ message: MQTTMessage, until deadline: ContinuousClock.Instant)
    async throws(CaptureError)
  {
    while true {
      if let refusal = state.withLock({ $0.refusal }) { throw refusal }
      let connection = state.withLock { $0.connection }
      if let mid = connection?.publish(message) {
        let acknowledged = FirstAnswer<Bool>()
        let early = state.withLock { s -> Bool in
          if s.early.remove(mid) != nil { return true }
          s.acknowledgements[mid] = acknowledged
          return false
        }
        if early { return }
        let done = await acknowledged.wait(until: deadline, orElse: false)
        state.withLock { _ = $0.acknowledgements.removeValue(forKey: mid) }
        if done { return }
        throw timedOut("waiting for the broker to acknowledge \(message.topic)")
      }
      // Not taken: wait for a PUBACK or a connection, briefly, within the deadline.
      if ContinuousClock.now >= deadline { throw timedOut("publishing \(message.topic)") }
      try? await Task.sleep(for: .milliseconds(20))
    }
  }

  // MARK: - MQTTConnectionDelegate (the transport's thread)

  public func connected() {
    let (waiters, filters, connection, markers) = state.withLock {
      s -> ([FirstAnswer<CaptureError?>], [String], MQTTConnection?, [Int]) in
      s.connected = true
      s.lastProblem = nil
      defer { s.connectWaiters = [] }
      return (s.connectWaiters, s.filters, s.connection, Array(s.markers.keys))
    }
    for filter in filters { connection?.subscribe(filter, qos: 1) }
    // A marker whose message was lost with the last connection is sent again.
    for token in markers {
      _ = connection?.publish(
        MQTTMessage(topic: "\(markerBase)/\(token)", payload: [], qos: 1, retain: false))
    }
    for waiter in waiters { _ = waiter.offer(nil) }
  }

  public func disconnected(_ error: MQTTError?, willRetry: Bool) {
    guard let error else {
      state.withLock { $0.connected = false }
      return
    }
    if willRetry {
      state.withLock {
        $0.connected = false
        $0.lastProblem = error.description
      }
      return
    }
    let refusal = Fleet.refusal(error, FleetSettings(url: url, hostID: "fleet"))
    let waiters = state.withLock { s -> [FirstAnswer<CaptureError?>] in
      s.connected = false
      s.refusal = refusal
      defer { s.connectWaiters = [] }
      return s.connectWaiters
    }
    for waiter in waiters { _ = waiter.offer(refusal) }
  }

  public func acknowledged(_ messageID: Int32) {
    let waiter = state.withLock { s -> FirstAnswer<Bool>? in
      if let waiter = s.acknowledgements.removeValue(forKey: messageID) { return waiter }
      s.early.insert(messageID)
      return nil
    }
    _ = waiter?.offer(true)
  }

  public func received(_ message: MQTTMessage) {
    let marker = markerBase + "/"
    if message.topic.hasPrefix(marker) {
      guard let token = Int(message.topic.dropFirst(marker.count)) else { return }
      _ = state.withLock { $0.markers[token] }?.offer(true)
      return
    }
    guard let parsed = Self.split(message.topic, prefix: url.prefix) else { return }
    let fleetMessage = FleetMessage(
      host: parsed.host, levels: parsed.levels, payload: message.payload, retained: message.retain)
    let deliveries = state.withLock { Array($0.deliveries.values) }
    for deliver in deliveries { deliver(fleetMessage) }
  }

  /// `PREFIX/HOST/LEVELS…` → HOST and the levels after it; nil for a topic outside PREFIX or
  /// without a level after HOST.
  static func split(_ topic: String, prefix: String) -> (host: String, levels: [String])? {
    guard topic.hasPrefix(prefix + "/") else { return nil }
    let rest = topic.dropFirst(prefix.count + 1)
    let levels = rest.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
    guard levels.count >= 2, !levels[0].isEmpty else { return nil }
    return (levels[0], Array(levels.dropFirst()))
  }
}

/// `capture fleet`'s options: `--mqtt URL`, the TLS files and the password file, as listen takes
/// them (docs/fleet.md §6); checked as usage (ESKT_INVALIDPARAMETER).
public enum FleetControllerOptions {
  public static func make(_ options: any FrontEndOptions, log: FrontEndLog) throws(CaptureError)
    -> any FleetControl
  {
    func usage(_ message: String) -> CaptureError { CaptureError(.invalidParameter, message) }
    guard let text = options.value("mqtt") else { throw usage("capture fleet needs --mqtt URL") }
    let url: BrokerURL
    do { url = try BrokerURL.parse(text) } catch { throw usage(error.message) }
    let caFile = options.value("mqtt-ca")
    let certFile = options.value("mqtt-cert")
    let keyFile = options.value("mqtt-key")
    let passwordFile = options.value("mqtt-password-file")
    let check = FleetSettings(
      url: url, hostID: "check", caFile: caFile, certFile: certFile, keyFile: keyFile,
      password: passwordFile == nil ? nil : "")
    do { try check.validate() } catch { throw usage(error.message) }
    var random = SystemRandomNumberGenerator()
    let clientID = "capture-fleet-\(String(random.next() as UInt64, radix: 36))"
    let warn = log.warn
    return FleetController(
      url: url,
      endpoint: { () throws(CaptureError) -> MQTTEndpoint in
        let password = try PasswordFile.password(passwordFile, warn: warn)
        return MQTTEndpoint(
          host: url.host, port: url.port,
          tls: url.tls ? .init(caFile: caFile, certFile: certFile, keyFile: keyFile) : nil,
          username: url.username, password: password, clientID: clientID)
      }, clientID: clientID, warn: warn)
  }
}
