import CaptureCore
import Glibc
import MosquittoClient
import Synchronization
import TestSupport
import Testing

@testable import CaptureMQTT

/// A transport that records what is published and hands out message ids; `up` false makes publish
/// return nil, as a disconnected MQTTConnection does.
final class RecordingLink: MQTTLink {
  struct Sent: Equatable {
    var mid: Int32
    var message: MQTTMessage
  }
  private let state = Mutex(
    (sent: [Sent](), next: Int32(1), up: true, subscribed: [String](), refused: 0))

  func publish(_ message: MQTTMessage) -> Int32? {
    state.withLock { s in
      guard s.up else {
        s.refused += 1
        return nil
      }
      let mid = s.next
      s.next += 1
      s.sent.append(Sent(mid: mid, message: message))
      return mid
    }
  }
  func subscribe(_ topic: String, qos: Int) { state.withLock { $0.subscribed.append(topic) } }
  var sent: [Sent] { state.withLock { $0.sent } }
  var subscribed: [String] { state.withLock { $0.subscribed } }
  /// Publishes refused while the link was down.
  var refused: Int { state.withLock { $0.refused } }
  func setUp(_ up: Bool) { state.withLock { $0.up = up } }
  func clear() { state.withLock { $0.sent.removeAll() } }
  /// The spooled events sent (QoS 1, not retained), in order.
  var events: [Sent] { sent.filter { !$0.message.retain } }
}

/// Polls `condition` (the spool's thread runs on its own) until it holds, at most 120 s (a hang guard:
/// the machine is shared); true when it did.
func eventually(_ condition: () -> Bool) async -> Bool {
  let deadline = ContinuousClock.now + .seconds(120)
  while !condition() {
    guard ContinuousClock.now < deadline else { return false }
    try? await Task.sleep(for: .milliseconds(10))
  }
  return true
}

func text(_ message: MQTTMessage) -> String { String(decoding: message.payload, as: UTF8.self) }

@Suite struct PublisherTests {
  @Test func aBurstQueuedBeforeTheThreadRunsCostsOneFsync() async throws {
    let dir = TemporaryDirectory()
    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 1000)
    let link = RecordingLink()
    let publisher = Publisher(spool: spool, link: link, warn: { _ in })
    for i in 0..<50 {
      let outcome = await publisher.append(topic: "t/\(i)", waitUntilDurable: false) { id in Array(id.utf8) }
      #expect(outcome == .queued)
    }
    try publisher.start()
    publisher.linkConnected()
    #expect(await eventually { link.events.count == 50 })
    #expect(publisher.statistics.fsyncs == 1)
    #expect(publisher.statistics.batches == 1)
    #expect(link.events.map(\.message.topic) == (0..<50).map { "t/\($0)" })
    await publisher.stop(grace: .zero)
  }

  @Test func nothingIsPublishedBeforeItIsDurableAndUnacknowledgedIsRepublishedInOrder() async throws {
    let dir = TemporaryDirectory()
    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 1000)
    let link = RecordingLink()
    let publisher = Publisher(spool: spool, link: link, warn: { _ in })
    try publisher.start()
    var ids: [String] = []
    for i in 0..<5 {
      guard
        case .spooled(let seq, let id) = await publisher.append(
          topic: "t/\(i)", waitUntilDurable: true, payload: { Array($0.utf8) })
      else {
        Issue.record("not spooled")
        return
      }
      #expect(seq == UInt64(i))
      ids.append(id)
    }
    // Not connected yet: spooled, not published. Each append above waited for its record to be durable,
    // which the spool's thread reports before its publish step; so the thread has been through the
    // publish step of every pass but the last (it took each append after the one before returned),
    // and that last pass, like the others, saw the link not connected.
    #expect(link.events.isEmpty)
    publisher.linkConnected()
    #expect(await eventually { link.events.count == 5 })
    #expect(link.events.map { text($0.message) } == ids)
    #expect(link.events.allSatisfy { $0.message.qos == 1 })
    // The broker acknowledges the first two; then the connection drops.
    publisher.acknowledged(link.events[0].mid)
    publisher.acknowledged(link.events[1].mid)
    #expect(await eventually { publisher.statistics.acknowledged == 2 })
    publisher.linkDisconnected()
    link.setUp(false)
    for i in 5..<7 {
      _ = await publisher.append(topic: "t/\(i)", waitUntilDurable: true) { Array($0.utf8) }
    }
    link.clear()
    link.setUp(true)
    publisher.linkConnected()
    // Everything unacknowledged, in order, the same ids: 2, 3, 4 again, then 5 and 6.
    #expect(await eventually { link.events.count == 5 })
    let again = link.events.map { text($0.message) }
    #expect(Array(again.prefix(3)) == Array(ids[2...]))
    #expect(link.events.map(\.message.topic) == (2..<7).map { "t/\($0)" })
    #expect(publisher.outstanding == 5)
    for sent in link.events { publisher.acknowledged(sent.mid) }
    #expect(await eventually { publisher.outstanding == 0 })
    await publisher.stop(grace: .zero)
  }

  @Test func unacknowledgedEventsAreRepublishedWithTheirIdsAfterARestart() async throws {
    let dir = TemporaryDirectory()
    var firstIDs: [String] = []
    do {
      let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 1000)
      let link = RecordingLink()
      let publisher = Publisher(spool: spool, link: link, warn: { _ in })
      try publisher.start()
      publisher.linkConnected()
      for i in 0..<3 {
        _ = await publisher.append(topic: "t/\(i)", waitUntilDurable: true) { Array($0.utf8) }
      }
      #expect(await eventually { link.events.count == 3 })
      firstIDs = link.events.map { text($0.message) }
      publisher.acknowledged(link.events[0].mid)
      #expect(await eventually { publisher.statistics.acknowledged == 1 })
      await publisher.stop(grace: .zero)
    }
    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 1000)
    let link = RecordingLink()
    let publisher = Publisher(spool: spool, link: link, warn: { _ in })
    #expect(publisher.outstanding == 2)
    try publisher.start()
    publisher.linkConnected()
    #expect(await eventually { link.events.count == 2 })
    #expect(link.events.map { text($0.message) } == Array(firstIDs[1...]))
    await publisher.stop(grace: .zero)
  }

  @Test func aFullSpoolRefusesAtOnceAndKeepsWhatItHolds() async throws {
    let dir = TemporaryDirectory()
    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 2)
    let link = RecordingLink()
    let publisher = Publisher(spool: spool, link: link, warn: { _ in })
    try publisher.start()
    for i in 0..<2 {
      guard
        case .spooled = await publisher.append(
          topic: "t/\(i)", waitUntilDurable: true, payload: { Array($0.utf8) })
      else {
        Issue.record("not spooled")
        return
      }
    }
    let third = await publisher.append(topic: "t/2", waitUntilDurable: true) { Array($0.utf8) }
    guard case .refused(let error) = third else {
      Issue.record("not refused: \(third)")
      return
    }
    #expect(error.code == .queueReseted)
    #expect(error.message.contains("--mqtt-spool-max"))
    publisher.linkConnected()
    #expect(await eventually { link.events.count == 2 })
    #expect(link.events.map(\.message.topic) == ["t/0", "t/1"])
    await publisher.stop(grace: .zero)
  }
}

@Suite struct FleetTests {
  static func fleet(_ dir: TemporaryDirectory, confirm: FleetSettings.ConfirmDelivery? = nil) throws -> Fleet
  {
    let settings = FleetSettings(
      url: try BrokerURL.parse("mqtt://b/acme"), hostID: "till-3", confirmDelivery: confirm,
      commands: .standard)
    let hooks = Fleet.Hooks(
      run: { argv, _ in (0, [.string(argv.joined(separator: " "))]) },
      warn: { _ in }, fatal: { _ in })
    return try Fleet(settings: settings, stateDirectory: dir.filePath, hooks: hooks)
  }

  static let device = DeviceInfo(id: "/dev/ttyACM0", name: "S740", type: .socketCamC820)

  @Test func statusDevicesAndEventsOnTheirTopics() async throws {
    let dir = TemporaryDirectory()
    let fleet = try Self.fleet(dir)
    let link = RecordingLink()
    try fleet.connect(link: link)
    #expect(
      fleet.will
        == MQTTMessage(
          topic: "acme/till-3/status", payload: Array(#"{"state":"offline"}"#.utf8), qos: 1,
          retain: true))
    fleet.connected()
    let status = try #require(link.sent.first { $0.message.topic == "acme/till-3/status" })
    #expect(status.message.retain)
    #expect(text(status.message).hasPrefix(#"{"host":"till-3","since":""#))
    #expect(text(status.message).contains(#""state":"online""#))
    // The desired state is subscribed to with or without --mqtt-commands (docs/fleet.md §9.4).
    #expect(link.subscribed == ["acme/till-3/commands", "acme/till-3/desired"])
    let arrival = Event(time: .now(), device: Self.device, payload: .deviceArrival)
    #expect(await fleet.take(arrival) == .safe)
    let devices = try #require(link.sent.last { $0.message.topic == "acme/till-3/devices" })
    #expect(devices.message.retain)
    // The published objects are the contract's (`Render.device`, `Render.event`), not lent by the CLI.
    #expect(
      text(devices.message)
        == #"{"devices":[{"id":"/dev/ttyACM0","name":"S740","state":"connected","type":5,"typeName":"SocketCamC820"}]}"#
    )
    #expect(await eventually { !link.events.isEmpty })
    let event = link.events[0].message
    #expect(event.topic == "acme/till-3/events/%2Fdev%2FttyACM0/deviceArrival")
    #expect(
      text(event).hasPrefix(
        #"{"device":{"id":"/dev/ttyACM0","name":"S740","type":5,"typeName":"SocketCamC820"},"event":"deviceArrival","eventId":"till-3-"#
      ))
    #expect(text(event).hasSuffix(#"-0","host":"till-3","time":""# + arrival.time.iso8601 + #""}"#))
    await fleet.stop(grace: .zero)
  }

  /// A status the transport had no room for (a spool backlog in flight, docs/fleet.md §4) waits and
  /// goes out with the next PUBACK; it was dropped, and the retained status stayed the Will's offline.
  @Test func theOnlineStatusWaitsForRoomAndGoesOutOnTheNextAcknowledgement() async throws {
    let dir = TemporaryDirectory()
    let fleet = try Self.fleet(dir)
    let link = RecordingLink()
    try fleet.connect(link: link)
    link.setUp(false)
    fleet.connected()
    #expect(link.sent.isEmpty)
    link.setUp(true)
    fleet.acknowledged(4242)
    #expect(link.sent.map(\.message.topic).prefix(2) == ["acme/till-3/status", "acme/till-3/devices"])
    #expect(text(link.sent[0].message).contains(#""state":"online""#))
    await fleet.stop(grace: .zero)
  }

  @Test func confirmDeliveryBrokerWaitsForThePuback() async throws {
    let dir = TemporaryDirectory()
    let fleet = try Self.fleet(dir, confirm: .broker)
    let link = RecordingLink()
    try fleet.connect(link: link)
    fleet.connected()
    let code = Event(
      time: .now(), device: Self.device,
      payload: .decodedData(DecodedData(dataSource: DataSource(1), bytes: Array("123".utf8))))
    // What happened, in order: the verdict must come after the PUBACK.
    let order = Mutex<[String]>([])
    let task = Task {
      let verdict = await fleet.take(code)
      order.withLock { $0.append("verdict") }
      return verdict
    }
    // Published: the spool's thread is past the point where a verdict that did not wait for the PUBACK
    // (one given when the record was durable) would have been given.
    try #require(await eventually { !link.events.isEmpty }, "the code was never published")
    order.withLock { $0.append("PUBACK") }
    fleet.acknowledged(link.events[0].mid)
    #expect(await task.value == .safe)
    #expect(order.withLock { $0 } == ["PUBACK", "verdict"], "no good beep before the PUBACK")
    await fleet.stop(grace: .zero)
  }
}

@Suite struct PublisherFlowTests {
  @Test func aPublishTheTransportDidNotQueueIsRetriedInOrder() async throws {
    let dir = TemporaryDirectory()
    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 1000)
    let link = RecordingLink()
    let publisher = Publisher(spool: spool, link: link, warn: { _ in })
    try publisher.start()
    // Connected, but the transport takes nothing (its bound reached): nothing is lost, nothing skipped.
    link.setUp(false)
    publisher.linkConnected()
    for i in 0..<3 { _ = await publisher.append(topic: "t/\(i)", waitUntilDurable: true) { Array($0.utf8) } }
    // The spool's thread has offered an event and the transport refused it.
    #expect(await eventually { link.refused > 0 })
    #expect(link.events.isEmpty)
    link.setUp(true)
    // The spool's thread looks again within its 250 ms tick.
    #expect(await eventually { link.events.count == 3 })
    #expect(link.events.map(\.message.topic) == ["t/0", "t/1", "t/2"])
    await publisher.stop(grace: .zero)
  }

  @Test func atMostTheWindowIsUnacknowledged() async throws {
    let dir = TemporaryDirectory()
    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 1000)
    let link = RecordingLink()
    let publisher = Publisher(spool: spool, link: link, window: 4, warn: { _ in })
    for i in 0..<10 {
      _ = await publisher.append(topic: "t/\(i)", waitUntilDurable: false) { Array($0.utf8) }
    }
    try publisher.start()
    publisher.linkConnected()
    #expect(await eventually { link.events.count == 4 })
    // One more event, made durable: the spool's thread takes it on its next pass, so the pass that
    // published the window has ended, and a window not kept would have published past it by then.
    _ = await publisher.append(topic: "t/10", waitUntilDurable: true) { Array($0.utf8) }
    #expect(link.events.count == 4)
    publisher.acknowledged(link.events[0].mid)
    publisher.acknowledged(link.events[1].mid)
    #expect(await eventually { link.events.count == 6 })
    #expect(link.events.map(\.message.topic) == (0..<6).map { "t/\($0)" })
    await publisher.stop(grace: .zero)
  }
}
