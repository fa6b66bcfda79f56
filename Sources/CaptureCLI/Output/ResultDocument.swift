import CaptureCore
import Synchronization

/// One result of a command as a typed value: the `--json` document the contract publishes
/// (docs/architecture.md, "Output") and its plain form. Commands make these and hand them to `Output.document`, the one
/// place that decides how they are shown: plain lines or a table on a terminal or pipe, a JSON line
/// with `--json`, or the value itself for a remote command (`DocumentCollector`), which takes the
/// documents as they are instead of reading them back from text.
struct ResultDocument: Sendable {
  enum Plain: Sendable {
    /// Lines as they are.
    case lines([String])
    /// Rows of cells: aligned on a terminal, else joined with `separator` (Terminal.table).
    case table([[String]], separator: String)
    /// Nothing on stdout in plain mode (discover's end is a note on stderr there).
    case nothing
  }

  let json: JSON
  let plain: Plain

  init(json: JSON, plain: Plain) {
    self.json = json
    self.plain = plain
  }

  init(json: JSON, line: String) { self.init(json: json, plain: .lines([line])) }
}

/// The documents a remote command produced (`--mqtt-commands`, docs/fleet.md §5), in order, as
/// values: what `RemoteRunner` answers with. Bounded like the reply it becomes: once `limit` bytes of
/// documents (as serialized) are held, later ones are dropped and counted, so a command that prints
/// without end costs no more memory than its reply may carry.
final class DocumentCollector: Sendable {
  let limit: Int
  private let state = Mutex<(documents: [JSON], bytes: Int, dropped: Int)>(([], 0, 0))

  init(limit: Int) { self.limit = limit }

  func append(_ value: JSON) {
    // Serialized once to count it: the limit is on what the reply would carry.
    let size = value.serialized.utf8.count + 1
    state.withLock { s in
      guard s.dropped == 0, s.bytes + size <= limit else {
        s.dropped += 1
        return
      }
      s.bytes += size
      s.documents.append(value)
    }
  }

  var documents: [JSON] { state.withLock { $0.documents } }
  /// How many documents did not fit under `limit`.
  var dropped: Int { state.withLock { $0.dropped } }
}
