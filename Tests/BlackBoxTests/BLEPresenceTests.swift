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
      let watch = OutputWatch()
      async let listening = sandbox.capture(
        ["--json", "listen"] + device + ["--count", "1"], timeLimit: 300, interaction: watch.interaction)
      try await waitForBringUp(rig, d600, watch: watch)
      // Nothing is missing: no discovery (service mode's scout may finish the window it began while
      // the device was not open yet, at most 5 s).
      var idle: JSONValue?
      await waitUntil("the end of every discovery while the device is connected", every: .milliseconds(100)) {
        idle = try? parseJSON(try await rig.ctl("GetDiscovery", adapter))
        return idle?["Sessions"]?.int == 0
      }
      #expect(
        idle?["Sessions"]?.int == 0, "a discovery while the device is connected: \(String(describing: idle))")

      try await rig.ctl("ClearWrites", dev)
      let away = try #require(number(try parseJSON(try await rig.ctl("GetDiscovery", adapter))["Now"]))
      try await rig.ctl("SetInRange", dev, "false")
      // Away: after its first failed attempt listen watches for the device (Pattern = its address).
      var watching: JSONValue?
      await waitUntil("a discovery filtered to \(d600)", every: .milliseconds(100)) {
        let state = try? parseJSON(try await rig.ctl("GetDiscovery", adapter))
        guard state?["Patterns"]?.array?.contains(where: { $0.string == d600 }) == true else { return false }
        watching = state
        return true
      }
      #expect(
        watching?["Discovering"] == .bool(true),
        "no discovery filtered to \(d600): \(String(describing: watching))")

      // Away until the backoff has reached its 4 s step: five failed attempts (0.25 + 0.5 + 1 + 2 s
      // apart). Counted from the rig's Connect calls, not guessed from a clock, and the device comes
      // back right after the fifth has failed, so the backoff's next attempt is about 4 s off: a
      // client that only slept would not try again before then. Failed, not only made: a Connect in
      // flight when the device comes back succeeds (the rig decides when it ends, as a controller's
      // connection attempt does), and the reconnect would then be the backoff's, not a sighting's.
      await waitUntil(
        "5 failed Connect attempts while the device is away", seconds: 60, every: .milliseconds(50)
      ) {
        let calls = try? parseJSON(try await rig.ctl("GetConnectCalls", dev)).array?.compactMap(number)
        guard (calls ?? []).filter({ $0 > away }).count >= 5 else { return false }
        return (try? parseJSON(try await rig.ctl("GetState", dev)))?["Connecting"] == .bool(false)
      }
      let back = try #require(number(try parseJSON(try await rig.ctl("GetDiscovery", adapter))["Now"]))
      try await rig.ctl("SetInRange", dev, "true")
      try await waitForBringUp(rig, d600, watch: watch, arrivals: 2)

      let calls = try #require(try parseJSON(try await rig.ctl("GetConnectCalls", dev)).array).compactMap(
        number)
      let failed = calls.filter { $0 < back }
      #expect(
        failed.filter { $0 > away }.count == 5,
        "an attempt began between the fifth failure and the device's return: \(calls), back at \(back)")
      let next = try #require(calls.first { $0 >= back }, "no Connect after the device came back: \(calls)")
      let last = try #require(failed.last, "no failed attempt while away: \(calls)")
      // The rig fails an absent device's Connect after ConnectFailDelay (0.1 s).
      let dueByBackoff = last + 0.1 + backoffStep(afterFailures: failed.count)
      #expect(dueByBackoff - back > 1, "the outage left no backoff wait to beat: \(calls), back at \(back)")
      // On sight, not by the backoff: before the backoff's next attempt was due (a bound relative to
      // the rig's own clock, not an absolute delay a loaded machine can overrun).
      #expect(
        next < dueByBackoff - 0.5,
        "Connect at \(next) came by the backoff (due \(dueByBackoff)), not on sight")

      // Connected again: the watch is over.
      var after: JSONValue?
      await waitUntil("the end of the watch after the reconnect", every: .milliseconds(100)) {
        after = try? parseJSON(try await rig.ctl("GetDiscovery", adapter))
        return after?["Sessions"]?.int == 0
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
