/// How many bytes of an image file are read, decided from the file's first bytes: the format from its
/// magic, then the bound from the dimensions its header declares, before the rest is read. A reader of
/// a stream or of a huge file (/dev/zero, a 1 GB file of zeros, a forged header) never holds more than
/// that bound, and a file that is not an image costs its first 8 bytes.
///
/// The bounds (all far above what a barcode image needs):
/// - width × height at most `ImageLoader.maxPixels` (2^28, 256 megapixels), checked on the header;
/// - binary PNM (P4-P6): exactly the header and the raster the header declares (pgm(5): "the raster"
///   follows the single whitespace byte); anything after it (a second image of a Netpbm stream) is left
///   unread;
/// - plain PNM (P1-P3): the header plus four bytes per sample digit-and-separator, plus 1 MiB;
/// - PNG: the raw scanlines the IHDR declares (PNG specification §7.2: a filter byte per row, up to 8
///   bytes a pixel at 16-bit RGBA), plus 1/64 for deflate and chunk framing, plus 16 MiB of other chunks;
/// - JPEG: 8 bytes per pixel and component of the SOFn frame header (ITU T.81 B.2.2), plus 16 MiB for
///   tables and metadata; the segments before the frame header may hold at most 16 MiB;
/// - and never more than `ImageLoader.maxEncodedBytes` (1 GiB) in all.
public enum EncodedSize: Sendable, Equatable {
  /// The header is not complete yet: read until the input holds this many bytes (or ends), then ask
  /// again.
  case needHeader(Int)
  /// Read at most this many bytes in all; the decoder reports a file cut short by it as corrupt.
  case atMost(Int)
}

extension ImageLoader {
  /// The most bytes any image input may take (see `EncodedSize`).
  public static let maxEncodedBytes = 1 << 30
  /// The most header and metadata bytes before a JPEG frame header or after an image's pixel data.
  static let metadataBytes = 16 << 20
  /// The most bytes a PNM header (magic, dimensions, maxval and comments) may take.
  static let maxPNMHeaderBytes = 1 << 20

  /// The bound for an input of `format` whose first bytes are `header` (see `EncodedSize`). Throws
  /// what the header already shows: too many pixels, a malformed header.
  public static func encodedSize(_ format: ImageFormat, header: [UInt8]) throws(ImageError) -> EncodedSize {
    switch format {
    case .png: return try pngSize(header)
    case .jpeg: return try jpegSize(header)
    case .pnm:
      guard let parsed = try PNMParser.header(header) else {
        guard header.count < maxPNMHeaderBytes else {
          throw .corrupt("PNM header longer than \(maxPNMHeaderBytes >> 20) MiB")
        }
        return .needHeader(min(maxPNMHeaderBytes, max(64, header.count * 2)))
      }
      return .atMost(min(maxEncodedBytes, parsed.encodedBytes))
    }
  }

  /// Checks a declared size against `maxPixels` without any arithmetic that could overflow.
  static func checkPixels(_ width: Int, _ height: Int, _ name: String) throws(ImageError) {
    guard width > 0, height > 0 else { throw .corrupt("\(name) has zero width or height") }
    let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
    guard !overflow, pixels <= maxPixels else {
      throw .unsupportedFormat("image too large: \(width)x\(height)")
    }
  }

  /// PNG: signature (8), IHDR length (4), "IHDR" (4), width, height (4 each), bit depth, colour type.
  private static func pngSize(_ header: [UInt8]) throws(ImageError) -> EncodedSize {
    guard header.count >= 26 else { return .needHeader(26) }
    guard header[12..<16].elementsEqual("IHDR".utf8) else {
      throw .corrupt("PNG: the first chunk is not IHDR")
    }
    func u32(_ at: Int) -> Int { header[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) } }
    let width = u32(16)
    let height = u32(20)
    try checkPixels(width, height, "PNG")
    // IHDR, in the PNG specification §11.2.2 (W3C, ISO/IEC 15948): colour type 0 gray, 2 RGB,
    // 3 palette, 4 gray+alpha, 6 RGBA; depth 1-16 bits.
    let channels = [0: 1, 2: 3, 3: 1, 4: 2, 6: 4][Int(header[25])] ?? 4
    let depth = min(16, max(1, Int(header[24])))
    // Width and height are at most 2^28 here, so none of this can overflow.
    let rowBytes = (width * channels * depth + 7) / 8 + 1
    // Adam7 interlacing adds at most a filter byte per row of each of its 7 passes.
    let raw = height * (rowBytes + 7)
    return .atMost(min(maxEncodedBytes, raw + raw / 64 + metadataBytes))
  }

  /// JPEG: walks the marker segments (ITU T.81 B.1.1.4: FF, marker, 2-byte length counting itself)
  /// from SOI to the first SOFn, whose frame header has the height, width and component count.
  private static func jpegSize(_ header: [UInt8]) throws(ImageError) -> EncodedSize {
    var at = 2
    while true {
      guard at < metadataBytes else {
        throw .corrupt("JPEG: no frame header in the first \(metadataBytes >> 20) MiB")
      }
      guard at + 4 <= header.count else { return .needHeader(at + 4) }
      guard header[at] == 0xFF else { throw .corrupt("JPEG: no marker at offset \(at)") }
      let marker = header[at + 1]
      if marker == 0xFF {  // B.1.1.2: any marker may be preceded by fill bytes 0xFF
        at += 1
        continue
      }
      if marker == 0x01 || (0xD0...0xD8).contains(marker) {  // TEM, RSTn, SOI: no length
        at += 2
        continue
      }
      let length = Int(header[at + 2]) << 8 | Int(header[at + 3])
      guard length >= 2 else { throw .corrupt("JPEG: bad segment length at offset \(at)") }
      // SOF0-SOF15 except DHT (C4), JPG (C8) and DAC (CC).
      if (0xC0...0xCF).contains(marker) && marker != 0xC4 && marker != 0xC8 && marker != 0xCC {
        guard at + 10 <= header.count else { return .needHeader(at + 10) }
        let height = Int(header[at + 5]) << 8 | Int(header[at + 6])
        let width = Int(header[at + 7]) << 8 | Int(header[at + 8])
        let components = max(1, Int(header[at + 9]))
        try checkPixels(width, height, "JPEG")
        return .atMost(min(maxEncodedBytes, at + width * height * components * 8 + metadataBytes))
      }
      at += 2 + length
    }
  }

  /// Reads one encoded image through `read` (at most n bytes a call, fewer only at the end of the
  /// input): 8 bytes to tell the format, then the header, then at most the format's bound. Returns the
  /// bytes to `decode`, or the error the header already shows (too many pixels).
  public static func readEncoded<E: Error>(_ read: (Int) throws(E) -> [UInt8]) throws(E) -> Result<
    [UInt8], ImageError
  > {
    var bytes = try read(8)
    guard let format = ImageFormat.sniff(bytes) else {
      return .success(bytes)  // not an image, or empty: `decode` says which from these bytes
    }
    var ended = bytes.count < 8
    while true {
      let size: EncodedSize
      do throws(ImageError) { size = try encodedSize(format, header: bytes) } catch { return .failure(error) }
      switch size {
      case .needHeader(let total):
        // The input ended inside the header: `decode` says it is cut short.
        if ended { return .success(bytes) }
        let more = try read(total - bytes.count)
        bytes += more
        // Fewer bytes than asked: the input ended; look at the header once more with what came.
        ended = bytes.count < total
      case .atMost(let total):
        if total > bytes.count { bytes += try read(total - bytes.count) }
        // A header read in one piece may have taken more than the bound (the next image of a stream).
        return .success(bytes.count > total ? Array(bytes.prefix(total)) : bytes)
      }
    }
  }
}
