import CZBar
import CZXing
import Synchronization

/// Decodes barcodes with zxing-cpp and ZBar and merges their findings.
///
/// Who is asked what, in this order (bench/README.md, "Speed" gives the measurements behind it):
/// 1. zxing-cpp 3, every format asked for, normal polarity. It reads every format capture reports (on
///    bench/corpus.py its Python package reads 823 of the 1,177 codes, zbarimg 421).
/// 2. Only when zxing-cpp read nothing the caller asked for (or failed): ZBar, for the formats it has
///    (linear codes and QR, where it reads codes zxing-cpp misses: bench/README.md), and, at the same
///    time, zxing-cpp on the inverted image for the formats whose readers support inversion (QR, Micro
///    QR, rMQR, Data Matrix, Aztec: zxing-cpp's MultiFormatReader skips every other reader on an
///    inverted bitmap, so this is its own `tryInvert` pass, asked only when the normal one found
///    nothing). ZBar also scans when add-ons are on and zxing-cpp read an EAN/UPC symbol without one:
///    ZBar may find the add-on.
/// 3. Only when all of that found nothing: ZBar on the inverted image, for light linear codes on a dark
///    ground, which zxing-cpp 3.1 does not invert.
/// ZBar's scan of every row and column costs as much as zxing-cpp's whole search (bench/README.md), and
/// where zxing-cpp has read the image it adds nothing on the bench's corpus but a second reading of
/// the same symbol, which the merge then drops for zxing-cpp's: asking it only for what zxing-cpp left
/// unread is where the time goes down. A code only ZBar can read, in an image where zxing-cpp read
/// another code, is not looked for (the same rule as step 3's inverted search, and zxing-cpp's inverted
/// search in step 2).
///
/// Thread-safe and deterministic: every step depends on the image alone (never on timing, on the
/// concurrency or on earlier images); zxing-cpp is stateless per call, and every scan gets a ZBar
/// scanner of its own, created for it. A ZBar image scanner is not stateless between images: its QR
/// reader draws from a pseudo-random generator (ISAAC, seeded once when the scanner is created) to fit
/// the symbol's grid, and the generator's state carries from one image to the next; a scanner reused
/// across a batch made an image's result depend on which images that scanner had seen before (one QR
/// code in a 934-image batch decoded alone but not in the batch). A fresh scanner costs a few
/// allocations, far less than the scan.
public final class BarcodeReader: Sendable {
  public let formats: Set<BarcodeFormat>
  public let engines: Set<DecoderEngine>
  /// In step 2, run zxing-cpp's inverted search on a second thread while ZBar scans on the calling one
  /// (the two are independent and each is single-threaded, so that step takes about the slower of the
  /// two instead of their sum). Worth it while a core is idle (one image); a batch that already keeps
  /// every core decoding turns it off. The results are the same either way.
  public let concurrentEngines: Bool
  /// Report an EAN-2/EAN-5 add-on printed beside an EAN/UPC symbol (DecodedSymbol.addOn); when false
  /// neither decoder looks for one.
  public let addOns: Bool

  private let zbarSymbologies: [zbar_symbol_type_t]
  private let zxing: ZXingScanner

  public init(
    formats: Set<BarcodeFormat> = Set(BarcodeFormat.allCases), engines: Set<DecoderEngine> = [.zbar, .zxing],
    concurrentEngines: Bool = true, addOns: Bool = true
  ) {
    self.formats = formats
    self.engines = engines
    self.concurrentEngines = concurrentEngines
    self.addOns = addOns
    zbarSymbologies =
      engines.contains(.zbar) ? ZBarScanner.symbologies(for: formats, addOns: addOns) : []
    zxing = ZXingScanner(
      mask: engines.contains(.zxing) ? ZXingScanner.mask(for: formats) : 0, addOns: addOns)
  }

  /// Decodes every symbol in the image. Results are normalized (see Normalizer), limited to `formats`, merged
  /// across decoders (same format and bytes, centres no farther apart than half the larger symbol's size:
  /// one result with the union of decoder names), and put in reading order: rows top to bottom, each row
  /// left to right (see Merger.readingOrder).
  public func decode(_ image: GrayImage) -> [DecodedSymbol] { decodeReporting(image).symbols }

  /// `decode`, and what went wrong in a decoder on the way (zxing-cpp out of memory, a C++ exception):
  /// the symbols are then the other decoder's, and the caller says so.
  public func decodeReporting(_ image: GrayImage) -> (symbols: [DecodedSymbol], problem: String?) {
    guard image.width > 0, image.height > 0 else { return ([], nil) }
    let raw = image.pixels.withUnsafeBufferPointer { pixels in
      scan(pixels, width: image.width, height: image.height)
    }
    return (Merger.merge(normalized(raw.symbols), addOns: raw.addOns), raw.problem)
  }

  /// One step of the search a camera's frame gets, by the frame's number in its stream (`videoStep`).
  public enum VideoStep: Sendable, Hashable {
    case zxing, zbar, zxingInverted, zbarInverted
  }

  /// A camera's frames share the search out between them, one step a frame, in a cycle of
  /// `videoCycle` (16): zxing-cpp on every other frame, ZBar on 6, zxing-cpp's inverted search and ZBar's
  /// inverted scan on 1 each. A code in view is in many frames (30 a second), so it meets every step
  /// within one cycle (about half a second at 30 fps; a dark-on-light QR Code or linear code is read by
  /// 14 steps of the 16, a Data Matrix by 8); the RepeatRule keeps it from being reported again, since
  /// it must be missed by 3 frames of a step that reads it, and for 1 s, to count as gone. What it buys
  /// is the decode period: an empty frame, the common case between codes, took all four steps
  /// (`decode`), about 3.6 times a single ZBar scan at 640×480 (bench/README.md, "Camera latency"), and
  /// a new code waits for the frame being decoded before its own frame is. One step a frame makes that
  /// wait about one scan, as a reader of one engine has; the inverted searches, for the rarer light
  /// codes on a dark ground, get one frame in 16 each so that a normal code's frame seldom lands on a
  /// step that cannot read it.
  public static let videoCycle = 16

  public static func videoStep(_ sequence: Int) -> VideoStep {
    switch sequence & (videoCycle - 1) {
    case 7: .zxingInverted
    case 15: .zbarInverted
    case let slot where slot & 1 == 1: .zbar
    default: .zxing
    }
  }

  /// The symbols of frame `sequence` of a camera's stream, and the step that read it:
  /// `videoStep(sequence)` alone (a step whose engine has none of `formats` is zxing-cpp's, and the step
  /// returned says so), normalized and merged as `decode` does. With add-ons on, ZBar also scans a frame
  /// where zxing-cpp read an EAN/UPC symbol without one, as in `decode`.
  public func decodeFrame(_ image: GrayImage, sequence: Int) -> (symbols: [DecodedSymbol], step: VideoStep) {
    let useZXing = zxing.mask != 0
    let useZBar = !zbarSymbologies.isEmpty
    var step = Self.videoStep(sequence)
    switch step {
    case .zbar where !useZBar, .zbarInverted where !useZBar: step = .zxing
    case .zxingInverted where !useZXing || zxing.invertedMask == 0: step = useZBar ? .zbar : .zxing
    default: break
    }
    guard image.width > 0, image.height > 0 else { return ([], step) }
    let width = image.width
    let height = image.height
    let raw = image.pixels.withUnsafeBufferPointer { pixels -> (symbols: [RawSymbol], addOns: [RawAddOn]) in
      switch step {
      case .zxing:
        guard useZXing else { return ([], []) }
        let read = zxing.read(pixels, width: width, height: height, options: zxing.options)
        guard useZBar && lacksAddOn(normalized(read.symbols)) else { return (read.symbols, []) }
        let zbar = scanZBar(pixels, width: width, height: height)
        return (read.symbols + zbar.symbols, zbar.addOns)
      case .zbar:
        let zbar = scanZBar(pixels, width: width, height: height)
        return (zbar.symbols, zbar.addOns)
      case .zxingInverted:
        let flipped = Self.inverted(pixels)
        let read = flipped.withUnsafeBufferPointer {
          zxing.read($0, width: width, height: height, options: zxing.invertedOptions)
        }
        return (read.symbols, [])
      case .zbarInverted:
        let flipped = Self.inverted(pixels)
        let found = flipped.withUnsafeBufferPointer { scanZBarInverted($0, width: width, height: height) }
        return (found.symbols, found.addOns)
      }
    }
    return (Merger.merge(normalized(raw.symbols), addOns: raw.addOns), step)
  }

  /// Normalized and limited to `formats` (Normalizer), add-ons dropped when they are off.
  private func normalized(_ raw: [RawSymbol]) -> [RawSymbol] {
    var symbols = raw.compactMap { Normalizer.normalize($0, enabled: formats) }
    if !addOns {
      for index in symbols.indices { symbols[index].addOn = nil }
    }
    return symbols
  }

  /// The steps of the type's comment; raw symbols, not yet normalized.
  private func scan(_ pixels: UnsafeBufferPointer<UInt8>, width: Int, height: Int) -> (
    symbols: [RawSymbol], addOns: [RawAddOn], problem: String?
  ) {
    // The shim reads nothing for mask 0 (zxing-cpp itself would take an empty format set as "all").
    let useZXing = zxing.mask != 0
    let useZBar = !zbarSymbologies.isEmpty
    // 1. zxing-cpp.
    var zxingRead: (symbols: [RawSymbol], error: String?) = ([], nil)
    if useZXing { zxingRead = zxing.read(pixels, width: width, height: height, options: zxing.options) }
    // What the caller asked for: a reading normalization drops (a format not enabled) is no reading.
    let zxingFound = normalized(zxingRead.symbols)
    // 2. ZBar, and zxing-cpp's inverted search, where zxing-cpp read nothing.
    let askZBar = useZBar && (zxingFound.isEmpty || lacksAddOn(zxingFound))
    let askInverted = useZXing && zxingFound.isEmpty && zxingRead.error == nil && zxing.invertedMask != 0
    var flipped = askInverted ? Self.inverted(pixels) : []
    var zbar: (symbols: [RawSymbol], addOns: [RawAddOn], error: String?) = ([], [], nil)
    var invertedRead: (symbols: [RawSymbol], error: String?) = ([], nil)
    var scanned = false
    if askZBar && askInverted && concurrentEngines {
      scanned = flipped.withUnsafeBufferPointer { inverse -> Bool in
        var options = zxing.invertedOptions
        // czx_start copies the options; `inverse` stays valid until czx_finish below, as the shim
        // requires.
        guard let base = inverse.baseAddress,
          let job = czx_start(base, Int32(width), Int32(height), Int32(width), &options)
        else { return false }
        zbar = scanZBar(pixels, width: width, height: height)
        var results: UnsafeMutablePointer<czx_result>?
        var count = 0
        var message = [CChar](repeating: 0, count: 256)
        let rc = czx_finish(job, &results, &count, &message, message.count)
        invertedRead =
          rc == Int32(CZX_OK)
          ? (ZXingScanner.convert(results, count), nil) : ([], ZXingScanner.text(message))
        return true
      }
    }
    if !scanned {
      if askZBar { zbar = scanZBar(pixels, width: width, height: height) }
      if askInverted {
        invertedRead = flipped.withUnsafeBufferPointer {
          zxing.read($0, width: width, height: height, options: zxing.invertedOptions)
        }
      }
    }
    var symbols = zxingRead.symbols + zbar.symbols + invertedRead.symbols
    var problem = zxingRead.error ?? invertedRead.error ?? zbar.error
    // 3. Light linear codes on a dark ground, when nothing above found anything: ZBar scans the inverted
    // image (its own ZBAR_CFG_TEST_INVERTED would do so whenever ZBar alone found nothing, also for the
    // many images only zxing-cpp reads; and an inverted GS1 DataBar can read as another DataBar with a
    // valid check digit, seen on bench/corpus.py's inverted copies, so DataBar is kept out of it).
    if useZBar && symbols.isEmpty && zbar.addOns.isEmpty && problem == nil {
      if flipped.isEmpty { flipped = Self.inverted(pixels) }
      let found = flipped.withUnsafeBufferPointer { scanZBarInverted($0, width: width, height: height) }
      symbols = found.symbols
      zbar.addOns = found.addOns
      problem = found.error
    }
    return (symbols, zbar.addOns, problem)
  }

  /// The image with light and dark swapped.
  private static func inverted(_ pixels: UnsafeBufferPointer<UInt8>) -> [UInt8] {
    pixels.map { 255 - $0 }
  }

  private func scanZBar(_ pixels: UnsafeBufferPointer<UInt8>, width: Int, height: Int) -> (
    symbols: [RawSymbol], addOns: [RawAddOn], error: String?
  ) {
    // A scanner of this decode's own (see the type's comment: ZBar's QR reader keeps random state).
    switch ZBarScanner.make(symbologies: zbarSymbologies) {
    case .success(let scanner):
      let found = scanner.scan(pixels, width: width, height: height)
      return (found.symbols, found.addOns, nil)
    case .failure(let failure):
      return ([], [], failure.message)
    }
  }

  /// ZBar on inverted pixels (light linear codes on a dark ground), without the formats whose
  /// inverted image can decode as another valid symbol (`notReadInverted`).
  private func scanZBarInverted(_ flipped: UnsafeBufferPointer<UInt8>, width: Int, height: Int) -> (
    symbols: [RawSymbol], addOns: [RawAddOn], error: String?
  ) {
    var found = scanZBar(flipped, width: width, height: height)
    found.symbols.removeAll { Self.notReadInverted.contains($0.format) }
    return found
  }

  /// Add-ons are asked for and zxing-cpp read an EAN/UPC symbol (normalized) without one: ZBar, which
  /// reports add-ons on their own, may find it.
  private func lacksAddOn(_ found: [RawSymbol]) -> Bool {
    addOns && found.contains { Merger.takesAddOn.contains($0.format) && $0.addOn == nil }
  }

  /// Formats whose inverted image can decode as another valid symbol.
  static let notReadInverted: Set<BarcodeFormat> = [.dataBar, .dataBarExpanded, .dataBarLimited]
}

enum Merger {
  private struct Entry {
    var symbol: RawSymbol
    var engines: Set<DecoderEngine>
  }

  static func merge(_ symbols: [RawSymbol], addOns: [RawAddOn] = []) -> [DecodedSymbol] {
    var entries: [Entry] = []
    for symbol in symbols {
      // The nearest earlier entry with the same format and content, if close enough to be the same symbol.
      var best: (index: Int, distance: Double)?
      for (index, entry) in entries.enumerated() where sameContent(entry.symbol, symbol) {
        guard let distance = sameSymbolDistance(entry.symbol.points, symbol.points) else { continue }
        if best == nil || distance < best!.distance { best = (index, distance) }
      }
      guard let best else {
        // The other decoder read the same place as something else: zxing-cpp's reading stands (it
        // verifies every check character and decodes what ZBar 0.23 gets wrong, e.g. Code 128's FNC4
        // ISO-8859-1 characters, which ZBar turns into other ASCII).
        if let rival = entries.firstIndex(where: { samePlaceOtherReading($0.symbol, symbol) }) {
          if symbol.engine == .zxing { entries[rival] = Entry(symbol: symbol, engines: [.zxing]) }
          continue
        }
        entries.append(Entry(symbol: symbol, engines: [symbol.engine]))
        continue
      }
      entries[best.index].engines.insert(symbol.engine)
      // zxing-cpp's text comes from the symbol's own ECI and segment modes; ZBar's is a guess from the
      // bytes (TextGuess). Same for an add-on zxing-cpp read with the symbol.
      if symbol.engine == .zxing {
        entries[best.index].symbol.bytes = symbol.bytes
        entries[best.index].symbol.text = symbol.text
        if let addOn = symbol.addOn { entries[best.index].symbol.addOn = addOn }
      }
      // Keep real corners over ZBar's scan-hit box, and zxing-cpp's corners over ZBar's (zxing's are always
      // the symbol's own corners, clockwise from its top-left).
      let current = entries[best.index].symbol
      if (symbol.hasCorners && !current.hasCorners)
        || (symbol.hasCorners && symbol.engine == .zxing && current.engine == .zbar)
      {
        entries[best.index].symbol.points = symbol.points
        entries[best.index].symbol.hasCorners = true
        entries[best.index].symbol.engine = symbol.engine
      }
    }
    var merged = entries.map(\.symbol)
    attachAddOns(addOns, to: &merged)
    let decoded = zip(merged, entries).map { symbol, entry in
      DecodedSymbol(
        format: symbol.format, bytes: symbol.bytes, decodedText: symbol.text, addOn: symbol.addOn,
        points: symbol.points, decoders: Set(entry.engines.map(\.rawValue)))
    }
    return readingOrder(decoded)
  }

  /// The same payload, as two decoders report it. Same bytes, or the same text: ZBar converts a QR
  /// code's ECI segments to UTF-8 even in binary mode (observed with 0.23.92: an ECI 3 "Grüße" arrives as
  /// its UTF-8 bytes), where zxing-cpp's bytes stay the ISO-8859-1 ones and its text is the UTF-8.
  static func sameContent(_ a: RawSymbol, _ b: RawSymbol) -> Bool {
    guard a.format == b.format else { return false }
    if a.bytes == b.bytes { return true }
    let textA = a.text ?? String(validating: a.bytes, as: UTF8.self)
    let textB = b.text ?? String(validating: b.bytes, as: UTF8.self)
    return textA != nil && textA == textB
  }

  /// One symbol read differently by the two decoders: same format, the other engine, overlapping outlines
  /// (centres within half the symbol's size), different content.
  static func samePlaceOtherReading(_ a: RawSymbol, _ b: RawSymbol) -> Bool {
    a.format == b.format && a.engine != b.engine && !sameContent(a, b)
      && sameSymbolDistance(a.points, b.points) != nil && !a.points.isEmpty
  }

  /// Formats an EAN-2/EAN-5 add-on can follow (GS1 General Specifications, section 5.2.3.6).
  static let takesAddOn: Set<BarcodeFormat> = GTIN.family.union([.ean8])

  /// Joins each add-on ZBar reported on its own to the EAN/UPC symbol it is printed beside: the nearest
  /// symbol of a format that takes one, without an add-on yet, that the add-on lies next to — beside it
  /// along one axis (right of it upright, left of it upside down, below or above it turned a quarter),
  /// overlapping it along the other — its nearest edge no farther than 0.7 of the symbol's larger side:
  /// the add-on gap is 7 to 12 modules and an EAN-5 47 modules wide, beside a 95-module EAN-13 or UPC-A
  /// (GS1 General Specifications, section 5.2.3.6), and ZBar's box of an add-on may shrink to the line
  /// where its scans ended. An add-on with no such symbol is not reported: it is half of a barcode whose
  /// main part was not read.
  static func attachAddOns(_ addOns: [RawAddOn], to symbols: inout [RawSymbol]) {
    for addOn in addOns {
      guard let box = Box(addOn.points) else { continue }
      var best: (index: Int, gap: Double)?
      for (index, symbol) in symbols.enumerated()
      where takesAddOn.contains(symbol.format) && symbol.addOn == nil {
        guard let main = Box(symbol.points) else { continue }
        let reach = max(main.width, main.height) * 0.7
        let tolerance = max(reach * 0.1, 2)
        let overlapY = min(main.maxY, box.maxY) - max(main.minY, box.minY)
        let overlapX = min(main.maxX, box.maxX) - max(main.minX, box.minX)
        let gapX = max(box.minX - main.maxX, main.minX - box.maxX)
        let gapY = max(box.minY - main.maxY, main.minY - box.maxY)
        var gap: Double?
        if overlapY >= 0, gapX >= -tolerance, gapX <= reach { gap = gapX }
        if overlapX >= 0, gapY >= -tolerance, gapY <= reach { gap = min(gap ?? gapY, gapY) }
        guard let gap else { continue }
        if best == nil || gap < best!.gap { best = (index, gap) }
      }
      if let best { symbols[best.index].addOn = addOn.bytes }
    }
  }

  /// Top to bottom, then left to right. Comparing first points alone would put a symbol whose top edge is a
  /// pixel higher before one further left on the same line, so symbols are grouped into rows first: sorted by
  /// their top edge, a symbol joins the current row when its top lies above the vertical centre of the row's
  /// first symbol. Within a row, left edge decides; format and bytes break ties so equal input gives equal
  /// output.
  static func readingOrder(_ symbols: [DecodedSymbol]) -> [DecodedSymbol] {
    let boxed = symbols.map { (symbol: $0, box: Box($0.points)) }
    let byTop = boxed.sorted { a, b in
      let ta = a.box?.minY ?? .infinity, tb = b.box?.minY ?? .infinity
      return ta != tb ? ta < tb : tieBreak(a.symbol, b.symbol)
    }
    var rows: [[(symbol: DecodedSymbol, box: Box?)]] = []
    var rowCentre = -Double.infinity
    for item in byTop {
      if let box = item.box, !rows.isEmpty, box.minY <= rowCentre {
        rows[rows.count - 1].append(item)
      } else {
        rows.append([item])
        rowCentre = item.box?.centerY ?? .infinity
      }
    }
    return rows.flatMap { row in
      row.sorted { a, b in
        let la = a.box?.minX ?? .infinity, lb = b.box?.minX ?? .infinity
        return la != lb ? la < lb : tieBreak(a.symbol, b.symbol)
      }.map(\.symbol)
    }
  }

  static func tieBreak(_ a: DecodedSymbol, _ b: DecodedSymbol) -> Bool {
    if a.format != b.format { return a.format.rawValue < b.format.rawValue }
    return a.bytes.lexicographicallyPrecedes(b.bytes)
  }

  /// Centre distance if the two outlines can be the same symbol: centres no farther apart than half the
  /// symbol size, the size being the largest side of either bounding box. Two identical codes printed side by
  /// side are at least one symbol width apart and so stay separate.
  static func sameSymbolDistance(_ a: [Point], _ b: [Point]) -> Double? {
    guard let boxA = Box(a), let boxB = Box(b) else { return a.isEmpty && b.isEmpty ? 0 : nil }
    let size = max(boxA.width, boxA.height, boxB.width, boxB.height, 2)
    let dx = boxA.centerX - boxB.centerX
    let dy = boxA.centerY - boxB.centerY
    let distance = (dx * dx + dy * dy).squareRoot()
    return distance <= size / 2 ? distance : nil
  }

  struct Box {
    let minX: Double, minY: Double, maxX: Double, maxY: Double
    init?(_ points: [Point]) {
      guard let first = points.first else { return nil }
      var minX = first.x, maxX = first.x, minY = first.y, maxY = first.y
      for point in points.dropFirst() {
        minX = min(minX, point.x)
        maxX = max(maxX, point.x)
        minY = min(minY, point.y)
        maxY = max(maxY, point.y)
      }
      (self.minX, self.minY, self.maxX, self.maxY) = (Double(minX), Double(minY), Double(maxX), Double(maxY))
    }
    var width: Double { maxX - minX }
    var height: Double { maxY - minY }
    var centerX: Double { (minX + maxX) / 2 }
    var centerY: Double { (minY + maxY) / 2 }
  }
}
