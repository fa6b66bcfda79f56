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

  /// `capture: NAME (code): message` on stderr; with --json also `{"error":{...}}` on stdout.
  func error(_ error: CaptureError) {
    write(
      stderrFD, terminal.prefix(.error) + "\(error.code.name) (\(error.code.rawValue)): \(error.message)\n")
    if isJSON { json(Render.error(error)) }
  }

  private func write(_ fd: Int32, _ text: String) {
    lock.withLock { _ in
      var text = text
      // EPIPE and friends: the reader went away; nothing useful is left to do with this line.
      text.withUTF8 { buffer in try? SystemFile.writeAll(fd: fd, UnsafeRawBufferPointer(buffer)) }
    }
  }
}
