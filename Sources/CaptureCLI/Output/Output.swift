import CaptureCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Where everything the user sees goes. stdout gets results only, written with write(2) per line so
/// each event reaches a pipe as soon as it happens; stderr gets diagnostics.
final class Output: @unchecked Sendable {
  enum Mode: Sendable { case plain, json }

  let mode: Mode
  let isQuiet: Bool
  let isVerbose: Bool
  private let stdoutFD: Int32
  private let stderrFD: Int32
  /// Colour and aligned columns, on a terminal only (Terminal.swift).
  let terminal: Terminal
  /// Guards the two fds: events may be printed from more than one task.
  private let lock = Mutex(())

  init(
    mode: Mode, quiet: Bool, verbose: Bool, noColor: Bool = false, stdoutFD: Int32 = 1, stderrFD: Int32 = 2,
    terminal: Terminal? = nil
  ) {
    self.mode = mode
    self.isQuiet = quiet
    self.isVerbose = verbose && !quiet
    self.stdoutFD = stdoutFD
    self.stderrFD = stderrFD
    self.terminal = terminal ?? .detect(stdoutFD: stdoutFD, stderrFD: stderrFD, noColor: noColor)
  }

  var isJSON: Bool { mode == .json }

  func line(_ text: String) { write(stdoutFD, text + "\n") }
  func json(_ value: JSON) { line(value.serialized) }

  /// Rows of plain tabular output: aligned on a terminal, else joined with `separator` (Terminal.table).
  func table(_ rows: [[String]], separator: String = "\t") {
    for text in terminal.table(rows, separator: separator) { line(text) }
  }

  /// A diagnostic on stderr, prefixed with the program name.
  func warn(_ text: String) {
    if !isQuiet { write(stderrFD, terminal.prefix(.warning) + "\(text)\n") }
  }

  func info(_ text: String) {
    if isVerbose { write(stderrFD, "capture: \(text)\n") }
  }

  func raw(stderr text: String) { write(stderrFD, text) }
  func raw(stdout text: String) { write(stdoutFD, text) }

  /// `capture: NAME (code): message` on stderr; with --json (and `withObject`) also
  /// `{"error":{...}}` on stdout.
  func error(_ error: CaptureError, withObject: Bool = true) {
    write(stderrFD, Self.errorLine(error, prefix: terminal.prefix(.error)))
    if isJSON && withObject { json(Self.errorDocument(error)) }
  }

  /// The one form of an error on stderr: `capture: NAME (code): message` and a newline.
  /// `prefix` is `capture: `, coloured on a terminal (`Terminal.prefix`).
  static func errorLine(_ error: CaptureError, prefix: String = "capture: ") -> String {
    "\(prefix)\(error)\n"
  }

  /// The one JSON form of an error, `{"code":…,"name":…,"message":…}`: the value of the `error` key in
  /// the bare error document, an error event and get's partial document.
  static func errorObject(_ error: CaptureError) -> JSON {
    .object([
      "code": .int(error.code.rawValue), "name": .string(error.code.name), "message": .string(error.message),
    ])
  }

  /// `{"error":{...}}`, the document a failed command writes with --json.
  static func errorDocument(_ error: CaptureError) -> JSON { .object(["error": errorObject(error)]) }

  private func write(_ fd: Int32, _ text: String) {
    lock.withLock { _ in
      var text = text
      // EPIPE and friends: the reader went away; nothing useful is left to do with this line.
      text.withUTF8 { buffer in try? SystemFile.writeAll(fd: fd, UnsafeRawBufferPointer(buffer)) }
    }
  }
}
