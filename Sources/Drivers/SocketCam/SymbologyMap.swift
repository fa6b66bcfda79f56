import CaptureCore
import Decoders

/// SocketCam's decoders' formats ↔ the SDK's data source ids (docs/capture-sdk.md §6.1).
enum SymbologyMap {
  static let pairs: [(BarcodeFormat, DataSource)] = [
    (.aztec, .aztec), (.codabar, .codabar), (.code39, .code39), (.code93, .code93), (.code128, .code128),
    (.dataBar, .gs1Databar), (.dataBarExpanded, .gs1DatabarExpanded), (.dataBarLimited, .gs1DatabarLimited),
    (.dataMatrix, .dataMatrix), (.ean8, .ean8), (.ean13, .ean13), (.itf, .interleaved2of5),
    (.maxiCode, .maxicode),
    (.pdf417, .pdf417), (.microPDF417, .pdf417Micro), (.qrCode, .qrCode), (.microQRCode, .microQRCode),
    (.upcA, .upcA), (.upcE, .upcE0), (.isbn10, .booklandEan), (.isbn13, .booklandEan),
    (.composite, .eanUccCompositeAB), (.telepen, .telepen),
    // No SDK data source for these: capture's own ids (docs/capture-sdk.md §6.4).
    (.rmqrCode, .rmqrCode), (.dxFilmEdge, .dxFilmEdge),
  ]

  static func dataSource(_ format: BarcodeFormat) -> DataSource {
    pairs.first { $0.0 == format }?.1 ?? .notSpecified
  }

  static func formats(_ source: DataSource) -> [BarcodeFormat] {
    pairs.filter { $0.1 == source }.map(\.0)
  }

  /// Every data source SocketCam can decode, in id order, and the add-on switch (a data source that
  /// names no format: `eanAddOn`).
  static let supported: [DataSource] = {
    var seen = Set<DataSource>()
    return (pairs.map(\.1) + [.eanAddOn]).filter { seen.insert($0).inserted }.sorted {
      $0.rawValue < $1.rawValue
    }
  }()

  /// Enabled unless the user said otherwise. Bookland (ISBN) and composite are off by default: with
  /// Bookland on, a book's EAN-13 would be reported as ISBN instead (the SDK's scanners ship the same way).
  /// EAN-2/EAN-5 add-ons are off by default, as on the scan engines in the SDK's scanners (docs/capture-sdk.md
  /// §6.4 gives the source) and in both decoders' own defaults (zxing-cpp's ReaderOptions eanAddOnSymbol
  /// Ignore; ZBar reports no add-on unless ZBAR_EAN2/ZBAR_EAN5 are enabled).
  static let disabledByDefault: Set<DataSource> = [.booklandEan, .eanUccCompositeAB, .eanAddOn]
}
