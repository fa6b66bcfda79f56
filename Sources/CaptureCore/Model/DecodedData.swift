/// One decoded barcode or tag read (docs/capture-sdk.md §8 DecodedData). The raw bytes are the truth;
/// `text` is a readable view of them.
public struct DecodedData: Sendable, Hashable {
  public struct Point: Sendable, Hashable {
    public var x: Int
    public var y: Int
    public init(x: Int, y: Int) {
      self.x = x
      self.y = y
    }
  }

  public var dataSource: DataSource
  public var bytes: [UInt8]
  /// NFC tag id (the SDK's TagIdData), when the reader reports one.
  public var tagID: [UInt8]?
  /// Corner points in the frame (SocketCam), clockwise from top-left.
  public var points: [Point]?
  /// Where the frame came from (an image path, "-" for stdin, a camera device), when known.
  public var origin: String?
  /// The text the code encodes when its character set is known and is not UTF-8: a decoder that honours
  /// the symbol's ECI designators and segment modes (SocketCam: a Kanji segment's Shift_JIS, an ECI 3
  /// segment's ISO-8859-1, converted to Unicode). nil when the bytes read as UTF-8 are the text.
  public var decodedText: String?

  public init(
    dataSource: DataSource, bytes: [UInt8], tagID: [UInt8]? = nil, points: [Point]? = nil,
    origin: String? = nil, decodedText: String? = nil
  ) {
    self.dataSource = dataSource
    self.bytes = bytes
    self.tagID = tagID
    self.points = points
    self.origin = origin
    self.decodedText = decodedText
  }

  /// The text of the data: `decodedText` when the reader knew the character set; otherwise the bytes as
  /// UTF-8, each byte that is not part of valid UTF-8 written `\xHH` (Python's "backslashreplace"), so no
  /// byte is silently lost or replaced. `bytes` carries the exact data.
  public var text: String { decodedText ?? Self.escapedText(bytes) }

  public static func escapedText(_ bytes: [UInt8]) -> String {
    if let valid = String(validating: bytes, as: UTF8.self) { return valid }
    var out = ""
    out.reserveCapacity(bytes.count)
    var i = 0
    while i < bytes.count {
      let length = utf8SequenceLength(bytes, at: i)
      if length > 0 {
        out += String(decoding: bytes[i..<(i + length)], as: UTF8.self)
        i += length
      } else {
        out += "\\x" + hex2(bytes[i])
        i += 1
      }
    }
    return out
  }

  /// The data as one line of plain output: valid UTF-8 as it is, except that line feed, carriage
  /// return and tab are `\n`, `\r` and `\t`, the backslash is `\\`, and every other control character
  /// (C0, DEL, and the C1 range U+0080…U+009F) and every byte that is not valid UTF-8 is `\xHH` per
  /// byte. The escape is reversible, and a code holding a line break is still exactly one line, which
  /// `capture listen | while read -r code` relies on; `bytes` (JSON) keeps the exact data.
  public var plainLine: String { Self.plainEscaped(decodedText.map { Array($0.utf8) } ?? bytes) }

  /// The C-style escape of `plainLine`, for any bytes.
  public static func plainEscaped(_ bytes: [UInt8]) -> String {
    var out = ""
    out.reserveCapacity(bytes.count)
    var i = 0
    while i < bytes.count {
      let length = utf8SequenceLength(bytes, at: i)
      switch length {
      case 0:
        out += "\\x" + hex2(bytes[i])
        i += 1
      case 1:
        switch bytes[i] {
        case 0x0A: out += "\\n"
        case 0x0D: out += "\\r"
        case 0x09: out += "\\t"
        case 0x5C: out += "\\\\"
        case 0x00..<0x20, 0x7F: out += "\\x" + hex2(bytes[i])
        default: out.unicodeScalars.append(Unicode.Scalar(bytes[i]))
        }
        i += 1
      default:
        // C1 controls are U+0080…U+009F, encoded C2 80…C2 9F.
        if length == 2 && bytes[i] == 0xC2 && bytes[i + 1] < 0xA0 {
          out += "\\x" + hex2(bytes[i]) + "\\x" + hex2(bytes[i + 1])
        } else {
          out += String(decoding: bytes[i..<(i + length)], as: UTF8.self)
        }
        i += length
      }
    }
    return out
  }

  /// Length of the valid UTF-8 scalar starting at `i`, or 0 if the byte there does not start one.
  static func utf8SequenceLength(_ b: [UInt8], at i: Int) -> Int {
    let lead = b[i]
    let need: Int
    var low: UInt8 = 0x80
    var high: UInt8 = 0xBF
    switch lead {
    case 0x00...0x7F: return 1
    case 0xC2...0xDF: need = 1
    case 0xE0: need = 2; low = 0xA0
    case 0xE1...0xEC, 0xEE...0xEF: need = 2
    case 0xED: need = 2; high = 0x9F
    case 0xF0: need = 3; low = 0x90
    case 0xF1...0xF3: need = 3
    case 0xF4: need = 3; high = 0x8F
    default: return 0
    }
    guard i + need < b.count else { return 0 }
    for k in 1...need {
      let c = b[i + k]
      let lo: UInt8 = k == 1 ? low : 0x80
      let hi: UInt8 = k == 1 ? high : 0xBF
      if c < lo || c > hi { return 0 }
    }
    return need + 1
  }
}

func hex2(_ b: UInt8) -> String {
  let digits: [Character] = Array("0123456789ABCDEF")
  return String([digits[Int(b >> 4)], digits[Int(b & 0xF)]])
}
