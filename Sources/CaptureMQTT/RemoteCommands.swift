import CaptureCore
import FoundationEssentials
import Synchronization

/// One request on `PREFIX/HOST/commands` (docs/fleet.md §5): `{"id":"…","argv":["get","dock",
/// "battery-level"]}`, and for `set --from` the profile inline as `"profile":{…}`.
public struct CommandRequest: Sendable, Equatable {
  public var id: String
  public var argv: [String]
  public var profile: JSON?

  /// The largest request read (a profile is a few KiB; the CLI's own profile bound is larger, but a
  /// command topic is no place for bulk data).
  public static let maximumSize = 64 << 10
  /// The longest request id (it becomes a topic level).
  public static let maximumIDLength = 128

  /// Why a request cannot run: its id when it had a usable one (it gets an error reply), else nil
  /// (a warning only, nowhere to reply).
  public struct Malformed: Error, Sendable, Equatable {
    public var id: String?
    public var error: CaptureError
  }

  /// Parses a request; nothing runs unless this succeeds.
  public static func parse(_ bytes: [UInt8]) -> Result<CommandRequest, Malformed> {
    let value: AnyJSON
    do {
      value = try JSONDecoder().decode(AnyJSON.self, from: Data(bytes))
    } catch {
      return .failure(Malformed(id: nil, error: CaptureError(.invalidFormat, "the request is not JSON")))
    }
    guard case .object(let members) = value.json else {
      return .failure(
        Malformed(id: nil, error: CaptureError(.invalidFormat, "the request is not a JSON object")))
    }
    guard case .string(let id)? = members["id"], !id.isEmpty, id.utf8.count <= maximumIDLength,
      !id.utf8.contains(0)
    else {
      return .failure(
        Malformed(
          id: nil,
          error: CaptureError(.invalidFormat, "the request has no \"id\" string (1-\(maximumIDLength) bytes)")
        ))
    }
    func bad(_ message: String) -> Result<CommandRequest, Malformed> {
      .failure(Malformed(id: id, error: CaptureError(.invalidFormat, message)))
    }
    if bytes.count > maximumSize { return bad("the request is larger than \(maximumSize) bytes") }
    guard case .array(let words)? = members["argv"], !words.isEmpty else {
      return bad("\"argv\" must be a non-empty array of strings")
    }
    var argv: [String] = []
    for word in words {
      guard case .string(let text) = word else { return bad("\"argv\" must be a non-empty array of strings") }
      argv.append(text)
    }
    var profile: JSON?
    if let p = members["profile"] {
      guard case .object = p else {
        return bad("\"profile\" must be a JSON object (a profile as set --from reads)")
      }
      profile = p
    }
    for key in members.keys where !["id", "argv", "profile"].contains(key) {
      return bad("unknown key \"\(key)\" in the request")
    }
    return .success(CommandRequest(id: id, argv: argv, profile: profile))
  }
}

/// The commands a request may run.
public enum CommandAllowList {
  public static let standard: Set<String> = ["list", "get", "set", "trigger"]
  public static let all: Set<String> = standard.union(["connect", "remove"])

  public static func allowed(_ setting: FleetSettings.Commands) -> Set<String> {
    switch setting {
    case .off: []
    case .standard: standard
    case .all: all
    }
  }
}

/// Runs remote commands and answers on `PREFIX/HOST/replies/ID`. A request id seen before is answered
/// again from its first result and never run twice (the last `memory` ids are kept, in memory and in
/// `replies.json` beside the spool, so a redelivery after a restart is not run again either).
public final class CommandService: Sendable {
  /// `argv` and the inline profile → the exit status and what the command printed with `--json` (one
  /// JSON document per line).
  public typealias Runner = @Sendable ([String], JSON?) async -> (exit: Int32, output: [UInt8])

  public static let memory = 256

  private let topics: Topics
  private let allowed: Set<String>
  private let runner: Runner
  private let reply: @Sendable (String, [UInt8]) -> Void
  private let warn: @Sendable (String) -> Void
  /// Where the replies persist: the directory (opened once, checked, every file in it opened with
  /// O_NOFOLLOW) and the file's name in it.
  private let store: (directory: PrivateDirectory, name: String)?
  private struct State {
    var replies: [String: [UInt8]] = [:]
    var order: [String] = []
    var running: [String: [CheckedContinuation<[UInt8], Never>]] = [:]
    var runs = 0
  }
  private let state = Mutex(State())
  private let saving = Mutex(())

  /// `path`: where the recent replies persist (nil: memory only).
  public init(
    topics: Topics, allowed: Set<String>, path: FilePath?, runner: @escaping Runner,
    reply: @escaping @Sendable (String, [UInt8]) -> Void, warn: @escaping @Sendable (String) -> Void
  ) {
    self.topics = topics
    self.allowed = allowed
    self.runner = runner
    self.reply = reply
    self.warn = warn
    store = path.flatMap { path in Self.open(path, warn: warn) }
    guard let store else { return }
    // Read like every file capture reads at start: a regular file of at most `fileLimit` bytes, never
    // through a link, so a FIFO, /dev/zero or a huge sparse file in its place neither hangs start-up
    // nor fills memory. One that cannot be read is said, and the replies start empty.
    let bytes: [UInt8]
    do {
      guard let read = try store.directory.read(store.name, limit: Self.fileLimit) else { return }
      bytes = read
    } catch {
      warn(
        "\(CaptureError(error, "cannot read \(store.directory.path(store.name))", other: .unableReadFile).message); earlier replies are forgotten"
      )
      return
    }
    guard let saved = try? JSONDecoder().decode([SavedReply].self, from: Data(bytes)) else {
      warn("\(store.directory.path(store.name)) is damaged; earlier replies are forgotten")
      return
    }
    state.withLock { s in
      for entry in saved.suffix(Self.memory) {
        s.replies[entry.id] = Array(entry.reply.utf8)
        s.order.append(entry.id)
      }
    }
  }

  /// The most `replies.json` may hold: `memory` replies of a command's `--json` output each.
  static let fileLimit = 16 << 20

  /// The directory of `path` (it is the spool's, made before) and the name in it; nil, said, when it
  /// cannot be used.
  private static func open(_ path: FilePath, warn: @Sendable (String) -> Void) -> (PrivateDirectory, String)?
  {
    let slash = path.bytes.lastIndex(of: UInt8(ascii: "/"))
    let parent = slash.map { FilePath(bytes: path.bytes[..<$0]) } ?? "."
    let name = String(decoding: slash.map { path.bytes[($0 + 1)...] } ?? path.bytes[...], as: UTF8.self)
    do throws(CaptureError) {
      guard let directory = try PrivateDirectory.open(parent, create: false, warn: warn) else {
        warn("cannot keep the MQTT command replies: there is no \(parent)")
        return nil
      }
      return (directory, name)
    } catch {
      warn("cannot keep the MQTT command replies: \(error.message)")
      return nil
    }
  }

  private struct SavedReply: Codable {
    var id: String
    var reply: String
  }

  /// Commands actually run (tests: a duplicate id must not add one).
  public var runCount: Int { state.withLock { $0.runs } }

  /// Handles one message of the commands topic: parse, refuse or run, reply. Returns the reply sent
  /// (nil when there was nobody to reply to).
  @discardableResult
  public func handle(_ payload: [UInt8]) async -> [UInt8]? {
    let request: CommandRequest
    switch CommandRequest.parse(payload) {
    case .failure(let malformed):
      guard let id = malformed.id else {
        warn("MQTT command ignored: \(malformed.error.message)")
        return nil
      }
      let bytes = Self.errorReply(id: id, malformed.error)
      reply(topics.reply(id: id), bytes)
      return bytes
    case .success(let r): request = r
    }
    enum Step {
      case answer([UInt8])
      case wait
      case run
    }
    let step = state.withLock { s -> Step in
      if let done = s.replies[request.id] { return .answer(done) }
      if s.running[request.id] != nil { return .wait }
      s.running[request.id] = []
      return .run
    }
    let bytes: [UInt8]
    switch step {
    case .answer(let done): bytes = done
    case .wait:
      bytes = await withCheckedContinuation { (done: CheckedContinuation<[UInt8], Never>) in
        let ready = state.withLock { s -> [UInt8]? in
          if let r = s.replies[request.id] { return r }
          s.running[request.id, default: []].append(done)
          return nil
        }
        if let ready { done.resume(returning: ready) }
      }
    case .run:
      bytes = await run(request)
      let waiters = state.withLock { s in
        s.replies[request.id] = bytes
        s.order.append(request.id)
        while s.order.count > Self.memory { s.replies.removeValue(forKey: s.order.removeFirst()) }
        return s.running.removeValue(forKey: request.id) ?? []
      }
      for waiter in waiters { waiter.resume(returning: bytes) }
      if let store { await save(to: store) }
    }
    reply(topics.reply(id: request.id), bytes)
    return bytes
  }

  private func run(_ request: CommandRequest) async -> [UInt8] {
    let name = request.argv[0]
    guard allowed.contains(name) else {
      let others = allowed.sorted().joined(separator: ", ")
      let hint = CommandAllowList.all.contains(name) ? " (--mqtt-commands all allows it)" : ""
      return Self.errorReply(
        id: request.id,
        CaptureError(.commandDenied, "'\(name)' is not allowed remotely\(hint); allowed: \(others)"))
    }
    if request.profile != nil && !(name == "set" && request.argv.contains("--from")) {
      return Self.errorReply(
        id: request.id, CaptureError(.invalidParameter, "\"profile\" goes with set ... --from -"))
    }
    state.withLock { $0.runs += 1 }
    let (exit, output) = await runner(request.argv, request.profile)
    return Self.reply(id: request.id, exit: exit, document: Self.document(output))
  }

  /// What a command printed as one value: its one document, an array of several (one per line), or
  /// null when it printed nothing; a line that is not JSON is kept as a string.
  public static func document(_ output: [UInt8]) -> JSON {
    let lines = output.split(separator: UInt8(ascii: "\n")).filter { !$0.isEmpty }
    let values: [JSON] = lines.map { line in
      (try? JSONDecoder().decode(AnyJSON.self, from: Data(line)))?.json
        ?? .string(String(decoding: line, as: UTF8.self))
    }
    switch values.count {
    case 0: return .null
    case 1: return values[0]
    default: return .array(values)
    }
  }

  /// `{"id":…,"exit":…}` and the document's members (a document that is not an object goes under
  /// "output").
  public static func reply(id: String, exit: Int32, document: JSON) -> [UInt8] {
    var members: [String: JSON]
    if case .object(let m) = document {
      members = m
    } else if document == .null {
      members = [:]
    } else {
      members = ["output": document]
    }
    members["id"] = .string(id)
    members["exit"] = .int(exit)
    var out: [UInt8] = []
    JSON.object(members).write(to: &out)
    return out
  }

  /// The error reply: `{"id","exit","error":{"code","name","message"}}`, the error object every
  /// `--json` command prints.
  public static func errorReply(id: String, _ error: CaptureError) -> [UInt8] {
    let exit = error.code.isSuccess ? 0 : Int32(min(255, -Int64(error.code.rawValue)))
    return reply(
      id: id, exit: exit,
      document: .object([
        "error": .object([
          "code": .int(error.code.rawValue), "name": .string(error.code.name),
          "message": .string(error.message),
        ])
      ]))
  }

  /// Replaces `replies.json` with the replies known now. One save at a time (the temporary file beside
  /// it has one name), each writing the newest state, on the blocking executor.
  private func save(to store: (directory: PrivateDirectory, name: String)) async {
    let warn = self.warn
    await BlockingExecutor.shared.run { [self] _ in
      saving.withLock { _ in
        let saved = state.withLock { s in
          s.order.compactMap { id in s.replies[id].map { (id, String(decoding: $0, as: UTF8.self)) } }
        }
        var bytes: [UInt8] = []
        JSON.array(saved.map { .object(["id": .string($0.0), "reply": .string($0.1)]) }).write(to: &bytes)
        do throws(Errno) {
          try store.directory.replace(store.name, with: bytes, mode: 0o600, temporary: "\(store.name).tmp")
        } catch {
          warn(
            "cannot save the MQTT command replies to \(store.directory.path(store.name)): \(error.message)")
        }
      }
    }
  }
}

/// Any JSON value, decoded into CaptureCore's `JSON` (a request's profile is passed on as it came).
struct AnyJSON: Decodable {
  let json: JSON

  init(from decoder: any Decoder) throws {
    if var array = try? decoder.unkeyedContainer() {
      var items: [JSON] = []
      while !array.isAtEnd { items.append(try array.decode(AnyJSON.self).json) }
      json = .array(items)
      return
    }
    if let object = try? decoder.container(keyedBy: Key.self) {
      var members: [String: JSON] = [:]
      for key in object.allKeys {
        members[key.stringValue] = try object.decode(AnyJSON.self, forKey: key).json
      }
      json = .object(members)
      return
    }
    let single = try decoder.singleValueContainer()
    if single.decodeNil() {
      json = .null
    } else if let b = try? single.decode(Bool.self) {
      json = .bool(b)
    } else if let i = try? single.decode(Int64.self) {
      json = .number(i)
    } else if let d = try? single.decode(Double.self) {
      json = .literal(d.isFinite ? "\(d)" : "0")
    } else {
      json = .string(try single.decode(String.self))
    }
  }

  struct Key: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
  }
}
