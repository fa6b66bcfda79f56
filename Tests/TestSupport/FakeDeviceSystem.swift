import CaptureCore
import Synchronization

/// Device management without Bluetooth hardware or drivers: what bluetoothd "knows" is a table, opening
/// answers from a table of devices (or a maker), and every call is recorded. Everything a test does not
/// set up fails as a host without bluetoothd or an adapter does (ESKT_NOTAVAILABLE).
public final class FakeDeviceSystem: DeviceSystem, Sendable {
  public struct Answers: Sendable {
    /// bluetoothd on the system bus?
    public var bluetoothd = false
    /// What discovery finds; nil: discovery (and the inquiry) fail as without bluetoothd.
    public var discovered: [DiscoveredDeviceInfo]? = nil
    /// `connect` of an address bluetoothd does not know succeeds as a paired device of this name
    /// (a D600); nil: it fails as `unknown` says.
    public var connectsAnyAs: String? = nil
    /// The failure for an address bluetoothd does not know (`connect`, `partnership`).
    public var unknown: @Sendable (String) -> CaptureError = { CaptureError(.notFound, "\($0) unseen") }
    /// `remove` fails with this.
    public var removeFailure: CaptureError? = nil
    /// The failure of `open` for a selector not in `devices` and not taken by `opens`.
    public var openFailure: @Sendable (DeviceSelector) -> CaptureError = {
      CaptureError(.fileNotFound, "\($0) is not here")
    }
    /// Opens a new device for a selector (nil: not this one), before `devices` is looked at.
    public var opens: (@Sendable (OpenRequest) -> (any Device)?)? = nil
    public var pairingBarcodes: PairingBarcodes? = nil
    /// What `capture doctor` is told.
    public var checks: [HostCheck] = []

    public init() {}
  }

  private let answers: Answers
  /// bluetoothd's devices by address: `connect` and `partnership` answer from it, `remove` forgets.
  public let known: Mutex<[String: BluetoothDeviceInfo]>
  /// Devices `open` hands out, by selector as written.
  public let devices: Mutex<[String: any Device]>
  private let log = Mutex<[String]>([])
  private let handedOut = Mutex<[any Device]>([])
  private let diagnoses = Mutex<[DiagnosisRequest]>([])

  public init(
    _ answers: Answers = Answers(), known: [BluetoothDeviceInfo] = [], devices: [String: any Device] = [:]
  ) {
    self.answers = answers
    self.known = Mutex(Dictionary(uniqueKeysWithValues: known.map { ($0.address, $0) }))
    self.devices = Mutex(devices)
  }

  /// The calls, in order: "open SELECTOR", "discover TRANSPORT TIMEOUT",
  /// "connect ADDRESS pair=BOOL adapter=ADAPTER|-", "remove ADDRESS".
  public var calls: [String] { log.withLock { $0 } }

  /// The calls but opens.
  public var managementCalls: [String] { calls.filter { !$0.hasPrefix("open ") } }

  /// The devices `open` handed out, in order.
  public var opened: [any Device] { handedOut.withLock { $0 } }

  /// The requests `diagnose` was given.
  public var diagnosisRequests: [DiagnosisRequest] { diagnoses.withLock { $0 } }

  private func record(_ call: String) { log.withLock { $0.append(call) } }

  private static let noBluetoothd = CaptureError(.notAvailable, "no bluetoothd here")
  private static let noAdapter = CaptureError(.notAvailable, "no adapter")

  public func open(_ request: OpenRequest, state: StateStore) async throws(CaptureError) -> any Device {
    record("open \(request.selector)")
    guard let device = answers.opens?(request) ?? devices.withLock({ $0[request.selector.description] })
    else { throw answers.openFailure(request.selector) }
    handedOut.withLock { $0.append(device) }
    return device
  }

  public func discover(
    _ request: DiscoveryRequest, found: @escaping @Sendable (DiscoveredDeviceInfo) -> Void
  ) async throws(CaptureError) -> Int {
    record("discover \(request.transport) \(request.timeout)")
    guard let discovered = answers.discovered else { throw Self.noBluetoothd }
    discovered.forEach(found)
    return discovered.count
  }

  public func bluetoothdReachable(adapter: String?) async -> Bool { answers.bluetoothd }

  public func inquire(adapter: String?, seconds: Double, all: Bool, note: (String) -> Void)
    async throws(CaptureError) -> [DiscoveredDeviceInfo]
  {
    guard answers.discovered != nil else { throw Self.noAdapter }
    return []
  }

  public func connect(address: String, adapter: String?, pair: Bool, timeout: Duration?)
    async throws(CaptureError) -> BluetoothDeviceInfo
  {
    record("connect \(address) pair=\(pair) adapter=\(adapter ?? "-")")
    if let info = known.withLock({ $0[address] }) { return info }
    guard let name = answers.connectsAnyAs else { throw answers.unknown(address) }
    return BluetoothDeviceInfo(address: address, name: name, deviceTypes: [.scannerD600], isPaired: true)
  }

  public func pairClassic(address: String, adapter: String?, timeout: Duration?)
    async throws(CaptureError) -> String
  { throw Self.noBluetoothd }

  public func probeClassic(address: String, request: OpenRequest, name: String?)
    async throws(CaptureError) -> ClassicProbe
  { throw Self.noAdapter }

  public func remove(address: String, adapter: String?) async throws(CaptureError) -> BluetoothDeviceInfo? {
    record("remove \(address)")
    if let failure = answers.removeFailure { throw failure }
    return known.withLock { $0.removeValue(forKey: address) }
  }

  public func partnership(address: String, adapter: String?) async throws(CaptureError) -> PartnershipInfo {
    guard let info = known.withLock({ $0[address] }) else { throw answers.unknown(address) }
    return PartnershipInfo(
      device: info, isBonded: true, isTrusted: true, isConnected: true, variant: "no-pairing")
  }

  public func connected(adapter: String?) async throws(CaptureError) -> [BluetoothDeviceInfo] { [] }

  public func accept(channel: Int, request: OpenRequest) async throws(CaptureError) -> any Device {
    throw Self.noAdapter
  }

  public func pairingBarcodes(adapter: String?) async throws(CaptureError) -> PairingBarcodes {
    guard let barcodes = answers.pairingBarcodes else { throw Self.noAdapter }
    return barcodes
  }

  public func inputDevices() -> (devices: [InputDeviceInfo], unreadable: [String]) { ([], []) }
  public func cameras() -> (cameras: [CameraInfo], unreadable: [String]) { ([], []) }

  public func diagnose(_ request: DiagnosisRequest) async -> [HostCheck] {
    diagnoses.withLock { $0.append(request) }
    return answers.checks
  }
}
