import BlueZ
import CaptureCore

#if canImport(Glibc)
  import Glibc
#endif

/// An adapter's rfkill switches (/sys/class/bluetooth/hciN/rfkill*/soft and hard, Linux
/// Documentation/ABI/stable/sysfs-class-rfkill): nil where the kernel shows none.
struct RfkillState: Sendable, Equatable {
  var soft: Bool
  var hard: Bool
}

/// What the running bluetoothd is, beyond its pid: its executable and, when that is bluetoothd, the
/// version it printed.
struct DaemonIdentity: Sendable, Equatable {
  var executable: String?
  var version: String?
}

/// A device node as `doctor` found it, by stat(2) and faccessat(2) with AT_EACCESS (never opened: an
/// open of a serial port raises DTR).
struct NodeAccess: Sendable, Equatable {
  var path: String
  /// Serial ports are opened for reading and writing; input devices and cameras for reading.
  var needsWrite: Bool
  var accessible: Bool
  var mode: UInt32
  var gid: UInt32
  /// The node's group by getgrgid(3); nil when the group database has no name for it.
  var groupName: String?
  /// This process holds the node's group (its effective or a supplementary gid).
  var processHasGroup: Bool
  /// The group database lists this user in the node's group (getgrgid's member list, or the user's
  /// primary group): then the session predates the change.
  var userListedInGroup: Bool
}

/// What a readable /dev/video node said it is (VIDIOC_QUERYCAP): a camera — a video capture node,
/// single- or multi-planar — or another kind (a webcam's metadata node, an output node), and its
/// device's name.
struct VideoIdentity: Sendable, Equatable {
  var isCamera: Bool
  var card: String
}

/// The rows of `doctor`, judged from the facts the probes gathered: no I/O here, so every rule is
/// tested directly (HostTests).
enum HostChecks {
  /// The BlueZ release capture needs: Adapter1.PowerState and the rest of the API the drivers use
  /// (docs/bluez-testing.md).
  static let minimumBlueZ = [5, 55]

  static func systemBus(_ facts: BlueZHostFacts) -> HostCheck {
    switch facts.bus {
    case .reachable(let address):
      HostCheck(.systemBus, status: .ok, message: "\(address) (system bus reachable)")
    case .unreachable(let address, let name, let message):
      HostCause.systemBusUnreachable(address: address, detail: message.isEmpty ? name : message).row(
        .systemBus)
    case .refused(let address, let message):
      HostCause.systemBusRefused(address: address, detail: message).row(.systemBus)
    case .timedOut(let address): HostCause.systemBusTimedOut(address: address).row(.systemBus)
    }
  }

  static func bluetoothd(_ facts: BlueZHostFacts, identity: DaemonIdentity, busRow: HostCheck) -> HostCheck {
    if busRow.status == .failure { return HostCause.notChecked(because: busRow).row(.bluetoothd) }
    switch facts.daemon {
    case .notChecked: return HostCause.notChecked(because: busRow).row(.bluetoothd)
    case .absent: return HostCause.bluetoothdNotRunning.row(.bluetoothd)
    case .failed(let name, let message):
      return HostCause.busCallFailed("asking the system bus for org.bluez", name: name, message: message).row(
        .bluetoothd)
    case .running(let pid):
      let pidText = pid.map { "pid \($0)" } ?? "pid unknown"
      guard let version = identity.version else {
        let exe = identity.executable.map { ", \($0)" } ?? ""
        return HostCheck(
          .bluetoothd, status: .ok, message: "org.bluez is running (\(pidText)\(exe)), version unknown")
      }
      if let parts = versionParts(version), parts.lexicographicallyPrecedes(minimumBlueZ) {
        return HostCheck(
          .bluetoothd, status: .warning,
          message:
            "bluetoothd \(version) is running (\(pidText)), older than BlueZ \(minimumBlueZ.map(String.init).joined(separator: ".")), which capture needs",
          fix: "sudo apt-get install --only-upgrade bluez", code: .notAvailable)
      }
      return HostCheck(.bluetoothd, status: .ok, message: "bluetoothd \(version) is running (\(pidText))")
    }
  }

  /// "5.66" → [5, 66]; nil for anything that is not dot-separated numbers.
  static func versionParts(_ text: String) -> [Int]? {
    let parts = text.split(separator: ".", omittingEmptySubsequences: false).map { Int($0) }
    guard !parts.isEmpty, parts.allSatisfy({ $0 != nil }) else { return nil }
    return parts.map { $0! }
  }

  /// The permission row: GetManagedObjects on org.bluez answered, or why not.
  static func bluezPermission(_ facts: BlueZHostFacts, daemonRow: HostCheck) -> HostCheck {
    if daemonRow.status == .failure { return HostCause.notChecked(because: daemonRow).row(.bluezPermission) }
    switch facts.objects {
    case .answered:
      return HostCheck(.bluezPermission, status: .ok, message: "this user may talk to org.bluez")
    case .denied: return HostCause.bluezAccessDenied.row(.bluezPermission)
    case .failed(let name, let message):
      return HostCause.busCallFailed("GetManagedObjects on org.bluez", name: name, message: message).row(
        .bluezPermission)
    case .notChecked: return HostCause.notChecked(because: daemonRow).row(.bluezPermission)
    }
  }

  /// One row per adapter: a failure for the adapter the commands will use (`--adapter`, else the
  /// default hci0, as discover/connect/listen do) when it is not usable or not there, a warning for
  /// any other that is not usable; one row when there is none or they could not be looked at.
  static func adapters(
    _ facts: BlueZHostFacts, rfkill: [String: RfkillState], selected: String?, daemonRow: HostCheck,
    permissionRow: HostCheck
  ) -> [HostCheck] {
    if daemonRow.status == .failure { return [HostCause.notChecked(because: daemonRow).row(.adapter)] }
    guard case .answered(let adapters) = facts.objects else {
      return [HostCause.notChecked(because: permissionRow).row(.adapter)]
    }
    if adapters.isEmpty { return [HostCause.noAdapter.row(.adapter)] }
    let causes = adapters.map {
      cause(of: $0, rfkill: rfkill[$0.name], isDefault: $0.name == adapters[0].name)
    }
    let target = selected ?? BlueZClient.defaultAdapter
    var rows: [HostCheck] = []
    if !adapters.contains(where: { $0.name == target }) {
      rows.append(
        HostCause.adapterMissing(target, known: adapters.map(\.name), chosen: selected != nil).row(
          .adapter, subject: target))
    }
    for (adapter, cause) in zip(adapters, causes) {
      guard let cause else {
        rows.append(
          HostCheck(
            .adapter, subject: adapter.name, status: .ok,
            message: "\(adapter.name) \(adapter.address), powered"))
        continue
      }
      let failing = adapter.name == target
      rows.append(cause.row(.adapter, subject: adapter.name, status: failing ? .failure : .warning))
    }
    return rows
  }

  /// Why an adapter is not usable; nil when it is powered. A hard block is named before a soft one
  /// (unblocking in software does not help while the switch is off).
  static func cause(of adapter: BlueZHostFacts.Adapter, rfkill: RfkillState?, isDefault: Bool) -> HostCause? {
    if adapter.powered { return nil }
    if rfkill?.hard == true { return .adapterHardBlocked }
    if adapter.powerState == "off-blocked" || rfkill?.soft == true { return .adapterSoftBlocked }
    return .adapterPoweredOff(adapter.name, isDefault: isDefault)
  }

  /// nil: socket(AF_BLUETOOTH) succeeded.
  static func kernelBluetooth(_ failure: Errno?) -> HostCheck {
    guard let failure else {
      return HostCheck(.kernelBluetooth, status: .ok, message: "AF_BLUETOOTH sockets available")
    }
    return HostCause.kernelBluetooth(failure).row(.kernelBluetooth)
  }

  /// One row per node this process may not use, or one ok row summarising.
  static func nodes(_ kind: HostCheck.Kind, _ nodes: [NodeAccess]) -> [HostCheck] {
    let denied = nodes.filter { !$0.accessible }
    if !denied.isEmpty {
      return denied.map { HostCause.nodeDenied($0, usualGroup: usualGroup(kind)).row(kind, subject: $0.path) }
    }
    let message: String
    switch (kind, nodes.count) {
    case (.input, 0): message = "no input devices (/dev/input/event*)"
    case (.input, let n): message = "\(counted(n, "input device")) readable"
    case (.serial, 0): message = "no serial devices"
    case (.serial, let n): message = "\(counted(n, "serial device")) readable"
    case (.video, 0): message = "no cameras (/dev/video*)"
    case (_, let n): message = "\(counted(n, "camera")) readable"
    }
    return [HostCheck(kind, status: .ok, message: message)]
  }

  /// The video row: a failure per node this process may not open (as `nodes`), else one ok row that
  /// counts and names the cameras among the nodes (`identities`, by path: a node missing there could
  /// not be asked and is not counted as one) and says how many other video nodes there are.
  static func video(_ nodes: [NodeAccess], identities: [String: VideoIdentity]) -> [HostCheck] {
    if nodes.isEmpty || nodes.contains(where: { !$0.accessible }) { return self.nodes(.video, nodes) }
    let cameras = nodes.compactMap { node -> String? in
      guard let identity = identities[node.path], identity.isCamera else { return nil }
      return identity.card.isEmpty ? node.path : "\(node.path) (\(identity.card))"
    }
    let others = nodes.count - cameras.count
    let message: String
    if cameras.isEmpty {
      message = "no cameras (/dev/video*: \(counted(others, "video node")), none a video capture device)"
    } else {
      let rest =
        switch others {
        case 0: ""
        case 1: "; 1 other video node is not a camera"
        default: "; \(others) other video nodes are not cameras"
        }
      message = "\(counted(cameras.count, "camera")) readable: \(cameras.joined(separator: ", "))\(rest)"
    }
    return [HostCheck(.video, status: .ok, message: message)]
  }

  /// The group systemd-udev's default rules (50-udev-default.rules, as Debian 12 ships them) give the
  /// nodes of each kind.
  static func usualGroup(_ kind: HostCheck.Kind) -> String {
    switch kind {
    case .input: "input"
    case .video: "video"
    default: "dialout"
    }
  }

  /// `access`: what stands in the way when the file cannot be used (FILEACCESSDENIED), probed by the
  /// caller off the cooperative pool; nil probes it here.
  static func stateFile(_ inspection: StateInspection, access: StateAccess? = nil) -> HostCheck {
    let path = inspection.path
    switch inspection.result {
    case .success(nil): return HostCheck(.stateFile, subject: path, status: .ok, message: "no state file yet")
    case .success(let state?):
      if let mode = inspection.mode, mode & 0o077 != 0 {
        return HostCause.stateTooOpen(state.devices.count, mode: mode, path: path).row(
          .stateFile, subject: path, status: .warning)
      }
      return HostCheck(
        .stateFile, subject: path, status: .ok, message: counted(state.devices.count, "remembered device"))
    case .failure(let error):
      let cause: HostCause
      switch error.code {
      case .fileAccessDenied:
        cause = .stateUnreadable(error, path: path, access: access ?? StateAccess.probe(path))
      case .invalidFormat: cause = .stateCorrupt(error)
      default: cause = .stateOther(error)
      }
      return cause.row(.stateFile, subject: path)
    }
  }
}

/// "1 serial device", "2 serial devices": rows are read by people first.
func counted(_ count: Int, _ noun: String) -> String { count == 1 ? "1 \(noun)" : "\(count) \(noun)s" }
