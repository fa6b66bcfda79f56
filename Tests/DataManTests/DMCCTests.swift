import Testing

@testable import Drivers

/// The DMCC codec against docs/device-protocols.md §7.
@Suite("DMCC codec")
struct DMCCCodecTests {
  static let encodings: [(DMCCCommand, String)] = [
    (DMCCCommand("GET DEVICE.NAME"), "||>GET DEVICE.NAME\r\n"),
    (DMCCCommand("TRIGGER ON", commandID: 123), "||0:123>TRIGGER ON\r\n"),
    (DMCCCommand("GET SYMBOL.DATAMATRIX", commandID: 0), "||0:0>GET SYMBOL.DATAMATRIX\r\n"),
  ]

  @Test("headers ||>, ||0:id> and CR LF footer", arguments: 0..<encodings.count)
  func encodes(_ index: Int) {
    let (command, wire) = Self.encodings[index]
    #expect(command.encoded() == Array(wire.utf8))
  }

  @Test("checksum: the byte before CR LF is the XOR of every byte before it")
  func checksum() {
    let bytes = DMCCCommand("GET DEVICE.TYPE", checksum: true, commandID: 7).encoded()
    let prefix = Array("||1:7>GET DEVICE.TYPE".utf8)
    #expect(Array(bytes.prefix(prefix.count)) == prefix)
    #expect(bytes.count == prefix.count + 3)
    #expect(bytes[prefix.count] == prefix.reduce(0, ^))
    #expect(bytes.suffix(2) == [13, 10])
    #expect(DMCCCommand("X", checksum: true).header == "||1>")
  }

  @Test("strings: quote, backslash, pipe, tab, CR, LF escaped; unquote inverts")
  func quoting() {
    let text = "a\"b\\c|d\te\rf\ng"
    let quoted = DMCC.quote(text)
    #expect(quoted == #""a\"b\\c\|d\te\rf\ng""#)
    #expect(!quoted.contains("\r") && !quoted.contains("\n"))
    #expect(DMCC.unquote(quoted) == text)
    #expect(DMCC.unquote("DM8050") == "DM8050")
    #expect(DMCC.argument("ON") == "ON")
    #expect(DMCC.argument("-1.5") == "-1.5")
    #expect(DMCC.argument("two words") == "\"two words\"")
    #expect(DMCC.argument("") == "\"\"")
  }

  @Test(
    "status → SKT code",
    arguments: [
      (0, 0), (1, 0), (100, -38), (101, -18), (102, -18), (103, -36), (104, -37), (105, -32), (106, -38),
      (999, -38),
    ] as [(Int, Int32)])
  func statusMap(_ status: Int, _ code: Int32) {
    #expect(DMCC.sktCode(status: status) == code)
  }

  static func withChecksum(_ text: String, corrupt: Bool = false) -> [UInt8] {
    let bytes = Array(text.utf8)
    let sum = bytes.reduce(0, ^)
    return bytes + [corrupt ? sum ^ 1 : sum]
  }

  static let lines: [([UInt8], DMCCMessage)] = [
    (Array("||0:5[0]DM8050".utf8), .reply(commandID: 5, status: 0, data: Array("DM8050".utf8))),
    (Array("||[0]".utf8), .reply(commandID: nil, status: 0, data: [])),
    (Array("||0:9[101]".utf8), .reply(commandID: 9, status: 101, data: [])),
    (Array("||[1]SEVMTE8tMTIz".utf8), .read(commandID: nil, bytes: Array("HELLO-123".utf8))),
    (Array("||0:4[1]not base64!".utf8), .read(commandID: 4, bytes: Array("not base64!".utf8))),
    (withChecksum("||1:3[0]6.1.5"), .reply(commandID: 3, status: 0, data: Array("6.1.5".utf8))),
    (withChecksum("||1:3[0]6.1.5", corrupt: true), .badChecksum(commandID: 3)),
    (Array("||1:3[0]".utf8), .badChecksum(commandID: 3)),
    (Array("0123456789".utf8), .plain(Array("0123456789".utf8))),
    (Array("||garbage".utf8), .malformed(Array("||garbage".utf8))),
    (Array("||0:x[0]".utf8), .malformed(Array("||0:x[0]".utf8))),
    (Array("||0:1[0".utf8), .malformed(Array("||0:1[0".utf8))),
    (Array("||7:1[0]".utf8), .malformed(Array("||7:1[0]".utf8))),
  ]

  @Test("reply lines", arguments: 0..<lines.count)
  func decodes(_ index: Int) {
    let (line, expected) = Self.lines[index]
    var parser = DMCCResponseParser()
    #expect(parser.feed(line + [13, 10]) == [expected])
  }

  static var stream: [UInt8] { lines.flatMap { $0.0 + [13, 10] } }

  @Test("a stream split at every byte decodes the same as in one piece")
  func everySplit() {
    var whole = DMCCResponseParser()
    let expected = whole.feed(Self.stream)
    #expect(expected == Self.lines.map(\.1))
    for cut in 0...Self.stream.count {
      var parser = DMCCResponseParser()
      let got = parser.feed(Self.stream[..<cut]) + parser.feed(Self.stream[cut...])
      #expect(got == expected, "split at \(cut)")
    }
    var bytewise = DMCCResponseParser()
    #expect(Self.stream.flatMap { bytewise.feed([$0]) } == expected)
  }

  @Test("64 KiB of noise: no crash, bounded line, then a good reply still decodes")
  func noise() {
    var generator = SystemRandomNumberGenerator()
    var noise = (0..<65_536).map { _ in UInt8.random(in: 0...255, using: &generator) }
    noise.removeAll { $0 == 10 }
    var parser = DMCCResponseParser(maximumLine: 4096)
    _ = parser.feed(noise)
    let after = parser.feed(Array("\r\n||0:2[0]OK\r\n".utf8))
    #expect(after.last == .reply(commandID: 2, status: 0, data: Array("OK".utf8)))
    // Noise with line breaks: every line yields exactly one message and nothing traps.
    var lined = DMCCResponseParser()
    for _ in 0..<200 {
      let chunk = (0..<Int.random(in: 0...300)).map { _ in UInt8.random(in: 0...255, using: &generator) }
      _ = lined.feed(chunk + [13, 10])
    }
  }

  @Test("random replies between garbage lines, cut at random points: every reply out, in order")
  func interleaved() {
    var generator = SystemRandomNumberGenerator()
    for _ in 0..<50 {
      var stream: [UInt8] = []
      var expected: [DMCCMessage] = []
      for id in 0..<20 {
        if Bool.random(using: &generator) {
          // Garbage that cannot contain CR LF or start a header.
          let junk = (0..<Int.random(in: 1...40, using: &generator)).map { _ in
            UInt8.random(in: 0x20...0x7B, using: &generator)
          }
          stream += [UInt8(ascii: "#")] + junk + [13, 10]
          expected.append(.plain([UInt8(ascii: "#")] + junk))
        }
        let value = Array("v\(id)".utf8)
        stream += Self.withChecksum("||1:\(id)[0]" + String(decoding: value, as: UTF8.self)) + [13, 10]
        expected.append(.reply(commandID: id, status: 0, data: value))
      }
      var parser = DMCCResponseParser()
      var got: [DMCCMessage] = []
      var start = 0
      while start < stream.count {
        let end = min(stream.count, start + Int.random(in: 1...17, using: &generator))
        got += parser.feed(stream[start..<end])
        start = end
      }
      #expect(got == expected)
    }
  }

  @Test("base64 round trip and rejects")
  func base64() {
    for length in 0..<40 {
      let bytes = (0..<length).map { UInt8(($0 * 37 + 11) & 0xFF) }
      let text = DMCC.base64Encode(bytes)
      #expect(DMCC.base64Decode(Array(text.utf8)[...]) == bytes)
    }
    #expect(DMCC.base64Decode(Array("SGk=\r\n".utf8)[...]) == Array("Hi".utf8))
    #expect(DMCC.base64Decode(Array("SGk".utf8)[...]) == nil)
    #expect(DMCC.base64Decode(Array("S=Gk".utf8)[...]) == nil)
    #expect(DMCC.base64Decode(Array("SG*k".utf8)[...]) == nil)
  }

  @Test("fuzz/dmcc regression: a pre-quoted value with CR LF is quoted, so the command stays one line")
  func preQuotedValueWithLineBreak() {
    // The fuzz input's body as text: quote, U+FFFD, pipe, tab, "Q=2", CR LF, U+FFFD, quote.
    let value = String(
      decoding: [0x22, 0xA8, 0x7C, 0x09, 0x51, 0x3D, 0x32, 0x0D, 0x0A, 0x80, 0x22] as [UInt8], as: UTF8.self)
    let argument = DMCC.argument(value)
    #expect(DMCC.unquote(argument) == value)
    let encoded = DMCCCommand(DMCCCommand.set("DEVICE.NAME", argument)).encoded()
    #expect(!encoded.dropLast(2).contains(0x0D) && !encoded.dropLast(2).contains(0x0A))
    #expect(DMCC.argument("\"as typed\"") == "\"as typed\"")
  }
}
