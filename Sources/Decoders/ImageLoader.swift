import CImageIO
import Glibc

public enum ImageLoader {
  /// Largest accepted width * height (the same bound as CIMAGEIO_MAX_PIXELS in cimageio.h).
  static let maxPixels = 1 << 28

  /// Reads and decodes an image file. errno is mapped: ENOENT/ENOTDIR → `.notFound`, EACCES/EPERM →
  /// `.accessDenied`, anything else (EISDIR, EIO, ELOOP …) → `.unreadable`, each message with strerror.
  public static func load(path: String) throws(ImageError) -> GrayImage {
    try decode(try readFile(path: path))
  }

  /// Decodes PNG, JPEG or PNM (P1-P6) bytes, identified by their magic bytes, into 8-bit gray.
  public static func decode(_ bytes: [UInt8]) throws(ImageError) -> GrayImage {
    guard !bytes.isEmpty else { throw .corrupt("empty file") }
    switch ImageFormat.sniff(bytes) {
    case .png: return try decodeC(bytes, "PNG") { cimageio_decode_png($0, $1, $2, $3, $4) }
    // Files are decoded strictly: a JPEG cut short is `.corrupt`, like a truncated PNG.
    case .jpeg: return try decodeJPEG(bytes, strict: true)
    case .pnm: return try PNMParser.decode(bytes)
    case nil:
      if ImageFormat.isTruncatedSignature(bytes) { throw .corrupt("file ends inside its signature") }
      let head = bytes.prefix(8).map { hex($0) }.joined(separator: " ")
      throw .unsupportedFormat("not a PNG, JPEG or PNM image (starts with \(head))")
    }
  }

  /// Whether the file is a regular file that starts with the magic bytes of a format `decode` reads.
  /// Unreadable files are not images; this never throws and never waits (O_NONBLOCK: a FIFO is not
  /// waited on, and is no image file).
  public static func isImageFile(path: String) -> Bool {
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return false }
    var head = [UInt8](repeating: 0, count: 8)
    var filled = 0
    while filled < head.count {
      let n = head.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
      if n < 0 && errno == EINTR { continue }
      if n <= 0 { break }
      filled += n
    }
    return ImageFormat.sniff(head.prefix(filled)) != nil
  }

  /// JPEG entry used by the camera: `strict: false` accepts a frame cut short as libjpeg does.
  static func decodeJPEG(_ bytes: [UInt8], strict: Bool) throws(ImageError) -> GrayImage {
    try decodeC(bytes, "JPEG") { cimageio_decode_jpeg($0, $1, strict ? 1 : 0, $2, $3, $4) }
  }

  private typealias CDecoder = (
    UnsafePointer<UInt8>, Int, UnsafeMutablePointer<cimageio_gray>, UnsafeMutablePointer<CChar>, Int
  ) -> Int32

  /// Calls a cimageio decoder and copies its malloc'd pixels into the image: the one pixel copy.
  private static func decodeC(_ bytes: [UInt8], _ name: String, _ decoder: CDecoder) throws(ImageError)
    -> GrayImage
  {
    var gray = cimageio_gray(pixels: nil, width: 0, height: 0)
    var message = [CChar](repeating: 0, count: 256)
    let rc = bytes.withUnsafeBufferPointer { data in
      message.withUnsafeMutableBufferPointer {
        decoder(data.baseAddress!, data.count, &gray, $0.baseAddress!, $0.count)
      }
    }
    guard rc == Int32(CIMAGEIO_OK), let pixels = gray.pixels else {
      let text =
        "\(name): "
        + String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
      switch Int(rc) {
      case Int(CIMAGEIO_UNSUPPORTED), Int(CIMAGEIO_TOO_LARGE): throw .unsupportedFormat(text)
      case Int(CIMAGEIO_NOMEM): throw .unreadable(text)
      default: throw .corrupt(text)
      }
    }
    defer { cimageio_free(pixels) }
    let width = Int(gray.width)
    let height = Int(gray.height)
    return GrayImage(
      width: width, height: height, pixels: Array(UnsafeBufferPointer(start: pixels, count: width * height)))
  }

  /// The encoded bytes of the image at `path`, at most what its header allows (`readEncoded`): a
  /// regular file only, so a FIFO or a device never blocks this synchronous reader (SocketCam reads
  /// streams through the engine's bounded, cancellable input instead).
  static func readFile(path: String) throws(ImageError) -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
    guard fd >= 0 else { throw mapErrno(errno, path) }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { throw mapErrno(errno, path) }
    // open(2) succeeds on a directory with O_RDONLY; read(2) would then fail with EISDIR.
    if (info.st_mode & S_IFMT) == S_IFDIR { throw mapErrno(EISDIR, path) }
    guard (info.st_mode & S_IFMT) == S_IFREG else { throw .unreadable("\(path): not a regular file") }
    let read = { (count: Int) throws(ImageError) -> [UInt8] in
      var bytes: [UInt8] = []
      while bytes.count < count {
        let chunk = min(count - bytes.count, 1 << 16)
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: chunk))
        let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + start, chunk) }
        let failure = errno
        bytes.removeLast(n > 0 ? chunk - n : chunk)
        if n == 0 { break }
        if n < 0 {
          if failure == EINTR { continue }
          throw mapErrno(failure, path)
        }
      }
      return bytes
    }
    return try readEncoded(read).get()
  }

  static func mapErrno(_ code: Int32, _ path: String) -> ImageError {
    let message = "\(path): \(String(cString: strerror(code)))"
    switch code {
    case ENOENT, ENOTDIR: return .notFound(message)
    case EACCES, EPERM: return .accessDenied(message)
    default: return .unreadable(message)
    }
  }

  static func hex(_ byte: UInt8) -> String {
    let digits = Array("0123456789ABCDEF")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
  }
}

extension GrayImage {
  /// Encodes as baseline grayscale JPEG (libjpeg-turbo), e.g. to save a camera frame.
  public func jpegData(quality: Int = 90) throws(ImageError) -> [UInt8] {
    try encode("JPEG") {
      cimageio_encode_jpeg_gray($0, Int32(width), Int32(height), Int32(quality), $1, $2, $3, $4)
    }
  }

  /// Encodes as 8-bit grayscale PNG (libpng).
  public func pngData() throws(ImageError) -> [UInt8] {
    try encode("PNG") { cimageio_encode_png_gray($0, Int32(width), Int32(height), $1, $2, $3, $4) }
  }

  private func encode(
    _ name: String,
    _ encoder: (
      UnsafePointer<UInt8>, UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, UnsafeMutablePointer<Int>,
      UnsafeMutablePointer<CChar>, Int
    ) -> Int32
  ) throws(ImageError) -> [UInt8] {
    guard width > 0, height > 0 else { throw .unsupportedFormat("\(name): empty image") }
    var out: UnsafeMutablePointer<UInt8>?
    var size = 0
    var message = [CChar](repeating: 0, count: 256)
    let rc = pixels.withUnsafeBufferPointer { data in
      message.withUnsafeMutableBufferPointer {
        encoder(data.baseAddress!, &out, &size, $0.baseAddress!, $0.count)
      }
    }
    guard rc == Int32(CIMAGEIO_OK), let out else {
      let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
      throw .unsupportedFormat("\(name): \(text)")
    }
    defer { cimageio_free(out) }
    return Array(UnsafeBufferPointer(start: out, count: size))
  }
}
