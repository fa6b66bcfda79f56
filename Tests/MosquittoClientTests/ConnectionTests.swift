// MQTTConnection against a real broker (Debian's mosquitto on a free loopback port, started and
// stopped by each test). Assertions are on what was reported and in which order, never on how long
// something took; deadlines are generous because the machine is shared.

import Foundation
import Testing

@testable import MosquittoClient

#if canImport(Glibc)
  import Glibc
#endif

@Suite(.serialized, .enabled(if: brokerInstalled, "needs Debian's mosquitto (/usr/sbin/mosquitto)"))
struct ConnectionTests {
  @Test func publishBeforeConnectingQueuesNothing() async throws {
    try await withBroker { broker, _, _ in
      let recorder = Recorder()
      let connection = try MQTTConnection(endpoint: endpoint(broker), will: nil, delegate: recorder)
      #expect(connection.publish(MQTTMessage(topic: "t/a", payload: [1], qos: 1, retain: false)) == nil)
      await connection.stop(final: nil)
      #expect(recorder.all.isEmpty)
    }
  }

  @Test func eachQoS1PublishIsAcknowledgedByItsMessageID() async throws {
    try await withBroker { broker, _, _ in
      let (watcherConnection, watcherEvents) = try await watcher(
        broker, filter: "acks/#", markerTopic: "acks/marker")
      let recorder = Recorder()
      let connection = try MQTTConnection(endpoint: endpoint(broker), will: nil, delegate: recorder)
      connection.start()
      try await recorder.wait("connected") { $0 == [.connected] }
      var ids: [Int32] = []
      for n in 0..<50 {
        let id = connection.publish(
          MQTTMessage(topic: "acks/\(n % 3)", payload: bytes("event \(n)"), qos: 1, retain: false))
        try #require(id != nil)
        ids.append(id!)
      }
      #expect(Set(ids).count == 50)
      try await recorder.wait("50 acknowledgements") { events in
        events.filter { if case .acknowledged = $0 { true } else { false } }.count == 50
      }
      #expect(recorder.acknowledgedIDs.sorted() == ids.sorted())
      // Each one arrived, in the order published.
      try await watcherEvents.wait("50 deliveries") { events in
        events.filter { if case .received(let m) = $0 { m.topic != "acks/marker" } else { false } }.count
          == 50
      }
      let delivered = watcherEvents.receivedMessages.filter { $0.topic != "acks/marker" }
      #expect(delivered.map { String(decoding: $0.payload, as: UTF8.self) } == (0..<50).map { "event \($0)" })
      #expect(delivered.map(\.topic) == (0..<50).map { "acks/\($0 % 3)" })
      await connection.stop(final: nil)
      await watcherConnection.stop(final: nil)
      #expect(recorder.all.last == .disconnected(nil, willRetry: false))
      #expect(recorder.all.filter { if case .disconnected = $0 { true } else { false } }.count == 1)
    }
  }

  @Test func aRetainedMessageReachesALateSubscriber() async throws {
    try await withBroker { broker, _, _ in
      let recorder = Recorder()
      let connection = try MQTTConnection(endpoint: endpoint(broker), will: nil, delegate: recorder)
      connection.start()
      try await recorder.wait("connected") { $0 == [.connected] }
      let id = try #require(
        connection.publish(
          MQTTMessage(
            topic: "fleet/h1/status", payload: bytes("{\"state\":\"online\"}"), qos: 1, retain: true)))
      try await recorder.wait("the acknowledgement") { $0.contains(.acknowledged(id)) }
      // mosquitto_sub connects only now: it gets the retained message, flagged retained (%r = 1).
      let (status, output) = try await Child.run(
        "/usr/bin/mosquitto_sub",
        [
          "-h", "127.0.0.1", "-p", "\(broker.port)", "-t", "fleet/h1/status", "-C", "1", "-W", "20", "-F",
          "%r %t %p",
        ])
      #expect(status == 0)
      #expect(output == "1 fleet/h1/status {\"state\":\"online\"}\n")
      await connection.stop(final: nil)
    }
  }

  @Test func messagesOnASubscribedTopicAreReceived() async throws {
    try await withBroker { broker, _, _ in
      let recorder = Recorder()
      let connection = try MQTTConnection(endpoint: endpoint(broker), will: nil, delegate: recorder)
      recorder.onConnected.withLock { [connection] in
        $0 = { connection.subscribe("fleet/h1/commands", qos: 1) }
      }
      connection.start()
      try await recorder.wait("connected") { $0 == [.connected] }
      // The subscription is active once our own message on the topic comes back.
      _ = try #require(
        connection.publish(
          MQTTMessage(topic: "fleet/h1/commands", payload: bytes("self"), qos: 1, retain: false)))
      try await recorder.wait("our own message") { events in
        events.contains { if case .received(let m) = $0 { m.payload == bytes("self") } else { false } }
      }
      try await Child.check(
        "/usr/bin/mosquitto_pub",
        [
          "-h", "127.0.0.1", "-p", "\(broker.port)", "-q", "1", "-t", "fleet/h1/commands", "-m",
          "{\"id\":\"1\"}",
        ])
      try await recorder.wait("the command") { events in
        events.contains {
          if case .received(let m) = $0 { m.payload == bytes("{\"id\":\"1\"}") } else { false }
        }
      }
      let command = recorder.receivedMessages.last!
      #expect(
        command
          == MQTTMessage(topic: "fleet/h1/commands", payload: bytes("{\"id\":\"1\"}"), qos: 1, retain: false))
      // A topic not subscribed to is not received.
      try await Child.check(
        "/usr/bin/mosquitto_pub",
        ["-h", "127.0.0.1", "-p", "\(broker.port)", "-q", "1", "-t", "other", "-m", "x"])
      await connection.stop(final: nil)
      #expect(!recorder.receivedMessages.contains { $0.topic == "other" })
    }
  }

  @Test func theBrokerPublishesTheWillWhenTheConnectionIsCutWithoutDisconnect() async throws {
    try await withBroker { broker, _, directory in
      let (watcherConnection, watcherEvents) = try await watcher(
        broker, filter: "fleet/h1/status", markerTopic: "fleet/h1/status")
      // A relay between the client and the broker, killed with SIGKILL: the broker sees the TCP
      // connection close with no DISCONNECT, as after `kill -9` of capture or a host losing power.
      let relayPort = try freePort()
      let script = "\(directory)/relay.py"
      try relayScript.write(toFile: script, atomically: true, encoding: .utf8)
      let relay = try Child.spawn("/usr/bin/python3", [script, "\(relayPort)", "\(broker.port)"])
      try await waitUntilAccepting(relayPort)
      let recorder = Recorder()
      var settings = endpoint(broker, id: "h1")
      settings.port = relayPort
      let will = MQTTMessage(
        topic: "fleet/h1/status", payload: bytes("{\"state\":\"offline\"}"), qos: 1, retain: true)
      let connection = try MQTTConnection(endpoint: settings, will: will, delegate: recorder)
      connection.start()
      try await recorder.wait("connected") { $0 == [.connected] }
      kill(relay, SIGKILL)
      _ = await Child.reap(relay)
      try await watcherEvents.wait("the Will") { events in
        events.contains { if case .received(let m) = $0 { m.payload == will.payload } else { false } }
      }
      try await recorder.wait("the lost connection") { $0.count >= 2 }
      guard case .disconnected(.unreachable(let message), willRetry: true) = recorder.all[1] else {
        Issue.record("expected a lost connection that is retried, got \(recorder.all)")
        return
      }
      #expect(message.contains("MQTT broker 127.0.0.1:\(relayPort)"))
      // The Will is retained: a late subscriber sees it.
      let (_, output) = try await Child.run(
        "/usr/bin/mosquitto_sub",
        [
          "-h", "127.0.0.1", "-p", "\(broker.port)", "-t", "fleet/h1/status", "-C", "1", "-W", "20", "-F",
          "%r %p",
        ])
      #expect(output == "1 {\"state\":\"offline\"}\n")
      await connection.stop(final: nil)
      await watcherConnection.stop(final: nil)
    }
  }

  @Test func aCleanStopPublishesTheFinalMessageAndNotTheWill() async throws {
    try await withBroker { broker, _, _ in
      let (watcherConnection, watcherEvents) = try await watcher(
        broker, filter: "fleet/h1/status", markerTopic: "fleet/h1/status")
      let recorder = Recorder()
      let will = MQTTMessage(topic: "fleet/h1/status", payload: bytes("will"), qos: 1, retain: true)
      let connection = try MQTTConnection(
        endpoint: endpoint(broker, id: "h1"), will: will, delegate: recorder)
      connection.start()
      try await recorder.wait("connected") { $0 == [.connected] }
      await connection.stop(
        final: MQTTMessage(topic: "fleet/h1/status", payload: bytes("final"), qos: 1, retain: true))
      #expect(recorder.all == [.connected, .disconnected(nil, willRetry: false)])
      #expect(connection.core.loopEnded)
      // A marker after the stop: the watcher sees the final message, then the marker, no Will between.
      try await Child.check(
        "/usr/bin/mosquitto_pub",
        ["-h", "127.0.0.1", "-p", "\(broker.port)", "-q", "1", "-t", "fleet/h1/status", "-m", "marker"])
      try await watcherEvents.wait("the marker") { events in
        events.contains { if case .received(let m) = $0 { m.payload == bytes("marker") } else { false } }
      }
      #expect(
        watcherEvents.receivedMessages.map { String(decoding: $0.payload, as: UTF8.self) } == [
          "ready", "final", "marker",
        ])
      // What stays retained is the final message.
      let (_, output) = try await Child.run(
        "/usr/bin/mosquitto_sub",
        [
          "-h", "127.0.0.1", "-p", "\(broker.port)", "-t", "fleet/h1/status", "-C", "1", "-W", "20", "-F",
          "%r %p",
        ])
      #expect(output == "1 final\n")
      await watcherConnection.stop(final: nil)
    }
  }

  @Test func aRestartedBrokerIsReconnectedTo() async throws {
    try await withBroker { broker, _, _ in
      let recorder = Recorder()
      let connection = try MQTTConnection(endpoint: endpoint(broker), will: nil, delegate: recorder)
      connection.start()
      try await recorder.wait("connected") { $0 == [.connected] }
      await broker.stop()
      try await recorder.wait("the lost connection") { $0.count >= 2 }
      try await broker.start()
      try await recorder.wait("the second connection") { $0.last == .connected }
      let events = recorder.all
      #expect(events.first == .connected)
      #expect(events.last == .connected)
      let between = events.dropFirst().dropLast()
      #expect(!between.isEmpty)
      for event in between {
        guard case .disconnected(.unreachable, willRetry: true) = event else {
          Issue.record("expected only retried disconnections between the connections, got \(events)")
          break
        }
      }
      // The new connection works: publish and acknowledgement.
      let id = try #require(connection.publish(MQTTMessage(topic: "t", payload: [1], qos: 1, retain: false)))
      try await recorder.wait("the acknowledgement") { $0.contains(.acknowledged(id)) }
      await connection.stop(final: nil)
    }
  }

  @Test func aWrongPasswordIsReportedOnceAndNotRetried() async throws {
    try await withBroker(passwords: ["scanner": "right-secret"]) { broker, _, _ in
      let recorder = Recorder()
      var settings = endpoint(broker)
      settings.username = "scanner"
      settings.password = "wrong-secret"
      let connection = try MQTTConnection(endpoint: settings, will: nil, delegate: recorder)
      connection.start()
      try await waitForLoopEnd(connection)
      let events = recorder.all
      #expect(events.count == 1)
      guard case .disconnected(.notAuthorized(let message), willRetry: false) = events.first else {
        Issue.record("expected a refusal that is not retried, got \(events)")
        return
      }
      #expect(
        message
          == "the MQTT broker 127.0.0.1:\(broker.port) refused the user name or password for user \"scanner\" (CONNACK 5: not authorized)"
      )
      #expect(!message.contains("secret"))
      await connection.stop(final: nil)
      #expect(recorder.all.count == 1)

      // The right password connects.
      let good = Recorder()
      settings.password = "right-secret"
      let connected = try MQTTConnection(endpoint: settings, will: nil, delegate: good)
      connected.start()
      try await good.wait("connected") { $0 == [.connected] }
      await connected.stop(final: nil)
    }
  }

  @Test func tlsWithTheTestCAAndAPasswordWorks() async throws {
    try await withBroker(passwords: ["scanner": "pw"], tls: true) { broker, certificates, _ in
      let recorder = Recorder()
      let settings = MQTTEndpoint(
        host: "127.0.0.1", port: broker.tlsPort,
        tls: .init(caFile: certificates!.caFile, certFile: nil, keyFile: nil), username: "scanner",
        password: "pw",
        clientID: "tls-client", keepAlive: 10)
      let connection = try MQTTConnection(endpoint: settings, will: nil, delegate: recorder)
      connection.start()
      try await recorder.wait("connected") { $0 == [.connected] }
      let id = try #require(connection.publish(MQTTMessage(topic: "t", payload: [1], qos: 1, retain: false)))
      try await recorder.wait("the acknowledgement") { $0.contains(.acknowledged(id)) }
      await connection.stop(final: nil)
      #expect(recorder.all == [.connected, .acknowledged(id), .disconnected(nil, willRetry: false)])
    }
  }

  @Test func tlsWithAnotherCAFailsAndIsNotRetried() async throws {
    try await withBroker(tls: true) { broker, _, directory in
      let other = try await Certificates.make(in: directory, name: "other")
      let recorder = Recorder()
      let settings = MQTTEndpoint(
        host: "127.0.0.1", port: broker.tlsPort,
        tls: .init(caFile: other.caFile, certFile: nil, keyFile: nil),
        clientID: "tls-client", keepAlive: 10)
      let connection = try MQTTConnection(endpoint: settings, will: nil, delegate: recorder)
      connection.start()
      try await waitForLoopEnd(connection)
      let events = recorder.all
      #expect(events.count == 1)
      guard case .disconnected(.tls(let message), willRetry: false) = events.first else {
        Issue.record("expected a TLS failure that is not retried, got \(events)")
        return
      }
      #expect(message.hasPrefix("TLS with the MQTT broker 127.0.0.1:\(broker.tlsPort) failed: "))
      #expect(message.contains("certificate verify failed"))
      await connection.stop(final: nil)
    }
  }

  @Test func aMissingCAFileIsASettingsErrorBeforeConnecting() throws {
    let settings = MQTTEndpoint(
      host: "127.0.0.1", port: 8883, tls: .init(caFile: "/nonexistent/ca.pem", certFile: nil, keyFile: nil),
      clientID: "c")
    #expect(
      throws: MQTTError.invalidConfiguration(
        "cannot read the MQTT CA file /nonexistent/ca.pem: No such file or directory")
    ) {
      try MQTTConnection(endpoint: settings, will: nil, delegate: Recorder())
    }
  }
}

/// A TCP relay: accepts on 127.0.0.1:ARGV1 and copies bytes both ways to 127.0.0.1:ARGV2.
let relayScript = """
  import socket, sys, threading
  listen_port, target_port = int(sys.argv[1]), int(sys.argv[2])
  server = socket.socket()
  server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
  server.bind(("127.0.0.1", listen_port))
  server.listen(8)
  def copy(source, sink):
      try:
          while True:
              data = source.recv(65536)
              if not data:
                  break
              sink.sendall(data)
      except OSError:
          pass
      try:
          sink.shutdown(socket.SHUT_WR)
      except OSError:
          pass
  while True:
      client, _ = server.accept()
      try:
          upstream = socket.create_connection(("127.0.0.1", target_port))
      except OSError:
          client.close()
          continue
      threading.Thread(target=copy, args=(client, upstream), daemon=True).start()
      threading.Thread(target=copy, args=(upstream, client), daemon=True).start()

  """
