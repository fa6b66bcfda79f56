import CaptureCore
import Testing

@testable import CaptureMQTT

/// The host's side of `fleet apply` (docs/fleet.md §9.4): the desired document and the per-device
/// report.
@Suite struct DesiredStateTests {
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
