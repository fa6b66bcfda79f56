import CV4L2
import Glibc

/// Grabs grayscale frames from a V4L2 video capture device (memory-mapped streaming I/O, or read() when the
/// driver only offers that). Not Sendable: one owner drives it; frames are Sendable values.
public final class V4L2Camera {
  /// The formats turned into gray (videodev2.h names): the luma plane of GREY and of every planar
  /// YUV format, the luma bytes of the packed 4:2:2 ones, BT.601 luma computed from 24-bit RGB, and
  /// MJPEG decoded by libjpeg.
  public enum PixelFormat: String, Sendable, CaseIterable {
    case grey = "GREY"
    case nv12 = "NV12", nv21 = "NV21", nv16 = "NV16", nv61 = "NV61"
    case yuv420 = "YU12", yvu420 = "YV12", yuv422p = "422P"
    case yuyv = "YUYV", yvyu = "YVYU", uyvy = "UYVY", vyuy = "VYUY"
    case rgb24 = "RGB3", bgr24 = "BGR3"
    case mjpeg = "MJPG"

    /// Bytes of one pixel in the line `bytesperline` measures (the luma plane's, for planar formats),
    /// by the format's group: luma plane 1, packed 4:2:2 2, RGB 3, MJPEG none.
    var lineBytesPerPixel: Int { [1, 2, 3, 0][cost] }

    /// How cheap the format is to turn into gray: a copy of rows (0), a byte pick (1), arithmetic (2),
    /// a decode (3).
    var cost: Int {
      switch self {
      case .grey, .nv12, .nv21, .nv16, .nv61, .yuv420, .yvu420, .yuv422p: 0
      case .yuyv, .yvyu, .uyvy, .vyuy: 1
      case .rgb24, .bgr24: 2
      case .mjpeg: 3
      }
    }
  }

  public let path: String
  public let width: Int
  public let height: Int
  public let pixelFormat: PixelFormat
  /// How long `nextFrame` waits for the driver before failing with `.unreadable`.
  public var timeoutMilliseconds: Int32 = 5000

  private let fd: Int32
  private let bytesPerLine: Int
  private let imageSize: Int
  private var buffers: [UnsafeMutableRawBufferPointer] = []  // mmap'd; empty with read() I/O
  private var streaming = false

  /// Opens `path` and starts capturing. ENOENT → `.notFound`; EACCES/EPERM → `.accessDenied`; not a V4L2
  /// device (ioctl ENOTTY/EINVAL) or not a capture device, or no format of `PixelFormat` →
  /// `.unsupportedFormat`; other failures → `.unreadable`.
  /// - Parameters:
  ///   - width, height: requested size; the driver picks the nearest it supports (VIDIOC_S_FMT adjusts).
  public convenience init(path: String, width: Int? = nil, height: Int? = nil, bufferCount: Int = 4)
    throws(ImageError)
  {
    try self.init(
      pathBytes: Array(path.utf8), displayPath: path, width: width, height: height, bufferCount: bufferCount)
  }

  /// Opens the device by the exact bytes of its name (a Linux path need not be UTF-8); `displayPath`
  /// names it in messages.
  public init(
    pathBytes: [UInt8], displayPath: String, width: Int? = nil, height: Int? = nil, bufferCount: Int = 4
  ) throws(ImageError) {
    let path = displayPath
    self.path = path
    // O_NONBLOCK: VIDIOC_DQBUF then returns EAGAIN instead of blocking, so poll() can enforce a timeout.
    let fd = (pathBytes.map { CChar(bitPattern: $0) } + [0]).withUnsafeBufferPointer {
      open($0.baseAddress!, O_RDWR | O_NONBLOCK | O_CLOEXEC)
    }
    guard fd >= 0 else { throw ImageLoader.mapErrno(errno, path) }
    var mapped: [UnsafeMutableRawBufferPointer] = []
    do throws(ImageError) {
      var info = stat()
      guard fstat(fd, &info) == 0 else { throw ImageLoader.mapErrno(errno, path) }
      guard (info.st_mode & S_IFMT) == S_IFCHR else {
        throw ImageError.unsupportedFormat("\(path): not a video device")
      }

      var capability = v4l2_capability()
      guard cv4l2_ioctl(fd, cv4l2_vidioc_querycap(), &capability) == 0 else {
        let code = errno
        // The V4L2 spec: drivers that are not V4L2 devices fail VIDIOC_QUERYCAP with ENOTTY (EINVAL in old kernels).
        if code == ENOTTY || code == EINVAL {
          throw ImageError.unsupportedFormat("\(path): not a V4L2 device")
        }
        throw ImageLoader.mapErrno(code, path)
      }
      // videodev2.h: device_caps is valid when V4L2_CAP_DEVICE_CAPS is set and describes this node, whereas
      // `capabilities` covers the whole physical device.
      let caps =
        capability.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0
        ? capability.device_caps : capability.capabilities
      guard caps & UInt32(V4L2_CAP_VIDEO_CAPTURE) != 0 else {
        throw ImageError.unsupportedFormat("\(path): not a video capture device")
      }
      let canStream = caps & UInt32(V4L2_CAP_STREAMING) != 0
      guard canStream || caps & UInt32(V4L2_CAP_READWRITE) != 0 else {
        throw ImageError.unsupportedFormat("\(path): neither streaming nor read() I/O")
      }

      let chosen = try Self.chooseFormat(fd, path)
      var format = v4l2_format()
      format.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
      guard cv4l2_ioctl(fd, cv4l2_vidioc_g_fmt(), &format) == 0 else {
        throw Self.ioctlError("VIDIOC_G_FMT", path)
      }
      format.fmt.pix.pixelformat = chosen.fourcc
      if let width { format.fmt.pix.width = UInt32(clamping: width) }
      if let height { format.fmt.pix.height = UInt32(clamping: height) }
      // Progressive frames: interlaced fields would tear the bars of a moving code.
      format.fmt.pix.field = V4L2_FIELD_NONE.rawValue
      // G_FMT returned the previous format's line length and size (YUYV 1280 wide: 2,560 bytes a
      // line), which a driver may keep as padding for the new one. The V4L2 format documentation
      // (pixfmt-v4l2, bytesperline): drivers may ignore the requested value, "that implies
      // applications can just set this field to zero to get a reasonable default" — ask for 0 and use
      // what S_FMT returns.
      format.fmt.pix.bytesperline = 0
      format.fmt.pix.sizeimage = 0
      guard cv4l2_ioctl(fd, cv4l2_vidioc_s_fmt(), &format) == 0 else {
        throw Self.ioctlError("VIDIOC_S_FMT", path)
      }
      // S_FMT may adjust everything; what it returns is what we get.
      guard let actual = Self.pixelFormat(format.fmt.pix.pixelformat) else {
        throw ImageError.unsupportedFormat("\(path): driver refused \(chosen.format.rawValue)")
      }
      self.pixelFormat = actual
      self.width = Int(format.fmt.pix.width)
      self.height = Int(format.fmt.pix.height)
      let minimumLine = actual.lineBytesPerPixel * self.width
      self.bytesPerLine = max(Int(format.fmt.pix.bytesperline), minimumLine)
      self.imageSize = max(Int(format.fmt.pix.sizeimage), actual == .mjpeg ? 0 : bytesPerLine * self.height)
      guard self.width > 0, self.height > 0 else {
        throw ImageError.unsupportedFormat("\(path): zero frame size")
      }

      if canStream {
        var request = v4l2_requestbuffers()
        request.count = UInt32(max(2, bufferCount))
        request.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        request.memory = V4L2_MEMORY_MMAP.rawValue
        guard cv4l2_ioctl(fd, cv4l2_vidioc_reqbufs(), &request) == 0, request.count > 0 else {
          throw Self.ioctlError("VIDIOC_REQBUFS", path)
        }
        for index in 0..<request.count {
          var buffer = Self.captureBuffer(index: index)
          guard cv4l2_ioctl(fd, cv4l2_vidioc_querybuf(), &buffer) == 0 else {
            throw Self.ioctlError("VIDIOC_QUERYBUF", path)
          }
          // videodev2.h: for V4L2_MEMORY_MMAP, m.offset is the offset to pass to mmap().
          let address = mmap(
            nil, Int(buffer.length), PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(buffer.m.offset))
          guard let address, address != MAP_FAILED else { throw ImageLoader.mapErrno(errno, path) }
          mapped.append(UnsafeMutableRawBufferPointer(start: address, count: Int(buffer.length)))
          guard cv4l2_ioctl(fd, cv4l2_vidioc_qbuf(), &buffer) == 0 else {
            throw Self.ioctlError("VIDIOC_QBUF", path)
          }
        }
        var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        guard cv4l2_ioctl(fd, cv4l2_vidioc_streamon(), &type) == 0 else {
          throw Self.ioctlError("VIDIOC_STREAMON", path)
        }
        streaming = true
      }
    } catch {
      for buffer in mapped { munmap(buffer.baseAddress, buffer.count) }
      close(fd)
      throw error
    }
    self.fd = fd
    self.buffers = mapped
  }

  deinit {
    if streaming {
      var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
      _ = cv4l2_ioctl(fd, cv4l2_vidioc_streamoff(), &type)
    }
    for buffer in buffers { munmap(buffer.baseAddress, buffer.count) }
    close(fd)
  }

  /// Waits for the next frame and converts it to gray (`gray`: the luma plane or bytes, RGB's luma);
  /// MJPEG is decoded by libjpeg (leniently: a frame cut short still yields an image). Fails with `.unreadable` on
  /// timeout or I/O error, `.corrupt` for an undecodable MJPEG frame.
  public func nextFrame() throws(ImageError) -> GrayImage {
    // Frames the driver flags as broken (V4L2_BUF_FLAG_ERROR) are skipped, a few times at most.
    for _ in 0..<8 {
      try waitReadable()
      if !streaming {
        var data = [UInt8](repeating: 0, count: max(imageSize, 1))
        let n = data.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 {
          if errno == EAGAIN || errno == EINTR { continue }
          throw ImageLoader.mapErrno(errno, path)
        }
        var result: Result<GrayImage, ImageError> = .failure(.unreadable("\(path): empty read"))
        data.withUnsafeBytes { raw in
          result = Result { () throws(ImageError) in try convert(UnsafeRawBufferPointer(rebasing: raw[0..<n]))
          }
        }
        return try result.get()
      }
      var buffer = Self.captureBuffer(index: 0)
      guard cv4l2_ioctl(fd, cv4l2_vidioc_dqbuf(), &buffer) == 0 else {
        if errno == EAGAIN { continue }
        throw Self.ioctlError("VIDIOC_DQBUF", path)
      }
      // The newest frame, not the oldest: frames that filled while the last one was decoded wait in
      // the driver's outgoing queue, oldest first, and decoding them in turn would make every scan
      // (buffers − 1) decode periods late. DQBUF on the non-blocking descriptor takes the next one or
      // fails with EAGAIN when none is ready (V4L2 streaming I/O, VIDIOC_QBUF/VIDIOC_DQBUF); each
      // older one goes straight back to the driver.
      while true {
        var newer = Self.captureBuffer(index: 0)
        guard cv4l2_ioctl(fd, cv4l2_vidioc_dqbuf(), &newer) == 0 else { break }
        _ = cv4l2_ioctl(fd, cv4l2_vidioc_qbuf(), &buffer)
        buffer = newer
      }
      defer { _ = cv4l2_ioctl(fd, cv4l2_vidioc_qbuf(), &buffer) }  // hand the buffer back to the driver
      if buffer.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0 { continue }
      let mapping = buffers[Int(buffer.index)]
      let used = min(Int(buffer.bytesused), mapping.count)
      return try convert(UnsafeRawBufferPointer(rebasing: mapping[0..<used]))
    }
    throw .unreadable("\(path): no usable frame")
  }

  private func waitReadable() throws(ImageError) {
    var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    while true {
      let n = poll(&descriptor, 1, timeoutMilliseconds)
      if n > 0 { return }
      if n == 0 { throw .unreadable("\(path): no frame within \(timeoutMilliseconds) ms") }
      if errno != EINTR { throw ImageLoader.mapErrno(errno, path) }
    }
  }

  /// Converts one frame, borrowed from an mmap'd buffer or a read() array for the duration of the call.
  private func convert(_ data: UnsafeRawBufferPointer) throws(ImageError) -> GrayImage {
    if pixelFormat == .mjpeg { return try ImageLoader.decodeJPEG(Array(data), strict: false) }
    return try Self.gray(
      data, format: pixelFormat, width: width, height: height, bytesPerLine: bytesPerLine, path: path)
  }

  /// The gray image of an uncompressed frame whose lines are `bytesPerLine` apart (for the planar
  /// formats, the luma plane's: it comes first, videodev2.h's planar layouts).
  static func gray(
    _ data: UnsafeRawBufferPointer, format: PixelFormat, width: Int, height: Int, bytesPerLine: Int,
    path: String
  ) throws(ImageError) -> GrayImage {
    let pixel = format.lineBytesPerPixel
    guard pixel > 0, width > 0, height > 0, bytesPerLine >= width * pixel,
      data.count >= bytesPerLine * (height - 1) + width * pixel
    else {
      throw .corrupt("\(path): short frame (\(data.count) bytes)")
    }
    let pixels = [UInt8](unsafeUninitializedCapacity: width * height) { out, initialized in
      for y in 0..<height {
        let row = y * bytesPerLine
        let line = y * width
        switch format {
        case .grey, .nv12, .nv21, .nv16, .nv61, .yuv420, .yvu420, .yuv422p:
          UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(out)[line..<(line + width)])
            .copyMemory(from: UnsafeRawBufferPointer(rebasing: data[row..<(row + width)]))
        case .yuyv, .yvyu:  // Y0 U Y1 V / Y0 V Y1 U: luma at the even bytes
          for x in 0..<width { out[line + x] = data[row + 2 * x] }
        case .uyvy, .vyuy:  // U Y0 V Y1 / V Y0 U Y1: luma at the odd bytes
          for x in 0..<width { out[line + x] = data[row + 2 * x + 1] }
        case .rgb24, .bgr24:
          // BT.601 luma in integers: (77 R + 150 G + 29 B) / 256; the weights add up to 256.
          let (r, b) = format == .rgb24 ? (0, 2) : (2, 0)
          for x in 0..<width {
            let at = row + 3 * x
            let sum = 77 * Int(data[at + r]) + 150 * Int(data[at + 1]) + 29 * Int(data[at + b])
            out[line + x] = UInt8(truncatingIfNeeded: sum >> 8)
          }
        case .mjpeg:
          break  // excluded by the guard (no line bytes)
        }
      }
      initialized = width * height
    }
    return GrayImage(width: width, height: height, pixels: pixels)
  }

  private static func captureBuffer(index: UInt32) -> v4l2_buffer {
    var buffer = v4l2_buffer()
    buffer.index = index
    buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
    buffer.memory = V4L2_MEMORY_MMAP.rawValue
    return buffer
  }

  static func pixelFormat(_ fourcc: UInt32) -> PixelFormat? {
    switch fourcc {
    case cv4l2_pix_fmt_grey(): .grey
    case cv4l2_pix_fmt_nv12(): .nv12
    case cv4l2_pix_fmt_nv21(): .nv21
    case cv4l2_pix_fmt_nv16(): .nv16
    case cv4l2_pix_fmt_nv61(): .nv61
    case cv4l2_pix_fmt_yuv420(): .yuv420
    case cv4l2_pix_fmt_yvu420(): .yvu420
    case cv4l2_pix_fmt_yuv422p(): .yuv422p
    case cv4l2_pix_fmt_yuyv(): .yuyv
    case cv4l2_pix_fmt_yvyu(): .yvyu
    case cv4l2_pix_fmt_uyvy(): .uyvy
    case cv4l2_pix_fmt_vyuy(): .vyuy
    case cv4l2_pix_fmt_rgb24(): .rgb24
    case cv4l2_pix_fmt_bgr24(): .bgr24
    case cv4l2_pix_fmt_mjpeg(), cv4l2_pix_fmt_jpeg(): .mjpeg
    default: nil
    }
  }

  /// The cheapest format to turn into gray (PixelFormat.cost: a luma plane's rows copied, then a byte
  /// pick, then RGB arithmetic, then an MJPEG decode); formats the driver only emulates (libv4l
  /// conversions, V4L2_FMT_FLAG_EMULATED) rank last.
  private static func chooseFormat(_ fd: Int32, _ path: String) throws(ImageError) -> (
    format: PixelFormat, fourcc: UInt32
  ) {
    var best: (rank: Int, format: PixelFormat, fourcc: UInt32)?
    var offered: [String] = []
    var description = v4l2_fmtdesc()
    description.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
    // VIDIOC_ENUM_FMT fails with EINVAL past the last index.
    while cv4l2_ioctl(fd, cv4l2_vidioc_enum_fmt(), &description) == 0 {
      let fourcc = description.pixelformat
      offered.append(
        String(decoding: (0..<4).map { UInt8(truncatingIfNeeded: fourcc >> (8 * $0)) }, as: UTF8.self))
      if let format = pixelFormat(fourcc) {
        var rank = format.cost
        if description.flags & UInt32(V4L2_FMT_FLAG_EMULATED) != 0 { rank += 4 }
        if best == nil || rank < best!.rank { best = (rank, format, fourcc) }
      }
      description.index += 1
    }
    guard let best else {
      throw .unsupportedFormat(
        "\(path): no format capture reads (offers \(offered.joined(separator: ", ")); it reads "
          + PixelFormat.allCases.map(\.rawValue).joined(separator: ", ") + ")")
    }
    return (best.format, best.fourcc)
  }

  private static func ioctlError(_ name: String, _ path: String) -> ImageError {
    let code = errno
    if code == ENOTTY { return .unsupportedFormat("\(path): \(name) not supported") }
    return .unreadable("\(path): \(name): \(String(cString: strerror(code)))")
  }
}
