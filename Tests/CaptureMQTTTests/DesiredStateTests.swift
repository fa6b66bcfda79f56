import CaptureContract
import CaptureCore
import Foundation
import MosquittoClient
import Synchronization
import Testing

@testable import CaptureMQTT

/// The host's side of `fleet apply` (docs/fleet.md §9.4): the desired document and the per-device
/// report.
@Suite struct DesiredStateTests {
  /// A host whose scanner is not open yet (it started first, or has none) must not report the
  /// profile applied: `fleet status` and `apply --wait` would count it converged. It reports 17 with
  /// no device, runs nothing, and applies the profile once a device arrives.
  @Test func noDeviceOpenIsNotFoundNotAppliedAndADeviceArrivalAppliesIt() async throws {
    let host = HostRecord()
    let desired = DesiredState(
      topics: Topics(prefix: "acme", host: "h1"),
      run: { argv, _ in
        host.runs.withLock { $0.append(argv) }
        return (0, [.object(["results": .array([])])])
      },
      devices: { host.open.withLock { $0 } },
      publish: { message in host.published.withLock { $0.append(message) } },
      warn: { _ in })
    desired.received(Array(#"{"version":"v1","profile":{"friendly-name":"Till 3"}}"#.utf8))
    let first = try await Self.report(host, count: 1)
    #expect(first["exit"] == .int(17))
    #expect(first["devices"] == .array([]))
    #expect(first["version"] == .string("v1"))
    if case .object(let error)? = first["error"] {
      #expect(
        error["message"]
          == .string("no device is open to apply the profile to; it is applied when one arrives"))
    } else {
      Issue.record("no error object: \(first)")
    }
    #expect(host.runs.withLock { $0 }.isEmpty)

    host.open.withLock { $0 = ["socketcam"] }
    desired.deviceArrived()
    let second = try await Self.report(host, count: 2)
    #expect(second["exit"] == .int(0))
    #expect(host.runs.withLock { $0 } == [["set", "socketcam", "--from", "-"]])
    #expect(host.published.withLock { $0 }.allSatisfy { $0.topic == "acme/h1/applied" && $0.retain })
  }

  /// The `count`-th report published, once it is (a hang guard of 60 s).
  static func report(_ host: HostRecord, count: Int) async throws -> [String: JSON] {
    let deadline = ContinuousClock.now + .seconds(60)
    while host.published.withLock({ $0.count }) < count && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(5))
    }
    let messages = host.published.withLock { $0 }
    let message = try #require(messages.count >= count ? messages[count - 1] : nil)
    guard case .object(let members) = try JSONParser.parse(message.payload, maximumSize: 1 << 20) else {
      throw CaptureError(.invalidFormat, "not an object")
    }
    return members
  }

  @Test func aDesiredDocumentNeedsAVersionAndAProfileObject() {
    guard
      case .success(let d) = DesiredState.parse(
        Array(#"{"version":"v-1","profile":{"properties":[]},"device":"socketcam"}"#.utf8))
    else {
      Issue.record("a good document was refused")
      return
    }
    #expect(d.version == "v-1")
    #expect(d.device == "socketcam")
    func problem(_ text: String) -> DesiredState.Problem? {
      if case .failure(let p) = DesiredState.parse(Array(text.utf8)) { return p }
      return nil
    }
    #expect(problem("nope")?.version == nil)
    #expect(problem(#"{"profile":{}}"#)?.version == nil)
    #expect(problem(#"{"version":"v","profile":[]}"#)?.version == "v")
    #expect(problem(#"{"version":"v","profile":{},"device":3}"#)?.error.code == .invalidFormat)
    #expect(
      problem(#"{"version":"v","profile":{},"extra":1}"#)?.error.message
        == "unknown key \"extra\" in the desired state")
  }

  @Test func theReportSortsSetFromResultsIntoChangedUnchangedAndFailed() {
    let document = JSON.object([
      "results": .array([
        .object(["property": .string("friendly-name"), "status": .string("changed")]),
        .object(["property": .string("data-format"), "status": .string("unchanged")]),
        .object([
          "property": .string("timers"), "status": .string("failed"),
          "error": .object(["code": .int(-15), "name": .string("ESKT_NOTSUPPORTED")]),
        ]),
      ])
    ])
    let result = DesiredState.deviceResult("dock", exit: 15, documents: [document])
    guard case .object(let m) = result else {
      Issue.record("not an object")
      return
    }
    #expect(m["changed"] == .array([.string("friendly-name")]))
    #expect(m["unchanged"] == .array([.string("data-format")]))
    #expect(m["exit"] == .int(15))
    guard case .array(let failed)? = m["failed"], case .object(let f)? = failed.first else {
      Issue.record("no failed entry")
      return
    }
    #expect(f["property"] == .string("timers"))
  }

  @Test func controllerTopicsSplitIntoHostAndLevels() {
    #expect(FleetController.split("acme/eu/till-1/replies/r-1", prefix: "acme/eu")?.host == "till-1")
    #expect(
      FleetController.split("acme/eu/till-1/replies/r-1", prefix: "acme/eu")?.levels == ["replies", "r-1"])
    #expect(FleetController.split("acme/till-1", prefix: "acme") == nil)
    #expect(FleetController.split("other/till-1/status", prefix: "acme") == nil)
  }
}

/// What a DesiredState under test did: its host's open devices, its reports and its command runs.
final class HostRecord: Sendable {
  let open = Mutex<[String]>([])
  let published = Mutex<[MQTTMessage]>([])
  let runs = Mutex<[[String]]>([])
}
