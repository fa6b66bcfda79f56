// Man pages and completions come from the hidden `capture __generate-docs DIR`: they must match the
// checked-in copies byte for byte and the man pages must pass mandoc's lint.

import Foundation
import Testing

@Suite("Generated man pages and completions")
struct DocsTests {
  static let expectedFiles = [
    "completions/_capture", "completions/capture.bash", "completions/capture.fish", "man/capture-connect.1",
    "man/capture-discover.1", "man/capture-doctor.1", "man/capture-fleet.1", "man/capture-get.1",
    "man/capture-list.1",
    "man/capture-listen.1",
    "man/capture-partnership.1", "man/capture-remove.1", "man/capture-serve.1", "man/capture-set.1",
    "man/capture-trigger.1",
    "man/capture.1",
  ]

  /// The package root: Tests/BlackBoxTests/DocsTests.swift is three levels down.
  static let repositoryRoot: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.path
  }()

  static var checkedIn: Bool {
    var isDirectory: ObjCBool = false
    return ["man", "completions"].allSatisfy {
      FileManager.default.fileExists(atPath: repositoryRoot + "/" + $0, isDirectory: &isDirectory)
        && isDirectory.boolValue
    }
  }

  static func files(under root: String) -> [String] {
    guard let walker = FileManager.default.enumerator(atPath: root) else { return [] }
    var files: [String] = []
    while let name = walker.nextObject() as? String {
      var isDirectory: ObjCBool = false
      if FileManager.default.fileExists(atPath: root + "/" + name, isDirectory: &isDirectory),
        !isDirectory.boolValue
      {
        files.append(name)
      }
    }
    return files.sorted()
  }

  static func generate(_ sandbox: Sandbox) async throws -> String {
    let out = sandbox.path("docs")
    let outcome = try await sandbox.capture("__generate-docs", out)
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.stdout.isEmpty)
    #expect(outcome.stderr.isEmpty)
    return out
  }

  @Test("__generate-docs writes every man page and completion, identically each time")
  func generatesDeterministically() async throws {
    let sandbox = try Sandbox()
    let first = try await Self.generate(sandbox)
    #expect(Self.files(under: first) == Self.expectedFiles)
    var snapshot: [String: [UInt8]] = [:]
    for name in Self.expectedFiles { snapshot[name] = try sandbox.read(first + "/" + name) }
    // Regenerating over the same directory gives the same bytes.
    _ = try await Self.generate(sandbox)
    for name in Self.expectedFiles {
      #expect(try sandbox.read(first + "/" + name) == snapshot[name], "\(name) changed between runs")
      #expect(snapshot[name]?.isEmpty == false, "\(name) is empty")
    }
  }

  @Test(
    "the checked-in man/ and completions/ are exactly what __generate-docs writes",
    .enabled(
      if: checkedIn,
      "man/ and completions/ are not checked in at the repository root yet: nothing to compare against"))
  func matchesCheckedIn() async throws {
    let sandbox = try Sandbox()
    let generated = try await Self.generate(sandbox)
    let checkedInFiles =
      Self.files(under: Self.repositoryRoot + "/man").map { "man/" + $0 }
      + Self.files(under: Self.repositoryRoot + "/completions").map { "completions/" + $0 }
    #expect(
      checkedInFiles.sorted() == Self.files(under: generated),
      "run: capture __generate-docs . at the repository root")
    for name in Self.files(under: generated) where checkedInFiles.contains(name) {
      #expect(
        try sandbox.read(Self.repositoryRoot + "/" + name) == sandbox.read(generated + "/" + name),
        "\(name) differs from the generated copy; regenerate with: capture __generate-docs .")
    }
  }

  @Test("every man page passes mandoc -T lint -W warning with no output")
  func mandocLint() async throws {
    guard let mandoc = Runner.which("mandoc") else {
      Issue.record("mandoc is not installed (apt-get install mandoc): the man pages cannot be linted")
      return
    }
    let sandbox = try Sandbox()
    let generated = try await Self.generate(sandbox)
    let pages = Self.files(under: generated).filter { $0.hasPrefix("man/") }
    #expect(pages.count == 13)
    for page in pages {
      let outcome = try await Runner.run(
        mandoc, ["-T", "lint", "-W", "warning", generated + "/" + page],
        environment: ["PATH": "/usr/bin:/bin"])
      #expect(outcome.status == 0, "\(page): \(outcome)")
      #expect(outcome.out + outcome.err == "", "mandoc -T lint -W warning \(page)")
    }
  }

  @Test("the bash completion offers every visible command and no hidden one")
  func bashCompletion() async throws {
    let sandbox = try Sandbox()
    let generated = try await Self.generate(sandbox)
    let bash = String(decoding: try sandbox.read(generated + "/completions/capture.bash"), as: UTF8.self)
    let commands = UsageTests.commands.map(\.name).joined(separator: " ")
    #expect(bash.contains(#"COMPREPLY=($(compgen -W "\#(commands)" -- "$cur"))"#), "\(bash)")
    #expect(bash.contains("complete -F _capture capture"), "\(bash)")
  }

  /// (command, word typed, completions expected among COMPREPLY, completions that must not be there).
  static let managerCompletions: [(String, String, [String], [String])] = [
    ("get", "", ["socketcam", "manager", "favorite"], []), ("set", "man", ["manager"], []),
    ("get", "fav", ["favorite"], []), ("listen", "", ["socketcam"], ["manager"]),
    ("connect", "man", [], ["manager"]),
  ]

  @Test("bash completes manager and favorite for get and set only", arguments: managerCompletions)
  func bashCompletesManager(
    command: String, typed: String, present: [String], absent: [String]
  ) async throws {
    let sandbox = try Sandbox()
    let generated = try await Self.generate(sandbox)
    let script =
      "source '\(generated)/completions/capture.bash'; COMP_WORDS=(capture \(command) '\(typed)'); COMP_CWORD=2; _capture; printf '%s\\n' \"${COMPREPLY[@]}\""
    let outcome = try await Runner.run("/bin/bash", ["-c", script], environment: sandbox.environment)
    #expect(outcome.status == 0, "\(outcome)")
    let words = Set(outcome.outLines)
    for word in present { #expect(words.contains(word), "\(command) '\(typed)': \(words.sorted())") }
    for word in absent { #expect(!words.contains(word), "\(command) '\(typed)': \(words.sorted())") }
  }
}
