import CaptureCore
import Drivers
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A scripted input device behind the EvdevSystem seam: open(2) hands out the read end of a pipe
/// (a fresh one per open, so a "replug" is a new pipe), EVIOCGRAB/EVIOCGNAME/EVIOCGID are answered
/// from the script, and read/poll/close are the real calls on the pipe.
final class FakeEvdev: EvdevSystem, @unchecked Sendable {
  struct Node {
    var name: String
    var vendor: UInt16 = 0
    var product: UInt16 = 0
    var openError: Int32? = nil
    var grabError: Int32? = nil
    /// A FIFO standing in for a scanner rather than an evdev node.
    var isStream = false
  }

  /// Live pipes by their read end (the descriptor the driver holds), in the order they were opened.
  private struct State {
    var nodes: [String: Node] = [:]
    var pipes: [(reader: Int32, writer: Int32, path: String)] = []
    var grabs: [Int32] = []
    /// poll(2) calls by the descriptor polled.
    var polls: [Int32: Int] = [:]
  }

  private let state = Mutex(State())
  private let real = LinuxEvdevSystem()

  init(_ nodes: [String: Node]) { state.withLock { $0.nodes = nodes } }

  func set(_ path: String, _ node: Node?) { state.withLock { $0.nodes[path] = node } }
  var grabbedDescriptors: [Int32] { state.withLock { $0.grabs } }

  /// The write end of the newest open pipe for `path` (the reader's, once identification has closed its
  /// own).
  func writer(_ path: String) -> Int32? { state.withLock { $0.pipes.last { $0.path == path }?.writer } }

  func write(_ path: String, _ events: [InputEvent]) throws {
    guard let fd = writer(path) else { throw Errno(EBADF) }
    let bytes = events.flatMap(\.bytes)
    try bytes.withUnsafeBytes { raw in try SystemFile.writeAll(fd: fd, raw) }
  }

  /// The scanner is unplugged: its writers close, so the reader sees end of file, and the node is gone.
  func unplug(_ path: String) {
    state.withLock { s in
      for i in s.pipes.indices where s.pipes[i].path == path && s.pipes[i].writer >= 0 {
        Glibc.close(s.pipes[i].writer)
        s.pipes[i].writer = -1
      }
      s.nodes[path] = nil
    }
  }

  func open(_ path: String) throws(Errno) -> Int32 {
    let result: Result<Int32, Errno> = state.withLock { s in
      guard let node = s.nodes[path] else { return .failure(Errno(ENOENT)) }
      if let code = node.openError { return .failure(Errno(code)) }
      var fds: [Int32] = [0, 0]
      guard pipe(&fds) == 0 else { return .failure(.current) }
      // As the real open: O_NONBLOCK | O_CLOEXEC on the reader's end.
      _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
      _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
      _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
      s.pipes.append((fds[0], fds[1], path))
      s.polls[fds[0]] = 0  // a descriptor number of a pipe closed before starts over
      return .success(fds[0])
    }
    return try result.get()
  }

  func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
    try real.read(fd, into: buffer)
  }

  func poll(_ fd: Int32, timeoutMilliseconds: Int32) throws(Errno) -> Int16 {
    state.withLock { $0.polls[fd, default: 0] += 1 }
    return try real.poll(fd, timeoutMilliseconds: timeoutMilliseconds)
  }

  /// How many times the driver has polled the newest open pipe for `path`.
  func polls(_ path: String) -> Int {
    state.withLock { s in s.pipes.last { $0.path == path }.map { s.polls[$0.reader] ?? 0 } ?? 0 }
  }

  /// Bytes written to the newest open pipe for `path` and not yet read by the driver.
  func unread(_ path: String) -> Int32 {
    guard let fd = writer(path) else { return 0 }
    var count: Int32 = 0
    return Glibc.ioctl(fd, UInt(FIONREAD), &count) == 0 ? count : -1
  }

  func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer?) throws(Errno) -> Int32 {
    let node: Node? = state.withLock { s in
      s.pipes.first { $0.reader == fd }.flatMap { s.nodes[$0.path] }
    }
    guard let node else { throw Errno(ENOTTY) }
    switch request {
    case EvdevRequest.grab:
      if let code = node.grabError { throw Errno(code) }
      state.withLock { $0.grabs.append(fd) }
      return 0
    case EvdevRequest.id:
      let ids: [UInt16] = [3, node.vendor, node.product, 1]  // BUS_USB 3
      ids.withUnsafeBytes { argument!.copyMemory(from: $0.baseAddress!, byteCount: 8) }
      return 0
    case EvdevRequest.name(length: 256):
      let bytes = Array(node.name.utf8) + [0]
      bytes.withUnsafeBytes { argument!.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
      return Int32(bytes.count)
    default:
      throw Errno(EINVAL)
    }
  }

  /// Closing the reader also closes its writer, so a test never writes into a pipe nobody reads.
  func close(_ fd: Int32) {
    state.withLock { s in
      if let i = s.pipes.firstIndex(where: { $0.reader == fd }) {
        if s.pipes[i].writer >= 0 { Glibc.close(s.pipes[i].writer) }
        s.pipes.remove(at: i)
      }
    }
    real.close(fd)
  }

  func inputDevicePaths() -> [String] { state.withLock { $0.nodes.keys.sorted() } }

  func isStream(_ path: String) -> Bool {
    state.withLock { $0.nodes[path]?.isStream ?? false }
  }
}

/// Everything a device's event stream delivered, gathered in the background.
final class Gathered: Sendable {
  private let events = Mutex<[Event]>([])
  private let task = Mutex<Task<Void, Never>?>(nil)

  init(_ stream: AsyncStream<Event>) {
    let t = Task { [self] in
      for await event in stream { self.events.withLock { $0.append(event) } }
    }
    task.withLock { $0 = t }
  }

  var all: [Event] { events.withLock { $0 } }
  var kinds: [EventKind] { all.map(\.kind) }
  var texts: [String] {
    all.compactMap { if case .decodedData(let d) = $0.payload { d.text } else { nil } }
  }
  var errors: [CaptureError] {
    all.compactMap { if case .error(let e) = $0.payload { e } else { nil } }
  }

  func wait(seconds: Double = 120, until condition: (Gathered) -> Bool) async {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline && !condition(self) {
      try? await Task.sleep(for: .milliseconds(10))
    }
  }

  func end() async { await task.withLock { $0 }?.value }
}

/// Key events for `codes` (evdev key codes), each pressed and released 5 ms apart, Shift around the
/// ones marked, from `start` microseconds.
func keys(_ codes: [(UInt16, Bool)], start: Int64 = 1_700_000_000_000_000) -> [InputEvent] {
  var t = start
  var out: [InputEvent] = []
  for (code, shifted) in codes {
    if shifted { out.append(.key(42, 1, at: t)) }
    out.append(.key(code, 1, at: t))
    out.append(InputEvent(microseconds: t, type: InputEvent.typeSync, code: 0, value: 0))
    t += 5000
    out.append(.key(code, 0, at: t))
    if shifted { out.append(.key(42, 0, at: t)) }
    t += 5000
  }
  return out
}

func wedge(
  _ selectorPath: String, _ system: FakeEvdev, keymap: String? = nil, reconnects: Bool = false,
  warnings: Warnings? = nil
) throws(CaptureError) -> KeyboardWedge {
  var request = OpenRequest(selector: .hid(path: selectorPath)) { message in warnings?.add(message) }
  request.keymap = keymap
  request.reconnects = reconnects
  return try KeyboardWedge.open(path: selectorPath, request: request, system: system)
}

let event3 = "/dev/input/event3"

final class Warnings: Sendable {
  private let messages = Mutex<[String]>([])
  func add(_ message: String) { messages.withLock { $0.append(message) } }
  var all: [String] { messages.withLock { $0 } }
}

@Suite(.serialized) struct KeyboardWedgeTests {
  @Test func scriptedKeysBecomeDecodedDataAndTheDeviceIsGrabbed() async throws {
    let fake = FakeEvdev([event3: .init(name: "Socket Mobile 7Ci", vendor: 0x0d6c, product: 0x0001)])
    let device = try wedge(event3, fake)
    let log = Gathered(device.events)
    #expect(fake.grabbedDescriptors.count == 1)
    #expect(device.info.name == "Socket Mobile 7Ci")
    // The input device's name (EVIOCGNAME) is its model: type None has no name of its own.
    #expect(device.info.model == "Socket Mobile 7Ci")
    #expect(device.info.type == .none)
    // "Hello-123" Enter, written with a record split across two writes.
    let bytes = keys([
      (35, true), (18, false), (38, false), (38, false), (24, false), (12, false),
      (2, false), (3, false), (4, false), (28, false),
    ]).flatMap(\.bytes)
    let fd = try #require(fake.writer(event3))
    try bytes[..<37].withUnsafeBytes { try SystemFile.writeAll(fd: fd, $0) }
    // The driver has read the first part (the pipe is empty) before the rest is written.
    await log.wait { _ in fake.unread(event3) == 0 }
    #expect(fake.unread(event3) == 0, "the driver never read the first part of the record")
    try bytes[37...].withUnsafeBytes { try SystemFile.writeAll(fd: fd, $0) }
    await log.wait { $0.texts.count == 1 }
    #expect(log.texts == ["Hello-123"])
    if case .decodedData(let data) = log.all.last?.payload {
      #expect(data.dataSource == .notSpecified)
    }
    await device.close()
    await log.end()
    #expect(log.kinds == [.deviceArrival, .decodedData, .deviceRemoval])
  }

  @Test func keymapFromTheQueryWinsOverTheOption() async throws {
    let fake = FakeEvdev([event3: .init(name: "Honeywell Scanner")])
    let device = try wedge("\(event3)?keymap=de&timeout=50ms", fake, keymap: "fr")
    let log = Gathered(device.events)
    // y z on a German board: KEY_Z types y, KEY_Y types z; ü on KEY_LEFTBRACE.
    try fake.write(event3, keys([(44, false), (21, false), (26, false), (28, false)]))
    await log.wait { $0.texts.count == 1 }
    #expect(log.texts == ["yzü"])
    await device.close()
  }

  @Test func optionKeymapApplies() async throws {
    let fake = FakeEvdev([event3: .init(name: "Datalogic")])
    let device = try wedge(event3, fake, keymap: "fr")
    let log = Gathered(device.events)
    try fake.write(event3, keys([(2, true), (3, true), (16, false), (28, false)]))
    await log.wait { $0.texts.count == 1 }
    #expect(log.texts == ["12a"])
    await device.close()
  }

  @Test func unmappedKeysArriveAsAnErrorNamingThem() async throws {
    let fake = FakeEvdev([event3: .init(name: "Zebra DS2208")])
    let device = try wedge(event3, fake)
    let log = Gathered(device.events)
    try fake.write(event3, keys([(30, false), (59, false), (31, false), (28, false)]))  // a F1 s
    await log.wait { !$0.errors.isEmpty }
    #expect(log.texts == ["as"])
    #expect(log.errors.count == 1)
    #expect(log.errors.first?.code == .invalidFormat)
    #expect(log.errors.first?.message.contains("unmapped: [59]") == true)
    await device.close()
  }

  @Test func aCodeWithoutEnterEndsWhenTheKeysStop() async throws {
    let fake = FakeEvdev([event3: .init(name: "Newland")])
    let device = try wedge("\(event3)?timeout=40ms", fake)
    let log = Gathered(device.events)
    try fake.write(event3, keys([(2, false), (3, false)]))
    await log.wait(seconds: 2) { $0.texts.count == 1 }
    #expect(log.texts == ["12"])
    await device.close()
  }

  @Test func unplugEndsTheStreamWithoutReconnect() async throws {
    let fake = FakeEvdev([event3: .init(name: "Symbol")])
    let device = try wedge(event3, fake)
    let log = Gathered(device.events)
    try fake.write(event3, keys([(2, false), (28, false)]))
    await log.wait { $0.texts.count == 1 }
    fake.unplug(event3)
    await log.end()
    #expect(log.kinds == [.deviceArrival, .decodedData, .deviceRemoval])
    await device.close()
  }

  @Test func listenReconnectsWhenTheNodeReturns() async throws {
    let fake = FakeEvdev([event3: .init(name: "Barcode Reader")])
    let device = try wedge(event3, fake, reconnects: true)
    let log = Gathered(device.events)
    fake.unplug(event3)
    await log.wait { $0.kinds.contains(.deviceRemoval) }
    fake.set(event3, .init(name: "Barcode Reader"))
    await log.wait { $0.kinds.filter { $0 == .deviceArrival }.count == 2 }
    try fake.write(event3, keys([(4, false), (28, false)]))
    await log.wait { $0.texts.count == 1 }
    await device.close()
    await log.end()
    #expect(log.kinds == [.deviceArrival, .deviceRemoval, .deviceArrival, .decodedData, .deviceRemoval])
    #expect(log.texts == ["3"])
  }

  @Test func aReopenedFIFOArrivesOnlyWithItsFirstEvents() async throws {
    let fifo = FakeEvdev.Node(name: "fifo", grabError: ENOTTY, isStream: true)
    let fake = FakeEvdev([event3: fifo])
    let device = try wedge(event3, fake, reconnects: true)
    let log = Gathered(device.events)
    fake.unplug(event3)
    await log.wait { $0.kinds.contains(.deviceRemoval) }
    fake.set(event3, fifo)
    // Reopened (the fake's pipe has a writer) but quiet: no arrival yet. The driver has polled the new
    // pipe twice, so it is back in its read loop, past where it would have announced an arrival.
    await log.wait { _ in fake.polls(event3) >= 2 && fake.writer(event3) != nil }
    #expect(log.kinds == [.deviceArrival, .deviceRemoval])
    try fake.write(event3, keys([(5, false), (28, false)]))
    await log.wait { $0.texts.count == 1 }
    #expect(log.kinds == [.deviceArrival, .deviceRemoval, .deviceArrival, .decodedData])
    await device.close()
  }

  @Test func autoPicksANodeNamedLikeAScanner() async throws {
    let fake = FakeEvdev([
      "/dev/input/event0": .init(name: "AT Translated Set 2 keyboard"),
      "/dev/input/event5": .init(name: "Honeywell Imaging 1900", vendor: 0x0c2e, product: 0x0b01),
    ])
    let device = try wedge("auto", fake)
    #expect(device.info.name == "Honeywell Imaging 1900")
    #expect(device.info.id == "hid:auto")
    await device.close()
    let none = FakeEvdev(["/dev/input/event0": .init(name: "Power Button")])
    let error = #expect(throws: CaptureError.self) { try wedge("auto", none) }
    #expect(error?.code == .notFound)
  }

  @Test func openErrorsMapToResultCodes() throws {
    let cases: [(FakeEvdev.Node?, ResultCode, String)] = [
      (nil, .fileNotFound, "not found"),
      (.init(name: "x", openError: EACCES), .fileAccessDenied, "'input' group"),
      (.init(name: "x", grabError: EBUSY), .notAvailable, "grabbed by another program"),
      (.init(name: "x", grabError: ENOTTY), .communicationError, "not an input event device"),
    ]
    for (node, code, words) in cases {
      let fake = FakeEvdev(node.map { [event3: $0] } ?? [:])
      do throws(CaptureError) {
        _ = try wedge(event3, fake)
        Issue.record("opened with \(String(describing: node))")
      } catch {
        #expect(error.code == code)
        #expect(error.message.contains(words), "\(error.message)")
      }
    }
  }

  @Test func aFIFOIsReadWithoutAGrabAndAWarning() async throws {
    let fake = FakeEvdev([event3: .init(name: "fifo", grabError: ENOTTY, isStream: true)])
    let warnings = Warnings()
    let device = try wedge(event3, fake, warnings: warnings)
    #expect(warnings.all.first?.contains("no grab possible") == true)
    await device.close()
  }

  @Test func badParametersAreUsageErrors() {
    for path in [
      "\(event3)?keymap=xx", "\(event3)?timeout=0ms", "\(event3)?timeout=abc", "\(event3)?bogus=1",
    ] {
      do throws(CaptureError) {
        _ = try WedgeSettings.parse(path, defaultKeymap: nil)
        Issue.record("accepted \(path)")
      } catch {
        #expect(error.code == .invalidParameter)
      }
    }
    let bogus = #expect(throws: CaptureError.self) { try DeviceSelector.parse("hid:\(event3)?bogus=1") }
    #expect(bogus?.code == .invalidParameter)
    #expect((try? DeviceSelector.parse("hid:\(event3)?keymap=de")) == .hid(path: "\(event3)?keymap=de"))
  }

  @Test func scanListsNamesAndIDs() {
    let fake = FakeEvdev([
      "/dev/input/event1": .init(name: "Socket Mobile S700", vendor: 0x0d6c, product: 0x0ea0),
      "/dev/input/event2": .init(name: "Sleep Button"),
      "/dev/input/event4": .init(name: "locked", openError: EACCES),
    ])
    let (devices, unreadable) = EvdevIdentity.scan(system: fake)
    #expect(devices.map(\.name) == ["Socket Mobile S700", "Sleep Button"])
    #expect(devices.map(\.isScanner) == [true, false])
    #expect(devices[0].vendorID == 0x0d6c && devices[0].productID == 0x0ea0)
    #expect(unreadable == ["/dev/input/event4"])
  }

  @Test func ioctlNumbersMatchLinuxInputH() {
    // Values as the C preprocessor computes them from linux/input.h on x86_64.
    #expect(EvdevRequest.grab == 0x4004_4590)
    #expect(EvdevRequest.id == 0x8008_4502)
    #expect(EvdevRequest.name(length: 256) == 0x8100_4506)
  }
}
