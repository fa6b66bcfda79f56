// The camera loop's answers to a camera that goes away or is busy, with the camera scripted through
// FramePass's opener (this machine has no V4L2 device; the VM tier's vivid proves the ioctls): under
// listen (reconnects) a removal is deviceRemoval, a wait for the node and deviceArrival; under
// trigger and serve it is error 32; a busy camera is 32 in the serial driver's words.

import CaptureCore
import Glibc
import Synchronization
import TestSupport
import Testing

@testable import Decoders
@testable import Drivers

/// A camera the test scripts: each nextFrame takes the next step; past the script it shows nothing
/// (a white frame every 5 ms), as a camera looking at an empty scene.
private final class ScriptedCamera: CameraFrames, @unchecked Sendable {
  enum Step {
    case frame(GrayImage)
    /// The camera is unplugged: its node goes (`path` unlinked, as udev does) and the read fails
    /// with ENODEV.
    case unplug(path: String)
    case fail(ImageError)
  }

  // Only the camera loop's thread calls nextFrame.
  private var steps: [Step]

  init(_ steps: [Step]) { self.steps = steps }

  func nextFrame() throws(ImageError) -> GrayImage {
    guard !steps.isEmpty else {
      usleep(5000)
      return GrayImage(width: 64, height: 64, filledWith: 255)
    }
    switch steps.removeFirst() {
    case .frame(let image): return image
    case .unplug(let path):
      unlink(path)
      throw .removed("\(path): VIDIOC_DQBUF: No such device")
    case .fail(let error): throw error
    }
  }
}

/// The outcomes of successive opens, in order; past them, no such device.
private final class Opens: Sendable {
  private let queue: Mutex<[Result<ScriptedCamera, ImageError>]>
  let count = Atomic<Int>(0)
  /// Each open's number (1, 2, …) as it happens: what a test waits on.
  let opened: AsyncStream<Int>
  private let openedSink: AsyncStream<Int>.Continuation

  init(_ outcomes: [Result<ScriptedCamera, ImageError>]) {
    queue = Mutex(outcomes)
    (opened, openedSink) = AsyncStream.makeStream(of: Int.self)
  }

  func open(_ path: FilePath) throws(ImageError) -> any CameraFrames {
    openedSink.yield(count.wrappingAdd(1, ordering: .relaxed).newValue)
    let next = queue.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    guard let next else { throw .notFound("\(path): No such file or directory") }
    return try next.get()
  }
}

private final class Said: Sendable {
  let lines = Mutex<[String]>([])
}

@Suite("SocketCam: a camera removed, returning or busy", .timeLimit(.minutes(2)))
struct CameraRemovalTests {
  static let device = DeviceInfo(id: "socketcam", name: "SocketCam C820", type: .socketCamC820)

  /// A QR code of `text` as a gray frame (qrencode, as the other SocketCam tests make theirs).
  static func qrFrame(_ text: String, in dir: TemporaryDirectory) throws -> GrayImage {
    let path = dir.file("qr-\(text).png")
    try run(["qrencode", "-s", "6", "-m", "4", "-o", path, text])
    return try ImageLoader.load(path: path)
  }

  /// Runs a camera pass over `node` and hands its events out as they come.
  fileprivate static func start(node: String, reconnects: Bool, opens: Opens, said: Said) -> (
    events: AsyncStream<Event>, run: Task<Void, Never>
  ) {
    let (events, continuation) = AsyncStream.makeStream(of: Event.self)
    let pass = FramePass(
      sources: [.camera(FilePath(node))], formats: [.qrCode], addOns: false, device: device,
      warn: { text in said.lines.withLock { $0.append(text) } }, untilFirstRead: false,
      reconnects: reconnects, openCamera: { path, _ throws(ImageError) in try opens.open(path) },
      emit: { continuation.yield($0) })
    let run = Task {
      await pass.run()
      continuation.finish()
    }
    return (events, run)
  }

  static func describe(_ event: Event?) -> String {
    switch event?.payload {
    case .decodedData(let data): "code \(String(decoding: data.bytes, as: UTF8.self))"
    case .deviceArrival: "arrival"
    case .deviceRemoval: "removal"
    case .error(let error): "error \(error.code.rawValue): \(error.message)"
    case nil: "end"
    default: "other"
    }
  }

  @Test("listen: a removed camera is deviceRemoval; its node is waited for, reopened, and deviceArrival")
  func removedCameraReturns() async throws {
    let dir = TemporaryDirectory()
    let node = try dir.write("video0", [])
    let code = try Self.qrFrame("held", in: dir)
    let said = Said()
    // Back, the node is first busy (another program got it first), then opens.
    let opens = Opens([
      .success(ScriptedCamera([.frame(code), .frame(code), .unplug(path: node)])),
      .failure(.busy("\(node): VIDIOC_S_FMT: Device or resource busy")),
      .success(ScriptedCamera([.frame(code)])),
    ])
    let (events, run) = Self.start(node: node, reconnects: true, opens: opens, said: said)
    var iterator = events.makeAsyncIterator()
    // Held in view over two frames: reported once.
    #expect(Self.describe(await iterator.next()) == "code held")
    #expect(Self.describe(await iterator.next()) == "removal")
    // Gone: no open is tried while its node is missing.
    #expect(opens.count.load(ordering: .relaxed) == 1)
    _ = try dir.write("video0", [])
    #expect(Self.describe(await iterator.next()) == "arrival")
    // A camera back is a new arrival: the code in view is reported again.
    #expect(Self.describe(await iterator.next()) == "code held")
    #expect(opens.count.load(ordering: .relaxed) == 3)
    #expect(
      said.lines.withLock { $0 } == [
        "camera \(node) is busy (in use by another program); trying again until it can be used"
      ])
    run.cancel()
    await run.value
    #expect(Self.describe(await iterator.next()) == "end")
  }

  @Test("listen: a stop while a removed camera is waited for ends the pass, with nothing more")
  func stopWhileWaiting() async throws {
    let dir = TemporaryDirectory()
    let node = try dir.write("video0", [])
    let opens = Opens([.success(ScriptedCamera([.unplug(path: node)]))])
    let (events, run) = Self.start(node: node, reconnects: true, opens: opens, said: Said())
    var iterator = events.makeAsyncIterator()
    #expect(Self.describe(await iterator.next()) == "removal")
    run.cancel()
    await run.value
    #expect(Self.describe(await iterator.next()) == "end")
    #expect(opens.count.load(ordering: .relaxed) == 1)
  }

  @Test("trigger and serve: a removed camera is the read's error, 32 camera … was removed, and it ends")
  func removedCameraWithoutReconnect() async throws {
    let dir = TemporaryDirectory()
    let node = try dir.write("video0", [])
    let code = try Self.qrFrame("once", in: dir)
    let opens = Opens([.success(ScriptedCamera([.frame(code), .unplug(path: node)]))])
    let (events, run) = Self.start(node: node, reconnects: false, opens: opens, said: Said())
    var iterator = events.makeAsyncIterator()
    #expect(Self.describe(await iterator.next()) == "code once")
    #expect(Self.describe(await iterator.next()) == "error -32: camera \(node) was removed")
    #expect(Self.describe(await iterator.next()) == "end")
    await run.value
  }

  @Test("a camera busy at the start is error 32 in the serial driver's words")
  func busyAtStart() async throws {
    let opens = Opens([.failure(.busy("/dev/video0: VIDIOC_REQBUFS: Device or resource busy"))])
    let (events, run) = Self.start(node: "/dev/video0", reconnects: true, opens: opens, said: Said())
    var iterator = events.makeAsyncIterator()
    #expect(
      Self.describe(await iterator.next())
        == "error -32: camera /dev/video0 is busy (in use by another program)")
    #expect(Self.describe(await iterator.next()) == "end")
    await run.value
  }

  @Test("listen's SocketCam: one removal per arrival, so a stop while the camera is gone adds none")
  func socketCamOwesOneRemovalPerArrival() async throws {
    let dir = TemporaryDirectory()
    let node = try dir.write("video0", [])
    let opens = Opens([.success(ScriptedCamera([.unplug(path: node)])), .success(ScriptedCamera([]))])
    var request = OpenRequest(selector: .socketCam, frameSources: [.camera(FilePath(node))], warn: { _ in })
    request.reconnects = true
    let cam = try SocketCam(
      request: request, store: dir.stateStore(),
      openCamera: { path, _ throws(ImageError) in try opens.open(path) })
    var iterator = cam.events.makeAsyncIterator()
    #expect(Self.describe(await iterator.next()) == "arrival")
    let scan = Task { try await cam.trigger(.continuousScan) }
    #expect(Self.describe(await iterator.next()) == "removal")
    // Stopped while the camera is away: the stream ends without a second removal.
    await cam.close()
    #expect(Self.describe(await iterator.next()) == "end")
    _ = await scan.result
    // Back and stopped: the arrival's removal comes with the close.
    _ = try dir.write("video0", [])
    let again = try SocketCam(
      request: request, store: dir.stateStore(),
      openCamera: { path, _ throws(ImageError) in try opens.open(path) })
    var events = again.events.makeAsyncIterator()
    #expect(Self.describe(await events.next()) == "arrival")
    let reading = Task { try await again.trigger(.continuousScan) }
    // The second open (the read's); a read that never opens is ended by the suite's time limit.
    for await number in opens.opened where number >= 2 { break }
    try #require(opens.count.load(ordering: .relaxed) >= 2, "the continuous read never opened the camera")
    await again.close()
    #expect(Self.describe(await events.next()) == "removal")
    #expect(Self.describe(await events.next()) == "end")
    _ = await reading.result
  }
}
