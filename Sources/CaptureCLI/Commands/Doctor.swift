import CaptureContract
import CaptureCore

/// `capture doctor`: what stands between the user and their scanner on this host, one row per check
/// with the command that fixes it (docs/architecture.md §1). Read only: the checks come from the
/// drivers' `HostDiagnostics`; this renders them and picks the exit status.
enum DoctorCommand {
  struct Options: Sendable {
    init(_ parsed: ParsedArguments) throws(UsageError) {
      try parsed.requireOperands(0...0, "")
    }
  }

  static func run(_ options: Options, _ context: Context) async -> CommandOutcome {
    let request = DiagnosisRequest(adapter: context.globals.adapter, state: context.state)
    let system = context.system
    let checks = Task { await system.diagnose(request) }
    // --timeout: the checks' waits (bus calls, bluetoothd --version) end when the task is cancelled,
    // and a check cut short is a failure row of its own.
    let deadline = Deadline(context.globals.timeout) { checks.cancel() }
    let rows = await checks.value
    deadline.cancel()
    let error = failure(rows)
    let shown = context.output.isQuiet ? rows.filter { $0.status != .ok } : rows
    context.output.document(
      ResultDocument(json: document(rows, error: error), plain: .table(shown.map(cells), separator: " ")))
    guard let error else { return .success }
    return .failures([error], documented: true)
  }

  /// `STATUS CHECK[ SUBJECT]: MESSAGE[; fix: FIX]` as columns (aligned on a terminal only).
  static func cells(_ row: HostCheck) -> [String] {
    [row.status.rawValue, label(row) + ":", row.message + (row.fix.map { "; fix: \($0)" } ?? "")]
  }

  static func label(_ row: HostCheck) -> String {
    row.kind.rawValue + (row.subject.map { " \($0)" } ?? "")
  }

  /// The command's error when a row failed: the first failure's code, and how many failed.
  static func failure(_ rows: [HostCheck]) -> CaptureError? {
    let failures = rows.filter { $0.status == .failure }
    guard let first = failures.first else { return nil }
    let count = failures.count == 1 ? "1 check failed" : "\(failures.count) checks failed"
    return CaptureError(
      first.code ?? .notAvailable, "doctor: \(count); the first: \(label(first)): \(first.message)")
  }

  /// `{"checks":[…],"error":…,"failures":N,"warnings":N}`: every key always present.
  static func document(_ rows: [HostCheck], error: CaptureError?) -> JSON {
    .object([
      "checks": .array(rows.map(object)),
      "error": error.map(Render.errorObject) ?? .null,
      "failures": .number(Int64(rows.filter { $0.status == .failure }.count)),
      "warnings": .number(Int64(rows.filter { $0.status == .warning }.count)),
    ])
  }

  static func object(_ row: HostCheck) -> JSON {
    .object([
      "check": .string(row.kind.rawValue),
      "code": row.code.map { .number(Int64($0.rawValue)) } ?? .null,
      "fix": row.fix.map(JSON.string) ?? .null,
      "message": .string(row.message),
      "status": .string(row.status.rawValue),
      "subject": row.subject.map(JSON.string) ?? .null,
    ])
  }
}
