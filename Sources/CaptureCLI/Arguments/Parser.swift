// Turns argv into a ParsedArguments against the command tree. Every usage problem becomes a UsageError
// here or in a command's options builder, before any device is touched (docs/architecture.md §4).

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
  /// The values of file and directory options as bytes, by long name, in command-line order: a path
  /// need not be UTF-8 (`FilePath`). `values` holds their escaped text, for messages only.
  var paths: [String: [FilePath]] = [:]
  /// For each entry of `ordered`, its bytes when the option takes a path.
  var orderedPaths: [FilePath?] = []

  func flag(_ long: String) -> Bool { flags.contains(long) }
  func value(_ long: String) -> String? { values[long]?.last }
  func allValues(_ long: String) -> [String] { values[long] ?? [] }
  /// A file or directory option's value as bytes.
  func path(_ long: String) -> FilePath? { paths[long]?.last }
  var wantsHelp: Bool { flag("help") }
}

enum ArgumentParser {
  static func parse(_ arguments: [String]) throws(UsageError) -> ParsedArguments {
    try parse(raw: arguments.map { Array($0.utf8) })
  }

  /// Parses argv as the kernel gave it, bytes. A file or directory option keeps its value's bytes
  /// (`ParsedArguments.paths`); any other value, operand or command word must be UTF-8 text, and one
  /// that is not is a usage error, never text with U+FFFD in place of the bytes.
  static func parse(raw: [[UInt8]]) throws(UsageError) -> ParsedArguments {
    let arguments = raw.map { String(validating: $0, as: UTF8.self) ?? FilePath(bytes: $0).description }
    var result = ParsedArguments()
    result.arguments = arguments
    var index = 0
    var onlyOperands = false

    func options() -> [OptionSpec] { CommandTree.globalOptions + (result.command?.options ?? []) }
    func text(_ at: Int) throws(UsageError) -> String {
      if let valid = String(validating: raw[at], as: UTF8.self) { return valid }
      throw UsageError(
        message: "'\(arguments[at])' is not valid UTF-8 text (only a file name may hold other bytes)",
        command: result.command?.name)
    }

    while index < arguments.count {
      let arg = arguments[index]
      index += 1
      if onlyOperands || arg == "-" || !arg.hasPrefix("-") || isNumber(arg) {
        let word = try text(index - 1)
        if result.command == nil && !onlyOperands {
          guard let command = CommandTree.command(named: word) else {
            if word == "help" { result.flags.insert("help"); continue }
            throw UsageError(message: unknownCommandMessage(word), command: nil)
          }
          result.command = command
        } else {
          result.operands.append(word)
        }
        continue
      }
      if arg == "--" { onlyOperands = true; continue }

      if arg.hasPrefix("--") {
        // The name is ASCII up to the first "=", so the bytes after it are the inline value's.
        let bytes = raw[index - 1]
        let equals = bytes.firstIndex(of: UInt8(ascii: "="))
        let name = String(decoding: bytes[2..<(equals ?? bytes.count)], as: UTF8.self)
        let inlineValue = equals.map { Array(bytes[($0 + 1)...]) }
        guard let spec = options().first(where: { $0.long == name }) else {
          throw UsageError(
            message: unknownOptionMessage("--" + name, among: options()), command: result.command?.name)
        }
        if spec.takesValue {
          let value: [UInt8]
          if let inlineValue {
            value = inlineValue
          } else {
            guard index < arguments.count else {
              throw UsageError(
                message: "--\(name) needs a value (\(spec.valueName!))", command: result.command?.name)
            }
            value = raw[index]
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

  private static func store(_ bytes: [UInt8], for spec: OptionSpec, in result: inout ParsedArguments)
    throws(UsageError)
  {
    if !spec.isRepeatable, let previous = result.values[spec.long], !previous.isEmpty {
      throw UsageError(message: "--\(spec.long) given more than once", command: result.command?.name)
    }
    let value: String
    var path: FilePath?
    switch spec.kind {
    case .file, .directory:
      path = FilePath(bytes: bytes)
      value = String(validating: bytes, as: UTF8.self) ?? path!.description
      result.paths[spec.long, default: []].append(path!)
    default:
      guard let text = String(validating: bytes, as: UTF8.self) else {
        throw UsageError(
          message: "--\(spec.long): '\(FilePath(bytes: bytes))' is not valid UTF-8 text",
          command: result.command?.name)
      }
      value = text
    }
    result.values[spec.long, default: []].append(value)
    result.ordered.append((spec.long, value))
    result.orderedPaths.append(path)
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
    // The distance is at least the difference in length, so only candidates within 2 characters of
    // the word's length can be near: a 100 KB argument costs nothing here.
    let length = word.count
    let scored = candidates.filter { abs($0.count - length) <= 2 }.map {
      ($0, editDistance(word.lowercased(), $0.lowercased()))
    }
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
