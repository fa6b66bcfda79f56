/// This release of capture. SocketCam reports it as its firmware version (VersionDevice).
public enum CaptureVersion {
  public static let major = 0
  public static let middle = 1
  public static let minor = 0
  public static let build = 1
  public static var string: String { "\(major).\(middle).\(minor)" }
}
