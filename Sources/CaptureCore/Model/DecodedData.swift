/// One decoded barcode or tag read (capture-sdk.md §8 DecodedData). The raw bytes are the truth;
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

  public init(
    dataSource: DataSource, bytes: [UInt8], tagID: [UInt8]? = nil, points: [Point]? = nil,
    origin: String? = nil
  ) {
    self.dataSource = dataSource
    self.bytes = bytes
    self.tagID = tagID
    self.points = points
    self.origin = origin
  }

  /// UTF-8 text of the data; each byte that is not part of valid UTF-8 is written `\xHH` (Python's
  /// "backslashreplace"), so no byte is silently lost or replaced. `bytes` carries the exact data.
  public var text: String { Self.escapedText(bytes) }

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
