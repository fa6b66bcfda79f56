import CaptureCore
import Decoders

/// The real `DeviceSystem`: `DriverRegistry` opens devices, and the device-management calls go to the
/// BlueZ manager, Classic pairing and discovery, and evdev, converted once here into Core's types.
public struct DriverSystem: DeviceSystem {
  private let registry = DriverRegistry()
  private let doctor = HostDoctor()

  public init() {}

  public func open(_ request: OpenRequest, state: StateStore) async throws(CaptureError) -> any Device {
    try await registry.open(request, state: state)
  }

  public func discover(
    _ request: DiscoveryRequest, found: @escaping @Sendable (DiscoveredDeviceInfo) -> Void
  ) async throws(CaptureError) -> Int {
    do {
      return try await BLEManager.discover(
        adapter: request.adapter, transport: request.transport, all: request.all,
        namePattern: request.namePattern, timeout: request.timeout
      ) { device in found(Self.info(device)) }
    } catch {
      throw await HostExplanation.explain(error, adapter: request.adapter, route: .blueZ)
    }
  }

  public func bluetoothdReachable(adapter: String?) async -> Bool {
    await ClassicDiscovery.bluetoothdReachable(adapter: adapter)
  }

  public func inquire(adapter: String?, seconds: Double, all: Bool, note: (String) -> Void)
    async throws(CaptureError) -> [DiscoveredDeviceInfo]
  {
    do {
      return try await ClassicDiscovery.inquiry(adapter: adapter, seconds: seconds, all: all, note: note).map
      {
        Self.info(DiscoveredDevice(inquiry: $0))
      }
    } catch {
      throw await HostExplanation.explain(error, adapter: adapter, route: .classic)
    }
  }

  public func connect(address: String, adapter: String?, pair: Bool, timeout: Duration?)
    async throws(CaptureError) -> BluetoothDeviceInfo
  {
    let connected: ConnectedDevice
    do {
      connected = try await BLEManager.connect(
        address: address, adapter: adapter, pair: pair, timeout: timeout)
    } catch {
      throw await HostExplanation.explain(error, adapter: adapter, route: .blueZ)
    }
    return BluetoothDeviceInfo(
      address: connected.address, name: connected.name, deviceTypes: connected.family.deviceTypes,
      isPaired: connected.isPaired)
  }

  public func pairClassic(address: String, adapter: String?, timeout: Duration?) async throws(CaptureError)
    -> String
  {
    do {
      return try await ClassicPairing.pair(address: address, adapter: adapter, timeout: timeout).name
    } catch {
      throw await HostExplanation.explain(error, adapter: adapter, route: .blueZ)
    }
  }

  public func probeClassic(address: String, request: OpenRequest, name: String?)
    async throws(CaptureError) -> ClassicProbe
  {
    var request = request
    request.wantsEvents = false
    let device: ClassicSPPScanner
    do {
      device = try await ClassicSPPScanner.open(address: address, request: request, name: name)
    } catch {
      throw await HostExplanation.explain(error, adapter: request.adapter, route: .classic)
    }
    let probe = ClassicProbe(info: device.info, channel: device.channel)
    await device.close()
    return probe
  }

  public func remove(address: String, adapter: String?) async throws(CaptureError) -> BluetoothDeviceInfo? {
    let found: (name: String, family: BLEFamily)?
    do { found = try await BLEManager.remove(address: address, adapter: adapter) } catch {
      throw await HostExplanation.explain(error, adapter: adapter, route: .blueZ)
    }
    guard let removed = found else { return nil }
    return BluetoothDeviceInfo(
      address: address, name: removed.name, deviceTypes: removed.family.deviceTypes, isPaired: false)
  }

  public func partnership(address: String, adapter: String?) async throws(CaptureError) -> PartnershipInfo {
    let p: BLEManager.Partnership
    do { p = try await BLEManager.partnership(address: address, adapter: adapter) } catch {
      throw await HostExplanation.explain(error, adapter: adapter, route: .blueZ)
    }
    return PartnershipInfo(
      device: BluetoothDeviceInfo(
        address: p.address, name: p.name, deviceTypes: p.family.deviceTypes, isPaired: p.isPaired),
      isBonded: p.isBonded, isTrusted: p.isTrusted, isConnected: p.isConnected, variant: p.variant)
  }

  public func connected(adapter: String?) async throws(CaptureError) -> [BluetoothDeviceInfo] {
    let devices: [ConnectedDevice]
    do { devices = try await BLEManager.connected(adapter: adapter) } catch {
      throw await HostExplanation.explain(error, adapter: adapter, route: .blueZ)
    }
    return devices.map { device in
      BluetoothDeviceInfo(
        address: device.address, name: device.name, deviceTypes: device.family.deviceTypes,
        isPaired: device.isPaired)
    }
  }

  public func accept(channel: Int, request: OpenRequest) async throws(CaptureError) -> any Device {
    do {
      return try await ClassicSPPScanner.accept(channel: channel, request: request)
    } catch {
      throw await HostExplanation.explain(error, adapter: request.adapter, route: .classic)
    }
  }

  public func pairingBarcodes(adapter: String?) async throws(CaptureError) -> PairingBarcodes {
    let code: PairingCode
    do { code = try await ClassicDiscovery.pairingCode(adapter: adapter) } catch {
      throw await HostExplanation.explain(error, adapter: adapter, route: .either)
    }
    return PairingBarcodes(host: code.hostText, linear: code.linear, twoDimensional: code.twoDimensional)
  }

  public func inputDevices() -> (devices: [InputDeviceInfo], unreadable: [String]) {
    let (devices, unreadable) = EvdevIdentity.scan()
    return (
      devices.map {
        InputDeviceInfo(
          path: $0.path, name: $0.name, vendorID: $0.vendorID, productID: $0.productID,
          isScanner: $0.isScanner)
      }, unreadable
    )
  }

  public func cameras() -> (cameras: [CameraInfo], unreadable: [String]) {
    Self.cameras(among: doctor.probes.nodePaths(.video))
  }

  /// The capture nodes among `paths`; a node that is gone or is no V4L2 device is left out, one that
  /// could not be asked (permission denied) is `unreadable`.
  static func cameras(among paths: [String]) -> (cameras: [CameraInfo], unreadable: [String]) {
    var cameras: [CameraInfo] = []
    var unreadable: [String] = []
    for path in paths {
      switch V4L2Camera.describe(path: path) {
      case .success(let node) where node.isCapture:
        cameras.append(
          CameraInfo(path: node.path, driver: node.driver, card: node.card, formats: node.formats))
      case .success, .failure(.notFound), .failure(.unsupportedFormat): continue
      case .failure: unreadable.append(path)
      }
    }
    return (cameras, unreadable)
  }

  public func diagnose(_ request: DiagnosisRequest) async -> [HostCheck] {
    await doctor.diagnose(request)
  }

  /// The one conversion of a discovered device into Core's type (bluetoothd LE and BR/EDR, and HCI
  /// inquiry alike, so `discover` reports the same keys whichever way it found one).
  static func info(_ device: DiscoveredDevice) -> DiscoveredDeviceInfo {
    DiscoveredDeviceInfo(
      address: device.address, addressType: device.addressType, name: device.name, rssi: device.rssi,
      uuids: device.uuids, isSocketMobile: device.isSocketMobile, type: device.type,
      classOfDevice: device.classOfDevice, recognizedBy: device.classicRecognition?.rawValue)
  }
}
