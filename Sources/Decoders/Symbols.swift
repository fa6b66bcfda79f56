public enum BarcodeFormat: String, Sendable, CaseIterable, Hashable {
  case aztec, codabar, code39, code93, code128, dataBar, dataBarExpanded, dataBarLimited, dataMatrix, ean8,
    ean13,
    isbn10, isbn13, itf, maxiCode, pdf417, microPDF417, qrCode, microQRCode, upcA, upcE, composite, rmqrCode,
    dxFilmEdge, telepen

  /// Formats at least one decoder can read here. Debian's ZBar 0.23.92 lacks DataMatrix, Aztec and PDF417
  /// (docs/swift-on-linux.md) and does not emit composites; zxing-cpp 3 reads every other format here
  /// (its BarcodeFormat.h lists no composite).
  public static let readable: Set<BarcodeFormat> = Set(allCases).subtracting([.composite])
}

public struct Point: Sendable, Hashable {
  public let x: Int
  public let y: Int

  public init(x: Int, y: Int) {
    self.x = x
    self.y = y
  }
}

public struct DecodedSymbol: Sendable, Hashable {
  public let format: BarcodeFormat
  /// The payload exactly as encoded, without character-set conversion (ECI designators left out, a
  /// Shift_JIS Kanji segment as its Shift_JIS bytes). GS1 data is the element string with FNC1
  /// separators as GS (0x1D), e.g. DataBar "01" + GTIN-14. An EAN/UPC add-on is not part of it: see
  /// `addOn`.
  public let bytes: [UInt8]
  /// The text the symbol encodes, when the decoder knows its character set (ECI segments, Kanji mode,
  /// the symbology's default set) and it differs from reading `bytes` as UTF-8; nil otherwise.
  public let decodedText: String?
  /// The digits of an EAN-2 or EAN-5 add-on (GS1 General Specifications, section 5.2.3.6: the 2- or 5-digit
  /// supplement printed right of an EAN-13, UPC-A or UPC-E symbol, as on books and magazines).
  public let addOn: [UInt8]?
  /// Corner points, clockwise from the symbol's top-left (top-left, top-right, bottom-right, bottom-left) when
  /// a decoder reports corners (zxing-cpp always, ZBar for QR); otherwise the bounding box of ZBar's scan hits.
  public let points: [Point]
  /// Which decoders found it: "zbar", "zxing".
  public let decoders: Set<String>

  public init(
    format: BarcodeFormat, bytes: [UInt8], decodedText: String? = nil, addOn: [UInt8]? = nil,
    points: [Point], decoders: Set<String>
  ) {
    self.format = format
    self.bytes = bytes
    self.decodedText = decodedText
    self.addOn = addOn
    self.points = points
    self.decoders = decoders
  }

  /// The text of the payload: `decodedText` when the decoder converted a character set, otherwise the
  /// bytes as UTF-8, or nil when they are not valid UTF-8 (binary payloads). The add-on is not in it.
  public var text: String? { decodedText ?? String(validating: bytes, as: UTF8.self) }
}

/// The decoding engines BarcodeReader can run.
public enum DecoderEngine: String, Sendable, CaseIterable, Hashable {
  case zbar, zxing
}
