import CaptureContract
import CaptureCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `listen --confirm-stdin`: the host acknowledgement as a co-process protocol. Each decoded code is
/// written to stdout as one line (its text, or its JSON event with --json) and capture then reads
/// exactly one line from stdin: `good` or `bad`, case-insensitive, surrounding whitespace ignored.
/// Anything else is a bad read with a warning naming the line; no line within the time limit is a bad
/// read; end of file makes this code and every later one bad (one warning). One question is open at a
/// time: the next code waits until the previous one has its answer.
final class StdinConfirmation: HostJudge {
  let output: Output
  let timeLimit: Duration
  private let input: Int32
  /// Questions and answers strictly one after the other, across every device's drain, in the order
  /// they were asked. The wait is a blocking poll(2), so the questions are asked on a `ReaderThread`
  /// rather than on the Swift-concurrency pool (which has as few threads as cores): one thread while
  /// questions wait, which ends when none is left (a listen without codes holds no thread).
  private let questions = Mutex(Questions())
  private let state = Mutex(Reader())

  /// Asks one question (true) or, with no thread to ask on, answers it bad (false).
  private typealias Question = @Sendable (Bool) -> Void

  private struct Questions {
    var waiting: [Question] = []
    /// A thread is asking them; the next question joins its queue.
    var asking = false
  }

  /// A longer answer is not an answer; the rest of that line is skipped.
  static let maximumLine = 4096

  private struct Reader {
    var pending: [UInt8] = []
    var atEndOfFile = false
    /// Discarding the rest of an overlong line.
    var skippingLine = false
    /// Questions that timed out: an answer to one of them may still come.
    var owedLate = 0
    var stopped = false
  }

  init(output: Output, timeLimit: Duration, input: Int32 = 0) {
    self.output = output
    self.timeLimit = timeLimit
    self.input = input
  }

  func verdict(_ event: Event, _ data: DecodedData) async -> HostVerdict {
    await withCheckedContinuation { continuation in
      enqueue { canAsk in continuation.resume(returning: canAsk ? self.ask(event, data) : .bad) }
    }
  }

  /// Queues `question` and starts the thread that asks them when none runs.
  private func enqueue(_ question: @escaping Question) {
    let startThread = questions.withLock { q -> Bool in
      q.waiting.append(question)
      guard !q.asking else { return false }
      q.asking = true
      return true
    }
    guard startThread else { return }
    do throws(Errno) {
      try ReaderThread(name: "confirm-stdin").start { [self] in
        while let next = questions.withLock({ q -> Question? in
          guard !q.waiting.isEmpty else {
            q.asking = false
            return nil
          }
          return q.waiting.removeFirst()
        }) {
          next(true)
        }
      }
    } catch {
      // No thread to ask on (EAGAIN): the codes waiting are bad reads, as when no answer can come.
      let unasked = questions.withLock { q -> [Question] in
        q.asking = false
        defer { q.waiting.removeAll() }
        return q.waiting
      }
      output.warn("--confirm-stdin: cannot start a thread (\(error.message)); the code is bad")
      for question in unasked { question(false) }
    }
  }

  func stop() { state.withLock { $0.stopped = true } }

  /// The question as stdout carries it. Plain: the code's plain line (`DecodedData.plainLine`, the
  /// escape every plain code line uses), so a code holding a line break is still one line and the
  /// co-process never answers twice.
  func question(_ event: Event, _ data: DecodedData) -> String {
    output.isJSON ? Render.event(event).serialized : data.plainLine
  }

  private func ask(_ event: Event, _ data: DecodedData) -> HostVerdict {
    discardLateAnswers()
    // The question goes out even when no answer can come (end of file, stopping): a code that reached
    // the host is shown exactly once. One that could not be written reached nobody: it is bad.
    guard output.line(question(event, data)) else { return .bad }
    let clock = ContinuousClock()
    let deadline = clock.now + timeLimit
    while true {
      let (line, ended, stopped) = state.withLock { reader in
        (Self.takeLine(&reader), reader.atEndOfFile, reader.stopped)
      }
      if let line { return judge(line) }
      if ended || stopped { return .bad }
      let remaining = deadline - clock.now
      if remaining <= .zero {
        state.withLock { $0.owedLate += 1 }
        output.warn(
          "--confirm-stdin: no answer within \(TriggerCommand.describe(timeLimit)); the code is bad")
        return .bad
      }
      // Short slices, so stop() (SIGINT, --timeout) ends the wait promptly.
      let slice = min(remaining, .milliseconds(100))
      let milliseconds =
        slice.components.seconds * 1000 + slice.components.attoseconds / 1_000_000_000_000_000
      readAvailable(waiting: Int32(max(1, milliseconds)))
    }
  }

  /// An answer that came after its question timed out must not be taken for the next code's: lines
  /// already waiting when the next question goes out are dropped, up to the number of timed-out
  /// questions. (Without sequence numbers a later straggler cannot be told apart.)
  private func discardLateAnswers() {
    guard state.withLock({ $0.owedLate }) > 0 else { return }
    readAvailable(waiting: 0)
    let dropped = state.withLock { reader -> [String] in
      var lines: [String] = []
      while reader.owedLate > 0, let line = Self.takeLine(&reader) {
        lines.append(line)
        reader.owedLate -= 1
      }
      reader.owedLate = 0
      return lines
    }
    for line in dropped { output.warn("--confirm-stdin: late answer \(Self.shown(line)) ignored") }
  }

  /// One read of what stdin has, after waiting up to `waiting` ms for it.
  private func readAvailable(waiting: Int32) {
    var descriptor = pollfd(fd: input, events: Int16(POLLIN), revents: 0)
    let ready = poll(&descriptor, 1, waiting)
    guard ready > 0 else { return }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
    if n < 0 && (errno == EINTR || errno == EAGAIN) { return }
    let failure = n < 0 ? Errno.current.message : nil
    let firstEnd = state.withLock { reader -> Bool in
      if n > 0 {
        reader.pending += buffer[0..<n]
        return false
      }
      defer { reader.atEndOfFile = true }
      return !reader.atEndOfFile
    }
    if firstEnd {
      let why = failure.map { "cannot be read (\($0))" } ?? "closed"
      output.warn("--confirm-stdin: standard input \(why); this code and every later one are bad")
    }
  }

  /// The next complete line of `reader.pending`, without its newline. An overlong line is answered
  /// as garbage and the rest of it skipped.
  private static func takeLine(_ reader: inout Reader) -> String? {
    while true {
      if let end = reader.pending.firstIndex(of: 10) {
        let line = Array(reader.pending[..<end])
        reader.pending.removeSubrange(...end)
        if reader.skippingLine {
          reader.skippingLine = false
          continue
        }
        return String(decoding: line, as: UTF8.self)
      }
      if reader.skippingLine {
        reader.pending.removeAll()
        return nil
      }
      if reader.pending.count > maximumLine {
        let head = String(decoding: reader.pending.prefix(40), as: UTF8.self)
        reader.pending.removeAll()
        reader.skippingLine = true
        return head + "…"
      }
      // A last line without a newline before end of file still counts.
      if reader.atEndOfFile && !reader.pending.isEmpty {
        let line = String(decoding: reader.pending, as: UTF8.self)
        reader.pending.removeAll()
        return line
      }
      return nil
    }
  }

  private func judge(_ line: String) -> HostVerdict {
    switch Self.trimmed(line).lowercased() {
    case "good": return .good
    case "bad": return .bad
    default:
      output.warn("--confirm-stdin: expected good or bad, got \(Self.shown(line)); the code is bad")
      return .bad
    }
  }

  private static func trimmed(_ line: String) -> Substring {
    var text = Substring(line)
    while let first = text.first, first.isWhitespace { text.removeFirst() }
    while let last = text.last, last.isWhitespace { text.removeLast() }
    return text
  }

  /// A line as a quoted JSON string: visible quotes, control characters escaped, at most 80 characters.
  static func shown(_ line: String) -> String {
    JSON.string(line.count > 80 ? String(line.prefix(80)) + "…" : line).serialized
  }
}
