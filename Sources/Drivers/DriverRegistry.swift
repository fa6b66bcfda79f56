import BlueZ
import Bluetooth
import CaptureCore

/// Picks the driver for a selector. Families whose transports are not built yet answer
/// ESKT_NOTSUPPORTED naming the transport, never a silent success.
public struct DriverRegistry: DeviceOpener {
  public init() {}

  public func open(_ request: OpenRequest, state: StateStore) async throws(CaptureError) -> any Device {
    switch request.selector {
    case .socketCam:
      return try SocketCam(request: request, store: state)
    case .name(let name):
      let remembered = try state.load().device(named: name)
      guard let remembered else {
        throw CaptureError(.notFound, "no remembered device is called '\(name)' (see capture list)")
      }
      var resolved = request
      resolved.selector = try DeviceSelector.parse(remembered.id)
      if case .name = resolved.selector {
        throw CaptureError(
          .invalidFormat, "remembered device '\(name)' has an unusable id '\(remembered.id)'")
      }
      return try await open(resolved, state: state)
    case .bluetooth(let address):
      return try await Self.openBluetooth(address, request: request, state: state)
    case .tcp(let host, let port):
      return try await DataManReader.open(host: host, port: port, request: request)
    case .serial(let path, let parameters) where parameters["protocol"]?.lowercased() == "dmcc":
      return try await DataManReader.open(serialPath: path, parameters: parameters, request: request)
    case .serial(let path, let parameters):
      return try SerialScanner.open(path: path, parameters: parameters, request: request)
    case .hid(let path):
      return try KeyboardWedge.open(path: path, request: request)
    case .deviceManager:
      return DeviceManagerHandle(store: state)
    }
  }

  /// A Bluetooth address is BLE through BlueZ, or Classic SPP over RFCOMM when the state file
  /// remembers it with transport "classic" or when bluetoothd is absent (so BlueZ cannot know it).
  /// Without bluetoothd and without AF_BLUETOOTH both reasons are given, BlueZ's first.
  static func openBluetooth(_ address: String, request: OpenRequest, state: StateStore)
    async throws(CaptureError) -> any Device
  {
    do {
      return try await openBluetoothDevice(address, request: request, state: state)
    } catch {
      // inspect, not load: the state was read (and a corrupt file moved aside) by the open itself.
      var isClassic = false
      if case .success(let file?) = state.inspect().result {
        isClassic = file.devices.first { $0.id == address }?.transport == RememberedDevice.classicTransport
      }
      let route: HostExplanation.Route = isClassic ? .classic : .either
      throw await HostExplanation.explain(error, adapter: request.adapter, route: route)
    }
  }

  static func openBluetoothDevice(_ address: String, request: OpenRequest, state: StateStore)
    async throws(CaptureError) -> any Device
  {
    let remembered = try state.load().devices.first { $0.id == address }
    guard let bdaddr = BluetoothAddress(address) else {
      throw .invalidParameter("'\(address)' is not a Bluetooth address (AA:BB:CC:DD:EE:FF)")
    }
    let classic = ClassicSPPScanner.Link.initiate(bdaddr, channel: remembered?.channel)
    if remembered?.transport == RememberedDevice.classicTransport {
      // get and set need no RFCOMM link: no Classic property comes over SPP (docs/device-protocols.md §5.3).
      if !request.wantsEvents {
        return ClassicSPPScanner.forProperties(bdaddr, request: request, name: remembered?.name)
      }
      return try await ClassicSPPScanner.open(classic, request: request, name: remembered?.name)
    }
    let blueZ: BlueZClient
    do throws(CaptureError) {
      blueZ = try await BlueZClient.connect(adapter: request.adapter)
    } catch {
      do throws(CaptureError) {
        return try await ClassicSPPScanner.open(classic, request: request, name: remembered?.name)
      } catch let classicError {
        guard classicError.code == .notAvailable else { throw classicError }
        throw CaptureError(error.code, "\(error.message); Bluetooth Classic: \(classicError.message)")
      }
    }
    blueZ.close()
    return try await BLEDevice.open(address: address, request: request, timeout: request.timeout)
  }

  public static func transportMissing(_ selector: DeviceSelector) -> CaptureError {
    .transportMissing(selector)
  }
}
