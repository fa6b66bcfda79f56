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
    #expect(V4L2Camera.pixelFormat(0x3231_564E) == nil)  // "NV12"
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
