import BlueZ
import CaptureCore
import Testing

@testable import Drivers

#if canImport(Glibc)
  import Glibc
#endif

/// The rows `capture doctor` prints, judged from the facts its probes gather (docs/architecture.md §1).
@Suite("doctor: the checks' rules")
struct HostChecksTests {
  static let address = "unix:path=/run/dbus/system_bus_socket"

  static func adapter(_ name: String, powered: Bool, state: String? = nil) -> BlueZHostFacts.Adapter {
    BlueZHostFacts.Adapter(
      name: name, address: name == "hci0" ? "00:AA:01:00:00:01" : "00:AA:01:00:00:02", powered: powered,
      powerState: state ?? (powered ? "on" : "off"))
  }

  static func facts(_ adapters: [BlueZHostFacts.Adapter]) -> BlueZHostFacts {
    BlueZHostFacts(bus: .reachable(address: address), daemon: .running(pid: 42), objects: .answered(adapters))
  }

  static func rows(
    _ facts: BlueZHostFacts, rfkill: [String: RfkillState] = [:], selected: String? = nil,
    identity: DaemonIdentity = DaemonIdentity(
      executable: "/usr/libexec/bluetooth/bluetoothd", version: "5.66")
  ) -> [HostCheck] {
    let local = HostDoctor.LocalFacts(
      identity: identity, rfkill: rfkill, state: StateInspection(path: "", mode: nil, result: .success(nil)))
    return HostDoctor().bluetoothRows(facts, local: local, selected: selected)
  }

  @Test("a reachable bus, bluetoothd 5.66 and a powered adapter are four ok rows in report order")
  func allWell() {
    let rows = Self.rows(Self.facts([Self.adapter("hci0", powered: true)]))
    #expect(
      rows == [
        HostCheck(.systemBus, status: .ok, message: "\(Self.address) (system bus reachable)"),
        HostCheck(.bluetoothd, status: .ok, message: "bluetoothd 5.66 is running (pid 42)"),
        HostCheck(.adapter, subject: "hci0", status: .ok, message: "hci0 00:AA:01:00:00:01, powered"),
        HostCheck(.bluezPermission, status: .ok, message: "this user may talk to org.bluez"),
      ])
  }

  @Test("no system bus: 32 with sudo systemctl start dbus, and the Bluetooth checks after it are not checked")
  func noBus() {
    let facts = BlueZHostFacts(
      bus: .unreachable(
        address: Self.address, name: "org.freedesktop.DBus.Error.FileNotFound",
        message: "Failed to connect to socket /run/dbus/system_bus_socket: No such file or directory"))
    let rows = Self.rows(facts)
    let message =
      "cannot connect to the system bus at \(Self.address): Failed to connect to socket /run/dbus/system_bus_socket: No such file or directory"
    #expect(
      rows == [
        HostCheck(
          .systemBus, status: .failure, message: message, fix: "sudo systemctl start dbus",
          code: .notAvailable),
        HostCheck(.bluetoothd, status: .failure, message: "not checked: " + message, code: .notAvailable),
        HostCheck(.adapter, status: .failure, message: "not checked: " + message, code: .notAvailable),
        HostCheck(
          .bluezPermission, status: .failure, message: "not checked: " + message, code: .notAvailable),
      ])
  }

  @Test("a bus that refuses the user at Hello is 99 without a fix")
  func busRefused() {
    let rows = Self.rows(BlueZHostFacts(bus: .refused(address: Self.address, message: "not allowed")))
    #expect(rows[0].code == .bluetoothPermissionMissing)
    #expect(rows[0].fix == nil)
    #expect(rows[0].message == "the system bus at \(Self.address) refused this user: not allowed")
    #expect(rows[1].code == .bluetoothPermissionMissing)
  }

  @Test("org.bluez without an owner: 32, names the bluez package, fix enables the service")
  func noBluetoothd() {
    let rows = Self.rows(BlueZHostFacts(bus: .reachable(address: Self.address), daemon: .absent))
    #expect(
      rows[1]
        == HostCheck(
          .bluetoothd, status: .failure,
          message:
            "org.bluez has no owner: bluetoothd is not running (is bluez installed? sudo apt-get install bluez)",
          fix: "sudo systemctl enable --now bluetooth", code: .notAvailable))
    #expect(rows[2].message == "not checked: " + rows[1].message)
    #expect(rows[2].fix == nil)
    #expect(rows[3].message == "not checked: " + rows[1].message)
  }

  @Test("a daemon that is not bluetoothd: ok, its pid and executable, version unknown")
  func versionUnknown() {
    let rows = Self.rows(
      Self.facts([Self.adapter("hci0", powered: true)]),
      identity: DaemonIdentity(executable: "/usr/bin/python3.11", version: nil))
    #expect(
      rows[1]
        == HostCheck(
          .bluetoothd, status: .ok,
          message: "org.bluez is running (pid 42, /usr/bin/python3.11), version unknown"))
  }

  @Test("bluetoothd older than 5.55 is a warning with the code a failure would have")
  func oldBluetoothd() {
    let rows = Self.rows(
      Self.facts([Self.adapter("hci0", powered: true)]),
      identity: DaemonIdentity(executable: "/x/bluetoothd", version: "5.50"))
    #expect(rows[1].status == .warning)
    #expect(rows[1].code == .notAvailable)
    #expect(rows[1].message.hasPrefix("bluetoothd 5.50 is running (pid 42), older than BlueZ 5.55"))
    #expect(HostChecks.versionParts("5.66") == [5, 66])
    #expect(HostChecks.versionParts("5.x") == nil)
  }

  @Test("a powered and an unpowered adapter: ok and a warning (the unpowered one is not the default)")
  func poweredAndUnpowered() {
    let rows = Self.rows(
      Self.facts([Self.adapter("hci0", powered: true), Self.adapter("hci1", powered: false)]))
    #expect(rows[2].status == .ok)
    #expect(
      rows[3]
        == HostCheck(
          .adapter, subject: "hci1", status: .warning, message: "powered off",
          fix: "busctl set-property org.bluez /org/bluez/hci1 org.bluez.Adapter1 Powered b true",
          code: .notAvailable))
  }

  @Test("--adapter hci1 makes the unpowered hci1 the failure")
  func selectedAdapter() {
    let rows = Self.rows(
      Self.facts([Self.adapter("hci0", powered: true), Self.adapter("hci1", powered: false)]),
      selected: "hci1")
    #expect(rows[3].status == .failure)
    #expect(rows[3].subject == "hci1")
  }

  @Test("only an unpowered default adapter: failure 32, fix bluetoothctl power on")
  func onlyUnpowered() {
    let rows = Self.rows(Self.facts([Self.adapter("hci0", powered: false)]))
    #expect(
      rows[2]
        == HostCheck(
          .adapter, subject: "hci0", status: .failure, message: "powered off", fix: "bluetoothctl power on",
          code: .notAvailable))
  }

  @Test("PowerState off-blocked, or rfkill soft = 1, is a soft block: rfkill unblock bluetooth")
  func softBlock() {
    let byState = Self.rows(Self.facts([Self.adapter("hci0", powered: false, state: "off-blocked")]))
    let bySysfs = Self.rows(
      Self.facts([Self.adapter("hci0", powered: false)]),
      rfkill: ["hci0": RfkillState(soft: true, hard: false)])
    for rows in [byState, bySysfs] {
      #expect(
        rows[2]
          == HostCheck(
            .adapter, subject: "hci0", status: .failure, message: "blocked by rfkill (soft block)",
            fix: "rfkill unblock bluetooth", code: .notAvailable))
    }
  }

  @Test("an rfkill hard block has no command to run: the switch")
  func hardBlock() {
    let rows = Self.rows(
      Self.facts([Self.adapter("hci0", powered: false, state: "off-blocked")]),
      rfkill: ["hci0": RfkillState(soft: true, hard: true)])
    #expect(
      rows[2].message == "blocked by a hardware switch (rfkill hard block): turn the wireless switch on")
    #expect(rows[2].fix == nil)
    #expect(rows[2].code == .notAvailable)
  }

  @Test("no adapter at all: one row without a subject")
  func noAdapter() {
    let rows = Self.rows(Self.facts([]))
    #expect(
      rows[2]
        == HostCheck(
          .adapter, status: .failure,
          message:
            "no Bluetooth adapter (bluetoothd sees none): plug one in; dmesg | grep -i bluetooth shows why the kernel has none",
          code: .notAvailable))
  }

  @Test("--adapter naming a missing adapter is a failure of its own; the others are shown as they are")
  func selectedMissing() {
    let rows = Self.rows(Self.facts([Self.adapter("hci0", powered: true)]), selected: "hci3")
    #expect(
      rows[2]
        == HostCheck(
          .adapter, subject: "hci3", status: .failure,
          message: "no Bluetooth adapter hci3 (bluetoothd has: hci0)", code: .notAvailable))
    #expect(rows[3].status == .ok)
  }

  @Test("AccessDenied from org.bluez: 99 with usermod -aG bluetooth; the adapters could not be read")
  func denied() {
    let facts = BlueZHostFacts(
      bus: .reachable(address: Self.address), daemon: .running(pid: 42),
      objects: .denied(message: "Rejected send message"))
    let rows = Self.rows(facts)
    let permission = rows.last!
    #expect(permission.kind == .bluezPermission)
    #expect(permission.status == .failure)
    #expect(permission.code == .bluetoothPermissionMissing)
    #expect(permission.fix == "sudo usermod -aG bluetooth \"$USER\"")
    // dbus-daemon's detail names one connection and pid: it is left out, the row reads the same every run.
    #expect(
      permission.message
        == "the system bus's policy denies this user org.bluez (AccessDenied); after adding the user to the bluetooth group, log in again"
    )
    #expect(
      rows[2]
        == HostCheck(
          .adapter, status: .failure, message: "not checked: " + permission.message,
          code: .bluetoothPermissionMissing))
  }

  @Test("the kernel without AF_BLUETOOTH: 32 and modprobe; a refused socket: 99 without a fix")
  func kernel() {
    #expect(
      HostChecks.kernelBluetooth(nil)
        == HostCheck(.kernelBluetooth, status: .ok, message: "AF_BLUETOOTH sockets available"))
    let missing = HostChecks.kernelBluetooth(Errno(EAFNOSUPPORT))
    #expect(
      missing
        == HostCheck(
          .kernelBluetooth, status: .failure,
          message:
            "the kernel has no Bluetooth support (socket(AF_BLUETOOTH): Address family not supported by protocol); Bluetooth Classic and every adapter need it",
          fix: "sudo modprobe bluetooth", code: .notAvailable))
    let refused = HostChecks.kernelBluetooth(Errno(EPERM))
    #expect(refused.code == .bluetoothPermissionMissing)
    #expect(refused.fix == nil)
  }

  static func node(
    _ path: String, accessible: Bool, group: String? = "dialout", has: Bool = false, listed: Bool = false
  ) -> NodeAccess {
    NodeAccess(
      path: path, needsWrite: true, accessible: accessible, mode: 0o20660, gid: 20, groupName: group,
      processHasGroup: has, userListedInGroup: listed)
  }

  @Test("every node readable, or none: one ok row counting them")
  func nodesSummary() {
    #expect(HostChecks.nodes(.serial, []) == [HostCheck(.serial, status: .ok, message: "no serial devices")])
    #expect(
      HostChecks.nodes(.input, []) == [
        HostCheck(.input, status: .ok, message: "no input devices (/dev/input/event*)")
      ])
    #expect(
      HostChecks.nodes(.video, []) == [HostCheck(.video, status: .ok, message: "no cameras (/dev/video*)")])
    let two = [Self.node("/dev/ttyUSB0", accessible: true), Self.node("/dev/ttyACM0", accessible: true)]
    #expect(
      HostChecks.nodes(.serial, two) == [
        HostCheck(.serial, status: .ok, message: "2 serial devices readable")
      ])
  }

  @Test("video: the cameras are the capture nodes, counted and named; other video nodes are not cameras")
  func videoCountsCaptureNodes() {
    let nodes = ["/dev/video0", "/dev/video1", "/dev/video2", "/dev/video3"].map {
      Self.node($0, accessible: true, group: "video")
    }
    // A webcam (capture + metadata) and vivid (capture + output).
    let identities = [
      "/dev/video0": VideoIdentity(isCamera: true, card: "HD Pro Webcam C920"),
      "/dev/video1": VideoIdentity(isCamera: false, card: "HD Pro Webcam C920"),
      "/dev/video2": VideoIdentity(isCamera: true, card: "vivid"),
      "/dev/video3": VideoIdentity(isCamera: false, card: "vivid"),
    ]
    #expect(
      HostChecks.video(nodes, identities: identities) == [
        HostCheck(
          .video, status: .ok,
          message:
            "2 cameras readable: /dev/video0 (HD Pro Webcam C920), /dev/video2 (vivid); 2 other video nodes are not cameras"
        )
      ])
    #expect(
      HostChecks.video(Array(nodes.prefix(2)), identities: identities) == [
        HostCheck(
          .video, status: .ok,
          message: "1 camera readable: /dev/video0 (HD Pro Webcam C920); 1 other video node is not a camera")
      ])
    // A node that could not be asked is no camera; a card without a name shows the path alone.
    #expect(
      HostChecks.video(
        Array(nodes.prefix(2)), identities: ["/dev/video1": VideoIdentity(isCamera: true, card: "")])
        == [
          HostCheck(
            .video, status: .ok, message: "1 camera readable: /dev/video1; 1 other video node is not a camera"
          )
        ])
    #expect(
      HostChecks.video([nodes[1], nodes[3]], identities: identities) == [
        HostCheck(
          .video, status: .ok, message: "no cameras (/dev/video*: 2 video nodes, none a video capture device)"
        )
      ])
    #expect(
      HostChecks.video([], identities: [:]) == [
        HostCheck(.video, status: .ok, message: "no cameras (/dev/video*)")
      ])
    // A node this user may not open is a failure row, as for the other kinds.
    let denied = [nodes[0], Self.node("/dev/video9", accessible: false, group: "video")]
    #expect(HostChecks.video(denied, identities: identities) == HostChecks.nodes(.video, denied))
    #expect(HostChecks.video(denied, identities: identities).map(\.subject) == ["/dev/video9"])
  }

  @Test("an unreadable node: one failure row, 64, usermod -aG with the node's group")
  func nodeDenied() {
    let rows = HostChecks.nodes(
      .serial, [Self.node("/dev/ttyUSB0", accessible: true), Self.node("/dev/ttyUSB1", accessible: false)])
    #expect(
      rows == [
        HostCheck(
          .serial, subject: "/dev/ttyUSB1", status: .failure,
          message: "permission denied: only group dialout may read and write it, and this user is not in it",
          fix: "sudo usermod -aG dialout \"$USER\"", code: .fileAccessDenied)
      ])
  }

  @Test("a user listed in the group whose session lacks it: log out and back in, no fix")
  func nodeNeedsLogin() {
    let rows = HostChecks.nodes(.serial, [Self.node("/dev/ttyUSB0", accessible: false, listed: true)])
    #expect(rows[0].message.contains("log out and back in"))
    #expect(rows[0].fix == nil)
    #expect(rows[0].code == .fileAccessDenied)
  }

  @Test(
    "a node of group root gets the kind's usual group (chgrp, chmod g+, usermod); one whose mode shuts its group out gets chmod g+ and usermod"
  )
  func nodeGroupCannotHelp() {
    var root = Self.node("/dev/ttyUSB0", accessible: false, group: "root")
    root.gid = 0
    var closed = Self.node("/dev/ttyUSB1", accessible: false)
    closed.mode = 0o20600
    let rows = HostChecks.nodes(.serial, [root, closed])
    #expect(
      rows.map(\.fix) == [
        #"sudo chgrp dialout '/dev/ttyUSB0' && sudo chmod g+rw '/dev/ttyUSB0' && sudo usermod -aG dialout "$USER""#,
        #"sudo chmod g+rw '/dev/ttyUSB1' && sudo usermod -aG dialout "$USER""#,
      ])
    for row in rows {
      #expect(row.status == .failure)
      #expect(row.code == .fileAccessDenied)
      #expect(
        row.message.contains(#"a udev rule with GROUP="dialout", MODE="0660" makes it last"#),
        "\(row.message)")
    }
    var member = closed
    member.processHasGroup = true
    #expect(HostChecks.nodes(.serial, [member]).map(\.fix) == ["sudo chmod g+rw '/dev/ttyUSB1'"])
    var event = root
    event.path = "/dev/input/event3"
    event.needsWrite = false
    #expect(
      HostChecks.nodes(.input, [event]).map(\.fix) == [
        #"sudo chgrp input '/dev/input/event3' && sudo chmod g+r '/dev/input/event3' && sudo usermod -aG input "$USER""#
      ])
  }

  @Test("a group without a name is named by its number in the fix")
  func nodeNumericGroup() {
    let rows = HostChecks.nodes(.input, [Self.node("/dev/input/event3", accessible: false, group: nil)])
    #expect(rows[0].fix == "sudo usermod -aG 20 \"$USER\"")
  }

  @Test("a fix with a path quotes it for the shell")
  func quoting() {
    #expect(HostCause.quoted("/home/o'neil/x") == "'/home/o'\\''neil/x'")
  }
}
