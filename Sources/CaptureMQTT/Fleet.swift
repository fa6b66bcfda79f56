import CaptureContract
import CaptureCore
import MosquittoClient
import Synchronization

/// The fleet front end of one `listen` or `serve` (docs/fleet.md): a lane subscriber of the engine
/// whose events go through the spool to `PREFIX/HOST/events/DEVICE/EVENT`, the retained status and
/// devices, and the remote commands. It is the transport's delegate; the transport is handed over
/// with `connect(link:)` once made (it needs its delegate first).
public final class Fleet: MQTTConnectionDelegate, Sendable {
  /// What the front end is given by whoever starts it. The payloads are CaptureContract's (`Render`),
  /// byte for byte the `--json` objects; nothing is lent by another front end.
  public struct Hooks: Sendable {
    /// Runs one remote command (nil: no remote commands).
    public var run: CommandService.Runner?
    public var warn: @Sendable (String) -> Void
    /// A refusal retrying cannot fix (the broker refused the password): the front end stops.
    public var fatal: @Sendable (CaptureError) -> Void

    public init(
      run: CommandService.Runner?, warn: @escaping @Sendable (String) -> Void,
      fatal: @escaping @Sendable (CaptureError) -> Void
    ) {
      self.run = run
      self.warn = warn
      self.fatal = fatal
    }
  }

  /// What became of one event (the scanner's verdict with `--confirm-delivery`).
  public enum Delivery: Sendable, Equatable {
    /// Spooled (and durable, or acknowledged, as `--confirm-delivery` asked).
    case safe
    /// Not safe: the spool refused it (full) or the publisher stopped first.
    case refused(CaptureError)
  }

  public let settings: FleetSettings
  public let topics: Topics
  public let publisher: Publisher
  private let relay = LinkRelay()
  /// The host's own messages (status, devices, replies, applied reports) the transport had no room for.
  private let outbox: ControlOutbox
  private let hooks: Hooks
  private let commands: CommandService?
  private let devices = Mutex<[String: DeviceInfo]>([:])
  private let since = Timestamp.now()
  private let outage = Mutex<Bool>(false)
  /// The ids of the devices open now, for the desired state (which applies to all of them).
  private let openIDs = OpenDeviceIDs()
  /// `PREFIX/HOST/desired` and `PREFIX/HOST/applied` (docs/fleet.md §9.4).
  private let desiredState: DesiredState

  /// Opens (or recovers) the spool under `stateDirectory`.
  public init(settings: FleetSettings, stateDirectory: FilePath, hooks: Hooks) throws(CaptureError) {
    self.settings = settings
    self.topics = settings.topics
    self.hooks = hooks
    let spool = try SpoolFiles(
      stateDirectory: stateDirectory, hostID: settings.hostID, maximum: settings.spoolMax, warn: hooks.warn)
    if spool.unacknowledgedCount > 0 {
      hooks.warn("MQTT spool: \(spool.unacknowledgedCount) events from before wait for the broker")
    }
    publisher = Publisher(spool: spool, link: relay, warn: hooks.warn)
    let outbox = ControlOutbox(link: relay, warn: hooks.warn)
    self.outbox = outbox
    if settings.commands != .off, let run = hooks.run {
      commands = CommandService(
        topics: settings.topics, allowed: CommandAllowList.allowed(settings.commands),
        limits: settings.commandLimits, path: spool.directory + "/replies.json", runner: run,
        reply: { topic, bytes in
          outbox.send(MQTTMessage(topic: topic, payload: bytes, qos: 1, retain: false))
        },
        warn: hooks.warn)
    } else {
      commands = nil
    }
    let openIDs = self.openIDs
    desiredState = DesiredState(
      topics: settings.topics, run: settings.commands != .off ? hooks.run : nil, devices: { openIDs.ids },
      publish: { outbox.send($0) }, warn: hooks.warn)
  }

  /// The Last Will: the broker publishes it (retained) when the connection ends without a DISCONNECT.
  public var will: MQTTMessage { statusMessage(online: false) }

  /// Starts the spool's thread and hands over the transport (which then connects).
  public func connect(link: any MQTTLink) throws(CaptureError) {
    relay.set(link)
    try publisher.start()
  }

  /// The engine lane's handler: every event spooled (the disk paces the devices). With
  /// `--confirm-delivery`, a decoded code returns once it is durable (spool) or acknowledged (broker).
  public func take(_ event: Event) async -> Delivery {
    switch event.payload {
    case .deviceArrival:
      updateDevices { $0[event.device.id] = event.device }
      desiredState.deviceArrived()
    case .deviceRemoval: updateDevices { $0.removeValue(forKey: event.device.id) }
    default: break
    }
    let object = Render.event(event)
    let host = settings.hostID
    let isCode = if case .decodedData = event.payload { true } else { false }
    let confirm = isCode ? settings.confirmDelivery : nil
    let outcome = await publisher.append(
      topic: topics.event(device: event.device.id, kind: event.kind.rawValue),
      waitUntilDurable: confirm != nil
    ) { eventID in Self.payload(object, host: host, eventID: eventID) }
    switch outcome {
    case .refused(let error): return .refused(error)
    case .queued: return .safe
    case .spooled(let seq, _):
      if confirm == .broker, !(await publisher.delivered(seq)) {
        return .refused(CaptureError(.cancel, "capture stopped before the broker acknowledged the code"))
      }
      return .safe
    }
  }

  /// The published payload: the `--json` event object (`Render.event`) plus `host` and `eventId`.
  public static func payload(_ object: JSON, host: String, eventID: String) -> [UInt8] {
    var members: [String: JSON] = [:]
    if case .object(let m) = object { members = m }
    // One copy of the event's members, made with room for the two added (no rehash on growth).
    members.reserveCapacity(members.count + 2)
    members["host"] = .string(host)
    members["eventId"] = .string(eventID)
    var out: [UInt8] = []
    out.reserveCapacity(384)
    JSON.object(members).write(to: &out)
    return out
  }

  /// A clean stop: the spool written and saved (PUBACKs awaited up to `grace`), then the caller stops
  /// the transport with `offline` as its last message.
  public func stop(grace: Duration = .seconds(2)) async {
    // Remote commands still running are cut first: none may hold the stop (SIGTERM always ends capture).
    commands?.stop()
    desiredState.stop()
    await publisher.stop(grace: grace)
  }

  public var offline: MQTTMessage { statusMessage(online: false) }

  // MARK: - MQTTConnectionDelegate (the transport's thread; each returns at once)

  public func connected() {
    let wasDown = outage.withLock { down in
      defer { down = false }
      return down
    }
    if wasDown { hooks.warn("MQTT broker \(settings.url.host):\(settings.url.port) reachable again") }
    // What waited for room goes first, then this connection's status: all before the spool's records
    // (published again from the first unacknowledged one), which would take every slot of a backlog.
    outbox.flush()
    outbox.send(statusMessage(online: true))
    publishDevices()
    if commands != nil { relay.subscribe(topics.commands, qos: 1) }
    // Always, --mqtt-commands or not: a host that does not apply says so on its applied topic.
    relay.subscribe(topics.desired, qos: 1)
    publisher.linkConnected()
  }

  public func disconnected(_ error: MQTTError?, willRetry: Bool) {
    publisher.linkDisconnected()
    guard let error else { return }
    if !willRetry {
      hooks.fatal(Self.refusal(error, settings))
      return
    }
    // One warning per outage, not one per attempt.
    let first = outage.withLock { down in
      defer { down = true }
      return !down
    }
    if first {
      hooks.warn(
        "MQTT broker \(settings.url.host):\(settings.url.port): \(error.description); retrying, events are spooled"
      )
    }
  }

  public func acknowledged(_ messageID: Int32) {
    // A slot is free: the outbox takes it before the spool refills it (a backlog would take them all).
    outbox.flush()
    publisher.acknowledged(messageID)
  }

  public func received(_ message: MQTTMessage) {
    if message.topic == topics.desired {
      desiredState.received(message.payload)
      return
    }
    guard let commands, message.topic == topics.commands else { return }
    let payload = message.payload
    Task { await commands.handle(payload) }
  }

  /// A refusal as the command's error: a refused password or client is COMMANDDENIED (-37, exit 37:
  /// the broker denied the connection; docs/fleet.md §6), a TLS problem or a bad setting
  /// INVALIDCONFIGURATION (-24), anything else UNABLETOCOMPLETEOPERATION (-97).
  public static func refusal(_ error: MQTTError, _ settings: FleetSettings) -> CaptureError {
    let broker = "MQTT broker \(settings.url.host):\(settings.url.port)"
    switch error {
    case .notAuthorized(let m):
      return CaptureError(.commandDenied, "\(m); check the URL's user and --mqtt-password-file")
    case .refused(let m): return CaptureError(.commandDenied, m)
    case .tls(let m): return CaptureError(.invalidConfiguration, "\(broker): TLS: \(m)")
    case .invalidConfiguration(let m): return CaptureError(.invalidConfiguration, "\(broker): \(m)")
    case .unreachable(let m), .library(let m):
      return CaptureError(.unableToCompleteOperation, "\(broker): \(m)")
    }
  }

  // MARK: - Retained state

  private func statusMessage(online: Bool) -> MQTTMessage {
    let json: JSON =
      online
      ? .object([
        "state": .string("online"), "host": .string(settings.hostID),
        "version": .string(CaptureVersion.string),
        "since": .string(since.iso8601),
      ])
      : .object(["state": .string("offline")])
    return MQTTMessage(topic: topics.status, payload: Array(json.serialized.utf8), qos: 1, retain: true)
  }

  private func updateDevices(_ change: (inout [String: DeviceInfo]) -> Void) {
    let ids = devices.withLock { d in
      change(&d)
      return d.keys.sorted()
    }
    openIDs.ids = ids
    publishDevices()
  }

  /// An open device on the retained devices topic: the `--json` device object and `"state":"connected"`
  /// (docs/fleet.md).
  static func device(_ info: DeviceInfo) -> JSON {
    guard case .object(var members) = Render.device(info) else { return Render.device(info) }
    members["state"] = .string("connected")
    return .object(members)
  }

  private func publishDevices() {
    let open = devices.withLock { $0.values.sorted { $0.id < $1.id } }
    let json = JSON.object(["devices": .array(open.map(Self.device))])
    outbox.send(
      MQTTMessage(topic: topics.devices, payload: Array(json.serialized.utf8), qos: 1, retain: true))
  }
}

/// The ids of the open devices, readable from the desired state's runs.
final class OpenDeviceIDs: Sendable {
  private let value = Mutex<[String]>([])
  var ids: [String] {
    get { value.withLock { $0 } }
    set { value.withLock { $0 = newValue } }
  }
}

/// The host's own messages — its status, devices, remote command replies and applied reports — that
/// the transport could not take when they were made: it was not connected, or its 256 unacknowledged
/// messages (MQTTConnection.outstandingLimit) were in flight, which is what a spool draining a backlog
/// after an outage does (docs/fleet.md §4). Dropped, a reply never came and an applied report was
/// never seen (the host stayed "pending" until its next connection). They wait here, in order, and
/// go out as soon as there is room: on each connection and each PUBACK, before the spool takes the
/// slot. A retained topic keeps only its newest message (the broker keeps no other); at most
/// `maximumBytes` wait, the oldest dropped past that with a warning (replies are at most 1 MiB each).
/// The lock is held while publishing, so two threads never reorder the queue; the transport calls
/// its delegate outside its own lock (Sources/MosquittoClient/Core.swift), so the order of the two
/// locks is always this one, then the transport's.
final class ControlOutbox: Sendable {
  static let maximumBytes = 8 << 20
  private struct State {
    var queue: [MQTTMessage] = []
    var bytes = 0
  }
  private let state = Mutex(State())
  private let link: any MQTTLink
  private let warn: @Sendable (String) -> Void

  init(link: any MQTTLink, warn: @escaping @Sendable (String) -> Void) {
    self.link = link
    self.warn = warn
  }

  var waiting: Int { state.withLock { $0.queue.count } }

  /// Published now when nothing waits and the transport takes it; queued otherwise.
  func send(_ message: MQTTMessage) {
    let dropped = state.withLock { s -> Int in
      if s.queue.isEmpty, link.publish(message) != nil { return 0 }
      if message.retain, let old = s.queue.firstIndex(where: { $0.retain && $0.topic == message.topic }) {
        s.bytes -= s.queue[old].payload.count
        s.queue.remove(at: old)
      }
      s.queue.append(message)
      s.bytes += message.payload.count
      var dropped = 0
      while s.bytes > Self.maximumBytes, s.queue.count > 1 {
        s.bytes -= s.queue.removeFirst().payload.count
        dropped += 1
      }
      return dropped
    }
    if dropped > 0 {
      warn("MQTT: \(dropped) messages waiting for the broker dropped (more than 8 MiB waited)")
    }
  }

  /// As many waiting messages as the transport takes now, in order.
  func flush() {
    state.withLock { s in
      var sent = 0
      while sent < s.queue.count, link.publish(s.queue[sent]) != nil {
        s.bytes -= s.queue[sent].payload.count
        sent += 1
      }
      if sent > 0 { s.queue.removeFirst(sent) }
    }
  }
}

/// The transport, once it exists (it is made after its delegate, the fleet).
final class LinkRelay: MQTTLink {
  private let link = Mutex<(any MQTTLink)?>(nil)
  func set(_ l: any MQTTLink) { link.withLock { $0 = l } }
  func publish(_ message: MQTTMessage) -> Int32? { link.withLock { $0 }?.publish(message) }
  func subscribe(_ topic: String, qos: Int) { link.withLock { $0 }?.subscribe(topic, qos: qos) }
}
