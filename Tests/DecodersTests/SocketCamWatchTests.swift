// SocketCam on a watched directory (`serve --dir`), its background scans (TriggerDevice start/stop as
// a camera scan) and the engine's SocketCamStatus for a service. Real files, written while the watch
// runs; every "not read" is proved by order: a marker file written after it is the next code decoded.

import CaptureCore
import Glibc
import Synchronization
import TestSupport
import Testing

@testable import Drivers

@Suite("SocketCam watched directory, background scans, SocketCamStatus", .timeLimit(.minutes(10)))
struct SocketCamWatchTests {
  // MARK: the watch

  @Test("files renamed into the watched directory are decoded once each, in arrival order")
  func renamedInOrder() async throws {
    let rig = try await Rig()
    try await rig.cam.trigger(.continuousScan)
    for text in ["first", "second", "third"] { try rig.renameIn(text + ".png", text) }
    var seen: [String] = []
    for _ in 0..<3 { seen.append(try await rig.nextCode()) }
    #expect(seen == ["first", "second", "third"])
    #expect(rig.origins == ["first.png", "second.png", "third.png"].map { rig.watched.file($0) })
    #expect(rig.warnings.isEmpty)
  }

  @Test("a file written in place is decoded once, after it is closed, never half-written")
  func writtenInPlace() async throws {
    let rig = try await Rig()
    try await rig.cam.trigger(.continuousScan)
    let image = try rig.qr("in place")
    let fd = open(rig.watched.file("slow.png"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    try #require(fd >= 0)
    try writeAll(fd, Array(image[..<(image.count / 2)]))
    // Half of it is there: the next code decoded is the marker renamed in after it, not the half file.
    try rig.renameIn("marker-1.png", "marker 1")
    #expect(try await rig.nextCode() == "marker 1")
    try writeAll(fd, Array(image[(image.count / 2)...]))
    close(fd)
    #expect(try await rig.nextCode() == "in place")
    try rig.renameIn("marker-2.png", "marker 2")
    #expect(try await rig.nextCode() == "marker 2")
    #expect(
      rig.origins == [
        rig.watched.file("marker-1.png"), rig.watched.file("slow.png"), rig.watched.file("marker-2.png"),
      ])
    #expect(rig.warnings.isEmpty && rig.errors.isEmpty)
  }

  @Test("a file seen again unchanged (renamed, closed again, created empty first) is decoded once")
  func decodedOnce() async throws {
    let rig = try await Rig()
    try await rig.cam.trigger(.continuousScan)
    // `touch` first: an empty file closed after "writing" is skipped silently, read once it has content.
    let touched = open(rig.watched.file("later.png"), O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
    try #require(touched >= 0)
    close(touched)
    _ = try rig.watched.write("later.png", try rig.qr("later"))
    #expect(try await rig.nextCode() == "later")
    // A temporary name that is not a dot file is read when it is closed; renamed, it is the same file.
    _ = try rig.watched.write("upload.tmp", try rig.qr("upload"))
    #expect(try await rig.nextCode() == "upload")
    #expect(rename(rig.watched.file("upload.tmp"), rig.watched.file("upload.png")) == 0)
    // Opened for writing and closed with no write: IN_CLOSE_WRITE again, same contents.
    let again = open(rig.watched.file("upload.png"), O_WRONLY | O_CLOEXEC)
    try #require(again >= 0)
    close(again)
    try rig.renameIn("marker.png", "marker")
    #expect(try await rig.nextCode() == "marker")
    #expect(
      rig.origins == [
        rig.watched.file("later.png"), rig.watched.file("upload.tmp"), rig.watched.file("marker.png"),
      ])
    #expect(rig.warnings.isEmpty && rig.errors.isEmpty)
  }

  @Test("files already there are not read; dot files are skipped silently, non-images with a warning")
  func skipped() async throws {
    let rig = try await Rig()
    _ = try rig.watched.write("before.png", try rig.qr("before"))
    try await rig.cam.trigger(.continuousScan)
    _ = try rig.watched.write(".hidden.png", try rig.qr("hidden"))
    _ = try rig.watched.write("notes.txt", Array("not an image\n".utf8))
    #expect(mkdir(rig.watched.file("sub"), 0o755) == 0)
    defer { rmdir(rig.watched.file("sub")) }
    try rig.renameIn("marker.png", "marker")
    #expect(try await rig.nextCode() == "marker")
    #expect(rig.origins == [rig.watched.file("marker.png")])
    #expect(rig.warnings == ["skipping '\(rig.watched.file("notes.txt"))': not a PNG, JPEG or PNM image"])
    #expect(rig.errors.isEmpty)
  }

  @Test("a missing watched directory is an error event naming it (FILENOTFOUND -63)")
  func missingDirectory() async throws {
    let rig = try await Rig(directory: "/nonexistent-capture-watch")
    try await rig.cam.trigger(.continuousScan)
    let error = try await rig.nextError()
    #expect(error.code == .fileNotFound)
    #expect(
      error.message == "cannot watch directory '/nonexistent-capture-watch': No such file or directory")
  }

  @Test("the watched directory removed ends the watch with an error event; the device stays")
  func directoryRemoved() async throws {
    let rig = try await Rig()
    try await rig.cam.trigger(.continuousScan)
    #expect(rmdir(rig.watched.path) == 0)
    let error = try await rig.nextError()
    #expect(error.code == .fileNotFound)
    #expect(
      error.message
        == "watched directory '\(rig.watched.path)' is gone (removed, moved or unmounted); it is no longer read"
    )
    #expect(mkdir(rig.watched.path, 0o700) == 0)
    try await rig.cam.trigger(.continuousScan)
    try rig.renameIn("back.png", "back")
    #expect(try await rig.nextCode() == "back")
  }

  @Test("inotify records are parsed by their lengths; a short or lying buffer ends the parse")
  func parse() {
    func record(_ wd: Int32, _ mask: UInt32, _ name: [UInt8], length: UInt32? = nil) -> [UInt8] {
      var bytes: [UInt8] = []
      withUnsafeBytes(of: wd) { bytes += $0 }
      withUnsafeBytes(of: mask) { bytes += $0 }
      withUnsafeBytes(of: UInt32(0)) { bytes += $0 }
      let padded = name + [UInt8](repeating: 0, count: 16 - name.count % 16)
      withUnsafeBytes(of: length ?? UInt32(padded.count)) { bytes += $0 }
      return bytes + padded
    }
    let buffer =
      record(1, UInt32(IN_CLOSE_WRITE), Array("a.png".utf8))
      + record(1, UInt32(IN_MOVED_TO), Array("b.png".utf8))
      + record(-1, UInt32(IN_Q_OVERFLOW), []) + record(1, UInt32(IN_IGNORED), [])
      + record(2, UInt32(IN_CLOSE_WRITE), Array("c".utf8), length: 4096)
    #expect(
      DirectoryWatch.parse(buffer[...]) == [
        .arrived(wd: 1, name: Array("a.png".utf8)), .arrived(wd: 1, name: Array("b.png".utf8)), .overflow,
        .gone(wd: 1),
      ])
    #expect(DirectoryWatch.parse(buffer[..<10]) == [])
  }

  // MARK: trigger semantics

  @Test("start reads until the first code; files that arrive while no scan runs are never read")
  func startUntilFirstRead() async throws {
    let rig = try await Rig()
    try await rig.cam.trigger(.start)
    try rig.renameIn("one.png", "one")
    #expect(try await rig.nextCode() == "one")
    // The scan ended at its first read: "two" arrives with no scan running.
    try rig.renameIn("two.png", "two")
    try await rig.cam.trigger(.start)
    try rig.renameIn("three.png", "three")
    #expect(try await rig.nextCode() == "three")
    #expect(rig.origins == [rig.watched.file("one.png"), rig.watched.file("three.png")])
    #expect(rig.removals == 0)
  }

  @Test("stop ends a continuous scan and returns once it has ended; a stop with no scan does nothing")
  func stopEndsContinuous() async throws {
    let rig = try await Rig()
    try await rig.cam.trigger(.stop)
    try await rig.cam.trigger(.continuousScan)
    try rig.renameIn("a.png", "a")
    try rig.renameIn("b.png", "b")
    #expect(try await rig.nextCode() == "a")
    #expect(try await rig.nextCode() == "b")
    try await rig.cam.trigger(.stop)
    try rig.renameIn("while-stopped.png", "while stopped")
    try await rig.cam.trigger(.continuousScanUntilRead)
    try rig.renameIn("c.png", "c")
    #expect(try await rig.nextCode() == "c")
    #expect(rig.origins == ["a.png", "b.png", "c.png"].map { rig.watched.file($0) })
    #expect(rig.removals == 0)
  }

  @Test("close during a scan ends it: the removal is the last event")
  func closeDuringScan() async throws {
    let rig = try await Rig()
    try await rig.cam.trigger(.continuousScan)
    await rig.cam.close()
    #expect(describe(try await rig.next()) == "removal socketcam")
    #expect(describe(try await rig.next()) == "end")
  }

  @Test("listen's trigger (not in the background): cancelling the caller ends the watch, then the device")
  func cancelledWatch() async throws {
    let rig = try await Rig(background: false)
    let cam = rig.cam
    let scan = Task { try await cam.trigger(.continuousScan) }
    // This trigger returns only when the scan ends, so nothing says when the watch is armed: files are
    // renamed in one after another (paced, not timed) until the first is decoded.
    let dirs = rig.dirs
    let writer = Task {
      var n = 0
      while !Task.isCancelled {
        n += 1
        try dirs.renameIn("seen-\(n).png", "seen")
        try await Task.sleep(for: .milliseconds(50))
      }
    }
    #expect(try await rig.nextCode() == "seen")
    writer.cancel()
    _ = await writer.result
    scan.cancel()
    // Returns: the poll(2) woke on the cancellation's pipe. A continuous scan that ended closes the device.
    try await scan.value
    var rest: [String] = []
    while true {
      let event = try await rig.next()
      rest.append(describe(event))
      if event == nil { break }
    }
    // Codes decoded before the cancellation may still be in the stream; then the removal ends it.
    #expect(rest.suffix(2) == ["removal socketcam", "end"])
    #expect(rest.dropLast(2).allSatisfy { $0 == "code seen" })
  }

  @Test("a disabled SocketCam does not scan (ESKT_NOTAVAILABLE -32)")
  func disabledDoesNotScan() async throws {
    let rig = try await Rig()
    _ = try rig.store.update { (s: inout StateFile) throws(CaptureError) in s.socketCam.status = 1 }
    let reopened = try await DriverRegistry().open(rig.request, state: rig.store)
    do {
      try await reopened.trigger(.start)
      Issue.record("a disabled SocketCam scanned")
    } catch {
      #expect(error.code == .notAvailable)
    }
    await reopened.close()
  }

  // MARK: the engine's SocketCamStatus

  @Test("a service's SocketCam follows SocketCamStatus: enable publishes its arrival, disable its removal")
  func engineEnableDisable() async throws {
    let dirs = Dirs()
    let engine = dirs.engine(sources: [.watchedDirectory(FilePath(dirs.watched.path))])
    let subscription = engine.subscribe("test", policy: .dropWhenBehind(limit: 64))
    var events = subscription.events.makeAsyncIterator()
    try engine.startService()
    await engine.socketCamSettled()
    // Enable is the default setting: the service starts with SocketCam.
    #expect(describe(await events.next()) == "arrival socketcam")
    #expect(engine.openDevices.map(\.info.id) == ["socketcam"])
    #expect(try engine.socketCamStatus() == .enable)

    try await engine.setSocketCamStatus(.disable)
    #expect(describe(await events.next()) == "removal socketcam")
    #expect(engine.openDevices.isEmpty)
    #expect(try dirs.store.load().socketCam.status == 1)
    #expect(try engine.socketCamStatus() == .disable)
    try await engine.setSocketCamStatus(.disable)  // already so: nothing happens

    try await engine.setSocketCamStatus(.enable)
    #expect(describe(await events.next()) == "arrival socketcam")
    #expect(try dirs.store.load().socketCam.status == 0)
    // TriggerDevice Start (1) set on the device the engine opened, as a web app sets it: the set
    // returns once the scan reads, and the code reaches the subscriber.
    let cam = try #require(engine.device(id: "socketcam"))
    try await cam.set(.triggerDevice, .byte(Trigger.start.rawValue))
    try dirs.renameIn("code.png", "through the engine")
    #expect(describe(await events.next()) == "code through the engine")

    await engine.stop()
    #expect(describe(await events.next()) == "removal socketcam")
    #expect(describe(await events.next()) == "end")
    await #expect(throws: CaptureError.self) { try await engine.setSocketCamStatus(.enable) }
  }

  @Test(
    "persisted Disable: the service starts without SocketCam; SIGHUP and its own handle follow the setting")
  func engineFollowsStateFile() async throws {
    let dirs = Dirs()
    _ = try dirs.store.update { (s: inout StateFile) throws(CaptureError) in s.socketCam.status = 1 }
    let engine = dirs.engine(sources: [.watchedDirectory(FilePath(dirs.watched.path))])
    let subscription = engine.subscribe("test", policy: .dropWhenBehind(limit: 64))
    var events = subscription.events.makeAsyncIterator()
    try engine.startService()
    await engine.socketCamSettled()
    #expect(engine.openDevices.isEmpty)
    // `capture set socketcam socket-cam-status enable` in another process, then SIGHUP.
    _ = try dirs.store.update { (s: inout StateFile) throws(CaptureError) in s.socketCam.status = 0 }
    engine.reload()
    await engine.socketCamSettled()
    #expect(describe(await events.next()) == "arrival socketcam")
    // Disabled through the device's own handle: it leaves as the engine would make it leave.
    let cam = try #require(engine.device(id: "socketcam"))
    try await cam.set(.socketCamStatus, .byte(SocketCamStatus.disable.rawValue))
    #expect(describe(await events.next()) == "removal socketcam")
    #expect(try dirs.store.load().socketCam.status == 1)
    await engine.socketCamSettled()
    #expect(engine.openDevices.isEmpty)
    try await engine.setSocketCamStatus(.enable)
    #expect(describe(await events.next()) == "arrival socketcam")
    await engine.stop()
  }

  @Test(
    "without a SOURCE: SocketCamStatus reads NotSupported, Enable fails with ESKT_NOTSUPPORTED and persists nothing"
  )
  func engineWithoutSource() async throws {
    let dirs = Dirs()
    _ = try dirs.store.update { (s: inout StateFile) throws(CaptureError) in s.socketCam.status = 1 }
    let engine = dirs.engine(sources: [])
    #expect(try engine.socketCamStatus() == .notSupported)
    do {
      try await engine.setSocketCamStatus(.enable)
      Issue.record("enable without a source succeeded")
    } catch {
      #expect(error.code == .notSupported)
      #expect(
        error.message
          == "SocketCam has no frame source here: start the service with --camera /dev/videoN or --dir DIR")
    }
    #expect(try dirs.store.load().socketCam.status == 1)
    do {
      try await engine.setSocketCamStatus(.notSupported)
      Issue.record("setting not-supported succeeded")
    } catch {
      #expect(error.code == .invalidParameter)
    }
    try await engine.setSocketCamStatus(.disable)
    #expect(engine.openDevices.isEmpty)
    // Nothing remembered and no SOURCE: the service still has nothing to listen to.
    #expect(throws: CaptureError.self) { try engine.startService() }
  }
}

// MARK: rigs

/// Two private directories: the watched one, and one where images are made before they are renamed in
/// (the same file system, /tmp), plus a state directory.
private final class Dirs: Sendable {
  let watched = TemporaryDirectory()
  let stash = TemporaryDirectory()
  let state = TemporaryDirectory()
  var store: StateStore { StateStore(directory: state.path + "/capture") }

  /// A QR code image (qrencode) holding `text`, as PNG bytes.
  func qr(_ text: String) throws -> [UInt8] {
    let path = stash.file("qr-\(UInt64.random(in: 0...UInt64.max)).png")
    try run(["qrencode", "-s", "6", "-m", "4", "-o", path, text])
    defer { unlink(path) }
    return try readAll(path)
  }

  /// Writes the image in the stash, then renames it into the watched directory (one IN_MOVED_TO).
  func renameIn(_ name: String, _ text: String) throws {
    let made = try stash.write("ready-\(name)", try qr(text))
    guard rename(made, watched.file(name)) == 0 else {
      throw TestFailure("rename to \(name): \(String(cString: strerror(errno)))")
    }
  }

  func engine(sources: [FrameSourceItem]) -> CaptureEngine {
    CaptureEngine(
      system: DriverSystem(), store: store,
      configuration: .init(idleCheck: .seconds(60), socketCamSources: sources))
  }
}

/// A SocketCam on the watched directory (scanning in the background, as a service opens it, unless
/// `background` is false) and what it says.
private final class Rig {
  let dirs: Dirs
  let cam: any Device
  let request: OpenRequest
  private let said: Recorder
  private var events: AsyncStream<Event>.Iterator
  private var decoded: [DecodedData] = []
  private(set) var errors: [CaptureError] = []
  private(set) var removals = 0

  var watched: TemporaryDirectory { dirs.watched }
  var store: StateStore { dirs.store }
  var warnings: [String] { said.lines }
  var origins: [String?] { decoded.map(\.origin) }

  init(directory: String? = nil, background: Bool = true) async throws {
    let dirs = Dirs()
    let said = Recorder()
    var request = OpenRequest(
      selector: .socketCam, frameSources: [.watchedDirectory(FilePath(directory ?? dirs.watched.path))],
      warn: { text in said.add(text) })
    request.scansInBackground = background
    let cam = try await DriverRegistry().open(request, state: dirs.store)
    (self.dirs, self.said, self.request, self.cam) = (dirs, said, request, cam)
    events = cam.events.makeAsyncIterator()
    let first = await events.next()
    try #require(describe(first) == "arrival socketcam")
  }

  func qr(_ text: String) throws -> [UInt8] { try dirs.qr(text) }
  func renameIn(_ name: String, _ text: String) throws { try dirs.renameIn(name, text) }

  /// The next event of the device (nil once its stream ended), recorded.
  func next() async throws -> Event? {
    let event = await events.next()
    switch event?.payload {
    case .decodedData(let data): decoded.append(data)
    case .error(let error): errors.append(error)
    case .deviceRemoval: removals += 1
    default: break
    }
    return event
  }

  /// The text of the next decoded code; any other event before it fails the test.
  func nextCode() async throws -> String {
    let event = try await next()
    guard case .decodedData(let data) = event?.payload else {
      throw TestFailure("expected decoded data, got \(describe(event))")
    }
    return String(decoding: data.bytes, as: UTF8.self)
  }

  func nextError() async throws -> CaptureError {
    let event = try await next()
    guard case .error(let error) = event?.payload else {
      throw TestFailure("expected an error, got \(describe(event))")
    }
    return error
  }
}

private final class Recorder: Sendable {
  private let list = Mutex<[String]>([])
  func add(_ line: String) { list.withLock { $0.append(line) } }
  var lines: [String] { list.withLock { $0 } }
}

/// An event as the tests compare it.
private func describe(_ event: Event?) -> String {
  guard let event else { return "end" }
  switch event.payload {
  case .deviceArrival: return "arrival \(event.device.id)"
  case .deviceRemoval: return "removal \(event.device.id)"
  case .decodedData(let data): return "code \(String(decoding: data.bytes, as: UTF8.self))"
  case .error(let error): return "error \(error.code) \(error.message)"
  default: return "other event"
  }
}

private func readAll(_ path: String) throws -> [UInt8] {
  let fd = open(path, O_RDONLY | O_CLOEXEC)
  guard fd >= 0 else { throw TestFailure("open \(path): \(String(cString: strerror(errno)))") }
  defer { close(fd) }
  var bytes: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 65536)
  while true {
    let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    if n < 0 && errno == EINTR { continue }
    guard n >= 0 else { throw TestFailure("read \(path): \(String(cString: strerror(errno)))") }
    if n == 0 { return bytes }
    bytes += chunk[..<n]
  }
}

private func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws {
  var offset = 0
  while offset < bytes.count {
    let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
    if n < 0 && errno == EINTR { continue }
    guard n > 0 else { throw TestFailure("write: \(String(cString: strerror(errno)))") }
    offset += n
  }
}
