import CaptureContract
import CaptureCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Where everything the user sees goes. stdout gets results only, written with write(2) per line so
/// each event reaches a pipe as soon as it happens; stderr gets diagnostics.
///
/// Every write of every command goes through `OutputChannel`, the one place that decides what a
/// failed write means: a reader that went away (EPIPE) ends the output quietly and the command keeps
/// its own status; any other failure (ENOSPC on /dev/full, EBADF on a closed stdout, EIO) is the
/// command's failure, UNABLEWRITEFILE (exit 33) with one line on stderr (`settle`).
final class Output: Sendable {
  enum Mode: Sendable { case plain, json }

  let mode: Mode
  let isQuiet: Bool
  let isVerbose: Bool
  private let stdout: OutputChannel
  private let stderr: OutputChannel
  /// Colour and aligned columns, on a terminal only (Terminal.swift).
  let terminal: Terminal
  /// A remote command's results (RemoteRunner): documents are kept as values here instead of being
  /// written, and nothing is written to any descriptor.
  private let collector: DocumentCollector?

  init(
    mode: Mode, quiet: Bool, verbose: Bool, noColor: Bool = false, stdoutFD: Int32 = 1, stderrFD: Int32 = 2,
    terminal: Terminal? = nil
  ) {
    self.mode = mode
    self.isQuiet = quiet
    self.isVerbose = verbose && !quiet
    self.stdout = OutputChannel.for(stdoutFD)
    self.stderr = OutputChannel.for(stderrFD)
    self.terminal = terminal ?? .detect(stdoutFD: stdoutFD, stderrFD: stderrFD, noColor: noColor)
    self.collector = nil
  }

  /// The output of a remote command (`--mqtt-commands`): `--json` and `--quiet` as the command line's
  /// would be, every document kept in `collector` as a value, diagnostics dropped (the reply is the
  /// document; the error, where there is one, is a document too).
  init(collecting collector: DocumentCollector) {
    self.mode = .json
    self.isQuiet = true
    self.isVerbose = false
    self.stdout = .discarding
    self.stderr = .discarding
    self.terminal = .plain
    self.collector = collector
  }

  var isJSON: Bool { mode == .json }
  /// A remote command's output: documents are kept as values (`init(collecting:)`).
  var collectsDocuments: Bool { collector != nil }

  /// One line on stdout; false when it could not be written (EPIPE included): nobody saw it.
  @discardableResult
  func line(_ text: String) -> Bool {
    if let collector {
      // Not a document: kept as the string it is (a reply shows it under "output").
      collector.append(.string(text))
      return true
    }
    return stdout.write(text + "\n") == nil && !stdout.isReaderGone
  }

  func json(_ value: JSON) {
    if let collector {
      collector.append(value)
    } else {
      line(value.serialized)
    }
  }

  /// One result of a command, shown the way the mode says (ResultDocument); false when it could not
  /// be written (EPIPE included).
  @discardableResult
  func document(_ document: ResultDocument) -> Bool {
    if isJSON {
      if let collector {
        collector.append(document.json)
        return true
      }
      return line(document.json.serialized)
    }
    switch document.plain {
    case .lines(let lines):
      var written = true
      for text in lines { written = line(text) && written }
      return written
    case .table(let rows, let separator):
      table(rows, separator: separator)
      return stdout.failure == nil && !stdout.isReaderGone
    case .nothing:
      return true
    }
  }

  /// A line of an event stream on stdout (listen, trigger): a write that failed other than by EPIPE
  /// is thrown, so the stream stops and shows it as its error (the caller now owns the message).
  func streamLine(_ text: String) throws(CaptureError) {
    if let collector {
      collector.append(.string(text))
      return
    }
    if let failure = stdout.write(text + "\n", claiming: true) { throw failure }
  }

  /// The command's exit status after its output: a failed stdout write not yet shown gets its one
  /// stderr line here, and a command that would have exited 0 exits 33 (UNABLEWRITEFILE), since what
  /// it printed is lost. A command that failed on its own keeps its status (its error came first).
  func settle(_ status: Int32) -> Int32 {
    guard let failure = stdout.failure else { return status }
    if stdout.claimForReport() {
      stderr.write(Self.errorLine(failure, prefix: terminal.prefix(.error)))
    }
    return status == 0 ? ExitStatus.of(failure.code) : status
  }

  /// Rows of plain tabular output: aligned on a terminal, else joined with `separator` (Terminal.table).
  func table(_ rows: [[String]], separator: String = "\t") {
    for text in terminal.table(rows, separator: separator) { line(text) }
  }

  /// A diagnostic on stderr, prefixed with the program name.
  func warn(_ text: String) {
    if !isQuiet { stderr.write(terminal.prefix(.warning) + "\(text)\n") }
  }

  func info(_ text: String) {
    if isVerbose { stderr.write("capture: \(text)\n") }
  }

  func raw(stderr text: String) { stderr.write(text) }
  func raw(stdout text: String) {
    if let collector {
      collector.append(.string(text))
    } else {
      stdout.write(text)
    }
  }

  /// `capture: NAME (code): message` on stderr; with --json (and `withObject`) also
  /// `{"error":{...}}` on stdout.
  func error(_ error: CaptureError, withObject: Bool = true) {
    stderr.write(Self.errorLine(error, prefix: terminal.prefix(.error)))
    if isJSON && withObject { json(Render.errorDocument(error)) }
  }

  /// The one form of an error on stderr: `capture: NAME (code): message` and a newline.
  /// `prefix` is `capture: `, coloured on a terminal (`Terminal.prefix`).
  static func errorLine(_ error: CaptureError, prefix: String = "capture: ") -> String {
    "\(prefix)\(error)\n"
  }

}

/// One output descriptor and what became of its writes. stdout and stderr are one channel each for
/// the whole process (every Output shares them, so a failure seen by one is seen by all and reported
/// once); another descriptor (a test's pipe) gets a channel of its own.
final class OutputChannel: Sendable {
  let fd: Int32

  private struct State {
    /// EPIPE: nobody reads any more; later writes are dropped without a word.
    var readerGone = false
    /// The first failure other than EPIPE; later writes are dropped (each would fail the same way).
    var failure: CaptureError?
    /// The failure's message was shown (by the stream that met it, or by `settle`).
    var isReported = false
  }
  /// Also what keeps lines whole: events may be printed from more than one task.
  private let state = Mutex(State())

  private init(fd: Int32) { self.fd = fd }

  static let standardOutput = OutputChannel(fd: 1)
  static let standardError = OutputChannel(fd: 2)
  /// Writes nothing and never fails (a remote command's stdout and stderr: Output(collecting:)).
  static let discarding = OutputChannel(fd: -1)

  static func `for`(_ fd: Int32) -> OutputChannel {
    switch fd {
    case 1: standardOutput
    case 2: standardError
    default: OutputChannel(fd: fd)
    }
  }

  var failure: CaptureError? { state.withLock { $0.failure } }
  var isReaderGone: Bool { state.withLock { $0.readerGone } }

  /// Marks the failure as shown; true for the one caller that should show it.
  func claimForReport() -> Bool {
    state.withLock { state in
      defer { state.isReported = true }
      return state.failure != nil && !state.isReported
    }
  }

  /// Writes all of `text`, or records why it could not be: nil when written or dropped after EPIPE,
  /// else the failure (the first one, or the one recorded before). With `claiming`, the caller takes
  /// on showing a failure not shown yet.
  @discardableResult
  func write(_ text: String, claiming: Bool = false) -> CaptureError? {
    state.withLock { state in
      if state.readerGone || fd < 0 { return nil }
      if let failure = state.failure {
        if claiming && !state.isReported {
          state.isReported = true
          return failure
        }
        return claiming ? nil : failure
      }
      var text = text
      let result = text.withUTF8 { buffer in
        Result { () throws(Errno) in try SystemFile.writeAll(fd: fd, UnsafeRawBufferPointer(buffer)) }
      }
      guard case .failure(let errno) = result else { return nil }
      if errno.code == EPIPE {
        state.readerGone = true
        return nil
      }
      let failure = CaptureError(.unableWriteFile, "cannot write \(Self.name(fd)): \(errno.message)")
      state.failure = failure
      state.isReported = claiming
      return failure
    }
  }

  static func name(_ fd: Int32) -> String {
    switch fd {
    case 1: "standard output"
    case 2: "standard error"
    default: "descriptor \(fd)"
    }
  }
}
