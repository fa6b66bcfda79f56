// A remembered BLE device that is away is watched for (a discovery filtered to its address) and
// reconnected as soon as bluetoothd hears it, not when the reconnect backoff runs out; nothing is
// discovered while it is connected. Against the project's bluetoothd model (Tests/Rigs).

import Foundation
import Testing

private let d600 = "00:11:22:7E:F6:19"
private let adapter = "/org/bluez/hci0"

private func number(_ value: JSONValue?) -> Double? {
  if case .number(let text)? = value { return Double(text) }
  return nil
}

/// The sleep after the k-th failed attempt in a row (CaptureCore's Backoff: 0.25 s doubling to 5 s).
private func backoffStep(afterFailures k: Int) -> Double {
  k == 0 ? 0 : min(0.25 * pow(2, Double(k - 1)), 5)
}

@Suite("BLE presence: reconnect on sight (rig)", .serialized)
struct BLEPresenceTests {
  /// `listen ADDR`, and `listen` without DEVICE over the remembered device (its supervisor opens the
  /// driver, whose reconnect does the watching).
  @Test(
    "listen watches for an absent D600 with a discovery filtered to it, connects when it advertises, then stops discovering",
    arguments: [[d600], []])
  func reconnectOnSight(device: [String]) async throws {
    try await withRig { rig, sandbox in
      let dev = BlueZRig.devicePath(d600)
      try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
      let connected = try await sandbox.capture(["connect", d600])
      #expect(connected.status == 0, "\(connected)")
      async let listening = sandbox.capture(["--json", "listen"] + device + ["--count", "1"], timeLimit: 40)
      try await waitForBringUp(rig, d600)
      // Nothing is missing: no discovery (service mode's scout may finish the window it began while
      // the device was not open yet, at most 5 s).
      var idle: JSONValue?
      for _ in 0..<80 {
        idle = try parseJSON(try await rig.ctl("GetDiscovery", adapter))
        if idle?["Sessions"]?.int == 0 { break }
        try await Task.sleep(for: .milliseconds(100))
      }
      #expect(
        idle?["Sessions"]?.int == 0, "a discovery while the device is connected: \(String(describing: idle))")

      try await rig.ctl("ClearWrites", dev)
      try await rig.ctl("SetInRange", dev, "false")
      // Away: after its first failed attempt listen watches for the device (Pattern = its address).
      var watching: JSONValue?
      for _ in 0..<50 {
        let state = try parseJSON(try await rig.ctl("GetDiscovery", adapter))
        if state["Patterns"]?.array?.contains(where: { $0.string == d600 }) == true {
          watching = state
          break
        }
        try await Task.sleep(for: .milliseconds(100))
      }
      #expect(
        watching?["Discovering"] == .bool(true),
        "no discovery filtered to \(d600): \(String(describing: watching))")

      // Long enough for the backoff to reach its 4 s step (after the attempt at about 4.2 s): a client
      // that only slept would not try again until about 8.3 s.
      try await Task.sleep(for: .milliseconds(5500))
      let back = try #require(number(try parseJSON(try await rig.ctl("GetDiscovery", adapter))["Now"]))
      try await rig.ctl("SetInRange", dev, "true")
      try await waitForBringUp(rig, d600)

      let calls = try #require(try parseJSON(try await rig.ctl("GetConnectCalls", dev)).array).compactMap(
        number)
      let failed = calls.filter { $0 < back }
      let next = try #require(calls.first { $0 >= back }, "no Connect after the device came back: \(calls)")
      let last = try #require(failed.last, "no failed attempt while away: \(calls)")
      // The rig fails an absent device's Connect after ConnectFailDelay (0.1 s).
      let dueByBackoff = last + 0.1 + backoffStep(afterFailures: failed.count)
      #expect(dueByBackoff - back > 1, "the outage left no backoff wait to beat: \(calls), back at \(back)")
      #expect(
        next < dueByBackoff - 0.5,
        "Connect at \(next) came by the backoff (due \(dueByBackoff)), not on sight")
      #expect(next - back < 1.5, "Connect \(next - back) s after the device came back")

      // Connected again: the watch is over.
      var after: JSONValue?
      for _ in 0..<30 {
        after = try parseJSON(try await rig.ctl("GetDiscovery", adapter))
        if after?["Sessions"]?.int == 0 { break }
        try await Task.sleep(for: .milliseconds(100))
      }
      #expect(
        after?["Sessions"]?.int == 0, "still discovering after the reconnect: \(String(describing: after))")

      try await scanText(rig, d600, "4F", "after the outage")
      let outcome = try await listening
      #expect(outcome.status == 0, "\(outcome)")
      let events = outcome.outLines.compactMap { try? parseJSON($0) }
      #expect(
        events.compactMap { $0["event"]?.string } == [
          "deviceArrival", "deviceRemoval", "deviceArrival", "decodedData", "deviceRemoval",
        ])
      #expect(events.first { $0["event"]?.string == "decodedData" }?["text"]?.string == "after the outage")
    }
  }
}
