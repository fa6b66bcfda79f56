// What MQTTConnection queues and when: nothing while disconnected, at most `outstandingLimit`
// unacknowledged messages, and a message left unacknowledged by a lost connection sent again on the
// next one under its first message id.

import Foundation
import Testing

@testable import MosquittoClient

#if canImport(Glibc)
  import Glibc
#endif

@Suite(.serialized, .enabled(if: brokerInstalled, "needs Debian's mosquitto (/usr/sbin/mosquitto)"))
struct FlowTests {
  @Test func publishRefusesPastTheOutstandingLimitUntilAcknowledgementsCome() async throws {
    try await withBroker { broker, _, _ in
      let recorder = Recorder()
      let connection = try MQTTConnection(endpoint: endpoint(broker), will: nil, delegate: recorder)
      connection.start()
      try await recorder.wait("connected") { $0 == [.connected] }
      // A frozen broker acknowledges nothing.
      broker.signal(SIGSTOP)
      var ids: [Int32] = []
      for n in 0..<MQTTConnection.outstandingLimit {
        let id = connection.publish(
          MQTTMessage(topic: "t/\(n)", payload: bytes("\(n)"), qos: 1, retain: false))
        try #require(id != nil, "publish \(n) of \(MQTTConnection.outstandingLimit) was refused")
        ids.append(id!)
      }
      #expect(connection.publish(MQTTMessage(topic: "t/x", payload: [1], qos: 1, retain: false)) == nil)
      broker.signal(SIGCONT)
      let published = ids.count
      try await recorder.wait("every acknowledgement") { events in
        events.filter { if case .acknowledged = $0 { true } else { false } }.count == published
      }
      #expect(recorder.acknowledgedIDs.sorted() == ids.sorted())
      let next = try #require(
        connection.publish(MQTTMessage(topic: "t/y", payload: [2], qos: 1, retain: false)))
      try await recorder.wait("the next acknowledgement") { $0.contains(.acknowledged(next)) }
      await connection.stop(final: nil)
    }
  }

  @Test func anUnacknowledgedMessageIsSentAgainAfterReconnectingUnderItsFirstID() async throws {
    try await withBroker { broker, _, directory in
      let relayPort = try freePort()
      let script = "\(directory)/relay.py"
      try relayScript.write(toFile: script, atomically: true, encoding: .utf8)
      var relay = try Child.spawn("/usr/bin/python3", [script, "\(relayPort)", "\(broker.port)"])
      try await waitUntilAccepting(relayPort)
      let recorder = Recorder()
      var settings = endpoint(broker)
      settings.port = relayPort
      let connection = try MQTTConnection(endpoint: settings, will: nil, delegate: recorder)
      connection.start()
      try await recorder.wait("connected") { $0 == [.connected] }
      broker.signal(SIGSTOP)
      let id = try #require(
        connection.publish(MQTTMessage(topic: "t/a", payload: bytes("kept"), qos: 1, retain: false)))
      kill(relay, SIGKILL)
      _ = await Child.reap(relay)
      try await recorder.wait("the lost connection") { $0.count >= 2 }
      #expect(recorder.all[1] != .acknowledged(id))
      // Disconnected: nothing is queued.
      #expect(connection.publish(MQTTMessage(topic: "t/b", payload: [1], qos: 1, retain: false)) == nil)
      relay = try Child.spawn("/usr/bin/python3", [script, "\(relayPort)", "\(broker.port)"])
      try await waitUntilAccepting(relayPort)
      broker.signal(SIGCONT)
      try await recorder.wait("the acknowledgement after reconnecting") { $0.contains(.acknowledged(id)) }
      let events = recorder.all
      let second = try #require(events.dropFirst().firstIndex(of: .connected))
      #expect(events.firstIndex(of: .acknowledged(id))! > second)
      #expect(events.filter { $0 == .acknowledged(id) }.count == 1)
      await connection.stop(final: nil)
      kill(relay, SIGKILL)
      _ = await Child.reap(relay)
    }
  }

  @Test func settingsThatCannotWorkAreRefusedBeforeConnecting() throws {
    func refusal(_ settings: MQTTEndpoint, will: MQTTMessage? = nil) -> MQTTError? {
      do {
        _ = try MQTTConnection(endpoint: settings, will: will, delegate: Recorder())
        return nil
      } catch {
        return error
      }
    }
    let base = MQTTEndpoint(host: "127.0.0.1", port: 1883, clientID: "c")
    var noUser = base
    noUser.password = "hunter2"
    #expect(
      refusal(noUser) == .invalidConfiguration("an MQTT password needs a user name (mqtt://USER@HOST/…)"))
    var badHost = base
    badHost.host = "bad host"
    #expect(
      refusal(badHost)
        == .invalidConfiguration("the MQTT broker host \"bad host\" is not a host name or address"))
    var shortKeepAlive = base
    shortKeepAlive.keepAlive = 1
    #expect(
      refusal(shortKeepAlive)
        == .invalidConfiguration("the MQTT keep-alive must be 5 to 65535 seconds, not 1"))
    var certOnly = base
    certOnly.tls = .init(caFile: nil, certFile: "/etc/hostname", keyFile: nil)
    #expect(
      refusal(certOnly)
        == .invalidConfiguration("an MQTT client certificate needs its key, and a key its certificate"))
    var noKey = base
    noKey.tls = .init(caFile: nil, certFile: "/etc/hostname", keyFile: "/nonexistent/key.pem")
    #expect(
      refusal(noKey)
        == .invalidConfiguration(
          "cannot read the MQTT client key /nonexistent/key.pem: No such file or directory"))
    #expect(
      refusal(base, will: MQTTMessage(topic: "a/#", payload: [], qos: 1, retain: true))
        == .invalidConfiguration("the MQTT Last Will topic \"a/#\" is not a topic one can publish to"))
    #expect(refusal(base) == nil)
  }
}
