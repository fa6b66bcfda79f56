// D600 scan-data characteristic: frames and their reassembly (docs/device-protocols.md §2.4, AXM + TS).

/// One scan-data frame: two ASCII hex digits naming the tag family ("card type"), then the payload, up to
/// (not including) the single `0x00` terminator (docs/device-protocols.md §2.4, AXM `d600ReaderLib.js`, TS
/// `scanner-data.service.ts`).
public struct D600ScanFrame: Sendable, Hashable {
  /// The family prefix as sent, uppercased (`"4F"`); `"4F"` when ``familyIsImplied``.
  public var familyCode: String
  /// The parsed family code; nil only for a frame built by hand with a code that is not two hex digits.
  public var family: UInt8?
  /// The bytes after the family prefix (the whole frame when ``familyIsImplied``).
  public var payload: [UInt8]
  /// The whole frame without its terminator.
  public var raw: [UInt8]
  /// The frame had no family prefix but starts with `"ht"`: AXM reads it as an NFC Forum URL, family 4F
  /// implied (docs/device-protocols.md §2.4, AXM).
  public var familyIsImplied: Bool

  public init(
    familyCode: String, family: UInt8?, payload: [UInt8], raw: [UInt8], familyIsImplied: Bool = false
  ) {
    self.familyCode = familyCode
    self.family = family
    self.payload = payload
    self.raw = raw
    self.familyIsImplied = familyIsImplied
  }

  /// The family name from the docs/device-protocols.md §2.4 table, `"Unknown 0xNN"` for codes not in it.
  public var familyName: String { family.map(Self.familyName) ?? "Unknown" }

  /// The payload as UTF-8 text, nil when it is not valid UTF-8. AXM decodes NFC Forum (4F) payloads as
  /// UTF-8 (docs/device-protocols.md §2.4, AXM); the URI prefix is not expanded in the captured frames.
  public var text: String? { String(validating: payload, as: UTF8.self) }

  /// A Thinfilm/Kovio (family 18) URL, by TS's rule: the payload starts `B7 03` (`http://`) or `B7 04`
  /// (`https://`) and the URL ends at the first `FE` (docs/device-protocols.md §2.4, TS). Without an `FE`
  /// the URL runs to the end of the payload (our choice). Nil for any other family or payload.
  public var thinfilmURL: String? {
    guard family == 0x18, payload.count >= 2, payload[0] == 0xB7 else { return nil }
    let scheme: String
    switch payload[1] {
    case 0x03: scheme = "http://"
    case 0x04: scheme = "https://"
    default: return nil
    }
    let rest = payload[2...]
    let end = rest.firstIndex(of: 0xFE) ?? rest.endIndex
    return scheme + String(decoding: rest[..<end], as: UTF8.self)
  }

  /// Tag family names (docs/device-protocols.md §2.4, AXM `cardTypeMap`, TS `getCardTypeName`; the same list
  /// is the SpringCore HF protocol table, AXM `springCoreUtils.js`).
  public static func familyName(_ code: UInt8) -> String {
    switch code {
    case 0x01: return "ISO 14443-A (NFC-A)"
    case 0x02: return "ISO 14443-B (NFC-B)"
    case 0x03: return "FeliCa"
    case 0x04: return "ISO 15693 (NFC-V)"
    case 0x08: return "NXP ICODE1"
    case 0x10: return "Inside PicoPass/PicoTag"
    case 0x11: return "Innovision Topaz/Jewel"
    case 0x14: return "EM4134"
    case 0x18: return "Thinfilm/Kovio NFC barcode"
    case 0x20: return "ST SR family"
    case 0x34: return "ISO 18000-3M3 / EPC HF"
    case 0x40: return "ASK CTS256B/512B"
    case 0x4F: return "NFC Forum"
    case 0x80: return "Innovatron"
    default: return "Unknown 0x" + CodecHex.byte(code)
    }
  }
}

/// What the scan-data assembler produces.
public enum D600ScanEvent: Sendable, Hashable {
  /// A complete frame with a family prefix (or the implied 4F of the `"ht"` rule).
  case frame(D600ScanFrame)
  /// A frame that grew past the assembler's maximum length: reported once, as soon as it passes the cap,
  /// with the first `maxFrameLength` bytes; the rest up to the next `0x00` is dropped.
  case oversized(raw: [UInt8])
  /// A terminated frame shorter than 2 bytes or without a hex family prefix, kept as it came.
  case malformed(raw: [UInt8])
}

/// Reassembles D600 scan-data notifications into frames (docs/device-protocols.md §2.4, AXM + TS).
///
/// The notifications are one byte stream: every `0x00` ends a frame, so a frame may span notifications
/// and one notification may end a frame and start the next. Empty frames (`00 00`) yield nothing. The
/// events do not depend on where the stream is split.
public struct D600ScanAssembler: Sendable {
  /// TS caps a frame at 4096 bytes, its own choice (docs/device-protocols.md §2.8).
  public static let maxFrameLength = 4096

  /// The longest frame (without terminator) this assembler accepts; at least 2.
  public let maxFrameLength: Int
  private var buffer: [UInt8] = []
  private var discarding = false

  public init(maxFrameLength: Int = D600ScanAssembler.maxFrameLength) {
    self.maxFrameLength = max(2, maxFrameLength)
  }

  /// Bytes of an unterminated frame held back (0 while skipping the rest of an oversized frame).
  public var pendingCount: Int { buffer.count }

  /// True while the rest of an oversized frame is being skipped up to the next `0x00`.
  public var isDiscarding: Bool { discarding }

  /// Adds one notification; returns the frames it completes, in order.
  public mutating func feed(_ notification: [UInt8]) -> [D600ScanEvent] {
    var events: [D600ScanEvent] = []
    var start = notification.startIndex
    while start < notification.endIndex {
      let terminator = notification[start...].firstIndex(of: 0x00)
      let end = terminator ?? notification.endIndex
      if discarding {
        if terminator != nil { discarding = false }
      } else {
        let room = maxFrameLength - buffer.count
        if end - start > room {
          buffer += notification[start..<(start + room)]
          events.append(.oversized(raw: buffer))
          buffer = []
          discarding = terminator == nil
        } else {
          buffer += notification[start..<end]
          if terminator != nil, !buffer.isEmpty {
            events.append(Self.decode(frame: buffer))
            buffer = []
          }
        }
      }
      start = terminator.map { $0 + 1 } ?? notification.endIndex
    }
    return events
  }

  /// Forgets any partial frame (e.g. after a disconnect).
  public mutating func reset() {
    buffer = []
    discarding = false
  }

  /// Classifies one frame given without its terminator (docs/device-protocols.md §2.4, AXM + TS).
  public static func decode(frame raw: [UInt8]) -> D600ScanEvent {
    guard raw.count >= 2 else { return .malformed(raw: raw) }
    if let high = CodecHex.digitValue(raw[0]), let low = CodecHex.digitValue(raw[1]) {
      let family = high << 4 | low
      return .frame(
        D600ScanFrame(familyCode: CodecHex.byte(family), family: family, payload: Array(raw[2...]), raw: raw))
    }
    // AXM: a frame starting with "ht" is an NFC Forum URL sent without a type prefix.
    if raw[0] == 0x68, raw[1] == 0x74 {
      return .frame(
        D600ScanFrame(familyCode: "4F", family: 0x4F, payload: raw, raw: raw, familyIsImplied: true))
    }
    return .malformed(raw: raw)
  }
}
