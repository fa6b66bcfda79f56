// What capture writes to a real pseudo-terminal (python3's pty module holds the master side) against
// what it writes to a pipe: colour for the capture: prefix on stderr and aligned columns on stdout only
// on a terminal, NO_COLOR and --no-color honoured, pipes byte for byte as they always were.

import Foundation
import Testing

/// Runs capture with stdout and/or stderr on a pseudo-terminal (raw mode, so no CR is added) and the
/// other on a pipe; returns both streams' bytes and the exit status.
private let ptyRunner = #"""
  import base64, json, os, pty, select, subprocess, sys, tty
  def channel(on_tty):
      if on_tty:
          master, slave = pty.openpty()
          tty.setraw(slave)
          return master, slave
      return os.pipe()
  out_r, out_w = channel(sys.argv[1] == '1')
  err_r, err_w = channel(sys.argv[2] == '1')
  child = subprocess.Popen(sys.argv[3:], stdin=subprocess.DEVNULL, stdout=out_w, stderr=err_w)
  os.close(out_w)
  os.close(err_w)
  data = {out_r: b'', err_r: b''}
  live = [out_r, err_r]
  while live:
      ready, _, _ = select.select(live, [], [], 30)
      if not ready:
          break
      for fd in ready:
          try:
              chunk = os.read(fd, 65536)
          except OSError:  # EIO: the terminal's last slave was closed
              chunk = b''
          if chunk:
              data[fd] += chunk
          else:
              live.remove(fd)
  status = child.wait(timeout=30)
  print(json.dumps({'status': status, 'stdout': base64.b64encode(data[out_r]).decode(),
                    'stderr': base64.b64encode(data[err_r]).decode()}))
  """#

private struct Streams {
  var status: Int
  var stdout: String
  var stderr: String
}

private func run(
  _ sandbox: Sandbox, _ arguments: [String], stdoutTTY: Bool, stderrTTY: Bool,
  environment extra: [String: String] = [:]
) async throws -> Streams {
  let outcome = try await Runner.run(
    "/usr/bin/python3",
    ["-c", ptyRunner, stdoutTTY ? "1" : "0", stderrTTY ? "1" : "0", try Product.path()] + arguments,
    environment: sandbox.environment.merging(extra) { _, new in new })
  #expect(outcome.status == 0, "\(outcome)")
  let document = try parseJSON(outcome.out)
  func text(_ key: String) -> String {
    String(decoding: Data(base64Encoded: document[key]?.string ?? "") ?? Data(), as: UTF8.self)
  }
  return Streams(status: document["status"]?.int ?? -1, stdout: text("stdout"), stderr: text("stderr"))
}

private let red = "\u{1B}[1;31mcapture:\u{1B}[0m "
private let yellow = "\u{1B}[1;33mcapture:\u{1B}[0m "
private let usageLine =
  "ESKT_INVALIDPARAMETER (-18): unknown property 'bogus' (capture get --list shows them)\n"

@Suite("Terminal output")
struct TerminalTests {
  @Test(
    "an error's capture: prefix is bold red on a terminal, plain without one, with NO_COLOR or --no-color")
  func colouredErrorPrefix() async throws {
    let sandbox = try Sandbox()
    let bad = ["get", "socketcam", "bogus"]
    let coloured = try await run(sandbox, bad, stdoutTTY: false, stderrTTY: true)
    #expect(coloured.status == 18)
    #expect(coloured.stderr.hasPrefix(red + usageLine), "\(coloured.stderr.debugDescription)")
    // Only the prefix: the usage lines after it are the same as in a pipe.
    let piped = try await run(sandbox, bad, stdoutTTY: true, stderrTTY: false)
    #expect(piped.stderr.hasPrefix("capture: " + usageLine), "\(piped.stderr.debugDescription)")
    #expect(!piped.stderr.contains("\u{1B}"))
    #expect(coloured.stderr == piped.stderr.replacingOccurrences(of: "capture: ", with: red))

    for (arguments, environment) in [
      (bad, ["NO_COLOR": "1"]), (["--no-color"] + bad, [:]), (bad + ["--no-color"], [:]),
    ] {
      let plain = try await run(
        sandbox, arguments, stdoutTTY: false, stderrTTY: true, environment: environment)
      #expect(plain.status == 18)
      #expect(plain.stderr == piped.stderr, "\(arguments) \(environment)")
    }
    // no-color.org: an empty NO_COLOR does not turn colour off.
    let empty = try await run(sandbox, bad, stdoutTTY: false, stderrTTY: true, environment: ["NO_COLOR": ""])
    #expect(empty.stderr.hasPrefix(red), "\(empty.stderr.debugDescription)")
  }

  @Test("a warning's prefix is bold yellow on a terminal; stdout on a pipe stays plain")
  func colouredWarningPrefix() async throws {
    let sandbox = try Sandbox()
    #expect(try await sandbox.capture("set", "manager", "favorite", "*").status == 0)
    let terminal = try await run(sandbox, ["list"], stdoutTTY: false, stderrTTY: true)
    #expect(terminal.status == 0)
    #expect(
      terminal.stderr == yellow + "auto-connect favorite: * (capture get manager favorite)\n",
      "\(terminal.stderr.debugDescription)")
    #expect(terminal.stdout == "socketcam\tSocketCam C820\tSocketCamC820\tenabled\n")
  }

  @Test(
    "list, get --all and the data-source listing are aligned on a terminal, tab or space separated in a pipe")
  func alignedColumns() async throws {
    let sandbox = try Sandbox()
    let pty = try ScannerPTY()
    #expect(try await sandbox.capture("connect", "serial:\(pty.slavePath)").status == 0)

    let list = try await run(sandbox, ["list"], stdoutTTY: true, stderrTTY: false)
    let listPiped = try await sandbox.capture("list")
    #expect(list.status == 0 && listPiped.status == 0)
    let rows = listPiped.outLines.map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
    #expect(rows.count == 2 && rows.allSatisfy { $0.count == 4 }, "\(listPiped)")
    #expect(Outcome.lines(list.stdout) == aligned(rows), "\(list.stdout.debugDescription)")
    #expect(listPiped.outLines.contains("socketcam\tSocketCam C820\tSocketCamC820\tenabled"))

    let all = try await run(sandbox, ["get", "socketcam", "--all"], stdoutTTY: true, stderrTTY: false)
    let allPiped = try await sandbox.capture("get", "socketcam", "--all")
    #expect(allPiped.outLines.contains("data-source qr-code\tenable"))
    let allRows = allPiped.outLines.map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
    #expect(allRows.allSatisfy { $0.count == 2 })
    #expect(Outcome.lines(all.stdout) == aligned(allRows), "\(all.stdout.debugDescription)")
    #expect(!all.stdout.contains("\t") && !all.stdout.contains("\u{1B}"))

    let sources = try await run(
      sandbox, ["get", "socketcam", "data-source"], stdoutTTY: true, stderrTTY: false)
    let sourcesPiped = try await sandbox.capture("get", "socketcam", "data-source")
    #expect(sourcesPiped.outLines.first == "aztec enable")
    let sourceRows = sourcesPiped.outLines.map { $0.split(separator: " ") }
    #expect(Outcome.lines(sources.stdout) == aligned(sourceRows))
    #expect(Outcome.lines(sources.stdout).contains("aztec                 enable"))

    // get --list was already aligned with spaces: the same bytes on a terminal and in a pipe.
    let propertyList = try await run(sandbox, ["get", "--list"], stdoutTTY: true, stderrTTY: false)
    let propertyListPiped = try await sandbox.capture("get", "--list")
    #expect(propertyList.stdout == propertyListPiped.out)
    #expect(propertyListPiped.outLines.first == "abort                     0x80100000  -w  capture")
  }

  @Test("--json output is never decorated, on a terminal or not")
  func jsonUndecorated() async throws {
    let sandbox = try Sandbox()
    let terminal = try await run(
      sandbox, ["--json", "get", "socketcam", "--all"], stdoutTTY: true, stderrTTY: true)
    let piped = try await sandbox.capture("--json", "get", "socketcam", "--all")
    #expect(terminal.stdout == piped.out)
  }
}

/// The expected terminal form: every column but the last padded to its widest cell plus two spaces.
private func aligned(_ rows: [[Substring]]) -> [String] {
  let columns = rows.map(\.count).max() ?? 0
  let widths = (0..<columns).map { i in rows.map { i < $0.count ? $0[i].count : 0 }.max() ?? 0 }
  return rows.map { row in
    row.enumerated().map { i, cell in
      i == row.count - 1 ? String(cell) : cell + String(repeating: " ", count: widths[i] - cell.count + 2)
    }.joined()
  }
}
