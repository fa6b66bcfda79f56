/// A front end of the engine: what takes the engine's events and devices to a person or a program —
/// the command line's event printer, the Capture service for web apps (`capture serve`), the MQTT
/// fleet publisher (`--mqtt`). The composition root picks the front ends as it picks the drivers, and
/// one runner (CaptureCLI's `EngineRun`, docs/engine.md §1) drives them all the same way:
///
/// 1. `prepare` each, in order, before any device is opened: what must fail fast and touches no
///    device (a port bound, an `--output` file opened), so a second `capture serve` fails at once;
/// 2. the devices named on the command line are opened;
/// 3. `start` each, in order, before the engine opens or is handed a device: each subscribes then, so
///    it sees every arrival; a lane subscriber started earlier takes each event first;
/// 4. the engine starts; `engineStarted` each (a service accepts connections only now);
/// 5. when the run ends early (a signal, `--timeout`, a front end's failure) `stopping` each, then
///    the engine stops; once it has (every device closed, every removal delivered) `stop` each, in
///    order.
///
/// A front end that failed for good (a broker that refused the password) says so with
/// `FrontEndHost.fail` and reports it as `failure`: the first one is the run's error. A front end never
/// imports another front end: what one has for another (a refused code shown in listen's stream)
/// goes through the host.
public protocol FrontEnd: AnyObject, Sendable {
  /// Before any device is opened. Thrown: the run fails with it; the front ends prepared before are
  /// stopped.
  func prepare(_ engine: CaptureEngine) async throws(CaptureError)
  /// After the command's devices are opened, before the engine is started or handed them. Thrown:
  /// the run fails with it; every front end prepared is stopped.
  func start(_ engine: CaptureEngine, host: FrontEndHost) async throws(CaptureError)
  /// The engine runs, with its devices. Thrown: the run stops and fails with it.
  func engineStarted() throws(CaptureError)
  /// The run is ending before the engine finished by itself; `interrupted`: by SIGINT or SIGTERM.
  /// Called on any thread (the signal relay's included): it must return at once.
  func stopping(interrupted: Bool)
  /// The engine has stopped (or the run never got that far): finish, flush, close. Called once,
  /// whether or not `start` was.
  func stop() async
  /// Why it ended the run, if it did.
  var failure: CaptureError? { get }
}

extension FrontEnd {
  public func prepare(_ engine: CaptureEngine) async throws(CaptureError) {}
  public func engineStarted() throws(CaptureError) {}
  public func stopping(interrupted: Bool) {}
  public var failure: CaptureError? { nil }
}

/// What the runner gives a front end to reach the run, never another front end directly.
public struct FrontEndHost: Sendable {
  /// Ends the run: the engine stops, as when the last device's stream ends. For a limit reached
  /// (`listen --count`) or a failure already recorded as `failure`.
  public var finish: @Sendable () -> Void
  /// Ends the run early, as a failure does: every front end is told `stopping(interrupted: false)`,
  /// then the engine stops (a broken `--output` stream).
  public var abort: @Sendable () -> Void
  /// An error event for the run's own event stream, where it has one (listen's stdout or `--output`,
  /// and so its exit status); else the error's line on stderr. It does not go to the engine's
  /// subscribers.
  public var report: @Sendable (Event) -> Void

  public init(
    finish: @escaping @Sendable () -> Void, abort: @escaping @Sendable () -> Void,
    report: @escaping @Sendable (Event) -> Void
  ) {
    self.finish = finish
    self.abort = abort
    self.report = report
  }
}

/// Where a front end's diagnostics go: the command line's stderr (`capture: ...` lines).
public struct FrontEndLog: Sendable {
  /// A warning (not with -q).
  public var warn: @Sendable (String) -> Void
  /// A -v line.
  public var info: @Sendable (String) -> Void
  /// Text as it is, for a line the front end words itself (serve's "serving CaptureJS on ...").
  public var raw: @Sendable (String) -> Void

  public init(
    warn: @escaping @Sendable (String) -> Void, info: @escaping @Sendable (String) -> Void,
    raw: @escaping @Sendable (String) -> Void
  ) {
    self.warn = warn
    self.info = info
    self.raw = raw
  }
}

/// Runs one command of the command line for a remote peer (`--mqtt-commands`, docs/fleet.md §5):
/// `argv` and an inline profile → the exit status and the documents the command made with `--json`
/// (its results, and its error object where it failed), in order, as values.
/// Cancelled when the command is cut at its deadline: it returns promptly, releasing what it holds.
public typealias RemoteCommandRunner = @Sendable ([String], JSON?) async -> (exit: Int32, documents: [JSON])

/// The options of a command as the command line parsed them, for a front end that reads its own
/// (`--mqtt` and its options): a problem is thrown as ESKT_INVALIDPARAMETER with the message the
/// command line shows as its usage error.
public protocol FrontEndOptions: Sendable {
  /// The last value of `--long`, or nil.
  func value(_ long: String) -> String?
  func flag(_ long: String) -> Bool
  /// `--long N`, a positive whole number, or nil when not given.
  func count(_ long: String) throws(CaptureError) -> Int?
  /// `--long DUR` (500ms, 10s, 2m), or nil when not given.
  func duration(_ long: String) throws(CaptureError) -> Duration?
}

/// What a front end asked for by options (`--mqtt URL`) is made with once the run has its engine.
public struct FrontEndContext: Sendable {
  public var engine: CaptureEngine
  /// The state (the `--mqtt` spool lives in its directory).
  public var store: StateStore
  /// The command line's commands, for remote peers.
  public var runner: RemoteCommandRunner
  /// Another front end (listen's `--confirm`) tells each device its verdict on a code.
  public var judged: Bool
  public var log: FrontEndLog

  public init(
    engine: CaptureEngine, store: StateStore, runner: @escaping RemoteCommandRunner, judged: Bool,
    log: FrontEndLog
  ) {
    self.engine = engine
    self.store = store
    self.runner = runner
    self.judged = judged
    self.log = log
  }
}

/// A front end asked for by a command's options (`--mqtt URL`), read and checked as usage before
/// anything runs, made once the run has its engine.
public protocol FrontEndRequest: Sendable {
  func frontEnd(_ context: FrontEndContext) -> any FrontEnd
}
