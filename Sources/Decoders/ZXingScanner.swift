import CZXing

/// zxing-cpp through the CZXing shim. Stateless: ReadBarcodes keeps nothing between calls, so one value
/// serves any number of threads.
struct ZXingScanner: Sendable {
  let mask: Int32

  /// True when this build of zxing-cpp is one whose assertions fire on ordinary images with linear
  /// codes (before 2.0; czx_abort_trap), so its linear reads run under the shim's SIGABRT trap.
  static let trapsAssertions = czx_abort_trap() != 0

  /// The formats zxing-cpp is not asked for when ZBar is enabled and zxing-cpp asserts: DataBar and
  /// DataBar Expanded. zxing-cpp 1.4.0 fails its assertion on them even in small images, whenever it finds
  /// one in more than one orientation (Debian's ZXingReader dies with SIGABRT on rotated or noisy DataBar
  /// images of bench/corpus.py), and ZBar reads both better. Every other linear format goes to both
  /// decoders: zxing-cpp reads Code 128's FNC4 (ISO-8859-1) characters, which ZBar misreads, and many
  /// photographed codes ZBar misses; its assertion for two identical codes in one image is caught by
  /// the shim's trap (czxing.cpp).
  static let routedToZBar: Set<BarcodeFormat> = [.dataBar, .dataBarExpanded]

  /// zxing-cpp bits for the formats; the EAN/UPC family is enabled as a whole, as in ZBarScanner, and
  /// narrowed by GTIN normalization. zxing-cpp 1.4.0 has no ISBN, DataBar Limited, MicroPDF417 or composite.
  static func mask(for formats: Set<BarcodeFormat>) -> Int32 {
    var mask: Int32 = 0
    if !formats.isDisjoint(with: GTIN.family) {
      mask |= Int32(CZX_FORMAT_EAN13 | CZX_FORMAT_UPCA | CZX_FORMAT_UPCE)
    }
    let direct: [(BarcodeFormat, Int32)] = [
      (.aztec, Int32(CZX_FORMAT_AZTEC)), (.codabar, Int32(CZX_FORMAT_CODABAR)),
      (.code39, Int32(CZX_FORMAT_CODE39)),
      (.code93, Int32(CZX_FORMAT_CODE93)), (.code128, Int32(CZX_FORMAT_CODE128)),
      (.dataBar, Int32(CZX_FORMAT_DATABAR)),
      (.dataBarExpanded, Int32(CZX_FORMAT_DATABAR_EXPANDED)), (.dataMatrix, Int32(CZX_FORMAT_DATAMATRIX)),
      (.ean8, Int32(CZX_FORMAT_EAN8)), (.itf, Int32(CZX_FORMAT_ITF)), (.maxiCode, Int32(CZX_FORMAT_MAXICODE)),
      (.pdf417, Int32(CZX_FORMAT_PDF417)), (.qrCode, Int32(CZX_FORMAT_QRCODE)),
      (.microQRCode, Int32(CZX_FORMAT_MICROQRCODE)),
    ]
    for (format, bit) in direct where formats.contains(format) { mask |= bit }
    return mask
  }

  static func format(of bit: Int32) -> BarcodeFormat? {
    switch Int(bit) {
    case Int(CZX_FORMAT_AZTEC): .aztec
    case Int(CZX_FORMAT_CODABAR): .codabar
    case Int(CZX_FORMAT_CODE39): .code39
    case Int(CZX_FORMAT_CODE93): .code93
    case Int(CZX_FORMAT_CODE128): .code128
    case Int(CZX_FORMAT_DATABAR): .dataBar
    case Int(CZX_FORMAT_DATABAR_EXPANDED): .dataBarExpanded
    case Int(CZX_FORMAT_DATAMATRIX): .dataMatrix
    case Int(CZX_FORMAT_EAN8): .ean8
    case Int(CZX_FORMAT_EAN13): .ean13
    case Int(CZX_FORMAT_ITF): .itf
    case Int(CZX_FORMAT_MAXICODE): .maxiCode
    case Int(CZX_FORMAT_PDF417): .pdf417
    case Int(CZX_FORMAT_QRCODE): .qrCode
    case Int(CZX_FORMAT_UPCA): .upcA
    case Int(CZX_FORMAT_UPCE): .upcE
    case Int(CZX_FORMAT_MICROQRCODE): .microQRCode
    default: nil
    }
  }

  var options: czx_options {
    var options = czx_options()
    czx_options_init(&options)
    // czx_options_init: try harder, rotate and downscale on (ZXingReader's defaults too), all symbols.
    options.formats = mask
    // Keep Codabar's start/stop characters (DecodeHints::setReturnCodabarStartEnd), as ZBar reports them.
    options.codabar_start_end = 1
    return options
  }

  /// Converts the shim's C results (and frees them).
  static func convert(_ results: UnsafeMutablePointer<czx_result>?, _ count: Int) -> [RawSymbol] {
    guard let results, count > 0 else { return [] }
    defer { czx_free_results(results, count) }
    var symbols: [RawSymbol] = []
    symbols.reserveCapacity(count)
    for result in UnsafeBufferPointer(start: results, count: count) {
      guard let format = format(of: result.format) else { continue }
      var bytes =
        result.length > 0 ? Array(UnsafeBufferPointer(start: result.bytes, count: result.length)) : []
      let p = result.position  // Result::position(): top-left, top-right, bottom-right, bottom-left
      let points = [p.0, p.1, p.2, p.3].map { Point(x: Int($0.x), y: Int($0.y)) }
      var text: String? =
        result.text.map {
          String(
            decoding: UnsafeBufferPointer(start: $0, count: result.text_length).map { UInt8(bitPattern: $0) },
            as: UTF8.self)
        }
      var addOn: [UInt8]?
      if GTIN.family.union([.ean8]).contains(format), let read = text, let split = Self.splitAddOn(read) {
        // EanAddOnSymbol::Read gives "main addon" in the text; the main symbol's bytes stay its digits.
        bytes = split.main
        addOn = split.addOn
        text = nil
      }
      // Keep the decoder's text only where it says more than the bytes read as UTF-8 do, and never for a
      // payload zxing-cpp itself calls binary (ContentType::Binary: its character-set guess found no
      // text) or whose ECI it does not know: those stay bytes, shown escaped.
      let content = Int(result.content_type)
      if content == Int(CZX_CONTENT_BINARY) || content == Int(CZX_CONTENT_UNKNOWN_ECI) { text = nil }
      if let decoded = text, decoded.utf8.elementsEqual(bytes) { text = nil }
      symbols.append(
        RawSymbol(
          format: format, bytes: bytes, points: points, engine: .zxing, hasCorners: true, text: text,
          addOn: addOn))
    }
    return symbols
  }

  /// A NUL-terminated message buffer as text.
  static func text(_ message: [CChar]) -> String {
    String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// "9781234567897 12345" → main "9781234567897", add-on "12345"; nil without an add-on.
  static func splitAddOn(_ text: String) -> (main: [UInt8], addOn: [UInt8])? {
    let parts = text.utf8.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: true)
    guard parts.count == 2, [2, 5].contains(parts[1].count), parts.allSatisfy({ $0.allSatisfy(GTIN.isDigit) })
    else { return nil }
    return (Array(parts[0]), Array(parts[1]))
  }

  /// Decodes synchronously on the calling thread. Also returns how many zxing-cpp assertions the shim
  /// caught (see czxing.h).
  func read(_ pixels: UnsafeBufferPointer<UInt8>, width: Int, height: Int) -> (
    symbols: [RawSymbol], aborts: Int, error: String?
  ) {
    guard let base = pixels.baseAddress, width > 0, height > 0 else { return ([], 0, nil) }
    var options = self.options
    var results: UnsafeMutablePointer<czx_result>?
    var count = 0
    var aborts: Int32 = 0
    // Errors (out of memory, a C++ exception, a caught fault) yield no zxing results; ZBar's still count,
    // and the error is reported with them (BarcodeReader.decodeReporting).
    var message = [CChar](repeating: 0, count: 256)
    let rc = czx_read(
      base, Int32(width), Int32(height), Int32(width), &options, &results, &count, &aborts, &message,
      message.count)
    guard rc == Int32(CZX_OK) else { return ([], Int(aborts), Self.text(message)) }
    return (Self.convert(results, count), Int(aborts), nil)
  }
}
