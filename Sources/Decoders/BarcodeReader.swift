import CZBar
import CZXing
import Synchronization

/// Decodes barcodes with ZBar and zxing-cpp and merges their findings.
///
/// Thread-safe: zxing-cpp is stateless per call, and ZBar scanners (configured once, reused) are lent from a
/// small pool behind a `Mutex` so concurrent `decode` calls never share one.
public final class BarcodeReader: Sendable {
  public let formats: Set<BarcodeFormat>
  public let engines: Set<DecoderEngine>
  /// Run zxing-cpp on a second thread while ZBar scans on the calling one (the two are independent and
  /// each is single-threaded, so wall time is about the slower of the two instead of their sum).
  public let concurrentEngines: Bool

  private let zbarSymbologies: [zbar_symbol_type_t]
  private let zxing: ZXingScanner
  private let shared: Mutex<Shared>

  private struct Shared {
    /// Idle scanners; a decode takes one out and puts it back.
    var pool: [ZBarScanner] = []
    var aborts = 0
  }

  public init(
    formats: Set<BarcodeFormat> = Set(BarcodeFormat.allCases), engines: Set<DecoderEngine> = [.zbar, .zxing],
    concurrentEngines: Bool = true
  ) {
    self.formats = formats
    self.engines = engines
    self.concurrentEngines = concurrentEngines
    zbarSymbologies = engines.contains(.zbar) ? ZBarScanner.symbologies(for: formats) : []
    // With an asserting zxing-cpp (ZXingScanner.trapsAssertions) the linear formats go to ZBar alone when
    // it is enabled, so zxing-cpp reads matrix codes only and its SIGABRT trap never runs.
    var zxingFormats = formats
    if ZXingScanner.trapsAssertions && engines.contains(.zbar) {
      zxingFormats.subtract(ZXingScanner.routedToZBar)
    }
    zxing = ZXingScanner(mask: engines.contains(.zxing) ? ZXingScanner.mask(for: zxingFormats) : 0)
    var first = Shared()
    // Create the first scanner now so the first decode does not pay for it.
    if !zbarSymbologies.isEmpty, let scanner = ZBarScanner(symbologies: zbarSymbologies) {
      first.pool.append(scanner)
    }
    shared = Mutex(first)
  }

  /// How many failed zxing-cpp assertions were caught and survived so far (Debian's zxing-cpp 1.4.0 asserts
  /// on ordinary images; czxing.h). Each printed an "Assertion … failed" line to stderr.
  public var zxingAssertionsCaught: Int { shared.withLock { $0.aborts } }

  /// Decodes every symbol in the image. Results are normalized (see Normalizer), limited to `formats`, merged
  /// across decoders (same format and bytes, centres no farther apart than half the larger symbol's size:
  /// one result with the union of decoder names), and put in reading order: rows top to bottom, each row
  /// left to right (see Merger.readingOrder).
  public func decode(_ image: GrayImage) -> [DecodedSymbol] {
    guard image.width > 0, image.height > 0 else { return [] }
    let raw = image.pixels.withUnsafeBufferPointer { pixels in
      scanBoth(pixels, width: image.width, height: image.height)
    }
    let normalized = raw.compactMap { Normalizer.normalize($0, enabled: formats) }
    return Merger.merge(normalized)
  }

  private func scanBoth(_ pixels: UnsafeBufferPointer<UInt8>, width: Int, height: Int) -> [RawSymbol] {
    // zxing-cpp treats an empty format set as "all formats" (DecodeHints::hasFormat), so mask 0 means skip.
    let useZXing = zxing.mask != 0
    let useZBar = !zbarSymbologies.isEmpty
    if useZXing && useZBar && concurrentEngines, let base = pixels.baseAddress {
      var options = zxing.options
      // czx_start copies the options; `pixels` stays valid until czx_finish below, as the shim requires.
      if let job = czx_start(base, Int32(width), Int32(height), Int32(width), &options) {
        let fromZBar = scanZBar(pixels, width: width, height: height)
        var results: UnsafeMutablePointer<czx_result>?
        var count = 0
        var aborts: Int32 = 0
        let rc = czx_finish(job, &results, &count, &aborts, nil, 0)
        let fromZXing = rc == Int32(CZX_OK) ? ZXingScanner.convert(results, count) : []
        countAborts(Int(aborts))
        return fromZBar + fromZXing
      }
    }
    var symbols: [RawSymbol] = []
    if useZBar { symbols += scanZBar(pixels, width: width, height: height) }
    if useZXing {
      let found = zxing.read(pixels, width: width, height: height)
      countAborts(found.aborts)
      symbols += found.symbols
    }
    return symbols
  }

  private func countAborts(_ count: Int) {
    guard count > 0 else { return }
    shared.withLock { $0.aborts += count }
  }

  private func scanZBar(_ pixels: UnsafeBufferPointer<UInt8>, width: Int, height: Int) -> [RawSymbol] {
    guard let scanner = borrowScanner() else { return [] }
    defer { returnScanner(scanner) }
    return scanner.scan(pixels, width: width, height: height)
  }

  private func borrowScanner() -> ZBarScanner? {
    let scanner = shared.withLock { $0.pool.popLast() }
    // Pool empty: another thread is scanning. A second scanner beats waiting for it.
    return scanner ?? ZBarScanner(symbologies: zbarSymbologies)
  }

  private func returnScanner(_ scanner: ZBarScanner) {
    shared.withLock { $0.pool.append(scanner) }
  }
}

enum Merger {
  private struct Entry {
    var symbol: RawSymbol
    var engines: Set<DecoderEngine>
  }

  static func merge(_ symbols: [RawSymbol]) -> [DecodedSymbol] {
    var entries: [Entry] = []
    for symbol in symbols {
      // The nearest earlier entry with the same format and bytes, if close enough to be the same symbol.
      var best: (index: Int, distance: Double)?
      for (index, entry) in entries.enumerated()
      where entry.symbol.format == symbol.format && entry.symbol.bytes == symbol.bytes {
        guard let distance = sameSymbolDistance(entry.symbol.points, symbol.points) else { continue }
        if best == nil || distance < best!.distance { best = (index, distance) }
      }
      guard let best else {
        entries.append(Entry(symbol: symbol, engines: [symbol.engine]))
        continue
      }
      entries[best.index].engines.insert(symbol.engine)
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
    let decoded = entries.map {
      DecodedSymbol(
        format: $0.symbol.format, bytes: $0.symbol.bytes, points: $0.symbol.points,
        decoders: Set($0.engines.map(\.rawValue)))
    }
    return readingOrder(decoded)
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
