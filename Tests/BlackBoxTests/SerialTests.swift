// `serial:` devices through the built binary: a pseudo-terminal plays the SPP scanner (issue 4
// deliverable 6), the binary opens the slave side as it would /dev/rfcommN.

import Foundation
import Simulators
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The master side of a pty. posix_openpt and friends are declared by glibc only under _XOPEN_SOURCE,
/// which Swift's Glibc module does not set, so they are looked up at run time.
final class ScannerPTY: @unchecked Sendable {
  typealias OpenPT = @convention(c) (Int32) -> Int32
  typealias OnMaster = @convention(c) (Int32) -> Int32
  typealias NameOf = @convention(c) (Int32, UnsafeMutablePointer<CChar>, Int) -> Int32

  private static func function<F>(_ name: String, _ type: F.Type) throws -> F {
    guard let address = dlsym(nil, name) else { throw HarnessError(description: "no \(name) in libc") }
    return unsafeBitCast(address, to: type)
  }

  let master: Int32
  let slavePath: String

  init() throws {
    let openpt = try Self.function("posix_openpt", OpenPT.self)
    let grant = try Self.function("grantpt", OnMaster.self)
    let unlock = try Self.function("unlockpt", OnMaster.self)
    let name = try Self.function("ptsname_r", NameOf.self)
    master = openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)
    guard master >= 0 else { throw HarnessError(description: "posix_openpt: \(errno)") }
    var buffer = [CChar](repeating: 0, count: 128)
    guard grant(master) == 0, unlock(master) == 0, name(master, &buffer, buffer.count) == 0 else {
      close(master)
      throw HarnessError(description: "grantpt/unlockpt/ptsname_r: \(errno)")
    }
    slavePath = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  deinit { close(master) }

  func write(_ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
      let n = bytes[offset...].withUnsafeBytes { Glibc.write(master, $0.baseAddress, $0.count) }
      if n < 0 && errno == EINTR { continue }
      guard n > 0 else { return }
      offset += n
    }
  }

  /// Waits until another process has the slave open (capture opened it and, in the same breath, set
  /// raw mode). Bytes written before would meet the tty's cooked defaults: 0x03 is VINTR and CR becomes
  /// LF, so the frame would be damaged before capture could read it.
  func waitUntilOpened(seconds: Double = 15) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    let mine = String(getpid())
    while Date() < deadline {
      let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
      for pid in processes where pid != mine && pid.allSatisfy(\.isNumber) {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        for fd in fds
        where (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"))
          == slavePath
        {
          // open() and tcsetattr() are consecutive calls; give the second one a moment.
          try? await Task.sleep(for: .milliseconds(200))
          return true
        }
      }
      try? await Task.sleep(for: .milliseconds(50))
    }
    return false
  }
}

/// A frame shaped like the §5.3 capture (device-protocols.md) around `text` and AIM identifier `aim`.
func sppFrame(_ text: String, aim: String) -> [UInt8] {
  let body: [UInt8] =
    [0x00, 0x64, 0x01, 0x00, 0x17, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x00, 0x01, 0x00, 0x06]
    + Array(text.utf8) + [0x0D] + Array("]\(aim)DB3".utf8) + [0x60] + Array("E5".utf8)
  let total = body.count + 4
  return [0x02, UInt8(total >> 8), UInt8(total & 0xFF)] + body + [0x03]
}

@Suite("Serial (SPP) scanners on a pty")
struct SerialTests {
  @Test("--json listen serial:PTY?baud=115200 --count 2: two decodedData events with text and data source")
  func listenDecodesTwoFrames() async throws {
    let sandbox = try Sandbox()
    let pty = try ScannerPTY()
    let selector = "serial:\(pty.slavePath)?baud=115200"
    let writer = Task {
      guard await pty.waitUntilOpened() else { return false }
      // The captured frame itself (Code 128), then an EAN-13 one.
      pty.write(sppFrame("EQ0000013158", aim: "C0"))
      pty.write(sppFrame("4006381333931", aim: "E0"))
      return true
    }
    let outcome = try await sandbox.capture(["--json", "listen", selector, "--count", "2"], timeLimit: 30)
    #expect(await writer.value, "capture never opened \(pty.slavePath)")
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.stderr.isEmpty, "\(outcome)")
    let events = Shape.jsonLines(outcome)
    #expect(
      events.map { $0["event"]?.string ?? "?" } == [
        "deviceArrival", "decodedData", "decodedData", "deviceRemoval",
      ])
    let device = JSONValue.object([
      ("id", .string(selector)), ("name", .string("Serial scanner (\(pty.slavePath))")),
      ("type", .number("0")),
      ("typeName", .string("None")),
    ])
    for event in events {
      #expect(event["device"] == device, "\(event)")
      #expect(Shape.isTime(event["time"]), "\(event)")
    }
    let decoded = events.filter { $0["event"]?.string == "decodedData" }
    #expect(decoded.map { $0["text"]?.string } == ["EQ0000013158", "4006381333931"])
    #expect(
      decoded.map { $0["bytes"]?.string } == [
        Data("EQ0000013158".utf8).base64EncodedString(), Data("4006381333931".utf8).base64EncodedString(),
      ])
    #expect(
      decoded.map { $0["dataSource"] } == [
        .object([("id", .number("15")), ("name", .string("Code 128"))]),
        .object([("id", .number("19")), ("name", .string("EAN 13"))]),
      ])
    #expect(decoded.allSatisfy { $0["origin"]?.string == pty.slavePath })
  }

  @Test("connect serial:PTY remembers it (list shows it, an alias reaches it); remove forgets it")
  func connectAndRemove() async throws {
    let pty = try ScannerPTY()
    let sandbox = try Sandbox()
    let selector = "serial:\(pty.slavePath)?baud=115200"
    let connected = try await sandbox.capture(["--json", "connect", selector, "--alias", "till"])
    #expect(connected.status == 0, "\(connected)")
    let arrival = Shape.jsonLines(connected)
    #expect(arrival.first?["event"]?.string == "deviceArrival")
    #expect(arrival.first?["device"]?["id"]?.string == selector)
    let list = try await sandbox.capture(["--json", "list"])
    let devices = Shape.jsonLines(list).first?["devices"]?.array ?? []
    #expect(
      devices.contains {
        $0["id"]?.string == selector && $0["alias"]?.string == "till" && $0["transport"]?.string == "serial"
      }, "\(list)")
    let byAlias = try await sandbox.capture(["get", "till", "device-type"])
    #expect(byAlias.status == 0, "\(byAlias)")
    let removed = try await sandbox.capture(["remove", "till"])
    #expect(removed.status == 0, "\(removed)")
    let again = try await sandbox.capture(["remove", selector])
    #expect(again.status == 17)
  }

  @Test("a DataMan on a serial line (protocol=dmcc): get friendly-name and a raw dmcc parameter")
  func dmccOverSerial() async throws {
    let pty = try ScannerPTY()
    let simulator = try DMCCSimulator()
    defer { simulator.stop() }
    // The master side plays the reader: each CR LF-terminated command gets the simulator's answer.
    let master = pty.master
    let responder = Thread {
      var pending: [UInt8] = []
      var buffer = [UInt8](repeating: 0, count: 4096)
      while true {
        var pfd = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
        if poll(&pfd, 1, 200) <= 0 { if Thread.current.isCancelled { return } else { continue } }
        let n = buffer.withUnsafeMutableBytes { Glibc.read(master, $0.baseAddress, $0.count) }
        if n <= 0 { if Thread.current.isCancelled { return } else { continue } }
        pending += buffer[0..<n]
        while let end = (0..<max(0, pending.count - 1)).first(where: {
          pending[$0] == 13 && pending[$0 + 1] == 10
        }) {
          let line = Array(pending[..<end])
          pending.removeFirst(end + 2)
          for reply in simulator.answer(line) { pty.write(reply) }
        }
      }
    }
    responder.start()
    defer { responder.cancel() }
    let sandbox = try Sandbox()
    let selector = "serial:\(pty.slavePath)?protocol=dmcc&baud=115200"
    let name = try await sandbox.capture(["get", selector, "friendly-name"])
    #expect(name.status == 0, "\(name)")
    #expect(name.outLines == ["Line 3 reader"])
    let model = try await sandbox.capture(["get", selector, "dmcc:DEVICE.TYPE"])
    #expect(model.outLines == ["DM8050"], "\(model)")
  }

  @Test("listen on a serial device that does not exist: exit 63, one line")
  func missingDevice() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture("listen", "serial:/dev/does-not-exist")
    Shape.expectFailure(
      outcome, status: 63, name: "ESKT_FILENOTFOUND", message: "serial device /dev/does-not-exist not found")
  }

  @Test("an unsupported baud rate is a usage error (18), found before the device is opened")
  func badBaud() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture("listen", "serial:/dev/does-not-exist?baud=12345")
    Shape.expectUsageError(
      outcome, command: "listen",
      message:
        "unsupported baud rate '12345' (use one of 1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600)"
    )
  }
}
