import CaptureContract
import CaptureCore
import Testing

@testable import CaptureCLI

#if canImport(Glibc)
  import Glibc
#endif

@Suite("JSON writer")
struct JSONWriterTests {
  @Test("scalars and containers, no insignificant whitespace")
  func shapes() {
    #expect(JSON.null.serialized == "null")
    #expect(JSON.bool(true).serialized == "true")
    #expect(JSON.bool(false).serialized == "false")
    #expect(JSON.number(0).serialized == "0")
    #expect(JSON.number(-15).serialized == "-15")
    #expect(JSON.number(Int64.min).serialized == "-9223372036854775808")
    #expect(JSON.int(UInt32.max).serialized == "4294967295")
    #expect(JSON.array([]).serialized == "[]")
    #expect(JSON.object([:]).serialized == "{}")
    #expect(
      JSON.array([.number(1), .string("a"), .null, .array([.bool(true)])]).serialized
        == #"[1,"a",null,[true]]"#)
  }

  @Test("keys sort by Unicode code point at every depth")
  func sortedKeys() {
    let value = JSON.object([
      "b": .number(2), "a": .number(1), "B": .number(0), "é": .null,
      "aa": .object(["z": .null, "_": .null, "Z": .null]),
      "10": .null, "9": .null,
    ])
    #expect(
      value.serialized
        == #"{"10":null,"9":null,"B":0,"a":1,"aa":{"Z":null,"_":null,"z":null},"b":2,"é":null}"#)
    // Code point order, not UTF-16 order: U+FF5E sorts before U+1F600 (whose UTF-16 form starts 0xD83D).
    let astral = JSON.object(["\u{1F600}": .number(2), "\u{FF5E}": .number(1)])
    #expect(astral.serialized == "{\"\u{FF5E}\":1,\"\u{1F600}\":2}")
    // A decomposed key sorts by its first scalar ("e" < "f" < "é").
    let composed = JSON.object(["\u{E9}": .number(3), "f": .number(2), "e\u{301}x": .number(1)])
    #expect(composed.serialized == "{\"e\u{301}x\":1,\"f\":2,\"\u{E9}\":3}")
  }

  @Test("identical input, identical bytes")
  func deterministic() {
    var members: [String: JSON] = [:]
    for i in 0..<200 { members["key\(i)"] = .number(Int64(i)) }
    let first = JSON.object(members).serialized
    for _ in 0..<5 { #expect(JSON.object(members).serialized == first) }
  }

  static let escapes: [(String, String)] = [
    ("plain", #""plain""#),
    ("say \"hi\"", #""say \"hi\"""#),
    ("back\\slash", #""back\\slash""#),
    ("a/b", #""a/b""#),
    ("https://example.com/x", #""https://example.com/x""#),
    ("line\nfeed", #""line\nfeed""#),
    ("cr\rtab\t", #""cr\rtab\t""#),
    ("\u{08}\u{0C}", #""\b\f""#),
    ("\u{0}", #""\u0000""#),
    ("\u{1}\u{1F}", #""\u0001\u001f""#),
    ("\u{7F}", #""\u007f""#),
    ("sep\u{2028}para\u{2029}", #""sep\u2028para\u2029""#),
    ("é ✓ 東京 \u{1F600}", "\"é ✓ 東京 \u{1F600}\""),
    ("\u{80}\u{9F}", "\"\u{80}\u{9F}\""),
  ]

  @Test("string escapes", arguments: escapes)
  func escape(_ text: String, _ expected: String) {
    #expect(JSON.string(text).serialized == expected)
  }

  @Test("keys are escaped like strings")
  func keyEscapes() {
    #expect(JSON.object(["a\"b": .null, "c\nd": .null]).serialized == #"{"a\"b":null,"c\nd":null}"#)
  }

  @Test("rendered events: published keys in order")
  func decodedDataEvent() {
    let device = DeviceInfo(id: "socketcam", name: "SocketCam C820", type: .socketCamC820)
    let data = DecodedData(
      dataSource: .qrCode, bytes: Array("Hi/\"".utf8), points: [.init(x: 1, y: 2)], origin: "/tmp/a b.png")
    let event = Event(
      time: Timestamp(milliseconds: 1_700_000_000_123), device: device, payload: .decodedData(data))
    #expect(
      Render.event(event).serialized
        == #"{"bytes":"SGkvIg==","dataSource":{"id":38,"name":"QR Code"},"device":{"id":"socketcam","name":"SocketCam C820","type":5,"typeName":"SocketCamC820"},"event":"decodedData","origin":"/tmp/a b.png","points":[{"x":1,"y":2}],"text":"Hi/\"","time":"2023-11-14T22:13:20.123Z"}"#
    )
  }

  @Test(
    "event times are ISO 8601 UTC with milliseconds",
    arguments: [
      (Int64(0), "1970-01-01T00:00:00.000Z"), (1_700_000_000_123, "2023-11-14T22:13:20.123Z"),
      (951_782_400_007, "2000-02-29T00:00:00.007Z"), (4_102_444_799_999, "2099-12-31T23:59:59.999Z"),
    ])
  func time(_ milliseconds: Int64, _ expected: String) {
    #expect(Timestamp(milliseconds: milliseconds).iso8601 == expected)
  }

  @Test("the error object")
  func errorObject() {
    #expect(
      Render.errorDocument(CaptureError(.notSupported, "no \"tcp\" yet")).serialized
        == #"{"error":{"code":-15,"message":"no \"tcp\" yet","name":"ESKT_NOTSUPPORTED"}}"#)
  }
}

@Suite("Base64")
struct Base64Tests {
  /// RFC 4648 §10 test vectors.
  static let vectors: [(String, String)] = [
    ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="),
    ("foobar", "Zm9vYmFy"),
  ]

  @Test("RFC 4648 vectors", arguments: vectors)
  func vector(_ input: String, _ expected: String) {
    #expect(Base64.encode(Array(input.utf8)) == expected)
  }

  @Test("every byte value, and the last two alphabet characters")
  func binary() {
    #expect(Base64.encode([0x00]) == "AA==")
    #expect(Base64.encode([0xFF]) == "/w==")
    #expect(Base64.encode([0xFB, 0xFF]) == "+/8=")
    #expect(Base64.encode([0x00, 0xFF, 0x01, 0x80]) == "AP8BgA==")
    #expect(Base64.encode([0xFF, 0xFF, 0xFF]) == "////")
    let all = (0...255).map { UInt8($0) }
    let encoded = Base64.encode(all)
    #expect(encoded.count == 344)
    #expect(
      encoded.hasPrefix(
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BB"))
    #expect(encoded.hasSuffix("8PHy8/T19vf4+fr7/P3+/w=="))
  }
}

@Suite("DecodedData text")
struct EscapedTextTests {
  static let cases: [([UInt8], String)] = [
    ([], ""),
    (Array("Hello QR".utf8), "Hello QR"),
    (Array("héllo ✓ 東京 😀".utf8), "héllo ✓ 東京 😀"),
    // Valid UTF-8 is unchanged, even control characters and a literal backslash.
    ([0x00, 0x0A, 0x5C], "\u{0}\n\\"),
    ([0xFF], "\\xFF"),
    ([0x41, 0xFF, 0x42], "A\\xFFB"),
    ([0x00, 0xFF, 0x01, 0x80], "\u{0}\\xFF\u{1}\\x80"),
    // A truncated sequence: each byte escaped.
    ([0xE2, 0x82], "\\xE2\\x82"),
    ([0x41, 0xE2, 0x82], "A\\xE2\\x82"),
    // Valid scalar, then an invalid byte.
    ([0xE2, 0x82, 0xAC, 0xFF], "€\\xFF"),
    ([0xFF, 0xC3, 0xA9], "\\xFFé"),
    // Overlong encodings, surrogates and code points past U+10FFFF are invalid.
    ([0xC0, 0x80], "\\xC0\\x80"),
    ([0xE0, 0x80, 0x80], "\\xE0\\x80\\x80"),
    ([0xED, 0xA0, 0x80], "\\xED\\xA0\\x80"),
    ([0xF4, 0x90, 0x80, 0x80], "\\xF4\\x90\\x80\\x80"),
    ([0xF0, 0x9F, 0x98, 0x80, 0x80], "😀\\x80"),
    // A continuation byte alone.
    ([0x80, 0xBF], "\\x80\\xBF"),
  ]

  @Test("invalid bytes become \\xHH, valid UTF-8 is kept", arguments: cases)
  func escaped(_ bytes: [UInt8], _ expected: String) {
    #expect(DecodedData.escapedText(bytes) == expected)
    #expect(DecodedData(dataSource: .qrCode, bytes: bytes).text == expected)
  }
}

@Suite("Notification events in JSON (docs/capture-sdk.md §7.2, §7.3, §7.7)")
struct NotificationEventRenderTests {
  let device = DeviceInfo(id: "00:11:22:33:44:55", name: "Dock", type: .scannerD600)
  let time = Timestamp(milliseconds: 0)
  let head =
    #""device":{"id":"00:11:22:33:44:55","name":"Dock","type":327701,"typeName":"ScannerD600"},"#

  @Test("batteryLevel: the packed ulong decoded into percent, current, minimum, maximum, and the raw value")
  func battery() {
    // ScanAPI layout: max 100 << 24 | min 0 << 16 | current 41 << 8.
    let level = BatteryLevel(packed: 0x6400_2900)
    let json = Render.event(Event(time: time, device: device, payload: .batteryLevel(level))).serialized
    #expect(
      json == #"{"current":41,"#
        + head
        + #""event":"batteryLevel","maximum":100,"minimum":0,"percent":41,"time":"1970-01-01T00:00:00.000Z","value":1677732096}"#
    )
  }

  @Test("power: the state name and its SDK number; buttons: the pressed names and the mask")
  func powerAndButtons() {
    let power = Render.event(Event(time: time, device: device, payload: .power(.onCradle))).serialized
    #expect(
      power == "{" + head
        + #""event":"power","state":"on-cradle","time":"1970-01-01T00:00:00.000Z","value":2}"#)
    let buttons = Render.event(
      Event(time: time, device: device, payload: .buttons([.middle, .power]))
    ).serialized
    #expect(
      buttons
        == #"{"buttons":["middle","power"],"# + head
        + #""event":"buttons","time":"1970-01-01T00:00:00.000Z","value":12}"#)
  }
}

@Suite("Terminal decoration")
struct TerminalDecorationTests {
  @Test("off a terminal, tables are joined as before and prefixes are plain")
  func plain() {
    let terminal = Terminal.plain
    #expect(
      terminal.table([["a", "bb", "c"], ["dddd", "e", "f"]], separator: "\t") == ["a\tbb\tc", "dddd\te\tf"])
    #expect(terminal.table([["qr-code", "enable"]], separator: " ") == ["qr-code enable"])
    #expect(terminal.prefix(.error) == "capture: " && terminal.prefix(.warning) == "capture: ")
  }

  @Test("on a terminal, every column but the last is padded to its widest cell plus two")
  func aligned() {
    let terminal = Terminal(alignsColumns: true, colours: false)
    #expect(
      terminal.table([["a", "bb", "c"], ["dddd", "e", "f"], ["x"]], separator: "\t") == [
        "a     bb  c", "dddd  e   f", "x",
      ])
    #expect(terminal.table([], separator: "\t") == [])
  }

  @Test("colour is the SGR bold red or yellow around capture: only")
  func colours() {
    let terminal = Terminal(alignsColumns: false, colours: true)
    #expect(terminal.prefix(.error) == "\u{1B}[1;31mcapture:\u{1B}[0m ")
    #expect(terminal.prefix(.warning) == "\u{1B}[1;33mcapture:\u{1B}[0m ")
  }

  @Test("a pipe is never a terminal; --no-color turns colour off")
  func detect() throws {
    var fds: [Int32] = [0, 0]
    try #require(pipe(&fds) == 0)
    defer {
      close(fds[0])
      close(fds[1])
    }
    let piped = Terminal.detect(stdoutFD: fds[1], stderrFD: fds[1], noColor: false)
    #expect(!piped.alignsColumns && !piped.colours)
    let output = Output(mode: .plain, quiet: false, verbose: false, stdoutFD: fds[1], stderrFD: fds[1])
    #expect(!output.terminal.alignsColumns && !output.terminal.colours)
  }
}
