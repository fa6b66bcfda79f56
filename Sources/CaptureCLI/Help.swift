import CaptureContract
import CaptureCore

/// `--help` text, generated from the command tree and the ResultCode table.
enum Help {
  static func usage(_ command: CommandSpec?) -> String {
    guard let command else {
      return "usage: capture [GLOBAL] COMMAND [ARGS]   (capture --help for more)"
    }
    return command.synopsis.enumerated().map { i, line in
      (i == 0 ? "usage: " : "       ") + "capture \(command.name)" + (line.isEmpty ? "" : " \(line)")
    }.joined(separator: "\n")
  }

  static func wrap(_ text: String, indent: Int, width: Int = 100) -> String {
    var lines: [String] = []
    var current = ""
    for word in text.split(separator: " ") {
      if !current.isEmpty && current.count + 1 + word.count > width - indent {
        lines.append(current)
        current = ""
      }
      current += (current.isEmpty ? "" : " ") + word
    }
    if !current.isEmpty { lines.append(current) }
    let pad = String(repeating: " ", count: indent)
    return lines.map { pad + $0 }.joined(separator: "\n")
  }

  static func optionRows(_ options: [OptionSpec]) -> String {
    let visible = options.filter { !$0.isHidden }
    let width = (visible.map { $0.display.count }.max() ?? 0) + 2
    return visible.map { option in
      let left = "  " + option.display + String(repeating: " ", count: width - option.display.count)
      return left + option.help
    }.joined(separator: "\n")
  }

  static func exitStatusTable() -> String {
    ExitStatus.table.map { row in
      let status = String(row.status)
      return "  " + status + String(repeating: " ", count: 5 - status.count) + row.name
        + String(repeating: " ", count: max(1, 38 - row.name.count)) + row.meaning
    }.joined(separator: "\n")
  }

  static func topLevel() -> String {
    var out = """
      capture \(CaptureVersion.string) - barcode scanners and NFC readers from the command line

      usage: capture [GLOBAL] COMMAND [ARGS]

      Commands:

      """
    let width = (CommandTree.visibleCommands.map { $0.name.count }.max() ?? 0) + 3
    for command in CommandTree.visibleCommands {
      out +=
        "  " + command.name + String(repeating: " ", count: width - command.name.count) + command.abstract
        + "\n"
    }
    out += "\nGlobal options:\n" + optionRows(CommandTree.globalOptions) + "\n"
    out += """

      Devices: socketcam, AA:BB:CC:DD:EE:FF, an alias or friendly name, tcp://HOST[:PORT],
               serial:/dev/PATH[?baud=N], hid:/dev/input/eventN; manager (get and set only).
      SocketCam sources: --image FILE (repeatable, "-" = stdin), --dir DIR, --camera /dev/videoN.

      Exit status (the absolute value of the SKT result code):

      """
    out += exitStatusTable() + "\n"
    out += "\nRun 'capture COMMAND --help' for a command's options; man capture-COMMAND for details.\n"
    return out
  }

  static func command(_ command: CommandSpec) -> String {
    var out = "capture \(command.name) - \(command.abstract)\n\n" + usage(command) + "\n"
    if !command.discussion.isEmpty { out += "\n" + wrap(command.discussion, indent: 0) + "\n" }
    if !command.operands.isEmpty {
      out += "\nArguments:\n"
      let width = (command.operands.map { $0.name.count }.max() ?? 0) + 2
      for operand in command.operands {
        out +=
          "  " + operand.name + String(repeating: " ", count: width - operand.name.count) + operand.help
          + "\n"
      }
    }
    if !command.options.isEmpty { out += "\nOptions:\n" + optionRows(command.options) + "\n" }
    out += "\nGlobal options:\n" + optionRows(CommandTree.globalOptions) + "\n"
    if !command.examples.isEmpty {
      out += "\nExamples:\n"
      for example in command.examples { out += "  \(example.command)\n      \(example.explanation)\n" }
    }
    return out
  }
}
