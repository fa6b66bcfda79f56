import BlueZ
import Bluetooth
import CaptureCore
import Decoders

#if canImport(Glibc)
  import Glibc
#endif

/// `capture doctor`'s checks over the real host: the bus and bluetoothd through BlueZ, the kernel's
/// Bluetooth sockets through the Bluetooth seam, the rest through `HostProbes`; judged by `HostChecks`.
/// Read only: no adapter is powered, no state file moved, nothing started; the one device node opened
/// is a readable /dev/video node, read-only, to ask what it is (VIDIOC_QUERYCAP, VIDIOC_ENUM_FMT:
/// neither sets a format nor streams).
struct HostDoctor: Sendable {
  var probes = HostProbes()
  var bluetooth: any BluetoothSystem = LibBluetoothSystem()
  /// The bound of each bus call and of `bluetoothd --version`; the command's --timeout (a cancelled
  /// task) ends them sooner.
  var bound: Duration = .seconds(5)

  /// What the blocking half of the probes found (one job on the blocking executor).
  struct LocalFacts: Sendable {
    var identity = DaemonIdentity()
    var rfkill: [String: RfkillState] = [:]
    var kernel: Errno?
    var input: [NodeAccess] = []
    var serial: [NodeAccess] = []
    var video: [NodeAccess] = []
    /// What each readable video node is, by path.
    var videoIdentities: [String: VideoIdentity] = [:]
    var state: StateInspection
    /// What stands in the way of a state file this user may not use.
    var stateAccess: StateAccess?
  }

  func diagnose(_ request: DiagnosisRequest) async -> [HostCheck] {
    let facts = await BlueZHostProbe.probe(timeout: bound)
    let local = await localFacts(facts, request: request)
    var rows = bluetoothRows(facts, local: local, selected: request.adapter)
    rows.append(HostChecks.kernelBluetooth(local.kernel))
    rows += HostChecks.nodes(.input, local.input)
    rows += HostChecks.nodes(.serial, local.serial)
    rows += HostChecks.video(local.video, identities: local.videoIdentities)
    rows.append(HostChecks.stateFile(local.state, access: local.stateAccess))
    switch DecoderLibraries.zbarVersion {
    case .success(let version): rows.append(HostCheck(.zbar, status: .ok, message: "ZBar \(version)"))
    case .failure(let failure):
      rows.append(
        HostCheck(
          .zbar, status: .failure, message: failure.message, fix: "sudo apt-get install libzbar0",
          code: .notAvailable))
    }
    rows.append(HostCheck(.zxing, status: .ok, message: "zxing-cpp \(DecoderLibraries.zxingVersion)"))
    return rows
  }

  /// system-bus, bluetoothd, adapter (one or more) and bluez-permission, in report order.
  func bluetoothRows(_ facts: BlueZHostFacts, local: LocalFacts, selected: String?) -> [HostCheck] {
    let bus = HostChecks.systemBus(facts)
    let daemon = HostChecks.bluetoothd(facts, identity: local.identity, busRow: bus)
    let permission = HostChecks.bluezPermission(facts, daemonRow: daemon)
    let adapters = HostChecks.adapters(
      facts, rfkill: local.rfkill, selected: selected, daemonRow: daemon, permissionRow: permission)
    return [bus, daemon] + adapters + [permission]
  }

  /// The Bluetooth rows alone, for a failing command's cause (`HostExplanation`): no version run, no
  /// device nodes.
  func bluetoothRows(selected: String?) async -> [HostCheck] {
    let facts = await BlueZHostProbe.probe(timeout: bound)
    let names = Self.adapterNames(facts)
    let probes = self.probes
    let rfkill = await BlockingExecutor.shared.run { _ in
      Dictionary(uniqueKeysWithValues: names.compactMap { name in probes.rfkill(name).map { (name, $0) } })
    }
    let local = LocalFacts(rfkill: rfkill, state: StateInspection(path: "", mode: nil, result: .success(nil)))
    return bluetoothRows(facts, local: local, selected: selected)
  }

  /// The kernel-bluetooth row alone.
  func kernelRow() async -> HostCheck {
    let bluetooth = self.bluetooth
    let failure = await BlockingExecutor.shared.run { _ in Self.kernelFailure(bluetooth) }
    return HostChecks.kernelBluetooth(failure)
  }

  static func kernelFailure(_ bluetooth: any BluetoothSystem) -> Errno? {
    do throws(Errno) {
      try bluetooth.probeHCISocket()
      return nil
    } catch {
      return error
    }
  }

  static func adapterNames(_ facts: BlueZHostFacts) -> [String] {
    if case .answered(let adapters) = facts.objects { return adapters.map(\.name) }
    return []
  }

  func localFacts(_ facts: BlueZHostFacts, request: DiagnosisRequest) async -> LocalFacts {
    let pid: UInt32? = if case .running(let pid) = facts.daemon { pid } else { nil }
    let names = Self.adapterNames(facts)
    let (probes, bluetooth, bound) = (self.probes, self.bluetooth, self.bound)
    let store = request.state
    return await BlockingExecutor.shared.run { cancellation in
      let state = store.inspect()
      var local = LocalFacts(state: state)
      if case .failure(let error) = state.result, error.code == .fileAccessDenied {
        local.stateAccess = StateAccess.probe(state.path)
      }
      local.identity = probes.daemonIdentity(pid: pid, timeout: bound, cancellation: cancellation)
      for name in names { local.rfkill[name] = probes.rfkill(name) }
      local.kernel = Self.kernelFailure(bluetooth)
      let (hidPaths, serialPaths) = Self.rememberedSelectors(state)
      var seen = Set<String>()
      func add(_ path: String, _ kind: HostCheck.Kind) {
        let key = Self.realPath(path) ?? path
        guard seen.insert(key).inserted,
          let node = probes.access(path, needsWrite: kind == .serial)
        else { return }
        switch kind {
        case .input: local.input.append(node)
        case .serial: local.serial.append(node)
        default: local.video.append(node)
        }
      }
      for kind in [HostCheck.Kind.input, .serial, .video] {
        for path in probes.nodePaths(kind) { add(path, kind) }
      }
      for path in hidPaths { add(path, .input) }
      for path in serialPaths { add(path, .serial) }
      for node in local.video where node.accessible {
        local.videoIdentities[node.path] = probes.video(node.path)
      }
      return local
    }
  }

  /// The `hid:` and `serial:` paths of the remembered devices.
  static func rememberedSelectors(_ state: StateInspection) -> (hid: [String], serial: [String]) {
    guard case .success(let file?) = state.result else { return ([], []) }
    var hid: [String] = []
    var serial: [String] = []
    for device in file.devices {
      switch try? DeviceSelector.parse(device.id) {
      case .hid(let path): hid.append(path)
      case .serial(let path, _): serial.append(path)
      default: break
      }
    }
    return (hid, serial)
  }

  static func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
  }
}
