import CaptureCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A Cognex DataMan reader over DMCC on TCP (`tcp://HOST[:PORT]`, port 23 by default;
/// docs/device-protocols.md §7). Commands go out with a command id in the header so every extended reply is
/// matched to its command; a reader thread parses the stream, answers waiting commands and turns read results
/// into `decodedData` events.
public final class DataManReader: Device {
  public let info: DeviceInfo
  public var events: AsyncStream<Event> { queue.stream }
  /// Bounded: the reader thread stops reading read results while the consumer is this far behind
  /// (TCP's window then holds them), unless a command waits for its reply.
  private let queue: EventQueue
  /// The events read and not yet taken by the consumer (tests of back-pressure).
  var backlog: EventQueue { queue }
  private let connection: any DMCCLink
  /// How long one command may wait for its reply (the `--timeout`, else `defaultTimeout`).
  private let timeout: Duration
  private let state: Mutex<LinkState>

  static let defaultTimeout: Duration = .seconds(5)

  struct Reply: Sendable {
    var status: Int
    var data: [UInt8]
    var text: String { DMCC.unquote(String(decoding: data, as: UTF8.self)) }
  }

  private struct Pending {
    var continuation: CheckedContinuation<Result<Reply, CaptureError>, Never>
    var deadline: ContinuousClock.Instant
    var command: String
  }

  private struct LinkState {
    var nextID = 10
    var pending: [Int: Pending] = [:]
    /// Ids of TRIGGER commands sent: a later status-0 line with data under one of them is its read
    /// result. Only these: a late answer to a GET that timed out must not become invented scan data.
    var triggerIDs: Set<Int> = []
    /// Removal was reported and the stream finished; nothing more is yielded.
    var finished = false
  }

  /// The SDK data sources this driver maps to Cognex `SYMBOL.*` parameters. These parameter names are
  /// Cognex DMCC names as commonly published, not taken from a manual we hold: verify them on a reader
  /// (`capture get tcp://… dmcc:SYMBOL.QR`). EAN and UPC share one Cognex switch.
  static let symbols: [(DataSource, String)] = [
    (.qrCode, "SYMBOL.QR"), (.dataMatrix, "SYMBOL.DATAMATRIX"), (.code128, "SYMBOL.C128"),
    (.code39, "SYMBOL.C39"), (.ean13, "SYMBOL.UPC-EAN"), (.ean8, "SYMBOL.UPC-EAN"), (.upcA, "SYMBOL.UPC-EAN"),
    (.upcE0, "SYMBOL.UPC-EAN"), (.pdf417, "SYMBOL.PDF417"), (.interleaved2of5, "SYMBOL.I2O5"),
    (.codabar, "SYMBOL.CODABAR"), (.code93, "SYMBOL.C93"), (.gs1Databar, "SYMBOL.DATABAR"),
  ]

  static func symbolParameter(_ source: DataSource) -> String? { symbols.first { $0.0 == source }?.1 }

  /// Connects, switches the reader to extended responses (`SET COM.DMCC-RESPONSE 1`, docs/device-protocols.md
  /// §7 "Response mode") and reads DEVICE.TYPE and DEVICE.NAME for the arrival.
  public static func open(host: String, port: UInt16, request: OpenRequest) async throws(CaptureError)
    -> DataManReader
  {
    try await open(host: host, port: port, request: request, queueLimit: EventQueue.defaultLimit)
  }

  /// `queueLimit`: the back-pressure bound (tests use a small one).
  static func open(host: String, port: UInt16, request: OpenRequest, queueLimit: Int)
    async throws(CaptureError)
    -> DataManReader
  {
    let timeout = request.timeout ?? defaultTimeout
    // getaddrinfo and the connect's poll(2) block: on the blocking executor, with the handshake.
    return try await open(
      id: DeviceSelector.tcp(host: host, port: port).description, timeout: timeout, queueLimit: queueLimit
    ) {
      (job) throws(CaptureError) in
      try TCPConnection.connect(host: host, port: port, timeout: timeout, cancelled: { job.isCancelled })
    }
  }

  /// A DataMan on a serial line (`serial:/dev/PATH?protocol=dmcc[&baud=N]`): the same DMCC, over RS-232
  /// or the reader's USB COM port (docs/device-protocols.md §7 "Transports").
  public static func open(serialPath path: String, parameters: [String: String], request: OpenRequest)
    async throws(CaptureError) -> DataManReader
  {
    let timeout = request.timeout ?? defaultTimeout
    // open(2) of a tty and its termios set-up block: on the blocking executor, with the handshake.
    return try await open(
      id: DeviceSelector.serial(path: path, parameters: parameters).description, timeout: timeout
    ) { _ throws(CaptureError) in
      try SerialDMCCLink(path: path, parameters: parameters)
    }
  }

  /// Over a link already made (tests).
  static func open(
    _ connection: any DMCCLink, id: String, timeout: Duration, queueLimit: Int = EventQueue.defaultLimit
  ) async throws(CaptureError) -> DataManReader {
    try await open(id: id, timeout: timeout, queueLimit: queueLimit) { _ throws(CaptureError) in connection }
  }

  /// Makes the link with `link` and runs the handshake, both in one `BlockingExecutor` job: they wait in
  /// the kernel for up to `timeout` each, and one job is one hop off the cooperative pool and back.
  static func open(
    id: String, timeout: Duration, queueLimit: Int = EventQueue.defaultLimit,
    link: @escaping @Sendable (BlockingExecutor.Cancellation) throws(CaptureError) -> any DMCCLink
  ) async throws(CaptureError) -> DataManReader {
    let (connection, greeting) = try await BlockingExecutor.shared.run {
      (job) throws(CaptureError) -> (any DMCCLink, Greeting) in
      let connection = try link(job)
      do throws(CaptureError) {
        var handshake = Handshake(connection: connection, timeout: timeout, cancelled: { job.isCancelled })
        // In silent mode (the default) the reader does not answer the SET, so it is not awaited: the GET
        // that follows is the first command whose extended reply proves the switch took.
        try handshake.send("SET COM.DMCC-RESPONSE 1", id: 1)
        let model = try handshake.await("GET DEVICE.TYPE", id: 2)
        let name = try handshake.await("GET DEVICE.NAME", id: 3)
        return (connection, Greeting(model: model, name: name, reads: handshake.reads))
      } catch {
        connection.close()
        throw error
      }
    }
    let (model, name) = (greeting.model, greeting.name)
    // DeviceType.none: the SDK has no device type value for a Cognex reader (docs/capture-sdk.md lists
    // Socket Mobile models only); the reader's own DEVICE.TYPE (DM8072, …) is the model.
    let info = DeviceInfo(
      id: id, name: name.isEmpty ? "DataMan \(model)" : name, type: .none, model: model.isEmpty ? nil : model)
    return DataManReader(
      info: info, connection: connection, timeout: timeout, early: greeting.reads, queueLimit: queueLimit)
  }

  private init(
    info: DeviceInfo, connection: any DMCCLink, timeout: Duration, early: [[UInt8]], queueLimit: Int
  ) {
    queue = EventQueue(limit: queueLimit)
    self.info = info
    self.connection = connection
    self.timeout = timeout
    self.state = Mutex(LinkState())
    queue.push(Event(time: .now(), device: info, payload: .deviceArrival))
    for bytes in early { yieldRead(bytes) }
    startReaderThread()
  }

  // MARK: Device

  public var capabilities: Capabilities {
    var seen: Set<String> = []
    let sources = Self.symbols.filter { seen.insert($0.1).inserted }.map(\.0)
    return Capabilities(
      readable: [.deviceType, .friendlyNameDevice, .versionDevice, .dataSourceDevice],
      writable: [.friendlyNameDevice, .dataSourceDevice, .triggerDevice],
      triggers: [.start, .stop], events: [.deviceArrival, .deviceRemoval, .decodedData], dataSources: sources)
  }

  public func get(_ property: PropertyID, argument: PropertyValue) async throws(CaptureError) -> PropertyValue
  {
    guard capabilities.canRead(property) else { throw unsupported(property) }
    switch property {
    case .deviceType:
      // The SDK number for "no Socket Mobile type"; the DataMan model (DEVICE.TYPE, e.g. DM8050) has no
      // SDK value and travels as the device's `model`, read at open.
      return .ulong(DeviceType.none.rawValue)
    case .friendlyNameDevice:
      return .string(try await command(DMCCCommand.get("DEVICE.NAME")).text)
    case .versionDevice:
      return .version(Self.version(try await command(DMCCCommand.get("DEVICE.FIRMWARE-VER")).text))
    case .dataSourceDevice:
      guard case .dataSource(let asked) = argument else {
        throw .invalidParameter("data-source needs a data source")
      }
      guard let parameter = Self.symbolParameter(asked.id) else {
        throw .notSupported("\(info.name) has no DMCC symbology switch known for \(asked.id.name)")
      }
      let text = try await symbologyCommand(DMCCCommand.get(parameter), parameter, asked.id).text.uppercased()
      let status: DataSourceStatus
      switch text {
      case "ON", "1": status = .enable
      case "OFF", "0": status = .disable
      default:
        throw CaptureError(.communicationError, "\(parameter) answered '\(text)', not ON or OFF")
      }
      return .dataSource(DataSourceValue(id: asked.id, status: status))
    default:
      throw unsupported(property)
    }
  }

  public func set(_ property: PropertyID, _ value: PropertyValue) async throws(CaptureError) {
    guard capabilities.canWrite(property) else { throw unsupported(property) }
    switch (property, value) {
    case (.friendlyNameDevice, .string(let name)):
      _ = try await command(DMCCCommand.set("DEVICE.NAME", DMCC.quote(name)))
    case (.dataSourceDevice, .dataSource(let source)):
      guard let parameter = Self.symbolParameter(source.id) else {
        throw .notSupported("\(info.name) has no DMCC symbology switch known for \(source.id.name)")
      }
      let word: String
      switch source.status {
      case .enable: word = "ON"
      case .disable: word = "OFF"
      default:
        throw .invalidParameter("a DataMan symbology is enabled or disabled, not \(source.status.name)")
      }
      _ = try await symbologyCommand(DMCCCommand.set(parameter, word), parameter, source.id)
    case (.triggerDevice, .byte(let raw)):
      guard let action = Trigger(rawValue: raw) else {
        throw .invalidParameter("unknown trigger value \(raw)")
      }
      try await trigger(action)
    default:
      throw .invalidParameter("wrong value type \(value.type.name) for \(property.cliName)")
    }
  }

  /// `TRIGGER ON` / `TRIGGER OFF` (docs/device-protocols.md §7 "Commands"); the read result arrives later as
  /// a status-1 line.
  public func trigger(_ action: Trigger) async throws(CaptureError) {
    switch action {
    case .start: _ = try await command("TRIGGER ON")
    case .stop: _ = try await command("TRIGGER OFF")
    default: throw .notSupported("\(info.name) has no DMCC command for trigger \(action.cliName)")
    }
  }

  public func getRaw(_ name: String) async throws(CaptureError) -> String {
    try await command(DMCCCommand.get(try Self.rawParameter(name))).text
  }

  public func setRaw(_ name: String, _ value: String) async throws(CaptureError) {
    _ = try await command(DMCCCommand.set(try Self.rawParameter(name), DMCC.argument(value)))
  }

  /// `dmcc:PARAM.NAME` → `PARAM.NAME`; a name with spaces or a header would smuggle a second command.
  static func rawParameter(_ word: String) throws(CaptureError) -> String {
    var name = Substring(word)
    if name.lowercased().hasPrefix("dmcc:") { name = name.dropFirst(5) }
    guard !name.isEmpty,
      name.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F && $0 != "|" && $0 != "\"" })
    else {
      throw .invalidParameter("'\(word)' is not a DMCC parameter name (dmcc:GROUP.NAME)")
    }
    return String(name)
  }

  public func close() async {
    finish(error: CaptureError(.cancel, "closed"))
    connection.shutdown()
  }

  /// "6.1.5" / "DataMan 5.7.4 SR2" → the digits in order as major, middle, minor, build.
  static func version(_ text: String) -> VersionValue {
    let numbers = text.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
    func at(_ i: Int) -> Int { i < numbers.count ? numbers[i] : 0 }
    return VersionValue(major: at(0), middle: at(1), minor: at(2), build: at(3))
  }

  // MARK: Commands

  /// Sends one command and waits for its extended reply; a non-zero status becomes its SKT code.
  func command(_ text: String) async throws(CaptureError) -> Reply {
    let reply = try await exchange(text)
    guard reply.status == 0 else { throw Self.statusError(reply, text) }
    return reply
  }

  /// A symbology switch the reader does not have is a data source this reader does not support
  /// (NOTSUPPORTED, as the SDK answers for any property a device lacks), not a bad request: DMCC parses
  /// `GET SYMBOL.X` as one command, so a model without that switch answers status 101, command invalid
  /// (docs/device-protocols.md §7 "Status codes"). A GET has no value that 102, parameter invalid, could
  /// be about, so it means the same there; to a SET, 102 is the value and stays INVALIDPARAMETER.
  private func symbologyCommand(_ text: String, _ parameter: String, _ source: DataSource)
    async throws(CaptureError) -> Reply
  {
    let reply = try await exchange(text)
    let isGet = text.uppercased().hasPrefix("GET ")
    if reply.status == 101 || (isGet && reply.status == 102) {
      throw .notSupported(
        "\(info.name) has no \(source.name): it does not know \(parameter) (DMCC status \(reply.status))")
    }
    guard reply.status == 0 else { throw Self.statusError(reply, text) }
    return reply
  }

  /// Sends one command and waits for its extended reply, whatever its status.
  private func exchange(_ text: String) async throws(CaptureError) -> Reply {
    let deadline = ContinuousClock.now + timeout
    let result: Result<Reply, CaptureError> = await withCheckedContinuation { waiter in
      let id: Int? = state.withLock { s in
        guard !s.finished else { return nil }
        let id = s.nextID
        s.nextID = s.nextID >= 99_999 ? 10 : s.nextID + 1
        s.pending[id] = Pending(continuation: waiter, deadline: deadline, command: text)
        if text.uppercased().hasPrefix("TRIGGER") {
          if s.triggerIDs.count > 64 { s.triggerIDs.removeAll() }
          s.triggerIDs.insert(id)
        }
        return id
      }
      // A reader paused by back-pressure must come back to read this command's reply.
      queue.wakeProducers()
      guard let id else {
        waiter.resume(
          returning: .failure(CaptureError(.communicationError, "\(connection.endpoint): not connected")))
        return
      }
      do throws(CaptureError) {
        try connection.send(DMCCCommand(text, commandID: id).encoded())
      } catch {
        state.withLock { $0.pending.removeValue(forKey: id) }?.continuation.resume(returning: .failure(error))
      }
    }
    return try result.get()
  }

  static func statusError(_ reply: Reply, _ command: String) -> CaptureError {
    let meaning: String
    switch reply.status {
    case 100: meaning = "unidentified error"
    case 101: meaning = "command invalid"
    case 102: meaning = "parameter invalid"
    case 103: meaning = "checksum incorrect"
    case 104: meaning = "parameter rejected or altered due to reader state"
    case 105: meaning = "reader unavailable"
    default: meaning = "unknown status"
    }
    let detail = reply.data.isEmpty ? "" : ": \(reply.text)"
    return CaptureError(
      ResultCode(DMCC.sktCode(status: reply.status)),
      "'\(command)': DMCC status \(reply.status), \(meaning)\(detail)")
  }

  // MARK: Reader thread

  private func startReaderThread() {
    do throws(Errno) {
      try ReaderThread(name: "dataman").start { [self] in self.readLoop() }
    } catch {
      finish(
        error: CaptureError(.communicationError, "cannot start the DMCC reader thread: \(error.message)"))
    }
  }

  private func readLoop() {
    var parser = DMCCResponseParser()
    // Shut down, not closed: `command` may still be sending on another thread, and a closed descriptor
    // number can be reused by the kernel. TCPConnection closes it when the last reference goes.
    defer { connection.shutdown() }
    while true {
      let (finished, commandWaits) = state.withLock { ($0.finished, !$0.pending.isEmpty) }
      if finished { return }
      // Back-pressure: while the consumer is a full queue behind and no command waits for a reply,
      // the reader leaves the results in the socket; a command (--confirm's feedback, say) is never
      // kept from its reply by the events waiting ahead of it.
      if !commandWaits && !queue.hasRoom {
        queue.waitForRoom(timeoutMilliseconds: 50)
        expire()
        continue
      }
      let received: TCPConnection.Received
      do throws(CaptureError) {
        received = try connection.receive(timeoutMilliseconds: 50)
      } catch {
        finish(error: error)
        return
      }
      switch received {
      case .data(let bytes):
        for message in parser.feed(bytes) { handle(message) }
      case .idle:
        break
      case .closed:
        finish(
          error: CaptureError(.communicationError, "\(connection.endpoint): the reader closed the connection")
        )
        return
      }
      expire()
    }
  }

  private func handle(_ message: DMCCMessage) {
    switch message {
    case .reply(let id, let status, let data):
      if let id, let waiter = state.withLock({ $0.pending.removeValue(forKey: id) }) {
        waiter.continuation.resume(returning: .success(Reply(status: status, data: data)))
      } else if let id, status == 0, !data.isEmpty, state.withLock({ $0.triggerIDs.contains(id) }) {
        // A second status-0 line for a TRIGGER already answered: the result that follows TRIGGER ON.
        yieldRead(DMCC.base64Decode(data[...]) ?? data)
      }
    // Anything else is a late answer to a command that timed out: dropped, it is not scan data.
    case .read(_, let bytes):
      yieldRead(bytes)
    case .plain(let bytes):
      // A line without a header is a silent-mode read result (docs/device-protocols.md §7 "Response mode" 0):
      // kept, not dropped.
      yieldRead(bytes)
    case .badChecksum(let id):
      let error = CaptureError(.invalidChecksum, "\(connection.endpoint): a DMCC reply had a bad checksum")
      if let id, let waiter = state.withLock({ $0.pending.removeValue(forKey: id) }) {
        waiter.continuation.resume(returning: .failure(error))
      } else {
        yield(.error(error))
      }
    case .malformed(let line):
      yield(
        .error(
          CaptureError(
            .communicationError, "unreadable DMCC line: \(DecodedData.escapedText(Array(line.prefix(64))))")))
    }
  }

  private func expire() {
    let now = ContinuousClock.now
    let late = state.withLock { s in
      let ids = s.pending.filter { $0.value.deadline <= now }.map(\.key)
      return ids.compactMap { s.pending.removeValue(forKey: $0) }
    }
    for waiter in late {
      waiter.continuation.resume(
        returning: .failure(
          CaptureError(.requestTimedOut, "\(connection.endpoint) did not answer '\(waiter.command)' in time"))
      )
    }
  }

  private func yieldRead(_ bytes: [UInt8]) {
    // The extended read string carries no symbology, so the source is NotSpecified.
    yield(.decodedData(DecodedData(dataSource: .notSpecified, bytes: bytes, origin: connection.endpoint)))
  }

  private func yield(_ payload: Event.Payload) {
    state.withLock { s in
      guard !s.finished else { return }
      queue.push(Event(time: .now(), device: info, payload: payload))
    }
  }

  /// Link lost or closed: fail what waits, report removal once, end the stream.
  private func finish(error: CaptureError) {
    let waiting: [Pending]? = state.withLock { s in
      guard !s.finished else { return nil }
      s.finished = true
      queue.push(Event(time: .now(), device: info, payload: .deviceRemoval))
      queue.finish()
      defer { s.pending.removeAll() }
      return Array(s.pending.values)
    }
    for waiter in waiting ?? [] { waiter.continuation.resume(returning: .failure(error)) }
  }
}

/// What the handshake learnt, and the read results that arrived during it.
private struct Greeting: Sendable {
  var model: String
  var name: String
  var reads: [[UInt8]]
}

/// The blocking exchange at open, before the reader thread exists: bounded by the timeout and
/// `cancelled` (looked at every 50 ms poll slice), keeping any read results that arrive meanwhile.
/// Runs on the `BlockingExecutor`.
private struct Handshake {
  let connection: any DMCCLink
  let deadline: ContinuousClock.Instant
  let cancelled: () -> Bool
  var parser = DMCCResponseParser()
  var reads: [[UInt8]] = []
  /// Bytes received while waiting for the handshake's replies.
  var received = 0
  /// The most bytes a reader may send before it has answered the handshake: its replies are a few
  /// short lines (DMCC.swift `DMCCResponseParser`), and read results queued meanwhile are kept until
  /// the reader thread starts. A peer that sends more (noise, the wrong service on the port) is not a
  /// DataMan answering, and is refused at once instead of growing memory until the answer timeout.
  static let maxReceived = 1 << 20

  init(connection: any DMCCLink, timeout: Duration, cancelled: @escaping () -> Bool) {
    self.connection = connection
    self.deadline = ContinuousClock.now + timeout
    self.cancelled = cancelled
  }

  func send(_ text: String, id: Int) throws(CaptureError) {
    try connection.send(DMCCCommand(text, commandID: id).encoded())
  }

  mutating func await(_ text: String, id: Int) throws(CaptureError) -> String {
    try send(text, id: id)
    while true {
      if cancelled() { throw CaptureError(.cancel, "\(connection.endpoint): cancelled") }
      let left = deadline - ContinuousClock.now
      guard left > .zero else {
        throw CaptureError(.requestTimedOut, "\(connection.endpoint) did not answer '\(text)' in time")
      }
      switch try connection.receive(timeoutMilliseconds: Int32(min(TCPConnection.milliseconds(left), 50))) {
      case .idle: continue
      case .closed:
        throw CaptureError(.communicationError, "\(connection.endpoint): the reader closed the connection")
      case .data(let bytes):
        received += bytes.count
        guard received <= Self.maxReceived else {
          throw CaptureError(
            .communicationError,
            "\(connection.endpoint) sent more than \(Self.maxReceived >> 20) MiB without answering '\(text)'"
              + " (not a DataMan's DMCC service?)")
        }
        for message in parser.feed(bytes) {
          switch message {
          case .reply(id, let status, let data):
            let reply = DataManReader.Reply(status: status, data: data)
            guard status == 0 else { throw DataManReader.statusError(reply, text) }
            return reply.text
          case .badChecksum(id):
            throw CaptureError(
              .invalidChecksum, "\(connection.endpoint): the reply to '\(text)' had a bad checksum")
          case .read(_, let bytes), .plain(let bytes):
            reads.append(bytes)
          default: continue
          }
        }
      }
    }
  }
}
