import CZBar
import CZXing

/// A decoding library that cannot be used, in words for `capture doctor` and a decode's problem.
public struct DecoderLibraryError: Error, Sendable {
  public let message: String
}

/// The decoding libraries' versions, as `capture doctor` reports them.
public enum DecoderLibraries {
  /// ZBar's version at run time (zbar.h zbar_version: the library actually loaded), "0.23.92"; why it
  /// cannot be loaded when it cannot (libzbar is loaded on demand, so this is where `capture doctor`
  /// finds out).
  public static var zbarVersion: Result<String, DecoderLibraryError> {
    if let failure = ZBarScanner.loadFailure() { return .failure(failure) }
    var major: UInt32 = 0
    var minor: UInt32 = 0
    var patch: UInt32 = 0
    _ = zbar_version(&major, &minor, &patch)
    return .success("\(major).\(minor).\(patch)")
  }

  /// zxing-cpp's version this build was compiled against and links statically (ZXing/Version.h: the
  /// library has no run-time version call), "3.1.1".
  public static var zxingVersion: String {
    var major: Int32 = 0
    var minor: Int32 = 0
    var patch: Int32 = 0
    czx_version(&major, &minor, &patch)
    return "\(major).\(minor).\(patch)"
  }
}
