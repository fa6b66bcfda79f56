import CaptureContract
import CaptureCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `capture fleet hosts|run|watch|apply|status` (docs/fleet.md §9): the controller of the hosts that
/// run `listen --mqtt`. The broker connection is the composition root's (`FrontEnds.controller`,
/// CaptureMQTT); this selects hosts, reads the payloads and renders.
enum FleetCommand {
  enum Action: String { case hosts, run, watch, apply, status }

  struct Options {
    var action: Action
    var selection: FleetSelection
    var argv: [String]
    var profilePath: FilePath?
    var device: String?
    var dryRun: Bool
    var wait: Duration?
    var events: Set<EventKind>?
    var count: Int?
    var controller: any FleetControl

    init(_ parsed: ParsedArguments, _ context: Context) throws(UsageError) {
      let operands = parsed.operands
      guard let word = operands.first else {
        throw parsed.usage("missing ACTION (hosts, run, watch, apply or status)")
      }
      guard let action = Action(rawValue: word) else {
        throw parsed.usage("unknown ACTION '\(word)' (hosts, run, watch, apply or status)")
      }
      self.action = action
      let rest = Array(operands.dropFirst())
      var names: [String] = []
      for name in parsed.allValues("host") {
        if let problem = FleetSelection.problem(name) { throw parsed.usage("--host: \(problem)") }
        names.append(name)
      }
      selection = FleetSelection(glob: parsed.value("hosts"), names: names)
      argv = []
      profilePath = nil
      switch action {
      case .run:
        guard let command = rest.first else { throw parsed.usage("fleet run needs a COMMAND after --") }
        guard FleetSelection.remoteCommands.contains(command) else {
          throw parsed.usage(
            "fleet run takes \(FleetSelection.remoteCommands.sorted().joined(separator: ", ")), not '\(command)'"
          )
        }
        argv = rest
      case .apply:
        guard rest.count == 1 else {
          throw parsed.usage("fleet apply takes one PROFILE (a file, or - for stdin)")
        }
        profilePath = FilePath(rest[0])
      case .hosts, .watch, .status:
        if let extra = rest.first { throw parsed.usage("unexpected '\(extra)'") }
      }
      device = parsed.value("device")
      dryRun = parsed.flag("dry-run")
      if action != .apply {
        for name in ["device", "wait"] where parsed.value(name) != nil {
          throw parsed.usage("--\(name) works with fleet apply")
        }
        if dryRun { throw parsed.usage("--dry-run works with fleet apply") }
      }
      if action != .watch {
        for name in ["events", "count"] where parsed.value(name) != nil {
          throw parsed.usage("--\(name) works with fleet watch")
        }
      }
      wait = try parsed.value("wait").map { (t: String) throws(UsageError) in
        try Values.duration(t, option: "--wait", command: parsed.commandName)
      }
      events = try parsed.value("events").map { (t: String) throws(UsageError) in
        try Values.events(t, command: parsed.commandName)
      }
      count = try parsed.value("count").map { (t: String) throws(UsageError) in
        try Values.count(t, option: "--count", command: parsed.commandName)
      }
      guard let make = context.frontEnds.controller else {
        throw parsed.usage("this capture has no MQTT front end")
      }
      do { controller = try make(FleetWords(parsed: parsed), context.output.frontEndLog) } catch {
        throw parsed.usage(error.message)
      }
    }
  }

  /// How long hosts, run and status wait for the broker when --timeout is not given.
  static let defaultTimeout: Duration = .seconds(10)

  static func run(_ options: Options, _ context: Context) async throws(CaptureError) -> CommandOutcome {
    let controller = options.controller
    do {
      let outcome: CommandOutcome
      switch options.action {
      case .hosts: outcome = try await hosts(options, context)
      case .run: outcome = try await remote(options, context)
      case .watch: outcome = try await watch(options, context)
      case .apply: outcome = try await apply(options, context)
      case .status: outcome = try await status(options, context)
      }
      await controller.close()
      return outcome
    } catch {
      await controller.close()
      throw error
    }
  }

  static func deadline(_ context: Context) -> ContinuousClock.Instant {
    .now.advanced(by: context.globals.timeout ?? defaultTimeout)
  }

  // MARK: - hosts

  /// The retained state of the selected hosts (malformed messages warned about and skipped).
  static func known(_ kinds: [String], _ options: Options, _ context: Context) async throws(CaptureError)
    -> FleetState
  {
    let messages = try await options.controller.retained(kinds, until: deadline(context))
    return FleetState(messages, warn: { context.output.warn($0) })
  }

  static func hosts(_ options: Options, _ context: Context) async throws(CaptureError) -> CommandOutcome {
    let state = try await known(["status", "devices"], options, context)
    let selected = try options.selection.select(from: state.hostIDs, prefix: options.controller.prefix)
    var rows: [[String]] = []
    var documents: [JSON] = []
    for id in selected {
      let host = state.hosts[id] ?? FleetState.Host()
      let devices = host.devices ?? []
      documents.append(
        .object([
          "host": .string(id), "state": .string(host.state ?? "unknown"),
          "since": host.since.map(JSON.string) ?? .null, "version": host.version.map(JSON.string) ?? .null,
          "devices": .array(devices),
        ]))
      let names = devices.map(FleetState.deviceLine).joined(separator: ", ")
      rows.append([id, host.state ?? "unknown", host.since ?? "-", names.isEmpty ? "-" : names])
    }
    context.output.document(
      ResultDocument(json: .object(["hosts": .array(documents)]), plain: .table(rows, separator: "\t")))
    return .success
  }

  // MARK: - run

  static func remote(_ options: Options, _ context: Context) async throws(CaptureError) -> CommandOutcome {
    let controller = options.controller
    let end = deadline(context)
    let state = try await known(["status"], options, context)
    let selected = try options.selection.select(from: state.hostIDs, prefix: controller.prefix)
    let asked = selected.filter { state.hosts[$0]?.state == "online" }
    let id = FleetSelection.freshID("fleet")
    let replies = Mutex<[String: JSON]>([:])
    let allIn = Signal()
    let askedSet = Set(asked)
    let info = context.output
    try await controller.subscribe(["+/replies/\(id)"], until: end) { message in
      // A reply from a host not asked, or for another request, is not ours.
      guard askedSet.contains(message.host), message.levels == ["replies", id],
        let reply = FleetState.object(message.payload, limit: 2 << 20),
        case .string(id)? = reply["id"]
      else {
        info.info("fleet: ignored a message on \(message.host)/\(message.levels.joined(separator: "/"))")
        return
      }
      let done = replies.withLock { r -> Bool in
        if r[message.host] == nil { r[message.host] = .object(reply) }
        return r.count == askedSet.count
      }
      if done { allIn.fire() }
    }
    let request: [String: JSON] = ["id": .string(id), "argv": .array(options.argv.map(JSON.string))]
    let payload = Array(JSON.object(request).serialized.utf8)
    try await publishAll(
      asked, levels: ["commands"], payload: payload, retain: false, controller: controller, until: end)
    if !asked.isEmpty { await allIn.wait(until: end) }
    let got = replies.withLock { $0 }
    var rows: [[String]] = []
    var documents: [JSON] = []
    var failure: Int32?
    var silent = false
    for host in selected {
      if case .object(let reply)? = got[host] {
        let exit = FleetState.exitStatus(reply["exit"])
        if exit != 0 && failure == nil { failure = exit }
        var document = reply
        document.removeValue(forKey: "id")
        document.removeValue(forKey: "exit")
        documents.append(.object(["host": .string(host), "exit": .int(exit), "reply": .object(document)]))
        rows.append([host, "\(exit)", JSON.object(document).serialized])
      } else {
        silent = true
        let why = askedSet.contains(host) ? "no reply" : (state.hosts[host]?.state ?? "unknown")
        documents.append(
          .object(["host": .string(host), "exit": .null, "answered": .bool(false), "state": .string(why)]))
        rows.append([host, "-", why == "no reply" ? "no reply" : "not asked: \(why)"])
      }
    }
    context.output.document(
      ResultDocument(
        json: .object(["id": .string(id), "hosts": .array(documents)]), plain: .table(rows, separator: "\t")))
    // failure is 1-255 (FleetState.exitStatus), so negating it cannot trap.
    if let failure { return .status(ResultCode(-failure)) }
    return silent ? .status(.requestTimedOut) : .success
  }

  // MARK: - watch

  /// The largest event `watch` reads (a host's events are a few hundred bytes).
  static let watchEventBytes = 2 << 20
  /// The most payload bytes waiting for stdout, beside the 65,536 events (docs/fleet.md §9.3).
  static let watchBytes = 64 << 20

  static func watch(_ options: Options, _ context: Context) async throws(CaptureError) -> CommandOutcome {
    let controller = options.controller
    let (stream, continuation) = AsyncStream<FleetMessage>.makeStream(
      bufferingPolicy: .bufferingOldest(65536))
    let selection = options.selection
    let wanted = options.events.map { Set($0.map(\.rawValue)) }
    let connectBy = deadline(context)
    let budget = ByteBudget(watchBytes)
    try await controller.subscribe(["+/events/#"], until: connectBy) { received in
      guard received.levels.count == 3, received.levels[0] == "events", selection.matches(received.host),
        wanted?.contains(received.levels[2]) ?? true
      else { return }
      // A payload over the event bound is not kept: the reader below refuses it all the same (and
      // warns), and 65,536 of them waiting would have been 128 GiB.
      var message = received
      if message.payload.count > watchEventBytes { message.payload = [] }
      // More than 65,536 events or 64 MiB waiting for stdout: a reader that stopped reading; the
      // newest are lost.
      guard budget.take(message.payload.count) else { return }
      if case .dropped = continuation.yield(message) { budget.give(message.payload.count) }
    }
    let timer = context.globals.timeout.map { timeout in
      Task {
        try? await Task.sleep(for: timeout)
        continuation.finish()
      }
    }
    var deduplicator = EventDeduplicator()
    var printed = 0
    for await message in stream {
      budget.give(message.payload.count)
      guard let event = FleetState.object(message.payload, limit: watchEventBytes) else {
        context.output.warn(
          "fleet watch: skipped a message on \(message.host)/\(message.levels.joined(separator: "/")) that is not a JSON object"
        )
        continue
      }
      if case .string(let eventID)? = event["eventId"], !deduplicator.isNew(eventID) { continue }
      let json = JSON.object(event)
      var plain = "\(message.host)\t\(PercentEscape.unescape(message.levels[1]))\t"
      if case .string(let text)? = event["text"] { plain += text } else { plain += message.levels[2] }
      try context.output.streamLine(context.globals.json ? json.serialized : plain)
      printed += 1
      if let limit = options.count, printed >= limit { break }
    }
    timer?.cancel()
    if let limit = options.count, printed >= limit { return .success }
    return .status(.requestTimedOut)
  }

  // MARK: - apply

  static func apply(_ options: Options, _ context: Context) async throws(CaptureError) -> CommandOutcome {
    let controller = options.controller
    guard let path = options.profilePath else { return .status(.invalidParameter) }
    // The reader and the checks of set --from, before anything is published.
    let bytes = try await ProfileApplier.readProfile(path, timeout: context.globals.timeout)
    _ = try ProfileApplier.parse(bytes, path: path)
    let profile: JSON
    do { profile = try JSONParser.parse(bytes, maximumSize: ProfileApplier.maximumProfileSize) } catch {
      throw CaptureError(.invalidFormat, "profile '\(path)' is not valid JSON")
    }
    guard case .object = profile else {
      throw CaptureError(.invalidFormat, "profile '\(path)' is not a JSON object")
    }
    let end = deadline(context)
    let state = try await known(["status"], options, context)
    let selected = try options.selection.select(from: state.hostIDs, prefix: controller.prefix)
    let version = FleetSelection.freshID("v")
    var desired: [String: JSON] = ["version": .string(version), "profile": profile]
    if let device = options.device { desired["device"] = .string(device) }
    if options.dryRun {
      context.output.document(
        ResultDocument(
          json: .object([
            "dryRun": .bool(true), "version": .string(version), "hosts": .array(selected.map(JSON.string)),
          ]), plain: .lines(selected.map { "\($0)\twould publish desired \(version)" })))
      return .success
    }
    let reports = Mutex<[String: [String: JSON]]>([:])
    let allIn = Signal()
    let wanted = Set(selected)
    if options.wait != nil {
      try await controller.subscribe(["+/applied"], until: end) { message in
        guard wanted.contains(message.host), message.levels == ["applied"],
          let report = FleetState.object(message.payload, limit: 4 << 20),
          case .string(version)? = report["version"]
        else { return }
        let done = reports.withLock { r -> Bool in
          r[message.host] = report
          return r.count == wanted.count
        }
        if done { allIn.fire() }
      }
    }
    let payload = Array(JSON.object(desired).serialized.utf8)
    try await publishAll(
      selected, levels: ["desired"], payload: payload, retain: true, controller: controller, until: end)
    guard let wait = options.wait else {
      context.output.document(
        ResultDocument(
          json: .object(["version": .string(version), "hosts": .array(selected.map(JSON.string))]),
          plain: .lines(selected.map { "\($0)\tdesired \(version) published" })))
      return .success
    }
    await allIn.wait(until: .now.advanced(by: wait))
    let got = reports.withLock { $0 }
    let (rows, documents, failure, missing) = appliedRows(selected, got)
    context.output.document(
      ResultDocument(
        json: .object(["version": .string(version), "hosts": .array(documents)]),
        plain: .table(rows, separator: "\t")))
    // failure is 1-255 (FleetState.exitStatus), so negating it cannot trap.
    if let failure { return .status(ResultCode(-failure)) }
    return missing ? .status(.requestTimedOut) : .success
  }

  /// Publishes `payload` to every host, up to `inFlight` at once awaiting their PUBACK. One after the
  /// other, each waiting for its PUBACK, costs a round trip per host: 300 hosts behind a broker 50 ms
  /// away took 15 s, past the default --timeout of 10 s. 128 stays below the transport's 256
  /// unacknowledged messages (MQTTConnection.outstandingLimit) with room for the markers; a publish
  /// the transport cannot take yet is tried again by the controller until `end`. The first failure is
  /// thrown once the publishes already started have ended; no new one starts after it.
  static func publishAll(
    _ hosts: [String], levels: [String], payload: [UInt8], retain: Bool, controller: any FleetControl,
    until end: ContinuousClock.Instant, inFlight: Int = 128
  ) async throws(CaptureError) {
    let failure = FirstFailure()
    await withTaskGroup(of: Void.self) { group in
      var pending = hosts[...]
      func start(_ host: String) {
        group.addTask {
          do throws(CaptureError) {
            try await controller.publish(
              host: host, levels: levels, payload: payload, retain: retain, until: end)
          } catch {
            failure.record(error)
          }
        }
      }
      while let host = pending.first, hosts.count - pending.count < inFlight {
        pending = pending.dropFirst()
        start(host)
      }
      while await group.next() != nil {
        guard failure.error == nil, let host = pending.popFirst() else { continue }
        start(host)
      }
    }
    if let error = failure.error { throw error }
  }

  /// The applied reports as rows and documents, the first failure's exit, and whether one is missing.
  static func appliedRows(_ hosts: [String], _ reports: [String: [String: JSON]]) -> (
    [[String]], [JSON], Int32?, Bool
  ) {
    var rows: [[String]] = []
    var documents: [JSON] = []
    var failure: Int32?
    var missing = false
    for host in hosts {
      guard let report = reports[host] else {
        missing = true
        rows.append([host, "-", "no applied report"])
        documents.append(.object(["host": .string(host), "applied": .null]))
        continue
      }
      let exit = FleetState.exit(report)
      if exit != 0 && failure == nil { failure = exit }
      documents.append(.object(["host": .string(host), "applied": .object(report)]))
      rows += FleetState.appliedLines(host, report)
    }
    return (rows, documents, failure, missing)
  }

  // MARK: - status

  static func status(_ options: Options, _ context: Context) async throws(CaptureError) -> CommandOutcome {
    let state = try await known(["status", "desired", "applied"], options, context)
    let selected = try options.selection.select(from: state.hostIDs, prefix: options.controller.prefix)
    var rows: [[String]] = []
    var documents: [JSON] = []
    for id in selected {
      let host = state.hosts[id] ?? FleetState.Host()
      let desired = host.desired.flatMap { d -> String? in
        if case .string(let v)? = d["version"] { v } else { nil }
      }
      let applied = host.applied.flatMap { a -> String? in
        if case .string(let v)? = a["version"] { v } else { nil }
      }
      let word: String
      if desired == nil {
        word = "no desired state"
      } else if applied != desired {
        word = "pending"
      } else {
        word = FleetState.exit(host.applied ?? [:]) == 0 ? "applied" : "failed"
      }
      rows.append([id, host.state ?? "unknown", desired ?? "-", applied ?? "-", word])
      documents.append(
        .object([
          "host": .string(id), "state": .string(host.state ?? "unknown"),
          "desired": host.desired.map { d in .object(d.filter { $0.key != "profile" }) } ?? .null,
          "applied": host.applied.map(JSON.object) ?? .null, "inSync": .bool(word == "applied"),
        ]))
    }
    context.output.document(
      ResultDocument(json: .object(["hosts": .array(documents)]), plain: .table(rows, separator: "\t")))
    return .success
  }
}

/// Bytes that may be waiting at once: taken when a message is queued, given back when it is read.
final class ByteBudget: Sendable {
  private let limit: Int
  private let used = Mutex(0)
  init(_ limit: Int) { self.limit = limit }
  /// False (nothing taken) when `count` more would pass the limit.
  func take(_ count: Int) -> Bool {
    used.withLock { used in
      guard count <= limit - used else { return false }
      used += count
      return true
    }
  }
  func give(_ count: Int) { used.withLock { $0 -= count } }
}

/// The first error of concurrent work.
final class FirstFailure: Sendable {
  private let state = Mutex<CaptureError?>(nil)
  func record(_ error: CaptureError) { state.withLock { if $0 == nil { $0 = error } } }
  var error: CaptureError? { state.withLock { $0 } }
}

/// A one-shot signal with a deadline: fired once, waited for once.
final class Signal: Sendable {
  private let state = Mutex<(fired: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

  func fire() {
    let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
      s.fired = true
      defer { s.waiter = nil }
      return s.waiter
    }
    waiter?.resume()
  }

  /// Until fired or `deadline`.
  func wait(until deadline: ContinuousClock.Instant) async {
    let timer = Task {
      try? await Task.sleep(until: deadline, clock: .continuous)
      self.fire()
    }
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let now = state.withLock { s -> Bool in
        if s.fired { return true }
        s.waiter = continuation
        return false
      }
      if now { continuation.resume() }
    }
    timer.cancel()
  }
}
