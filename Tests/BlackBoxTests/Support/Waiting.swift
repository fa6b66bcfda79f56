// Waiting for something a test can observe — a line capture printed, a file, the rig's state — never
// for a fixed time: on a loaded machine any fixed time is too short. Every wait has a generous deadline
// and, when it runs out, fails the test naming what did not happen.

import Foundation
import Synchronization
import Testing

/// Polls `condition` until it holds or `seconds` pass. Returns whether it held; when it never did,
/// records an issue saying that `what` did not happen.
@discardableResult
func waitUntil(
  _ what: @autoclosure () -> String, seconds: Double = 120, every interval: Duration = .milliseconds(20),
  sourceLocation: SourceLocation = #_sourceLocation, _ condition: () async throws -> Bool
) async rethrows -> Bool {
  let deadline = Runner.monotonicSeconds() + seconds
  while true {
    if try await condition() { return true }
    if Runner.monotonicSeconds() >= deadline { break }
    try? await Task.sleep(for: interval)
  }
  Issue.record("\(what()) did not happen within \(Int(seconds)) s", sourceLocation: sourceLocation)
  return false
}

/// What a running child has written so far, stdout and stderr apart (Interaction.watch): for a test
/// that goes on once capture has printed a line, instead of sleeping and assuming it got there.
final class OutputWatch: Sendable {
  enum Stream: String, Sendable {
    case stdout, stderr
  }

  private let seen = Mutex<(out: [UInt8], err: [UInt8])>(([], []))

  /// Called by the runner with each chunk read from the child.
  func append(_ bytes: ArraySlice<UInt8>, to stream: Stream) {
    seen.withLock { seen in
      if stream == .stdout { seen.out += bytes } else { seen.err += bytes }
    }
  }

  /// The complete lines written to `stream` so far.
  func lines(_ stream: Stream) -> [String] {
    let bytes = seen.withLock { stream == .stdout ? $0.out : $0.err }
    guard let end = bytes.lastIndex(of: 10) else { return [] }
    return Outcome.lines(String(decoding: bytes[...end], as: UTF8.self))
  }

  /// Waits until at least `count` complete lines on `stream` satisfy `predicate`; records an issue
  /// naming `what` when they do not come within `seconds`.
  @discardableResult
  func waitForLines(
    _ stream: Stream, _ what: String, count: Int = 1, seconds: Double = 120,
    sourceLocation: SourceLocation = #_sourceLocation, where predicate: (String) -> Bool
  ) async -> Bool {
    await waitUntil(
      "\(what) on capture's \(stream.rawValue) (so far: \(lines(stream)))", seconds: seconds,
      sourceLocation: sourceLocation
    ) { lines(stream).filter(predicate).count >= count }
  }

  /// Waits for a complete line on `stream` containing `text` (`count` such lines).
  @discardableResult
  func waitForLine(
    _ stream: Stream, containing text: String, count: Int = 1, seconds: Double = 120,
    sourceLocation: SourceLocation = #_sourceLocation
  ) async -> Bool {
    await waitForLines(
      stream, "\(count) line(s) containing '\(text)'", count: count, seconds: seconds,
      sourceLocation: sourceLocation
    ) { $0.contains(text) }
  }

  var interaction: Interaction { Interaction(watch: self) }
}
