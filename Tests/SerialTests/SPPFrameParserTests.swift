import Drivers
import Testing

// The one captured SPP frame (docs/device-protocols.md §5.3, SO raw COM-port capture): a Socket scanner in
// SPP mode reading Code 128 "EQ0000013158". 41 bytes; bytes 1-2 are the total length 0x0029.
let capturedText = Array("EQ0000013158".utf8)
let capturedFrame: [UInt8] =
  [0x02, 0x00, 0x29]
  + [0x00, 0x64, 0x01, 0x00, 0x17, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x00, 0x01, 0x00, 0x06]
  + capturedText + [0x0D] + Array("]C0DB3".utf8) + [0x60] + Array("E5".utf8) + [0x03]

/// A frame shaped like the capture around other text and another AIM identifier.
func frame(_ text: String, aim: String = "C0") -> [UInt8] {
  let body =
    [0x00, 0x64, 0x01, 0x00, 0x17, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x00, 0x01, 0x00, 0x06]
    + Array(text.utf8) + [0x0D] + Array("]\(aim)DB3".utf8) + [0x60] + Array("E5".utf8)
  let total = body.count + 4
  return [0x02, UInt8(total >> 8), UInt8(total & 0xFF)] + body + [0x03]
}

func codes(_ events: [SPPEvent]) -> [[UInt8]] {
  events.compactMap { if case .code(let text, _, _) = $0 { text } else { nil } }
}

func malformed(_ events: [SPPEvent]) -> [[UInt8]] {
  events.compactMap { if case .malformed(let raw) = $0 { raw } else { nil } }
}

/// Feeds the chunks, then ends the stream.
func parse(_ chunks: [[UInt8]], framing: SPPFraming = .auto) -> [SPPEvent] {
  var parser = SPPFrameParser(framing: framing)
  return chunks.flatMap { parser.feed($0) } + parser.finish()
}

/// A small deterministic generator (SplitMix64), so the noise test is the same on every run.
struct SplitMix64: RandomNumberGenerator {
  var state: UInt64
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

@Suite struct SPPFrameParserTests {
  @Test func capturedFrameIsFortyOneBytesWithItsLengthInBytesOneAndTwo() {
    #expect(capturedFrame.count == 41)
    #expect(Int(capturedFrame[1]) << 8 | Int(capturedFrame[2]) == 41)
  }

  @Test(arguments: SPPFraming.allCases.filter { $0 != .line })
  func capturedFrameDecodes(framing: SPPFraming) {
    let events = parse([capturedFrame], framing: framing)
    #expect(events == [.code(text: capturedText, raw: capturedFrame, dataSource: 15)])
  }

  @Test(arguments: 1...40)
  func capturedFrameSplitAtEveryByte(split: Int) {
    let events = parse([Array(capturedFrame[..<split]), Array(capturedFrame[split...])])
    #expect(events == [.code(text: capturedText, raw: capturedFrame, dataSource: 15)])
  }

  @Test func capturedFrameFedOneByteAtATime() {
    let events = parse(capturedFrame.map { [$0] }, framing: .stx)
    #expect(events == [.code(text: capturedText, raw: capturedFrame, dataSource: 15)])
  }

  @Test(arguments: [
    ("A0", Int32?.some(11)), ("C0", 15), ("C1", 20), ("E0", 19), ("E4", 18), ("Q1", 38), ("d1", 16),
    ("L0", 33), ("z0", 2), ("X9", nil), ("Cx", nil), ("c0", nil),
  ])
  func aimIdentifierGivesTheDataSource(aim: String, source: Int32?) {
    let f = frame("123456", aim: aim)
    #expect(parse([f]) == [.code(text: Array("123456".utf8), raw: f, dataSource: source)])
  }

  @Test func frameWithoutTrailerRunsToETXWithNoDataSource() {
    let body = [UInt8](repeating: 0, count: 15) + Array("HELLO".utf8)
    let f = [0x02, 0x00, UInt8(body.count + 4)] + body + [0x03]
    #expect(parse([f]) == [.code(text: Array("HELLO".utf8), raw: f, dataSource: nil)])
  }

  @Test func frameTooShortForTheHeaderIsMalformedNotACode() {
    let f: [UInt8] = [0x02, 0x00, 0x06, 0x41, 0x42, 0x03]
    #expect(parse([f], framing: .stx) == [.malformed(raw: f)])
  }

  @Test func garbageBetweenFramesIsReportedOnceAndFramesSurvive() {
    let junk = Array("noise\u{01}\u{7F}".utf8) + [0xFF, 0x00]
    let events = parse([junk + frame("ONE") + junk + frame("TWO") + junk], framing: .stx)
    #expect(codes(events) == [Array("ONE".utf8), Array("TWO".utf8)])
    #expect(malformed(events) == [junk, junk, junk])
  }

  @Test func lengthThatLiesDownwardsResyncsAtTheNextSTX() {
    var liar = frame("LIE")
    liar[2] = 20  // ETX not at byte 20
    let events = parse([liar + frame("GOOD")], framing: .stx)
    #expect(codes(events) == [Array("GOOD".utf8)])
    #expect(malformed(events) == [liar])
  }

  @Test func lengthThatLiesUpwardsResyncsWithinTheCap() {
    var liar = frame("LIE")
    liar[1] = 0x0F  // 0x0F?? = about 3.8 KiB, less than the cap: the parser waits for that many bytes
    let good = frame("GOOD")
    let filler = [UInt8](repeating: 0x41, count: 4096)
    let events = parse([liar + good + filler], framing: .stx)
    // The good frame inside the candidate is found on the rescan; nothing else is a code.
    #expect(codes(events) == [Array("GOOD".utf8)])
    #expect(malformed(events).reduce(0) { $0 + $1.count } == liar.count + filler.count)
  }

  @Test func aRejectedTinyLengthDoesNotLeakIntoTheNextCandidate() {
    // 02 00 01 states 1 byte (impossible); the frame right after must be checked against its own
    // length, not the rejected one's.
    let input: [UInt8] = [0x02, 0x00, 0x01] + frame("OK")
    let events = parse([input], framing: .stx)
    #expect(codes(events) == [Array("OK".utf8)])
    #expect(malformed(events) == [[0x02, 0x00, 0x01]])
  }

  @Test func lengthOverTheCapIsRejectedAtOnce() {
    var liar = frame("LIE")
    liar[1] = 0xFF
    var parser = SPPFrameParser(framing: .stx)
    let events = parser.feed(liar + frame("GOOD"))
    #expect(codes(events) == [Array("GOOD".utf8)])
  }

  @Test func stalledFrameIsGivenUpSoTheNextFrameIsNotDelayed() {
    var liar = frame("LIE")
    liar[1] = 0x01  // 256+ bytes stated, 37 sent
    let good = frame("GOOD")
    var parser = SPPFrameParser(framing: .auto)
    #expect(parser.feed(liar + good).isEmpty)
    let events = parser.flushStalled()
    #expect(codes(events) == [Array("GOOD".utf8)])
    // In auto mode the rescanned bytes may be cut into several malformed runs; all of them are kept.
    #expect(malformed(events).flatMap { $0 } == liar)
    #expect(!parser.hasPartialRecord)
  }

  @Test(arguments: [
    ("\r", [UInt8]("ABC\r".utf8)), ("\n", [UInt8]("ABC\n".utf8)), ("\r\n", [UInt8]("ABC\r".utf8)),
  ])
  func lineModeTerminators(terminator: String, raw: [UInt8]) {
    let input = Array("ABC\(terminator)12345\(terminator)".utf8)
    for framing in [SPPFraming.line, .auto] {
      let events = parse([input], framing: framing)
      #expect(codes(events) == [Array("ABC".utf8), Array("12345".utf8)])
      #expect(malformed(events).isEmpty)
      #expect(events.first == .code(text: Array("ABC".utf8), raw: raw, dataSource: nil))
    }
  }

  @Test(arguments: 1...9)
  func crlfSplitAtEveryByte(split: Int) {
    let input = Array("ABC\r\nDEF\r\n".utf8)
    let events = parse([Array(input[..<split]), Array(input[split...])], framing: .line)
    #expect(codes(events) == [Array("ABC".utf8), Array("DEF".utf8)])
    #expect(malformed(events).isEmpty)
  }

  @Test func linesWithControlBytesAreOneRunOfNoise() {
    // Two bad lines in a row are one report (noise has terminators in it), ended by the good line.
    let events = parse(
      [Array("A\u{01}B\r\n".utf8) + [0xFF, 0x41, 0x0D] + Array("OK\r\n".utf8)], framing: .line)
    #expect(codes(events) == [Array("OK".utf8)])
    #expect(malformed(events) == [Array("A\u{01}B\r\n".utf8) + [0xFF, 0x41, 0x0D]])
  }

  @Test func noiseWithTerminatorsIsReportedWhenTheLineGoesQuiet() {
    var parser = SPPFrameParser(framing: .auto)
    let noise: [UInt8] = [0xFF, 0x0D, 0x0A, 0x01, 0x0A, 0x0D, 0x80, 0x0D]
    #expect(parser.feed(noise).isEmpty)
    #expect(parser.hasPartialRecord)
    #expect(parser.flushStalled() == [.malformed(raw: noise)])
    #expect(!parser.hasPartialRecord)
  }

  @Test func fourKiBOfRandomNoiseIsOneReport() {
    // A fixed pseudo-random 4 KiB, full of CR and LF, in which no line could be a code: printable
    // bytes, TAB and UTF-8 lead bytes become CR (a printable run before CR is a line-mode code, which
    // no parser can tell from a scan), STX becomes 0x01 (it would start a frame candidate).
    var state: UInt32 = 0x1234_5678
    var noise: [UInt8] = (0..<4096).map { _ in
      state = state &* 1_103_515_245 &+ 12345
      let b = UInt8(truncatingIfNeeded: state >> 16)
      if (0x20..<0x7F).contains(b) || b == 0x09 || b >= 0xC0 { return 0x0D }
      return b == 0x02 ? 0x01 : b
    }
    noise[0] = 0x01  // a terminator first would be an empty line, not noise
    #expect(noise.filter { $0 == 0x0D || $0 == 0x0A }.count > 1000)
    let events = parse([noise + frame("AFTER")])
    #expect(codes(events) == [Array("AFTER".utf8)])
    #expect(malformed(events) == [noise])
  }

  @Test func utf8LineIsACode() {
    #expect(codes(parse([Array("Grüße\n".utf8)], framing: .line)) == [Array("Grüße".utf8)])
  }

  @Test func autoDetectsLinesAndFramesAndRedetectsAfterGarbage() {
    // Lines first; a line cut by STX was garbage and the frame is read; after a frame the stream stays
    // framed, so trailing printable text is not taken for a line.
    let input = Array("LINE1\r\nhalf".utf8) + frame("FRAMED") + Array("LATE\r\n".utf8) + frame("AGAIN")
    let events = parse([input], framing: .auto)
    #expect(codes(events) == [Array("LINE1".utf8), Array("FRAMED".utf8), Array("AGAIN".utf8)])
    #expect(malformed(events) == [Array("half".utf8), Array("LATE\r\n".utf8)])
  }

  @Test func lineModeIgnoresSTX() {
    let events = parse([[0x02] + Array("X\r".utf8)], framing: .line)
    #expect(codes(events).isEmpty)
    #expect(malformed(events) == [[0x02] + Array("X\r".utf8)])
  }

  @Test func overlongLineIsMalformedAndTheNextLineSurvives() {
    let long = [UInt8](repeating: 0x41, count: 5000)
    let events = parse([long + [0x0D] + Array("NEXT\r".utf8)], framing: .line)
    #expect(codes(events) == [Array("NEXT".utf8)])
    #expect(malformed(events).reduce(0) { $0 + $1.count } == 5001)
  }

  @Test func partialFrameAtTheEndOfTheStreamIsMalformedNeverACode() {
    let cut = Array(capturedFrame[..<30])
    #expect(parse([cut]) == [.malformed(raw: cut)])
    let cutLine = Array("PARTIAL".utf8)
    #expect(parse([cutLine], framing: .line) == [.malformed(raw: cutLine)])
  }

  @Test(arguments: [SPPFraming.stx, .auto])
  func randomNoiseInventsNothing(framing: SPPFraming) {
    var rng = SplitMix64(state: 0x5350_505F_4E4F_4953)
    let noise = (0..<65536).map { _ in UInt8.random(in: 0...255, using: &rng) }
    // In auto mode the stream is first established as framed (a valid frame), as on a real SPP link;
    // before that, printable bytes between two CRs are a legitimate line-mode scan (see the parser).
    let input = frame("BEFORE") + noise + frame("AFTER")
    for chunk in [1, 7, 4096, input.count] {
      var parser = SPPFrameParser(framing: framing)
      var events: [SPPEvent] = []
      for start in stride(from: 0, to: input.count, by: chunk) {
        events += parser.feed(input[start..<min(start + chunk, input.count)])
      }
      // The line goes quiet: a noise STX whose stated length reaches past the end is given up (what
      // the driver does after 500 ms without bytes), once per candidate still open.
      for _ in 0..<256 where parser.hasPartialRecord { events += parser.flushStalled() }
      events += parser.finish()
      #expect(codes(events) == [Array("BEFORE".utf8), Array("AFTER".utf8)], "chunk \(chunk)")
      // Every noise byte is accounted for in malformed events, none longer than the cap.
      #expect(malformed(events).reduce(0) { $0 + $1.count } == noise.count, "chunk \(chunk)")
      #expect(malformed(events).allSatisfy { $0.count <= SPPFrameParser.maxFrameLength })
    }
  }

  @Test(arguments: [SPPFraming.stx, .auto])
  func randomFramesAmidGarbageAndRandomSplitsAreAllRecoveredInOrder(framing: SPPFraming) {
    var rng = SplitMix64(state: 7)
    var input: [UInt8] = []
    var expected: [[UInt8]] = []
    for n in 0..<300 {
      // Garbage without STX cannot hide a frame; with auto mode, the first frame comes first.
      if n > 0 || framing == .stx {
        input += (0..<Int.random(in: 0...40, using: &rng)).map { _ in
          var b = UInt8.random(in: 0...255, using: &rng)
          if b == SPPFrameParser.stx { b = 0x20 }
          return b
        }
      }
      let text = String(
        (0..<Int.random(in: 1...60, using: &rng)).map { _ in
          Character(Unicode.Scalar(UInt8.random(in: 0x21...0x7E, using: &rng)))
        })
      expected.append(Array(text.utf8))
      input += frame(text)
    }
    var parser = SPPFrameParser(framing: framing)
    var events: [SPPEvent] = []
    var start = 0
    while start < input.count {
      let end = min(input.count, start + Int.random(in: 1...97, using: &rng))
      events += parser.feed(input[start..<end])
      start = end
    }
    events += parser.finish()
    #expect(codes(events) == expected)
  }

  @Test func pureNoiseInStxModeGivesNoCode() {
    var rng = SplitMix64(state: 42)
    let noise = (0..<65536).map { _ in UInt8.random(in: 0...255, using: &rng) }
    #expect(codes(parse([noise], framing: .stx)).isEmpty)
  }
}
