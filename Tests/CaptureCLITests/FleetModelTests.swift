import CaptureCore
import Testing

@testable import CaptureCLI

/// `capture fleet`'s host selection, retained-state reading and eventId deduplication
/// (docs/fleet.md §9).
@Suite struct FleetModelTests {
  @Test func aGlobSelectsTheKnownHostsItMatchesAndNamedHostsAreAddedKnownOrNot() throws {
    let known = ["till-1", "till-2", "office"]
    #expect(try FleetSelection(glob: nil, names: []).select(from: known, prefix: "acme") == known.sorted())
    #expect(
      try FleetSelection(glob: "till-*", names: []).select(from: known, prefix: "acme") == [
        "till-1", "till-2",
      ])
    #expect(
      try FleetSelection(glob: "till-[2]", names: ["new-1"]).select(from: known, prefix: "acme") == [
        "new-1", "till-2",
      ])
    #expect(try FleetSelection(glob: nil, names: ["ghost"]).select(from: known, prefix: "acme") == ["ghost"])
  }

  @Test func aGlobMatchingNoHostIsNotFoundWithOneLine() {
    #expect {
      _ = try FleetSelection(glob: "nowhere-*", names: []).select(from: ["till-1"], prefix: "acme")
    } throws: { error in
      guard let error = error as? CaptureError else { return false }
      return error.code == .notFound
        && error.message == "no host under acme matches --hosts 'nowhere-*' (1 hosts known)"
    }
  }

  @Test func watchMatchesHostsThatAppearLater() {
    #expect(FleetSelection(glob: "till-*", names: []).matches("till-9"))
    #expect(!FleetSelection(glob: "till-*", names: []).matches("office"))
    #expect(FleetSelection(glob: nil, names: ["office"]).matches("office"))
    #expect(FleetSelection(glob: nil, names: []).matches("anything"))
  }

  @Test func hostIDsAreCheckedAsTheHostsWriteThem() {
    #expect(FleetSelection.problem("till-3.store_1") == nil)
    #expect(FleetSelection.problem("") != nil)
    #expect(FleetSelection.problem("a/b") != nil)
    #expect(FleetSelection.problem("+") != nil)
    #expect(FleetSelection.problem("..") != nil)
    #expect(FleetSelection.problem(String(repeating: "a", count: 65)) != nil)
  }

  @Test func freshIDsDifferAndNeedNoEscaping() {
    let a = FleetSelection.freshID("fleet")
    let b = FleetSelection.freshID("fleet")
    #expect(a != b)
    #expect(a.hasPrefix("fleet-"))
    #expect(a.utf8.count <= 128)
    #expect(!a.contains("/") && !a.contains("%") && !a.contains("+") && !a.contains("#"))
  }

  @Test func malformedRetainedMessagesAreWarnedAndSkipped() {
    func message(_ host: String, _ kind: String, _ text: String) -> FleetMessage {
      FleetMessage(host: host, levels: [kind], payload: Array(text.utf8), retained: true)
    }
    var warnings: [String] = []
    let state = FleetState(
      [
        message(
          "till-1", "status",
          #"{"host":"till-1","since":"2026-12-01T10:00:00.000Z","state":"online","version":"1"}"#),
        message("till-1", "devices", #"{"devices":[{"id":"socketcam","typeName":"SocketCamC820"}]}"#),
        message("till-2", "status", #"{"state":"offline"}"#),
        message("bad-1", "status", "not json"),
        message("bad-2", "status", #"{"state":"sideways"}"#),
        message("bad-3", "devices", #"{"devices":3}"#),
        message("bad-4", "desired", #"{"profile":{}}"#),
        FleetMessage(host: "cleared", levels: ["status"], payload: [], retained: true),
      ], warn: { warnings.append($0) })
    #expect(state.hostIDs == ["till-1", "till-2"])
    #expect(state.hosts["till-1"]?.state == "online")
    #expect(state.hosts["till-1"]?.since == "2026-12-01T10:00:00.000Z")
    #expect(
      state.hosts["till-1"]?.devices.map { $0.map(FleetState.deviceLine) } == ["socketcam (SocketCamC820)"])
    #expect(state.hosts["till-2"]?.state == "offline")
    #expect(state.hosts["till-2"]?.since == nil)
    #expect(warnings.count == 4)
    #expect(warnings[0] == "fleet: skipped the retained bad-1/status: not a JSON object")
  }

  /// A reply's or report's exit comes from the network: only 0–255 is a host's exit status; anything
  /// else is ESKT_INVALIDFORMAT (85), a failure, and never negated (Int32.min trapped, -5 exited 0).
  @Test func anExitOutside0To255IsInvalidFormatNeverNegated() {
    #expect(FleetState.exitStatus(.number(0)) == 0)
    #expect(FleetState.exitStatus(.number(37)) == 37)
    #expect(FleetState.exitStatus(.number(255)) == 255)
    for forged: JSON in [
      .number(-2_147_483_648), .number(Int64.min), .number(-5), .number(256), .literal("1.5"), .string("0"),
      .null,
    ] {
      #expect(FleetState.exitStatus(forged) == 85)
    }
    #expect(FleetState.exitStatus(nil) == 85)
    #expect(FleetState.exit(["exit": .number(-2_147_483_648)]) == 85)
    #expect(
      FleetState.appliedLines(
        "h", ["devices": .array([.object(["device": .string("d"), "exit": .number(-5)])])])[0][2] == "85")
  }

  @Test func eventIDsSplitFromTheRightSinceAHostIDMayHoldDashes() {
    #expect(EventDeduplicator.split("till-3-mx5cbng7axj-3")?.stream == "till-3-mx5cbng7axj")
    #expect(EventDeduplicator.split("till-3-mx5cbng7axj-3")?.seq == 3)
    #expect(EventDeduplicator.split("nodash") == nil)
    #expect(EventDeduplicator.split("a-b-notanumber") == nil)
    #expect(EventDeduplicator.split("onlyone-3") == nil)
  }

  @Test func eachEventIDIsNewOnceAndOldCopiesBelowTheWindowAreDropped() {
    var d = EventDeduplicator()
    let r1 = d.isNew("h-e-1")
    #expect(r1)
    let r2 = d.isNew("h-e-1")
    #expect(!r2)
    let r3 = d.isNew("h-e-3")
    #expect(r3)
    // Out of order inside the window: new once.
    let r4 = d.isNew("h-e-2")
    #expect(r4)
    let r5 = d.isNew("h-e-2")
    #expect(!r5)
    // Another epoch (the host's spool opened again) is a stream of its own.
    let r6 = d.isNew("h-f-1")
    #expect(r6)
    // Far ahead: everything more than a window below is taken as seen.
    let r7 = d.isNew("h-e-\(3 + EventDeduplicator.window + 10)")
    #expect(r7)
    let r8 = d.isNew("h-e-5")
    #expect(!r8)
    // Ids of another shape are remembered as they are.
    let r9 = d.isNew("odd")
    #expect(r9)
    let r10 = d.isNew("odd")
    #expect(!r10)
  }

  @Test func memoryStaysBoundedUnderManyEpochs() {
    var d = EventDeduplicator()
    for n in 0..<(EventDeduplicator.maximumStreams + 100) { _ = d.isNew("h-epoch\(n)-1") }
    // The most recent is remembered; the oldest streams were forgotten to stay in the bound.
    let r11 = d.isNew("h-epoch\(EventDeduplicator.maximumStreams + 99)-1")
    #expect(!r11)
  }
}
