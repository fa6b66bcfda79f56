import MosquittoClient
import Synchronization
import Testing

@testable import CaptureMQTT

/// The host's own messages (status, devices, replies, applied reports) wait for room instead of being
/// dropped when the transport is down or full (Sources/CaptureMQTT/Fleet.swift, ControlOutbox).
@Suite struct ControlOutboxTests {
  func message(_ topic: String, _ text: String, retain: Bool) -> MQTTMessage {
    MQTTMessage(topic: topic, payload: Array(text.utf8), qos: 1, retain: retain)
  }

  @Test func aMessageTheTransportRefusedGoesOutOnTheNextFlushInOrder() {
    let link = RecordingLink()
    let outbox = ControlOutbox(link: link, warn: { _ in })
    link.setUp(false)
    outbox.send(message("p/h/applied", "report", retain: true))
    outbox.send(message("p/h/replies/r-1", "reply", retain: false))
    #expect(link.sent.isEmpty)
    #expect(outbox.waiting == 2)
    // Still no room: nothing lost, nothing reordered.
    outbox.flush()
    #expect(outbox.waiting == 2)
    link.setUp(true)
    // A new message while others wait goes behind them, never ahead.
    outbox.send(message("p/h/replies/r-2", "reply 2", retain: false))
    #expect(link.sent.isEmpty)
    outbox.flush()
    #expect(link.sent.map { text($0.message) } == ["report", "reply", "reply 2"])
    #expect(outbox.waiting == 0)
    // Nothing waiting: published at once.
    outbox.send(message("p/h/status", "online", retain: true))
    #expect(link.sent.map { text($0.message) }.last == "online")
  }

  @Test func aRetainedTopicKeepsOnlyItsNewestMessageWhileWaiting() {
    let link = RecordingLink()
    let outbox = ControlOutbox(link: link, warn: { _ in })
    link.setUp(false)
    outbox.send(message("p/h/applied", "v1", retain: true))
    outbox.send(message("p/h/replies/r-1", "reply", retain: false))
    outbox.send(message("p/h/applied", "v2", retain: true))
    link.setUp(true)
    outbox.flush()
    #expect(link.sent.map { text($0.message) } == ["reply", "v2"])
  }

  @Test func atMost8MiBWaitAndTheOldestGoFirstWithAWarning() {
    let link = RecordingLink()
    let warnings = WarningLog()
    let outbox = ControlOutbox(link: link, warn: { warnings.append($0) })
    link.setUp(false)
    let big = String(repeating: "x", count: 1 << 20)
    for n in 0..<10 { outbox.send(message("p/h/replies/r-\(n)", big, retain: false)) }
    #expect(outbox.waiting == 8)
    #expect(warnings.lines.count == 2)
    link.setUp(true)
    outbox.flush()
    #expect(link.sent.map(\.message.topic) == (2..<10).map { "p/h/replies/r-\($0)" })
  }
}

final class WarningLog: Sendable {
  private let state = Mutex<[String]>([])
  func append(_ line: String) { state.withLock { $0.append(line) } }
  var lines: [String] { state.withLock { $0 } }
}
