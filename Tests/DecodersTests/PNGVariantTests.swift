import Testing

@testable import Decoders

/// Minimal PNG writer for test images no installed tool produces (16-bit, 2-bit, palette + tRNS,
/// gray + alpha, Adam7 interlace). Format facts from the PNG specification (ISO/IEC 15948): chunks are
/// length, type, data, CRC-32 over type + data; IDAT holds a zlib stream, here with uncompressed "stored"
/// deflate blocks (RFC 1950/1951); every scanline starts with a filter-type byte (0 = None).
enum TestPNG {
  static func crc32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
      crc ^= UInt32(byte)
      for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
  }

  static func bigEndian(_ value: UInt32) -> [UInt8] {
    [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
  }

  static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
    let body = Array(type.utf8) + data
    return bigEndian(UInt32(data.count)) + body + bigEndian(crc32(body))
  }

  static func zlibStored(_ data: [UInt8]) -> [UInt8] {
    var out: [UInt8] = [0x78, 0x01]  // deflate, 32K window, no preset dictionary; (0x7801 % 31 == 0)
    var offset = 0
    repeat {
      let length = min(65535, data.count - offset)
      let final: UInt8 = offset + length == data.count ? 1 : 0
      out += [
        final, UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF),
      ]
      out += data[offset..<(offset + length)]
      offset += length
    } while offset < data.count
    var a: UInt32 = 1
    var b: UInt32 = 0
    for byte in data {
      a = (a + UInt32(byte)) % 65521
      b = (b + a) % 65521
    }
    return out + bigEndian(b << 16 | a)
  }

  /// `rows` are raw scanlines without filter bytes (already packed for bit depths < 8).
  static func make(
    width: Int, height: Int, bitDepth: UInt8, colorType: UInt8, rows: [[UInt8]], interlaced: Bool = false,
    extra: [(String, [UInt8])] = []
  ) -> [UInt8] {
    var header = bigEndian(UInt32(width)) + bigEndian(UInt32(height))
    header += [bitDepth, colorType, 0, 0, interlaced ? 1 : 0]
    var raw: [UInt8] = []
    for row in rows { raw += [0] + row }
    var png = ImageFormat.pngSignature + chunk("IHDR", header)
    for (type, data) in extra { png += chunk(type, data) }
    return png + chunk("IDAT", zlibStored(raw)) + chunk("IEND", [])
  }
}

@Suite struct PNGVariantTests {
  @Test func writerProducesWhatLibpngReads() throws {
    let png = TestPNG.make(width: 3, height: 1, bitDepth: 8, colorType: 0, rows: [[0, 100, 255]])
    #expect(try ImageLoader.decode(png).pixels == [0, 100, 255])
  }

  @Test func sixteenBitGray() throws {
    // Read as sRGB-encoded (PNG_IMAGE_FLAG_16BIT_sRGB), so 0x8080 / 257 = 128 exactly.
    let png = TestPNG.make(
      width: 3, height: 1, bitDepth: 16, colorType: 0, rows: [[0x00, 0x00, 0x80, 0x80, 0xFF, 0xFF]])
    #expect(try ImageLoader.decode(png).pixels == [0, 128, 255])
  }

  @Test func twoBitGray() throws {
    // Four 2-bit samples in one byte, most significant first: 0, 1, 2, 3 → 0, 85, 170, 255.
    let png = TestPNG.make(width: 4, height: 1, bitDepth: 2, colorType: 0, rows: [[0b00_01_10_11]])
    #expect(try ImageLoader.decode(png).pixels == [0, 85, 170, 255])
  }

  @Test func paletteWithTransparency() throws {
    // 4-bit indices: black, white, red, and a fully transparent black (tRNS alpha 0) that must turn white.
    let palette: [UInt8] = [0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 0, 0]
    let png = TestPNG.make(
      width: 4, height: 1, bitDepth: 4, colorType: 3, rows: [[0x01, 0x23]],
      extra: [("PLTE", palette), ("tRNS", [255, 255, 255, 0])])
    let pixels = try ImageLoader.decode(png).pixels
    #expect(pixels[0] == 0 && pixels[1] == 255 && pixels[3] == 255)
    // Colour becomes gray as zxing-cpp computes luminance from RGB (what ZXingReader decodes):
    // (306·255 + 512) >> 10 = 76 for pure red.
    #expect(pixels[2] == 76)
  }

  @Test func grayWithAlphaIsCompositedOnWhite() throws {
    let png = TestPNG.make(width: 3, height: 1, bitDepth: 8, colorType: 4, rows: [[0, 255, 0, 0, 0, 128]])
    let pixels = try ImageLoader.decode(png).pixels
    #expect(pixels[0] == 0)  // opaque black
    #expect(pixels[1] == 255)  // transparent black → background
    // Composited in linear light too: 128/255 black over white leaves 0.498 linear, sRGB-encoded 186
    // (not the 127 a gamma-naive blend would give).
    #expect(pixels[2] == 186)
  }

  @Test func sixteenBitRGB() throws {
    let png = TestPNG.make(
      width: 2, height: 1, bitDepth: 16, colorType: 2,
      rows: [[UInt8](repeating: 0, count: 6) + [UInt8](repeating: 0xFF, count: 6)])
    #expect(try ImageLoader.decode(png).pixels == [0, 255])
  }

  @Test func adam7Interlaced() throws {
    // 8x8 gray, value = 8 * y + x. Adam7 passes (x0, y0, dx, dy): pixels of each pass in row order.
    let passes = [
      (0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2),
    ]
    var rows: [[UInt8]] = []
    for (x0, y0, dx, dy) in passes {
      for y in stride(from: y0, to: 8, by: dy) {
        rows.append(stride(from: x0, to: 8, by: dx).map { UInt8(8 * y + $0) })
      }
    }
    let png = TestPNG.make(width: 8, height: 8, bitDepth: 8, colorType: 0, rows: rows, interlaced: true)
    #expect(try ImageLoader.decode(png).pixels == (0..<64).map { UInt8($0) })
  }

  @Test func badCRCIsCorrupt() throws {
    var png = TestPNG.make(width: 1, height: 1, bitDepth: 8, colorType: 0, rows: [[7]])
    png[png.count - 20] ^= 0xFF  // inside IDAT's data: its CRC no longer matches
    #expect(throws: ImageError.self) { try ImageLoader.decode(png) }
    do {
      _ = try ImageLoader.decode(png)
    } catch {
      guard case .corrupt = error else {
        Issue.record("expected .corrupt, got \(error)")
        return
      }
    }
  }
}
