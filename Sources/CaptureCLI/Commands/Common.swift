import CaptureContract
import CaptureCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

extension ParsedArguments {
  var commandName: String? { command?.name }

  func usage(_ message: String) -> UsageError { UsageError(message: message, command: command?.name) }

  /// The command's `--timeout` (or the global one: they are the same option).
  func timeout() throws(UsageError) -> Duration? {
    guard let text = value("timeout") else { return nil }
    return try Values.duration(text, option: "--timeout", command: commandName)
  }

  /// `--keymap LAYOUT` (listen, trigger), checked against the layouts the hid driver knows.
  func keymap() throws(UsageError) -> String? {
    guard let text = value("keymap") else { return nil }
    guard KeyboardLayout(rawValue: text.lowercased()) != nil else {
      throw usage(
        "unknown --keymap '\(text)'; use \(KeyboardLayout.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    return text.lowercased()
  }

  func requireOperands(_ range: ClosedRange<Int>, _ what: String) throws(UsageError) {
    if operands.count < range.lowerBound { throw usage("missing \(what)") }
    if operands.count > range.upperBound {
      throw usage("unexpected argument '\(operands[range.upperBound])'")
    }
  }
}

extension Context {
  /// The device manager's operations (connect and remember, remove, partnership, profiles), the
  /// same CaptureCore code the engine runs, over this command's drivers, state and global options.
  var devices: DeviceManager {
    let output = self.output
    return DeviceManager(
      system: system, store: state, adapter: globals.adapter, timeout: globals.timeout,
      warn: { output.warn($0) })
  }

  func open(
    _ selector: DeviceSelector, sources: [FrameSourceItem] = [], reconnects: Bool = false,
    wantsEvents: Bool = true, keymap: String? = nil
  ) async throws(CaptureError) -> any Device {
    let output = self.output
    var request = OpenRequest(
      selector: selector, frameSources: sources, adapter: globals.adapter, warn: { output.warn($0) })
    request.reconnects = reconnects
    request.wantsEvents = wantsEvents
    request.timeout = globals.timeout
    request.keymap = keymap
    return try await system.open(request, state: state)
  }

  /// A remembered alias or friendly name → the selector it was remembered under (17 when unknown).
  func resolve(_ selector: DeviceSelector) async throws(CaptureError) -> DeviceSelector {
    guard case .name(let name) = selector else { return selector }
    let remembered = try state.load().device(named: name)
    guard let remembered else {
      throw CaptureError(.notFound, "no remembered device is called '\(name)' (see capture list)")
    }
    return try DeviceSelector.parse(remembered.id)
  }
}

/// Outcome of draining a device's events.
struct DrainResult {
  var decoded = 0
  var firstError: CaptureError?
  var timedOut = false
  var interrupted = false
}

/// SIGINT, SIGTERM and SIGHUP, from the first instant of the process to its exit.
///
/// `install()` runs first thing in `main` (CaptureCLI.prepareProcess), before anything that can take
/// time, so the only window in which a signal still has its default action is the process's own exec
/// and runtime start: `systemctl stop` or a Ctrl-C in the first millisecond must end listen and serve
/// the documented way (exit 0 after flushing; trigger 91), never by the signal's default action. From
/// then on a signal is held until the command says what it means for it:
/// - listen, serve and trigger `claim` them: a signal that came before their handler (`watch`) is
///   delivered the moment the handler is installed, and one that no handler took ends the command with
///   the status it documents for an interruption (`settle`);
/// - every other command gives SIGINT, SIGTERM and SIGHUP their default actions back
///   (`useDefaultActions`) once it is known, and a signal held until then is raised again, so
///   `capture get` ends by SIGINT exactly as it did before.
/// SIGHUP → `onHangUp` where a command asks for one (listen without DEVICE, serve: re-read the state
/// file); before that handler exists a service holds it and re-reads once the handler is installed,
/// anything else takes its default action.
/// A namespace of process-wide state: the signal handlers can only reach globals.
enum Interruption {
  /// SIGINT or SIGTERM arrived (the number of the first one; 0 for none). Written by the handler.
  nonisolated(unsafe) static var fired: sig_atomic_t = 0
  /// The write end of the self-pipe (-1 until `install`).
  nonisolated(unsafe) static var pipeWrite: Int32 = -1

  /// What each signal means now, and the command's handlers (SignalRoutes).
  static let routes = SignalRoutes()

  /// Set while a remote command (`--mqtt-commands`) runs inside listen or serve: its own watch (trigger's)
  /// must not take the signals from the command that runs it.
  @TaskLocal static var isNested = false
  /// A remote command's stand-in for SIGINT: its `watch` handler goes here, and the command's deadline
  /// calls it (RemoteRunner), so a cut command ends exactly as the command line does on a signal.
  @TaskLocal static var cut: Cut?

  /// One remote command's cut: the handler its `watch` installed, called once when the cut comes
  /// (at once if it came first).
  final class Cut: Sendable {
    private let state = Mutex<(handler: (@Sendable () -> Void)?, fired: Bool)>((nil, false))

    func install(_ handler: @escaping @Sendable () -> Void) {
      let fired = state.withLock { s -> Bool in
        s.handler = handler
        return s.fired
      }
      if fired { handler() }
    }

    func fire() {
      let handler = state.withLock { s -> (@Sendable () -> Void)? in
        guard !s.fired else { return nil }
        s.fired = true
        return s.handler
      }
      handler?()
    }
  }

  /// Installs the handlers and the relay, once per process (CaptureCLI.prepareProcess calls it first
  /// thing). A self-pipe: the async-signal-safe handler writes the signal's number as one byte; a
  /// thread of its own reads it and acts. A socket pair rather than pipe(2), for SOCK_CLOEXEC: both
  /// ends are close-on-exec from the call that makes them (Glibc's Swift module does not export
  /// pipe2), so no `--confirm` child, or any other program capture starts, inherits them.
  static func install() {
    guard pipeWrite < 0 else { return }
    var fds: [Int32] = [-1, -1]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
      return
    }
    // Non-blocking write end: a burst of signals that fills the buffer drops bytes, never hangs a handler.
    _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
    // Touched here, so the handler's first access never runs a static's lazy initialisation.
    fired = 0
    pipeWrite = fds[1]
    let readFD = fds[0]
    // The handlers first, then the relay: a signal in between waits in the pipe for the relay.
    signal(SIGINT, signalHandler)
    signal(SIGTERM, signalHandler)
    signal(SIGHUP, signalHandler)
    do {
      try ReaderThread(name: "signal-relay").start {
        var byte: UInt8 = 0
        while true {
          let n = read(readFD, &byte, 1)
          if n == 1 {
            relay(Int32(byte))
            continue
          }
          if n < 0 && errno == EINTR { continue }
          break
        }
      }
    } catch {
      // No thread to be had at start: the signals keep their default actions, and one that came
      // meanwhile takes it now.
      signal(SIGINT, SIG_DFL)
      signal(SIGTERM, SIG_DFL)
      signal(SIGHUP, SIG_DFL)
      pipeWrite = -1
      close(fds[0])
      close(fds[1])
      if fired != 0 { raiseWithDefaultAction(fired) }
    }
  }

  /// What a signal means now, on the relay thread.
  private static func relay(_ signalNumber: Int32) {
    let action = routes.route(signalNumber)
    switch action {
    case .none: break
    case .callInterrupt(let call): call()
    case .callHangUp(let call): call()
    case .raiseDefault: raiseWithDefaultAction(signalNumber)
    }
  }

  /// The signal's own default action, now: the process ends by it as if no handler had been installed.
  private static func raiseWithDefaultAction(_ signalNumber: Int32) {
    signal(signalNumber, SIG_DFL)
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, signalNumber)
    pthread_sigmask(SIG_UNBLOCK, &set, nil)
    raise(signalNumber)
  }

  /// listen, serve and trigger: the signals are theirs. `interrupted` is the status a signal that no
  /// handler took ends the command with (`settle`); `serviceHangUp`: SIGHUP is held until
  /// `watchHangUp`, which delivers it.
  static func claim(interrupted: ResultCode, serviceHangUp: Bool) {
    if isNested { return }
    routes.claim(interrupted: interrupted, serviceHangUp: serviceHangUp)
  }

  /// Every other command: SIGINT, SIGTERM and SIGHUP take their default actions again, and one that
  /// came while the command was not yet known is raised now.
  static func useDefaultActions() {
    if isNested { return }
    let pending = routes.useDefaults()
    signal(SIGINT, SIG_DFL)
    signal(SIGTERM, SIG_DFL)
    signal(SIGHUP, SIG_DFL)
    for signalNumber in pending { raiseWithDefaultAction(signalNumber) }
  }

  /// The exit status once the command has returned `status`: a signal held and never taken by a
  /// handler ends a claiming command with its documented status, and any other with the signal's
  /// default action (a command that ended before it was known: a usage error, --help).
  static func settle(_ status: Int32) -> Int32 {
    let (mode, pending) = routes.settlement
    guard pending != 0 else { return status }
    switch mode {
    case .claimed(let interrupted, _): return ExitStatus.of(interrupted)
    case .undecided, .defaults:
      raiseWithDefaultAction(pending)
      return status
    }
  }

  /// SIGHUP → `onHangUp`, from now on. A service installs it once it has read the state file itself,
  /// so a SIGHUP, or a file swapped when the handler shows, never meets a start that has not read the
  /// file yet.
  static func watchHangUp(_ onHangUp: @escaping @Sendable () -> Void) {
    if isNested { return }
    let pending = routes.watchHangUp(onHangUp)
    // A SIGHUP held since the start: re-read once more (harmless if it came before the first read).
    if pending { onHangUp() }
  }

  /// SIGINT/SIGTERM → `onSignal` on the relay thread, from now on; one that came before (since the
  /// process started) is delivered now, on a thread of its own.
  static func watch(_ onSignal: @escaping @Sendable () -> Void, onHangUp: (@Sendable () -> Void)? = nil) {
    if isNested {
      cut?.install(onSignal)
      return
    }
    install()
    let pending = routes.watch(onSignal, onHangUp: onHangUp)
    if pending { onSignal() }
  }
}

/// Saves errno and restores it on return: a handler runs between any two instructions of the thread it
/// interrupts, which may be about to read the errno of its own failed call (POSIX signal concepts,
/// "the value of errno" must be preserved by handlers that change it; write(2) may).
private func signalHandler(_ signal: Int32) {
  let saved = errno
  if signal != SIGHUP && Interruption.fired == 0 { Interruption.fired = signal }
  // The signal's number as the byte (SIGHUP 1, SIGINT 2, SIGTERM 15): the relay tells them apart.
  var byte = UInt8(truncatingIfNeeded: signal)
  _ = write(Interruption.pipeWrite, &byte, 1)
  errno = saved
}

/// Runs `onExpiry` once when `timeout` passes, unless cancelled first. A nil timeout never expires.
struct Deadline {
  private let task: Task<Void, Never>?

  init(_ timeout: Duration?, _ onExpiry: @escaping @Sendable () async -> Void) {
    task = timeout.map { timeout in
      Task {
        do { try await Task.sleep(for: timeout) } catch { return }
        await onExpiry()
      }
    }
  }

  func cancel() { task?.cancel() }
}
