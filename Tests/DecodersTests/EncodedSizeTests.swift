// The bound an image input is read to, decided from its first bytes (EncodedSize).

import Testing

@testable import Decoders

@Suite struct EncodedSizeTests {
  static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

  @Test("a PNM header whose width x height overflows Int is too large, never a trap, for P1-P6")
  func pnmOverflow() throws {
    for kind in 1...6 {
      let header = Self.bytes("P\(kind)\n4294967295 4294967295\n255\n")
      #expect(throws: ImageError.unsupportedFormat("image too large: 4294967295x4294967295")) {
        try ImageLoader.decode(header)
      }
      #expect(throws: ImageError.unsupportedFormat("image too large: 4294967295x4294967295")) {
        try ImageLoader.encodedSize(.pnm, header: header)
      }
    }
  }

  @Test("binary PNM is bounded by exactly its header and raster; an incomplete header asks for more")
  func pnmBounds() throws {
    #expect(try ImageLoader.encodedSize(.pnm, header: Self.bytes("P5 3 2 255\n")) == .atMost(11 + 6))
    #expect(try ImageLoader.encodedSize(.pnm, header: Self.bytes("P6 3 2 65535\n")) == .atMost(13 + 36))
    #expect(try ImageLoader.encodedSize(.pnm, header: Self.bytes("P4 9 2\n")) == .atMost(7 + 4))
    #expect(try ImageLoader.encodedSize(.pnm, header: Self.bytes("P5 3 2 25")) == .needHeader(64))
  }

  @Test("PNG is bounded by its IHDR: raw scanlines plus 1/64 plus 16 MiB")
  func pngBound() throws {
    let png = try GrayImage(width: 10, height: 4, filledWith: 255).pngData()
    #expect(try ImageLoader.encodedSize(.png, header: Array(png.prefix(8))) == .needHeader(26))
    let raw = 4 * (10 + 1 + 7)
    #expect(try ImageLoader.encodedSize(.png, header: png) == .atMost(raw + raw / 64 + (16 << 20)))
  }

  @Test("JPEG is bounded by its frame header: 8 bytes a pixel and component plus 16 MiB")
  func jpegBound() throws {
    let jpeg = try GrayImage(width: 16, height: 8, filledWith: 128).jpegData()
    guard case .atMost(let limit) = try ImageLoader.encodedSize(.jpeg, header: jpeg) else {
      Issue.record("no bound for a complete JPEG")
      return
    }
    #expect(limit > 16 * 8 * 8 + (16 << 20) && limit < 16 * 8 * 8 + (16 << 20) + jpeg.count)
  }

  @Test("readEncoded reads 8 bytes of something that is not an image, and a PNM exactly")
  func readsLittle() throws {
    var offered = Self.bytes("not an image at all, and longer than eight bytes")
    var asked = 0
    let read = { (count: Int) -> [UInt8] in
      asked += count
      let piece = Array(offered.prefix(count))
      offered.removeFirst(piece.count)
      return piece
    }
    #expect(try ImageLoader.readEncoded(read).get().count == 8)
    #expect(asked == 8)
    offered = Self.bytes("P5 2 1 255\n") + [1, 2] + Self.bytes("P5 trailing second image")
    #expect(try ImageLoader.readEncoded(read).get() == Self.bytes("P5 2 1 255\n") + [1, 2])
  }
}
