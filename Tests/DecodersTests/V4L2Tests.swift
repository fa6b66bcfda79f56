import Glibc
import TestSupport
import Testing

@testable import Decoders

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
      case .grey, .nv12, .nv21, .nv16, .nv61, .yuv420, .yvu420, .yuv422p: lines.append(row)
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
