// listen --confirm: the host acknowledges each code (the SDK's App confirmation mode).

import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite("listen --confirm")
struct ConfirmTests {
  /// in/ holds the QR sample, then the Code 128 one (decoded in that order); returns its path.
  static func qrThenCode128(_ sandbox: Sandbox, _ images: Images) throws -> String {
    let dir = try sandbox.makeDirectory("in")
    try sandbox.copy(images.qr.path, to: "in/a.png")
    try sandbox.copy(images.code128.path, to: "in/b.png")
    return dir
  }

  @Test("plain output passes only the codes the command confirms; the command sees the data and the event")
  func gatesPlainOutput() async throws {
    let sandbox = try Sandbox()
    let images = try await Images.get()
    let dir = try Self.qrThenCode128(sandbox, images)
    // Confirm only the QR payload; the command's own output must not reach stdout.
    let command = "grep -qx '\(images.qr.text)' && echo noise && test -n \"$CAPTURE_EVENT\""
    let outcome = try await sandbox.capture(["listen", "--dir", dir, "--confirm", command])
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.outLines == [images.qr.text])
    #expect(outcome.err.contains("noise"))
  }

  @Test("JSON events carry confirmation good/bad and confirmed false on SocketCam, which cannot be told")
  func jsonVerdicts() async throws {
    let sandbox = try Sandbox()
    let images = try await Images.get()
    let dir = try Self.qrThenCode128(sandbox, images)
    let outcome = try await sandbox.capture([
      "--json", "listen", "--dir", dir, "--confirm", "grep -qx '\(images.qr.text)'",
    ])
    #expect(outcome.status == 0, "\(outcome)")
    let decoded = Shape.jsonLines(outcome).filter { $0["event"]?.string == "decodedData" }
    #expect(decoded.count == 2)
    #expect(decoded.map { $0["confirmation"]?.string } == ["good", "bad"])
    #expect(decoded.allSatisfy { $0["confirmed"] == .bool(false) })
  }

  @Test("a command that hangs past --confirm-timeout is killed and the code is bad")
  func timeout() async throws {
    let sandbox = try Sandbox()
    let images = try await Images.get()
    let outcome = try await sandbox.capture([
      "--json", "listen", "--image", images.qr.path, "--confirm", "sleep 600", "--confirm-timeout", "300ms",
    ])
    #expect(outcome.status == 0, "\(outcome)")
    // Ended by itself within the runner's 120 s limit: the 600 s command was not waited out.
    #expect(!outcome.timedOut, "\(outcome)")
    let decoded = Shape.jsonLines(outcome).filter { $0["event"]?.string == "decodedData" }
    #expect(decoded.first?["confirmation"]?.string == "bad")
  }

  @Test("SIGINT while a command runs: it is killed, its code is bad, listen exits 0 without waiting it out")
  func interruptedWhileRunning() async throws {
    let sandbox = try Sandbox()
    let images = try await Images.get()
    // SIGINT once the command runs (it leaves a mark first), not at a time a loaded machine may not
    // have reached it by.
    let running = sandbox.path("running")
    let pid = Shared<pid_t>(0)
    var interaction = Interaction()
    interaction.started = { child in pid.update { $0 = child } }
    let interrupter = Task {
      guard await waitUntil("the confirm command running", { sandbox.exists(running) }) else { return }
      kill(pid.value, SIGINT)
    }
    let outcome = try await sandbox.capture(
      [
        "--json", "listen", "--image", images.qr.path, "--confirm", "touch '\(running)'; sleep 600",
        "--confirm-timeout", "600s",
      ], timeLimit: 120, interaction: interaction)
    await interrupter.value
    #expect(outcome.status == 0, "\(outcome)")
    // Ended by itself within the runner's 120 s limit: neither the command nor its timeout was waited out.
    #expect(!outcome.timedOut, "\(outcome)")
    let decoded = Shape.jsonLines(outcome).filter { $0["event"]?.string == "decodedData" }
    #expect(decoded.map { $0["confirmation"]?.string } == ["bad"])
  }

  @Test("a command that crashes (killed by a signal) is a bad verdict; listen goes on to the next code")
  func crash() async throws {
    let sandbox = try Sandbox()
    let images = try await Images.get()
    let dir = try Self.qrThenCode128(sandbox, images)
    // The QR's command dies of SIGSEGV; the Code 128's exits 0.
    let command = "if grep -qx '\(images.qr.text)'; then kill -SEGV $$; fi; exit 0"
    let outcome = try await sandbox.capture(["--json", "listen", "--dir", dir, "--confirm", command])
    #expect(outcome.status == 0, "\(outcome)")
    let decoded = Shape.jsonLines(outcome).filter { $0["event"]?.string == "decodedData" }
    #expect(decoded.map { $0["text"]?.string } == [images.qr.text, images.code128.text])
    #expect(decoded.map { $0["confirmation"]?.string } == ["bad", "good"])
  }

  @Test("a command that floods its output (8 MiB) cannot corrupt stdout or stall listen; its verdict counts")
  func flood() async throws {
    let sandbox = try Sandbox()
    let images = try await Images.get()
    let outcome = try await sandbox.capture([
      "--json", "listen", "--image", images.qr.path, "--confirm",
      "head -c 8388608 /dev/zero | tr '\\0' x; true",
    ])
    #expect(outcome.status == 0, "\(outcome.status)")
    // stdout is the event stream alone (every line JSON, one decodedData, good); the command's bytes
    // went to stderr.
    let lines = Shape.jsonLines(outcome)
    #expect(lines.count == outcome.outLines.count)
    let decoded = lines.filter { $0["event"]?.string == "decodedData" }
    #expect(decoded.count == 1)
    #expect(decoded.first?["confirmation"]?.string == "good")
    #expect(outcome.err.utf8.count >= 8_388_608)
  }

  @Test(
    "two devices: B's codes are confirmed and printed while A's confirm command is still sleeping (a lane per device)"
  )
  func perDeviceLanes() async throws {
    let sandbox = try Sandbox()
    let a = try ScannerPTY()
    let b = try ScannerPTY()
    let done = sandbox.path("a-done")
    let second = sandbox.path("b-2-confirmed")
    let waiting = sandbox.path("a-waiting")
    // A's command waits until B-2's verdict has been given (its mark), then leaves a mark of its own;
    // B's codes are good only while A's mark is absent. A lane shared by both devices would keep B
    // waiting behind A, which waits for B: A gives up after 100 s (bad, not printed; its
    // --confirm-timeout is longer) and the test fails on its output, with no assumption about how fast
    // a loaded machine is. B's codes are sent once A's command has said it is waiting (its first
    // mark), so they meet A's lane busy.
    let command =
      "code=$(cat); case \"$code\" in A*) touch '\(waiting)'; i=0; while [ ! -e '\(second)' ] && [ $i -lt 2000 ]; do sleep 0.05; i=$((i+1)); done; [ -e '\(second)' ] && touch '\(done)';; B-2*) test ! -e '\(done)' && touch '\(second)';; *) test ! -e '\(done)';; esac"
    let writer = Task {
      guard await a.waitUntilOpened(), await b.waitUntilOpened() else { return false }
      a.write(sppFrame("A-1", aim: "C0"))
      guard await waitUntil("A's confirm command running", { sandbox.exists(waiting) }) else { return false }
      b.write(sppFrame("B-1", aim: "C0"))
      b.write(sppFrame("B-2", aim: "C0"))
      return true
    }
    let outcome = try await sandbox.capture(
      [
        "listen", "serial:\(a.slavePath)?baud=115200", "serial:\(b.slavePath)?baud=115200", "--count", "3",
        "--confirm", command, "--confirm-timeout", "300s",
      ], timeLimit: 300)
    #expect(await writer.value, "capture never opened both ptys")
    #expect(outcome.status == 0, "\(outcome)")
    // A's command saw B-2's mark: B-2's command ran while A's was still running, which a shared lane
    // never allows. B-1 was printed before B-2's command ran (a lane prints a code before it takes
    // the next), so before A-1. B-2 and A-1 may print in either order: B-2's mark is made by its
    // command before capture has its verdict, and A's command ends on that mark.
    #expect(FileManager.default.fileExists(atPath: done))
    #expect(outcome.outLines.sorted() == ["A-1", "B-1", "B-2"], "\(outcome)")
    #expect(outcome.outLines.first == "B-1", "\(outcome)")
  }

  @Test(
    "the command inherits stdin, stdout and stderr only: not the signal self-pipe nor any other descriptor")
  func inheritsOnlyStandardDescriptors() async throws {
    let sandbox = try Sandbox()
    let images = try await Images.get()
    // capture is started with 0, 1 and 2 only (a python3 exec wrapper closes the rest), so anything
    // else the command holds came from capture. No redirection in the command: a shell that redirects
    // keeps a copy of the old descriptor. Its stdout is capture's stderr; `ls` is exec'd in place of the
    // shell, so $$ is the command itself.
    let closeAndExec = "import os, sys; os.closerange(3, 65536); os.execv(sys.argv[1], sys.argv[1:])"
    let outcome = try await Runner.run(
      "/usr/bin/python3",
      [
        "-c", closeAndExec, try Product.path(), "listen", "--image", images.qr.path, "--confirm",
        "ls -l /proc/$$/fd",
      ], environment: sandbox.environment, directory: sandbox.root)
    #expect(outcome.status == 0, "\(outcome)")
    let text = outcome.err
    let entries = text.split(separator: "\n").filter { $0.contains(" -> ") }
    let numbers = entries.compactMap { line -> Int? in
      let words = line.split(separator: " ")
      guard let arrow = words.firstIndex(of: "->"), arrow > 0 else { return nil }
      return Int(words[arrow - 1])
    }
    #expect(numbers.sorted() == [0, 1, 2], "capture passed more than stdin, stdout and stderr:\n\(text)")
  }

  @Test("--confirm-timeout without --confirm is a usage error")
  func usage() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture(["listen", "--image", "x.png", "--confirm-timeout", "1s"])
    #expect(outcome.status == 18)
  }
}

/// The host side of `listen --confirm-stdin`: records every question capture writes on stdout and
/// answers it on capture's stdin as `reply` says (by question number from 0 and text; nil closes
/// capture's stdin).
final class CoProcessHost: Sendable {
  private let asked = Mutex<[String]>([])
  private let reply: @Sendable (Int, String) -> String?

  /// Every question so far, in order.
  var questions: [String] { asked.withLock { $0 } }

  init(_ reply: @escaping @Sendable (Int, String) -> String?) { self.reply = reply }

  /// Answers from a list, in order; past its end, nothing more is said.
  convenience init(answers: [String?]) {
    self.init { index, _ in index < answers.count ? answers[index] : "" }
  }

  var interaction: Interaction {
    Interaction(answer: { line in
      let index = self.asked.withLock { asked in
        asked.append(line)
        return asked.count - 1
      }
      return self.reply(index, line)
    })
  }
}

@Suite("listen --confirm-stdin")
struct ConfirmStdinTests {
  /// in/ holds the QR, Code 128 and EAN-13 samples, decoded in this order.
  static func scans(_ sandbox: Sandbox, _ images: Images) throws -> (dir: String, samples: [Sample]) {
    let dir = try ConfirmTests.qrThenCode128(sandbox, images)
    try sandbox.copy(images.ean13.path, to: "in/c.png")
    return (dir, [images.qr, images.code128, images.ean13])
  }

  static func decoded(_ sandbox: Sandbox, _ file: String) throws -> [JSONValue] {
    let text = String(decoding: try sandbox.read(sandbox.path(file)), as: UTF8.self)
    return try Outcome.lines(text).map(parseJSON).filter { $0["event"]?.string == "decodedData" }
  }

  @Test(
    "plain: each code is one question on stdout; good/bad in any case with spaces; --output gets the good codes"
  )
  func plainVerdicts() async throws {
    let sandbox = try Sandbox()
    let (dir, samples) = try Self.scans(sandbox, try await Images.get())
    let host = CoProcessHost(answers: [" GOOD \n", "bad\r\n", "\tGood\n"])
    let outcome = try await sandbox.capture(
      ["listen", "--dir", dir, "--confirm-stdin", "--output", "codes.txt"], interaction: host.interaction)
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.stderr.isEmpty, "\(outcome)")
    #expect(outcome.outLines == samples.map(\.text))
    #expect(host.questions == samples.map(\.text))
    let file = String(decoding: try sandbox.read(sandbox.path("codes.txt")), as: UTF8.self)
    #expect(file == "\(samples[0].text)\n\(samples[2].text)\n")
  }

  @Test(
    "JSON: the question is the decodedData event; --output has every event with confirmation and confirmed")
  func jsonVerdicts() async throws {
    let sandbox = try Sandbox()
    let (dir, samples) = try Self.scans(sandbox, try await Images.get())
    let host = CoProcessHost(answers: ["good\n", "bad\n", "good\n"])
    let outcome = try await sandbox.capture(
      ["--json", "listen", "--dir", dir, "--confirm-stdin", "--output", "events.jsonl"],
      interaction: host.interaction)
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.stderr.isEmpty, "\(outcome)")
    // stdout is the question channel: the decoded codes and nothing else (no arrival, no removal),
    // each without a verdict yet.
    let questions = Shape.jsonLines(outcome)
    #expect(questions.map { $0["event"]?.string } == ["decodedData", "decodedData", "decodedData"])
    #expect(questions.map { $0["text"]?.string } == samples.map(\.text))
    #expect(questions.allSatisfy { $0["confirmation"] == nil && $0["confirmed"] == nil })
    let text = String(decoding: try sandbox.read(sandbox.path("events.jsonl")), as: UTF8.self)
    let events = try Outcome.lines(text).map(parseJSON)
    #expect(
      events.map { $0["event"]?.string } == [
        "deviceArrival", "decodedData", "decodedData", "decodedData", "deviceRemoval",
      ])
    let decoded = events.filter { $0["event"]?.string == "decodedData" }
    #expect(decoded.map { $0["text"]?.string } == samples.map(\.text))
    #expect(decoded.map { $0["confirmation"]?.string } == ["good", "bad", "good"])
    // SocketCam has no LED or beeper to tell: confirmed false, as with --confirm.
    #expect(decoded.allSatisfy { $0["confirmed"] == .bool(false) })
  }

  @Test("without --output, stdout carries only the questions")
  func questionsOnly() async throws {
    let sandbox = try Sandbox()
    let (dir, samples) = try Self.scans(sandbox, try await Images.get())
    let host = CoProcessHost { _, _ in "good\n" }
    let outcome = try await sandbox.capture(
      ["--json", "listen", "socketcam", "--dir", dir, "--confirm-stdin"], interaction: host.interaction)
    #expect(outcome.status == 0, "\(outcome)")
    #expect(Shape.jsonLines(outcome).map { $0["text"]?.string } == samples.map(\.text))
    #expect(host.questions.count == 3)
  }

  @Test("a code holding a line break is still one plain question line (C-style escapes)")
  func escapedQuestion() async throws {
    let sandbox = try Sandbox()
    let images = try await Images.get()
    let host = CoProcessHost { _, _ in "good\n" }
    let outcome = try await sandbox.capture(
      ["listen", "--image", images.binaryQR.path, "--confirm-stdin", "--output", "codes.txt"],
      interaction: host.interaction)
    #expect(outcome.status == 0, "\(outcome)")
    // The plain line of every code: control characters and bytes that are not UTF-8 as \xHH, LF as \n.
    let line = "\\x00\\xFF\\x01\\x80binary\\xFE\\n\\x7F"
    #expect(host.questions == [line])
    // The --output file carries the code as plain listen prints it.
    let file = String(decoding: try sandbox.read(sandbox.path("codes.txt")), as: UTF8.self)
    #expect(file == line + "\n")
  }

  @Test("an answer that is neither good nor bad: a warning naming it, and the code is bad")
  func garbage() async throws {
    let sandbox = try Sandbox()
    let (dir, _) = try Self.scans(sandbox, try await Images.get())
    let host = CoProcessHost(answers: ["maybe\n", "\n", "good\n"])
    let outcome = try await sandbox.capture(
      ["--json", "listen", "--dir", dir, "--confirm-stdin", "--output", "events.jsonl"],
      interaction: host.interaction)
    #expect(outcome.status == 0, "\(outcome)")
    #expect(
      outcome.errLines == [
        #"capture: --confirm-stdin: expected good or bad, got "maybe"; the code is bad"#,
        #"capture: --confirm-stdin: expected good or bad, got ""; the code is bad"#,
      ])
    let decoded = try Self.decoded(sandbox, "events.jsonl")
    #expect(decoded.map { $0["confirmation"]?.string } == ["bad", "bad", "good"])
  }

  @Test("end of stdin: that code and every later one are bad, with one warning; exit 0")
  func endOfInput() async throws {
    let sandbox = try Sandbox()
    let (dir, samples) = try Self.scans(sandbox, try await Images.get())
    let host = CoProcessHost(answers: ["good\n", nil])
    let outcome = try await sandbox.capture(
      ["--json", "listen", "--dir", dir, "--confirm-stdin", "--output", "events.jsonl"],
      interaction: host.interaction)
    #expect(outcome.status == 0, "\(outcome)")
    #expect(
      outcome.errLines == [
        "capture: --confirm-stdin: standard input closed; this code and every later one are bad"
      ])
    // Every code is still asked about (shown once on stdout) and recorded with its verdict.
    #expect(Shape.jsonLines(outcome).map { $0["text"]?.string } == samples.map(\.text))
    let decoded = try Self.decoded(sandbox, "events.jsonl")
    #expect(decoded.map { $0["confirmation"]?.string } == ["good", "bad", "bad"])
  }

  @Test(
    "no answer within --confirm-timeout: the code is bad with a warning; the next answer is the next code's")
  func timeout() async throws {
    let sandbox = try Sandbox()
    let (dir, _) = try Self.scans(sandbox, try await Images.get())
    let host = CoProcessHost(answers: ["", "good\n", "bad\n"])
    let outcome = try await sandbox.capture(
      [
        "--json", "listen", "--dir", dir, "--confirm-stdin", "--confirm-timeout", "300ms", "--output",
        "events.jsonl",
      ], interaction: host.interaction)
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.errLines == ["capture: --confirm-stdin: no answer within 300ms; the code is bad"])
    let decoded = try Self.decoded(sandbox, "events.jsonl")
    #expect(decoded.map { $0["confirmation"]?.string } == ["bad", "good", "bad"])
  }

  @Test("an answer that comes after the time limit, before the next code, is dropped, not taken for it")
  func lateAnswer() async throws {
    let sandbox = try Sandbox()
    let pty = try ScannerPTY()
    // The first answer comes once capture has said the 300 ms limit ran out; the second code is
    // scanned only after the answer has been written to capture's stdin, so it is waiting there when
    // the second question goes out.
    let host = CoProcessHost { index, _ in index == 0 ? "" : "bad\n" }
    let watch = OutputWatch()
    let feed = StdinFeed()
    var interaction = host.interaction
    interaction.watch = watch
    interaction.feed = feed
    let writer = Task {
      guard await pty.waitUntilOpened() else { return false }
      pty.write(sppFrame("FIRST", aim: "C0"))
      guard await watch.waitForLine(.stderr, containing: "no answer within 300ms") else { return false }
      feed.send("good\n")
      guard await waitUntil("the late answer written to capture's stdin", { feed.isDelivered }) else {
        return false
      }
      pty.write(sppFrame("SECOND", aim: "C0"))
      return true
    }
    let outcome = try await sandbox.capture(
      [
        "--json", "listen", "serial:\(pty.slavePath)?baud=115200", "--count", "2", "--confirm-stdin",
        "--confirm-timeout",
        "300ms", "--output", "events.jsonl",
      ], interaction: interaction)
    #expect(await writer.value, "capture never opened \(pty.slavePath)")
    #expect(outcome.status == 0, "\(outcome)")
    #expect(
      outcome.errLines == [
        "capture: --confirm-stdin: no answer within 300ms; the code is bad",
        #"capture: --confirm-stdin: late answer "good" ignored"#,
      ])
    let decoded = try Self.decoded(sandbox, "events.jsonl")
    #expect(decoded.map { $0["text"]?.string } == ["FIRST", "SECOND"])
    #expect(decoded.map { $0["confirmation"]?.string } == ["bad", "bad"])
  }

  @Test("SIGINT while an answer is awaited: listen stops without waiting out --confirm-timeout and exits 0")
  func interruptedWhileWaiting() async throws {
    let sandbox = try Sandbox()
    let images = try await Images.get()
    let host = CoProcessHost { _, _ in "" }
    var interaction = host.interaction
    // Long after the one code was asked about; long before the 60 s time limit would end the wait.
    interaction.signal = (SIGINT, 5)
    let outcome = try await sandbox.capture(
      [
        "--json", "listen", "--image", images.qr.path, "--confirm-stdin", "--confirm-timeout", "60s",
        "--output", "events.jsonl",
      ], timeLimit: 120, interaction: interaction)
    #expect(outcome.status == 0, "\(outcome)")
    #expect(host.questions.count == 1)
    // The open question's code is still recorded once, as bad: nobody confirmed it.
    let decoded = try Self.decoded(sandbox, "events.jsonl")
    #expect(decoded.map { $0["text"]?.string } == [images.qr.text])
    #expect(decoded.map { $0["confirmation"]?.string } == ["bad"])
  }

  @Test("usage: --confirm with --confirm-stdin, --confirm-stdin with --image -, an empty --output")
  func usage() async throws {
    let sandbox = try Sandbox()
    Shape.expectUsageError(
      try await sandbox.capture(["listen", "--image", "x.png", "--confirm", "true", "--confirm-stdin"]),
      command: "listen", message: "--confirm and --confirm-stdin cannot be combined")
    Shape.expectUsageError(
      try await sandbox.capture(["listen", "--image", "-", "--confirm-stdin"]), command: "listen",
      message: "--confirm-stdin reads the answers on stdin; --image - cannot read an image there too")
    Shape.expectUsageError(
      try await sandbox.capture(["listen", "--image", "x.png", "--output", ""]), command: "listen",
      message: "--output needs a file name")
    Shape.expectUsageError(
      try await sandbox.capture(["listen", "--image", "x.png", "--confirm-timeout", "1s"]), command: "listen",
      message: "--confirm-timeout works with --confirm CMD or --confirm-stdin")
  }
}

/// A one-way signal between a runner callback (any thread) and a test task.
final class Flag: Sendable {
  private let isSet = Mutex(false)

  func set() { isSet.withLock { $0 = true } }

  func wait(seconds: Double) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
      if isSet.withLock({ $0 }) { return true }
      try? await Task.sleep(for: .milliseconds(20))
    }
    return false
  }
}
