/// The core layer's one error type: an SKT result code and a one-line message for a person.
/// Drivers and transports convert their own errors into this exactly once, at their boundary.
public struct CaptureError: Error, Sendable, Equatable, CustomStringConvertible {
  public var code: ResultCode
  public var message: String

  public init(_ code: ResultCode, _ message: String) {
    self.code = code
    self.message = message
  }

  public var description: String { "\(code.name) (\(code.rawValue)): \(message)" }

  public static func notSupported(_ message: String) -> CaptureError { CaptureError(.notSupported, message) }
  public static func invalidParameter(_ message: String) -> CaptureError {
    CaptureError(.invalidParameter, message)
  }
}
