// The byte-stream side of a Socket scanner in SPP mode (docs/device-protocols.md §5.3) and of any serial
// scanner that sends plain text lines. Pure Swift, no imports: it is fed bytes and returns events, so
// it can be table-tested, fuzzed and benchmarked without a tty.

/// How the stream is delimited (the `framing=` selector parameter).
public enum SPPFraming: String, Sendable, CaseIterable {
  /// STX (0x02) + 2-byte big-endian total length + header + payload + trailer + ETX (0x03),
  /// docs/device-protocols.md §5.3.
  case stx
  /// Text terminated by CR, LF or CRLF.
  case line
  /// Decided per record by its first byte: STX starts a frame, anything else a line.
  case auto
}

/// What the parser recognised.
public enum SPPEvent: Sendable, Equatable {
  /// A barcode: its text, the bytes it came in (the whole frame, or the line with its terminator),
  /// and the SDK data source id when the frame's AIM-like identifier maps to one with confidence.
  case code(text: [UInt8], raw: [UInt8], dataSource: Int32?)
  /// Bytes that were not a barcode (garbage, a frame whose length lied, a partial frame at the end of
  /// the stream); kept so nothing a device sent disappears silently.
  case malformed(raw: [UInt8])
}

/// An incremental parser: `feed` any split of the stream, `finish` at its end.
///
/// Rules (docs/device-protocols.md §5.3; hostile input is normal input, docs/architecture.md §2):
/// - A framed candidate is a frame only if its ETX sits exactly at the stated total length and that
///   length is at most `maxFrameLength`; otherwise its STX is treated as garbage and the bytes after
///   it are scanned again for the next STX. So a length that lies costs one candidate, never more
///   than 4 KiB of waiting, and never an invented code.
/// - Garbage is collected and reported as one `malformed` event (at most `maxFrameLength` bytes each)
///   when the next good record arrives, the buffer is full, the line goes quiet (`flushStalled`) or the
///   stream ends. Line terminators inside it do not end it: line noise contains CR and LF bytes, and
///   a run of noise is one report, not one per terminator.
/// - `auto` detects each record from its first byte. Once a valid frame has been seen it stays
///   framed: a scanner does not change output mode without being reconfigured, and in framed mode
///   stray printable bytes ending in CR are noise, not codes. (Before that, random printable bytes
///   followed by CR are indistinguishable from a line-mode scan; no parser can tell them apart.)
/// - A line is a code only if it is valid UTF-8 with no control characters other than TAB; anything
///   else is malformed.
public struct SPPFrameParser: Sendable {
  public static let stx: UInt8 = 0x02
  public static let etx: UInt8 = 0x03
  static let cr: UInt8 = 0x0D
  static let lf: UInt8 = 0x0A
  /// No frame or line is longer than this: the parser never buffers more for one record.
  public static let maxFrameLength = 4096
  /// docs/device-protocols.md §5.3 capture: STX, two length bytes, then a 15-byte header before the barcode
  /// text.
  public static let textOffset = 3 + 15
  /// STX + length + header + ETX: a shorter frame cannot carry text where the capture puts it.
  public static let minimumCodeFrameLength = textOffset + 1
  /// STX + length + ETX: the shortest length a frame can state.
  static let minimumFrameLength = 4

  public let framing: SPPFraming

  private enum State { case idle, frame, line, skippingLine }
  private var state: State = .idle
  private var record: [UInt8] = []
  private var garbage: [UInt8] = []
  /// The stated length of the frame being collected, once its two length bytes are in.
  private var statedLength = 0
  /// A CR just ended a line: an LF right after it is the second half of CRLF.
  private var swallowsLF = false
  private var isLockedToFrames: Bool

  public init(framing: SPPFraming = .auto) {
    self.framing = framing
    isLockedToFrames = framing == .stx
  }

  /// A record has started but not ended (what a device removal would cut short).
  public var hasPartialRecord: Bool { state != .idle || !garbage.isEmpty }

  public mutating func feed(_ bytes: some Sequence<UInt8>) -> [SPPEvent] {
    var out: [SPPEvent] = []
    // Bytes handed back by a rejected candidate are scanned again before new input: a stack, so a
    // candidate inside a rejected one is found without recursion.
    var replay: [UInt8] = []
    for byte in bytes {
      // The common case takes no detour through the replay stack.
      guard let rejected = consume(byte, &out) else { continue }
      replay.append(contentsOf: rejected.reversed())
      while let next = replay.popLast() {
        if let again = consume(next, &out) { replay.append(contentsOf: again.reversed()) }
      }
    }
    return out
  }

  /// No bytes for a while: a frame still waiting for its stated length will not get it (a length that
  /// lies upwards), so give it up now and rescan what it held, rather than delaying the next good frame
  /// until 4 KiB of later data arrive. A partial line is left alone: it may still be completed.
  public mutating func flushStalled() -> [SPPEvent] {
    var out: [SPPEvent] = []
    if state == .frame {
      var replay = Array(rejectCandidate(&out).reversed())
      while let next = replay.popLast() {
        if let rejected = consume(next, &out) { replay.append(contentsOf: rejected.reversed()) }
      }
    }
    if state == .idle { flushGarbage(&out) }
    return out
  }

  /// The stream ended (device removed, file read): whatever is left is reported as malformed — a
  /// partial frame is never completed into a code.
  public mutating func finish() -> [SPPEvent] {
    var out: [SPPEvent] = []
    addGarbage(record, &out)
    record = []
    state = .idle
    swallowsLF = false
    flushGarbage(&out)
    return out
  }

  // MARK: - The state machine

  /// Takes one byte; returns bytes to scan again when a frame candidate is rejected.
  private mutating func consume(_ byte: UInt8, _ out: inout [SPPEvent]) -> [UInt8]? {
    let lfAfterCR = swallowsLF && byte == Self.lf
    swallowsLF = false
    switch state {
    case .idle:
      if lfAfterCR {
        // CRLF's second half: part of the noise when it ends a bad line, nothing after a code.
        if !garbage.isEmpty { addGarbage(byte, &out) }
        return nil
      }
      if byte == Self.stx && framing != .line {
        state = .frame
        record = [byte]
      } else if isLockedToFrames {
        addGarbage(byte, &out)
      } else if byte == Self.cr || byte == Self.lf {
        // An empty line carries no code; a terminator after garbage is more of it (kept, not dropped).
        swallowsLF = byte == Self.cr
        if !garbage.isEmpty { addGarbage(byte, &out) }
      } else {
        state = .line
        record = [byte]
      }
    case .frame:
      record.append(byte)
      if record.count == 3 {
        statedLength = Int(record[1]) << 8 | Int(record[2])
        if statedLength < Self.minimumFrameLength || statedLength > Self.maxFrameLength {
          return rejectCandidate(&out)
        }
      } else if record.count > 3 && record.count == statedLength {
        guard byte == Self.etx else { return rejectCandidate(&out) }
        let frame = record
        record = []
        state = .idle
        flushGarbage(&out)
        let event = Self.decodeFrame(frame)
        if case .code = event, framing == .auto { isLockedToFrames = true }
        out.append(event)
      }
    case .line:
      if byte == Self.cr || byte == Self.lf {
        let line = record
        record = []
        state = .idle
        swallowsLF = byte == Self.cr
        if Self.isPrintableText(line) {
          flushGarbage(&out)
          out.append(.code(text: line, raw: line + [byte], dataSource: nil))
        } else {
          addGarbage(line + [byte], &out)
        }
      } else if byte == Self.stx && framing == .auto {
        // "re-detected after garbage": a line interrupted by STX was not a line.
        addGarbage(record, &out)
        record = [byte]
        state = .frame
      } else if record.count >= Self.maxFrameLength {
        addGarbage(record + [byte], &out)
        record = []
        state = .skippingLine
      } else {
        record.append(byte)
      }
    case .skippingLine:
      if byte == Self.stx && framing == .auto {
        state = .frame
        record = [byte]
      } else {
        addGarbage(byte, &out)
        if byte == Self.cr || byte == Self.lf {
          state = .idle
          swallowsLF = byte == Self.cr
        }
      }
    }
    return nil
  }

  /// The candidate's STX was not a frame start: it becomes garbage and the rest is scanned again.
  private mutating func rejectCandidate(_ out: inout [SPPEvent]) -> [UInt8] {
    let candidate = record
    record = []
    state = .idle
    addGarbage(candidate.prefix(1), &out)
    return Array(candidate.dropFirst())
  }

  /// Collects garbage, reporting it in pieces of at most `maxFrameLength` bytes.
  private mutating func addGarbage(_ bytes: some Collection<UInt8>, _ out: inout [SPPEvent]) {
    garbage += bytes
    while garbage.count >= Self.maxFrameLength {
      out.append(.malformed(raw: Array(garbage.prefix(Self.maxFrameLength))))
      garbage.removeFirst(Self.maxFrameLength)
    }
  }

  /// One garbage byte, without building an array for it.
  private mutating func addGarbage(_ byte: UInt8, _ out: inout [SPPEvent]) {
    garbage.append(byte)
    if garbage.count >= Self.maxFrameLength {
      out.append(.malformed(raw: garbage))
      garbage.removeAll(keepingCapacity: true)
    }
  }

  private mutating func flushGarbage(_ out: inout [SPPEvent]) {
    guard !garbage.isEmpty else { return }
    out.append(.malformed(raw: garbage))
    garbage = []
  }

  // MARK: - Frame contents

  /// Extracts the text of a complete frame (its ETX already checked).
  ///
  /// The meaning of the header and trailer bytes is Unknown (docs/device-protocols.md §5.3). The heuristic,
  /// from the one captured frame: the text starts after the 15-byte header and ends at the first CR that is
  /// followed by `]` (the AIM-like trailer `]C0…`); without such a trailer the text runs to the ETX.
  /// The AIM identifier, when present and in `aimSources`, gives the data source.
  public static func decodeFrame(_ frame: [UInt8]) -> SPPEvent {
    guard frame.count >= minimumCodeFrameLength else { return .malformed(raw: frame) }
    let etxIndex = frame.count - 1
    var textEnd = etxIndex
    var source: Int32?
    var i = textOffset
    while i + 1 < etxIndex {
      if frame[i] == cr && frame[i + 1] == UInt8(ascii: "]") {
        textEnd = i
        if i + 3 < etxIndex {
          source = aimSources[[frame[i + 2], frame[i + 3]]]
        }
        break
      }
      i += 1
    }
    return .code(text: Array(frame[textOffset..<textEnd]), raw: frame, dataSource: source)
  }

  /// AIM symbology identifiers (ISO/IEC 15424: `]` + code character + modifier) whose symbology is
  /// unambiguous, to SDK data source ids (docs/capture-sdk.md DataSource). Identifiers shared by several
  /// symbologies or with modifiers that change the meaning are left out: NotSpecified beats a guess.
  static let aimSources: [[UInt8]: Int32] = [
    Array("A0".utf8): 11,  // Code 39
    Array("C0".utf8): 15,  // Code 128 (C1 is GS1-128)
    Array("C1".utf8): 20,  // GS1-128
    Array("E0".utf8): 19,  // EAN-13 (UPC-A is also sent as E0 with a leading 0)
    Array("E4".utf8): 18,  // EAN-8
    Array("G0".utf8): 14,  // Code 93
    Array("F0".utf8): 7,  // Codabar
    Array("I0".utf8): 27,  // Interleaved 2 of 5
    Array("L0".utf8): 33,  // PDF417
    Array("Q1".utf8): 38,  // QR Code model 2
    Array("d1".utf8): 16,  // Data Matrix ECC 200
    Array("z0".utf8): 2,  // Aztec
  ]

  /// Valid UTF-8 with no control character but TAB: what a scanner in line mode sends for a code.
  static func isPrintableText(_ bytes: [UInt8]) -> Bool {
    guard !bytes.isEmpty else { return false }
    for b in bytes where (b < 0x20 && b != 0x09) || b == 0x7F { return false }
    return String(validating: bytes, as: UTF8.self) != nil
  }
}
