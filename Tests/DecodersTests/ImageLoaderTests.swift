import Glibc
import TestSupport
import Testing

@testable import Decoders

@Suite struct ImageLoaderTests {
  @Test func pngFromZint() throws {
    let dir = TemporaryDirectory()
    try run(["zint", "-b", "QRCODE", "--scale=3", "-o", dir.file("qr.png"), "-d", "png"])
    let image = try ImageLoader.load(path: dir.file("qr.png"))
    // A version 1 QR is 21 modules; zint's raster X-dimension is 2 px per unit of --scale (so 6 px here)
    // and it adds no quiet zone by default.
    #expect(image.width == 126 && image.height == 126)
    #expect(Set(image.pixels) == [0, 255])
    #expect(image.pixels[0] == 0)  // top-left finder pattern is dark
    #expect(everything.decode(image).map(\.text) == ["png"])
  }

  @Test func paletteWithTransparencyIsCompositedOnWhite() throws {
    // zint writes a palette PNG with a tRNS chunk for a transparent background. Transparent-black pixels
    // must become white, or the symbol would vanish into a black page.
    let dir = TemporaryDirectory()
    try run([
      "zint", "-b", "QRCODE", "--scale=4", "--bg=00000000", "-o", dir.file("t.png"), "-d", "transparent",
    ])
    let image = try ImageLoader.load(path: dir.file("t.png"))
    #expect(Set(image.pixels) == [0, 255])
    #expect(everything.decode(image).map(\.text) == ["transparent"])
  }

  @Test func rgbaPNG() throws {
    let dir = TemporaryDirectory()
    try run([
      "qrencode", "-t", "PNG32", "--background=FFFF0000", "-s", "4", "-o", dir.file("rgba.png"), "rgba",
    ])
    let image = try ImageLoader.load(path: dir.file("rgba.png"))
    #expect(image.pixels[0] == 255)  // transparent yellow margin → white
    #expect(everything.decode(image).map(\.text) == ["rgba"])
  }

  @Test func colourPNGBecomesLuma() throws {
    let dir = TemporaryDirectory()
    try run([
      "zint", "-b", "QRCODE", "--scale=4", "--fg=0000A0", "--bg=FFFF80", "-o", dir.file("c.png"), "-d",
      "colour",
    ])
    let image = try ImageLoader.load(path: dir.file("c.png"))
    // zxing-cpp's RGB luminance (306 R + 601 G + 117 B + 512) >> 10 of the stored values: 0000A0 → 18,
    // FFFF80 → 240 (libpng's linear-light conversion would give other levels).
    #expect(Set(image.pixels) == [18, 240])
    #expect(everything.decode(image).map(\.text) == ["colour"])
  }

  @Test func pngRoundTrip() throws {
    let image = GrayImage(width: 3, height: 2, pixels: [0, 127, 255, 1, 2, 3])
    #expect(try ImageLoader.decode(try image.pngData()).pixels == image.pixels)
  }

  @Test func truncatedPNGIsCorrupt() throws {
    let dir = TemporaryDirectory()
    try run(["zint", "-b", "QRCODE", "--scale=4", "-o", dir.file("qr.png"), "-d", "cut short"])
    let whole = try ImageLoader.readFile(path: dir.file("qr.png"))
    let path = try dir.write("cut.png", Array(whole.prefix(whole.count / 2)))
    #expect(throws: ImageError.self) { try ImageLoader.load(path: path) }
    do {
      _ = try ImageLoader.load(path: path)
    } catch {
      guard case .corrupt(let message) = error else {
        Issue.record("expected .corrupt, got \(error)"); return
      }
      #expect(message.hasPrefix("PNG: "))
    }
    // Cut inside the 8-byte signature.
    #expect(throws: ImageError.corrupt("file ends inside its signature")) {
      try ImageLoader.decode(Array(whole.prefix(5)))
    }
  }

  @Test func emptyFileIsCorrupt() throws {
    let dir = TemporaryDirectory()
    let path = try dir.write("empty.png", [])
    #expect(throws: ImageError.corrupt("empty file")) { try ImageLoader.load(path: path) }
    #expect(ImageLoader.isImageFile(path: path) == false)
  }

  @Test func missingFileIsNotFound() {
    #expect(throws: ImageError.notFound("/nonexistent/dir/x.png: No such file or directory")) {
      try ImageLoader.load(path: "/nonexistent/dir/x.png")
    }
    #expect(ImageLoader.isImageFile(path: "/nonexistent/dir/x.png") == false)
  }

  @Test func directoryIsUnreadable() throws {
    let dir = TemporaryDirectory()
    #expect(throws: ImageError.unreadable("\(dir.path): Is a directory")) {
      try ImageLoader.load(path: dir.path)
    }
  }

  // Root ignores file permissions, so the check only means something for other users.
  @Test(.enabled(if: geteuid() != 0)) func unreadableFileIsAccessDenied() throws {
    let dir = TemporaryDirectory()
    let path = try dir.write("secret.png", [0x89, 0x50])
    chmod(path, 0)
    #expect(throws: ImageError.accessDenied("\(path): Permission denied")) {
      try ImageLoader.load(path: path)
    }
  }

  @Test func textFileIsNotAnImage() throws {
    let dir = TemporaryDirectory()
    let path = try dir.write("notes.txt", bytes("Plain text, not a picture.\n"))
    #expect(ImageLoader.isImageFile(path: path) == false)
    #expect(
      throws: ImageError.unsupportedFormat(
        "not a PNG, JPEG or PNM image (starts with 50 6C 61 69 6E 20 74 65)")
    ) {
      try ImageLoader.load(path: path)
    }
  }

  @Test func isImageFileSniffsMagicBytes() throws {
    let dir = TemporaryDirectory()
    try run(["zint", "-b", "QRCODE", "-o", dir.file("a.png"), "-d", "x"])
    #expect(ImageLoader.isImageFile(path: dir.file("a.png")))
    #expect(ImageLoader.isImageFile(path: try dir.write("b.pgm", bytes("P5 1 1 255 ") + [0])))
    #expect(ImageLoader.isImageFile(path: try dir.write("c.jpg", [0xFF, 0xD8, 0xFF, 0xE0])))
    #expect(ImageLoader.isImageFile(path: try dir.write("d.bin", [0xFF, 0xD8])) == false)
    #expect(ImageLoader.isImageFile(path: dir.path) == false)
  }

  @Test func sniff() {
    #expect(ImageFormat.sniff(ImageFormat.pngSignature) == .png)
    #expect(ImageFormat.sniff([0xFF, 0xD8, 0xFF, 0xDB]) == .jpeg)
    #expect(ImageFormat.sniff(bytes("P6\n")) == .pnm)
    #expect(ImageFormat.sniff(bytes("P2#c")) == .pnm)
    #expect(ImageFormat.sniff(bytes("P7\n")) == nil)
    #expect(ImageFormat.sniff(bytes("PX ")) == nil)
    #expect(ImageFormat.sniff([UInt8]()) == nil)
  }

  // MARK: JPEG (no cjpeg here: libjpeg-turbo-progs is not installed, so CImageIO's encoder makes them)

  @Test func jpegRoundTripDecodesBarcode() throws {
    let dir = TemporaryDirectory()
    let qr = try zint(dir, "qr", "QRCODE", "via JPEG", ["--scale=4"])
    let path = try dir.write("qr.jpg", try qr.jpegData(quality: 90))
    #expect(ImageLoader.isImageFile(path: path))
    let image = try ImageLoader.load(path: path)
    #expect(image.width == qr.width && image.height == qr.height)
    let found = everything.decode(image)
    #expect(found.map(\.format) == [.qrCode])
    #expect(found.map(\.text) == ["via JPEG"])
    #expect(found.map(\.decoders) == [firstReader])
  }

  @Test func badJPEGIsCorrupt() throws {
    let jpeg = try GrayImage(width: 64, height: 64, filledWith: 200).jpegData()
    #expect(throws: ImageError.corrupt("JPEG: Premature end of JPEG file")) {
      try ImageLoader.decode(Array(jpeg.prefix(jpeg.count - 40)))
    }
    // The same truncated data is accepted leniently, as camera MJPEG frames are.
    #expect(try ImageLoader.decodeJPEG(Array(jpeg.prefix(jpeg.count - 40)), strict: false).width == 64)
    var garbage = Array(jpeg.prefix(2)) + [0xFF, 0xC0, 0x00, 0x03]
    garbage += [UInt8](repeating: 0x55, count: 32)
    #expect(throws: ImageError.self) { try ImageLoader.decode(garbage) }
    do {
      _ = try ImageLoader.decode(garbage)
    } catch {
      guard case .corrupt = error else { Issue.record("expected .corrupt, got \(error)"); return }
    }
  }

  // MARK: PNM, parsed in Swift

  @Test func plainAndRawGraymaps() throws {
    let expected: [UInt8] = [0, 128, 255, 64, 32, 16]
    let plain = try ImageLoader.decode(bytes("P2\n# comment\n3 2\n# another\n255\n0 128 255\n64 32 16\n"))
    #expect(plain.width == 3 && plain.height == 2 && plain.pixels == expected)
    let raw = try ImageLoader.decode(bytes("P5 3 2 255\n") + expected)
    #expect(raw.pixels == expected)
  }

  @Test func sixteenBitGraymaps() throws {
    // maxval 65535: two bytes per sample, most significant first; scaled to 0...255 with rounding.
    let raw = try ImageLoader.decode(
      bytes("P5\n2 2\n65535\n") + [0x00, 0x00, 0xFF, 0xFF, 0x80, 0x00, 0x01, 0x01])
    #expect(raw.pixels == [0, 255, 128, 1])
    let plain = try ImageLoader.decode(bytes("P2 2 1 1000 0 1000"))
    #expect(plain.pixels == [0, 255])
    let small = try ImageLoader.decode(bytes("P2 3 1 4 0 2 4"))
    #expect(small.pixels == [0, 128, 255])
  }

  @Test func pixmapsBecomeLuma() throws {
    // BT.601 luma in 10-bit fixed point: red 76, green 150, blue 29.
    let raw = try ImageLoader.decode(bytes("P6 3 1 255\n") + [255, 0, 0, 0, 255, 0, 0, 0, 255])
    #expect(raw.pixels == [76, 150, 29])
    let plain = try ImageLoader.decode(bytes("P3 2 1 255 255 255 255 0 0 0"))
    #expect(plain.pixels == [255, 0])
    let wide = try ImageLoader.decode(bytes("P6 1 1 65535\n") + [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
    #expect(wide.pixels == [255])
  }

  @Test func bitmaps() throws {
    // PBM: 1 is black. Raw rows are padded to whole bytes.
    let plain = try ImageLoader.decode(bytes("P1\n3 2\n1 0 1\n010\n"))
    #expect(plain.pixels == [0, 255, 0, 255, 0, 255])
    let raw = try ImageLoader.decode(bytes("P4 10 1\n") + [0b1010_0000, 0b0100_0000])
    #expect(raw.pixels == [0, 255, 0, 255, 255, 255, 255, 255, 255, 0])
  }

  @Test func pgmAndPpmWrittenByTestDecode() throws {
    let dir = TemporaryDirectory()
    let qr = try zint(dir, "qr", "QRCODE", "netpbm")
    let pgmPath = try dir.write("qr.pgm", pgm(qr))
    #expect(everything.decode(try ImageLoader.load(path: pgmPath)).map(\.text) == ["netpbm"])
    // PPM with the symbol in dark blue on light yellow.
    var ppm = bytes("P6\n\(qr.width) \(qr.height)\n255\n")
    for pixel in qr.pixels { ppm += pixel < 128 ? [0, 0, 160] : [255, 255, 128] }
    let ppmPath = try dir.write("qr.ppm", ppm)
    let found = everything.decode(try ImageLoader.load(path: ppmPath))
    #expect(found.map(\.text) == ["netpbm"])
    #expect(found.map(\.decoders) == [firstReader])
  }

  @Test func malformedPNM() {
    #expect(throws: ImageError.corrupt("PNM raster truncated")) {
      try ImageLoader.decode(bytes("P5 4 4 255\n") + [1, 2, 3])
    }
    #expect(throws: ImageError.corrupt("PNM truncated before maxval")) {
      try ImageLoader.decode(bytes("P5 4 4"))
    }
    #expect(throws: ImageError.corrupt("PNM maxval 0 outside 1...65535")) {
      try ImageLoader.decode(bytes("P2 1 1 0 0"))
    }
    #expect(throws: ImageError.corrupt("PNM maxval 70000 outside 1...65535")) {
      try ImageLoader.decode(bytes("P2 1 1 70000 0"))
    }
    #expect(throws: ImageError.corrupt("PNM sample 9 exceeds maxval 5")) {
      try ImageLoader.decode(bytes("P2 1 1 5 9"))
    }
    #expect(throws: ImageError.corrupt("PNM has zero width or height")) {
      try ImageLoader.decode(bytes("P2 0 1 5 "))
    }
    #expect(throws: ImageError.corrupt("PNM: bad width")) { try ImageLoader.decode(bytes("P2 x 1 5 ")) }
    #expect(throws: ImageError.corrupt("PBM: bad pixel character")) {
      try ImageLoader.decode(bytes("P1 2 1 0 7"))
    }
    #expect(throws: ImageError.unsupportedFormat("image too large: 100000x100000")) {
      try ImageLoader.decode(bytes("P5 100000 100000 255\n"))
    }
  }
}
