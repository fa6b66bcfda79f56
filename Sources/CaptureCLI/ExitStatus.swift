import CaptureContract
import CaptureCore

/// The exit-status rule itself is CaptureContract's (`ExitStatus.of`); the command line adds the table
/// of the codes it produces, for --help and the man page.
extension ExitStatus {
  /// The codes the command line itself produces, for the table in --help and the man page.
  static let documented: [ResultCode] = [
    .noError, .notSupported, .notFound, .invalidParameter, .deviceNotOpen, .notAvailable, .unableWriteFile,
    .unableReadFile, .communicationError, .invalidChecksum, .requestTimedOut, .fileNotFound,
    .fileAccessDenied, .invalidFormat,
    .invalidVersion, .cancel,
    .bleGatt,
    .bluetoothPermissionMissing,
  ]

  /// Rows "status  NAME  meaning", generated from the ResultCode table so help and man cannot drift.
  static var table: [(status: Int32, name: String, meaning: String)] {
    documented.map { (of($0), $0.name, meaning(of: $0)) }
  }

  static func meaning(of code: ResultCode) -> String {
    switch code {
    case .noError: "success"
    case .notFound: "device, property or item not found; a finite source held no barcode"
    case .invalidParameter: "usage error: bad command, option or value"
    case .unableWriteFile: "a write failed: stdout full or closed (not a reader gone), listen --output FILE"
    case .notAvailable:
      "no adapter, bluetoothd or camera available; a device or camera busy (in use by another program)"
    case .invalidChecksum: "a reply failed its checksum (a Cognex DataMan's DMCC reply)"
    case .requestTimedOut: "a --timeout or --wait ran out (discover ends at its timeout with 0)"
    case .invalidFormat: "bad format: malformed JSON (a corrupt state file is moved aside)"
    case .invalidVersion: "the state file is from a newer capture (left as it is)"
    case .cancel: "interrupted (listen exits 0 after flushing on SIGINT/SIGTERM)"
    default: code.meaning
    }
  }
}
