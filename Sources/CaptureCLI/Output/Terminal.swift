import CaptureCore

#if canImport(Glibc)
  import Glibc
#endif

/// What output may add when a person, not a program, reads it. Decided once per process from
/// isatty(3) of the stream each part is written to, so a pipe or a file gets exactly the plain bytes:
/// - tabular plain output on stdout is padded into aligned columns only when stdout is a terminal;
/// - the `capture:` prefix of an error or warning on stderr is coloured only when stderr is a terminal,
///   `--no-color` was not given and NO_COLOR is unset or empty (https://no-color.org: "when present and
///   not an empty string", colour is off). NO_COLOR is about colour only; columns stay aligned.
struct Terminal: Sendable {
  enum Severity: Sendable { case error, warning }

  /// stdout is a terminal: tables are aligned.
  let alignsColumns: Bool
  /// stderr is a terminal and colour is allowed.
  let colours: Bool

  init(alignsColumns: Bool, colours: Bool) {
    self.alignsColumns = alignsColumns
    self.colours = colours
  }

  /// The terminal as it is for these two descriptors.
  static func detect(stdoutFD: Int32, stderrFD: Int32, noColor: Bool) -> Terminal {
    let noColorVariable = getenv("NO_COLOR").map { $0.pointee != 0 } ?? false
    return Terminal(
      alignsColumns: isatty(stdoutFD) == 1,
      colours: isatty(stderrFD) == 1 && !noColor && !noColorVariable)
  }

  /// Plain bytes everywhere: what a pipe gets.
  static let plain = Terminal(alignsColumns: false, colours: false)

  /// `capture: `, in bold red for an error and bold yellow for a warning when colours are on. Only the
  /// prefix is coloured, so the message itself is the same text on a terminal and in a log.
  func prefix(_ severity: Severity) -> String {
    guard colours else { return "capture: " }
    let sgr = severity == .error ? "1;31" : "1;33"
    return "\u{1B}[\(sgr)mcapture:\u{1B}[0m "
  }

  /// The lines of a table: on a terminal every column but the last padded to its widest cell plus two
  /// spaces; otherwise the cells joined with `separator`, as the command has always printed them.
  func table(_ rows: [[String]], separator: String) -> [String] {
    guard alignsColumns else { return rows.map { $0.joined(separator: separator) } }
    return Self.aligned(rows)
  }

  static func aligned(_ rows: [[String]]) -> [String] {
    var widths: [Int] = []
    for row in rows {
      for (i, cell) in row.enumerated().dropLast() {
        if i == widths.count { widths.append(0) }
        widths[i] = max(widths[i], cell.count)
      }
    }
    return rows.map { row in
      var line = ""
      for (i, cell) in row.enumerated() {
        if i == row.count - 1 {
          line += cell
        } else {
          line += cell + String(repeating: " ", count: widths[i] - cell.count + 2)
        }
      }
      return line
    }
  }
}
