// libFuzzer harness: SPPFrameParser (docs/device-protocols.md §5.3) in each framing mode.
// Input: byte 0 = options (bit 0: also run a pass that calls flushStalled after every chunk); the rest
// is chunks by the length-prefix scheme (Support.swift), as reads from a tty would split the stream.

@_cdecl("LLVMFuzzerTestOneInput")
public func sppFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let input = fuzzInput(data, size)
  guard let options = input.first else { return 0 }
  let chunks = fuzzNotifications(input.dropFirst())
  let stream = chunks.flatMap { $0 }
  for framing in SPPFraming.allCases {
    // Split as given, then whole: the same events.
    var split = SPPFrameParser(framing: framing)
    var events: [SPPEvent] = []
    for chunk in chunks {
      events += split.feed(chunk)
    }
    events += split.finish()
    require(!split.hasPartialRecord, "partial record after finish")
    var whole = SPPFrameParser(framing: framing)
    let once = whole.feed(stream) + whole.finish()
    require(events == once, "\(framing): split and whole streams give different events")
    check(events, stream, framing)
    // A stalled-frame flush after every chunk may end frames early, but never invents or loses bytes.
    if options & 1 != 0 {
      var stalled = SPPFrameParser(framing: framing)
      var flushed: [SPPEvent] = []
      for chunk in chunks { flushed += stalled.feed(chunk) + stalled.flushStalled() }
      flushed += stalled.finish()
      check(flushed, stream, framing)
    }
  }
  return 0
}

private let stx = SPPFrameParser.stx
private let etx = SPPFrameParser.etx
private let cr: UInt8 = 0x0D
private let lf: UInt8 = 0x0A

private func check(_ events: [SPPEvent], _ stream: [UInt8], _ framing: SPPFraming) {
  // Every code's raw bytes are a run of the input, in order, not overlapping.
  var from = 0
  var all: [UInt8] = []
  var codes = 0
  for event in events {
    switch event {
    case .code(let text, let raw, let dataSource):
      codes += 1
      guard let at = find(raw, in: stream, from: from) else {
        require(false, "\(framing): a code's raw bytes are not in the input (after the previous code)")
        return
      }
      from = at + raw.count
      if raw.first == stx && framing != .line {
        // A frame: ETX at the stated length, text where the capture puts it.
        require(raw.last == etx, "frame without ETX")
        require(raw.count == Int(raw[1]) << 8 | Int(raw[2]), "frame length differs from the stated one")
        require(raw.count >= SPPFrameParser.minimumCodeFrameLength, "short frame as a code")
        require(raw.count <= SPPFrameParser.maxFrameLength, "frame past the cap")
        let textEnd = SPPFrameParser.textOffset + text.count
        require(textEnd < raw.count && Array(raw[SPPFrameParser.textOffset..<textEnd]) == text, "frame text")
      } else {
        require(framing != .stx, "a line code in stx framing")
        require(dataSource == nil, "a line with a data source")
        require(raw.last == cr || raw.last == lf, "line without terminator")
        require(Array(raw.dropLast()) == text, "line text")
        require(SPPFrameParser.isPrintableText(text), "non-printable line as a code")
        require(!text.contains(stx) || framing == .line, "a line with an STX in auto framing")
        require(text.count <= SPPFrameParser.maxFrameLength, "line past the cap")
      }
      all += raw
    case .malformed(let raw):
      require(!raw.isEmpty, "empty malformed event")
      require(raw.count <= SPPFrameParser.maxFrameLength, "malformed event past the cap")
      all += raw
    }
  }
  // Nothing invented from a stream without a record start or end.
  if !stream.contains(stx) && !stream.contains(cr) && !stream.contains(lf) {
    require(codes == 0, "\(framing): a code from a stream with no STX and no CR/LF")
  }
  if framing == .stx && !stream.contains(stx) { require(codes == 0, "stx: a code without STX") }
  if framing == .line && !stream.contains(cr) && !stream.contains(lf) {
    require(codes == 0, "line: a code without CR/LF")
  }
  // All event bytes, in order, are the input less some CR/LF (empty lines, the LF of CRLF).
  var j = 0
  for byte in stream {
    if j < all.count && all[j] == byte {
      j += 1
    } else {
      require(byte == cr || byte == lf, "\(framing): input byte \(byte) lost or events reordered")
    }
  }
  require(j == all.count, "\(framing): events hold bytes the input does not (in that order)")
}

/// The first index at or after `from` where `needle` occurs as a run in `haystack`.
private func find(_ needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
  guard !needle.isEmpty else { return from }
  var i = from
  while i + needle.count <= haystack.count {
    if haystack[i] == needle[0] && haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
    i += 1
  }
  return nil
}
