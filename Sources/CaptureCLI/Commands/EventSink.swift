import CaptureContract
import CaptureCore
import Synchronization

/// Prints a device's events as they arrive and keeps the tallies a command's exit status needs.
final class EventSink: Sendable {
  let output: Output
  /// Where the events go (stdout unless listen --output or --confirm-stdin says otherwise).
  let stream: EventStream
  /// Called once when the stream cannot be written (listen --output: a full disk): listen stops.
  let onStreamFailure: @Sendable () -> Void
  private let streamBroken = Mutex(false)
  /// Event kinds to print; nil = all (listen) — trigger prints decoded data only.
  let printed: Set<EventKind>?
  private let tally = Mutex(DrainResult())
  /// listen --count: decoded codes past this many are not printed (the devices are being closed).
  let limit: Int?
  /// Called after each decoded code with the running total (listen --count).
  let onDecoded: @Sendable (Int) -> Void
  /// listen --confirm / --confirm-stdin: the host's verdict on a code, and how to tell the device
  /// (nil when it cannot take one). Telling comes after the code's line is written (handleConfirmed).
  typealias Tell = @Sendable (HostVerdict) async -> Bool
  typealias Confirm = @Sendable (Event, DecodedData) async -> (HostVerdict, Tell?)
  let confirm: Confirm?

  init(
    output: Output, stream: EventStream? = nil, printed: Set<EventKind>?, limit: Int? = nil,
    confirm: Confirm? = nil, onStreamFailure: @escaping @Sendable () -> Void = {},
    onDecoded: @escaping @Sendable (Int) -> Void = { _ in }
  ) {
    self.output = output
    self.stream = stream ?? .standardOutput(output)
    self.onStreamFailure = onStreamFailure
    self.printed = printed
    self.limit = limit
    self.confirm = confirm
    self.onDecoded = onDecoded
  }

  var result: DrainResult { tally.withLock { $0 } }

  private let firstDecode = Latch()

  /// Returns after the first decoded code is handled, or when the drain ends.
  func waitForFirstDecode() async { await firstDecode.wait() }

  /// The listen is ending on purpose (--timeout, a signal, --count reached, the stream broke): a
  /// device that answers DEVICENOTOPEN now was closed by us, not lost.
  var isStopping: Bool {
    let stopped = tally.withLock { state in
      state.timedOut || state.interrupted || (limit.map { state.decoded >= $0 } ?? false)
    }
    return stopped || streamBroken.withLock { $0 }
  }

  func markTimedOut() { tally.withLock { $0.timedOut = true } }
  func markInterrupted() { tally.withLock { $0.interrupted = true } }
  func record(_ error: CaptureError) {
    tally.withLock { if $0.firstError == nil { $0.firstError = error } }
  }

  /// An error of the stream itself (listen's SocketCam scan failed): shown now, where it happened in
  /// the stream, and the listen's exit status.
  func fail(_ error: CaptureError) {
    record(error)
    output.error(error)
  }

  /// Writes one event line; false when it could not be written. A failed write is never silent: the
  /// first one is the command's error (stderr, and the JSON error object) and stops listen; any later
  /// one (events still arriving while the devices close) is a warning naming what was lost.
  @discardableResult
  private func emit(_ record: Record, kind: EventKind) -> Bool {
    let written = write(record, kind: kind)
    if written == .firstFailure { onStreamFailure() }
    return written == .yes
  }

  private enum Written { case yes, failed, firstFailure }

  /// What one line of the stream is: a plain line, a JSON document, or an event's JSON line (made by
  /// Render.eventLine's faster path where the line is written, as Render.event's value where the
  /// stream keeps documents: EventStream).
  private enum Record {
    case text(String)
    case json(JSON)
    case eventLine(Event)
  }

  /// `emit` without the stop: the caller stops listen on `.firstFailure` when it is ready to.
  private func write(_ record: Record, kind: EventKind) -> Written {
    do throws(CaptureError) {
      switch record {
      case .text(let text): try stream.line(text)
      case .json(let value): try stream.json(value)
      case .eventLine(let event):
        try stream.json(line: Render.eventLine(event), value: { Render.event(event) })
      }
      return .yes
    } catch {
      let first = streamBroken.withLock { broken in
        defer { broken = true }
        return !broken
      }
      if first {
        fail(error)
        return .firstFailure
      } else {
        output.warn("\(kind.rawValue) event not written: \(error.message)")
      }
      return .failed
    }
  }

  /// Drains `events` until the stream ends.
  func drain(_ events: AsyncStream<Event>) async {
    for await event in events { await take(event) }
    drained()
  }

  /// Handles one event. Safe to call from several tasks at once, one per device (listen's lanes): the
  /// tallies are locked and each line is one write. With --confirm the verdict is awaited here, so
  /// only the device whose code waits for it is held back, as each device's own drain did before.
  func take(_ event: Event) async {
    if let confirm, case .decodedData(let data) = event.payload {
      await handleConfirmed(event, data, confirm)
    } else {
      handle(event)
    }
  }

  /// No more events will come (the engine has finished): whoever waits for a first decode goes on.
  func drained() { firstDecode.open() }

  /// With --confirm (or --confirm-stdin), a code is printed only after its verdict: JSON events carry
  /// `confirmation` ("good"/"bad") and `confirmed` (the device was told); plain output passes good
  /// codes only, so the host gates what reaches the pipeline. The device hears the verdict only
  /// after the line was written: its good beep tells the operator the code is recorded, so a code
  /// whose line could not be written (a full disk, a closed stdout) is told bad, never good.
  /// `confirmed` says the device takes a verdict and was sent one; if sending it fails, a warning.
  func handleConfirmed(_ event: Event, _ data: DecodedData, _ confirm: Confirm) async {
    let count = tally.withLock { state -> Int? in
      if let limit, state.decoded >= limit { return nil }
      state.decoded += 1
      return state.decoded
    }
    guard let count else { return }
    let (verdict, tell) = await confirm(event, data)
    // A failed write stops listen only after the device was told (below): stopping first would close
    // the device with its verdict half written.
    var written = Written.yes
    if printed?.contains(.decodedData) ?? true {
      if output.isJSON {
        var json = Render.event(event)
        if case .object(var members) = json {
          members["confirmation"] = .string(verdict.rawValue)
          members["confirmed"] = .bool(tell != nil)
          json = .object(members)
        }
        written = write(.json(json), kind: event.kind)
      } else if verdict == .good {
        written = write(.text(data.plainLine), kind: event.kind)
      } else {
        output.info("\(event.device.name): host rejected \(data.plainLine)")
      }
    }
    if let tell {
      let told: HostVerdict = written == .yes ? verdict : .bad
      if !(await tell(told)) {
        output.warn("\(event.device.name): could not tell the device \(told.rawValue) for \(data.plainLine)")
      }
    }
    if written == .firstFailure { onStreamFailure() }
    onDecoded(count)
    firstDecode.open()
  }

  func handle(_ event: Event) {
    let shouldPrint = printed?.contains(event.kind) ?? true
    switch event.payload {
    case .decodedData:
      // Take a slot first, so --count N prints exactly N codes even when more are already queued.
      let count = tally.withLock { state -> Int? in
        if let limit, state.decoded >= limit { return nil }
        state.decoded += 1
        return state.decoded
      }
      guard let count else { return }
      if shouldPrint {
        if output.isJSON {
          emit(.eventLine(event), kind: event.kind)
        } else if let text = Render.plain(event) {
          emit(.text(text), kind: event.kind)
        }
      }
      onDecoded(count)
      firstDecode.open()
    case .error(let error):
      record(error)
      // Errors always reach stderr; the JSON stream also carries them as events.
      output.raw(stderr: Output.errorLine(error, prefix: output.terminal.prefix(.error)))
      // The JSON stream carries it as an event where events are printed (listen), else as the
      // contract's {"error":{...}} object (trigger prints decoded data only).
      if output.isJSON {
        emit(.json(shouldPrint ? Render.event(event) : Render.errorDocument(error)), kind: event.kind)
      }
    case .undecodedData(let noise):
      // Line noise is reported, never a failure: one bounded stderr line (the event has the bytes).
      if shouldPrint && output.isJSON { emit(.json(Render.event(event)), kind: event.kind) }
      output.warn(Render.noiseNote(noise, from: event.device))
    default:
      if shouldPrint && output.isJSON { emit(.eventLine(event), kind: event.kind) }
      output.info(Render.describe(event))
    }
  }
}
