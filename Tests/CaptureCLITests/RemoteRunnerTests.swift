import CaptureCore
import Synchronization
import Testing

@testable import CaptureCLI

/// A remote command is judged on what the parser made of its words (docs/fleet.md §5), so every
/// spelling of an option that names a local file, directory, device or program is refused alike.
@Suite("Remote commands: refused on the parsed command line")
struct RemoteRefusalTests {
  static func refusal(_ argv: [String], profile: Bool = false) throws -> CaptureError? {
    RemoteRunner.refusal(try ArgumentParser.parse(argv), hasProfile: profile)
  }

  @Test(
    "an option naming a local path is refused in every spelling",
    arguments: [
      ["set", "socketcam", "--from=/root/secret.json"],
      ["set", "socketcam", "--from", "/root/secret.json"],
      ["set", "socketcam", "--from", "/tmp/fifo", "--dry-run"],
      ["set", "socketcam", "--dry-run", "--from=/dev/ptmx"],
      ["set", "--json", "socketcam", "--from=./profile.json"],
      ["trigger", "socketcam", "start", "--image", "/dev/ptmx"],
      ["trigger", "socketcam", "start", "--image=/etc/shadow"],
      ["trigger", "socketcam", "start", "--image", "-"],
      ["trigger", "socketcam", "start", "--image=-"],
      ["trigger", "socketcam", "start", "--dir", "/root"],
      ["trigger", "socketcam", "start", "--dir=/root"],
      ["trigger", "socketcam", "start", "--camera", "/dev/video0"],
      ["trigger", "socketcam", "start", "--camera=/dev/ptmx"],
      ["trigger", "-q", "socketcam", "start", "--wait", "--image", "/dev/zero"],
    ])
  func pathOptionsRefused(_ argv: [String]) throws {
    let error = try #require(try Self.refusal(argv), "\(argv)")
    #expect(error.code == .invalidParameter)
    // With an inline profile it is no better: only --from - takes one.
    #expect(try Self.refusal(argv, profile: true) != nil)
  }

  @Test("the words after -- are operands, not options, and a path-looking value of a property is a value")
  func operandsAreNotOptions() throws {
    #expect(try Self.refusal(["set", "socketcam", "friendly-name", "--", "--from=/root/secret.json"]) == nil)
    #expect(try Self.refusal(["get", "socketcam", "friendly-name"]) == nil)
    #expect(try Self.refusal(["trigger", "socketcam", "stop"]) == nil)
    #expect(try Self.refusal(["list"]) == nil)
  }

  @Test("set --from - takes the inline profile, and only with one; a profile goes with set --from - only")
  func inlineProfile() throws {
    #expect(try Self.refusal(["set", "dock", "--from", "-"], profile: true) == nil)
    #expect(try Self.refusal(["set", "dock", "--from=-", "--dry-run"], profile: true) == nil)
    // Without the inline profile, "-" would be capture's own standard input.
    #expect(try Self.refusal(["set", "dock", "--from", "-"])?.code == .invalidParameter)
    #expect(
      try Self.refusal(["set", "dock", "friendly-name", "x"], profile: true)?.code == .invalidParameter)
    #expect(try Self.refusal(["get", "dock", "friendly-name"], profile: true)?.code == .invalidParameter)
  }

  @Test(
    "--help and --version in any spelling are refused",
    arguments: [
      ["get", "socketcam", "--help"], ["get", "-h", "socketcam"], ["list", "-qh"], ["list", "--version"],
    ])
  func helpRefused(_ argv: [String]) throws {
    #expect(try Self.refusal(argv)?.code == .invalidParameter)
  }

  @Test("every file, directory or program option of the allowed commands is covered by the refusal")
  func everyLocalOptionIsRefused() throws {
    for name in ["list", "get", "set", "trigger", "connect", "remove"] {
      let spec = try #require(CommandTree.command(named: name))
      for option in CommandTree.globalOptions + spec.options {
        switch option.kind {
        case .file, .directory, .command:
          let argv = [name, "socketcam", "--\(option.long)=/etc/shadow"]
          #expect(try Self.refusal(argv) != nil, "\(argv)")
        default: continue
        }
      }
    }
  }
}

@Suite("Remote commands: the cut")
struct RemoteCutTests {
  @Test("a cut before the handler is installed calls it when it is; a cut calls it once")
  func cutOnce() {
    let cut = Interruption.Cut()
    let calls = CutCounter()
    cut.fire()
    cut.install { calls.add() }
    cut.fire()
    #expect(calls.value == 1)
    let later = Interruption.Cut()
    later.install { calls.add() }
    #expect(calls.value == 1)
    later.fire()
    #expect(calls.value == 2)
  }

  @Test("a nested command's watch goes to its cut, never to the process's signal handler")
  func nestedWatch() async {
    let cut = Interruption.Cut()
    let calls = CutCounter()
    Interruption.$isNested.withValue(true) {
      Interruption.$cut.withValue(cut) { Interruption.watch { calls.add() } }
    }
    #expect(calls.value == 0)
    cut.fire()
    #expect(calls.value == 1)
  }
}

final class CutCounter: Sendable {
  private let count = Mutex(0)
  func add() { count.withLock { $0 += 1 } }
  var value: Int { count.withLock { $0 } }
}
