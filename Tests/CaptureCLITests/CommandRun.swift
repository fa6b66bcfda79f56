import CaptureCore
import TestSupport
import Testing

@testable import CaptureCLI

#if canImport(Glibc)
  import Glibc
#endif

/// What one command wrote, and its exit status.
struct CommandRun {
  var status: Int32
  var stdout: String
  var stderr: String

  var stdoutLines: [String] { stdout.split(separator: "\n").map(String.init) }
  var stderrLines: [String] { stderr.split(separator: "\n").map(String.init) }
}

/// Runs `arguments` through CaptureCLI.run with `system` and `state`, stdout and stderr captured in
/// files (not a terminal: plain lines, single spaces between columns).
func runCommand(_ arguments: [String], system: any DeviceSystem, state: StateStore) async throws -> CommandRun
{
  let parsed = try ArgumentParser.parse(arguments)
  let command = try #require(parsed.command)
  let globals = try CaptureCLI.globalOptions(parsed)
  let temporary = TemporaryDirectory("command")
  let out = open(temporary.file("stdout"), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
  let err = open(temporary.file("stderr"), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
  try #require(out >= 0 && err >= 0)
  let output = Output(
    mode: globals.json ? .json : .plain, quiet: globals.quiet, verbose: false, stdoutFD: out, stderrFD: err)
  let context = Context(globals: globals, output: output, state: state, system: system)
  let status = await CaptureCLI.run(command, parsed, context)
  func contents(_ fd: Int32) -> String {
    lseek(fd, 0, SEEK_SET)
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let n = read(fd, &buffer, buffer.count)
      if n <= 0 { break }
      bytes += buffer[0..<n]
    }
    close(fd)
    return String(decoding: bytes, as: UTF8.self)
  }
  return CommandRun(status: status, stdout: contents(out), stderr: contents(err))
}
