// `capture doctor` through the built binary: this machine's real conditions (no system bus, the kernel's
// AF_BLUETOOTH, the device nodes under /dev), the BlueZ rig (adapters powered, off and rfkill-blocked, no
// adapter, bluetoothd stopped, a bus that denies org.bluez to a user), device nodes and a state file this
// user may not open, and the causes the failing commands name (discover, connect, listen) with doctor's own
// text. Facts relied on: BlueZ 5.66 doc/adapter-api.txt (PowerState, "off-blocked"), rfkill(8), and the
// D-Bus specification's org.freedesktop.DBus.Error.AccessDenied for a message the bus policy refuses.

import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

private let hci0Address = "00:AA:01:00:00:01"
private let hci1Address = "00:AA:01:00:00:02"
private let d600 = "00:11:22:7E:F6:19"
private let causeSuffix = " (capture doctor checks the host)"
private let powerOnDefault = "bluetoothctl power on"
private let powerOnHci1 = "busctl set-property org.bluez /org/bluez/hci1 org.bluez.Adapter1 Powered b true"
private let unblock = "rfkill unblock bluetooth"
private let joinBluetooth = #"sudo usermod -aG bluetooth "$USER""#

/// A remembered device of each kind doctor looks at (BLE ones name no device node).
private func stateFile(_ ids: [(id: String, transport: String)]) -> String {
  let devices = ids.map {
    #"{"id":"\#($0.id)","name":"Scanner","type":0,"transport":"\#($0.transport)","lastSeen":"2026-01-01T00:00:00.000Z"}"#
  }
  return #"{"schemaVersion":1,"devices":["# + devices.joined(separator: ",") + "]}"
}

/// A pty remembered as `serial:` (root:dialout 0660, as a USB serial adapter's node is) and a
/// character device remembered as `hid:` (1:3, what /dev/null is; root:input 0660) in `sandbox`'s
/// state file, which user 65534 may read but neither node; nil, with the issue recorded, when mknod
/// is refused.
private func rememberUnreadableNodes(_ sandbox: Sandbox) throws -> (pty: ScannerPTY, hid: String)? {
  let pty = try ScannerPTY()
  let hid = sandbox.path("event-scanner")
  try sandbox.write(
    "state/capture/devices.json", stateFile([("serial:\(pty.slavePath)", "serial"), ("hid:\(hid)", "hid")]))
  try Unprivileged.give(sandbox)
  #expect(chmod(sandbox.statePath, 0o600) == 0)
  guard mknod(hid, S_IFCHR | 0o660, (1 << 8) | 3) == 0 else {
    Issue.record("mknod \(hid): \(String(cString: strerror(errno)))")
    return nil
  }
  guard let input = try systemGroup("input"), let dialout = try systemGroup("dialout") else { return nil }
  #expect(chown(hid, 0, input) == 0 && chmod(hid, 0o660) == 0)
  #expect(chown(pty.slavePath, 0, dialout) == 0 && chmod(pty.slavePath, 0o660) == 0)
  return (pty, hid)
}

/// The gid of the group a kind's nodes have on a real system — `input` (made by udev's package) for
/// evdev nodes, `dialout` (base-passwd's static group 20) for serial ones — created with
/// `groupadd --system` when this root lacks it: a Debian root without udev has no `input` group, and a
/// node left in group root gets doctor's chgrp fix instead of the usermod fix these tests check.
/// nil, with the issue recorded, when the group cannot be had.
///
/// One test at a time looks and creates: groupadd (shadow 4.13) checks that the name is free before
/// it takes /etc/group's lock, so two at once both pass the check and the second rewrites the first's
/// entry with a new gid; a node already given the first gid then has a group with no name (seen in
/// the fresh root: `usermod -aG 997`).
private func systemGroup(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> gid_t? {
  try groupCreation.withLock { _ in
    if let group = getgrnam(name) { return group.pointee.gr_gid }
    let groupadd = Process()
    groupadd.executableURL = URL(fileURLWithPath: "/usr/sbin/groupadd")
    groupadd.arguments = ["--system", name]
    try groupadd.run()
    groupadd.waitUntilExit()
    guard groupadd.terminationStatus == 0, let group = getgrnam(name) else {
      Issue.record(
        "the test needs group \(name) and groupadd --system \(name) exited \(groupadd.terminationStatus)",
        sourceLocation: sourceLocation)
      return nil
    }
    return group.pointee.gr_gid
  }
}

private let groupCreation = Mutex(())

private let twoBLEDevices = stateFile([("00:11:22:7E:F6:19", "ble"), ("00:11:22:7E:F6:1A", "ble")])

@Suite("capture doctor: every check, its fix and the exit status")
struct DoctorTests {
  // MARK: expected rows

  /// The rows after bluez-permission, which depend on the host (and on who runs doctor).
  static func hostRows(
    _ sandbox: Sandbox, state: ExpectedRow? = nil, uid: uid_t? = nil, rememberedHID: [String] = [],
    rememberedSerial: [String] = []
  ) -> [ExpectedRow] {
    [HostFacts.kernelRow()]
      + HostFacts.nodeRows(
        uid: uid, gid: uid == nil ? 0 : Unprivileged.gid, rememberedHID: rememberedHID,
        rememberedSerial: rememberedSerial)
      + [state ?? ExpectedRow(.ok("state-file", "no state file yet", subject: sandbox.statePath))]
      + HostFacts.decoderRows()
  }

  /// system-bus and bluetoothd rows with the rig's bus reachable and its bluetoothd model running.
  static func rigBusRows(_ rig: BlueZRig, unprivileged: Bool = false) -> [ExpectedRow] {
    let pid = rig.mockPID ?? -1
    // The model is a python process: its executable is not named bluetoothd, so no --version is run.
    let exe = HostFacts.executable(pid: pid, readableLink: !unprivileged) ?? "?"
    return [
      ExpectedRow(.ok("system-bus", "\(rig.busAddress) (system bus reachable)")),
      ExpectedRow(.ok("bluetoothd", "org.bluez is running (pid \(pid), \(exe)), version unknown")),
    ]
  }

  static func adapterOK(_ name: String, _ address: String) -> ExpectedRow {
    ExpectedRow(.ok("adapter", "\(name) \(address), powered", subject: name))
  }

  static func poweredOff(_ name: String, status: String = "failure", fix: String) -> ExpectedRow {
    ExpectedRow(
      DoctorRow(check: "adapter", subject: name, status: status, message: "powered off", fix: fix, code: -32))
  }

  static func softBlocked(_ name: String, status: String = "failure") -> ExpectedRow {
    ExpectedRow("adapter", subject: name, status: status, containing: ["rfkill"], fix: unblock, code: -32)
  }

  static let permissionOK = ExpectedRow(.ok("bluez-permission", "this user may talk to org.bluez"))

  static func doctor(_ sandbox: Sandbox, _ arguments: [String] = []) async throws -> (
    json: Outcome, plain: Outcome, quiet: Outcome
  ) {
    let json = try await sandbox.capture(["--json", "doctor"] + arguments)
    let plain = try await sandbox.capture(["doctor"] + arguments)
    let quiet = try await sandbox.capture(["-q", "doctor"] + arguments)
    return (json, plain, quiet)
  }

  static func doctorUnprivileged(_ sandbox: Sandbox, _ arguments: [String] = []) async throws -> (
    json: Outcome, plain: Outcome
  ) {
    let json = try await Unprivileged.capture(sandbox, ["--json", "doctor"] + arguments)
    let plain = try await Unprivileged.capture(sandbox, ["doctor"] + arguments)
    return (json, plain)
  }

  // MARK: this machine, no system bus

  @Test(
    "no system bus: system-bus fails 32 with `sudo systemctl start dbus`; the Bluetooth rows are not checked")
  func noSystemBus() async throws {
    let sandbox = try Sandbox()
    let runs = try await Self.doctor(sandbox)
    let expected =
      [
        ExpectedRow(
          "system-bus", status: "failure", containing: [], fix: "sudo systemctl start dbus", code: -32),
        .notChecked("bluetoothd", after: "system-bus", code: -32),
        .notChecked("adapter", after: "system-bus", code: -32),
        .notChecked("bluez-permission", after: "system-bus", code: -32),
      ] + Self.hostRows(sandbox)
    let rows = DoctorExpect.verify(json: runs.json, plain: runs.plain, quiet: runs.quiet, expected: expected)
    #expect(rows.map(\.check) == doctorCheckOrder, "one row per check, in the published order")
    #expect(runs.json.status == 32)
    // Read only: doctor made no state directory.
    #expect(!sandbox.exists(sandbox.stateDirectory))
  }

  @Test(
    "kernel-bluetooth follows socket(AF_BLUETOOTH) here: EAFNOSUPPORT is a failure 32 with `sudo modprobe bluetooth`"
  )
  func kernelBluetooth() async throws {
    let sandbox = try Sandbox()
    let report = DoctorReport.json(try await sandbox.capture(["--json", "doctor"]))
    let row = report.rows("kernel-bluetooth")
    #expect(row.count == 1)
    if let row = row.first {
      #expect(HostFacts.kernelRow().matches(row), "\(row) vs \(HostFacts.kernelRow())")
    }
    if HostFacts.kernelLacksBluetooth {
      #expect(
        row.first?.plain
          == "failure kernel-bluetooth: \(HostFacts.kernelMessageNoSupport); fix: sudo modprobe bluetooth")
    }
  }

  // MARK: the rig's bluetoothd

  @Test(
    "one powered adapter: the bus, bluetoothd (version unknown: not a bluetoothd binary), hci0 and permission ok"
  )
  func onePoweredAdapter() async throws {
    try await withRig { rig, sandbox in
      let runs = try await Self.doctor(sandbox)
      let expected =
        Self.rigBusRows(rig) + [Self.adapterOK("hci0", hci0Address), Self.permissionOK]
        + Self.hostRows(sandbox)
      DoctorExpect.verify(json: runs.json, plain: runs.plain, quiet: runs.quiet, expected: expected)
      // Read only: the adapter was not touched.
      #expect(try await rig.ctl("GetDiscovery", "/org/bluez/hci0").contains(#""Discovering": false"#))
    }
  }

  @Test(
    "a powered and an unpowered adapter: hci1 is a warning (code -32, the busctl fix) and not the exit status"
  )
  func poweredAndUnpowered() async throws {
    try await withRig { rig, sandbox in
      try await rig.ctl("AddAdapterInState", "hci1", hci1Address, "off")
      let runs = try await Self.doctor(sandbox)
      let expected =
        Self.rigBusRows(rig) + [
          Self.adapterOK("hci0", hci0Address), Self.poweredOff("hci1", status: "warning", fix: powerOnHci1),
          Self.permissionOK,
        ] + Self.hostRows(sandbox)
      let rows = DoctorExpect.verify(
        json: runs.json, plain: runs.plain, quiet: runs.quiet, expected: expected)
      #expect(!rows.contains { $0.check == "adapter" && $0.status == "failure" })
      // The adapter is still off: doctor never powers one.
      let state = try await rig.ctl("GetDiscovery", "/org/bluez/hci1")
      #expect(state.contains(#""Discovering": false"#), "\(state)")
    }
  }

  @Test(
    "only an unpowered hci0: failure 32 with `bluetoothctl power on`, the exit status and the stderr line")
  func onlyUnpowered() async throws {
    try await withRig(powerState: "off") { rig, sandbox in
      let runs = try await Self.doctor(sandbox)
      let expected =
        Self.rigBusRows(rig) + [Self.poweredOff("hci0", fix: powerOnDefault), Self.permissionOK]
        + Self.hostRows(sandbox)
      let rows = DoctorExpect.verify(
        json: runs.json, plain: runs.plain, quiet: runs.quiet, expected: expected)
      #expect(runs.plain.status == 32)
      #expect(runs.plain.outLines.contains("failure adapter hci0: powered off; fix: bluetoothctl power on"))
      let failures = rows.filter { $0.status == "failure" }.count
      #expect(
        runs.plain.errLines == [
          "capture: ESKT_NOTAVAILABLE (-32): doctor: \(failures == 1 ? "1 check failed" : "\(failures) checks failed"); the first: adapter hci0: powered off"
        ])
    }
  }

  @Test("an rfkill-blocked adapter (PowerState off-blocked): failure 32 with `rfkill unblock bluetooth`")
  func blocked() async throws {
    try await withRig(powerState: "off-blocked") { rig, sandbox in
      let runs = try await Self.doctor(sandbox)
      let expected =
        Self.rigBusRows(rig) + [Self.softBlocked("hci0"), Self.permissionOK] + Self.hostRows(sandbox)
      DoctorExpect.verify(json: runs.json, plain: runs.plain, quiet: runs.quiet, expected: expected)
      #expect(runs.json.status == 32)
    }
  }

  @Test(
    "a blocked hci0 beside a powered hci1: still a failure, since the commands use hci0 without --adapter; with --adapter hci1 a warning"
  )
  func blockedBesideUsable() async throws {
    try await withRig(powerState: "off-blocked") { rig, sandbox in
      try await rig.ctl("AddAdapterInState", "hci1", hci1Address, "on")
      let runs = try await Self.doctor(sandbox)
      let expected =
        Self.rigBusRows(rig) + [
          Self.softBlocked("hci0"), Self.adapterOK("hci1", hci1Address), Self.permissionOK,
        ] + Self.hostRows(sandbox)
      DoctorExpect.verify(json: runs.json, plain: runs.plain, quiet: runs.quiet, expected: expected)
      #expect(runs.json.status == 32)
      let chosen = try await Self.doctor(sandbox, ["--adapter", "hci1"])
      let expectedChosen =
        Self.rigBusRows(rig) + [
          Self.softBlocked("hci0", status: "warning"), Self.adapterOK("hci1", hci1Address), Self.permissionOK,
        ] + Self.hostRows(sandbox)
      DoctorExpect.verify(
        json: chosen.json, plain: chosen.plain, quiet: chosen.quiet, expected: expectedChosen)
    }
  }

  @Test("--adapter hci1 selects the unpowered one: failure 32 with the busctl fix; hci0 stays ok")
  func selectedAdapter() async throws {
    try await withRig { rig, sandbox in
      try await rig.ctl("AddAdapterInState", "hci1", hci1Address, "off")
      let runs = try await Self.doctor(sandbox, ["--adapter", "hci1"])
      let expected =
        Self.rigBusRows(rig) + [
          Self.adapterOK("hci0", hci0Address), Self.poweredOff("hci1", fix: powerOnHci1),
        ]
        + [Self.permissionOK] + Self.hostRows(sandbox)
      DoctorExpect.verify(json: runs.json, plain: runs.plain, quiet: runs.quiet, expected: expected)
      #expect(runs.json.status == 32)
      #expect(
        runs.plain.outLines.contains(
          "failure adapter hci1: powered off; fix: busctl set-property org.bluez /org/bluez/hci1 org.bluez.Adapter1 Powered b true"
        ))
    }
  }

  @Test("--adapter hci0 with a blocked hci1: hci1 is only a warning")
  func selectedUsable() async throws {
    try await withRig { rig, sandbox in
      try await rig.ctl("AddAdapterInState", "hci1", hci1Address, "off-blocked")
      let runs = try await Self.doctor(sandbox, ["--adapter", "hci0"])
      let expected =
        Self.rigBusRows(rig) + [
          Self.adapterOK("hci0", hci0Address), Self.softBlocked("hci1", status: "warning"),
        ]
        + [Self.permissionOK] + Self.hostRows(sandbox)
      DoctorExpect.verify(json: runs.json, plain: runs.plain, quiet: runs.quiet, expected: expected)
    }
  }

  @Test("no adapter at all: one adapter row without subject, failure 32, no fix, the dmesg hint")
  func noAdapter() async throws {
    try await withRig(powerState: nil) { rig, sandbox in
      let runs = try await Self.doctor(sandbox)
      let expected =
        Self.rigBusRows(rig) + [
          ExpectedRow(
            DoctorRow(
              check: "adapter", subject: nil, status: "failure",
              message:
                "no Bluetooth adapter (bluetoothd sees none): plug one in; dmesg | grep -i bluetooth shows why the kernel has none",
              fix: nil, code: -32)),
          Self.permissionOK,
        ] + Self.hostRows(sandbox)
      DoctorExpect.verify(json: runs.json, plain: runs.plain, quiet: runs.quiet, expected: expected)
      #expect(runs.json.status == 32)
    }
  }

  @Test(
    "bluetoothd stopped: failure 32 with `sudo systemctl enable --now bluetooth`; adapter and permission not checked"
  )
  func bluetoothdStopped() async throws {
    try await withRig { rig, sandbox in
      try await rig.stopBluez()
      let runs = try await Self.doctor(sandbox)
      let expected =
        [
          ExpectedRow(.ok("system-bus", "\(rig.busAddress) (system bus reachable)")),
          ExpectedRow(
            "bluetoothd", status: "failure", containing: ["is bluez installed? sudo apt-get install bluez"],
            fix: "sudo systemctl enable --now bluetooth", code: -32),
          .notChecked("adapter", after: "bluetoothd", code: -32),
          .notChecked("bluez-permission", after: "bluetoothd", code: -32),
        ] + Self.hostRows(sandbox)
      DoctorExpect.verify(json: runs.json, plain: runs.plain, quiet: runs.quiet, expected: expected)
      #expect(runs.json.status == 32)
    }
  }

  @Test(
    "a bus that denies org.bluez to this user: bluez-permission fails 99 with `sudo usermod -aG bluetooth`",
    .enabled(if: Unprivileged.available, "needs root and setpriv to run doctor as user 65534"))
  func deniedUser() async throws {
    try await withRig(denyBluezFor: [Unprivileged.userName]) { rig, sandbox in
      try Unprivileged.give(sandbox)
      let runs = try await Self.doctorUnprivileged(sandbox)
      // Decision (the contract names no order for it): the adapters cannot be read without org.bluez, so
      // the adapter row is "not checked" with the permission failure's message and code.
      let expected =
        Self.rigBusRows(rig, unprivileged: true) + [
          .notChecked("adapter", after: "bluez-permission", code: -99),
          ExpectedRow(
            "bluez-permission", status: "failure", containing: [], fix: joinBluetooth, code: -99),
        ] + Self.hostRows(sandbox, uid: Unprivileged.uid)
      DoctorExpect.verify(json: runs.json, plain: runs.plain, expected: expected)
      #expect(runs.json.status == 99)
      // The same bus lets root through: the deny is the bus policy's, for that user only.
      let root = DoctorReport.json(try await sandbox.capture(["--json", "doctor"]))
      #expect(root.rows("bluez-permission").map(\.status) == ["ok"])
    }
  }

  /// A directory (not in a sandbox: the rig starts first) holding `bluetoothd`, a script with `body`.
  static func fakeBluetoothd(_ body: String) throws -> String {
    var template = Array("/tmp/capture-fake-bluetoothd.XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw HarnessError(description: "mkdtemp: \(errno)") }
    let directory = String(cString: made)
    let path = directory + "/bluetoothd"
    guard FileManager.default.createFile(atPath: path, contents: Data(("#!/bin/sh\n" + body + "\n").utf8)),
      chmod(path, 0o755) == 0, chmod(directory, 0o755) == 0
    else { throw HarnessError(description: "cannot write \(path)") }
    return path
  }

  @Test(
    "bluetoothd's version from its argv[0] when its exe link is not readable: 5.50 is a warning (older than 5.55)",
    .enabled(if: Unprivileged.available, "needs root and setpriv to run doctor as user 65534"))
  func oldBluetoothd() async throws {
    let fake = try Self.fakeBluetoothd(#"[ "$1" = --version ] && echo 5.50"#)
    defer { try? FileManager.default.removeItem(atPath: (fake as NSString).deletingLastPathComponent) }
    try await withRig(reachableByAll: true, bluetoothdArgv0: fake) { rig, sandbox in
      try Unprivileged.give(sandbox)
      let pid = rig.mockPID ?? -1
      let report = DoctorReport.json(try await Unprivileged.capture(sandbox, ["--json", "doctor"]))
      let rows = report.rows("bluetoothd")
      #expect(rows.count == 1)
      if let row = rows.first {
        #expect(row.status == "warning" && row.code == -32 && row.subject == nil, "\(row)")
        #expect(row.message.hasPrefix("bluetoothd 5.50 is running (pid \(pid))"), "\(row)")
      }
      // Root reads the exe link (python3): no version asked, still ok.
      let root = DoctorReport.json(try await sandbox.capture(["--json", "doctor"]))
      let exe = HostFacts.executable(pid: pid, readableLink: true) ?? "?"
      #expect(
        root.rows("bluetoothd") == [
          .ok("bluetoothd", "org.bluez is running (pid \(pid), \(exe)), version unknown")
        ])
    }
  }

  @Test(
    "a bluetoothd --version that hangs or floods: doctor still ends within --timeout's bound and reports the daemon",
    .enabled(if: Unprivileged.available, "needs root and setpriv to run doctor as user 65534"),
    arguments: ["sleep 60", "exec yes 5.66"])
  func hostileBluetoothdVersion(_ body: String) async throws {
    let fake = try Self.fakeBluetoothd(body)
    defer { try? FileManager.default.removeItem(atPath: (fake as NSString).deletingLastPathComponent) }
    try await withRig(reachableByAll: true, bluetoothdArgv0: fake) { rig, sandbox in
      try Unprivileged.give(sandbox)
      let outcome = try await Unprivileged.capture(
        sandbox, ["--timeout", "2s", "--json", "doctor"], timeLimit: 120)
      #expect(!outcome.timedOut, "\(outcome)")
      let report = DoctorReport.json(outcome)
      let rows = report.rows("bluetoothd")
      #expect(rows.count == 1, "\(outcome)")
      #expect(rows.first?.message.contains("pid \(rig.mockPID ?? -1)") == true, "\(rows)")
      #expect(rows.first?.status != "failure", "bluetoothd runs: \(rows)")
      #expect(report.rows("adapter").map(\.status) == ["ok"])
    }
  }

  // MARK: device nodes and the state file

  @Test(
    "a remembered pty and hid node this user may not open: one failure 64 each, `usermod -aG` the node's group",
    .enabled(if: Unprivileged.available, "needs root and setpriv to run doctor as user 65534"))
  func unreadableNodes() async throws {
    try await withRig(reachableByAll: true) { rig, sandbox in
      guard let (pty, hid) = try rememberUnreadableNodes(sandbox) else { return }
      let ptyGroup = HostFacts.nodeGroup(pty.slavePath) ?? "?"
      #expect(ptyGroup == "dialout")
      let runs = try await Self.doctorUnprivileged(sandbox)
      let expected =
        Self.rigBusRows(rig, unprivileged: true) + [Self.adapterOK("hci0", hci0Address), Self.permissionOK]
        + Self.hostRows(
          sandbox, state: ExpectedRow(.ok("state-file", "2 remembered devices", subject: sandbox.statePath)),
          uid: Unprivileged.uid, rememberedHID: [hid], rememberedSerial: [pty.slavePath])
      let rows = DoctorExpect.verify(json: runs.json, plain: runs.plain, expected: expected)
      let serial = rows.filter { $0.check == "serial" && $0.subject == pty.slavePath }
      #expect(serial.map(\.fix) == ["sudo usermod -aG \(ptyGroup) \"$USER\""], "\(rows)")
      #expect(serial.map(\.code) == [-64])
      let hidRows = rows.filter { $0.check == "input" && $0.subject == hid }
      #expect(hidRows.map(\.fix) == [#"sudo usermod -aG input "$USER""#], "\(rows)")
      #expect(hidRows.map(\.code) == [-64])
      // Root may open both: the same state gives ok rows.
      let root = DoctorReport.json(try await sandbox.capture(["--json", "doctor"]))
      #expect(root.rows("serial").map(\.status) == ["ok"], "\(root.rows)")
      #expect(root.rows("input").map(\.status) == ["ok"], "\(root.rows)")
    }
  }

  @Test(
    "a user the group database lists in the node's group, in a session without it: 'log out and back in', no fix",
    .enabled(
      if: Unprivileged.available && Unprivileged.listedMember != nil,
      "needs root, setpriv and a listed group member"))
  func listedButNotInSession() async throws {
    guard let member = Unprivileged.listedMember else { return }
    let sandbox = try Sandbox()
    let pty = try ScannerPTY()
    try sandbox.write("state/capture/devices.json", stateFile([("serial:\(pty.slavePath)", "serial")]))
    try Unprivileged.give(sandbox, uid: member.uid, gid: member.gid)
    #expect(chmod(sandbox.statePath, 0o600) == 0)
    #expect(chown(pty.slavePath, 0, member.groupID) == 0 && chmod(pty.slavePath, 0o660) == 0)
    let report = DoctorReport.json(
      try await Unprivileged.capture(sandbox, ["--json", "doctor"], uid: member.uid, gid: member.gid))
    let rows = report.rows("serial")
    #expect(rows.count == 1, "\(report.rows)")
    if let row = rows.first {
      #expect(
        ExpectedRow(
          "serial", subject: pty.slavePath, status: "failure", containing: ["log out and back in"], fix: nil,
          code: -64
        ).matches(row), "\(row)")
      // The error names the same cause, without a fix to run.
      let listen = try await Unprivileged.capture(
        sandbox, ["listen", "serial:\(pty.slavePath)", "--count", "1"], uid: member.uid, gid: member.gid)
      Causes.expectCause(listen, row: row, code: 64)
      #expect(listen.errLines.first?.hasSuffix(": \(row.message)\(causeSuffix)") == true, "\(listen)")
    }
  }

  @Test("a state file wider than 0600 is a warning with `chmod 600 '<path>'`")
  func stateFileMode() async throws {
    let sandbox = try Sandbox()
    try sandbox.write("state/capture/devices.json", twoBLEDevices)
    #expect(chmod(sandbox.statePath, 0o644) == 0)
    let runs = try await Self.doctor(sandbox)
    // Decision: the warning carries the code the failure for that file would have, FILEACCESSDENIED.
    let state = ExpectedRow(
      "state-file", subject: sandbox.statePath, status: "warning", containing: [],
      fix: "chmod 600 '\(sandbox.statePath)'", code: -64)
    let rows = DoctorExpect.verify(
      json: runs.json, plain: runs.plain, quiet: runs.quiet,
      expected: [
        ExpectedRow(
          "system-bus", status: "failure", containing: [], fix: "sudo systemctl start dbus", code: -32),
        .notChecked("bluetoothd", after: "system-bus", code: -32),
        .notChecked("adapter", after: "system-bus", code: -32),
        .notChecked("bluez-permission", after: "system-bus", code: -32),
      ] + Self.hostRows(sandbox, state: state))
    #expect(rows.filter { $0.status == "warning" }.count == 1)
    #expect(StateFiles.mode(sandbox.statePath) == 0o644, "doctor changes nothing")
  }

  @Test("a corrupt state file: failure 85 with `capture list`, and the file is left where it is")
  func stateFileCorrupt() async throws {
    try await withRig { rig, sandbox in
      let corrupt = Array(#"{"schemaVersion":1,"devices":[{"id":"#.utf8)
      try sandbox.write("state/capture/devices.json", corrupt)
      #expect(chmod(sandbox.statePath, 0o600) == 0)
      let runs = try await Self.doctor(sandbox)
      let state = ExpectedRow(
        "state-file", subject: sandbox.statePath, status: "failure", containing: [], fix: "capture list",
        code: -85)
      DoctorExpect.verify(
        json: runs.json, plain: runs.plain, quiet: runs.quiet,
        expected: Self.rigBusRows(rig) + [Self.adapterOK("hci0", hci0Address), Self.permissionOK]
          + Self.hostRows(sandbox, state: state))
      #expect(try sandbox.read(sandbox.statePath) == corrupt, "not moved aside, not rewritten")
      #expect(try StateFiles.names(sandbox) == ["devices.json"])
      if !HostFacts.kernelLacksBluetooth { #expect(runs.json.status == 85) }
    }
  }

  @Test("a state file of a newer schema: failure 86, no fix, untouched")
  func stateFileNewer() async throws {
    let sandbox = try Sandbox()
    let newer = Array(#"{"schemaVersion": 2, "devices": [], "future": true}"#.utf8)
    try sandbox.write("state/capture/devices.json", newer)
    #expect(chmod(sandbox.statePath, 0o600) == 0)
    let report = DoctorReport.json(try await sandbox.capture(["--json", "doctor"]))
    let rows = report.rows("state-file")
    #expect(rows.count == 1)
    if let row = rows.first {
      #expect(
        ExpectedRow(
          "state-file", subject: sandbox.statePath, status: "failure", containing: [], fix: nil, code: -86
        ).matches(row), "\(row)")
    }
    #expect(try sandbox.read(sandbox.statePath) == newer)
    #expect(try StateFiles.names(sandbox) == ["devices.json"])
  }

  @Test(
    "a state file this user cannot read: failure 64 with `sudo chown \"$USER\" '<path>'`",
    .enabled(if: Unprivileged.available, "needs root and setpriv to run doctor as user 65534"))
  func stateFileUnreadable() async throws {
    let sandbox = try Sandbox()
    try sandbox.write("state/capture/devices.json", twoBLEDevices)
    try Unprivileged.give(sandbox)
    #expect(chown(sandbox.statePath, 0, 0) == 0 && chmod(sandbox.statePath, 0o600) == 0)
    let report = DoctorReport.json(try await Unprivileged.capture(sandbox, ["--json", "doctor"]))
    let rows = report.rows("state-file")
    #expect(rows.count == 1)
    if let row = rows.first {
      #expect(
        ExpectedRow(
          "state-file", subject: sandbox.statePath, status: "failure", containing: [],
          fix: #"sudo chown "$USER" '"# + sandbox.statePath + "'", code: -64
        ).matches(row), "\(row)")
    }
  }

  @Test("a readable 0600 state file: ok, 'N remembered devices'")
  func stateFileOK() async throws {
    let sandbox = try Sandbox()
    try sandbox.write("state/capture/devices.json", twoBLEDevices)
    #expect(chmod(sandbox.statePath, 0o600) == 0)
    let report = DoctorReport.json(try await sandbox.capture(["--json", "doctor"]))
    #expect(
      report.rows("state-file") == [.ok("state-file", "2 remembered devices", subject: sandbox.statePath)])
  }

  /// Adapter1.PowerState of `adapter` on the rig's bus, read with busctl.
  static func powerState(_ rig: BlueZRig, _ adapter: String) async throws -> String {
    let outcome = try await Runner.run(
      "/usr/bin/busctl",
      [
        "--address=\(rig.busAddress)", "get-property", "org.bluez", "/org/bluez/\(adapter)",
        "org.bluez.Adapter1",
        "PowerState",
      ], environment: ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"], timeLimit: 120)
    return outcome.out.trimmingCharacters(in: .whitespacesAndNewlines)
  }

  @Test(
    "read only: doctor leaves adapters as they are, never opens a remembered tty or hid node, writes nothing",
    .enabled(
      if: access("/usr/bin/strace", X_OK) == 0 && access("/usr/bin/busctl", X_OK) == 0,
      "needs strace and busctl"))
  func readOnly() async throws {
    try await withRig(powerState: "off") { rig, sandbox in
      try await rig.ctl("AddAdapterInState", "hci1", hci1Address, "off-blocked")
      let pty = try ScannerPTY()
      let hid = try sandbox.write("event-scanner", [])
      try sandbox.write(
        "state/capture/devices.json",
        stateFile([("serial:\(pty.slavePath)", "serial"), ("hid:\(hid)", "hid")]))
      #expect(chmod(sandbox.statePath, 0o644) == 0)
      let trace = sandbox.path("doctor.strace")
      let outcome = try await Runner.run(
        "/usr/bin/strace",
        [
          "-f", "-qq", "-o", trace, "-e",
          "trace=open,openat,openat2,creat,rename,renameat,renameat2,unlink,unlinkat,mkdir,mkdirat,chmod,fchmod,fchmodat,truncate,ftruncate",
          try Product.path(), "doctor",
        ], environment: sandbox.environment, directory: sandbox.root, timeLimit: 120)
      #expect(outcome.status == 32, "\(outcome)")
      let calls = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n").map(String.init)
      #expect(!calls.isEmpty)
      for call in calls {
        #expect(!call.contains("\"\(pty.slavePath)\""), "doctor opened the tty (DTR): \(call)")
        #expect(!call.contains("\"\(hid)\""), "doctor opened the hid node: \(call)")
        if call.contains(sandbox.root) {
          let writes = [
            "O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "rename", "unlink", "mkdir", "chmod", "truncate",
          ]
          #expect(!writes.contains { call.contains($0) }, "doctor changed the sandbox: \(call)")
        }
      }
      #expect(try StateFiles.names(sandbox) == ["devices.json"])
      #expect(StateFiles.mode(sandbox.statePath) == 0o644)
      #expect(try await Self.powerState(rig, "hci0") == #"s "off""#)
      #expect(try await Self.powerState(rig, "hci1") == #"s "off-blocked""#)
    }
  }

  @Test("doctor takes no operands: a usage error 18")
  func noOperands() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture(["doctor", "hci0"])
    #expect(outcome.status == 18, "\(outcome)")
    #expect(outcome.stdout.isEmpty)
    #expect(outcome.errLines.first?.hasPrefix(Shape.invalidParameterPrefix) == true, "\(outcome)")
  }
}

// MARK: - deliverable 4: the cause and its fix in the one error line

extension DoctorTests {
  @Suite("Failing commands name the host cause doctor finds, with its fix")
  struct Causes {
    /// The row doctor reports for `check` in this sandbox (as root or as user 65534).
    static func doctorRow(
      _ sandbox: Sandbox, _ check: String, subject: String? = nil, unprivileged: Bool = false
    ) async throws -> DoctorRow? {
      let outcome =
        unprivileged
        ? try await Unprivileged.capture(sandbox, ["--json", "doctor"])
        : try await sandbox.capture(["--json", "doctor"])
      let rows = DoctorReport.json(outcome).rows(check).filter { subject == nil || $0.subject == subject }
      #expect(rows.count == 1, "doctor's \(check) rows: \(rows)")
      return rows.first
    }

    /// exit |code|, stdout empty, exactly one stderr line `capture: NAME (code): …: <message>[; fix: F] (capture
    /// doctor checks the host)` with doctor's message and fix.
    static func expectCause(
      _ outcome: Outcome, row: DoctorRow?, code: Int, sourceLocation: SourceLocation = #_sourceLocation
    ) {
      #expect(outcome.status == Int32(code), "\(outcome)", sourceLocation: sourceLocation)
      #expect(outcome.stdout.isEmpty, "\(outcome)", sourceLocation: sourceLocation)
      #expect(outcome.errLines.count == 1, "\(outcome)", sourceLocation: sourceLocation)
      guard let row, let line = outcome.errLines.first else { return }
      #expect(row.code == -code, "doctor's row: \(row)", sourceLocation: sourceLocation)
      let name = DoctorExpect.codeNames[code] ?? "?"
      let suffix = ": " + row.message + (row.fix.map { "; fix: " + $0 } ?? "") + causeSuffix
      #expect(
        line.hasPrefix("capture: \(name) (-\(code)): ")
          && DoctorExpect.stable(line).hasSuffix(DoctorExpect.stable(suffix)),
        "expected …\(suffix)\ngot \(line)", sourceLocation: sourceLocation)
    }

    static let commands: [[String]] = [
      ["--timeout", "2s", "discover", "--le"],
      ["--timeout", "5s", "connect", d600],
    ]

    @Test("no system bus: discover and connect exit 32 naming it, `sudo systemctl start dbus`")
    func noBus() async throws {
      let sandbox = try Sandbox()
      let row = try await Self.doctorRow(sandbox, "system-bus")
      #expect(row?.fix == "sudo systemctl start dbus")
      for arguments in Self.commands {
        Self.expectCause(try await sandbox.capture(arguments), row: row, code: 32)
      }
    }

    @Test("bluetoothd stopped: discover and connect exit 32 with `sudo systemctl enable --now bluetooth`")
    func noBluetoothd() async throws {
      try await withRig { rig, sandbox in
        try await rig.stopBluez()
        let row = try await Self.doctorRow(sandbox, "bluetoothd")
        #expect(row?.fix == "sudo systemctl enable --now bluetooth")
        for arguments in Self.commands {
          Self.expectCause(try await sandbox.capture(arguments), row: row, code: 32)
        }
      }
    }

    @Test(
      "hci0 powered off / rfkill-blocked: discover and connect exit 32 with doctor's adapter cause and fix",
      arguments: [("off", powerOnDefault), ("off-blocked", unblock)])
    func adapterNotUsable(_ state: String, _ fix: String) async throws {
      try await withRig(powerState: state) { rig, sandbox in
        try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
        let row = try await Self.doctorRow(sandbox, "adapter", subject: "hci0")
        #expect(row?.fix == fix)
        for arguments in Self.commands {
          Self.expectCause(try await sandbox.capture(arguments), row: row, code: 32)
        }
      }
    }

    @Test(
      "a user the bus denies org.bluez: discover and connect exit 99 with `sudo usermod -aG bluetooth`",
      .enabled(if: Unprivileged.available, "needs root and setpriv to run capture as user 65534"))
    func denied() async throws {
      try await withRig(denyBluezFor: [Unprivileged.userName]) { rig, sandbox in
        try await rig.ctl("AddLEDevice", d600, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
        try Unprivileged.give(sandbox)
        let row = try await Self.doctorRow(sandbox, "bluez-permission", unprivileged: true)
        #expect(row?.fix == joinBluetooth)
        for arguments in Self.commands {
          Self.expectCause(try await Unprivileged.capture(sandbox, arguments), row: row, code: 99)
        }
      }
    }

    @Test(
      "listen serial:PTY and hid:NODE this user may not open: exit 64 with `sudo usermod -aG <the node's group>`",
      .enabled(if: Unprivileged.available, "needs root and setpriv to run capture as user 65534"))
    func unreadableNode() async throws {
      let sandbox = try Sandbox()
      guard let (pty, hid) = try rememberUnreadableNodes(sandbox) else { return }

      let serialRow = try await Self.doctorRow(sandbox, "serial", subject: pty.slavePath, unprivileged: true)
      #expect(serialRow?.fix == #"sudo usermod -aG dialout "$USER""#)
      Self.expectCause(
        try await Unprivileged.capture(sandbox, ["listen", "serial:\(pty.slavePath)", "--count", "1"]),
        row: serialRow, code: 64)

      let hidRow = try await Self.doctorRow(sandbox, "input", subject: hid, unprivileged: true)
      #expect(hidRow?.fix == #"sudo usermod -aG input "$USER""#)
      Self.expectCause(
        try await Unprivileged.capture(sandbox, ["listen", "hid:\(hid)", "--count", "1"]), row: hidRow,
        code: 64)
    }

    @Test(
      "a remembered tty only root may open (root:root 0600): doctor and listen give it group dialout (chgrp, chmod g+rw, usermod)",
      .enabled(if: Unprivileged.available, "needs root and setpriv to run capture as user 65534"))
    func rootOnlyNode() async throws {
      let sandbox = try Sandbox()
      guard let (pty, _) = try rememberUnreadableNodes(sandbox) else { return }
      #expect(chown(pty.slavePath, 0, 0) == 0 && chmod(pty.slavePath, 0o600) == 0)
      let quoted = "'\(pty.slavePath)'"
      let row = try await Self.doctorRow(sandbox, "serial", subject: pty.slavePath, unprivileged: true)
      #expect(
        row?.fix
          == "sudo chgrp dialout \(quoted) && sudo chmod g+rw \(quoted) && sudo usermod -aG dialout \"$USER\""
      )
      #expect(
        row?.message.contains("only root may read and write it (mode 0600, group root)") == true,
        "\(String(describing: row))")
      Self.expectCause(
        try await Unprivileged.capture(sandbox, ["listen", "serial:\(pty.slavePath)", "--count", "1"]),
        row: row, code: 64)
    }

    @Test(
      "Classic without AF_BLUETOOTH: connect --classic exits 32 with doctor's kernel-bluetooth cause (`sudo modprobe bluetooth`)",
      .enabled(if: HostFacts.kernelLacksBluetooth, "the kernel here has AF_BLUETOOTH"))
    func classicWithoutKernelSupport() async throws {
      try await withRig { rig, sandbox in
        let address = "00:06:66:0A:1B:2C"
        try await rig.ctl(
          "AddClassicDevice", address, "Barcode scanner", "0x000540",
          "1101,A1220169-E854-473E-9CB5-873ACBDF1F13", "--", "-55", "true")
        let row = try await Self.doctorRow(sandbox, "kernel-bluetooth")
        #expect(row?.fix == "sudo modprobe bluetooth")
        Self.expectCause(
          try await sandbox.capture(["--timeout", "10s", "connect", address, "--classic"]), row: row, code: 32
        )
      }
    }
  }
}

/// The state-file row says what stands in the way (CHANGELOG.md, Fixed: doctor's state-file advice): `sudo chown` only for a file that
/// is another user's, never for a directory in the file's place or a directory on the way.
@Suite("capture doctor: what keeps the state file from this user")
struct DoctorStateAccessTests {
  @Test("a directory where devices.json should be: failure 64 that says so, no chown")
  func directoryInTheWay() async throws {
    let sandbox = try Sandbox()
    try FileManager.default.createDirectory(atPath: sandbox.statePath, withIntermediateDirectories: true)
    let report = DoctorReport.json(try await sandbox.capture(["--json", "doctor"]))
    let rows = report.rows("state-file")
    #expect(rows.count == 1, "\(report.rows)")
    guard let row = rows.first else { return }
    #expect(row.status == "failure" && row.code == -64, "\(row)")
    #expect(row.message.contains("\(sandbox.statePath) is a directory, not the state file"), "\(row)")
    #expect(row.fix == nil, "\(row)")
  }

  @Test(
    "a state directory of mode 000: failure 64 naming the directory and its mode; its owner gets chmod, not chown",
    .enabled(if: Unprivileged.available, "needs root, setpriv and user 65534"))
  func closedStateDirectory() async throws {
    let sandbox = try Sandbox()
    try sandbox.write("state/capture/devices.json", #"{"schemaVersion":1,"devices":[]}"#)
    try Unprivileged.give(sandbox)
    #expect(chmod(sandbox.statePath, 0o600) == 0)
    #expect(chmod(sandbox.stateDirectory, 0o000) == 0)
    let report = DoctorReport.json(try await Unprivileged.capture(sandbox, ["--json", "doctor"]))
    let row = try #require(report.rows("state-file").first, "\(report.rows)")
    #expect(row.status == "failure" && row.code == -64, "\(row)")
    #expect(
      row.message
        == "directory \(sandbox.stateDirectory) (mode 0000, this user's) does not let this user in, so \(sandbox.statePath) cannot be reached",
      "\(row)")
    #expect(row.fix == "chmod u+rwx '\(sandbox.stateDirectory)'", "\(row)")
    // A directory on the way that is root's: named with its owner, and no command this user could run.
    #expect(chmod(sandbox.stateDirectory, 0o700) == 0)
    #expect(chown(sandbox.stateHome, 0, 0) == 0 && chmod(sandbox.stateHome, 0o000) == 0)
    let again = DoctorReport.json(try await Unprivileged.capture(sandbox, ["--json", "doctor"]))
    let rootRow = try #require(again.rows("state-file").first, "\(again.rows)")
    #expect(rootRow.code == -64)
    #expect(
      rootRow.message.hasPrefix("directory \(sandbox.stateHome) (mode 0000, owned by user root)"),
      "\(rootRow)")
    #expect(rootRow.fix == nil, "\(rootRow)")
  }
}
