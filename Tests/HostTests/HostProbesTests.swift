import CaptureCore
import TestSupport
import Testing

@testable import Drivers

#if canImport(Glibc)
  import Glibc
#endif

extension TemporaryDirectory {
  /// Writes `text` to `relative` (its directories made) with `mode`.
  func write(_ relative: String, _ text: String, mode: mode_t = 0o644) throws {
    let full = path + "/" + relative
    let directory = String(full[..<full.lastIndex(of: "/")!])
    #expect(system("mkdir -p '\(directory)'") == 0)
    let fd = open(full, O_WRONLY | O_CREAT | O_TRUNC, mode)
    try #require(fd >= 0)
    _ = text.withCString { Glibc.write(fd, $0, strlen($0)) }
    close(fd)
    chmod(full, mode)
  }
}

@Suite("doctor: the probes")
struct HostProbesTests {
  @Test("rfkill switches are read from /sys/class/bluetooth/hciN/rfkillM/{soft,hard}")
  func rfkill() throws {
    let root = TemporaryDirectory()
    try root.write("class/bluetooth/hci0/rfkill3/soft", "1\n")
    try root.write("class/bluetooth/hci0/rfkill3/hard", "0\n")
    try root.write("class/bluetooth/hci1/rfkill4/soft", "0\n")
    try root.write("class/bluetooth/hci1/rfkill4/hard", "1\n")
    let probes = HostProbes(sysRoot: root.path)
    #expect(probes.rfkill("hci0") == RfkillState(soft: true, hard: false))
    #expect(probes.rfkill("hci1") == RfkillState(soft: false, hard: true))
    #expect(probes.rfkill("hci2") == nil)
    #expect(probes.rfkill("../hci0") == nil)
  }

  @Test("device nodes are found by prefix and number, in numeric order")
  func nodePaths() throws {
    let root = TemporaryDirectory()
    for name in [
      "input/event10", "input/event2", "input/mice", "ttyACM0", "ttyUSB1", "ttyS0", "video0", "video-x",
    ] {
      try root.write(name, "")
    }
    let probes = HostProbes(devRoot: root.path)
    #expect(probes.nodePaths(.input) == ["\(root.path)/input/event2", "\(root.path)/input/event10"])
    #expect(probes.nodePaths(.serial) == ["\(root.path)/ttyUSB1", "\(root.path)/ttyACM0"])
    #expect(probes.nodePaths(.video) == ["\(root.path)/video0"])
  }

  @Test("a node's access, mode and group come from stat and faccessat; a missing node is nil")
  func access() throws {
    let root = TemporaryDirectory()
    try root.write("ttyUSB0", "", mode: 0o600)
    let node = try #require(HostProbes().access(root.path + "/ttyUSB0", needsWrite: true))
    #expect(node.mode & 0o777 == 0o600)
    #expect(node.gid == getegid())
    #expect(node.processHasGroup)
    #expect(node.accessible == (faccessat(AT_FDCWD, root.path + "/ttyUSB0", R_OK | W_OK, AT_EACCESS) == 0))
    #expect(HostProbes().access(root.path + "/ttyUSB9", needsWrite: true) == nil)
  }

  @Test("bluetoothd's version is the first line of --version when it is a number")
  func versionParsing() {
    #expect(HostProbes.version(from: Array("5.66\n".utf8)) == "5.66")
    #expect(HostProbes.version(from: Array("  5.72 \nmore".utf8)) == "5.72")
    #expect(HostProbes.version(from: Array("usage: x\n".utf8)) == nil)
    #expect(HostProbes.version(from: []) == nil)
  }

  @Test("the daemon's executable from /proc/PID/exe; --version is run only for a bluetoothd")
  func daemonIdentity() throws {
    let root = TemporaryDirectory()
    try root.write("bin/bluetoothd", "#!/bin/sh\necho 5.66\n", mode: 0o755)
    try root.write("proc/7/cmdline", "")
    #expect(symlink(root.path + "/bin/bluetoothd", root.path + "/proc/7/exe") == 0)
    try root.write("proc/8/cmdline", "/usr/bin/python3\u{0}-m\u{0}dbusmock\u{0}")
    let probes = HostProbes(procRoot: root.path + "/proc")
    let cancellation = BlockingExecutor.Cancellation()
    #expect(
      probes.daemonIdentity(pid: 7, timeout: .seconds(5), cancellation: cancellation)
        == DaemonIdentity(executable: root.path + "/bin/bluetoothd", version: "5.66"))
    #expect(
      probes.daemonIdentity(pid: 8, timeout: .seconds(5), cancellation: cancellation)
        == DaemonIdentity(executable: "/usr/bin/python3", version: nil))
    #expect(
      probes.daemonIdentity(pid: nil, timeout: .seconds(5), cancellation: cancellation) == DaemonIdentity())
  }

  @Test("a child that does not finish within the bound is killed and gives nothing")
  func childBounded() {
    let clock = ContinuousClock()
    let start = clock.now
    let output = HostProbes.run(
      "/bin/sh", ["-c", "echo early; sleep 30"], timeout: .milliseconds(300),
      cancellation: BlockingExecutor.Cancellation())
    #expect(output == nil)
    #expect(clock.now - start < .seconds(5))
  }

  @Test("a cancelled job ends the child at once")
  func childCancelled() {
    let cancellation = BlockingExecutor.Cancellation()
    cancellation.cancel()
    #expect(HostProbes.run("/bin/sleep", ["30"], timeout: .seconds(30), cancellation: cancellation) == nil)
  }

  @Test("a child's output is bounded")
  func childOutputBounded() throws {
    let output = try #require(
      HostProbes.run(
        "/bin/sh", ["-c", "head -c 100000 /dev/zero"], timeout: .seconds(10),
        cancellation: BlockingExecutor.Cancellation()))
    #expect(output.count == HostProbes.readLimit)
  }
}

@Suite("doctor: the state file, read only")
struct StateFileCheckTests {
  func store(_ root: TemporaryDirectory) -> StateStore { StateStore(directory: root.path) }

  @Test("no state file yet is ok, subject the path")
  func missing() throws {
    let root = TemporaryDirectory()
    let row = HostChecks.stateFile(store(root).inspect())
    #expect(
      row
        == HostCheck(
          .stateFile, subject: root.path + "/devices.json", status: .ok, message: "no state file yet"))
  }

  @Test("a valid file at 0600 counts the remembered devices")
  func valid() throws {
    let root = TemporaryDirectory()
    try root.write(
      "devices.json",
      #"{"schemaVersion":1,"devices":[{"id":"serial:/dev/ttyACM0","name":"S","type":0,"transport":"serial"}]}"#,
      mode: 0o600)
    let row = HostChecks.stateFile(store(root).inspect())
    #expect(row.status == .ok)
    #expect(row.message == "1 remembered device")
  }

  @Test("mode 0644 is a warning with chmod 600 and the quoted path")
  func tooOpen() throws {
    let root = TemporaryDirectory()
    try root.write("devices.json", #"{"schemaVersion":1}"#, mode: 0o644)
    let path = root.path + "/devices.json"
    let row = HostChecks.stateFile(store(root).inspect())
    #expect(row.status == .warning)
    #expect(row.fix == "chmod 600 '\(path)'")
    #expect(row.code == .fileAccessDenied)
    #expect(row.message == "0 remembered devices; mode 0644 lets other users read it (0600 expected)")
  }

  @Test("a corrupt file is failure 85 with capture list as the fix, and it stays where it is")
  func corrupt() throws {
    let root = TemporaryDirectory()
    try root.write("devices.json", #"{"schemaVersion":1,"dev"#, mode: 0o600)
    let row = HostChecks.stateFile(store(root).inspect())
    #expect(row.status == .failure)
    #expect(row.code == .invalidFormat)
    #expect(row.fix == "capture list")
    #expect(access(root.path + "/devices.json", F_OK) == 0)
    #expect(HostProbes.names(in: root.path) == ["devices.json"])
  }

  @Test("a newer schema is failure 86 without a fix")
  func newer() throws {
    let root = TemporaryDirectory()
    try root.write("devices.json", #"{"schemaVersion":99}"#, mode: 0o600)
    let row = HostChecks.stateFile(store(root).inspect())
    #expect(row.code == .invalidVersion)
    #expect(row.fix == nil)
  }

  @Test(
    "this user's own file of mode 000 is failure 64 with chmod 600, not chown",
    .enabled(if: geteuid() != 0, "root reads any file"))
  func unreadable() throws {
    let root = TemporaryDirectory()
    try root.write("devices.json", #"{"schemaVersion":1}"#, mode: 0o000)
    let row = HostChecks.stateFile(store(root).inspect())
    #expect(row.code == .fileAccessDenied)
    #expect(row.fix == "chmod 600 '\(root.path)/devices.json'")
  }

  @Test("a directory where the file should be is failure 64 that says so, without a fix")
  func directoryInTheWay() throws {
    let root = TemporaryDirectory()
    #expect(mkdir(root.path + "/devices.json", 0o700) == 0)
    let row = HostChecks.stateFile(store(root).inspect())
    #expect(row.status == .failure && row.code == .fileAccessDenied)
    #expect(row.message.hasPrefix("\(root.path)/devices.json is a directory, not the state file"))
    #expect(row.fix == nil)
  }

  @Test("what stands in the way decides the message and the fix: chown only for another user's file")
  func causes() {
    let error = CaptureError(.fileAccessDenied, "cannot read /s/devices.json: Permission denied")
    let path = "/s/devices.json"
    let own = HostCause.stateUnreadable(
      error, path: path, access: .closedDirectory(path: "/s", mode: 0, owner: geteuid(), ownedByUser: true))
    #expect(
      own.message
        == "directory /s (mode 0000, this user's) does not let this user in, so /s/devices.json cannot be reached"
    )
    #expect(own.fix == "chmod u+rwx '/s'")
    let roots = HostCause.stateUnreadable(
      error, path: path, access: .closedDirectory(path: "/s", mode: 0o700, owner: 0, ownedByUser: false))
    #expect(roots.message.hasPrefix("directory /s (mode 0700, owned by user root) does not let this user in"))
    #expect(roots.fix == nil)
    let other = HostCause.stateUnreadable(error, path: path, access: .otherOwner(mode: 0o600, owner: 0))
    #expect(other.fix == "sudo chown \"$USER\" '/s/devices.json'")
    #expect(other.message.hasSuffix("(mode 0600, owned by user root)"))
    let mine = HostCause.stateUnreadable(error, path: path, access: .ownMode(mode: 0o200))
    #expect(mine.fix == "chmod 600 '/s/devices.json'")
    let directory = HostCause.stateUnreadable(error, path: path, access: .directoryInTheWay)
    #expect(directory.fix == nil && !directory.message.contains("chown"))
    for cause in [own, roots, other, mine, directory] { #expect(cause.code == .fileAccessDenied) }
  }
}

@Suite("doctor's causes in a failing command's error")
struct HostExplanationTests {
  @Test("the error keeps its code and what it was doing; the cause and fix replace the detail")
  func explaining() {
    let error = CaptureError(.notAvailable, "starting discovery: the adapter is not ready (powered off?)")
    let explained = HostCause.adapterSoftBlocked.explaining(error, subject: "hci0")
    #expect(explained.code == .notAvailable)
    #expect(
      explained.message
        == "starting discovery: hci0: blocked by rfkill (soft block); fix: rfkill unblock bluetooth (capture doctor checks the host)"
    )
  }

  @Test("a cause without a fix ends with the pointer alone; the adapter is named once")
  func withoutFix() {
    let error = CaptureError(.notAvailable, "Bluetooth adapter hci0: powered off (bluetoothctl power on)")
    let explained = HostCause.adapterHardBlocked.explaining(error, subject: "hci0")
    #expect(
      explained.message
        == "Bluetooth adapter hci0: blocked by a hardware switch (rfkill hard block): turn the wireless switch on (capture doctor checks the host)"
    )
  }

  @Test("a message that is all detail gets 'no Bluetooth' as its lead")
  func noContext() {
    let error = CaptureError(.notAvailable, "bluetoothd is not running (no org.bluez on the system bus)")
    #expect(
      HostCause.bluetoothdNotRunning.explaining(error).message
        == "no Bluetooth: org.bluez has no owner: bluetoothd is not running (is bluez installed? sudo apt-get install bluez); fix: sudo systemctl enable --now bluetooth (capture doctor checks the host)"
    )
  }

  @Test("the first real cause is picked, one with the error's own code first")
  func firstCause() {
    let rows = [
      HostCheck(.adapter, status: .failure, message: "not checked: x", code: .bluetoothPermissionMissing),
      HostCheck(.kernelBluetooth, status: .failure, message: "k", code: .notAvailable),
      HostCheck(.bluezPermission, status: .failure, message: "p", code: .bluetoothPermissionMissing),
    ]
    #expect(HostExplanation.firstCause(rows, code: .bluetoothPermissionMissing)?.message == "p")
    #expect(HostExplanation.firstCause(rows, code: .notAvailable)?.message == "k")
  }

  @Test("an error of another code, or one already explained, is left as it is")
  func untouched() async {
    let timeout = CaptureError(.requestTimedOut, "connecting: no answer")
    #expect(await HostExplanation.explain(timeout, adapter: nil, route: .blueZ) == timeout)
    let done = CaptureError(.notAvailable, "x: y (capture doctor checks the host)")
    #expect(await HostExplanation.explain(done, adapter: nil, route: .blueZ) == done)
  }
}
