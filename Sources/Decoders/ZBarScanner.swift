import CLazyLibraries
import CZBar

/// A symbol as one decoder reported it, before normalization and merging.
struct RawSymbol {
  var format: BarcodeFormat
  var bytes: [UInt8]
  var points: [Point]
  var engine: DecoderEngine
  /// True when `points` are the symbol's corners rather than a bounding box of scan hits.
  var hasCorners: Bool
  /// The decoder's text of the payload when it converted a character set (ECI, Kanji, a default set);
  /// nil when the bytes read as UTF-8 are the text.
  var text: String? = nil
  /// An EAN-2/EAN-5 add-on the decoder read together with the symbol (zxing-cpp does).
  var addOn: [UInt8]? = nil
}

/// An EAN-2 or EAN-5 add-on ZBar reported on its own (it reports add-ons as separate symbols, zbar.h
/// ZBAR_EAN2/ZBAR_EAN5), to be joined to the EAN/UPC symbol it is printed beside (Merger.attachAddOns).
struct RawAddOn {
  var bytes: [UInt8]
  var points: [Point]
}

/// One ZBar image scanner (zbar.h "mid-level image scanner interface"), configured once. Not thread-safe:
/// ZBar keeps per-scan state in the scanner, so BarcodeReader lends each instance to one caller at a time.
/// `@unchecked Sendable` only so that lending compiles: an instance moves between threads through
/// BarcodeReader's Mutex-guarded pool, taken out before a scan and put back after it, and the compiler
/// cannot follow that hand-over (Mutex.withLock's body is not `sending`). Never share one.
final class ZBarScanner: @unchecked Sendable {
  private let scanner: OpaquePointer

  /// ZBar's symbology for each format we enable in it. The EAN/UPC family is always enabled as a whole
  /// (EAN-13, UPC-A, UPC-E) and sorted out by GTIN normalization: with UPC-E disabled ZBar still reads UPC-E
  /// symbols but reports them expanded to EAN-13, and with UPC-A disabled it reports UPC-A as EAN-13
  /// (observed with zbarimg 0.23.92 -S options), which would make results depend on ZBar's config rather
  /// than on ours. ISBN-10/13 are derived from EAN-13 in Swift, for both decoders alike.
  static func symbologies(for formats: Set<BarcodeFormat>, addOns: Bool = true) -> [zbar_symbol_type_t] {
    var types: [zbar_symbol_type_t] = []
    if !formats.isDisjoint(with: GTIN.family) { types += [ZBAR_EAN13, ZBAR_UPCA, ZBAR_UPCE] }
    // Add-ons only ever follow EAN-13, UPC-A, UPC-E or EAN-8; ZBar reads them as symbols of their own.
    // Not looked for when add-ons are off (BarcodeReader.addOns).
    if addOns && !formats.isDisjoint(with: GTIN.family.union([.ean8])) { types += [ZBAR_EAN2, ZBAR_EAN5] }
    let direct: [(BarcodeFormat, zbar_symbol_type_t)] = [
      (.ean8, ZBAR_EAN8), (.itf, ZBAR_I25), (.dataBar, ZBAR_DATABAR), (.dataBarExpanded, ZBAR_DATABAR_EXP),
      (.codabar, ZBAR_CODABAR), (.code39, ZBAR_CODE39), (.code93, ZBAR_CODE93), (.code128, ZBAR_CODE128),
      (.qrCode, ZBAR_QRCODE), (.pdf417, ZBAR_PDF417), (.composite, ZBAR_COMPOSITE),
    ]
    for (format, type) in direct where formats.contains(format) { types.append(type) }
    return types
  }

  static func format(of type: zbar_symbol_type_t) -> BarcodeFormat? {
    // zbar_symbol_get_type may carry add-on flags above ZBAR_SYMBOL (zbar.h "mask for base symbol type").
    switch zbar_symbol_type_t(type.rawValue & ZBAR_SYMBOL.rawValue) {
    case ZBAR_EAN8: .ean8
    case ZBAR_UPCE: .upcE
    case ZBAR_ISBN10: .isbn10
    case ZBAR_UPCA: .upcA
    case ZBAR_EAN13: .ean13
    case ZBAR_ISBN13: .isbn13
    case ZBAR_COMPOSITE: .composite
    case ZBAR_I25: .itf
    case ZBAR_DATABAR: .dataBar
    case ZBAR_DATABAR_EXP: .dataBarExpanded
    case ZBAR_CODABAR: .codabar
    case ZBAR_CODE39: .code39
    case ZBAR_PDF417: .pdf417
    case ZBAR_QRCODE: .qrCode
    case ZBAR_CODE93: .code93
    case ZBAR_CODE128: .code128
    default: nil  // SQ code, EAN-2/5 add-ons: no BarcodeFormat
    }
  }

  /// "Y800": 8-bit gray, the format zbar_scan_image requires (zbar.h: 'The image format must be "Y800" or
  /// "GRAY"'). zbar_fourcc is a macro Swift cannot import; this is its little-endian packing.
  static let y800: UInt = {
    let bytes: [UInt8] = Array("Y800".utf8)
    var fourcc: UInt = 0
    for (index, byte) in bytes.enumerated() { fourcc |= UInt(byte) << (8 * index) }
    return fourcc
  }()

  /// A scanner, after loading libzbar if this is the process's first ZBar scan (it is loaded on demand:
  /// an image zxing-cpp reads never maps it; docs/architecture.md, "Libraries loaded on demand").
  static func make(symbologies: [zbar_symbol_type_t]) -> Result<ZBarScanner, DecoderLibraryError> {
    if let failure = loadFailure() { return .failure(failure) }
    guard let scanner = ZBarScanner(symbologies: symbologies) else {
      return .failure(
        DecoderLibraryError(message: "ZBar cannot make a scanner (zbar_image_scanner_create failed)"))
    }
    return .success(scanner)
  }

  /// nil once libzbar is loaded; else why it cannot be ("ZBar cannot be loaded: libzbar.so.0: cannot
  /// open shared object file: …").
  static func loadFailure() -> DecoderLibraryError? {
    guard cll_load(CLL_ZBAR) != 0 else { return nil }
    return DecoderLibraryError(message: "ZBar cannot be loaded: \(String(cString: cll_error()))")
  }

  private init?(symbologies: [zbar_symbol_type_t]) {
    guard let scanner = zbar_image_scanner_create() else { return nil }
    self.scanner = scanner
    // 0.23 can publish every decode on D-Bus; a library user must not talk to the system bus (zbarimg
    // prints "Connection Error" when there is none). Returns an error if built without D-Bus: ignored.
    _ = zbar_image_scanner_request_dbus(scanner, 0)
    // zbar.h: "set config for indicated symbology (0 for all)": start from nothing, enable what is asked.
    _ = zbar_image_scanner_set_config(scanner, zbar_symbol_type_t(0), ZBAR_CFG_ENABLE, 0)
    for type in symbologies { _ = zbar_image_scanner_set_config(scanner, type, ZBAR_CFG_ENABLE, 1) }
    // ZBAR_CFG_BINARY: "don't convert binary data to text". Without it ZBar guesses the QR text encoding and
    // converts to UTF-8, which changes binary payloads; with it the bytes arrive as encoded.
    if symbologies.contains(ZBAR_QRCODE) {
      _ = zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_BINARY, 1)
    }
    // Scan positions feed `points`; ZBAR_CFG_POSITION is on by default, set explicitly because we rely on it.
    _ = zbar_image_scanner_set_config(scanner, zbar_symbol_type_t(0), ZBAR_CFG_POSITION, 1)
  }

  deinit { zbar_image_scanner_destroy(scanner) }

  /// Scans gray pixels borrowed for the duration of the call (no copy: zbar_image_set_data with a NULL
  /// cleanup handler only references the buffer, and "application image data will not be modified").
  func scan(_ pixels: UnsafeBufferPointer<UInt8>, width: Int, height: Int) -> (
    symbols: [RawSymbol], addOns: [RawAddOn]
  ) {
    guard let base = pixels.baseAddress, width > 0, height > 0, let image = zbar_image_create() else {
      return ([], [])
    }
    defer { zbar_image_destroy(image) }
    zbar_image_set_format(image, Self.y800)
    zbar_image_set_size(image, UInt32(width), UInt32(height))
    zbar_image_set_data(image, base, UInt(width * height), nil)
    guard zbar_scan_image(scanner, image) > 0 else { return ([], []) }
    var symbols: [RawSymbol] = []
    var addOns: [RawAddOn] = []
    var next = zbar_image_first_symbol(image)
    while let symbol = next {
      next = zbar_symbol_next(symbol)
      let type = zbar_symbol_type_t(zbar_symbol_get_type(symbol).rawValue & ZBAR_SYMBOL.rawValue)
      let isAddOn = type == ZBAR_EAN2 || type == ZBAR_EAN5
      guard let format = Self.format(of: type) ?? (isAddOn ? .ean13 : nil) else { continue }
      // zbar_symbol_get_data is NUL-terminated text, but with the length the bytes are binary-safe.
      let length = Int(zbar_symbol_get_data_length(symbol))
      var bytes: [UInt8] = []
      if length > 0, let data = zbar_symbol_get_data(symbol) {
        bytes = data.withMemoryRebound(to: UInt8.self, capacity: length) {
          Array(UnsafeBufferPointer(start: $0, count: length))
        }
      }
      let corners = Self.corners(Self.hits(symbol), format: format)
      if type == ZBAR_COMPOSITE, let parts = Self.mainAndAddOn(symbol) {
        // With ZBAR_COMPOSITE enabled ZBar joins an EAN/UPC symbol and its add-on into one composite
        // whose components are the two (zbar.h: "add-on components use ZBAR_EAN2 or ZBAR_EAN5"); that
        // is an add-on, not a GS1 composite, so it is reported as the main symbol with its add-on.
        // The composite itself may have no location; its main component has the scan hits.
        let main = Self.corners(Self.hits(parts.symbol), format: parts.format)
        symbols.append(
          RawSymbol(
            format: parts.format, bytes: parts.main, points: main.points, engine: .zbar,
            hasCorners: main.exact, addOn: parts.addOn))
        continue
      }
      if isAddOn {
        addOns.append(RawAddOn(bytes: bytes, points: corners.points))
        continue
      }
      // With ZBAR_CFG_BINARY ZBar hands over a QR code's bytes unconverted and keeps no ECI; the text is
      // guessed from the bytes as zxing-cpp does for a symbol without ECI (TextGuess).
      let text = format == .qrCode ? TextGuess.text(of: bytes) : nil
      symbols.append(
        RawSymbol(
          format: format, bytes: bytes, points: corners.points, engine: .zbar, hasCorners: corners.exact,
          text: text))
    }
    return (symbols, addOns)
  }

  /// The main symbol and add-on of a composite that is an EAN/UPC symbol with an EAN-2/EAN-5 add-on.
  static func mainAndAddOn(_ composite: OpaquePointer) -> (
    format: BarcodeFormat, main: [UInt8], addOn: [UInt8], symbol: OpaquePointer
  )? {
    guard let components = zbar_symbol_get_components(composite) else { return nil }
    var main: (BarcodeFormat, [UInt8], OpaquePointer)?
    var addOn: [UInt8]?
    var next = zbar_symbol_set_first_symbol(components)
    while let part = next {
      next = zbar_symbol_next(part)
      let type = zbar_symbol_type_t(zbar_symbol_get_type(part).rawValue & ZBAR_SYMBOL.rawValue)
      let data = Self.data(part)
      if type == ZBAR_EAN2 || type == ZBAR_EAN5 {
        addOn = data
      } else if let format = Self.format(of: type), GTIN.family.union([.ean8]).contains(format) {
        main = (format, data, part)
      } else {
        return nil
      }
    }
    guard let main, let addOn else { return nil }
    return (main.0, main.1, addOn, main.2)
  }

  /// The scan locations ZBar recorded for a symbol.
  static func hits(_ symbol: OpaquePointer) -> [Point] {
    let count = zbar_symbol_get_loc_size(symbol)
    return (0..<count).map {
      Point(x: Int(zbar_symbol_get_loc_x(symbol, $0)), y: Int(zbar_symbol_get_loc_y(symbol, $0)))
    }
  }

  static func data(_ symbol: OpaquePointer) -> [UInt8] {
    let length = Int(zbar_symbol_get_data_length(symbol))
    guard length > 0, let data = zbar_symbol_get_data(symbol) else { return [] }
    return data.withMemoryRebound(to: UInt8.self, capacity: length) {
      Array(UnsafeBufferPointer(start: $0, count: length))
    }
  }

  /// zbar.h: the location polygon "is currently not a polygon, but the scan locations where the symbol was
  /// decoded" — except for QR, where ZBar's QR reader stores the four corners of the symbol. Linear symbols
  /// get the bounding box of their scan hits.
  static func corners(_ hits: [Point], format: BarcodeFormat) -> (points: [Point], exact: Bool) {
    guard !hits.isEmpty else { return ([], false) }
    if format == .qrCode && hits.count == 4 {
      // ZBar lists QR corners counter-clockwise in image coordinates (top-left, bottom-left,
      // bottom-right, top-right of the symbol; checked on generated, rotated codes). Reverse the turn so
      // they match zxing-cpp's clockwise order from the top-left.
      return ([hits[0], hits[3], hits[2], hits[1]], true)
    }
    let xs = hits.map(\.x)
    let ys = hits.map(\.y)
    let minX = xs.min()!, maxX = xs.max()!, minY = ys.min()!, maxY = ys.max()!
    return (
      [Point(x: minX, y: minY), Point(x: maxX, y: minY), Point(x: maxX, y: maxY), Point(x: minX, y: maxY)],
      false
    )
  }
}
