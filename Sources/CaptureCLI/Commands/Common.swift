import CaptureCore

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

/// SIGINT/SIGTERM → a flag and a callback, so streams stop cleanly and flush (listen exits 0); SIGHUP →
/// another callback where a command asks for one (listen without DEVICE re-reads the state file).
/// A namespace of process-wide state: the signal handlers can only reach globals.
enum Interruption {
  nonisolated(unsafe) static var handler: (@Sendable () -> Void)?
  nonisolated(unsafe) static var hangUpHandler: (@Sendable () -> Void)?
  nonisolated(unsafe) static var fired: sig_atomic_t = 0
  /// The write end of the self-pipe (-1 until `watch`).
  nonisolated(unsafe) static var pipeWrite: Int32 = -1

  /// What the signal handlers write into the self-pipe (as literals): which callback the reader calls.
  static let interruptByte: UInt8 = 1
  static let hangUpByte: UInt8 = 2

  /// Installs handlers that call `onSignal` on a background thread when SIGINT or SIGTERM arrives, and
  /// `onHangUp` (when given; else SIGHUP keeps its default action) when SIGHUP arrives.
  /// Set while a remote command (`--mqtt-commands`) runs inside listen or serve: its own watch (trigger's)
  /// must not take the signals from the command that runs it.
  @TaskLocal static var isNested = false

  /// SIGHUP → `onHangUp`, from now on (after `watch`, whose relay delivers it). A service installs it
  /// once it has read the state file itself, so a SIGHUP, or a file swapped when the handler shows,
  /// never meets a start that has not read the file yet.
  static func watchHangUp(_ onHangUp: @escaping @Sendable () -> Void) {
    if isNested { return }
    hangUpHandler = onHangUp
    signal(SIGHUP, hangUpSignalHandler)
  }

  static func watch(_ onSignal: @escaping @Sendable () -> Void, onHangUp: (@Sendable () -> Void)? = nil) {
    if isNested { return }
    handler = onSignal
    hangUpHandler = onHangUp
    signal(SIGPIPE, SIG_IGN)
    // A self-pipe: the async-signal-safe handler writes one byte; a thread reads it and calls back.
    // A socket pair rather than pipe(2), for SOCK_CLOEXEC: both ends are close-on-exec from the call
    // that makes them (Glibc's Swift module does not export pipe2), so no `--confirm` child, or any
    // other program capture starts, inherits them.
    var fds: [Int32] = [-1, -1]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
      return
    }
    // Non-blocking write end: a burst of signals that fills the buffer drops bytes, never hangs a handler.
    _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
    pipeWrite = fds[1]
    // Touched here, so the handler's first access never runs a static's lazy initialisation.
    fired = 0
    let readFD = fds[0]
    signal(SIGINT, interruptionHandler)
    signal(SIGTERM, interruptionHandler)
    if onHangUp != nil { signal(SIGHUP, hangUpSignalHandler) }
    // The relay: a thread of its own that reads the pipe and calls back. Without one (no thread to be
    // had at start) only the callbacks are lost; the handlers still set `fired`.
    try? DetachedThread.start {
      var byte: UInt8 = 0
      while true {
        let n = read(readFD, &byte, 1)
        if n == 1 {
          if byte == Interruption.hangUpByte {
            Interruption.hangUpHandler?()
          } else {
            Interruption.handler?()
          }
          continue
        }
        if n < 0 && errno == EINTR { continue }
        break
      }
    }
  }

}

/// Saves errno and restores it on return: a handler runs between any two instructions of the thread it
/// interrupts, which may be about to read the errno of its own failed call (POSIX signal concepts,
/// "the value of errno" must be preserved by handlers that change it; write(2) may).
private func interruptionHandler(_ signal: Int32) {
  let saved = errno
  Interruption.fired = 1
  // A literal, not Interruption.interruptByte: a static's first access may run its lazy initializer,
  // which is not async-signal-safe.
  var byte: UInt8 = 1
  _ = write(Interruption.pipeWrite, &byte, 1)
  errno = saved
}

private func hangUpSignalHandler(_ signal: Int32) {
  let saved = errno
  var byte: UInt8 = 2  // Interruption.hangUpByte
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
