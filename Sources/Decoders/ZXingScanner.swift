import CZXing

/// zxing-cpp through the CZXing shim. Stateless: ReadBarcodes keeps nothing between calls, so one value
/// serves any number of threads.
struct ZXingScanner: Sendable {
  let mask: Int32
  /// Read an EAN-2/EAN-5 add-on beside EAN/UPC symbols (ReaderOptions::eanAddOnSymbol Read, else Ignore).
  var addOns = true

  /// The shim's bit for each format it reads (czxing.h; czxing.cpp maps them to zxing-cpp's formats and
  /// variants). The EAN/UPC family is enabled as a whole, as in ZBarScanner, and narrowed by GTIN
  /// normalization. zxing-cpp 3 reads no composite (its BarcodeFormat list has none).
  static let bits: [(BarcodeFormat, Int32)] = [
    (.aztec, Int32(CZX_FORMAT_AZTEC)), (.codabar, Int32(CZX_FORMAT_CODABAR)),
    (.code39, Int32(CZX_FORMAT_CODE39)), (.code93, Int32(CZX_FORMAT_CODE93)),
    (.code128, Int32(CZX_FORMAT_CODE128)), (.dataBar, Int32(CZX_FORMAT_DATABAR)),
    (.dataBarExpanded, Int32(CZX_FORMAT_DATABAR_EXPANDED)),
    (.dataBarLimited, Int32(CZX_FORMAT_DATABAR_LIMITED)),
    (.dataMatrix, Int32(CZX_FORMAT_DATAMATRIX)), (.ean8, Int32(CZX_FORMAT_EAN8)),
    (.ean13, Int32(CZX_FORMAT_EAN13)), (.upcA, Int32(CZX_FORMAT_UPCA)), (.upcE, Int32(CZX_FORMAT_UPCE)),
    (.itf, Int32(CZX_FORMAT_ITF)), (.maxiCode, Int32(CZX_FORMAT_MAXICODE)),
    (.pdf417, Int32(CZX_FORMAT_PDF417)),
    (.microPDF417, Int32(CZX_FORMAT_MICROPDF417)), (.qrCode, Int32(CZX_FORMAT_QRCODE)),
    (.microQRCode, Int32(CZX_FORMAT_MICROQRCODE)), (.rmqrCode, Int32(CZX_FORMAT_RMQRCODE)),
    (.dxFilmEdge, Int32(CZX_FORMAT_DXFILMEDGE)), (.telepen, Int32(CZX_FORMAT_TELEPEN)),
  ]

  static func mask(for formats: Set<BarcodeFormat>) -> Int32 {
    var mask: Int32 = 0
    if !formats.isDisjoint(with: GTIN.family) {
      mask |= Int32(CZX_FORMAT_EAN13 | CZX_FORMAT_UPCA | CZX_FORMAT_UPCE)
    }
    for (format, bit) in bits where formats.contains(format) { mask |= bit }
    return mask
  }

  static func format(of bit: Int32) -> BarcodeFormat? {
    bits.first { $0.1 == bit }?.0
  }

  /// The formats zxing-cpp searches inverted (light on dark): the ones whose readers declare
  /// `supportsInversion` (zxing-cpp 3.1.1 MultiFormatReader.cpp: the QR reader, which also reads Micro
  /// QR and rMQR, Data Matrix and Aztec; MultiFormatReader::read skips every other reader on an
  /// inverted bitmap, so asking those on inverted pixels would be new work, not zxing-cpp's own search).
  static let invertible = Int32(
    CZX_FORMAT_QRCODE | CZX_FORMAT_MICROQRCODE | CZX_FORMAT_RMQRCODE | CZX_FORMAT_DATAMATRIX
      | CZX_FORMAT_AZTEC)

  var invertedMask: Int32 { mask & Self.invertible }

  /// The normal search: every format asked for, normal polarity. czx_options_init: try harder, rotate
  /// and downscale on (ReaderOptions' defaults, and the Python package's). zxing-cpp 3 always keeps
  /// Codabar's start/stop characters, as ZBar. `tryInvert` is off here: BarcodeReader asks for the
  /// inverted search (`invertedOptions`, on inverted pixels) only when this one found nothing.
  var options: czx_options {
    var options = czx_options()
    czx_options_init(&options)
    options.formats = mask
    options.try_invert = 0
    options.ean_add_on = addOns ? 1 : 0
    return options
  }

  /// zxing-cpp's `tryInvert` search on its own, for pixels the caller has inverted: what ReadBarcodes
  /// does with tryInvert after its normal pass (ReadBarcode.cpp: the same pyramid layers, the
  /// binarized bitmap inverted, only the readers that support inversion).
  var invertedOptions: czx_options {
    var options = self.options
    options.formats = invertedMask
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
      let bytes =
        result.length > 0 ? Array(UnsafeBufferPointer(start: result.bytes, count: result.length)) : []
      let p = result.position  // Result::position(): top-left, top-right, bottom-right, bottom-left
      let points = [p.0, p.1, p.2, p.3].map { Point(x: Int($0.x), y: Int($0.y)) }
      var text: String? =
        result.text.map {
          String(
            decoding: UnsafeBufferPointer(start: $0, count: result.text_length).map { UInt8(bitPattern: $0) },
            as: UTF8.self)
        }
      // The shim took an add-on off the content (czxing.cpp: BarcodeExtra::EanAddOn).
      let addOnDigits = withUnsafeBytes(of: result.add_on) { raw in Array(raw.prefix { $0 != 0 }) }
      let addOn: [UInt8]? = addOnDigits.isEmpty ? nil : addOnDigits
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

  /// Decodes synchronously on the calling thread.
  func read(_ pixels: UnsafeBufferPointer<UInt8>, width: Int, height: Int, options: czx_options) -> (
    symbols: [RawSymbol], error: String?
  ) {
    guard let base = pixels.baseAddress, width > 0, height > 0, options.formats != 0 else { return ([], nil) }
    var options = options
    var results: UnsafeMutablePointer<czx_result>?
    var count = 0
    // Errors (out of memory, a C++ exception) yield no zxing results; ZBar's still count, and the error is
    // reported with them (BarcodeReader.decodeReporting).
    var message = [CChar](repeating: 0, count: 256)
    let rc = czx_read(
      base, Int32(width), Int32(height), Int32(width), &options, &results, &count, &message, message.count)
    guard rc == Int32(CZX_OK) else { return ([], Self.text(message)) }
    return (Self.convert(results, count), nil)
  }
}
