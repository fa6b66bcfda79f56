import CaptureCore

/// The one rule that turns a result into a process exit status (docs/architecture.md §1 "Exit status"):
/// 0 for any SKT result ≥ 0 (success, or success with a warning), otherwise |code|, so `$?` names the
/// error (15 NOTSUPPORTED, 17 NOTFOUND, 18 INVALIDPARAMETER, 42 REQUESTTIMEDOUT, ...). A remote
/// command's `exit` (docs/fleet.md §5) is the same number.
public enum ExitStatus {
  /// Capped at 255, the most an exit status holds (POSIX wait: the low 8 bits); every SKT code the
  /// SDK defines is above -255, so the cap only guards the arithmetic.
  public static func of(_ result: ResultCode) -> Int32 {
    result.isSuccess ? 0 : Int32(min(255, -Int64(result.rawValue)))
  }
}
