// `hid:` keyboard-wedge scanners through the built binary. No evdev node exists here (and EVIOCGRAB
// needs a real one), so a FIFO plays the scanner: capture accepts a path that is not a character
// device, warns that no grab is possible, and reads the same 24-byte input_event records from it.

import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Key codes from linux/input-event-codes.h, written as struct input_event records (x86_64: timeval
/// 16 bytes, type u16, code u16, value s32; little-endian).
private func record(_ microseconds: Int64, _ type: UInt16, _ code: UInt16, _ value: Int32) -> [UInt8] {
  var out: [UInt8] = []
  func put<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
  put(microseconds / 1_000_000)
  put(microseconds % 1_000_000)
  put(type)
  put(code)
  put(value)
  return out
}

/// Taps each key (Shift held for the marked ones), 5 ms apart, as a scanner types.
private func typing(_ keys: [(code: UInt16, shift: Bool)]) -> [UInt8] {
  var t: Int64 = 1_700_000_000_000_000
  var out: [UInt8] = []
  for key in keys {
    if key.shift { out += record(t, 1, 42, 1) }
    out += record(t, 1, key.code, 1) + record(t, 0, 0, 0)
    t += 5000
    out += record(t, 1, key.code, 0) + record(t, 0, 0, 0)
    if key.shift { out += record(t, 1, 42, 0) }
    t += 5000
  }
  return out
}

/// The scanner side of a FIFO: waits for capture to open the read end (opening for writing without
/// blocking fails with ENXIO until then), writes, and closes: the device is then unplugged.
private func playScanner(_ path: String, _ bytes: [UInt8], seconds: Double = 120) async -> Bool {
  let deadline = Date().addingTimeInterval(seconds)
  while Date() < deadline {
    let fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
    if fd >= 0 {
      defer { close(fd) }
      var offset = 0
      while offset < bytes.count {
        let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
        guard n > 0 else { return false }
        offset += n
      }
      return true
    }
    try? await Task.sleep(for: .milliseconds(20))
  }
  return false
}

private let noGrabWarning = "is not an evdev node: no grab possible, reading its key events as they come"

@Suite("Keyboard-wedge (hid:) scanners on a FIFO")
struct HIDTests {
  @Test("--json listen hid:FIFO --count 2: decodedData events with dataSource NotSpecified")
  func listenDecodesTwoCodes() async throws {
    let sandbox = try Sandbox()
    let fifo = sandbox.path("scanner")
    #expect(mkfifo(fifo, 0o600) == 0)
    // "Hello-123" Enter "a" Enter (us).
    let bytes = typing([
      (35, true), (18, false), (38, false), (38, false), (24, false), (12, false), (2, false), (3, false),
      (4, false), (28, false), (30, false), (28, false),
    ])
    let writer = Task { await playScanner(fifo, bytes) }
    let outcome = try await sandbox.capture(["--json", "listen", "hid:\(fifo)", "--count", "2"])
    #expect(await writer.value, "capture never opened \(fifo)")
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.errLines == ["capture: \(fifo) \(noGrabWarning)"], "\(outcome)")
    let events = Shape.jsonLines(outcome)
    #expect(
      events.map { $0["event"]?.string ?? "?" } == [
        "deviceArrival", "decodedData", "decodedData", "deviceRemoval",
      ])
    let decoded = events.filter { $0["event"]?.string == "decodedData" }
    #expect(decoded.map { $0["text"]?.string } == ["Hello-123", "a"])
    #expect(
      decoded.map { $0["bytes"]?.string } == [
        Data("Hello-123".utf8).base64EncodedString(), Data("a".utf8).base64EncodedString(),
      ])
    #expect(
      decoded.allSatisfy {
        $0["dataSource"] == .object([("id", .number("0")), ("name", .string("Not Specified"))])
      })
    #expect(decoded.allSatisfy { $0["device"]?["id"]?.string == "hid:\(fifo)" })
    #expect(decoded.allSatisfy { $0["origin"]?.string == fifo })
  }

  @Test("listen --keymap de hid:FIFO: plain lines, ü and ß from their keys, y and z swapped")
  func germanKeymap() async throws {
    let sandbox = try Sandbox()
    let fifo = sandbox.path("scanner")
    #expect(mkfifo(fifo, 0o600) == 0)
    // G r ü ß e Enter, then KEY_Z KEY_Y Enter.
    let bytes = typing([
      (34, true), (19, false), (26, false), (12, false), (18, false), (28, false), (44, false), (21, false),
      (28, false),
    ])
    let writer = Task { await playScanner(fifo, bytes) }
    let outcome = try await sandbox.capture(["listen", "--keymap", "de", "hid:\(fifo)", "--count", "2"])
    #expect(await writer.value)
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.outLines == ["Grüße", "yz"], "\(outcome)")
  }

  @Test("the selector's ?keymap=fr wins over --keymap us")
  func queryKeymap() async throws {
    let sandbox = try Sandbox()
    let fifo = sandbox.path("scanner")
    #expect(mkfifo(fifo, 0o600) == 0)
    let bytes = typing([(2, true), (2, false), (16, false), (28, false)])  // 1 & a
    let writer = Task { await playScanner(fifo, bytes) }
    let outcome = try await sandbox.capture([
      "listen", "--keymap", "us", "hid:\(fifo)?keymap=fr", "--count", "1",
    ])
    #expect(await writer.value)
    #expect(outcome.outLines == ["1&a"], "\(outcome)")
  }

  @Test("a key with no character is reported by its code, the rest of the code still printed")
  func unmappedKey() async throws {
    let sandbox = try Sandbox()
    let fifo = sandbox.path("scanner")
    #expect(mkfifo(fifo, 0o600) == 0)
    // a F1 s Enter d Enter: KEY_F1 (59) types nothing.
    let bytes = typing([(30, false), (59, false), (31, false), (28, false), (32, false), (28, false)])
    let writer = Task { await playScanner(fifo, bytes) }
    let outcome = try await sandbox.capture(["listen", "hid:\(fifo)", "--count", "2"])
    #expect(await writer.value)
    #expect(outcome.outLines == ["as", "d"], "\(outcome)")
    // The error event makes the run's status INVALIDFORMAT: a key with no character in the keymap is a
    // setup error (the wrong --keymap), not line noise.
    #expect(outcome.status == 85, "\(outcome)")
    #expect(outcome.err.contains("unmapped: [59]"), "\(outcome)")
  }

  @Test("list --hid: a JSON devices array (empty without /dev/input), exit 0")
  func listHID() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture(["--json", "list", "--hid"])
    #expect(outcome.status == 0, "\(outcome)")
    let documents = Shape.jsonLines(outcome)
    #expect(documents.count == 1)
    let devices = documents.first?["devices"]?.array
    #expect(devices != nil, "\(outcome)")
    if access("/dev/input", F_OK) != 0 { #expect(devices?.isEmpty == true) }
    for device in devices ?? [] {
      #expect(device["path"]?.string?.hasPrefix("/dev/input/event") == true)
      #expect(device["name"]?.string != nil && device["isScanner"] != nil)
    }
  }

  /// The binary scans the real /dev/input: only where there is none is "no scanner" certain (a
  /// machine with input devices may have one). The driver's choice among fake nodes is
  /// KeyboardWedgeTests.autoPicksANodeNamedLikeAScanner.
  @Test(
    "hid:auto with no scanner-named input device: exit 17",
    .enabled(if: access("/dev/input", F_OK) != 0, "this machine has /dev/input, which may hold a scanner"))
  func autoFindsNothing() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture("listen", "hid:auto")
    Shape.expectFailure(
      outcome, status: 17, name: "ESKT_NOTFOUND",
      message: "hid:auto found no input device named like a barcode scanner (see capture list --hid)")
  }

  @Test("a missing input device is 63; a bad keymap or hid parameter is a usage error")
  func errors() async throws {
    let sandbox = try Sandbox()
    let missing = try await sandbox.capture("listen", "hid:/dev/input/event99")
    Shape.expectFailure(
      missing, status: 63, name: "ESKT_FILENOTFOUND", message: "input device /dev/input/event99 not found")
    let badOption = try await sandbox.capture("listen", "--keymap", "xx", "hid:/dev/input/event99")
    Shape.expectUsageError(badOption, command: "listen", message: "unknown --keymap 'xx'; use us, de, fr, uk")
    let badQuery = try await sandbox.capture("listen", "hid:/dev/input/event99?speed=1")
    Shape.expectUsageError(
      badQuery, command: "listen",
      message: "'hid:/dev/input/event99?speed=1': unknown hid parameter 'speed=1' (use keymap, timeout)")
  }
}
