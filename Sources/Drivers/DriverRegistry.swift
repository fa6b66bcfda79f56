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
      let remembered = try state.load().devices.first { $0.alias == name || $0.name == name || $0.id == name }
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
      return try await BLEDevice.open(address: address, request: request, timeout: request.timeout)
    case .tcp(let host, let port):
      return try await DataManReader.open(host: host, port: port, request: request)
    case .serial(let path, let parameters):
      return try SerialScanner.open(path: path, parameters: parameters, request: request)
    case .hid(let path):
      return try KeyboardWedge.open(path: path, request: request)
    }
  }

  public static func transportMissing(_ selector: DeviceSelector) -> CaptureError {
    .notSupported(
      "\(selector): the \(selector.transportName) transport is not available in this build of capture")
  }
}
