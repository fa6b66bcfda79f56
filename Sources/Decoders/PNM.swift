/// Netpbm reader (P1-P6) producing 8-bit gray. Format facts from the Netpbm specifications (pbm(5), pgm(5),
/// ppm(5)): the header is magic, width, height and (except PBM) maxval, as ASCII decimals separated by
/// whitespace, with `#` comments running to the end of a line; in the binary formats exactly one whitespace
/// byte follows the last header field; samples wider than 8 bits (maxval > 255) are two bytes, most
/// significant first; maxval is 1...65535; in PBM 1 is black.
enum PNMParser {
  static func isWhitespace(_ byte: UInt8) -> Bool {
    // pgm(5): "whitespace (blanks, TABs, CRs, LFs)"; VT and FF are accepted as C isspace() does.
    byte == 0x20 || (0x09...0x0D).contains(byte)
  }

  static func decode(_ bytes: [UInt8]) throws(ImageError) -> GrayImage {
    try bytes.withUnsafeBufferPointer { (buffer) throws(ImageError) -> GrayImage in
      var parser = Cursor(buffer: buffer)
      return try parser.parse()
    }
  }

  /// A complete PNM header: what `ImageLoader.encodedSize` bounds the rest of the input by.
  struct Header: Equatable {
    var kind: Int
    var width: Int
    var height: Int
    var maxval: Int
    /// Where the raster starts.
    var rasterOffset: Int

    /// The most bytes the whole image may take. Binary: exactly the header and the raster. Plain: a
    /// sample is at most as many digits as maxval, and at least one separator follows it; four bytes
    /// for each of those, plus 1 MiB, leaves room for CR LF line ends and generous spacing.
    /// Width x height is at most `ImageLoader.maxPixels` (2^28), so nothing here can overflow.
    var encodedBytes: Int {
      let pixels = width * height
      switch kind {
      case 4: return rasterOffset + (width + 7) / 8 * height
      case 5, 6: return rasterOffset + pixels * (kind == 6 ? 3 : 1) * (maxval > 255 ? 2 : 1)
      default:
        let digits = String(maxval).count
        return rasterOffset + pixels * (kind == 3 ? 3 : 1) * (digits + 1) * 4 + (1 << 20)
      }
    }
  }

  /// The header of `bytes` when it is complete, nil when `bytes` ends inside it (read more). Throws
  /// for a malformed header or one declaring more than `ImageLoader.maxPixels` pixels.
  static func header(_ bytes: [UInt8]) throws(ImageError) -> Header? {
    try bytes.withUnsafeBufferPointer { (buffer) throws(ImageError) -> Header? in
      var cursor = Cursor(buffer: buffer)
      return try cursor.header()
    }
  }

  private struct Cursor {
    let buffer: UnsafeBufferPointer<UInt8>
    var index = 0

    init(buffer: UnsafeBufferPointer<UInt8>) { self.buffer = buffer }

    /// Skips whitespace and comments; comments are allowed anywhere whitespace is.
    mutating func skipSeparators() {
      while index < buffer.count {
        let byte = buffer[index]
        if PNMParser.isWhitespace(byte) {
          index += 1
        } else if byte == UInt8(ascii: "#") {
          while index < buffer.count && buffer[index] != 0x0A && buffer[index] != 0x0D { index += 1 }
        } else {
          return
        }
      }
    }

    mutating func readNumber(_ what: String) throws(ImageError) -> Int {
      skipSeparators()
      var value = 0
      var digits = 0
      while index < buffer.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(buffer[index]) {
        value = value * 10 + Int(buffer[index] - UInt8(ascii: "0"))
        digits += 1
        index += 1
        // Any real dimension or sample fits easily; stop before Int could overflow on garbage.
        if value > 1 << 40 { throw .corrupt("PNM \(what) out of range") }
      }
      if digits == 0 {
        throw index >= buffer.count ? .corrupt("PNM truncated before \(what)") : .corrupt("PNM: bad \(what)")
      }
      return value
    }

    /// One header field, or nil when the buffer ends before the number is known to be complete.
    mutating func completeNumber(_ what: String) throws(ImageError) -> Int? {
      skipSeparators()
      let start = index
      while index < buffer.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(buffer[index]) {
        index += 1
        if index - start > 13 { throw .corrupt("PNM \(what) out of range") }
      }
      guard index < buffer.count else { return nil }
      index = start
      return try readNumber(what)
    }

    mutating func header() throws(ImageError) -> Header? {
      guard buffer.count >= 2 else { return nil }
      guard buffer[0] == UInt8(ascii: "P"), (UInt8(ascii: "1")...UInt8(ascii: "6")).contains(buffer[1]) else {
        throw .unsupportedFormat("not a PNM image")
      }
      let kind = Int(buffer[1] - UInt8(ascii: "0"))
      index = 2
      guard let width = try completeNumber("width"), let height = try completeNumber("height") else {
        return nil
      }
      try ImageLoader.checkPixels(width, height, "PNM")
      var maxval = 1
      if kind != 1 && kind != 4 {
        guard let value = try completeNumber("maxval") else { return nil }
        guard (1...65535).contains(value) else { throw .corrupt("PNM maxval \(value) outside 1...65535") }
        maxval = value
      }
      // Binary formats: exactly one whitespace byte, already in the buffer (completeNumber saw it).
      if kind >= 4 { index += 1 }
      return Header(kind: kind, width: width, height: height, maxval: maxval, rasterOffset: index)
    }

    mutating func parse() throws(ImageError) -> GrayImage {
      guard buffer.count >= 2, buffer[0] == UInt8(ascii: "P"),
        (UInt8(ascii: "1")...UInt8(ascii: "6")).contains(buffer[1])
      else { throw .unsupportedFormat("not a PNM image") }
      let kind = Int(buffer[1] - UInt8(ascii: "0"))
      index = 2
      let width = try readNumber("width")
      let height = try readNumber("height")
      // Checked without multiplying first: a forged 4294967295x4294967295 header must not trap.
      try ImageLoader.checkPixels(width, height, "PNM")
      var maxval = 1
      if kind != 1 && kind != 4 {
        maxval = try readNumber("maxval")
        guard (1...65535).contains(maxval) else { throw .corrupt("PNM maxval \(maxval) outside 1...65535") }
      }
      if kind >= 4 {
        // Exactly one whitespace byte separates the header from the raster.
        guard index < buffer.count, PNMParser.isWhitespace(buffer[index]) else {
          throw .corrupt("PNM header not followed by whitespace")
        }
        index += 1
      }
      let count = width * height
      var failure: ImageError?
      let pixels = [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
        do throws(ImageError) {
          switch kind {
          case 1: try readPlainBitmap(into: out, count: count)
          case 2: try readPlain(into: out, count: count, channels: 1, maxval: maxval)
          case 3: try readPlain(into: out, count: count, channels: 3, maxval: maxval)
          case 4: try readRawBitmap(into: out, width: width, height: height)
          case 5: try readRaw(into: out, count: count, channels: 1, maxval: maxval)
          default: try readRaw(into: out, count: count, channels: 3, maxval: maxval)
          }
          initialized = count
        } catch {
          // The closure cannot throw a typed error out of Array's initializer; report it afterwards.
          // Zero-filling keeps the array's storage fully initialized regardless of how far we got.
          out.initialize(repeating: 0)
          initialized = count
          failure = error
        }
      }
      if let failure { throw failure }
      return GrayImage(width: width, height: height, pixels: pixels)
    }

    /// Maps a sample in 0...maxval to 0...255, rounding to nearest.
    @inline(__always)
    static func scale(_ value: Int, _ maxval: Int) -> UInt8 {
      let rounded: Int = (value * 255 + maxval / 2) / maxval
      return UInt8(truncatingIfNeeded: rounded)
    }

    @inline(__always)
    static func luma(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> UInt8 {
      // BT.601 weights in 10-bit fixed point, as zxing-cpp's RGBToLum (ImageView.h) and cimageio.c use.
      let sum: Int = 306 * Int(r) + 601 * Int(g) + 117 * Int(b) + 0x200
      return UInt8(truncatingIfNeeded: sum >> 10)
    }

    mutating func readPlain(
      into out: UnsafeMutableBufferPointer<UInt8>, count: Int, channels: Int, maxval: Int
    )
      throws(ImageError)
    {
      for i in 0..<count {
        var samples: (UInt8, UInt8, UInt8) = (0, 0, 0)
        for c in 0..<channels {
          let value = try readNumber("sample")
          guard value <= maxval else { throw .corrupt("PNM sample \(value) exceeds maxval \(maxval)") }
          let scaled = Cursor.scale(value, maxval)
          switch c {
          case 0: samples.0 = scaled
          case 1: samples.1 = scaled
          default: samples.2 = scaled
          }
        }
        out[i] = channels == 1 ? samples.0 : Cursor.luma(samples.0, samples.1, samples.2)
      }
    }

    mutating func readPlainBitmap(into out: UnsafeMutableBufferPointer<UInt8>, count: Int) throws(ImageError)
    {
      // pbm(5) plain: each pixel is "0" or "1"; whitespace between them is optional.
      for i in 0..<count {
        skipSeparators()
        guard index < buffer.count else { throw .corrupt("PNM raster truncated") }
        switch buffer[index] {
        case UInt8(ascii: "0"): out[i] = 255
        case UInt8(ascii: "1"): out[i] = 0
        default: throw .corrupt("PBM: bad pixel character")
        }
        index += 1
      }
    }

    mutating func readRawBitmap(into out: UnsafeMutableBufferPointer<UInt8>, width: Int, height: Int)
      throws(ImageError)
    {
      // pbm(5) raw: rows of ceil(width / 8) bytes, most significant bit first, 1 = black.
      let rowBytes = (width + 7) / 8
      guard buffer.count - index >= rowBytes * height else { throw .corrupt("PNM raster truncated") }
      for y in 0..<height {
        let row = index + y * rowBytes
        for x in 0..<width {
          let bit = (buffer[row + (x >> 3)] >> (7 - UInt8(x & 7))) & 1
          out[y * width + x] = bit == 1 ? 0 : 255
        }
      }
      index += rowBytes * height
    }

    mutating func readRaw(into out: UnsafeMutableBufferPointer<UInt8>, count: Int, channels: Int, maxval: Int)
      throws(ImageError)
    {
      let sampleBytes = maxval > 255 ? 2 : 1
      let needed = count * channels * sampleBytes
      guard buffer.count - index >= needed else { throw .corrupt("PNM raster truncated") }
      let base = buffer.baseAddress! + index
      index += needed
      if channels == 1 && sampleBytes == 1 && maxval == 255 {
        out.baseAddress!.update(from: base, count: count)  // the common case: bytes are already gray8
        return
      }
      @inline(__always) func sample(_ n: Int) throws(ImageError) -> UInt8 {
        let value = sampleBytes == 1 ? Int(base[n]) : Int(base[2 * n]) << 8 | Int(base[2 * n + 1])
        guard value <= maxval else { throw .corrupt("PNM sample \(value) exceeds maxval \(maxval)") }
        return Cursor.scale(value, maxval)
      }
      if channels == 1 {
        for i in 0..<count { out[i] = try sample(i) }
      } else {
        for i in 0..<count {
          out[i] = Cursor.luma(try sample(3 * i), try sample(3 * i + 1), try sample(3 * i + 2))
        }
      }
    }
  }
}
