// Citations in the repository's comments must be followable by a reader of the repository: every
// Markdown document a file names exists in the repository, every section sign names a document that
// has a heading with that number, and nothing cites the project's issue tracker or a path outside the
// repository (docs/README.md). Failures give file:line and what does not resolve.
//
// The fixtures below spell the section sign as \u{A7} and build document names with `markdown(_:)`, so this
// file's own text cites nothing it does not mean.

import Foundation
import Testing

/// One citation problem, located.
struct CitationProblem: CustomStringConvertible, Equatable {
  let file: String
  let line: Int
  let message: String
  var description: String { "\(file):\(line): \(message)" }
}

/// What a file cites: `.md` documents and § sections, each bound to the document it belongs to.
struct CitationScan {
  struct DocumentCitation: Equatable {
    let line: Int
    let text: String
  }
  struct SectionCitation: Equatable {
    let line: Int
    /// The numbers cited: one, or both ends of a range (`docs/capture-sdk.md §2.1–2.2`).
    let numbers: [String]
    /// The document the § belongs to, as written; nil when none precedes it in its comment block.
    let document: String?
  }

  var documents: [DocumentCitation] = []
  var sections: [SectionCitation] = []
  /// Lines that cite the issue tracker (the word and a number) or a path outside the repository.
  var banned: [(line: Int, text: String, what: String)] = []

  // A path ending in .md that is not inside a longer word or path.
  static let documentPattern = try! NSRegularExpression(
    pattern: #"(?<![\w./-])((?:\.{1,2}/)*(?:[\w.-]+/)*[\w.-]*[\w-]\.md)(?![\w-])"#)
  // §N, §N.M, and a range §N.M–N.K.
  static let sectionPattern = try! NSRegularExpression(
    pattern: #"§(\d+(?:\.\d+)*)(?:[ \t]*[–-][ \t]*(\d+(?:\.\d+)*))?"#)
  // A § of a public standard is not a document of ours: RFC 3629 §1, the PNG specification §5.2, the
  // Bluetooth Core Specification Vol 3 Part B §2.5.1, ISO/IEC 15417 §4.
  static let externalBefore = try! NSRegularExpression(
    pattern:
      #"(?:RFC[ \t]?\d+|[Ss]pecification|ISO(?:/IEC)?[ \t/]?[\d-]+(?::\d+)?|Part[ \t][A-Z]+|Vol\.?[ \t]\d+)[ \t]*$"#
  )
  // The bracketed characters keep this file from matching its own patterns.
  static let outsidePattern = try! NSRegularExpression(
    pattern: #"\.\./shared|shared[/]reference|/work[/]shared"#)
  // The word and a number (either case, singular or plural) is looked for first, then the word right
  // after an opening parenthesis.
  static let issuePatterns = [
    try! NSRegularExpression(pattern: #"\b[Ii]ssues?[ \t]+\d+\b"#),
    try! NSRegularExpression(pattern: #"\([Ii]ssue\b:?"#),
  ]

  /// The comment marker a line starts with, or "" for any other line (code, a docstring, prose).
  static func commentKind(_ line: String) -> String {
    let trimmed = line.drop(while: { $0 == " " || $0 == "\t" })
    for marker in ["///", "//", "#", "*"] where trimmed.hasPrefix(marker) { return marker }
    return ""
  }

  static func isBlank(_ line: String) -> Bool {
    let kind = commentKind(line)
    let trimmed = line.trimmingCharacters(in: .whitespaces)
    return trimmed.dropFirst(kind.count).trimmingCharacters(in: .whitespaces).isEmpty
  }

  static func matches(_ pattern: NSRegularExpression, in line: String) -> [NSTextCheckingResult] {
    pattern.matches(in: line, range: NSRange(line.startIndex..., in: line))
  }

  /// Whether the word containing `location` is a URL (a public source).
  static func inURL(_ line: NSString, at location: Int) -> Bool {
    let before = line.substring(to: location)
    let start = before.lastIndex(where: { $0 == " " || $0 == "(" || $0 == "<" }).map {
      before.index(after: $0)
    }
    return before[(start ?? before.startIndex)...].contains("://")
  }

  /// Scans `text`. A § belongs to the nearest document cited before it in the same comment block
  /// (consecutive non-blank lines of the same comment kind).
  init(text: String) {
    var blockDocument: String?
    var previousKind: String?
    for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
      .enumerated()
    {
      let number = index + 1
      let kind = Self.commentKind(line)
      let blank = Self.isBlank(line)
      if blank || kind != previousKind { blockDocument = nil }
      previousKind = blank ? nil : kind
      let ns = line as NSString
      var tokens: [(location: Int, document: String?, numbers: [String])] = []
      for match in Self.matches(Self.documentPattern, in: line)
      where !Self.inURL(ns, at: match.range.location) {
        tokens.append((match.range.location, ns.substring(with: match.range(at: 1)), []))
      }
      for match in Self.matches(Self.sectionPattern, in: line) {
        let before = ns.substring(to: match.range.location)
        if !Self.matches(Self.externalBefore, in: before).isEmpty { continue }
        var numbers = [ns.substring(with: match.range(at: 1))]
        if match.range(at: 2).location != NSNotFound {
          numbers.append(ns.substring(with: match.range(at: 2)))
        }
        tokens.append((match.range.location, nil, numbers))
      }
      for token in tokens.sorted(by: { $0.location < $1.location }) {
        if let document = token.document {
          documents.append(DocumentCitation(line: number, text: document))
          blockDocument = document
        } else {
          sections.append(SectionCitation(line: number, numbers: token.numbers, document: blockDocument))
        }
      }
      if let match = Self.matches(Self.outsidePattern, in: line).first {
        banned.append((number, ns.substring(with: match.range), "a path outside the repository"))
      }
      if let match = Self.issuePatterns.lazy.compactMap({ Self.matches($0, in: line).first }).first {
        banned.append((number, ns.substring(with: match.range), "the issue tracker"))
      }
    }
  }
}

/// The repository: its files and its documents' numbered headings.
struct CitationRepository {
  let root: String

  /// Where citations are checked: the code, its tests, benchmarks, fuzzers and the top-level files.
  static let scannedDirectories = ["Sources", "Tests", "bench", "fuzz", "scripts", "contrib"]
  static let scannedFiles = ["Makefile", "Package.swift", "README.md", "CHANGELOG.md"]
  /// Build products and ignored scratch directories (.gitignore), never sources of citations.
  static let skippedDirectories: Set<String> = [
    "__pycache__", "bench/out", "fuzz/build", "fuzz/work", "fuzz/artifacts",
  ]

  static let headingPattern = try! NSRegularExpression(
    pattern: #"^#{1,6}[ \t]+(\d+(?:\.\d+)*)\.?(?:[ \t]|$)"#)

  func exists(_ path: String) -> Bool {
    var isDirectory: ObjCBool = false
    return FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isDirectory)
      && !isDirectory.boolValue
  }

  /// The repository-relative path a cited document names (from the citing file's directory, or from the
  /// root), or nil when it names no file of the repository.
  func resolve(_ cited: String, from file: String) -> String? {
    let directory = (file as NSString).deletingLastPathComponent
    for candidate in [directory.isEmpty ? cited : directory + "/" + cited, cited] {
      if let normalized = Self.normalize(candidate), exists(normalized) { return normalized }
    }
    return nil
  }

  /// `a/./b/../c` as `a/c`; nil for a path that leaves the repository or is absolute.
  static func normalize(_ path: String) -> String? {
    guard !path.hasPrefix("/") else { return nil }
    var parts: [Substring] = []
    for part in path.split(separator: "/") where part != "." {
      if part == ".." {
        guard parts.popLast() != nil else { return nil }
      } else {
        parts.append(part)
      }
    }
    return parts.joined(separator: "/")
  }

  /// The section numbers of a document's numbered headings (`## 5.` and `### 5.3 …` give 5 and 5.3).
  func headings(of document: String) -> [String] {
    guard let text = try? String(contentsOfFile: root + "/" + document, encoding: .utf8) else { return [] }
    return text.split(separator: "\n").compactMap { line in
      let line = String(line)
      guard let match = CitationScan.matches(Self.headingPattern, in: line).first else { return nil }
      return (line as NSString).substring(with: match.range(at: 1))
    }
  }

  /// Every scanned text file, repository-relative, sorted.
  func files() -> [String] {
    var found: [String] = []
    for name in Self.scannedFiles where exists(name) { found.append(name) }
    for directory in Self.scannedDirectories {
      guard let walker = FileManager.default.enumerator(atPath: root + "/" + directory) else { continue }
      while let relative = walker.nextObject() as? String {
        let path = directory + "/" + relative
        let name = (relative as NSString).lastPathComponent
        if name.hasPrefix(".") || Self.skippedDirectories.contains(name)
          || Self.skippedDirectories.contains(path)
        {
          walker.skipDescendants()
          continue
        }
        if exists(path) { found.append(path) }
      }
    }
    return found.sorted()
  }

  /// The text of a file, or nil for a binary file (NUL bytes, not UTF-8) or one over 2 MB.
  func text(of file: String) -> String? {
    guard let data = FileManager.default.contents(atPath: root + "/" + file), data.count <= 2 << 20,
      !data.contains(0)
    else { return nil }
    return String(data: data, encoding: .utf8)
  }

  /// Every problem in the scanned files, in file and line order.
  func problems() -> (problems: [CitationProblem], documents: Int, sections: Int) {
    var problems: [CitationProblem] = []
    var documentCount = 0
    var sectionCount = 0
    var headingCache: [String: [String]] = [:]
    for file in files() {
      guard let text = text(of: file) else { continue }
      let scan = CitationScan(text: text)
      documentCount += scan.documents.count
      sectionCount += scan.sections.count
      for citation in scan.documents where resolve(citation.text, from: file) == nil {
        let name = (citation.text as NSString).lastPathComponent
        let hint = exists("docs/" + name.lowercased()) ? " (cite docs/\(name.lowercased()))" : ""
        problems.append(
          CitationProblem(
            file: file, line: citation.line,
            message:
              "`\(citation.text)` is not a file of the repository\(hint); cite a path from the root, or a URL for a public document"
          ))
      }
      for citation in scan.sections {
        let cited = "§" + citation.numbers.joined(separator: "–")
        guard let written = citation.document else {
          problems.append(
            CitationProblem(
              file: file, line: citation.line,
              message:
                "\(cited) names no document: write the document before it in the same comment (docs/….md \(cited))"
            ))
          continue
        }
        guard let document = resolve(written, from: file) else { continue }  // reported above
        let headings = headingCache[document] ?? headings(of: document)
        headingCache[document] = headings
        for number in citation.numbers where !headings.contains(number) {
          let known =
            headings.isEmpty
            ? "it has no numbered headings" : "its sections: " + headings.joined(separator: ", ")
          problems.append(
            CitationProblem(
              file: file, line: citation.line, message: "\(document) has no §\(number) (\(known))"))
        }
      }
      for (line, text, what) in scan.banned {
        let advice =
          what == "the issue tracker"
          ? "say what it asked for, or cite the docs/ section or CHANGELOG.md entry that states the behaviour"
          : "cite docs/ or a public source"
        problems.append(
          CitationProblem(file: file, line: line, message: "cites \(what) (`\(text)`): \(advice)"))
      }
    }
    return (problems, documentCount, sectionCount)
  }
}

@Suite("Citations in comments resolve inside the repository")
struct CitationTests {
  /// The package root: Tests/BlackBoxTests/CitationTests.swift is three levels down.
  static let repository: CitationRepository = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return CitationRepository(root: url.path)
  }()

  static var hasSources: Bool {
    FileManager.default.fileExists(atPath: repository.root + "/Sources")
      && FileManager.default.fileExists(atPath: repository.root + "/docs")
  }

  static let documents = [
    "docs/architecture.md", "docs/capture-sdk.md", "docs/device-protocols.md", "docs/bluez-testing.md",
    "docs/swift-on-linux.md",
  ]

  @Test(
    "every cited document exists, every § names a document and a heading it has, no issue tracker or outside path",
    .enabled(if: hasSources, "the sources and docs/ are not next to this test file: nothing to check"))
  func everyCitationResolves() {
    let result = Self.repository.problems()
    // A scanner that found nothing would pass anything: the tree cites the documents hundreds of times.
    #expect(result.documents > 100, "only \(result.documents) document citations found")
    #expect(result.sections > 100, "only \(result.sections) section citations found")
    for problem in result.problems {
      Issue.record(Comment(rawValue: problem.description))
    }
    #expect(result.problems.isEmpty, "\(result.problems.count) citation(s) do not resolve")
  }

  @Test(
    "docs/ has the architecture and the four fact documents, each with its numbered sections",
    .enabled(if: hasSources, "the sources and docs/ are not next to this test file: nothing to check"))
  func documentsExist() {
    for document in Self.documents { #expect(Self.repository.exists(document), "\(document) is missing") }
    #expect(
      Self.repository.headings(of: "docs/architecture.md") == [
        "1", "2", "3", "4", "5", "5.1", "5.2", "5.3", "5.4", "5.5",
      ])
    let sdk = Self.repository.headings(of: "docs/capture-sdk.md")
    for number in [
      "0", "1", "2.1", "2.2", "3", "4.1", "4.2", "5.1", "5.2", "6.1", "6.2", "6.3", "7.1", "7.16", "7.17",
      "8", "9", "10",
    ] {
      #expect(sdk.contains(number), "docs/capture-sdk.md has no §\(number)")
    }
    let protocols = Self.repository.headings(of: "docs/device-protocols.md")
    for number in ["0", "1", "2.1", "2.9", "3.1", "3.6", "4", "5.1", "5.5", "6", "7", "8.1", "8.5", "9"] {
      #expect(protocols.contains(number), "docs/device-protocols.md has no §\(number)")
    }
  }

  /// `name` with the Markdown extension, for fixtures.
  static func markdown(_ name: String) -> String { name + ".md" }

  @Test(
    "a section belongs to the nearest document before it in its comment block, to none across a blank line")
  func binding() {
    let sdk = Self.markdown("docs/capture-sdk")
    let protocols = Self.markdown("docs/device-protocols")
    let scan = CitationScan(
      text: """
        /// Reads the bits (\(sdk) \u{A7}7.6, \u{A7}4.1),
        /// then \u{A7}7.3 and \u{A7}2.1–2.2.
        ///
        /// Unbound: \u{A7}5.3.
        let x = 1  // \u{A7}9 is bound to nothing either
        # \(protocols) \u{A7}5.3
        // \u{A7}7: a different comment kind starts a new block
        """)
    #expect(scan.documents == [.init(line: 1, text: sdk), .init(line: 6, text: protocols)])
    #expect(
      scan.sections == [
        .init(line: 1, numbers: ["7.6"], document: sdk),
        .init(line: 1, numbers: ["4.1"], document: sdk),
        .init(line: 2, numbers: ["7.3"], document: sdk),
        .init(line: 2, numbers: ["2.1", "2.2"], document: sdk),
        .init(line: 4, numbers: ["5.3"], document: nil),
        .init(line: 5, numbers: ["9"], document: nil),
        .init(line: 6, numbers: ["5.3"], document: protocols),
        .init(line: 7, numbers: ["7"], document: nil),
      ])
  }

  @Test("public sources are not documents of the repository: URLs, RFC and specification sections")
  func publicSources() {
    let scan = CitationScan(
      text: """
        // RFC 3629 \u{A7}1, the PNG specification \u{A7}5.2, https://github.com/o/r/blob/main/doc/\(Self.markdown("x"))
        // the Core Specification Vol 3 Part B \u{A7}2.5.1, ISO/IEC 15417 \u{A7}4
        // zxing-cpp issues #516 and swift-corelibs-foundation#4772 are public threads.
        """)
    #expect(scan.documents.isEmpty)
    #expect(scan.sections.isEmpty)
    #expect(scan.banned.isEmpty)
  }

  @Test("the issue tracker and paths outside the repository are reported with their line")
  func banned() {
    let tracker = "iss" + "ue"
    let scan = CitationScan(
      text: """
        // fine: it issues no writes
        // (\(tracker) 4 deliverable 5)
        // I\(tracker.dropFirst()) 5: back-pressure
        // see ..\u{2F}shared and shared\u{2F}reference/\(Self.markdown("capture-sdk"))
        """)
    #expect(scan.banned.map(\.line) == [2, 3, 4])
    #expect(
      scan.banned.map(\.what) == ["the issue tracker", "the issue tracker", "a path outside the repository"])
  }

  @Test(
    "a document is found from the root or from the citing file's directory, never outside the repository",
    .enabled(if: hasSources, "the sources and docs/ are not next to this test file: nothing to check"))
  func resolution() {
    let repository = Self.repository
    #expect(repository.resolve(Self.markdown("device-protocols"), from: "Sources/Drivers/X.swift") == nil)
    #expect(
      repository.resolve(Self.markdown("docs/device-protocols"), from: "Sources/Drivers/X.swift")
        == Self.markdown("docs/device-protocols"))
    #expect(
      repository.resolve(Self.markdown("README"), from: "Tests/Rigs/bluez566.py")
        == Self.markdown("Tests/Rigs/README"))
    #expect(
      repository.resolve(Self.markdown("../docs/README"), from: "bench/README.md")
        == Self.markdown("docs/README"))
    #expect(repository.resolve(Self.markdown("../../outside"), from: "bench/README.md") == nil)
  }
}
