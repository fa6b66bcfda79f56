import CaptureContract
import CaptureCore

#if canImport(Glibc)
  import Glibc
#endif

/// Which hosts a `capture fleet` command is for: `--hosts GLOB` among the known ones, and every
/// `--host ID` whether known or not (docs/fleet.md §9).
struct FleetSelection: Sendable, Equatable {
  var glob: String?
  var names: [String]

  /// The commands `fleet run` sends (docs/fleet.md §5; the host decides on connect and remove).
  static let remoteCommands: Set<String> = ["list", "get", "set", "trigger", "connect", "remove"]

  /// Whether `host` is selected (watch: hosts that appear later count too).
  func matches(_ host: String) -> Bool {
    if glob == nil && names.isEmpty { return true }
    if names.contains(host) { return true }
    guard let glob else { return false }
    return fnmatch(glob, host, 0) == 0
  }

  /// The selected hosts among `known`, sorted; a GLOB that matches no known host is ESKT_NOTFOUND.
  func select(from known: [String], prefix: String) throws(CaptureError) -> [String] {
    var chosen = Set(names)
    if glob == nil && names.isEmpty { chosen = Set(known) }
    if let glob {
      let matching = known.filter { fnmatch(glob, $0, 0) == 0 }
      guard !matching.isEmpty else {
        throw CaptureError(
          .notFound, "no host under \(prefix) matches --hosts '\(glob)' (\(known.count) hosts known)")
      }
      chosen.formUnion(matching)
    }
    return chosen.sorted()
  }

  /// Why `name` cannot be a host id (docs/fleet.md §1: 1–64 bytes of letters, digits, `-`, `_`, `.`).
  static func problem(_ name: String) -> String? {
    let allowed = name.utf8.allSatisfy { b in
      (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D
        || b == 0x5F || b == 0x2E
    }
    guard !name.isEmpty, name.utf8.count <= 64, allowed, name != ".", name != ".." else {
      return "'\(name)' is not a host id (1-64 letters, digits, '-', '_' and '.')"
    }
    return nil
  }

  /// A fresh id: `WORD-MILLISECONDS-RANDOM` in base 36, unique per run (a request id, docs/fleet.md
  /// §5, at most 128 bytes and nothing a topic level must escape; a desired state's version).
  static func freshID(_ word: String) -> String {
    var random = SystemRandomNumberGenerator()
    let now = Timestamp.now().milliseconds
    return "\(word)-\(String(now, radix: 36))-\(String(random.next() as UInt32, radix: 36))"
  }
}

/// The retained state of the hosts under a prefix, read from their topics; a payload that is not
/// what docs/fleet.md says is warned about and skipped.
struct FleetState {
  struct Host {
    var state: String?
    var since: String?
    var version: String?
    var devices: [JSON]?
    var desired: [String: JSON]?
    var applied: [String: JSON]?
  }

  var hosts: [String: Host] = [:]

  /// The hosts with any retained state, sorted.
  var hostIDs: [String] { hosts.keys.sorted() }

  /// The largest retained payload read (a devices list, an applied report): far above what a host
  /// publishes, so only a forged one is refused.
  static let payloadLimit = 4 << 20

  init(_ messages: [FleetMessage], warn: (String) -> Void) {
    for message in messages where message.levels.count == 1 {
      // An empty retained payload is a cleared topic, not a host's state.
      guard !message.payload.isEmpty else { continue }
      let kind = message.levels[0]
      func skip(_ why: String) { warn("fleet: skipped the retained \(message.host)/\(kind): \(why)") }
      guard FleetSelection.problem(message.host) == nil else {
        skip("not a host id")
        continue
      }
      guard let object = Self.object(message.payload, limit: Self.payloadLimit) else {
        skip("not a JSON object")
        continue
      }
      var host = hosts[message.host] ?? Host()
      switch kind {
      case "status":
        guard case .string(let state)? = object["state"], state == "online" || state == "offline" else {
          skip("no \"state\" online or offline")
          continue
        }
        host.state = state
        if case .string(let since)? = object["since"] { host.since = since }
        if case .string(let version)? = object["version"] { host.version = version }
      case "devices":
        guard case .array(let devices)? = object["devices"] else {
          skip("no \"devices\" array")
          continue
        }
        host.devices = devices.filter { if case .object = $0 { true } else { false } }
      case "desired":
        guard case .string? = object["version"] else {
          skip("no \"version\" string")
          continue
        }
        host.desired = object
      case "applied":
        guard case .string? = object["version"] else {
          skip("no \"version\" string")
          continue
        }
        host.applied = object
      default: continue
      }
      hosts[message.host] = host
    }
  }

  /// A payload read as a JSON object with the project's bounded reader; nil when it is not one.
  static func object(_ bytes: [UInt8], limit: Int) -> [String: JSON]? {
    guard let value = try? JSONParser.parse(bytes, maximumSize: limit), case .object(let members) = value
    else { return nil }
    return members
  }

  /// `socketcam (SocketCamC820)`: a device of the devices topic in one cell.
  static func deviceLine(_ device: JSON) -> String {
    guard case .object(let d) = device, case .string(let id)? = d["id"] else { return "?" }
    var line = id
    if case .string(let type)? = d["typeName"] { line += " (\(type))" }
    if case .number(let battery)? = d["battery"] { line += " \(battery)%" }
    return line
  }

  /// An applied report's exit status (`exitStatus` of its `exit`).
  static func exit(_ report: [String: JSON]) -> Int32 { exitStatus(report["exit"]) }

  /// A host's exit status as its reply or applied report gives it, read from the network: an integer
  /// 0–255, the range of an exit status (POSIX wait keeps 8 bits) and so of every exit a capture host
  /// sends (docs/capture-sdk.md §1: the SKT codes negated, capped at 255). Anything else — no exit, a
  /// negative number, one past 255, a fraction — is no capture host's and counts as a failure,
  /// ESKT_INVALIDFORMAT (85): fail closed. Never negated as it came: `-Int32.min` traps, and a
  /// negative exit negated is a positive SKT code, a warning, which `fleet` would have exited 0 on.
  static func exitStatus(_ value: JSON?) -> Int32 {
    if case .number(let n)? = value, (0...255).contains(n) { return Int32(n) }
    return ExitStatus.of(.invalidFormat)
  }

  /// An applied report as plain rows: one per device, HOST DEVICE EXIT and the changed, unchanged
  /// and failed properties; or HOST - EXIT and the error.
  static func appliedLines(_ host: String, _ report: [String: JSON]) -> [[String]] {
    let exit = exit(report)
    guard case .array(let devices)? = report["devices"], !devices.isEmpty else {
      var why = "no device"
      if case .object(let e)? = report["error"], case .string(let m)? = e["message"] { why = m }
      return [[host, "-", "\(exit)", why]]
    }
    return devices.map { device in
      guard case .object(let d) = device else { return [host, "?", "\(exit)", ""] }
      func names(_ key: String) -> [String] {
        guard case .array(let items)? = d[key] else { return [] }
        return items.compactMap { item in
          if case .string(let s) = item { return s }
          if case .object(let o) = item, case .string(let s)? = o["property"] { return s }
          return nil
        }
      }
      var id = "?"
      if case .string(let s)? = d["device"] { id = s }
      let code = exitStatus(d["exit"])
      let changed = names("changed")
      let failed = names("failed")
      var words = changed.isEmpty ? "nothing written" : "changed: " + changed.joined(separator: ", ")
      words += "; \(names("unchanged").count) unchanged"
      if !failed.isEmpty { words += "; failed: " + failed.joined(separator: ", ") }
      if case .object(let e)? = d["error"], case .string(let m)? = e["message"], changed.isEmpty,
        failed.isEmpty
      {
        words = m
      }
      return [host, id, "\(code)", words]
    }
  }
}

/// `fleet watch`'s memory of the eventIds seen (docs/fleet.md §3, §9.3): `HOST-EPOCH-SEQ`, SEQ
/// growing within one HOST-EPOCH. Per HOST-EPOCH it keeps the highest SEQ and the SEQs seen in a
/// window below it; a SEQ below the window is taken as seen (a host republishes at most the 256 it
/// had in flight, docs/fleet.md §4, so only a copy goes back that far). At most `maximumStreams`
/// HOST-EPOCHs are kept, the least recently used forgotten first. An id of another shape is kept
/// in a bounded set of its own.
struct EventDeduplicator {
  static let window: UInt64 = 4096
  static let maximumStreams = 4096
  static let maximumOthers = 65536

  private struct Stream {
    var highest: UInt64
    var seen: Set<UInt64>
    var used: UInt64
  }
  private var streams: [String: Stream] = [:]
  private var others: Set<String> = []
  private var othersOrder: [String] = []
  private var clock: UInt64 = 0

  /// `HOST-EPOCH-SEQ` → (HOST-EPOCH, SEQ): the last `-` starts SEQ (a host id may hold `-`).
  static func split(_ id: String) -> (stream: String, seq: UInt64)? {
    guard let dash = id.lastIndex(of: "-"), let seq = UInt64(id[id.index(after: dash)...], radix: 10),
      id[..<dash].contains("-")
    else { return nil }
    return (String(id[..<dash]), seq)
  }

  /// True the first time `id` is seen.
  mutating func isNew(_ id: String) -> Bool {
    clock &+= 1
    guard let (name, seq) = Self.split(id) else {
      guard others.insert(id).inserted else { return false }
      othersOrder.append(id)
      if othersOrder.count > Self.maximumOthers { others.remove(othersOrder.removeFirst()) }
      return true
    }
    guard var stream = streams[name] else {
      if streams.count >= Self.maximumStreams, let oldest = streams.min(by: { $0.value.used < $1.value.used })
      {
        streams.removeValue(forKey: oldest.key)
      }
      streams[name] = Stream(highest: seq, seen: [seq], used: clock)
      return true
    }
    stream.used = clock
    defer { streams[name] = stream }
    if seq > stream.highest {
      stream.highest = seq
      stream.seen.insert(seq)
      let floor = seq >= Self.window ? seq - Self.window : 0
      if stream.seen.count > Int(Self.window) { stream.seen = stream.seen.filter { $0 >= floor } }
      return true
    }
    let floor = stream.highest >= Self.window ? stream.highest - Self.window : 0
    guard seq >= floor else { return false }
    return stream.seen.insert(seq).inserted
  }
}
