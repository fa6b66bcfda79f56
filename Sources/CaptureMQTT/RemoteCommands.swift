import CaptureContract
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

  /// Parses a request; nothing runs unless this succeeds. One over `maximumSize` is refused before it
  /// is parsed: only its first `maximumSize` bytes are read, for the id its error reply goes to.
  public static func parse(_ bytes: [UInt8]) -> Result<CommandRequest, Malformed> {
    let tooLarge = CaptureError(.invalidFormat, "the request is larger than \(maximumSize) bytes")
    let value: JSON
    do {
      value = try JSONParser.parse(bytes, maximumSize: maximumSize)
    } catch  where error.kind == .tooLarge {
      let leading = JSONParser.leadingMembers(of: bytes, maximumSize: maximumSize)
      return .failure(Malformed(id: usableID(leading["id"]), error: tooLarge))
    } catch {
      return .failure(Malformed(id: nil, error: CaptureError(.invalidFormat, "the request is not JSON")))
    }
    guard case .object(let members) = value else {
      return .failure(
        Malformed(id: nil, error: CaptureError(.invalidFormat, "the request is not a JSON object")))
    }
    guard let id = usableID(members["id"]) else {
      return .failure(
        Malformed(
          id: nil,
          error: CaptureError(.invalidFormat, "the request has no \"id\" string (1-\(maximumIDLength) bytes)")
        ))
    }
    func bad(_ message: String) -> Result<CommandRequest, Malformed> {
      .failure(Malformed(id: id, error: CaptureError(.invalidFormat, message)))
    }
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

  /// A request id an answer can go to: a string of 1 to `maximumIDLength` bytes without NUL.
  private static func usableID(_ value: JSON?) -> String? {
    guard case .string(let id)? = value, !id.isEmpty, id.utf8.count <= maximumIDLength, !id.utf8.contains(0)
    else { return nil }
    return id
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

/// How long a remote command may take and how many run at once (docs/fleet.md §5).
public struct CommandLimits: Sendable, Equatable {
  /// 60 s: the longest a command takes when the device answers (a Classic `connect --pair` with its
  /// inquiry, `trigger --wait`'s 10 s window) with room to spare; a command still running then waits
  /// on something that will not come.
  public static let defaultDeadline: Duration = .seconds(60)
  /// Four at once: every command holds a device or a file descriptor or two and may hold a thread
  /// (docs/architecture.md §2, the blocking executor); four cover an operator's burst without letting
  /// a flood of requests take the process's descriptors.
  public static let defaultRunning = 4
  /// Sixteen more wait, in order of arrival; one past that is answered busy at once.
  public static let defaultWaiting = 16

  /// From the request's arrival to its answer, waiting for a slot included (`--mqtt-command-timeout`).
  public var deadline: Duration
  /// Commands running at once; a command that was cut keeps its slot until it has really returned.
  public var running: Int
  /// Requests waiting for a slot.
  public var waiting: Int

  public init(
    deadline: Duration = CommandLimits.defaultDeadline, running: Int = CommandLimits.defaultRunning,
    waiting: Int = CommandLimits.defaultWaiting
  ) {
    self.deadline = deadline
    self.running = max(1, running)
    self.waiting = max(0, waiting)
  }

  /// "60s", "1.5s", "250ms": the deadline as a message names it.
  public var deadlineText: String {
    let (seconds, attoseconds) = deadline.components
    let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
    if milliseconds % 1000 == 0 { return "\(milliseconds / 1000)s" }
    if milliseconds >= 1000 && milliseconds % 100 == 0 {
      return "\(milliseconds / 1000).\(milliseconds % 1000 / 100)s"
    }
    return "\(milliseconds)ms"
  }
}

/// Runs remote commands and answers on `PREFIX/HOST/replies/ID`. A request id seen before is answered
/// again from its first result and never run twice (the last `memory` ids are kept, in memory and in
/// `replies.json` beside the spool, so a redelivery after a restart is not run again either).
///
/// Every request has a deadline (`CommandLimits.deadline`, from its arrival): at most `running`
/// commands run at once and `waiting` more wait for a slot; a request past those is answered busy at
/// once (ESKT_PENDINGOPERATIONNOTCOMPLETED, not remembered: the same id may be sent again). A request
/// still waiting or running at its deadline is answered ESKT_REQUESTTIMEDOUT then (remembered only if
/// it ran), and a running one is cancelled (the runner ends what it holds); its slot is free only once it has returned, so commands
/// that ignore the cut still cannot hold more than `running` slots (and their descriptors and threads).
public final class CommandService: Sendable {
  /// `argv` and the inline profile → the exit status and what the command printed with `--json` (one
  /// JSON document per line). Cancelled when the command is cut at its deadline: it should return
  /// promptly, releasing what it holds.
  public typealias Runner = RemoteCommandRunner

  public static let memory = 256

  private let topics: Topics
  private let allowed: Set<String>
  private let limits: CommandLimits
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
    /// Commands whose runner has not returned (cut ones included).
    var active = 0
    /// Requests waiting for a slot, oldest first.
    var queue: [(token: Int, slot: FirstAnswer<Bool>)] = []
    var nextToken = 0
    /// The runs not yet returned, to cut them all when the service stops.
    var tasks: [Int: Task<Void, Never>] = [:]
    var stopped = false
  }
  private let state = Mutex(State())
  /// The saves of `replies.json`: asked for (a generation each), written up to, one writer running.
  private struct Saves {
    var requested = 0
    var written = 0
    var running = false
    var waiters: [(generation: Int, continuation: CheckedContinuation<Void, Never>)] = []
  }
  private let saves = Mutex(Saves())

  /// `path`: where the recent replies persist (nil: memory only).
  public init(
    topics: Topics, allowed: Set<String>, limits: CommandLimits = CommandLimits(), path: FilePath?,
    runner: @escaping Runner, reply: @escaping @Sendable (String, [UInt8]) -> Void,
    warn: @escaping @Sendable (String) -> Void
  ) {
    self.topics = topics
    self.allowed = allowed
    self.limits = limits
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
  /// Commands whose runner has not returned yet (tests of the bound).
  public var activeCount: Int { state.withLock { $0.active } }
  /// Requests waiting for a slot (tests).
  public var waitingCount: Int { state.withLock { $0.queue.count } }

  /// Handles one message of the commands topic: parse, refuse or run, reply. Returns the reply sent
  /// (nil when there was nobody to reply to).
  @discardableResult
  public func handle(_ payload: [UInt8]) async -> [UInt8]? {
    // The deadline counts from arrival: waiting for a slot is part of it, so every request is answered
    // within it whatever runs before it.
    let deadline = ContinuousClock.now.advanced(by: limits.deadline)
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
      let (answer, remember) = await run(request, deadline: deadline)
      bytes = answer
      let waiters = state.withLock { s in
        if remember {
          s.replies[request.id] = bytes
          s.order.append(request.id)
          while s.order.count > Self.memory { s.replies.removeValue(forKey: s.order.removeFirst()) }
        }
        return s.running.removeValue(forKey: request.id) ?? []
      }
      for waiter in waiters { waiter.resume(returning: bytes) }
      if remember, let store { await save(to: store) }
    }
    reply(topics.reply(id: request.id), bytes)
    return bytes
  }

  /// The reply, and whether it is remembered for the id (a busy answer, or one that waited for a slot
  /// until its deadline, is not: nothing ran, and the same id may be sent again).
  private func run(_ request: CommandRequest, deadline: ContinuousClock.Instant) async -> ([UInt8], Bool) {
    let name = request.argv[0]
    guard allowed.contains(name) else {
      let others = allowed.sorted().joined(separator: ", ")
      let hint = CommandAllowList.all.contains(name) ? " (--mqtt-commands all allows it)" : ""
      return (
        Self.errorReply(
          id: request.id,
          CaptureError(.commandDenied, "'\(name)' is not allowed remotely\(hint); allowed: \(others)")),
        true
      )
    }
    // Only set takes a profile; the runner checks on the parsed command that it goes with --from -.
    if request.profile != nil && name != "set" {
      return (
        Self.errorReply(
          id: request.id, CaptureError(.invalidParameter, "\"profile\" goes with set ... --from -")), true
      )
    }
    switch await admit(deadline: deadline) {
    case .busy:
      return (
        Self.errorReply(
          id: request.id,
          CaptureError(
            .pendingOperationNotCompleted,
            "\(limits.running) remote commands are running and \(limits.waiting) waiting; send it again later (with the same id)"
          )), false
      )
    case .timedOut:
      return (
        Self.errorReply(
          id: request.id,
          CaptureError(
            .requestTimedOut,
            "the command waited for a free slot for its whole deadline of \(limits.deadlineText) (--mqtt-command-timeout) and did not run"
          )), false
      )
    case .admitted: break
    }
    let answer = FirstAnswer<(exit: Int32, documents: [JSON])?>()
    let runner = self.runner
    let argv = request.argv
    let profile = request.profile
    let task = state.withLock { s -> Task<Void, Never> in
      s.runs += 1
      s.nextToken += 1
      let token = s.nextToken
      // Made under the lock, so it is listed before its own `finished` can look for it.
      let task = Task {
        let result = await runner(argv, profile)
        _ = answer.offer(result)
        self.finished(token)
      }
      s.tasks[token] = task
      if s.stopped { task.cancel() }
      return task
    }
    let result = await answer.wait(until: deadline, orElse: nil)
    guard let result else {
      // Cut: the runner is asked to end (a watching command ends as on SIGINT, blocking work sees its
      // cancellation); the slot stays taken until it has returned.
      task.cancel()
      return (
        Self.errorReply(
          id: request.id,
          CaptureError(
            .requestTimedOut,
            "the command was still running at its deadline of \(limits.deadlineText) (--mqtt-command-timeout) and was stopped"
          )), true
      )
    }
    return (Self.reply(id: request.id, exit: result.exit, document: Self.document(result.documents)), true)
  }

  private enum Admission { case admitted, busy, timedOut }

  /// A slot to run in: at once, after waiting in order (until the deadline), or busy.
  private func admit(deadline: ContinuousClock.Instant) async -> Admission {
    let slot = FirstAnswer<Bool>()
    enum Step {
      case now, busy
      case wait(Int)
    }
    let step = state.withLock { s -> Step in
      if s.stopped { return .busy }
      if s.active < limits.running {
        s.active += 1
        return .now
      }
      guard s.queue.count < limits.waiting else { return .busy }
      s.nextToken += 1
      s.queue.append((s.nextToken, slot))
      return .wait(s.nextToken)
    }
    switch step {
    case .now: return .admitted
    case .busy: return .busy
    case .wait(let token):
      let timer = Task {
        try? await Task.sleep(until: deadline, clock: .continuous)
        if slot.offer(false) { state.withLock { s in s.queue.removeAll { $0.token == token } } }
      }
      let admitted = await slot.wait()
      timer.cancel()
      return admitted ? .admitted : .timedOut
    }
  }

  /// A run returned: its slot goes to the oldest request still waiting, or is freed.
  private func finished(_ token: Int) {
    state.withLock { s in _ = s.tasks.removeValue(forKey: token) }
    while true {
      let next = state.withLock { s -> FirstAnswer<Bool>? in
        guard !s.queue.isEmpty else {
          s.active -= 1
          return nil
        }
        return s.queue.removeFirst().slot
      }
      guard let next else { return }
      // One that timed out meanwhile refuses the slot: the next one takes it.
      if next.offer(true) { return }
    }
  }

  /// The front end stops (SIGINT, SIGTERM, the end of listen): every running command is cut and no new
  /// one starts; nothing waits for them, so a command that ignores its cut cannot hold the stop.
  public func stop() {
    let (tasks, waiting) = state.withLock { s in
      s.stopped = true
      defer {
        s.tasks = [:]
        s.queue = []
      }
      return (Array(s.tasks.values), s.queue.map(\.slot))
    }
    for slot in waiting { _ = slot.offer(false) }
    for task in tasks { task.cancel() }
  }

  /// A command's documents as one value: its one document, an array of several (in the order made),
  /// or null when it made none.
  public static func document(_ values: [JSON]) -> JSON {
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
    reply(id: id, exit: ExitStatus.of(error.code), document: Render.errorDocument(error))
  }

  /// Replaces `replies.json` with the replies known now, and returns once a save that began after
  /// this call has finished. Saves are coalesced: one job on the blocking executor writes the newest
  /// state again while new replies came in meanwhile, so a burst of replies (hundreds of busy answers
  /// and refusals in a second) costs one thread and a few writes, not a thread per reply waiting for
  /// the one before.
  private func save(to store: (directory: PrivateDirectory, name: String)) async {
    let (generation, start) = saves.withLock { s -> (Int, Bool) in
      s.requested += 1
      defer { s.running = true }
      return (s.requested, !s.running)
    }
    if start {
      let warn = self.warn
      Task {
        await BlockingExecutor.shared.run { [self] _ in
          while true {
            let target = saves.withLock { $0.requested }
            write(to: store, warn: warn)
            let (done, more) = saves.withLock { s -> ([CheckedContinuation<Void, Never>], Bool) in
              s.written = target
              let done = s.waiters.filter { $0.generation <= target }.map(\.continuation)
              s.waiters.removeAll { $0.generation <= target }
              let more = s.requested > target
              if !more { s.running = false }
              return (done, more)
            }
            for continuation in done { continuation.resume() }
            if !more { return }
          }
        }
      }
    }
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let written = saves.withLock { s -> Bool in
        if s.written >= generation { return true }
        s.waiters.append((generation, continuation))
        return false
      }
      if written { continuation.resume() }
    }
  }

  /// One write of `replies.json` (the temporary file beside it has one name: one writer at a time),
  /// relative to the spool's checked directory and without following links.
  private func write(to store: (directory: PrivateDirectory, name: String), warn: @Sendable (String) -> Void)
  {
    let saved = state.withLock { s in
      s.order.compactMap { id in s.replies[id].map { (id, String(decoding: $0, as: UTF8.self)) } }
    }
    var bytes: [UInt8] = []
    JSON.array(saved.map { .object(["id": .string($0.0), "reply": .string($0.1)]) }).write(to: &bytes)
    do throws(Errno) {
      try store.directory.replace(store.name, with: bytes, mode: 0o600, temporary: "\(store.name).tmp")
    } catch {
      warn("cannot save the MQTT command replies to \(store.directory.path(store.name)): \(error.message)")
    }
  }
}

/// One value from whichever of several racers offers first (a command's result or its deadline; a
/// slot or the deadline): later offers are refused.
final class FirstAnswer<Value: Sendable>: Sendable {
  private struct State {
    var value: Value?
    var taken = false
    var waiter: CheckedContinuation<Value, Never>?
  }
  private let state = Mutex(State())

  init() {}

  /// True when `value` is the answer; false when another came first.
  func offer(_ value: Value) -> Bool {
    let waiter = state.withLock { s -> (CheckedContinuation<Value, Never>?, Bool) in
      guard !s.taken else { return (nil, false) }
      s.taken = true
      s.value = value
      defer { s.waiter = nil }
      return (s.waiter, true)
    }
    waiter.0?.resume(returning: value)
    return waiter.1
  }

  /// The answer, or `fallback` once `deadline` has passed without one (it is offered then, so an
  /// answer that comes later loses).
  func wait(until deadline: ContinuousClock.Instant, orElse fallback: Value) async -> Value {
    let timer = Task {
      try? await Task.sleep(until: deadline, clock: .continuous)
      _ = self.offer(fallback)
    }
    defer { timer.cancel() }
    return await wait()
  }

  /// The answer, once one is offered (one waiter).
  func wait() async -> Value {
    await withCheckedContinuation { (continuation: CheckedContinuation<Value, Never>) in
      let ready = state.withLock { s -> Value? in
        if s.taken { return s.value }
        s.waiter = continuation
        return nil
      }
      if let ready { continuation.resume(returning: ready) }
    }
  }
}
