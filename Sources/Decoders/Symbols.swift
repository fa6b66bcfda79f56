public enum BarcodeFormat: String, Sendable, CaseIterable, Hashable {
  case aztec, codabar, code39, code93, code128, dataBar, dataBarExpanded, dataBarLimited, dataMatrix, ean8,
    ean13,
    isbn10, isbn13, itf, maxiCode, pdf417, microPDF417, qrCode, microQRCode, upcA, upcE, composite

  /// Formats at least one decoder can read here. Debian's ZBar 0.23.92 lacks DataMatrix, Aztec and PDF417
  /// (docs/swift-on-linux.md); zxing-cpp 1.4.0 has no DataBar Limited, MicroPDF417 or composite (its
  /// BarcodeFormat enum lists none of them), and Debian's ZBar does not emit composites either.
  public static let readable: Set<BarcodeFormat> = Set(allCases).subtracting([
    .dataBarLimited, .microPDF417, .composite,
  ])
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
  /// The payload exactly as encoded, without character-set conversion. GS1 data is the element string with
  /// FNC1 separators as GS (0x1D), e.g. DataBar "01" + GTIN-14.
  public let bytes: [UInt8]
  /// Corner points, clockwise from the symbol's top-left (top-left, top-right, bottom-right, bottom-left) when
  /// a decoder reports corners (zxing-cpp always, ZBar for QR); otherwise the bounding box of ZBar's scan hits.
  public let points: [Point]
  /// Which decoders found it: "zbar", "zxing".
  public let decoders: Set<String>

  public init(format: BarcodeFormat, bytes: [UInt8], points: [Point], decoders: Set<String>) {
    self.format = format
    self.bytes = bytes
    self.points = points
    self.decoders = decoders
  }

  /// The payload as UTF-8 text, or nil when it is not valid UTF-8 (binary QR payloads).
  public var text: String? { String(validating: bytes, as: UTF8.self) }
}

/// The decoding engines BarcodeReader can run.
public enum DecoderEngine: String, Sendable, CaseIterable, Hashable {
  case zbar, zxing
}
