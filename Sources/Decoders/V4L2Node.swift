import CV4L2
import Glibc

extension V4L2Camera {
  /// What a /dev/video node is, by VIDIOC_QUERYCAP and VIDIOC_ENUM_FMT (what `capture list --cameras`
  /// and `doctor` show): a UVC webcam has a capture node and a metadata node, vivid a capture and an
  /// output node, and only the capture nodes are cameras.
  public struct Node: Sendable, Equatable {
    public var path: String
    /// The driver's name (v4l2_capability.driver: "uvcvideo", "vivid").
    public var driver: String
    /// The device's name (v4l2_capability.card: "HD Pro Webcam C920").
    public var card: String
    /// The node captures video, single- or multi-planar: capture can read it.
    public var isCapture: Bool
    /// The fourccs it offers for capture, in the driver's order (empty for other nodes).
    public var formats: [String]

    public init(path: String, driver: String, card: String, isCapture: Bool, formats: [String]) {
      self.path = path
      self.driver = driver
      self.card = card
      self.isCapture = isCapture
      self.formats = formats
    }
  }

  /// Opens `path` read-only, only to ask what it is: no format is set and nothing streams, so a
  /// camera another program streams from answers too. `.notFound`, `.accessDenied` or
  /// `.unsupportedFormat` (not a V4L2 device) otherwise.
  public static func describe(path: String) -> Result<Node, ImageError> {
    let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
    guard fd >= 0 else { return .failure(openError(errno, path)) }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFCHR else {
      return .failure(.unsupportedFormat("\(path): not a video device"))
    }
    var capability = v4l2_capability()
    guard cv4l2_ioctl(fd, cv4l2_vidioc_querycap(), &capability) == 0 else {
      let code = errno
      if code == ENOTTY || code == EINVAL {
        return .failure(.unsupportedFormat("\(path): not a V4L2 device"))
      }
      return .failure(openError(code, path))
    }
    let type = BufferType.of(nodeCapabilities(capability))
    let formats = type.map { offeredFormats(fd, $0).map { fourccName($0.fourcc) } } ?? []
    return .success(
      Node(
        path: path, driver: text(of: capability.driver), card: text(of: capability.card),
        isCapture: type != nil, formats: formats))
  }

  /// A NUL-terminated name field of v4l2_capability, as text: at most the field's bytes, invalid
  /// UTF-8 repaired, control characters as "?" (the name comes from the driver or the USB device).
  static func text<T>(of field: T) -> String {
    withUnsafeBytes(of: field) { raw in
      let bytes = raw.prefix { $0 != 0 }
      return String(
        String.UnicodeScalarView(
          String(decoding: bytes, as: UTF8.self).unicodeScalars.map {
            $0.value < 0x20 || $0.value == 0x7F ? "?" : $0
          }))
    }
  }
}
