// `serial:` devices through the built binary: a pseudo-terminal plays the SPP scanner, the binary opens the
// slave side as it would /dev/rfcommN.

import Foundation
import Simulators
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A frame shaped like the docs/device-protocols.md §5.3 capture (docs/device-protocols.md) around `text` and
/// AIM identifier `aim`.
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
    let outcome = try await sandbox.capture(["--json", "listen", selector, "--count", "2"], timeLimit: 120)
    #expect(await writer.value, "capture never opened \(pty.slavePath)")
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.stderr.isEmpty, "\(outcome)")
    let events = Shape.jsonLines(outcome)
    #expect(
      events.map { $0["event"]?.string ?? "?" } == [
        "deviceArrival", "decodedData", "decodedData", "deviceRemoval",
      ])
    // A pty has no USB device behind it: the model is "serial scanner" and the tty's name under /dev.
    let device = JSONValue.object([
      ("id", .string(selector)), ("model", .string("serial scanner \(pty.slavePath.dropFirst(5))")),
      ("name", .string("Serial scanner (\(pty.slavePath))")), ("type", .number("0")),
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

  /// 4 KiB of line noise: no STX, CR or LF, so in auto framing it is one run the parser gives up at the
  /// next STX, and one undecodedData event.
  static let lineNoise: [UInt8] = (0..<4096).map { i in
    let b = UInt8((i * 37 + 11) % 256)
    return b == 0x02 || b == 0x0A || b == 0x0D ? 0xFF : b
  }

  @Test(
    "--json listen --count 3 after 4 KiB of line noise: an undecodedData event, one short stderr line, exit 0"
  )
  func lineNoiseIsReportedNotAFailure() async throws {
    let sandbox = try Sandbox()
    let pty = try ScannerPTY()
    let writer = Task {
      guard await pty.waitUntilOpened() else { return false }
      pty.write(Self.lineNoise)
      for text in ["ONE", "TWO", "THREE"] { pty.write(sppFrame(text, aim: "C0")) }
      return true
    }
    let outcome = try await sandbox.capture(
      ["--json", "listen", "serial:\(pty.slavePath)", "--count", "3"], timeLimit: 120)
    #expect(await writer.value, "capture never opened \(pty.slavePath)")
    #expect(outcome.status == 0, "\(outcome)")
    let events = Shape.jsonLines(outcome)
    #expect(
      events.map { $0["event"]?.string ?? "?" } == [
        "deviceArrival", "undecodedData", "decodedData", "decodedData", "decodedData", "deviceRemoval",
      ], "\(outcome)")
    let noise = try #require(events.first { $0["event"]?.string == "undecodedData" })
    #expect(noise.keys == ["bytes", "device", "event", "origin", "time"])
    #expect(noise["bytes"]?.string == Data(Self.lineNoise).base64EncodedString())
    #expect(noise["origin"]?.string == pty.slavePath)
    #expect(noise["device"] == events.first?["device"])
    #expect(Shape.isTime(noise["time"]))
    #expect(events.compactMap { $0["text"]?.string } == ["ONE", "TWO", "THREE"])
    // One line of about 150 characters, not 12 KB of hex: the count, the path and the first 24 bytes.
    let first = Self.lineNoise.prefix(24).map { String(format: "%02X", $0) }.joined(separator: " ")
    #expect(
      outcome.errLines == ["capture: 4096 byte(s) from \(pty.slavePath) were not a barcode: \(first) …"],
      "\(outcome)")
    #expect(outcome.errLines.allSatisfy { $0.count <= 200 })
  }

  @Test("4 KiB of noise full of CR and LF is still one undecodedData event and one stderr line")
  func lineNoiseWithTerminators() async throws {
    // Every line of it is bad: printable bytes, TAB and UTF-8 lead bytes become CR, STX becomes 0x01.
    var state: UInt32 = 0x9E37_79B9
    var noise: [UInt8] = (0..<4096).map { _ in
      state = state &* 1_103_515_245 &+ 12345
      let b = UInt8(truncatingIfNeeded: state >> 16)
      if (0x20..<0x7F).contains(b) || b == 0x09 || b >= 0xC0 { return 0x0D }
      return b == 0x02 ? 0x01 : b
    }
    noise[0] = 0x01
    let written = noise
    let sandbox = try Sandbox()
    let pty = try ScannerPTY()
    let writer = Task {
      guard await pty.waitUntilOpened() else { return false }
      pty.write(written)
      for text in ["ONE", "TWO", "THREE"] { pty.write(sppFrame(text, aim: "C0")) }
      return true
    }
    let outcome = try await sandbox.capture(
      ["--json", "listen", "serial:\(pty.slavePath)", "--count", "3"], timeLimit: 120)
    #expect(await writer.value)
    #expect(outcome.status == 0, "\(outcome)")
    let events = Shape.jsonLines(outcome)
    let undecoded = events.filter { $0["event"]?.string == "undecodedData" }
    #expect(undecoded.compactMap { $0["bytes"]?.string } == [Data(noise).base64EncodedString()])
    #expect(events.compactMap { $0["text"]?.string } == ["ONE", "TWO", "THREE"])
    #expect(outcome.errLines.count == 1 && outcome.errLines.allSatisfy { $0.count <= 200 }, "\(outcome)")
  }

  @Test("plain listen after line noise: only the codes on stdout, one stderr line, exit 0")
  func lineNoisePlain() async throws {
    let sandbox = try Sandbox()
    let pty = try ScannerPTY()
    let writer = Task {
      guard await pty.waitUntilOpened() else { return false }
      pty.write(Self.lineNoise)
      for text in ["ONE", "TWO"] { pty.write(sppFrame(text, aim: "C0")) }
      return true
    }
    let outcome = try await sandbox.capture(
      ["listen", "serial:\(pty.slavePath)", "--count", "2"], timeLimit: 120)
    #expect(await writer.value, "capture never opened \(pty.slavePath)")
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.outLines == ["ONE", "TWO"], "\(outcome)")
    #expect(outcome.errLines.count == 1, "\(outcome)")
    #expect(
      outcome.errLines.first?.hasPrefix("capture: 4096 byte(s) from \(pty.slavePath) were not a barcode: ")
        == true)
    // -q silences it like any other diagnostic; the exit status stays 0.
    let quietPTY = try ScannerPTY()
    let quietWriter = Task {
      guard await quietPTY.waitUntilOpened() else { return false }
      quietPTY.write(Self.lineNoise)
      quietPTY.write(sppFrame("ONE", aim: "C0"))
      return true
    }
    let quiet = try await sandbox.capture(
      ["-q", "listen", "serial:\(quietPTY.slavePath)", "--count", "1"], timeLimit: 120)
    #expect(await quietWriter.value)
    #expect(quiet.status == 0, "\(quiet)")
    #expect(quiet.outLines == ["ONE"] && quiet.err.isEmpty, "\(quiet)")
  }

  @Test("--events decodedData leaves undecodedData out of the stream; the stderr line stays")
  func lineNoiseFiltered() async throws {
    let sandbox = try Sandbox()
    let pty = try ScannerPTY()
    let writer = Task {
      guard await pty.waitUntilOpened() else { return false }
      pty.write(Self.lineNoise)
      pty.write(sppFrame("ONE", aim: "C0"))
      return true
    }
    let outcome = try await sandbox.capture(
      ["--json", "listen", "serial:\(pty.slavePath)", "--count", "1", "--events", "decodedData"],
      timeLimit: 120)
    #expect(await writer.value)
    #expect(outcome.status == 0, "\(outcome)")
    #expect(Shape.jsonLines(outcome).map { $0["event"]?.string ?? "?" } == ["decodedData"], "\(outcome)")
    #expect(outcome.errLines.count == 1, "\(outcome)")
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
