import CaptureCore
import Synchronization

/// The command line's event printer as a front end of the engine: listen's stream (stdout, or
/// `--output FILE`) and serve's `--output FILE`. One lane subscriber: each device's events are printed
/// on that device's lane, the devices concurrently (each line one write), and a `--confirm` verdict
/// holds back only its own device (docs/engine.md §3).
final class EventPrinter: FrontEnd {
  struct Configuration: Sendable {
    var output: Output
    /// Opens where the events go; called when the printer is prepared, so a file that cannot be
    /// written fails before any device is touched.
    var stream: @Sendable () throws(CaptureError) -> EventStream
    /// The engine subscriber's name, for messages.
    var name: String
    /// Event kinds printed; nil: all.
    var printed: Set<EventKind>?
    /// listen --count: the run ends once this many codes were printed.
    var limit: Int?
    /// listen --timeout: the run ends then (the outcome says so).
    var timeout: Duration?
    /// listen --confirm CMD / --confirm-stdin.
    var judge: (any HostJudge)?
  }

  private let configuration: Configuration
  private struct State {
    var sink: EventSink?
    var host: FrontEndHost?
    var timer: Deadline?
  }
  private let state = Mutex(State())

  init(_ configuration: Configuration) { self.configuration = configuration }

  /// What was printed: decoded codes, the first error, how it ended.
  var result: DrainResult { state.withLock { $0.sink }?.result ?? DrainResult() }

  /// An error event for the stream from another front end (a code the MQTT spool refused): shown
  /// where it happened in the stream, and the run's status as any error event is.
  func report(_ event: Event) { state.withLock { $0.sink }?.handle(event) }

  func prepare(_ engine: CaptureEngine) async throws(CaptureError) {
    let configuration = self.configuration
    let stream = try configuration.stream()
    let limit = configuration.limit
    let sink = EventSink(
      output: configuration.output, stream: stream, printed: configuration.printed, limit: limit,
      confirm: configuration.judge.map { judge in
        ListenCommand.confirmation(judge) { engine.dataConfirmationTarget(id: $0) }
      },
      onStreamFailure: { [weak self] in self?.host?.abort() }
    ) { [weak self] count in
      if let limit, count >= limit { self?.host?.finish() }
    }
    state.withLock { $0.sink = sink }
  }

  private var host: FrontEndHost? { state.withLock { $0.host } }

  func start(_ engine: CaptureEngine, host: FrontEndHost) async throws(CaptureError) {
    guard
      let sink = state.withLock({ s -> EventSink? in
        s.host = host
        return s.sink
      })
    else { return }
    _ = engine.subscribe(configuration.name) { event in await sink.take(event) }
  }

  func engineStarted() throws(CaptureError) {
    guard let timeout = configuration.timeout, let sink = state.withLock({ $0.sink }) else { return }
    let judge = configuration.judge
    let host = self.host
    let timer = Deadline(timeout) {
      sink.markTimedOut()
      judge?.stop()
      host?.finish()
    }
    state.withLock { $0.timer = timer }
  }

  /// A signal, or another front end's failure: the verdicts are not waited for any more.
  func stopping(interrupted: Bool) {
    if interrupted { state.withLock { $0.sink }?.markInterrupted() }
    configuration.judge?.stop()
  }

  func stop() async {
    let (sink, timer) = state.withLock { ($0.sink, $0.timer) }
    sink?.drained()
    timer?.cancel()
  }

  /// Whether the run is ending on purpose (a device closed now was closed by us, not lost).
  var isStopping: Bool { state.withLock { $0.sink }?.isStopping ?? false }

  /// An error of the stream itself (a SocketCam scan failed): shown now, and the run's status.
  func fail(_ error: CaptureError) { state.withLock { $0.sink }?.fail(error) }
}
