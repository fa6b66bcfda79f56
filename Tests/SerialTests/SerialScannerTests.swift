import CaptureCore
import Drivers
import Simulators
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A simulated SPP scanner: the master side of a pseudo-terminal, on a number no other process holds
/// or names (Simulators' FreePTY). The driver opens the slave path as it would /dev/rfcommN or
/// /dev/ttyUSB0 (docs/architecture.md §5.3 "pseudo-terminals for serial ttys").
final class PseudoTerminal: @unchecked Sendable {
  private(set) var master: Int32
  let slavePath: String

  init() throws {
    (master, slavePath) = try FreePTY.open()
  }

  deinit { close() }

  func write(_ bytes: [UInt8]) throws {
    try bytes.withUnsafeBytes { raw in try SystemFile.writeAll(fd: master, raw) }
  }

  /// Whether the master takes more bytes now: false once the tty's buffers are full, when a write to
  /// it blocks.
  var acceptsMore: Bool {
    var pfd = pollfd(fd: master, events: Int16(POLLOUT), revents: 0)
    return Glibc.poll(&pfd, 1, 0) == 1 && pfd.revents & Int16(POLLOUT) != 0
  }

  /// The scanner goes away: the slave side sees a hangup.
  func close() {
    if master >= 0 { Glibc.close(master) }
    master = -1
  }
}

/// Everything a device's event stream delivered, collected in the background.
final class EventLog: Sendable {
  private let events = Mutex<[Event]>([])
  private let reader = Mutex<Task<Void, Never>?>(nil)

  init(_ stream: AsyncStream<Event>) {
    // The task holds the log until the stream finishes, which every device's close() ensures.
    let task = Task { [self] in
      for await event in stream { self.events.withLock { $0.append(event) } }
    }
    reader.withLock { $0 = task }
  }

  var all: [Event] { events.withLock { $0 } }
  var kinds: [EventKind] { all.map(\.kind) }

  /// Waits (`eventually`) until `condition` holds for the events so far; the events then.
  @discardableResult
  func wait(seconds: Double = 120, until condition: ([Event]) -> Bool) async -> [Event] {
    _ = await eventually(seconds: seconds) { condition(all) }
    return all
  }

  func waitForStreamEnd() async { await reader.withLock { $0 }?.value }
}

/// Polls `condition` (suspending, never blocking a thread) until it holds, at most `seconds`
/// (generous: the machine is shared); true when it did.
func eventually(seconds: Double = 120, _ condition: () -> Bool) async -> Bool {
  let deadline = ContinuousClock.now + .seconds(seconds)
  while !condition() {
    guard ContinuousClock.now < deadline else { return false }
    try? await Task.sleep(for: .milliseconds(20))
  }
  return true
}

func decoded(_ events: [Event]) -> [DecodedData] {
  events.compactMap { if case .decodedData(let data) = $0.payload { data } else { nil } }
}

func undecoded(_ events: [Event]) -> [UndecodedData] {
  events.compactMap { if case .undecodedData(let data) = $0.payload { data } else { nil } }
}

func errors(_ events: [Event]) -> [CaptureError] {
  events.compactMap { if case .error(let error) = $0.payload { error } else { nil } }
}

func openScanner(_ path: String, _ parameters: [String: String] = [:], reconnects: Bool = false)
  throws(CaptureError) -> SerialScanner
{
  var request = OpenRequest(selector: .serial(path: path, parameters: parameters))
  request.reconnects = reconnects
  return try SerialScanner.open(path: path, parameters: parameters, request: request)
}

@Suite(.serialized) struct SerialScannerTests {
  @Test func framedCodesBecomeDecodedDataWithTheirDataSource() async throws {
    let pty = try PseudoTerminal()
    let scanner = try openScanner(pty.slavePath, ["baud": "115200", "framing": "stx"])
    let log = EventLog(scanner.events)
    try pty.write(capturedFrame)
    try pty.write(frame("4006381333931", aim: "E0"))
    let events = await log.wait { decoded($0).count == 2 }
    #expect(decoded(events).map(\.bytes) == [capturedText, Array("4006381333931".utf8)])
    #expect(decoded(events).map(\.dataSource) == [.code128, .ean13])
    #expect(events.first?.kind == .deviceArrival)
    #expect(
      scanner.info
        == DeviceInfo(
          id: "serial:\(pty.slavePath)?baud=115200&framing=stx",
          name: "Serial scanner (\(pty.slavePath))", type: .none,
          model: "serial scanner \(pty.slavePath.dropFirst("/dev/".count))"))
    await scanner.close()
    await log.waitForStreamEnd()
    #expect(log.kinds == [.deviceArrival, .decodedData, .decodedData, .deviceRemoval])
  }

  @Test func lineModeAndAutoDetection() async throws {
    for framing in ["line", "auto"] {
      let pty = try PseudoTerminal()
      let scanner = try openScanner(pty.slavePath, ["framing": framing])
      let log = EventLog(scanner.events)
      // Raw mode: the CR reaches the driver as CR (no ICRNL), CRLF is one terminator.
      try pty.write(Array("0123456789\r\nABC-1\r".utf8))
      let events = await log.wait { decoded($0).count == 2 }
      #expect(decoded(events).map(\.text) == ["0123456789", "ABC-1"], "\(framing)")
      #expect(decoded(events).allSatisfy { $0.dataSource == .notSpecified })
      #expect(errors(events).isEmpty)
      await scanner.close()
    }
  }

  @Test func garbageIsUndecodedDataNotAnErrorAndTheFramesAroundItSurvive() async throws {
    let pty = try PseudoTerminal()
    let scanner = try openScanner(pty.slavePath, ["framing": "stx"])
    let log = EventLog(scanner.events)
    try pty.write(frame("FIRST") + [0xDE, 0xAD, 0x00] + frame("SECOND"))
    let events = await log.wait { decoded($0).count == 2 }
    #expect(decoded(events).map(\.text) == ["FIRST", "SECOND"])
    #expect(undecoded(events) == [UndecodedData(bytes: [0xDE, 0xAD, 0x00], origin: pty.slavePath)])
    #expect(errors(events).isEmpty)
    #expect(events.map(\.kind) == [.deviceArrival, .decodedData, .undecodedData, .decodedData])
    await scanner.close()
  }

  @Test func noiseLongerThanTheCapIsSeveralEventsWithEveryByte() async throws {
    let pty = try PseudoTerminal()
    let scanner = try openScanner(pty.slavePath, ["framing": "stx"])
    let log = EventLog(scanner.events)
    // 10,000 bytes without an STX: in stx framing all of it is noise.
    let noise = (0..<10_000).map { UInt8(0x20 + $0 % 90) }
    try pty.write(noise + frame("AFTER"))
    let events = await log.wait { decoded($0).count == 1 }
    let pieces = undecoded(events)
    #expect(pieces.map(\.bytes.count) == [4096, 4096, 1808])
    #expect(pieces.allSatisfy { $0.bytes.count <= UndecodedData.maximumBytes })
    #expect(pieces.flatMap(\.bytes) == noise)
    #expect(decoded(events).map(\.text) == ["AFTER"])
    await scanner.close()
  }

  @Test func stalledLyingLengthIsGivenUpAfterTheLineGoesQuiet() async throws {
    let pty = try PseudoTerminal()
    let scanner = try openScanner(pty.slavePath, ["framing": "stx"])
    let log = EventLog(scanner.events)
    var liar = frame("LIE")
    liar[1] = 0x02  // states 512+ bytes; nothing more comes
    try pty.write(liar + frame("GOOD"))
    let events = await log.wait { decoded($0).count == 1 }
    #expect(decoded(events).map(\.text) == ["GOOD"])
    await scanner.close()
  }

  /// The device disappears mid-frame. The partial frame is never decoded: its bytes, read before the
  /// hangup, are reported once as undecodedData (the parser's `finish`), then the removal,
  /// and the stream ends (no reconnects requested). The hangup comes right after the bytes were read,
  /// long before the 500 ms stall timeout on any machine, so this is the removal path, not the stall
  /// path.
  @Test func deviceDisappearingMidFrame() async throws {
    let pty = try PseudoTerminal()
    let scanner = try openScanner(pty.slavePath)
    let log = EventLog(scanner.events)
    // One write: its bytes reach the tty's line discipline together and the driver's read (4096 bytes)
    // takes them together, so once the whole frame is decoded the partial one has been read too. (Bytes
    // still in the tty when the master closes are lost with it.)
    let partial = Array(capturedFrame[..<25])
    try pty.write(frame("WHOLE") + partial)
    await log.wait { decoded($0).count == 1 }
    pty.close()
    await log.waitForStreamEnd()
    #expect(log.kinds == [.deviceArrival, .decodedData, .undecodedData, .deviceRemoval])
    #expect(decoded(log.all).map(\.text) == ["WHOLE"])
    #expect(undecoded(log.all) == [UndecodedData(bytes: partial, origin: pty.slavePath)])
    #expect(errors(log.all).isEmpty)
    await scanner.close()
    #expect(log.kinds.filter { $0 == .deviceRemoval }.count == 1)
  }

  /// A pty cannot come back at the same path, so a fixed path is a symlink re-pointed to a new pty, as
  /// udev re-creates /dev/serial/by-id links when an adapter is replugged.
  @Test func reconnectsWhenTheDeviceNodeComesBack() async throws {
    let temporary = TemporaryDirectory()
    let link = temporary.file("scanner")

    let first = try PseudoTerminal()
    #expect(symlink(first.slavePath, link) == 0)
    let scanner = try openScanner(link, ["framing": "auto"], reconnects: true)
    let log = EventLog(scanner.events)
    try first.write(capturedFrame)
    await log.wait { decoded($0).count == 1 }

    // Unplug: the link goes first so the driver cannot reopen the dying node.
    unlink(link)
    first.close()
    await log.wait { $0.last?.kind == .deviceRemoval }
    #expect(log.kinds == [.deviceArrival, .decodedData, .deviceRemoval])

    let second = try PseudoTerminal()
    #expect(symlink(second.slavePath, link) == 0)
    await log.wait { $0.filter { $0.kind == .deviceArrival }.count == 2 }
    try second.write(Array("AFTER-REPLUG\r\n".utf8))
    let events = await log.wait { decoded($0).count == 2 }
    #expect(decoded(events).map(\.text) == ["EQ0000013158", "AFTER-REPLUG"])
    await scanner.close()
    await log.waitForStreamEnd()
    #expect(
      log.kinds == [
        .deviceArrival, .decodedData, .deviceRemoval, .deviceArrival, .decodedData, .deviceRemoval,
      ])
  }

  @Test func openErrorsMapToTheirResultCodes() throws {
    #expect(throws: CaptureError(.fileNotFound, "serial device /dev/does-not-exist not found")) {
      try openScanner("/dev/does-not-exist")
    }
    let notATTY = #expect(throws: CaptureError.self) { try openScanner("/dev/null") }
    #expect(notATTY?.code == .communicationError)
    for (key, value) in [("baud", "12345"), ("parity", "mark"), ("framing", "xml"), ("databits", "7")] {
      do {
        // Parameters are checked before the path: a bad one is 18 even for a missing device.
        _ = try openScanner("/dev/does-not-exist", [key: value])
        Issue.record("\(key)=\(value) accepted")
      } catch {
        #expect(error.code == .invalidParameter, "\(key)=\(value)")
      }
    }
  }

  @Test func onlyDeviceTypeAndFriendlyNameAreReadable() async throws {
    let pty = try PseudoTerminal()
    let scanner = try openScanner(pty.slavePath)
    #expect(try await scanner.get(.deviceType, argument: .none) == .ulong(0))
    #expect(try await scanner.get(.friendlyNameDevice, argument: .none) == .string(pty.slavePath))
    let battery = await #expect(throws: CaptureError.self) {
      try await scanner.get(.batteryLevelDevice, argument: .none)
    }
    #expect(battery?.code == .notSupported)
    let trigger = await #expect(throws: CaptureError.self) { try await scanner.trigger(.start) }
    #expect(trigger?.code == .notSupported)
    await scanner.close()
  }
}
