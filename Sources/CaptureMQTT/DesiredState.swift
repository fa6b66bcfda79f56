import CaptureContract
import CaptureCore
import MosquittoClient
import Synchronization

/// The desired state of one host (docs/fleet.md §9.4): the retained `PREFIX/HOST/desired` that
/// `capture fleet apply` publishes, `{"version":…,"profile":{…}[,"device":SELECTOR]}`, applied with
/// the command line's own `set DEVICE --from -` (which reads each property first and writes only
/// what differs, so applying again writes nothing), and its outcome published retained on
/// `PREFIX/HOST/applied`. It is applied when it arrives (the broker sends the retained one on every
/// connection, the session being clean) and again when a device arrives, one run at a time; a host
/// without `--mqtt-commands` (no runner) answers that it refuses, so the controller is not left
/// waiting.
final class DesiredState: Sendable {
  /// A profile is at most 1 MiB (`set --from`'s bound); the rest of the document is a few bytes.
  static let maximumSize = (1 << 20) + (64 << 10)

  /// Why a desired document cannot be applied, with its version when it had one.
  struct Problem: Error, Sendable {
    var version: String?
    var error: CaptureError
  }

  struct Desired: Sendable {
    var version: String
    var profile: JSON
    var device: String?
  }

  private let topics: Topics
  private let run: RemoteCommandRunner?
  private let devices: @Sendable () -> [String]
  private let publish: @Sendable (MQTTMessage) -> Void
  private let warn: @Sendable (String) -> Void
  private struct State {
    var desired: Desired?
    var running = false
    var again = false
    var stopped = false
  }
  private let state = Mutex(State())

  init(
    topics: Topics, run: RemoteCommandRunner?, devices: @escaping @Sendable () -> [String],
    publish: @escaping @Sendable (MQTTMessage) -> Void, warn: @escaping @Sendable (String) -> Void
  ) {
    self.topics = topics
    self.run = run
    self.devices = devices
    self.publish = publish
    self.warn = warn
  }

  /// The desired document, or why it cannot be applied (with its version when it had one).
  static func parse(_ bytes: [UInt8]) -> Result<Desired, Problem> {
    guard let value = try? JSONParser.parse(bytes, maximumSize: maximumSize),
      case .object(let members) = value
    else {
      return .failure(
        Problem(version: nil, error: CaptureError(.invalidFormat, "the desired state is not a JSON object")))
    }
    guard case .string(let version)? = members["version"], !version.isEmpty, version.utf8.count <= 128 else {
      return .failure(
        Problem(
          version: nil, error: CaptureError(.invalidFormat, "the desired state has no \"version\" string")))
    }
    guard case .object? = members["profile"], let profile = members["profile"] else {
      return .failure(
        Problem(
          version: version, error: CaptureError(.invalidFormat, "the desired state has no \"profile\" object")
        ))
    }
    var device: String?
    switch members["device"] {
    case nil, .null?: device = nil
    case .string(let d)?: device = d
    default:
      return .failure(
        Problem(version: version, error: CaptureError(.invalidFormat, "\"device\" must be a string")))
    }
    for key in members.keys where !["version", "profile", "device"].contains(key) {
      return .failure(
        Problem(
          version: version, error: CaptureError(.invalidFormat, "unknown key \"\(key)\" in the desired state")
        ))
    }
    return .success(Desired(version: version, profile: profile, device: device))
  }

  /// A message on the desired topic (empty: the topic was cleared, nothing to apply).
  func received(_ payload: [UInt8]) {
    guard !payload.isEmpty else {
      state.withLock { $0.desired = nil }
      return
    }
    switch Self.parse(payload) {
    case .failure(let problem):
      warn("MQTT desired state ignored: \(problem.error.message)")
      if let version = problem.version {
        report(version: version, exit: ExitStatus.of(problem.error.code), error: problem.error, devices: nil)
      }
    case .success(let desired):
      state.withLock { $0.desired = desired }
      schedule()
    }
  }

  /// A device arrived: the desired state is applied again (to it among the others).
  func deviceArrived() {
    guard state.withLock({ $0.desired != nil }) else { return }
    schedule()
  }

  func stop() { state.withLock { $0.stopped = true } }

  /// One run at a time; a change during a run runs once more after it.
  private func schedule() {
    let start = state.withLock { s -> Bool in
      if s.stopped { return false }
      if s.running {
        s.again = true
        return false
      }
      s.running = true
      return true
    }
    guard start else { return }
    Task {
      while true {
        let desired = state.withLock { s -> Desired? in
          s.again = false
          return s.stopped ? nil : s.desired
        }
        if let desired { await apply(desired) }
        let more = state.withLock { s -> Bool in
          if s.again && !s.stopped { return true }
          s.running = false
          return false
        }
        if !more { return }
      }
    }
  }

  private func apply(_ desired: Desired) async {
    guard let run else {
      report(
        version: desired.version, exit: ExitStatus.of(.commandDenied),
        error: CaptureError(
          .commandDenied, "this host does not take remote changes: it runs without --mqtt-commands"),
        devices: nil)
      return
    }
    let targets = desired.device.map { [$0] } ?? devices()
    // No device open to apply it to (the host started before its scanner, or has none): not applied.
    // A report of exit 0 would show the host converged; it is applied again when a device arrives.
    guard !targets.isEmpty else {
      report(
        version: desired.version, exit: ExitStatus.of(.notFound),
        error: CaptureError(
          .notFound, "no device is open to apply the profile to; it is applied when one arrives"),
        devices: [])
      return
    }
    var results: [JSON] = []
    var first: Int32 = 0
    for target in targets {
      let (exit, documents) = await run(["set", target, "--from", "-"], desired.profile)
      if exit != 0 && first == 0 { first = exit }
      results.append(Self.deviceResult(target, exit: exit, documents: documents))
    }
    report(version: desired.version, exit: first, error: nil, devices: results)
  }

  /// One device's outcome from `set --from --json`'s document: the properties changed, unchanged
  /// and failed (with their error), and the command's error when it failed as a whole.
  static func deviceResult(_ id: String, exit: Int32, documents: [JSON]) -> JSON {
    var changed: [JSON] = []
    var unchanged: [JSON] = []
    var failed: [JSON] = []
    var members: [String: JSON] = ["device": .string(id), "exit": .int(exit)]
    for case .object(let document) in documents {
      if case .array(let rows)? = document["results"] {
        for case .object(let row) in rows {
          guard case .string(let property)? = row["property"], case .string(let status)? = row["status"]
          else {
            continue
          }
          switch status {
          case "changed": changed.append(.string(property))
          case "unchanged": unchanged.append(.string(property))
          default: failed.append(.object(["property": .string(property), "error": row["error"] ?? .null]))
          }
        }
      }
      if let error = document["error"] { members["error"] = error }
    }
    members["changed"] = .array(changed)
    members["unchanged"] = .array(unchanged)
    members["failed"] = .array(failed)
    return .object(members)
  }

  private func report(version: String, exit: Int32, error: CaptureError?, devices: [JSON]?) {
    var members: [String: JSON] = [
      "version": .string(version), "host": .string(topics.host), "exit": .int(exit),
      "time": .string(Timestamp.now().iso8601),
    ]
    if let devices { members["devices"] = .array(devices) }
    if let error { members["error"] = Render.errorObject(error) }
    publish(
      MQTTMessage(
        topic: topics.applied, payload: Array(JSON.object(members).serialized.utf8), qos: 1, retain: true))
  }
}
