// listen --output FILE: the event stream appended to a file, one write per event, following the path
// across log rotation; a file that cannot be opened or written is an error, never a silent drop.

import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite("listen --output")
struct ListenOutputTests {
  static func lines(_ sandbox: Sandbox, _ name: String) -> [String] {
    guard let bytes = try? sandbox.read(sandbox.path(name)) else { return [] }
    return Outcome.lines(String(decoding: bytes, as: UTF8.self))
  }

  static func events(_ sandbox: Sandbox, _ name: String) throws -> [JSONValue] {
    try lines(sandbox, name).map(parseJSON)
  }

  /// Waits until `name` holds `count` lines (capture writes them as the scans arrive).
  static func waitForLines(_ sandbox: Sandbox, _ name: String, _ count: Int) async -> Bool {
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline {
      if lines(sandbox, name).count >= count { return true }
      try? await Task.sleep(for: .milliseconds(20))
    }
    return false
  }

  @Test(
    "the file gets the lines stdout would carry, stdout stays empty, a second run appends, mode 0600; - is stdout"
  )
  func appendsWhatStdoutWouldCarry() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let samples = try ListenTests.scans(sandbox, images)
    for _ in 0..<2 {
      let outcome = try await sandbox.capture("listen", "--dir", "scans", "--output", "codes.txt")
      #expect(outcome.status == 0, "\(outcome)")
      #expect(outcome.stdout.isEmpty && outcome.stderr.isEmpty, "\(outcome)")
    }
    #expect(Self.lines(sandbox, "codes.txt") == samples.map(\.text) + samples.map(\.text))
    var info = stat()
    #expect(stat(sandbox.path("codes.txt"), &info) == 0)
    // 0600 whatever the umask (a umask only takes bits away, and none takes the owner's).
    #expect(info.st_mode & 0o777 == 0o600)

    let json = try await sandbox.capture("--json", "listen", "--dir", "scans", "--output", "events.jsonl")
    #expect(json.status == 0, "\(json)")
    #expect(json.stdout.isEmpty, "\(json)")
    let events = try Self.events(sandbox, "events.jsonl")
    #expect(
      events.map { $0["event"]?.string } == [
        "deviceArrival", "decodedData", "decodedData", "decodedData", "deviceRemoval",
      ])
    #expect(events.allSatisfy { $0.keysAreSorted })
    #expect(events.compactMap { $0["text"]?.string } == samples.map(\.text))

    // "-" is stdout, as for --image.
    let dash = try await sandbox.capture("listen", "--dir", "scans", "--output", "-")
    #expect(dash.status == 0, "\(dash)")
    #expect(dash.outLines == samples.map(\.text))
    #expect(!sandbox.exists(sandbox.path("-")))
  }

  /// A serial scanner on a pty sends A1..A3, the file is rotated, then A4..A6.
  func rotated(_ rotate: @escaping @Sendable (Sandbox) -> Void) async throws -> (Sandbox, Outcome) {
    let sandbox = try Sandbox()
    let pty = try ScannerPTY()
    let writer = Task {
      guard await pty.waitUntilOpened() else { return false }
      for n in 1...3 { pty.write(sppFrame("A\(n)", aim: "C0")) }
      // Arrival and three codes are in the file: rotate it under the running capture.
      guard await Self.waitForLines(sandbox, "events.jsonl", 4) else { return false }
      rotate(sandbox)
      for n in 4...6 { pty.write(sppFrame("A\(n)", aim: "C0")) }
      return true
    }
    let outcome = try await sandbox.capture(
      ["--json", "listen", "serial:\(pty.slavePath)?baud=115200", "--count", "6", "--output", "events.jsonl"])
    #expect(await writer.value, "capture never opened the pty or never wrote the first codes: \(outcome)")
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.stdout.isEmpty && outcome.stderr.isEmpty, "\(outcome)")
    return (sandbox, outcome)
  }

  @Test(
    "renamed mid-stream (logrotate nocreate, create): later lines land at the original path, none lost or doubled",
    arguments: [false, true])
  func rename(createsNewFile: Bool) async throws {
    let (sandbox, _) = try await rotated { sandbox in
      _ = Glibc.rename(sandbox.path("events.jsonl"), sandbox.path("events.jsonl.1"))
      if createsNewFile {
        // logrotate's create mode: an empty file with the mode it was told.
        close(open(sandbox.path("events.jsonl"), O_WRONLY | O_CREAT | O_EXCL, 0o640))
      }
    }
    let old = try Self.events(sandbox, "events.jsonl.1")
    let new = try Self.events(sandbox, "events.jsonl")
    #expect(
      old.map { $0["event"]?.string } == ["deviceArrival", "decodedData", "decodedData", "decodedData"])
    #expect(
      new.map { $0["event"]?.string } == ["decodedData", "decodedData", "decodedData", "deviceRemoval"])
    #expect((old + new).compactMap { $0["text"]?.string } == ["A1", "A2", "A3", "A4", "A5", "A6"])
    if createsNewFile {
      var info = stat()
      #expect(stat(sandbox.path("events.jsonl"), &info) == 0 && info.st_mode & 0o777 == 0o640)
    }
  }

  @Test("copytruncate mid-stream: the file restarts at offset 0 (no NUL hole), no line lost or doubled")
  func copyTruncate() async throws {
    let (sandbox, _) = try await rotated { sandbox in
      // logrotate's copytruncate: copy the file aside, then cut it to 0 in place.
      _ = try? sandbox.write("events.jsonl.1", sandbox.read(sandbox.path("events.jsonl")))
      _ = truncate(sandbox.path("events.jsonl"), 0)
    }
    let bytes = try sandbox.read(sandbox.path("events.jsonl"))
    #expect(!bytes.contains(0), "NUL bytes in the truncated file")
    #expect(bytes.first == UInt8(ascii: "{"))
    let old = try Self.events(sandbox, "events.jsonl.1")
    let new = try Self.events(sandbox, "events.jsonl")
    #expect(
      old.map { $0["event"]?.string } == ["deviceArrival", "decodedData", "decodedData", "decodedData"])
    #expect(
      new.map { $0["event"]?.string } == ["decodedData", "decodedData", "decodedData", "deviceRemoval"])
    #expect((old + new).compactMap { $0["text"]?.string } == ["A1", "A2", "A3", "A4", "A5", "A6"])
  }

  @Test("a directory capture may not write in exits 64 before any device is touched")
  func unwritableDirectory() async throws {
    let sandbox = try Sandbox()
    let images = try await Images.get()
    let image = try sandbox.copy(images.qr.path, to: "qr.png")
    _ = try sandbox.makeDirectory("locked")
    chmod(sandbox.path("locked"), 0o555)
    chmod(image, 0o644)
    let arguments = ["listen", "--image", image, "--output", sandbox.path("locked/events.log")]
    let outcome: Outcome
    if geteuid() == 0 {
      // Root writes anywhere: run capture as nobody, for whom the directory is what it is for users.
      guard let setpriv = Runner.which("setpriv") else {
        Issue.record("setpriv (util-linux) is needed to run capture unprivileged")
        return
      }
      chmod(sandbox.root, 0o755)
      outcome = try await Runner.run(
        setpriv, ["--reuid=65534", "--regid=65534", "--clear-groups", "--", try Product.path()] + arguments,
        environment: sandbox.environment, directory: sandbox.root)
    } else {
      outcome = try await sandbox.capture(arguments)
    }
    Shape.expectFailure(
      outcome, status: 64, name: "ESKT_FILEACCESSDENIED",
      message: "cannot open \(sandbox.path("locked/events.log")): Permission denied")
    #expect(!sandbox.exists(sandbox.path("locked/events.log")))
  }

  @Test("a directory that does not exist exits 63")
  func missingDirectory() async throws {
    let sandbox = try Sandbox()
    let images = try await Images.get()
    let outcome = try await sandbox.capture(
      "listen", "--image", images.qr.path, "--output", "no/such/dir/events.log")
    Shape.expectFailure(
      outcome, status: 63, name: "ESKT_FILENOTFOUND",
      message: "cannot open no/such/dir/events.log: No such file or directory")
  }

  @Test(
    "a write that fails mid-run (a full disk, /dev/full): an error on stderr, exit 33, nothing dropped silently"
  )
  func fullDisk() async throws {
    let sandbox = try Sandbox()
    let images = try await Images.get()
    let outcome = try await sandbox.capture("listen", "--image", images.qr.path, "--output", "/dev/full")
    #expect(outcome.status == 33, "\(outcome)")
    #expect(outcome.stdout.isEmpty, "\(outcome)")
    #expect(
      outcome.errLines.first
        == "capture: ESKT_UNABLEWRITEFILE (-33): cannot write /dev/full: No space left on device",
      "\(outcome)")
    // Events still arriving while listen stops are named as lost, one line each.
    #expect(
      outcome.errLines.dropFirst().allSatisfy {
        $0.hasPrefix("capture: ")
          && $0.hasSuffix(" event not written: cannot write /dev/full: No space left on device")
      }, "\(outcome)")

    let json = try await sandbox.capture(
      "--json", "listen", "--image", images.qr.path, "--output", "/dev/full")
    #expect(json.status == 33, "\(json)")
    #expect(
      json.outLines == [
        #"{"error":{"code":-33,"message":"cannot write /dev/full: No space left on device","name":"ESKT_UNABLEWRITEFILE"}}"#
      ], "\(json)")
  }
}
