import CaptureCore

#if canImport(Glibc)
  import Glibc
#endif

/// One cause that stands between a user and their scanner, as `capture doctor` reports it and as a
/// failing command names it (the same function builds both, so the text is the same): what was found,
/// the command that fixes it, and the SKT code a command failing for it exits with.
struct HostCause: Sendable, Equatable {
  var message: String
  var fix: String?
  var code: ResultCode

  /// What every error that names a host cause ends with.
  static let pointer = "(capture doctor checks the host)"

  /// The `doctor` row for this cause.
  func row(_ kind: HostCheck.Kind, subject: String? = nil, status: HostCheck.Status = .failure) -> HostCheck {
    HostCheck(kind, subject: subject, status: status, message: message, fix: fix, code: code)
  }

  /// `<message>; fix: <fix>` (or the message alone): the cause as an error line ends with it.
  var explanation: String { fix.map { "\(message); fix: \($0)" } ?? message }

  /// `error` (its code and its line) ending with this cause and `pointer`.
  func explaining(_ error: CaptureError, subject: String? = nil) -> CaptureError {
    HostExplanation.explaining(error, [(self, subject)])
  }

  /// A check that could not be made because an earlier one failed: a failure with the earlier one's
  /// code, its message after "not checked: ", and no fix (the earlier row has it).
  static let notCheckedPrefix = "not checked: "

  static func notChecked(because earlier: HostCheck) -> HostCause {
    // The root failure's message, not a chain of "not checked: not checked: …".
    let root =
      earlier.message.hasPrefix(notCheckedPrefix) ? earlier.message : notCheckedPrefix + earlier.message
    return HostCause(message: root, fix: nil, code: earlier.code ?? .notAvailable)
  }

  /// A shell word: `'…'` with every `'` written `'\''`, so a fix with a path can be pasted as it is.
  static func quoted(_ text: String) -> String {
    "'" + text.replacing("'", with: "'\\''") + "'"
  }

  // MARK: the system bus and bluetoothd

  static func systemBusUnreachable(address: String, detail: String) -> HostCause {
    HostCause(
      message: "cannot connect to the system bus at \(address): \(detail)", fix: "sudo systemctl start dbus",
      code: .notAvailable)
  }

  /// The bus refused this user (AccessDenied at authentication or Hello): only its administrator's
  /// policy can change that.
  static func systemBusRefused(address: String, detail: String) -> HostCause {
    HostCause(
      message: "the system bus at \(address) refused this user: \(detail)", fix: nil,
      code: .bluetoothPermissionMissing)
  }

  static func systemBusTimedOut(address: String) -> HostCause {
    HostCause(
      message: "the system bus at \(address) did not answer in time", fix: nil, code: .requestTimedOut)
  }

  /// Nobody owns org.bluez: bluetoothd is not running (or BlueZ is not installed).
  static let bluetoothdNotRunning = HostCause(
    message:
      "org.bluez has no owner: bluetoothd is not running (is bluez installed? sudo apt-get install bluez)",
    fix: "sudo systemctl enable --now bluetooth", code: .notAvailable)

  /// A bus call about bluetoothd that failed for another reason (a timeout, a broken bus).
  static func busCallFailed(_ what: String, name: String, message: String) -> HostCause {
    if name == BusErrorName.noReply || name == BusErrorName.timeout || name == BusErrorName.cancelled {
      return HostCause(message: "\(what): no answer in time", fix: nil, code: .requestTimedOut)
    }
    let detail = message.isEmpty ? name : "\(message) (\(name))"
    return HostCause(message: "\(what): \(detail)", fix: nil, code: .notAvailable)
  }

  /// The bus policy denies this user org.bluez (the `bluetooth` group's rule in BlueZ's
  /// /usr/share/dbus-1/system.d/bluetooth.conf on Debian).
  /// The bus policy refused a call to org.bluez. dbus-daemon's own text ("Rejected send message, N
  /// matched rules; type=…, sender=":1.42" (uid=… pid=…) …") names this connection and process, so it
  /// differs run to run and says nothing a user can act on: the row names the policy and the group
  /// BlueZ's own D-Bus policy lets through (bluetooth.conf, `<policy group="bluetooth">`).
  static let bluezAccessDenied = HostCause(
    message:
      "the system bus's policy denies this user org.bluez (AccessDenied); after adding the user to the bluetooth group, log in again",
    fix: "sudo usermod -aG bluetooth \"$USER\"", code: .bluetoothPermissionMissing)

  // MARK: adapters

  static let noAdapter = HostCause(
    message:
      "no Bluetooth adapter (bluetoothd sees none): plug one in; dmesg | grep -i bluetooth shows why the kernel has none",
    fix: nil, code: .notAvailable)

  /// The adapter the commands would use is not there. Without `--adapter` that is the default hci0,
  /// so the way out is naming one bluetoothd has.
  static func adapterMissing(_ name: String, known: [String], chosen: Bool = true) -> HostCause {
    let have = known.joined(separator: ", ")
    return HostCause(
      message: chosen
        ? "no Bluetooth adapter \(name) (bluetoothd has: \(have))"
        : "no Bluetooth adapter \(name), the default (bluetoothd has: \(have)); pass --adapter \(known[0])",
      fix: nil, code: .notAvailable)
  }

  /// Powered off. bluetoothctl acts on its default controller, the first adapter; any other is powered
  /// through Adapter1.Powered itself (doc/org.bluez.Adapter.rst).
  static func adapterPoweredOff(_ name: String, isDefault: Bool) -> HostCause {
    HostCause(
      message: "powered off",
      fix: isDefault
        ? "bluetoothctl power on"
        : "busctl set-property org.bluez /org/bluez/\(name) org.bluez.Adapter1 Powered b true",
      code: .notAvailable)
  }

  static let adapterSoftBlocked = HostCause(
    message: "blocked by rfkill (soft block)", fix: "rfkill unblock bluetooth", code: .notAvailable)

  static let adapterHardBlocked = HostCause(
    message: "blocked by a hardware switch (rfkill hard block): turn the wireless switch on", fix: nil,
    code: .notAvailable)

  // MARK: the kernel

  static func kernelBluetooth(_ error: Errno) -> HostCause {
    switch error.code {
    case EPERM, EACCES:
      return HostCause(
        message: "socket(AF_BLUETOOTH) is refused to this process (\(error.message))", fix: nil,
        code: .bluetoothPermissionMissing)
    default:
      return HostCause(
        message:
          "the kernel has no Bluetooth support (socket(AF_BLUETOOTH): \(error.message)); Bluetooth Classic and every adapter need it",
        fix: "sudo modprobe bluetooth", code: .notAvailable)
    }
  }

  // MARK: device nodes and the state file

  /// A device node this process may not open as `doctor` checked it (read, or read and write).
  /// `usualGroup` is the group Debian's udev rules give such nodes (input for /dev/input/event*,
  /// dialout for ttys, video for cameras): the one to give a node that only root's group has.
  static func nodeDenied(_ node: NodeAccess, usualGroup: String) -> HostCause {
    let need = node.needsWrite ? "read and write" : "read"
    let group = node.groupName ?? String(node.gid)
    let mode = "0" + String(node.mode & 0o777, radix: 8)
    let groupGrants = node.needsWrite ? node.mode & 0o060 == 0o060 : node.mode & 0o040 != 0
    let path = quoted(node.path)
    let bits = node.needsWrite ? "rw" : "r"
    // Joining group root is no fix, nor joining a group the mode gives nothing: the node itself
    // must change. chgrp/chmod fix it now; udev makes the node again on every plug and boot, so
    // only a rule (udev(7) GROUP=, MODE=) makes it last.
    func lasting(_ target: String) -> String {
      "until it is plugged again: a udev rule with GROUP=\"\(target)\", MODE=\"06\(node.needsWrite ? "6" : "4")0\" makes it last"
    }
    if node.gid == 0 {
      return HostCause(
        message:
          "permission denied: only root may \(need) it (mode \(mode), group root); the fix gives it group \(usualGroup) \(lasting(usualGroup))",
        fix:
          "sudo chgrp \(usualGroup) \(path) && sudo chmod g+\(bits) \(path) && sudo usermod -aG \(usualGroup) \"$USER\"",
        code: .fileAccessDenied)
    }
    if !groupGrants {
      let join =
        node.processHasGroup || node.userListedInGroup ? "" : " && sudo usermod -aG \(group) \"$USER\""
      return HostCause(
        message:
          "permission denied: mode \(mode) gives its group \(group) no \(need) access; the fix opens it to the group \(lasting(group))",
        fix: "sudo chmod g+\(bits) \(path)\(join)", code: .fileAccessDenied)
    }
    if node.processHasGroup {
      // The group may, this process is in it, and still no: an ACL or a read-only mount says no.
      return HostCause(
        message:
          "permission denied: this user may not \(need) it although its group \(group), which this user is in, may (an ACL? getfacl \(path))",
        fix: nil, code: .fileAccessDenied)
    }
    if node.userListedInGroup {
      return HostCause(
        message:
          "permission denied: this user is in group \(group), but this login session is not yet: log out and back in",
        fix: nil, code: .fileAccessDenied)
    }
    return HostCause(
      message: "permission denied: only group \(group) may \(need) it, and this user is not in it",
      fix: "sudo usermod -aG \(group) \"$USER\"", code: .fileAccessDenied)
  }

  /// A state file this user may not use, by what is in the way: chown only for a file that is another
  /// user's; a directory in the file's place or on the way is named, never chowned.
  static func stateUnreadable(_ error: CaptureError, path: String, access: StateAccess) -> HostCause {
    func octal(_ mode: UInt32) -> String {
      let digits = String(mode & 0o777, radix: 8)
      return "0" + String(repeating: "0", count: max(0, 3 - digits.count)) + digits
    }
    switch access {
    case .directoryInTheWay:
      return HostCause(
        message:
          "\(path) is a directory, not the state file: capture cannot keep its devices there until it is moved away or removed",
        fix: nil, code: .fileAccessDenied)
    case .closedDirectory(let directory, let mode, let owner, let ownedByUser):
      let whose = ownedByUser ? "this user's" : "owned by \(userName(owner))"
      return HostCause(
        message:
          "directory \(directory) (mode \(octal(mode)), \(whose)) does not let this user in, so \(path) cannot be reached",
        fix: ownedByUser ? "chmod u+rwx \(quoted(directory))" : nil, code: .fileAccessDenied)
    case .otherOwner(let mode, let owner):
      return HostCause(
        message: "\(error.message) (mode \(octal(mode)), owned by \(userName(owner)))",
        fix: "sudo chown \"$USER\" \(quoted(path))", code: .fileAccessDenied)
    case .ownMode(let mode):
      return HostCause(
        message: "\(error.message): mode \(octal(mode)) does not let its owner, this user, read and write it",
        fix: "chmod 600 \(quoted(path))", code: .fileAccessDenied)
    case .unknown:
      return HostCause(message: error.message, fix: nil, code: .fileAccessDenied)
    }
  }

  /// A user's name, or their uid when the user database has none.
  static func userName(_ uid: uid_t) -> String {
    guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return "uid \(uid)" }
    return "user \(String(cString: name))"
  }

  static func stateCorrupt(_ error: CaptureError) -> HostCause {
    HostCause(
      message: "\(error.message); capture list moves it aside", fix: "capture list", code: .invalidFormat)
  }

  static func stateOther(_ error: CaptureError) -> HostCause {
    HostCause(message: error.message, fix: nil, code: error.code)
  }

  static func stateTooOpen(_ count: Int, mode: UInt32, path: String) -> HostCause {
    HostCause(
      message:
        "\(counted(count, "remembered device")); mode 0\(String(mode & 0o777, radix: 8)) lets other users read it (0600 expected)",
      fix: "chmod 600 \(quoted(path))", code: .fileAccessDenied)
  }
}

/// The D-Bus error names the causes tell apart (D-Bus specification, "Message Bus Messages"); Drivers
/// do not import DBus.
enum BusErrorName {
  static let noReply = "org.freedesktop.DBus.Error.NoReply"
  static let timeout = "org.freedesktop.DBus.Error.Timeout"
  static let cancelled = "org.freedesktop.DBus.Error.Cancelled"
}
