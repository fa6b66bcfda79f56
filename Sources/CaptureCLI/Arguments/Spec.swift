// The declarative command tree: one value describes every command, option and operand. The parser,
// `--help`, the man pages and the shell completions are all generated from it, so they cannot drift
// (the swift-argument-parser model, docs/architecture.md §4).

/// What kind of value an option or operand takes; drives validation and shell completion.
enum ValueKind: Sendable, Equatable {
  case text
  case duration
  case count
  case device
  case property
  case dataSource
  case file
  case directory
  case command
  case adapter
  case choice([String])
  case eventList
}

struct OptionSpec: Sendable {
  var long: String
  var short: Character? = nil
  /// nil for a flag; the placeholder shown in usage (e.g. "DUR") for an option taking a value.
  var valueName: String? = nil
  var kind: ValueKind = .text
  var help: String
  var isRepeatable = false
  var isHidden = false

  var takesValue: Bool { valueName != nil }
  var display: String {
    var s = short.map { "-\($0), " } ?? ""
    s += "--\(long)"
    if let v = valueName { s += " \(v)" }
    return s
  }
}

struct OperandSpec: Sendable {
  var name: String
  var kind: ValueKind = .text
  var help: String
  var isOptional = false
  var isRepeating = false
}

struct CommandSpec: Sendable {
  var name: String
  var abstract: String
  /// Usage lines after `capture NAME`, exactly as the contract writes them.
  var synopsis: [String]
  var discussion: String = ""
  var operands: [OperandSpec] = []
  var options: [OptionSpec] = []
  var examples: [(command: String, explanation: String)] = []
  var isHidden = false

  func option(named long: String) -> OptionSpec? { options.first { $0.long == long } }
  func option(short: Character) -> OptionSpec? { options.first { $0.short == short } }
}
