// Turns argv into a ParsedArguments against the command tree. Every usage problem becomes a UsageError
// here or in a command's options builder, before any device is touched (ARCHITECTURE.md §4).

/// A usage error: exit 18 (ESKT_INVALIDPARAMETER) with a one-line message and the command's usage.
import CaptureCore

struct UsageError: Error, Equatable {
  var message: String
  /// The command whose usage to print; nil for the top level.
  var command: String?

  init(message: String, command: String? = nil) {
    self.message = message
    self.command = command
  }
}

struct ParsedArguments: Sendable {
  var command: CommandSpec?
  /// Values of options taking a value, by long name, in command-line order.
  var values: [String: [String]] = [:]
  /// Flags given, by long name.
  var flags: Set<String> = []
  var operands: [String] = []
  /// Every option value in command-line order (SocketCam sources are processed in the order given).
  var ordered: [(option: String, value: String)] = []
  /// Every argument as given, for `Elision` of error messages.
  var arguments: [String] = []

  func flag(_ long: String) -> Bool { flags.contains(long) }
  func value(_ long: String) -> String? { values[long]?.last }
  func allValues(_ long: String) -> [String] { values[long] ?? [] }
  var wantsHelp: Bool { flag("help") }
}

enum ArgumentParser {
  static func parse(_ arguments: [String]) throws(UsageError) -> ParsedArguments {
    var result = ParsedArguments()
    result.arguments = arguments
    var index = 0
    var onlyOperands = false

    func options() -> [OptionSpec] { CommandTree.globalOptions + (result.command?.options ?? []) }

    while index < arguments.count {
      let arg = arguments[index]
      index += 1
      if onlyOperands || arg == "-" || !arg.hasPrefix("-") || isNumber(arg) {
        if result.command == nil && !onlyOperands {
          guard let command = CommandTree.command(named: arg) else {
            if arg == "help" { result.flags.insert("help"); continue }
            throw UsageError(message: unknownCommandMessage(arg), command: nil)
          }
          result.command = command
        } else {
          result.operands.append(arg)
        }
        continue
      }
      if arg == "--" { onlyOperands = true; continue }

      if arg.hasPrefix("--") {
        let body = arg.dropFirst(2)
        let name: String
        var inlineValue: String?
        if let eq = body.firstIndex(of: "=") {
          name = String(body[..<eq])
          inlineValue = String(body[body.index(after: eq)...])
        } else {
          name = String(body)
        }
        guard let spec = options().first(where: { $0.long == name }) else {
          throw UsageError(
            message: unknownOptionMessage("--" + name, among: options()), command: result.command?.name)
        }
        if spec.takesValue {
          let value: String
          if let inlineValue {
            value = inlineValue
          } else {
            guard index < arguments.count else {
              throw UsageError(
                message: "--\(name) needs a value (\(spec.valueName!))", command: result.command?.name)
            }
            value = arguments[index]
            index += 1
          }
          try store(value, for: spec, in: &result)
        } else {
          if inlineValue != nil {
            throw UsageError(message: "--\(name) takes no value", command: result.command?.name)
          }
          result.flags.insert(spec.long)
        }
        continue
      }

      // Short options: -q, -v, -h, combinable as -qv.
      for ch in arg.dropFirst() {
        guard let spec = options().first(where: { $0.short == ch }) else {
          throw UsageError(message: "unknown option -\(ch)", command: result.command?.name)
        }
        if spec.takesValue {
          throw UsageError(message: "-\(ch) needs a value; use --\(spec.long)", command: result.command?.name)
        }
        result.flags.insert(spec.long)
      }
    }
    return result
  }

  private static func store(_ value: String, for spec: OptionSpec, in result: inout ParsedArguments)
    throws(UsageError)
  {
    if !spec.isRepeatable, let previous = result.values[spec.long], !previous.isEmpty {
      throw UsageError(message: "--\(spec.long) given more than once", command: result.command?.name)
    }
    result.values[spec.long, default: []].append(value)
    result.ordered.append((spec.long, value))
  }

  /// `-5`, `-2147418111` are operands (negative property ids), not options.
  private static func isNumber(_ s: String) -> Bool {
    let digits = s.dropFirst()
    return s.hasPrefix("-") && !digits.isEmpty && digits.allSatisfy(\.isNumber)
  }

  static func unknownCommandMessage(_ word: String) -> String {
    var message = "unknown command '\(word)'"
    if let near = closest(to: word, in: CommandTree.visibleCommands.map(\.name)) {
      message += "; did you mean '\(near)'?"
    }
    return message
  }

  static func unknownOptionMessage(_ word: String, among options: [OptionSpec]) -> String {
    var message = "unknown option \(word)"
    let names = options.filter { !$0.isHidden }.map { "--" + $0.long }
    if let near = closest(to: word, in: names) { message += "; did you mean \(near)?" }
    return message
  }

  /// The candidate within edit distance 2 (or sharing a 3+ letter prefix), for "did you mean".
  static func closest(to word: String, in candidates: [String]) -> String? {
    let scored = candidates.map { ($0, editDistance(word.lowercased(), $0.lowercased())) }
    if let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= max(1, min(2, word.count / 3)) {
      return best.0
    }
    let prefixed = candidates.filter { word.count >= 3 && $0.hasPrefix(word) }
    return prefixed.count == 1 ? prefixed[0] : nil
  }

  /// Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps
  /// ("lsit" → "list" is one edit).
  static func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a)
    let b = Array(b)
    var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
    for i in 0...a.count { d[i][0] = i }
    for j in 0...b.count { d[0][j] = j }
    for i in stride(from: 1, through: a.count, by: 1) {
      for j in stride(from: 1, through: b.count, by: 1) {
        let cost = a[i - 1] == b[j - 1] ? 0 : 1
        d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
        if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
          d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
        }
      }
    }
    return d[a.count][b.count]
  }
}

/// Error messages quote what the user typed; an argument of 100 KB would make a 100 KB message. Every
/// message the command line prints passes through here once (`CaptureCLI`), and each argument longer
/// than `limit` characters is shown as its first `limit` characters and an ellipsis.
enum Elision {
  static let limit = 80

  static func shown(_ text: String) -> String {
    text.count > limit ? String(text.prefix(limit)) + "…" : text
  }

  static func message(_ message: String, arguments: [String]) -> String {
    var result = message
    // Longest first, so an argument containing a shorter long one is elided whole.
    for argument in Set(arguments.filter { $0.count > limit }).sorted(by: { $0.count > $1.count })
    where result.contains(argument) {
      result = result.replacing(argument, with: shown(argument))
    }
    return result
  }

  static func error(_ error: CaptureError, arguments: [String]) -> CaptureError {
    CaptureError(error.code, message(error.message, arguments: arguments))
  }
}
