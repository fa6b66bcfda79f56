import Testing

@testable import CaptureCLI

/// What a good command line must parse into.
struct Parsed: Sendable, CustomStringConvertible {
  var arguments: [String]
  var command: String?
  var flags: Set<String> = []
  var values: [String: [String]] = [:]
  var operands: [String] = []
  /// option=value in command-line order
  var ordered: [String] = []

  var description: String { arguments.joined(separator: " ") }
}

@Suite("Argument parser")
struct ParserTests {
  static let good: [Parsed] = [
    Parsed(arguments: ["list"], command: "list"),
    Parsed(arguments: ["--json", "list"], command: "list", flags: ["json"]),
    // Global options after the command are still global.
    Parsed(arguments: ["list", "--json"], command: "list", flags: ["json"]),
    Parsed(arguments: ["-q", "list", "-v"], command: "list", flags: ["quiet", "verbose"]),
    Parsed(arguments: ["-qv", "list"], command: "list", flags: ["quiet", "verbose"]),
    Parsed(
      arguments: ["list", "-vq", "--no-color"], command: "list", flags: ["quiet", "verbose", "no-color"]),
    Parsed(arguments: ["-h"], command: nil, flags: ["help"]),
    // `help COMMAND` is `COMMAND --help`.
    Parsed(arguments: ["help", "get"], command: "get", flags: ["help"]),
    Parsed(arguments: ["--help", "set"], command: "set", flags: ["help"]),
    Parsed(arguments: ["--version"], command: nil, flags: ["version"]),
    Parsed(
      arguments: ["--timeout=500ms", "list"], command: "list", values: ["timeout": ["500ms"]],
      ordered: ["timeout=500ms"]),
    Parsed(
      arguments: ["list", "--timeout", "2m"], command: "list", values: ["timeout": ["2m"]],
      ordered: ["timeout=2m"]),
    Parsed(
      arguments: ["--adapter", "hci1", "discover", "--le", "--name=S7*"], command: "discover", flags: ["le"],
      values: ["adapter": ["hci1"], "name": ["S7*"]], ordered: ["adapter=hci1", "name=S7*"]),
    // `=` inside a value belongs to the value.
    Parsed(
      arguments: ["listen", "--confirm=test $X = 1"], command: "listen", values: ["confirm": ["test $X = 1"]],
      ordered: ["confirm=test $X = 1"]),
    // An empty inline value is a value.
    Parsed(
      arguments: ["connect", "x", "--alias="], command: "connect", values: ["alias": [""]], operands: ["x"],
      ordered: ["alias="]),
    Parsed(
      arguments: [
        "trigger", "socketcam", "start", "--image", "a.png", "--image=b.png", "--dir", "d", "--image", "-",
      ],
      command: "trigger", values: ["image": ["a.png", "b.png", "-"], "dir": ["d"]],
      operands: ["socketcam", "start"], ordered: ["image=a.png", "image=b.png", "dir=d", "image=-"]),
    // An option's value may start with a dash.
    Parsed(
      arguments: ["discover", "--name", "-x-"], command: "discover", values: ["name": ["-x-"]],
      ordered: ["name=-x-"]),
    // `--` ends the options: what follows is an operand even when it looks like one.
    Parsed(
      arguments: ["get", "--", "--weird-name", "-q", "friendly-name"], command: "get",
      operands: ["--weird-name", "-q", "friendly-name"]),
    Parsed(
      arguments: ["get", "socketcam", "--", "--all"], command: "get", operands: ["socketcam", "--all"]),
    // Negative numbers are operands (property ids), not options.
    Parsed(
      arguments: ["get", "socketcam", "-2147418111"], command: "get", operands: ["socketcam", "-2147418111"]),
    Parsed(
      arguments: ["set", "socketcam", "-5", "-17", "--dry-run"], command: "set", flags: ["dry-run"],
      operands: ["socketcam", "-5", "-17"]),
    // A lone "-" is an operand.
    Parsed(
      arguments: ["set", "socketcam", "--from", "-"], command: "set", values: ["from": ["-"]],
      operands: ["socketcam"], ordered: ["from=-"]),
    Parsed(
      arguments: [
        "listen", "--count", "3", "AA:BB:CC:DD:EE:FF", "socketcam", "--events", "decodedData,error",
      ],
      command: "listen", values: ["count": ["3"], "events": ["decodedData,error"]],
      operands: ["AA:BB:CC:DD:EE:FF", "socketcam"], ordered: ["count=3", "events=decodedData,error"]),
    Parsed(
      arguments: ["partnership", "status", "tcp://[::1]:23"], command: "partnership",
      operands: ["status", "tcp://[::1]:23"]),
    Parsed(arguments: ["get", "--list"], command: "get", flags: ["list"]),
    Parsed(
      arguments: ["get", "socketcam", "--all", "--json"], command: "get", flags: ["all", "json"],
      operands: ["socketcam"]),
  ]

  @Test("good command lines", arguments: good)
  func goodLine(_ expected: Parsed) throws {
    let parsed = try ArgumentParser.parse(expected.arguments)
    #expect(parsed.command?.name == expected.command)
    #expect(parsed.flags == expected.flags)
    #expect(parsed.values == expected.values)
    #expect(parsed.operands == expected.operands)
    #expect(parsed.ordered.map { "\($0.option)=\($0.value)" } == expected.ordered)
  }

  @Test("value() is the last value, allValues() every one in order")
  func valueAccessors() throws {
    let parsed = try ArgumentParser.parse(["listen", "--image", "a", "--image", "b"])
    #expect(parsed.value("image") == "b")
    #expect(parsed.allValues("image") == ["a", "b"])
    #expect(parsed.value("dir") == nil)
    #expect(parsed.allValues("dir") == [])
    #expect(parsed.flag("json") == false)
    #expect(parsed.wantsHelp == false)
  }

  /// (arguments, message, command whose usage to show)
  static let bad: [([String], String, String?)] = [
    (["lsit"], "unknown command 'lsit'; did you mean 'list'?", nil),
    (["lisen"], "unknown command 'lisen'; did you mean 'listen'?", nil),
    (["conect", "socketcam"], "unknown command 'conect'; did you mean 'connect'?", nil),
    (["partner"], "unknown command 'partner'; did you mean 'partnership'?", nil),
    (["frobnicate"], "unknown command 'frobnicate'", nil),
    // The hidden command is never suggested.
    (["__generate-doc"], "unknown command '__generate-doc'", nil),
    (["-"], "unknown command '-'", nil),
    (["--bogus"], "unknown option --bogus", nil),
    (["list", "--jsn"], "unknown option --jsn; did you mean --json?", "list"),
    (["list", "--verbos"], "unknown option --verbos; did you mean --verbose?", "list"),
    (["listen", "--cuont", "1"], "unknown option --cuont; did you mean --count?", "listen"),
    // Command options are unknown before their command.
    (["--count", "1", "listen"], "unknown option --count", nil),
    (["list", "--all"], "unknown option --all", "list"),
    (["-x"], "unknown option -x", nil),
    (["-qx", "list"], "unknown option -x", nil),
    (["list", "-qz"], "unknown option -z", "list"),
    (["list", "--json=yes"], "--json takes no value", "list"),
    (["list", "--no-color="], "--no-color takes no value", "list"),
    (["list", "--timeout"], "--timeout needs a value (DUR)", "list"),
    (["listen", "--image"], "--image needs a value (FILE)", "listen"),
    (["listen", "--count", "1", "--count", "2"], "--count given more than once", "listen"),
    (["--timeout", "1s", "list", "--timeout", "2s"], "--timeout given more than once", "list"),
    (
      ["listen", "--camera", "/dev/video0", "--camera=/dev/video1"], "--camera given more than once", "listen"
    ),
  ]

  @Test("bad command lines", arguments: bad)
  func badLine(_ arguments: [String], _ message: String, _ command: String?) {
    #expect(throws: UsageError(message: message, command: command)) { try ArgumentParser.parse(arguments) }
  }

  @Test("edit distance counts an adjacent swap as one edit")
  func editDistance() {
    #expect(ArgumentParser.editDistance("lsit", "list") == 1)
    #expect(ArgumentParser.editDistance("", "abc") == 3)
    #expect(ArgumentParser.editDistance("kitten", "sitting") == 3)
    #expect(ArgumentParser.editDistance("same", "same") == 0)
  }

  @Test("suggestions: close words only")
  func closest() {
    let names = ["discover", "connect", "remove", "list", "trigger", "get", "set", "listen", "partnership"]
    #expect(ArgumentParser.closest(to: "lst", in: names) == "list")
    #expect(ArgumentParser.closest(to: "sett", in: names) == "set")
    #expect(ArgumentParser.closest(to: "partn", in: names) == "partnership")
    #expect(ArgumentParser.closest(to: "xyzzy", in: names) == nil)
  }
}
