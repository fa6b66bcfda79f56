/// An 8-bit grayscale image, row-major, one byte per pixel, stride == width (the layout both ZBar's "Y800"
/// format and zxing-cpp's `ImageFormat::Lum` read without conversion).
public struct GrayImage: Sendable {
  public let width: Int
  public let height: Int
  public let pixels: [UInt8]

  /// - Precondition: `width >= 0`, `height >= 0` and `pixels.count == width * height`.
  public init(width: Int, height: Int, pixels: [UInt8]) {
    precondition(width >= 0 && height >= 0, "GrayImage: negative size \(width)x\(height)")
    precondition(pixels.count == width * height, "GrayImage: \(pixels.count) pixels for \(width)x\(height)")
    self.width = width
    self.height = height
    self.pixels = pixels
  }

  /// A uniform image, e.g. a blank white page (`value` 255).
  public init(width: Int, height: Int, filledWith value: UInt8) {
    self.init(width: width, height: height, pixels: [UInt8](repeating: value, count: width * height))
  }
}

public enum ImageError: Error, Sendable, Equatable {
  /// I/O failed (the message includes `strerror`), or the path is a directory.
  case unreadable(String)
  case notFound(String)
  case accessDenied(String)
  /// Not a valid image of its format: truncated PNG, bad JPEG, malformed PNM, a 0-byte file.
  case corrupt(String)
  /// Not a format we read, or a valid image we cannot convert (too large, unknown colour space).
  case unsupportedFormat(String)
  /// A camera another program holds (EBUSY from VIDIOC_S_FMT, VIDIOC_REQBUFS or VIDIOC_STREAMON: a
  /// V4L2 device streams to one file handle at a time).
  case busy(String)
  /// A camera that went away while it was open (ENODEV: the V4L2 core answers every call on an
  /// unregistered device so, e.g. a USB webcam unplugged).
  case removed(String)
}

extension ImageError: CustomStringConvertible {
  public var description: String {
    switch self {
    case .unreadable(let message): "unreadable: \(message)"
    case .notFound(let message): "not found: \(message)"
    case .accessDenied(let message): "access denied: \(message)"
    case .corrupt(let message): "corrupt image: \(message)"
    case .unsupportedFormat(let message): "unsupported format: \(message)"
    case .busy(let message): "busy: \(message)"
    case .removed(let message): "removed: \(message)"
    }
  }
}

public enum ImageFormat: Sendable, Equatable {
  case png, jpeg, pnm

  /// The PNG file signature (PNG specification §5.2).
  static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

  /// Identifies an image by its first bytes: the 8-byte PNG signature, the JPEG SOI marker followed by the
  /// start of the next marker (FF D8 FF), or a Netpbm magic "P1"..."P6" followed by whitespace or a comment.
  /// At least 3 bytes (PNM, JPEG) or 8 bytes (PNG) are needed.
  public static func sniff(_ header: some Collection<UInt8>) -> ImageFormat? {
    let head = Array(header.prefix(8))
    if head.count == 8 && head == pngSignature { return .png }
    if head.count >= 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF { return .jpeg }
    if head.count >= 3 && head[0] == UInt8(ascii: "P")
      && (UInt8(ascii: "1")...UInt8(ascii: "6")).contains(head[1])
      && (PNMParser.isWhitespace(head[2]) || head[2] == UInt8(ascii: "#"))
    {
      return .pnm
    }
    return nil
  }

  /// True when `bytes` is a strict prefix of a signature: a file cut off inside its magic bytes.
  static func isTruncatedSignature(_ bytes: [UInt8]) -> Bool {
    guard !bytes.isEmpty else { return false }
    if bytes.count < 8 && Array(pngSignature.prefix(bytes.count)) == bytes { return true }
    if bytes.count < 3 && Array([0xFF, 0xD8, 0xFF].prefix(bytes.count)) == bytes { return true }
    if bytes.count == 2 && bytes[0] == UInt8(ascii: "P")
      && (UInt8(ascii: "1")...UInt8(ascii: "6")).contains(bytes[1])
    {
      return true
    }
    return false
  }
}
