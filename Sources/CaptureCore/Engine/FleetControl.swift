/// `capture fleet` (docs/fleet.md §9): the controller's side of the broker as the command line sees
/// it. The controller is one more client of the broker, not a server; the composition root makes
/// it from the `--mqtt` options (CaptureMQTT's `FleetController`, over the same transport as
/// `listen --mqtt`), so the command line imports neither CaptureMQTT nor the transport
/// (docs/architecture.md §2). The command line selects hosts, reads payloads and renders.
public protocol FleetControl: Sendable {
  /// The retained messages the broker holds on `PREFIX/+/KIND` for each of `kinds` (`status`,
  /// `devices`, `desired`, `applied`), once the broker's retained burst is over (docs/fleet.md §9.1).
  /// Connects first if needed. Throws ESKT_REQUESTTIMEDOUT when `deadline` comes first, and the
  /// refusals `listen --mqtt` ends with (docs/fleet.md §6).
  func retained(_ kinds: [String], until deadline: ContinuousClock.Instant) async throws(CaptureError)
    -> [FleetMessage]

  /// Subscribes to `filters` (topic filters under `PREFIX/`, e.g. `+/events/#`) and hands every
  /// message that arrives to `deliver` (on the transport's thread: it must return at once).
  /// Returns once the broker has the subscriptions (the same marker as `retained`).
  func subscribe(
    _ filters: [String], until deadline: ContinuousClock.Instant,
    deliver: @escaping @Sendable (FleetMessage) -> Void
  ) async throws(CaptureError)

  /// Publishes `payload` on `PREFIX/HOST/LEVELS…` with QoS 1 and returns once the broker
  /// acknowledged it (PUBACK).
  func publish(
    host: String, levels: [String], payload: [UInt8], retain: Bool, until deadline: ContinuousClock.Instant
  ) async throws(CaptureError)

  /// The topic prefix (PREFIX), for messages.
  var prefix: String { get }

  /// A clean DISCONNECT.
  func close() async
}

/// One message of a host's topic: `PREFIX/HOST/LEVELS…`.
public struct FleetMessage: Sendable, Equatable {
  public var host: String
  /// The topic levels after HOST (`["status"]`, `["replies","r-1"]`, `["events","socketcam","decodedData"]`).
  public var levels: [String]
  public var payload: [UInt8]
  public var retained: Bool

  public init(host: String, levels: [String], payload: [UInt8], retained: Bool) {
    self.host = host
    self.levels = levels
    self.payload = payload
    self.retained = retained
  }
}
