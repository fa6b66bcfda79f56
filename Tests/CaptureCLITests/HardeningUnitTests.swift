import CaptureCore
import Testing

@testable import CaptureCLI

@Suite("Plain line of a code (C-style escapes)")
struct PlainLineTests {
  static let cases: [([UInt8], String)] = [
    ([], ""),
    (Array("Hello QR".utf8), "Hello QR"),
    (Array("héllo ✓ 東京 😀".utf8), "héllo ✓ 東京 😀"),
    (Array("a\nb\rc\td\\e".utf8), #"a\nb\rc\td\\e"#),
    ([0x00, 0x1B, 0x7F], #"\x00\x1B\x7F"#),
    // C1 controls (U+0085 NEL here) are escaped byte by byte, like any control character.
    ([0x41, 0xC2, 0x85, 0x42], #"A\xC2\x85B"#),
    // U+00A0 is not a control character.
    ([0xC2, 0xA0], "\u{A0}"),
    ([0xFF, 0xE2, 0x82], #"\xFF\xE2\x82"#),
    // A literal "\x41" in the data stays distinguishable from an escaped byte.
    (Array(#"\x41"#.utf8), #"\\x41"#),
  ]

  @Test("escapes as documented", arguments: cases)
  func escapes(_ bytes: [UInt8], _ expected: String) {
    #expect(DecodedData.plainEscaped(bytes) == expected)
    #expect(!DecodedData.plainEscaped(bytes).contains("\n"))
  }
}

@Suite("Arguments as bytes")
struct RawArgumentTests {
  @Test("a file option keeps its bytes; its text is the escaped name")
  func pathKeepsBytes() throws {
    let name: [UInt8] = Array("p".utf8) + [0xFF] + Array(".json".utf8)
    let parsed = try ArgumentParser.parse(raw: [
      Array("set".utf8), Array("socketcam".utf8), Array("--from".utf8), name,
    ])
    #expect(parsed.path("from") == FilePath(bytes: name))
    #expect(parsed.value("from") == #"p\xFF.json"#)
    let inline = try ArgumentParser.parse(raw: [
      Array("set".utf8), Array("socketcam".utf8), Array("--from=".utf8) + name,
    ])
    #expect(inline.path("from") == FilePath(bytes: name))
  }

  @Test("an operand or a text option that is not UTF-8 is a usage error")
  func textMustBeUTF8() {
    #expect(throws: UsageError.self) {
      try ArgumentParser.parse(raw: [Array("get".utf8), Array("socketcam".utf8), [0xFF]])
    }
    #expect(throws: UsageError.self) {
      try ArgumentParser.parse(raw: [Array("--timeout".utf8), [0x31, 0xFF], Array("list".utf8)])
    }
  }

  @Test("long arguments are elided to 80 characters and an ellipsis")
  func elision() {
    let long = String(repeating: "y", count: 500)
    let message = Elision.message("cannot open '\(long)': no", arguments: ["get", long])
    #expect(message == "cannot open '\(String(repeating: "y", count: 80))…': no")
    #expect(Elision.message("short 'abc'", arguments: ["abc"]) == "short 'abc'")
  }
}
