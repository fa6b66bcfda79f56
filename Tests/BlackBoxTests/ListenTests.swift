// `listen`: a JSON Lines stream of events, arrival → decoded data… → removal.

import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite("listen")
struct ListenTests {
  /// scans/ holds three codes in name order and a file that is not an image.
  static func scans(_ sandbox: Sandbox, _ images: Images) throws -> [Sample] {
    try sandbox.copy(images.qr.path, to: "scans/1-qr.png")
    try sandbox.copy(images.ean13.path, to: "scans/2-ean.png")
    try sandbox.copy(images.dataMatrix.path, to: "scans/3-dm.png")
    return [images.qr, images.ean13, images.dataMatrix]
  }

  @Test("--json listen socketcam --dir: arrival, one decodedData per code in name order, removal")
  func stream() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let samples = try Self.scans(sandbox, images)
    let outcome = try await sandbox.capture("--json", "listen", "socketcam", "--dir", "scans")
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.stderr.isEmpty, "\(outcome)")
    let events = Shape.jsonLines(outcome)
    #expect(events.count == 5, "\(outcome)")
    #expect(
      events.map { $0["event"]?.string ?? "?" } == [
        "deviceArrival", "decodedData", "decodedData", "decodedData", "deviceRemoval",
      ])
    Shape.expectArrivalOrRemoval(events.first, "deviceArrival")
    let names = ["scans/1-qr.png", "scans/2-ean.png", "scans/3-dm.png"]
    for (i, sample) in samples.enumerated() where i + 1 < events.count {
      Shape.expectDecoded(
        events[i + 1], text: sample.text, source: sample.source, base64: sample.base64, origin: names[i])
    }
    Shape.expectArrivalOrRemoval(events.last, "deviceRemoval")
    // Times never go backwards along the stream.
    let times = events.compactMap { $0["time"]?.string }
    #expect(times == times.sorted())
  }

  @Test("plain listen prints only the texts, one per line; SOURCE without DEVICE means socketcam")
  func plain() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let samples = try Self.scans(sandbox, images)
    try sandbox.write("scans/notes.txt", "hello\n")
    let outcome = try await sandbox.capture("listen", "--dir", "scans")
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.outLines == samples.map(\.text))
    #expect(outcome.errLines == ["capture: skipping 'scans/notes.txt': not a PNG, JPEG or PNM image"])
  }

  @Test("--count N stops after exactly N decoded codes", arguments: [1, 2])
  func count(_ n: Int) async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    // Enough files that decoding the rest cannot finish before listen has stopped.
    let samples = [
      images.qr, images.ean13, images.code128, images.pdf417, images.qrSecond, images.dataMatrix,
    ]
    for (i, sample) in (samples + samples).enumerated() {
      try sandbox.copy(sample.path, to: "many/\(10 + i).\(sample.path.hasSuffix(".pgm") ? "pgm" : "png")")
    }
    let outcome = try await sandbox.capture("--json", "listen", "--count", String(n), "--dir", "many")
    #expect(outcome.status == 0, "\(outcome)")
    let events = Shape.jsonLines(outcome)
    #expect(
      events.map { $0["event"]?.string ?? "?" }
        == ["deviceArrival"] + Array(repeating: "decodedData", count: n) + ["deviceRemoval"], "\(outcome)")
    for i in 0..<n where i + 1 < events.count {
      Shape.expectDecoded(
        events[i + 1], text: samples[i].text, source: samples[i].source, base64: samples[i].base64,
        origin: "many/\(10 + i).png")
    }

    let plain = try await sandbox.capture("listen", "--count", String(n), "--dir", "many")
    #expect(plain.status == 0)
    #expect(plain.outLines == samples.prefix(n).map(\.text), "\(plain)")
  }

  @Test("--count larger than the source: exhausted source ends the stream with exit 0")
  func countBeyondSource() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let samples = try Self.scans(sandbox, images)
    let outcome = try await sandbox.capture("listen", "--count", "10", "--dir", "scans")
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.outLines == samples.map(\.text))
  }

  @Test("--events decodedData prints only decodedData events")
  func eventsFilter() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let samples = try Self.scans(sandbox, images)
    let outcome = try await sandbox.capture(
      "--json", "listen", "socketcam", "--events", "decodedData", "--dir", "scans")
    #expect(outcome.status == 0, "\(outcome)")
    let events = Shape.jsonLines(outcome)
    #expect(events.map { $0["event"]?.string ?? "?" } == ["decodedData", "decodedData", "decodedData"])
    #expect(events.map { $0["text"]?.string ?? "?" } == samples.map(\.text))

    let lifecycle = try await sandbox.capture(
      "--json", "listen", "socketcam", "--events", "deviceArrival,deviceRemoval", "--dir", "scans")
    #expect(lifecycle.status == 0)
    #expect(
      Shape.jsonLines(lifecycle).map { $0["event"]?.string ?? "?" } == ["deviceArrival", "deviceRemoval"])
  }

  @Test("a directory without any barcode exits 17")
  func noBarcode() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    try sandbox.copy(images.blank, to: "empty/blank.pgm")
    let outcome = try await sandbox.capture("--json", "listen", "--dir", "empty")
    #expect(outcome.status == 17, "\(outcome)")
    #expect(outcome.errLines == ["capture: ESKT_NOTFOUND (-17): no barcode found in 'empty'"])
    let lines = Shape.jsonLines(outcome)
    #expect(lines.map { $0["event"]?.string ?? "error" } == ["deviceArrival", "deviceRemoval", "error"])
    #expect(
      lines.last
        == .object([
          (
            "error",
            .object([
              ("code", .number("-17")), ("message", .string("no barcode found in 'empty'")),
              ("name", .string("ESKT_NOTFOUND")),
            ])
          )
        ]))
    _ = try sandbox.makeDirectory("nothing")
    let plain = try await sandbox.capture("listen", "--dir", "nothing")
    Shape.expectFailure(plain, status: 17, name: "ESKT_NOTFOUND", message: "no barcode found in 'nothing'")
  }

  @Test("--timeout ends a listen whose source has not ended: exit 42 on time")
  func timeout() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture(
      ["--json", "listen", "--image", "-", "--timeout", "1s"], timeLimit: 120,
      interaction: Interaction(holdStdinOpen: true))
    #expect(outcome.status == 42, "\(outcome)")
    #expect(
      outcome.errLines == ["capture: ESKT_REQUESTTIMEDOUT (-42): --timeout ran out after 0 decoded code(s)"])
    let lines = Shape.jsonLines(outcome)
    #expect(lines.map { $0["event"]?.string ?? "error" } == ["deviceArrival", "deviceRemoval", "error"])
    #expect(outcome.elapsed < 60, "a 1 s timeout took \(outcome.elapsed) s")
    // JSON Lines are flushed per event: the arrival is out well before the exit, not held until it.
    #expect(
      (outcome.firstStdout ?? 99) < outcome.elapsed - 0.5,
      "first event after \(outcome.firstStdout ?? -1) s, exit after \(outcome.elapsed) s")
  }

  @Test("SIGTERM stops listen: removal flushed, exit 0, promptly", arguments: [SIGTERM, SIGINT])
  func signal(_ number: Int32) async throws {
    let sandbox = try Sandbox()
    let signalled = Shared<Double?>(nil)
    let outcome = try await sandbox.capture(
      ["--json", "listen", "--image", "-"], timeLimit: 120,
      interaction: Self.signalOnFirstLine(number, at: signalled))
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.signal == nil)
    let lines = Shape.jsonLines(outcome)
    #expect(lines.map { $0["event"]?.string ?? "?" } == ["deviceArrival", "deviceRemoval"])
    let sent = try #require(signalled.value, "no event line came to signal on: \(outcome)")
    #expect(outcome.elapsed - sent < 60, "stopping took \(outcome.elapsed - sent) s after the signal")
  }

  /// Plays the process manager that stops listen once it is running: `number` goes to the child the
  /// moment its first stdout line (the arrival) is read, and `at` records when (seconds from spawn).
  static func signalOnFirstLine(_ number: Int32, at signalled: Shared<Double?>) -> Interaction {
    let start = Runner.monotonicSeconds()
    return .signal(
      number,
      once: { _ in
        signalled.update { $0 = $0 ?? Runner.monotonicSeconds() - start }
        return true
      })
  }

  /// The commands that end the documented way on SIGINT/SIGTERM, with what they are run with and their
  /// status then: listen and serve 0 (after flushing), trigger ESKT_CANCEL (91).
  static let signalled: [(name: String, arguments: [String], status: Int32)] = [
    ("listen", ["--json", "listen", "--image", "-"], 0),
    ("serve", ["serve", "--listen", "127.0.0.1:0"], 0),
    ("trigger", ["trigger", "socketcam", "start", "--image", "-"], 91),
  ]

  @Test(
    "a SIGTERM or SIGINT the instant capture can catch it, before it has done anything, ends listen and serve with 0 and trigger with 91, never by the signal",
    arguments: [SIGTERM, SIGINT], 0..<signalled.count)
  func signalInTheFirstInstant(_ number: Int32, _ command: Int) async throws {
    let (name, arguments, status) = Self.signalled[command]
    let sandbox = try Sandbox()
    // The earliest moment a process manager can stop capture and expect it to act on it: its handler
    // is installed (SigCgt in /proc/PID/status), the first thing main does; the signal goes at once,
    // while the command is still starting (nothing printed yet).
    let catching = Shared<Bool?>(nil)
    let outcome = try await sandbox.capture(
      arguments, timeLimit: 120, interaction: HardeningIOTests.signalOnceCaught(number, caught: catching))
    #expect(catching.value == true, "capture \(name) never caught signal \(number): \(outcome)")
    #expect(outcome.signal == nil, "capture \(name) died of signal \(number): \(outcome)")
    #expect(outcome.status == status, "capture \(name): \(outcome)")
    if name == "listen" {
      // Stopped before its device was attached (nothing to flush) or after (its arrival and removal).
      let events = Shape.jsonLines(outcome).map { $0["event"]?.string ?? "?" }
      #expect(events == [] || events == ["deviceArrival", "deviceRemoval"], "\(outcome)")
    }
  }

  @Test("a missing file mid-stream is an error event; the stream goes on; exit 63")
  func errorEventInStream() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let missing = sandbox.path("missing.png")
    let message = "cannot open '\(missing)': No such file or directory"
    let arguments = ["listen", "--image", images.qr.path, "--image", missing, "--image", images.ean13.path]
    let outcome = try await sandbox.capture(["--json"] + arguments)
    #expect(outcome.status == 63, "\(outcome)")
    #expect(outcome.errLines == ["capture: ESKT_FILENOTFOUND (-63): \(message)"])
    let events = Shape.jsonLines(outcome)
    #expect(
      events.map { $0["event"]?.string ?? "?" } == [
        "deviceArrival", "decodedData", "error", "decodedData", "deviceRemoval",
      ])
    if events.count == 5 {
      Shape.expectDecoded(
        events[1], text: images.qr.text, source: images.qr.source, base64: images.qr.base64,
        origin: images.qr.path)
      #expect(events[2].keys == ["device", "error", "event", "time"])
      #expect(events[2]["device"] == Shape.socketCamDevice)
      #expect(
        events[2]["error"]
          == .object([
            ("code", .number("-63")), ("message", .string(message)), ("name", .string("ESKT_FILENOTFOUND")),
          ]))
      #expect(Shape.isTime(events[2]["time"]))
      Shape.expectDecoded(
        events[3], text: images.ean13.text, source: images.ean13.source, base64: images.ean13.base64,
        origin: images.ean13.path)
    }
    let plain = try await sandbox.capture(arguments)
    #expect(plain.status == 63)
    #expect(plain.outLines == [images.qr.text, images.ean13.text])
    #expect(plain.errLines == ["capture: ESKT_FILENOTFOUND (-63): \(message)"])
  }

  @Test("listen --image - reads stdin")
  func standardInput() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture(
      ["listen", "--image", "-"], stdin: try sandbox.read(images.code128.path))
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.outLines == [images.code128.text])
  }
}

/// A value the test and a child's callbacks (other threads) share.
final class Shared<Value: Sendable>: Sendable {
  private let state: Mutex<Value>
  init(_ value: Value) { state = Mutex(value) }
  var value: Value { state.withLock { $0 } }
  func update(_ change: (inout Value) -> Void) { state.withLock { change(&$0) } }
}
