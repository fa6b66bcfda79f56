import CaptureContract
import CaptureCore

/// man(7) pages generated from the command tree: capture.1 and one capture-COMMAND.1 per command.
/// The date is the release's, not today's, so regenerating gives byte-identical files (diff-tested).
enum ManPage {
  static let date = "2026-11-30"

  /// Escapes text for roff: backslashes, leading dots/quotes, and hyphens as minus signs where a
  /// user would type them.
  static func roff(_ text: String) -> String {
    var s = text.replacingAll("\\", with: "\\e").replacingAll("-", with: "\\-")
    if s.hasPrefix(".") || s.hasPrefix("'") { s = "\\&" + s }
    return s
  }

  static func header(_ name: String, _ summary: String) -> String {
    """
    .TH \(name.uppercased()) 1 \(date) "capture \(CaptureVersion.string)" "User Commands"
    .SH NAME
    \(roff(name)) \\- \(roff(summary))

    """
  }

  static func optionItems(_ options: [OptionSpec]) -> String {
    options.filter { !$0.isHidden }.map { option in
      var tag = option.short.map { "\\fB\\-\($0)\\fR, " } ?? ""
      tag += "\\fB\\-\\-\(roff(option.long))\\fR"
      if let v = option.valueName { tag += " \\fI\(roff(v))\\fR" }
      return ".TP\n\(tag)\n\(roff(option.help))\n"
    }.joined()
  }

  static func exitStatus() -> String {
    var out =
      ".SH EXIT STATUS\nThe exit status is the absolute value of the SKT result code (0 when it is 0 or positive).\n"
    for row in ExitStatus.table {
      out += ".TP\n.B \(row.status)\n\(roff(row.name)): \(roff(row.meaning))\n"
    }
    return out
  }

  static func overview() -> String {
    var out = header("capture", "barcode scanners and NFC readers from the command line")
    out += ".SH SYNOPSIS\n.B capture\n[\\fIGLOBAL\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]\n"
    out += ".SH DESCRIPTION\n"
    out +=
      roff(
        "capture brings the CaptureSDK model (devices, typed properties with the SDK's ids, events and SKT result codes) to the Linux command line. SocketCam, the built-in software scanner, decodes barcodes from images and V4L2 cameras."
      )
      + "\n"
    out += ".SH COMMANDS\n"
    for command in CommandTree.visibleCommands {
      out +=
        ".TP\n\\fBcapture \(roff(command.name))\\fR \(roff(command.synopsis[0]))\n\(roff(command.abstract)) See \\fBcapture\\-\(roff(command.name))\\fR(1).\n"
    }
    out += ".SH GLOBAL OPTIONS\n" + optionItems(CommandTree.globalOptions)
    out += """
      .SH DEVICES
      .TP
      .B socketcam
      The built\\-in software scanner (SocketCam C820): ZBar and zxing\\-cpp decode images and V4L2
      camera frames, each image the same alone, in a batch, from a directory or from stdin. An EAN\\-2 or
      EAN\\-5 add\\-on is reported with its EAN\\-13, UPC\\-A, UPC\\-E or EAN\\-8 code, the add\\-on's digits
      right after the code's. The text of a code honours its ECI designators and Kanji mode (converted
      to UTF\\-8); bytes are the raw payload.
      .TP
      .I AA:BB:CC:DD:EE:FF
      A Bluetooth address.
      .TP
      .I NAME
      A remembered device's alias or friendly name.
      .TP
      \\fBtcp://\\fIHOST\\fR[:\\fIPORT\\fR]
      A Cognex DataMan reader (port 23 by default).
      .TP
      \\fBserial:\\fI/dev/PATH\\fR[?baud=\\fIN\\fR]
      A serial scanner.
      .TP
      \\fBhid:\\fI/dev/input/eventN\\fR
      A keyboard\\-wedge scanner.
      .SH OUTPUT
      Plain text by default: a decoded barcode prints as its text alone on a line, and \\fBget\\fR prints a
      value as a script needs it and as \\fBset\\fR takes it back, so
      \\fBcapture set\\fR \\fIDEVICE PROPERTY\\fR \\fB"$(capture get\\fR \\fIDEVICE PROPERTY\\fR\\fB)"\\fR changes nothing
      (an enum by its name, battery\\-level as \\fB73%\\fR; see \\fBcapture\\-get\\fR(1)).
      On a terminal only, columns of tabular output are aligned and the \\fBcapture:\\fR prefix of errors and
      warnings is coloured (not with \\fB\\-\\-no\\-color\\fR or \\fBNO_COLOR\\fR); a pipe or a file gets the plain
      lines, without escape sequences.
      With \\fB\\-\\-json\\fR, one JSON document per command and JSON Lines (one event per line, flushed per
      event) for streams. Keys are camelCase and sorted. Errors go to stderr as
      \\fBcapture: NAME (code): message\\fR; with \\fB\\-\\-json\\fR an \\fB{"error":{...}}\\fR object goes to stdout as well.

      """
    out += exitStatus()
    out += """
      .SH ENVIRONMENT
      .TP
      .B XDG_STATE_HOME
      Where the state file lives: \\fI$XDG_STATE_HOME/capture/devices.json\\fR (default \\fI~/.local/state/capture\\fR). A relative value is ignored.
      .TP
      .B HOME
      Without an absolute \\fBXDG_STATE_HOME\\fR, the state lives under \\fI$HOME/.local/state/capture\\fR; when HOME is unset, empty or relative too there is no state directory, and a command that needs it exits 63 (ESKT_FILENOTFOUND).
      .TP
      .B NO_COLOR
      When set and not empty, no colour is used (as \\fB\\-\\-no\\-color\\fR); columns on a terminal stay aligned.
      .SH FILES
      .TP
      .I ~/.local/state/capture/devices.json
      Remembered devices, SocketCam settings and the device manager's favorite. A corrupt or truncated
      file is moved aside to \\fIdevices.json.corrupt\\-TIME\\fR (UTC, never overwritten) and the command
      exits 85; the next one starts from an empty state. A file from a newer capture exits 86 and an
      unreadable one 64; both are left as they are.
      .SH SEE ALSO

      """
    out +=
      CommandTree.visibleCommands.map { "\\fBcapture\\-\(roff($0.name))\\fR(1)" }.joined(separator: ",\n")
      + "\n"
    return out
  }

  static func page(_ command: CommandSpec) -> String {
    var out = header("capture-\(command.name)", command.abstract)
    out += ".SH SYNOPSIS\n"
    for (i, line) in command.synopsis.enumerated() {
      if i > 0 { out += ".br\n" }
      out += ".B capture \(roff(command.name))\n" + (line.isEmpty ? "" : roff(line) + "\n")
    }
    out += ".SH DESCRIPTION\n" + roff(command.abstract) + "\n"
    if !command.discussion.isEmpty { out += ".PP\n" + roff(command.discussion) + "\n" }
    if !command.operands.isEmpty {
      out += ".SH ARGUMENTS\n"
      for operand in command.operands { out += ".TP\n.I \(roff(operand.name))\n\(roff(operand.help))\n" }
    }
    if !command.options.isEmpty { out += ".SH OPTIONS\n" + optionItems(command.options) }
    out += ".SH GLOBAL OPTIONS\n" + optionItems(CommandTree.globalOptions)
    if !command.examples.isEmpty {
      out += ".SH EXAMPLES\n"
      for example in command.examples {
        out += ".TP\n.B \(roff(example.command))\n\(roff(example.explanation))\n"
      }
    }
    out += exitStatus()
    out += ".SH SEE ALSO\n\\fBcapture\\fR(1)\n"
    return out
  }
}

extension String {
  func replacingAll(_ target: String, with replacement: String) -> String {
    guard !target.isEmpty else { return self }
    var out = ""
    var rest = Substring(self)
    while let range = rest.range(of: target) {
      out += rest[..<range.lowerBound]
      out += replacement
      rest = rest[range.upperBound...]
    }
    return out + rest
  }
}

extension Substring {
  func range(of target: String) -> Range<Index>? {
    var i = startIndex
    while i < endIndex {
      if self[i...].hasPrefix(target) { return i..<index(i, offsetBy: target.count) }
      i = index(after: i)
    }
    return nil
  }
}
