import CaptureCore

/// Where a command's event stream goes: stdout (the default), an appended `--output FILE`, or nowhere
/// (`listen --confirm-stdin` without --output: stdout carries only the codes to judge). The lines are
/// the same in every case: plain text or JSON Lines, one line per event, one write(2) each.
/// Diagnostics never go here; they stay on stderr through Output.
struct EventStream: Sendable {
  /// The file, for messages; nil for stdout and nowhere.
  let file: String?
  private let write: @Sendable (String) throws(CaptureError) -> Void
  /// Keeps a JSON document as the value it is instead of writing its line: a remote command's stdout
  /// (Output(collecting:)), whose reply takes the documents themselves. nil: every line is written.
  private let keep: (@Sendable (JSON) -> Void)?

  private init(
    file: String?, keep: (@Sendable (JSON) -> Void)? = nil,
    write: @escaping @Sendable (String) throws(CaptureError) -> Void
  ) {
    self.file = file
    self.keep = keep
    self.write = write
  }

  func line(_ text: String) throws(CaptureError) { try write(text) }

  func json(_ value: JSON) throws(CaptureError) {
    if let keep { keep(value) } else { try write(value.serialized) }
  }

  /// A JSON document a faster path serializes (Render.eventLine, the same bytes as the value's
  /// `serialized`); `value` is made only where the document is kept as a value.
  func json(line text: @autoclosure () -> String, value: () -> JSON) throws(CaptureError) {
    if let keep { keep(value()) } else { try write(text()) }
  }

  /// stdout through `output`: a reader that went away (EPIPE) is not an error there and the lines
  /// are dropped quietly; any other failed write (a full disk, a closed stdout) stops the stream
  /// with UNABLEWRITEFILE, as a failed `--output FILE` does.
  static func standardOutput(_ output: Output) -> EventStream {
    let keep: (@Sendable (JSON) -> Void)?
    if output.collectsDocuments {
      keep = { (value: JSON) in output.json(value) }
    } else {
      keep = nil
    }
    return EventStream(file: nil, keep: keep) { (text: String) throws(CaptureError) in
      try output.streamLine(text)
    }
  }

  static let discarded = EventStream(file: nil) { _ in }

  /// `path`, opened for appending now (so a bad path fails before any device is touched) and
  /// followed across log rotation (AppendFile). Created 0600 (before umask): the events carry what
  /// was scanned — ID cards, driver licences, tag UIDs — so the log is as private as the state file
  /// until its owner widens it (an existing file, or one logrotate creates, keeps its own mode).
  static func appending(to path: FilePath) throws(CaptureError) -> EventStream {
    let file = try AppendFile(path: path, mode: 0o600)
    return EventStream(file: path.description) { (text: String) throws(CaptureError) in
      try file.append(Array((text + "\n").utf8))
    }
  }
}
