import Glibc
import TestSupport
import Testing

@testable import Decoders

@Suite struct ReaderTests {
  @Test func blankImageHasNoSymbols() {
    #expect(everything.decode(GrayImage(width: 640, height: 480, filledWith: 255)).isEmpty)
    #expect(everything.decode(GrayImage(width: 0, height: 0, pixels: [])).isEmpty)
  }

  @Test func severalDifferentCodesInOneImageInReadingOrder() throws {
    let dir = TemporaryDirectory()
    let qr = try zint(dir, "qr", "QRCODE", "first row, left")
    let pdf = try zint(dir, "pdf", "PDF417", "first row, right")
    let ean = try zint(dir, "ean", "EANX", "590123412345")
    let code128 = try zint(dir, "c128", "CODE128", "second row, right")
    // Row 1: QR (tall) and PDF417 (its top edge lower than the QR's); row 2: EAN-13 and Code 128.
    let page = vstack([hstack([qr, vstack([pdf], gap: 30)]), hstack([ean, code128])])
    // Through a PGM file written here, so the PNM reader is on the path too.
    let path = try dir.write("page.pgm", pgm(page))
    let found = everything.decode(try ImageLoader.load(path: path))
    #expect(found.map(\.format) == [.qrCode, .pdf417, .ean13, .code128])
    #expect(
      found.map(\.text) == ["first row, left", "first row, right", "5901234123457", "second row, right"])
    // zxing-cpp reads all four; the EAN-13 has no add-on, so ZBar is asked to look for one, and its scan
    // of the page reads the QR and the Code 128 as well (Debian's ZBar has no PDF417).
    #expect(found.map(\.decoders) == [both, firstReader, addOnSearch, both])
    #expect(
      BarcodeReader(addOns: false).decode(page).map(\.decoders) == Array(repeating: firstReader, count: 4))
  }

  @Test func zbarIsNotAskedWhereZXingReadTheImage() throws {
    // ZBar's scan of every row and column costs as much as zxing-cpp's whole search; where zxing-cpp
    // read the image, ZBar's reading of the same symbol would only be merged into zxing-cpp's. Before
    // the steps, both decoders read every image (decoders == both here).
    let dir = TemporaryDirectory()
    let code = try zint(dir, "c128", "CODE128", "C128-04320-Ab/H4")
    let found = everything.decode(code)
    #expect(found.map(\.text) == ["C128-04320-Ab/H4"])
    #expect(found.map(\.decoders) == [zxingOnly])
    // ZBar reads it as well when asked alone: it was not asked.
    #expect(zbarAlone(code).map(\.text) == ["C128-04320-Ab/H4"])
  }

  @Test(.enabled(if: which("convert") != nil, "ImageMagick's convert is not installed"))
  func zbarReadsWhatZXingLeavesUnread() throws {
    // bench/corpus.py's "small" Code 128: 3 px per module shrunk by half with a triangle filter. zxing-cpp
    // 3.1.1 reads nothing in it, ZBar reads it: ZBar is asked because zxing-cpp read nothing.
    let dir = TemporaryDirectory()
    try run([
      "zint", "-b", "CODE128", "--quietzones", "--scale=1.5", "-d", "C128-04320-Ab/H4", "-o",
      dir.file("big.png"),
    ])
    try run([
      try #require(which("convert")), dir.file("big.png"), "-filter", "triangle", "-resize", "50%",
      dir.file("small.png"),
    ])
    let image = try ImageLoader.load(path: dir.file("small.png"))
    try #require(BarcodeReader(engines: [.zxing]).decode(image).isEmpty)
    let found = everything.decode(image)
    #expect(found.map(\.text) == ["C128-04320-Ab/H4"])
    #expect(found.map(\.decoders) == [zbarOnly])
    let sequential = BarcodeReader(concurrentEngines: false).decode(image)
    #expect(sequential == found)
  }

  @Test func dataMatrixNextToALinearCodeIsRead() throws {
    // zxing-cpp 1.4.0 (Debian's ZXingReader too) missed the DataMatrix beside the Code 128; zxing-cpp 3
    // reads both.
    let dir = TemporaryDirectory()
    let matrix = try zint(dir, "dm", "DATAMATRIX", "first row, right", ["--scale=4"])
    let code128 = try zint(dir, "c128", "CODE128", "Code128-Test")
    #expect(everything.decode(matrix).map(\.format) == [.dataMatrix])
    #expect(Set(everything.decode(hstack([matrix, code128])).map(\.format)) == [.dataMatrix, .code128])
  }

  @Test func identicalQRCodesSideBySideStayTwo() throws {
    let dir = TemporaryDirectory()
    let qr = try zint(dir, "qr", "QRCODE", "same payload")
    let found = everything.decode(hstack([qr, qr], gap: 20))
    try #require(found.count == 2)
    #expect(found.map(\.text) == ["same payload", "same payload"])
    #expect(found.map(\.decoders) == [firstReader, firstReader])
    // ZBar alone keeps them two as well.
    #expect(zbarAlone(hstack([qr, qr], gap: 20)).map(\.text) == ["same payload", "same payload"])
    #expect(found[0].points[0].x + qr.width / 2 < found[1].points[0].x)
  }

  @Test func identicalLinearCodesAreBothRead() throws {
    // Two equal linear codes made zxing-cpp 1.4.0 fail an assertion (abort(); zxing-cpp issue #516),
    // which the shim used to trap; zxing-cpp 3, built with NDEBUG, reads them plainly, both twins.
    // ZBar, asked alone, merges equal linear codes into one symbol by itself.
    let dir = TemporaryDirectory()
    let code = try zint(dir, "c128", "CODE128", "TWIN-42")
    let page = hstack([code, code], gap: 60)
    let found = BarcodeReader().decode(page)
    #expect(found.map(\.text) == ["TWIN-42", "TWIN-42"])
    #expect(found.map(\.decoders) == [firstReader, firstReader])
    #expect(Set(zbarAlone(page).map(\.text)) == ["TWIN-42"])
  }

  @Test func largeImageWithLinearCodeIsRead() throws {
    // zxing-cpp 1.4.0 asserted on any linear code found in both full-size and downscaled layers (images
    // >= 500 px both ways); zxing-cpp 3 reads it with downscaling on.
    let dir = TemporaryDirectory()
    let ean = scaled(try zint(dir, "ean", "EANX", "400638133393"), by: 4)
    #expect(ean.width >= 500 && ean.height >= 500)
    let found = BarcodeReader().decode(ean)
    #expect(found.map(\.format) == [.ean13])
    #expect(found.map(\.text) == ["4006381333931"])
    #expect(found.map(\.decoders) == [addOnSearch])
    #expect(zbarAlone(ean).map(\.text) == ["4006381333931"])
  }

  @Test func formatFilterQROnlyIgnoresEAN13() throws {
    let dir = TemporaryDirectory()
    let ean = try zint(dir, "ean", "EANX", "400638133393")
    #expect(BarcodeReader(formats: [.qrCode]).decode(ean).isEmpty)
    let qr = try zint(dir, "qr", "QRCODE", "only QR")
    #expect(BarcodeReader(formats: [.qrCode]).decode(hstack([ean, qr])).map(\.text) == ["only QR"])
  }

  @Test func upcAIsEAN13WithLeadingZeroWhenUPCAIsNotEnabled() throws {
    let dir = TemporaryDirectory()
    let upc = try zint(dir, "upc", "UPCA", "03600029145")
    let asEAN = BarcodeReader(formats: [.ean13]).decode(upc)
    #expect(asEAN.map(\.format) == [.ean13])
    #expect(asEAN.map(\.text) == ["0036000291452"])
    #expect(asEAN.map(\.decoders) == [addOnSearch])
    let asUPC = BarcodeReader(formats: [.upcA]).decode(upc)
    #expect(asUPC.map(\.format) == [.upcA])
    #expect(asUPC.map(\.text) == ["036000291452"])
    // An EAN-13 outside number system 0 is not a UPC-A.
    let ean = try zint(dir, "ean", "EANX", "400638133393")
    #expect(BarcodeReader(formats: [.upcA]).decode(ean).isEmpty)
  }

  @Test func upcEOnlyWhenEnabled() throws {
    let dir = TemporaryDirectory()
    let upcE = try zint(dir, "upce", "UPCE", "0123456")
    #expect(BarcodeReader(formats: [.ean13, .upcA]).decode(upcE).isEmpty)
    #expect(BarcodeReader(formats: [.upcE]).decode(upcE).map(\.text) == ["01234565"])
  }

  @Test func isbnVariants() throws {
    let dir = TemporaryDirectory()
    let book = try zint(dir, "isbn", "ISBNX", "9780306406157")
    #expect(BarcodeReader(formats: [.ean13]).decode(book).map(\.text) == ["9780306406157"])
    #expect(BarcodeReader(formats: [.ean13]).decode(book).map(\.format) == [.ean13])
    let isbn10 = BarcodeReader(formats: [.isbn10]).decode(book)
    #expect(isbn10.map(\.format) == [.isbn10])
    #expect(isbn10.map(\.text) == ["0306406152"])
    #expect(isbn10.map(\.decoders) == [addOnSearch])
    #expect(BarcodeReader(formats: [.isbn13, .isbn10]).decode(book).map(\.format) == [.isbn13])
  }

  @Test func singleEngine() throws {
    let dir = TemporaryDirectory()
    let qr = try zint(dir, "qr", "QRCODE", "engine test")
    let matrix = try zint(dir, "dm", "DATAMATRIX", "zxing only")
    let page = hstack([qr, matrix])
    let zbar = BarcodeReader(engines: [.zbar]).decode(page)
    #expect(zbar.map(\.text) == ["engine test"])
    #expect(zbar.map(\.decoders) == [["zbar"]])
    let zxing = BarcodeReader(engines: [.zxing]).decode(page)
    #expect(zxing.map(\.text) == ["engine test", "zxing only"])
    #expect(zxing.map(\.decoders) == [zxingOnly, zxingOnly])
    let sequential = BarcodeReader(concurrentEngines: false).decode(page)
    #expect(sequential == everything.decode(page))
  }

  @Test func concurrentDecodesShareOneReader() async throws {
    let dir = TemporaryDirectory()
    let image = hstack([
      try zint(dir, "qr", "QRCODE", "concurrent"), try zint(dir, "ean", "EANX", "400638133393"),
    ])
    let reader = BarcodeReader()
    let expected = reader.decode(image)
    #expect(expected.count == 2)
    let results = await withTaskGroup(of: [DecodedSymbol].self) { group in
      for _ in 0..<8 { group.addTask { reader.decode(image) } }
      var all: [[DecodedSymbol]] = []
      for await result in group { all.append(result) }
      return all
    }
    #expect(results.count == 8)
    #expect(results.allSatisfy { $0 == expected })
  }

  @Test func rotatedQRCornersAreClockwiseFromSymbolTopLeft() throws {
    let dir = TemporaryDirectory()
    let qr = try zint(dir, "qr", "QRCODE", "rotated")
    // Rotate by 90° clockwise: the symbol's top-left corner ends up at the image's top-right.
    var pixels = [UInt8](repeating: 255, count: qr.width * qr.height)
    for y in 0..<qr.height {
      for x in 0..<qr.width { pixels[x * qr.height + (qr.height - 1 - y)] = qr.pixels[y * qr.width + x] }
    }
    let rotated = GrayImage(width: qr.height, height: qr.width, pixels: pixels)
    for engine in [DecoderEngine.zbar, .zxing] {
      let found = BarcodeReader(engines: [engine]).decode(rotated)
      try #require(found.count == 1)
      let p = found[0].points
      try #require(p.count == 4)
      // Top-left of the symbol is now top-right in the image, and the order runs clockwise on screen.
      #expect(p[0].x > rotated.width / 2 && p[0].y < rotated.height / 2, "\(engine): \(p)")
      #expect(p[1].x > rotated.width / 2 && p[1].y > rotated.height / 2, "\(engine): \(p)")
      #expect(p[2].x < rotated.width / 2 && p[2].y > rotated.height / 2, "\(engine): \(p)")
      #expect(p[3].x < rotated.width / 2 && p[3].y < rotated.height / 2, "\(engine): \(p)")
    }
  }
}
