import CV4L2
import Glibc

/// Grabs grayscale frames from a V4L2 video capture device (memory-mapped streaming I/O, or read() when the
/// driver only offers that). Not Sendable: one owner drives it; frames are Sendable values.
public final class V4L2Camera {
  /// The formats turned into gray (videodev2.h names): the luma plane of GREY and of every planar
  /// YUV format (contiguous, or one plane per buffer plane as the multi-planar NV12M and YM12 family),
  /// the luma bytes of the packed 4:2:2 ones, BT.601 luma computed from 24-bit RGB, and MJPEG decoded
  /// by libjpeg. Each name is the format's fourcc (`--camera-format`).
  public enum PixelFormat: String, Sendable, CaseIterable {
    case grey = "GREY"
    case nv12 = "NV12", nv21 = "NV21", nv16 = "NV16", nv61 = "NV61"
    case yuv420 = "YU12", yvu420 = "YV12", yuv422p = "422P"
    case nv12m = "NM12", nv21m = "NM21", nv16m = "NM16", nv61m = "NM61"
    case yuv420m = "YM12", yvu420m = "YM21", yuv422m = "YM16", yvu422m = "YM61"
    case yuyv = "YUYV", yvyu = "YVYU", uyvy = "UYVY", vyuy = "VYUY"
    case rgb24 = "RGB3", bgr24 = "BGR3"
    case mjpeg = "MJPG"

    /// Bytes of one pixel in the line `bytesperline` measures (the luma plane's, for planar formats),
    /// by the format's group: luma plane 1, packed 4:2:2 2, RGB 3, MJPEG none.
    var lineBytesPerPixel: Int { [1, 2, 3, 0][cost] }

    /// How cheap the format is to turn into gray: a copy of rows (0), a byte pick (1), arithmetic (2),
    /// a decode (3).
    public var cost: Int {
      switch self {
      case .grey, .nv12, .nv21, .nv16, .nv61, .yuv420, .yvu420, .yuv422p, .nv12m, .nv21m, .nv16m, .nv61m,
        .yuv420m, .yvu420m, .yuv422m, .yvu422m:
        0
      case .yuyv, .yvyu, .uyvy, .vyuy: 1
      case .rgb24, .bgr24: 2
      case .mjpeg: 3
      }
    }

    /// Bytes a frame holds per pixel, in halves (GREY 2, 4:2:0 3, 4:2:2 4, RGB 6; MJPEG 0, its size is
    /// the picture's): among formats of one cost the smaller frame wins, as it is less to carry over
    /// USB or DMA and less memory touched for the same gray picture (the gray copy itself is the same).
    /// vivid, a driver that offers every format, lists 4:2:2 planar before GREY; the first offered
    /// would win a tie otherwise.
    var frameHalfBytesPerPixel: Int {
      switch self {
      case .grey: 2
      case .nv12, .nv21, .yuv420, .yvu420, .nv12m, .nv21m, .yuv420m, .yvu420m: 3
      case .nv16, .nv61, .yuv422p, .nv16m, .nv61m, .yuv422m, .yvu422m, .yuyv, .yvyu, .uyvy, .vyuy: 4
      case .rgb24, .bgr24: 6
      case .mjpeg: 0
      }
    }
  }

  /// How a node's buffers are laid out (videodev2.h enum v4l2_buf_type): one plane per buffer
  /// (V4L2_BUF_TYPE_VIDEO_CAPTURE, USB webcams), or the multi-planar API
  /// (V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE, most SoC and MIPI camera pipelines), whose buffers carry
  /// one or more planes. Capture reads plane 0 only: the luma plane of every planar format, and the
  /// whole image of every other one (a single-plane format has one plane in either API).
  public enum BufferType: Sendable, Equatable {
    case singlePlanar, multiPlanar

    var raw: UInt32 {
      switch self {
      case .singlePlanar: V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
      case .multiPlanar: V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE.rawValue
      }
    }

    /// The type a node with these capabilities captures with: single-planar when it has it (every
    /// application and driver supports it), else multi-planar; nil for a node that captures no video
    /// (an output, a metadata-only or a radio node).
    static func of(_ caps: UInt32) -> BufferType? {
      if caps & UInt32(V4L2_CAP_VIDEO_CAPTURE) != 0 { return .singlePlanar }
      if caps & UInt32(V4L2_CAP_VIDEO_CAPTURE_MPLANE) != 0 { return .multiPlanar }
      return nil
    }
  }

  public let path: String
  public let width: Int
  public let height: Int
  public let pixelFormat: PixelFormat
  public let bufferType: BufferType
  /// How long `nextFrame` waits for the driver before failing with `.unreadable`.
  public var timeoutMilliseconds: Int32 = 5000

  private let fd: Int32
  private let bytesPerLine: Int
  private let imageSize: Int
  private var buffers: [UnsafeMutableRawBufferPointer] = []  // plane 0 of each, mmap'd; empty with read() I/O
  private var streaming = false

  /// Opens `path` and starts capturing. ENOENT → `.notFound`; EACCES/EPERM → `.accessDenied`; EBUSY →
  /// `.busy`; not a V4L2 device (ioctl ENOTTY/EINVAL) or not a capture device, or no format of
  /// `PixelFormat` (or not `format` when one is given) → `.unsupportedFormat`; other failures →
  /// `.unreadable`.
  /// - Parameters:
  ///   - width, height: requested size; the driver picks the nearest it supports (VIDIOC_S_FMT adjusts).
  ///   - format: the pixel format to use instead of the cheapest the camera offers.
  public convenience init(
    path: String, width: Int? = nil, height: Int? = nil, bufferCount: Int = 4, format: PixelFormat? = nil
  ) throws(ImageError) {
    try self.init(
      pathBytes: Array(path.utf8), displayPath: path, width: width, height: height, bufferCount: bufferCount,
      format: format)
  }

  /// Opens the device by the exact bytes of its name (a Linux path need not be UTF-8); `displayPath`
  /// names it in messages.
  public init(
    pathBytes: [UInt8], displayPath: String, width: Int? = nil, height: Int? = nil, bufferCount: Int = 4,
    format forced: PixelFormat? = nil
  ) throws(ImageError) {
    let path = displayPath
    self.path = path
    // O_NONBLOCK: VIDIOC_DQBUF then returns EAGAIN instead of blocking, so poll() can enforce a timeout.
    let fd = (pathBytes.map { CChar(bitPattern: $0) } + [0]).withUnsafeBufferPointer {
      open($0.baseAddress!, O_RDWR | O_NONBLOCK | O_CLOEXEC)
    }
    guard fd >= 0 else { throw Self.openError(errno, path) }
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
        throw Self.openError(code, path)
      }
      let caps = Self.nodeCapabilities(capability)
      guard let type = BufferType.of(caps) else {
        throw ImageError.unsupportedFormat("\(path): not a video capture device")
      }
      self.bufferType = type
      let canStream = caps & UInt32(V4L2_CAP_STREAMING) != 0
      // read() I/O has no planes: the multi-planar API streams only (V4L2 documentation, "Single- and
      // multi-planar APIs").
      guard canStream || (type == .singlePlanar && caps & UInt32(V4L2_CAP_READWRITE) != 0) else {
        throw ImageError.unsupportedFormat("\(path): neither streaming nor read() I/O")
      }

      let chosen = try Self.choose(Self.offeredFormats(fd, type), forced: forced, path: path)
      var format = v4l2_format()
      format.type = type.raw
      guard cv4l2_ioctl(fd, cv4l2_vidioc_g_fmt(), &format) == 0 else {
        throw Self.ioctlError("VIDIOC_G_FMT", path)
      }
      // The pixel format, the size asked for, progressive frames (interlaced fields would tear the bars
      // of a moving code), and bytesperline 0: G_FMT returned the previous format's line length (YUYV
      // 1280 wide: 2,560 bytes a line), which a driver may keep as padding for the new one; the V4L2
      // format documentation (pixfmt-v4l2, bytesperline) says applications "can just set this field to
      // zero to get a reasonable default" (cv4l2_format_request).
      cv4l2_format_request(
        &format, chosen.fourcc, width.map { UInt32(clamping: max($0, 0)) } ?? 0,
        height.map { UInt32(clamping: max($0, 0)) } ?? 0)
      guard cv4l2_ioctl(fd, cv4l2_vidioc_s_fmt(), &format) == 0 else {
        throw Self.ioctlError("VIDIOC_S_FMT", path)
      }
      // S_FMT may adjust everything; what it returns is what we get.
      let actual = cv4l2_format_get(&format)
      guard let pixelFormat = Self.pixelFormat(actual.pixelformat) else {
        throw ImageError.unsupportedFormat("\(path): driver refused \(chosen.format.rawValue)")
      }
      if let forced, pixelFormat != forced {
        throw ImageError.unsupportedFormat(
          "\(path): driver gave \(Self.fourccName(actual.pixelformat)) when asked for \(forced.rawValue)")
      }
      self.pixelFormat = pixelFormat
      let layout = try Self.layout(
        pixelFormat, width: actual.width, height: actual.height, bytesPerLine: actual.bytesperline,
        sizeImage: actual.sizeimage, path: path)
      (self.width, self.height, self.bytesPerLine, self.imageSize) = layout

      if canStream {
        var request = v4l2_requestbuffers()
        request.count = UInt32(min(max(2, bufferCount), 32))
        request.type = type.raw
        request.memory = V4L2_MEMORY_MMAP.rawValue
        guard cv4l2_ioctl(fd, cv4l2_vidioc_reqbufs(), &request) == 0, request.count > 0 else {
          throw Self.ioctlError("VIDIOC_REQBUFS", path)
        }
        for index in 0..<min(request.count, 32) {
          var buffer = cv4l2_buffer_make(type.raw, index)
          guard cv4l2_buffer_ioctl(fd, cv4l2_vidioc_querybuf(), &buffer) == 0 else {
            throw Self.ioctlError("VIDIOC_QUERYBUF", path)
          }
          // videodev2.h: for V4L2_MEMORY_MMAP, m.offset (m.planes[0].m.mem_offset for the
          // multi-planar type) is the offset to pass to mmap(). Only plane 0 is mapped: the luma
          // plane of the non-contiguous formats, the whole frame of the others.
          let plane = cv4l2_buffer_plane0(&buffer)
          guard plane.length > 0 else {
            throw ImageError.unreadable("\(path): VIDIOC_QUERYBUF: empty buffer")
          }
          let address = mmap(
            nil, Int(plane.length), PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(plane.offset))
          guard let address, address != MAP_FAILED else { throw ImageLoader.mapErrno(errno, path) }
          mapped.append(UnsafeMutableRawBufferPointer(start: address, count: Int(plane.length)))
          guard cv4l2_buffer_ioctl(fd, cv4l2_vidioc_qbuf(), &buffer) == 0 else {
            throw Self.ioctlError("VIDIOC_QBUF", path)
          }
        }
        var streamType = Int32(bitPattern: type.raw)
        guard cv4l2_ioctl(fd, cv4l2_vidioc_streamon(), &streamType) == 0 else {
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
      var type = Int32(bitPattern: bufferType.raw)
      _ = cv4l2_ioctl(fd, cv4l2_vidioc_streamoff(), &type)
    }
    for buffer in buffers { munmap(buffer.baseAddress, buffer.count) }
    close(fd)
  }

  /// Waits for the next frame and converts it to gray (`gray`: the luma plane or bytes, RGB's luma);
  /// MJPEG is decoded by libjpeg (leniently: a frame cut short still yields an image). Fails with `.unreadable` on
  /// timeout or I/O error, `.removed` when the device went away, `.corrupt` for an undecodable MJPEG
  /// frame.
  public func nextFrame() throws(ImageError) -> GrayImage {
    // Frames the driver flags as broken (V4L2_BUF_FLAG_ERROR) are skipped, a few times at most.
    for _ in 0..<8 {
      try waitReadable()
      if !streaming {
        var data = [UInt8](repeating: 0, count: max(imageSize, 1))
        let n = data.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 {
          if errno == EAGAIN || errno == EINTR { continue }
          throw streamError("read", errno)
        }
        var result: Result<GrayImage, ImageError> = .failure(.unreadable("\(path): empty read"))
        data.withUnsafeBytes { raw in
          result = Result { () throws(ImageError) in try convert(UnsafeRawBufferPointer(rebasing: raw[0..<n]))
          }
        }
        return try result.get()
      }
      var buffer = cv4l2_buffer_make(bufferType.raw, 0)
      guard cv4l2_buffer_ioctl(fd, cv4l2_vidioc_dqbuf(), &buffer) == 0 else {
        if errno == EAGAIN { continue }
        throw streamError("VIDIOC_DQBUF", errno)
      }
      // The newest frame, not the oldest: frames that filled while the last one was decoded wait in
      // the driver's outgoing queue, oldest first, and decoding them in turn would make every scan
      // (buffers − 1) decode periods late. DQBUF on the non-blocking descriptor takes the next one or
      // fails with EAGAIN when none is ready (V4L2 streaming I/O, VIDIOC_QBUF/VIDIOC_DQBUF); each
      // older one goes straight back to the driver.
      while true {
        var newer = cv4l2_buffer_make(bufferType.raw, 0)
        guard cv4l2_buffer_ioctl(fd, cv4l2_vidioc_dqbuf(), &newer) == 0 else { break }
        _ = cv4l2_buffer_ioctl(fd, cv4l2_vidioc_qbuf(), &buffer)
        buffer = newer
      }
      // Hand the buffer back to the driver once the frame is converted.
      defer { _ = cv4l2_buffer_ioctl(fd, cv4l2_vidioc_qbuf(), &buffer) }
      if cv4l2_buffer_flags(&buffer) & UInt32(V4L2_BUF_FLAG_ERROR) != 0 { continue }
      let index = Int(cv4l2_buffer_index(&buffer))
      guard buffers.indices.contains(index) else {
        throw .unreadable("\(path): VIDIOC_DQBUF: buffer \(index) was never queued")
      }
      let mapping = buffers[index]
      let plane = cv4l2_buffer_plane0(&buffer)
      let range = Self.frameBytes(
        length: mapping.count, bytesUsed: plane.bytesused, dataOffset: plane.data_offset)
      return try convert(UnsafeRawBufferPointer(rebasing: mapping[range]))
    }
    throw .unreadable("\(path): no usable frame")
  }

  private func waitReadable() throws(ImageError) {
    var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    while true {
      let n = poll(&descriptor, 1, timeoutMilliseconds)
      if n > 0 { return }
      if n == 0 { throw .unreadable("\(path): no frame within \(timeoutMilliseconds) ms") }
      if errno != EINTR { throw streamError("poll", errno) }
    }
  }

  /// Converts one frame, borrowed from an mmap'd buffer or a read() array for the duration of the call.
  private func convert(_ data: UnsafeRawBufferPointer) throws(ImageError) -> GrayImage {
    if pixelFormat == .mjpeg { return try ImageLoader.decodeJPEG(Array(data), strict: false) }
    return try Self.gray(
      data, format: pixelFormat, width: width, height: height, bytesPerLine: bytesPerLine, path: path)
  }

  /// The gray image of an uncompressed frame whose lines are `bytesPerLine` apart (for the planar
  /// formats, the luma plane's: it comes first in the contiguous layouts, and is plane 0 of the
  /// non-contiguous ones, videodev2.h's planar layouts).
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
        case .grey, .nv12, .nv21, .nv16, .nv61, .yuv420, .yvu420, .yuv422p, .nv12m, .nv21m, .nv16m, .nv61m,
          .yuv420m, .yvu420m, .yuv422m, .yvu422m:
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
    case cv4l2_pix_fmt_nv12m(): .nv12m
    case cv4l2_pix_fmt_nv21m(): .nv21m
    case cv4l2_pix_fmt_nv16m(): .nv16m
    case cv4l2_pix_fmt_nv61m(): .nv61m
    case cv4l2_pix_fmt_yuv420m(): .yuv420m
    case cv4l2_pix_fmt_yvu420m(): .yvu420m
    case cv4l2_pix_fmt_yuv422m(): .yuv422m
    case cv4l2_pix_fmt_yvu422m(): .yvu422m
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

  /// A fourcc as its four characters (videodev2.h v4l2_fourcc: the first in the low byte); a byte
  /// that is not printable ASCII shows as "?" (the code comes from the driver).
  static func fourccName(_ fourcc: UInt32) -> String {
    String(
      decoding: (0..<4).map { i -> UInt8 in
        let byte = UInt8(truncatingIfNeeded: fourcc >> (8 * i))
        return (0x20..<0x7F).contains(byte) ? byte : UInt8(ascii: "?")
      }, as: UTF8.self)
  }

  /// One format VIDIOC_ENUM_FMT listed: its code and flags.
  struct Offer: Equatable {
    var fourcc: UInt32
    var flags: UInt32 = 0
  }

  /// Every format the node offers for `type`, in the driver's order (at most 256: a driver that
  /// never fails ENUM_FMT must not hold capture in a loop).
  static func offeredFormats(_ fd: Int32, _ type: BufferType) -> [Offer] {
    var offers: [Offer] = []
    var description = v4l2_fmtdesc()
    description.type = type.raw
    // VIDIOC_ENUM_FMT fails with EINVAL past the last index.
    while offers.count < 256, cv4l2_ioctl(fd, cv4l2_vidioc_enum_fmt(), &description) == 0 {
      offers.append(Offer(fourcc: description.pixelformat, flags: description.flags))
      description.index += 1
    }
    return offers
  }

  /// The format to ask for: `forced` when the camera offers it, else the cheapest to turn into gray
  /// (PixelFormat.cost: a luma plane's rows copied, then a byte pick, then RGB arithmetic, then an
  /// MJPEG decode), formats the driver only emulates (libv4l conversions, V4L2_FMT_FLAG_EMULATED)
  /// last; among those of one cost the smallest frame (`frameHalfBytesPerPixel`: GREY before NV12
  /// before 422P), and the first offered wins a remaining tie. Neither → `.unsupportedFormat` naming
  /// what it offers.
  static func choose(_ offers: [Offer], forced: PixelFormat?, path: String) throws(ImageError) -> (
    format: PixelFormat, fourcc: UInt32
  ) {
    var best: (rank: Int, format: PixelFormat, fourcc: UInt32)?
    for offer in offers {
      guard let format = pixelFormat(offer.fourcc), forced == nil || format == forced else { continue }
      var rank = format.cost
      if offer.flags & UInt32(V4L2_FMT_FLAG_EMULATED) != 0 { rank += 4 }
      rank = rank * 8 + format.frameHalfBytesPerPixel
      if best == nil || rank < best!.rank { best = (rank, format, offer.fourcc) }
    }
    if let best { return (best.format, best.fourcc) }
    var offered: [String] = []
    for offer in offers where !offered.contains(fourccName(offer.fourcc)) {
      offered.append(fourccName(offer.fourcc))
    }
    let list = offered.isEmpty ? "none" : offered.joined(separator: ", ")
    if let forced {
      throw .unsupportedFormat("\(path) does not offer \(forced.rawValue) (it offers \(list))")
    }
    throw .unsupportedFormat(
      "\(path): no format capture reads (offers \(list); it reads "
        + PixelFormat.allCases.map(\.rawValue).joined(separator: ", ") + ")")
  }

  /// The frame geometry S_FMT returned, checked: a nonzero size, lines at least as long as their
  /// pixels (a shorter bytesperline — or 0 from a driver that leaves it to the application — is
  /// raised to that), and a frame of at most 1 GiB (the values come from the driver: no product of
  /// them may overflow). MJPEG has no line length; its frames are as long as sizeimage says.
  static func layout(
    _ format: PixelFormat, width: UInt32, height: UInt32, bytesPerLine: UInt32, sizeImage: UInt32,
    path: String
  ) throws(ImageError) -> (width: Int, height: Int, bytesPerLine: Int, imageSize: Int) {
    let (w, h) = (Int(width), Int(height))
    guard w > 0, h > 0 else { throw .unsupportedFormat("\(path): zero frame size") }
    let line = max(Int(bytesPerLine), format.lineBytesPerPixel * w)
    let (lines, overflow) = line.multipliedReportingOverflow(by: h)
    let limit = 1 << 30
    guard !overflow, lines <= limit, Int(sizeImage) <= limit else {
      throw .unsupportedFormat("\(path): a \(w)×\(h) frame of more than 1 GiB")
    }
    return (w, h, line, max(Int(sizeImage), format == .mjpeg ? 0 : lines))
  }

  /// The bytes of a dequeued buffer that hold the frame: from `dataOffset` (the multi-planar API's
  /// data_offset, 0 for single-planar buffers) to `bytesUsed`, which counts the offset too
  /// (videodev2.h, struct v4l2_plane), within the `length` bytes mapped. Values past the mapping are
  /// cut to it; a start past the end leaves nothing (a short frame, never a read outside the buffer).
  static func frameBytes(length: Int, bytesUsed: UInt32, dataOffset: UInt32) -> Range<Int> {
    let end = min(Int(bytesUsed), length)
    let start = min(Int(dataOffset), end)
    return start..<end
  }

  /// The capabilities of this node (videodev2.h: device_caps is valid when V4L2_CAP_DEVICE_CAPS is
  /// set and describes this node, whereas `capabilities` covers the whole physical device).
  static func nodeCapabilities(_ capability: v4l2_capability) -> UInt32 {
    capability.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0
      ? capability.device_caps : capability.capabilities
  }

  /// open(2) or QUERYCAP failing: ENODEV and ENXIO mean a node whose device is gone (a webcam
  /// unplugged, its node not yet removed by udev): no camera there, as ENOENT.
  static func openError(_ code: Int32, _ path: String) -> ImageError {
    switch code {
    case ENODEV, ENXIO: .notFound("\(path): \(String(cString: strerror(code)))")
    case EBUSY: .busy("\(path): \(String(cString: strerror(code)))")
    default: ImageLoader.mapErrno(code, path)
    }
  }

  /// A call of the set-up failing. EBUSY: another program streams from the camera (V4L2 lets one
  /// file handle own the buffers: S_FMT, REQBUFS and STREAMON fail with EBUSY for the others);
  /// ENODEV: the device went away meanwhile.
  static func ioctlError(_ name: String, _ path: String) -> ImageError { ioctlError(name, errno, path) }

  static func ioctlError(_ name: String, _ code: Int32, _ path: String) -> ImageError {
    let message = "\(path): \(name): \(String(cString: strerror(code)))"
    switch code {
    case ENOTTY: return .unsupportedFormat("\(path): \(name) not supported")
    case EBUSY: return .busy(message)
    case ENODEV, ENXIO: return .removed(message)
    default: return .unreadable(message)
    }
  }

  /// A frame wait or dequeue failing once streaming: ENODEV (ENXIO) is the device unregistered
  /// (the V4L2 core answers every call on it so, v4l2-dev.c). videobuf2 fails DQBUF with EIO when
  /// the driver marked the queue broken, which a USB disconnect also does before the device is
  /// unregistered: then VIDIOC_QUERYCAP tells whether the device is still there.
  private func streamError(_ name: String, _ code: Int32) -> ImageError {
    if code == EIO || code == EPIPE {
      var capability = v4l2_capability()
      if cv4l2_ioctl(fd, cv4l2_vidioc_querycap(), &capability) != 0 && (errno == ENODEV || errno == ENXIO) {
        return .removed("\(path): \(name): \(String(cString: strerror(code)))")
      }
    }
    return Self.ioctlError(name, code, path)
  }
}
