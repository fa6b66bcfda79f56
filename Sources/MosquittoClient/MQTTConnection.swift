import CMosquitto
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// One client connection to an MQTT broker, over Debian's libmosquitto 2.0.
///
/// Choices, and why (the fleet front end spools every event and republishes everything the broker has
/// not acknowledged on every `connected()`):
/// - MQTT 3.1.1 (MOSQ_OPT_PROTOCOL_VERSION = MQTT_PROTOCOL_V311): every broker a fleet runs speaks it
///   (mosquitto, EMQX, HiveMQ, VerneMQ, and the cloud brokers that do not speak 5), and it has all
///   this transport needs: QoS 1, retained messages, the Last Will, CONNACK refusal codes.
/// - A clean session (mosquitto_new(…, clean_session: true, …)): the spool, not the broker, is the
///   source of truth for what we publish, so no broker-side session state is needed for it; and a
///   persistent session would make the broker queue the commands sent to an offline host and deliver
///   them in a burst when it returns, maybe hours later — a requester gets no reply from an offline
///   host instead, and retries with the same request id. Subscriptions are therefore made again by
///   the caller in every `connected()`.
/// - Nothing is queued while disconnected: `publish` returns nil unless a CONNACK was accepted and the
///   connection is up (libmosquitto itself would queue a QoS 1 message while disconnected and send it
///   after the next CONNACK, a second copy of what the spool republishes). A message `publish`
///   accepted stays in libmosquitto's queue until its PUBACK, across reconnections: libmosquitto sends
///   it again after the next CONNACK (with DUP set, as the MQTT 3.1.1 specification §4.4 requires
///   of an unacknowledged PUBLISH) and its `acknowledged` then carries the message id `publish`
///   returned. A caller that republishes its spool on `connected()` may thus get two
///   acknowledgements for one entry (the old and the new message id), and the broker may deliver
///   it twice; QoS 1 allows that and consumers deduplicate on the event's id.
/// - At most `outstandingLimit` messages await their acknowledgement at once; past it `publish`
///   returns nil and the caller publishes more as `acknowledged` arrives. This bounds libmosquitto's
///   queue (memory, and the duplicates a reconnection can cause) and keeps message ids unique:
///   libmosquitto numbers messages 1…65535 cyclically and silently replaces a queued message whose
///   id comes round again.
/// - The network loop is a thread of this connection's own running mosquitto_connect /
///   mosquitto_reconnect and mosquitto_loop, not mosquitto_loop_start's: mosquitto_connect_async
///   resolves the host name on the calling thread (it would block the caller's), and
///   mosquitto_loop_forever retries a failed reconnection silently, without a callback (a TLS
///   failure or a refused password would never be reported), while it ends for good on a DNS
///   failure of an established connection. Reconnection waits 0.25 s, doubling to 5 s, reset by an
///   accepted CONNACK.
/// - Refusals retrying cannot fix end the loop (`willRetry: false`): a bad user name or password
///   (CONNACK 4/5), a rejected protocol version or client id (CONNACK 1/2), and TLS failures (the
///   broker's certificate does not verify against the CA or does not name the host, or the client
///   certificate or key is unusable). Everything else is retried.
public final class MQTTConnection: Sendable {
  /// How many published messages may await their acknowledgement at once (see above).
  public static let outstandingLimit = 256

  let core: Core

  /// Checks the settings and prepares the client (credentials, TLS, the Last Will, set before any
  /// connection); connects only on `start`. Throws `.invalidConfiguration` for settings that cannot
  /// work (an unreadable CA, certificate or key file, an empty host, a password without a user name)
  /// and `.library` when libmosquitto cannot make a client. No message names the password.
  public init(endpoint: MQTTEndpoint, will: MQTTMessage?, delegate: any MQTTConnectionDelegate)
    throws(MQTTError)
  {
    core = try Core(endpoint: endpoint, will: will, delegate: delegate)
  }

  deinit { core.abandon() }

  /// Starts the network thread: it connects, and reconnects after a failure with backoff. Returns at
  /// once; a second call does nothing.
  public func start() { core.start() }

  /// Queues `message` for sending and returns its message id (`acknowledged(id)` follows the
  /// broker's PUBACK for QoS 1, PUBCOMP for QoS 2, and the hand-over to the network for QoS 0), or nil
  /// when it was not queued: not connected, `outstandingLimit` reached, stopping, a QoS outside
  /// 0…2, or a topic or payload libmosquitto refuses (a topic with `+` or `#`, empty, not UTF-8).
  /// Non-blocking; safe from any thread, delegate callbacks included.
  public func publish(_ message: MQTTMessage) -> Int32? { core.publish(message) }

  /// Subscribes to `topic` (wildcards allowed) on the current connection; does nothing when not
  /// connected. The session is clean: call it again in every `connected()`.
  public func subscribe(_ topic: String, qos: Int) { core.subscribe(topic, qos: qos) }

  /// Ends the connection: if connected and `final` is given, publishes it, and waits (at most 2 s) for
  /// its acknowledgement and those of every message still outstanding; then a clean DISCONNECT (the
  /// broker does not publish the Last Will) and the end of the network thread (waited for at most
  /// 5 s: a connection attempt blocked in the kernel finishes on its own and frees the client then).
  /// Reports `disconnected(nil, willRetry: false)` when a live connection ended this way. Blocks no
  /// thread of the caller's.
  public func stop(final: MQTTMessage?) async { await core.stop(final: final) }
}
