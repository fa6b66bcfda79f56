import CV4L2
import CaptureCore
import Glibc
import TestSupport
import Testing

@testable import Decoders
@testable import Drivers

@Suite struct V4L2Tests {
  @Test func missingDeviceIsNotFound() {
    #expect(throws: ImageError.notFound("/dev/video-missing-42: No such file or directory")) {
      _ = try V4L2Camera(path: "/dev/video-missing-42")
    }
  }

  @Test func characterDeviceThatIsNotV4L2() {
    // /dev/null answers VIDIOC_QUERYCAP with ENOTTY.
    #expect(throws: ImageError.unsupportedFormat("/dev/null: not a V4L2 device")) {
      _ = try V4L2Camera(path: "/dev/null")
    }
  }

  @Test func regularFileIsNotAVideoDevice() throws {
    let dir = TemporaryDirectory()
    let path = try dir.write("fake-video0", [0, 1, 2])
    #expect(throws: ImageError.unsupportedFormat("\(path): not a video device")) {
      _ = try V4L2Camera(path: path)
    }
  }

  @Test func fourccCodes() {
    // videodev2.h v4l2_fourcc packs the first character in the low byte.
    #expect(V4L2Camera.pixelFormat(0x5945_5247) == .grey)  // "GREY"
    #expect(V4L2Camera.pixelFormat(0x5659_5559) == .yuyv)  // "YUYV"
    #expect(V4L2Camera.pixelFormat(0x4750_4A4D) == .mjpeg)  // "MJPG"
    #expect(V4L2Camera.pixelFormat(0x3231_564E) == .nv12)  // "NV12"
    #expect(V4L2Camera.pixelFormat(0x5956_5955) == .uyvy)  // "UYVY"
    #expect(V4L2Camera.pixelFormat(0x3231_5559) == .yuv420)  // "YU12"
    #expect(V4L2Camera.pixelFormat(0x3342_4752) == .rgb24)  // "RGB3"
    #expect(V4L2Camera.pixelFormat(0x3231_4D4E) == .nv12m)  // "NM12": NV12 with its planes apart
    #expect(V4L2Camera.pixelFormat(0x3231_4D59) == .yuv420m)  // "YM12"
    #expect(V4L2Camera.pixelFormat(0x3436_3248) == nil)  // "H264": compressed video, not read
    // Every format's name is its fourcc as videodev2.h spells it.
    for format in V4L2Camera.PixelFormat.allCases {
      let fourcc = format.rawValue.utf8.enumerated().reduce(UInt32(0)) {
        $0 | UInt32($1.element) << (8 * $1.offset)
      }
      #expect(V4L2Camera.pixelFormat(fourcc) == format, "\(format)")
    }
  }

  /// A 4×2 frame whose luma is 10, 20, … 80 row by row, in `format`, with `pad` bytes after each line.
  static func frame(_ format: V4L2Camera.PixelFormat, pad: Int) -> (bytes: [UInt8], bytesPerLine: Int) {
    let luma: [[UInt8]] = [[10, 20, 30, 40], [50, 60, 70, 80]]
    var lines: [[UInt8]] = []
    for row in luma {
      switch format {
      case .grey, .nv12, .nv21, .nv16, .nv61, .yuv420, .yvu420, .yuv422p, .nv12m, .nv21m, .nv16m, .nv61m,
        .yuv420m, .yvu420m, .yuv422m, .yvu422m:
        lines.append(row)
      case .yuyv, .yvyu: lines.append(row.flatMap { [$0, 128] })
      case .uyvy, .vyuy: lines.append(row.flatMap { [128, $0] })
      // Gray RGB: equal components, whose BT.601 luma is the component itself.
      case .rgb24, .bgr24: lines.append(row.flatMap { [$0, $0, $0] })
      case .mjpeg: lines.append([])
      }
    }
    let bytesPerLine = lines[0].count + pad
    var bytes = lines.flatMap { $0 + [UInt8](repeating: 0xEE, count: pad) }
    // The chroma planes of planar formats follow the luma plane: they must not reach the image.
    if format.lineBytesPerPixel == 1 && format != .grey { bytes += [UInt8](repeating: 0x77, count: 8) }
    return (bytes, bytesPerLine)
  }

  @Test("every uncompressed format turns into its luma, with or without padding after each line")
  func grayOfEveryFormat() throws {
    for format in V4L2Camera.PixelFormat.allCases where format != .mjpeg {
      for pad in [0, 3] {
        let (bytes, bytesPerLine) = Self.frame(format, pad: pad)
        let image = try bytes.withUnsafeBytes {
          try V4L2Camera.gray(
            $0, format: format, width: 4, height: 2, bytesPerLine: bytesPerLine, path: "cam")
        }
        #expect(image.pixels == [10, 20, 30, 40, 50, 60, 70, 80], "\(format) pad \(pad)")
      }
    }
  }

  @Test("RGB24 and BGR24 weigh red, green and blue as BT.601 luma does")
  func rgbLuma() throws {
    let pixels: [UInt8] = [255, 0, 0, 0, 255, 0, 0, 0, 255]  // red, green, blue
    let rgb = try pixels.withUnsafeBytes {
      try V4L2Camera.gray($0, format: .rgb24, width: 3, height: 1, bytesPerLine: 9, path: "cam")
    }
    #expect(rgb.pixels == [76, 149, 28])  // (77, 150, 29) × 255 / 256
    let bgr = try pixels.withUnsafeBytes {
      try V4L2Camera.gray($0, format: .bgr24, width: 3, height: 1, bytesPerLine: 9, path: "cam")
    }
    #expect(bgr.pixels == [28, 149, 76])
  }

  @Test("a frame shorter than its lines is a corrupt frame, never a read past its end")
  func shortFrameIsCorrupt() {
    let bytes = [UInt8](repeating: 0, count: 15)
    #expect(throws: ImageError.corrupt("cam: short frame (15 bytes)")) {
      _ = try bytes.withUnsafeBytes {
        try V4L2Camera.gray($0, format: .yuyv, width: 4, height: 2, bytesPerLine: 8, path: "cam")
      }
    }
  }

  @Test("--camera-format takes exactly the formats the camera driver reads, by their fourcc")
  func commandLineFormatsAreTheDriversFormats() {
    #expect(FrameSourceItem.cameraFormats == V4L2Camera.PixelFormat.allCases.map(\.rawValue))
    #expect(V4L2Camera.PixelFormat.allCases.count == 23)
  }

  @Test("a node's buffer type: single-planar when it has it, else multi-planar; none for other nodes")
  func bufferTypeOfANode() {
    let capture = UInt32(V4L2_CAP_VIDEO_CAPTURE)
    let mplane = UInt32(V4L2_CAP_VIDEO_CAPTURE_MPLANE)
    let streaming = UInt32(V4L2_CAP_STREAMING)
    #expect(V4L2Camera.BufferType.of(capture | streaming) == .singlePlanar)
    #expect(V4L2Camera.BufferType.of(mplane | streaming) == .multiPlanar)
    #expect(V4L2Camera.BufferType.of(capture | mplane | streaming) == .singlePlanar)
    // vivid's output node, a UVC webcam's metadata node, a radio tuner.
    #expect(V4L2Camera.BufferType.of(UInt32(V4L2_CAP_VIDEO_OUTPUT) | streaming) == nil)
    #expect(V4L2Camera.BufferType.of(UInt32(V4L2_CAP_META_CAPTURE) | streaming) == nil)
    #expect(V4L2Camera.BufferType.of(UInt32(V4L2_CAP_TUNER) | UInt32(V4L2_CAP_RADIO)) == nil)
    #expect(V4L2Camera.BufferType.singlePlanar.raw == 1 && V4L2Camera.BufferType.multiPlanar.raw == 9)
  }

  @Test("device_caps describe the node when V4L2_CAP_DEVICE_CAPS is set, capabilities the whole device else")
  func nodeCapabilities() {
    var capability = v4l2_capability()
    capability.capabilities =
      UInt32(V4L2_CAP_VIDEO_CAPTURE) | UInt32(V4L2_CAP_META_CAPTURE) | UInt32(V4L2_CAP_DEVICE_CAPS)
    capability.device_caps = UInt32(V4L2_CAP_META_CAPTURE)
    #expect(V4L2Camera.nodeCapabilities(capability) == UInt32(V4L2_CAP_META_CAPTURE))
    capability.capabilities = UInt32(V4L2_CAP_VIDEO_CAPTURE)
    #expect(V4L2Camera.nodeCapabilities(capability) == UInt32(V4L2_CAP_VIDEO_CAPTURE))
  }

  static func offer(_ name: String, emulated: Bool = false) -> V4L2Camera.Offer {
    let fourcc = name.utf8.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * $1.offset) }
    return V4L2Camera.Offer(fourcc: fourcc, flags: emulated ? UInt32(V4L2_FMT_FLAG_EMULATED) : 0)
  }

  @Test("the cheapest format is chosen, an emulated one last; a forced one is taken when offered")
  func formatChoice() throws {
    let webcam = ["MJPG", "YUYV", "H264"].map { Self.offer($0) }
    #expect(try V4L2Camera.choose(webcam, forced: nil, path: "cam").format == .yuyv)
    #expect(try V4L2Camera.choose(webcam, forced: .mjpeg, path: "cam").format == .mjpeg)
    let soc = [Self.offer("RGB3"), Self.offer("NM12"), Self.offer("GREY", emulated: true)]
    #expect(try V4L2Camera.choose(soc, forced: nil, path: "cam").format == .nv12m)
    #expect(try V4L2Camera.choose(soc, forced: .grey, path: "cam").format == .grey)
    // "JPEG" is MJPEG too, and is what is asked for when that is its code.
    let jpeg = try V4L2Camera.choose([Self.offer("JPEG")], forced: .mjpeg, path: "cam")
    #expect(jpeg.format == .mjpeg && jpeg.fourcc == Self.offer("JPEG").fourcc)
  }

  @Test(
    "among formats of one cost the smallest frame wins: GREY, then 4:2:0, then 4:2:2, in any order offered")
  func smallestFrameWinsATie() throws {
    // vivid's order: packed 4:2:2 first, then 422P, YU12, NV12, NV16, …, GREY later.
    let vivid = ["YUYV", "UYVY", "422P", "YU12", "NV12", "NV16", "GREY", "RGB3"].map { Self.offer($0) }
    #expect(try V4L2Camera.choose(vivid, forced: nil, path: "cam").format == .grey)
    let noGrey = ["NV16", "422P", "NV21", "NV12"].map { Self.offer($0) }
    #expect(try V4L2Camera.choose(noGrey, forced: nil, path: "cam").format == .nv21)
    // Cost still comes first: packed 4:2:2 (a byte pick) loses to a planar 4:2:2 (rows copied) of the
    // same size, and an emulated GREY to a native NV16.
    #expect(
      try V4L2Camera.choose(["YUYV", "NV16"].map { Self.offer($0) }, forced: nil, path: "cam").format == .nv16
    )
    #expect(
      try V4L2Camera.choose(
        [Self.offer("GREY", emulated: true), Self.offer("NV16")], forced: nil, path: "cam"
      )
      .format == .nv16)
  }

  @Test("a forced format the camera does not offer names what it offers; no readable format names both lists")
  func formatRefusals() {
    #expect(
      throws: ImageError.unsupportedFormat("/dev/video0 does not offer NV12 (it offers MJPG, YUYV, H264)")
    ) {
      _ = try V4L2Camera.choose(
        ["MJPG", "YUYV", "H264"].map { Self.offer($0) }, forced: .nv12, path: "/dev/video0")
    }
    #expect(throws: ImageError.unsupportedFormat("/dev/video0 does not offer GREY (it offers none)")) {
      _ = try V4L2Camera.choose([], forced: .grey, path: "/dev/video0")
    }
    do {
      _ = try V4L2Camera.choose(
        [Self.offer("H264"), Self.offer("\u{1}BAD")], forced: nil, path: "/dev/video0")
      Issue.record("a camera without a readable format was accepted")
    } catch {
      guard case .unsupportedFormat(let message) = error else { return #expect(Bool(false), "\(error)") }
      // A fourcc with an unprintable byte shows it as "?".
      #expect(
        message.hasPrefix("/dev/video0: no format capture reads (offers H264, ?BAD; it reads GREY, NV12"))
    }
  }

  @Test("the frame geometry: bytesperline 0 or short is raised to the pixels, a huge frame is refused")
  func frameLayout() throws {
    let yuyv = try V4L2Camera.layout(
      .yuyv, width: 640, height: 480, bytesPerLine: 0, sizeImage: 0, path: "cam")
    #expect(yuyv.bytesPerLine == 1280 && yuyv.imageSize == 1280 * 480)
    let padded = try V4L2Camera.layout(
      .nv12m, width: 640, height: 480, bytesPerLine: 704, sizeImage: 0, path: "cam")
    #expect(padded.bytesPerLine == 704 && padded.imageSize == 704 * 480)
    let mjpeg = try V4L2Camera.layout(
      .mjpeg, width: 1280, height: 720, bytesPerLine: 0, sizeImage: 0, path: "cam")
    #expect(mjpeg.imageSize == 0)
    #expect(throws: ImageError.unsupportedFormat("cam: zero frame size")) {
      _ = try V4L2Camera.layout(.grey, width: 0, height: 480, bytesPerLine: 0, sizeImage: 0, path: "cam")
    }
    // Values a driver could return whose product overflows 64 bits: refused, never a trap.
    #expect(throws: ImageError.unsupportedFormat("cam: a 4294967295×4294967295 frame of more than 1 GiB")) {
      _ = try V4L2Camera.layout(
        .rgb24, width: .max, height: .max, bytesPerLine: .max, sizeImage: .max, path: "cam")
    }
  }

  @Test("a dequeued plane's frame runs from data_offset to bytesused, cut to what was mapped")
  func frameBytesOfAPlane() {
    #expect(V4L2Camera.frameBytes(length: 4096, bytesUsed: 3000, dataOffset: 0) == 0..<3000)
    #expect(V4L2Camera.frameBytes(length: 4096, bytesUsed: 3000, dataOffset: 64) == 64..<3000)
    #expect(V4L2Camera.frameBytes(length: 4096, bytesUsed: 9000, dataOffset: 64) == 64..<4096)
    #expect(V4L2Camera.frameBytes(length: 4096, bytesUsed: 32, dataOffset: 64) == 32..<32)
    #expect(V4L2Camera.frameBytes(length: 4096, bytesUsed: .max, dataOffset: .max) == 4096..<4096)
  }

  @Test("plane 0 of a non-contiguous format, after its data offset, is the gray image")
  func grayOfPlaneZero() throws {
    // NV12M 4×2: plane 0 holds a 4-byte header the driver skips with data_offset, then the luma.
    let plane: [UInt8] = [0xAA, 0xAA, 0xAA, 0xAA, 10, 20, 30, 40, 50, 60, 70, 80]
    let range = V4L2Camera.frameBytes(length: plane.count, bytesUsed: UInt32(plane.count), dataOffset: 4)
    let image = try plane.withUnsafeBytes {
      try V4L2Camera.gray(
        UnsafeRawBufferPointer(rebasing: $0[range]), format: .nv12m, width: 4, height: 2, bytesPerLine: 4,
        path: "cam")
    }
    #expect(image.pixels == [10, 20, 30, 40, 50, 60, 70, 80])
    // A plane whose bytesused ends before its data: a short frame, nothing read outside it.
    let short = V4L2Camera.frameBytes(length: plane.count, bytesUsed: 2, dataOffset: 4)
    #expect(throws: ImageError.corrupt("cam: short frame (0 bytes)")) {
      _ = try plane.withUnsafeBytes {
        try V4L2Camera.gray(
          UnsafeRawBufferPointer(rebasing: $0[short]), format: .nv12m, width: 4, height: 2, bytesPerLine: 4,
          path: "cam")
      }
    }
  }

  @Test("EBUSY is a busy camera, ENODEV a removed one (or, at open, no camera)")
  func errnoMeanings() {
    #expect(
      V4L2Camera.ioctlError("VIDIOC_S_FMT", EBUSY, "/dev/video0")
        == .busy("/dev/video0: VIDIOC_S_FMT: Device or resource busy"))
    #expect(
      V4L2Camera.ioctlError("VIDIOC_DQBUF", ENODEV, "/dev/video0")
        == .removed("/dev/video0: VIDIOC_DQBUF: No such device"))
    #expect(
      V4L2Camera.ioctlError("VIDIOC_DQBUF", EIO, "/dev/video0")
        == .unreadable("/dev/video0: VIDIOC_DQBUF: Input/output error"))
    #expect(V4L2Camera.openError(ENODEV, "/dev/video0") == .notFound("/dev/video0: No such device"))
    #expect(V4L2Camera.openError(EBUSY, "/dev/video0") == .busy("/dev/video0: Device or resource busy"))
  }

  @Test("a busy or removed camera is 32 (NOTAVAILABLE) in the serial driver's words; a failing driver 38")
  func cameraErrorCodes() {
    let busy = FramePass.cameraError(
      .busy("/dev/video0: VIDIOC_S_FMT: Device or resource busy"), path: "/dev/video0")
    #expect(busy.code == .notAvailable)
    #expect(busy.message == "camera /dev/video0 is busy (in use by another program)")
    let removed = FramePass.cameraError(
      .removed("/dev/video0: VIDIOC_DQBUF: No such device"), path: "/dev/video0")
    #expect(removed.code == .notAvailable)
    #expect(removed.message == "camera /dev/video0 was removed")
    let failing = FramePass.cameraError(
      .unreadable("/dev/video0: VIDIOC_DQBUF: Input/output error"), path: "/dev/video0")
    #expect(failing.code == .communicationError)
  }

  @Test("describing a node: /dev/null is no V4L2 device, a missing node is not found, a file no device")
  func describeNonCameras() throws {
    #expect(
      V4L2Camera.describe(path: "/dev/null") == .failure(.unsupportedFormat("/dev/null: not a V4L2 device")))
    #expect(
      V4L2Camera.describe(path: "/dev/video-missing-42")
        == .failure(.notFound("/dev/video-missing-42: No such file or directory")))
    let dir = TemporaryDirectory()
    let file = try dir.write("video0", [0])
    #expect(V4L2Camera.describe(path: file) == .failure(.unsupportedFormat("\(file): not a video device")))
    // None of them is listed as a camera, nor as a node that could not be asked.
    let listed = DriverSystem.cameras(among: ["/dev/null", "/dev/video-missing-42", file])
    #expect(listed.cameras.isEmpty && listed.unreadable.isEmpty)
  }

  @Test("a capability name field is read up to its NUL, control characters shown as ?")
  func capabilityText() {
    var capability = v4l2_capability()
    withUnsafeMutableBytes(of: &capability.card) { raw in
      for (i, byte) in Array("Cam\u{1B}[2Jera\0junk".utf8).enumerated() { raw[i] = byte }
    }
    #expect(V4L2Camera.text(of: capability.card) == "Cam?[2Jera")
    // A field filled to its last byte (no NUL) is read to its end, never past it.
    withUnsafeMutableBytes(of: &capability.driver) { raw in
      for i in 0..<raw.count { raw[i] = UInt8(ascii: "d") }
    }
    #expect(V4L2Camera.text(of: capability.driver) == String(repeating: "d", count: 16))
  }

  /// /dev/video0 opens as a capture device: a camera is attached (e.g. a developer machine). A
  /// metadata node answers unsupportedFormat, which is not a failure of ours but is no camera either.
  static let hasCamera =
    access("/dev/video0", R_OK | W_OK) == 0 && (try? V4L2Camera(path: "/dev/video0")) != nil

  /// Runs only where a real camera is attached: grabs one frame.
  @Test(.enabled(if: hasCamera, "no V4L2 capture device at /dev/video0")) func grabsAFrameFromVideo0() throws
  {
    let camera = try V4L2Camera(path: "/dev/video0")
    let frame = try camera.nextFrame()
    #expect(frame.width == camera.width && frame.height == camera.height || camera.pixelFormat == .mjpeg)
    #expect(frame.pixels.count == frame.width * frame.height)
  }
}
