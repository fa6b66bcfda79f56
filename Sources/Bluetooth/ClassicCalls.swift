import CaptureCore

#if canImport(Glibc)
  import Glibc
#endif

/// The Bluetooth Classic operations drivers use, each a short sequence of `BluetoothSystem` calls
/// with EINTR retried here (one place) and every errno turned into an SKT code by
/// `CaptureError(bluetooth:_:address:)`.
public struct ClassicCalls: Sendable {
  public let system: any BluetoothSystem
  /// The local adapter every RFCOMM socket and SDP session of these calls uses: `.any` lets the kernel
  /// pick (the first adapter with a route), an address pins them to the adapter `--adapter` named.
  public let local: BluetoothAddress

  public init(system: any BluetoothSystem = LibBluetoothSystem(), local: BluetoothAddress = .any) {
    self.system = system
    self.local = local
  }

  /// The same calls pinned to `adapter` ("hciN"; nil leaves the kernel's choice): its address comes
  /// from HCI, so a name that is not an adapter fails here (NOTAVAILABLE) rather than connect from
  /// another one.
  public func pinned(to adapter: String?) throws(CaptureError) -> ClassicCalls {
    guard let adapter else { return self }
    return ClassicCalls(system: system, local: try adapterAddress(adapter: adapter))
  }

  /// Runs one seam call, calling it again while it fails with EINTR (a signal is not a failure).
  public func retrying<T>(_ call: () throws(Errno) -> T) throws(Errno) -> T {
    while true {
      do throws(Errno) {
        return try call()
      } catch  where error.code == EINTR {
        continue
      }
    }
  }

  /// The RFCOMM channel of the device's Serial Port service (SDP, class 0x1101).
  public func serialPortChannel(_ address: BluetoothAddress) throws(CaptureError) -> UInt8 {
    do throws(Errno) {
      return try retrying { () throws(Errno) in try system.sdpSerialPortChannel(address, local: local) }
    } catch {
      throw CaptureError(bluetooth: error, "looking up the serial port service (SDP)", address: address)
    }
  }

  /// Whether the device has an SDP record of service class `uuid` (no record: false, not an error).
  public func hasServiceClass(_ address: BluetoothAddress, _ uuid: UUID128) throws(CaptureError) -> Bool {
    do throws(Errno) {
      return try retrying { () throws(Errno) in
        try system.sdpHasServiceClass(address, uuid: uuid, local: local)
      }
    } catch {
      throw CaptureError(bluetooth: error, "searching SDP for service class \(uuid)", address: address)
    }
  }

  /// The device's name by an HCI Remote Name Request on `adapter` (default the first one up).
  public func remoteName(_ address: BluetoothAddress, adapter: String?) throws(CaptureError) -> String {
    do throws(Errno) {
      let device = try hciDevice(adapter)
      return try retrying { () throws(Errno) in
        try system.remoteName(device: device.id, address: address, timeoutMilliseconds: 5000)
      }
    } catch {
      throw CaptureError(bluetooth: error, "reading the remote name (HCI)", address: address)
    }
  }

  /// A new RFCOMM socket. Made first in every operation: on a kernel without AF_BLUETOOTH it fails
  /// at once with EAFNOSUPPORT, before any slower call.
  public func socket() throws(CaptureError) -> Int32 {
    do throws(Errno) {
      return try retrying { () throws(Errno) in try system.socket() }
    } catch {
      throw CaptureError(bluetooth: error, "opening an RFCOMM socket", address: nil)
    }
  }

  /// Connects `fd` (closing it on failure).
  public func connect(_ fd: Int32, to address: BluetoothAddress, channel: UInt8, timeout: Duration)
    throws(CaptureError)
  {
    do throws(Errno) {
      // Channel 0 on a client socket only chooses the adapter the link goes out from.
      if local != .any { try retrying { () throws(Errno) in try system.bind(fd, local: local, channel: 0) } }
      try retrying { () throws(Errno) in
        try system.connect(fd, to: address, channel: channel, timeout: timeout)
      }
    } catch {
      system.close(fd)
      throw CaptureError(bluetooth: error, "connecting RFCOMM channel \(channel)", address: address)
    }
  }

  /// A listening RFCOMM socket on `channel`.
  public func listener(channel: UInt8) throws(CaptureError) -> Int32 {
    let fd = try socket()
    do throws(Errno) {
      try retrying { () throws(Errno) in try system.bind(fd, local: local, channel: channel) }
      try retrying { () throws(Errno) in try system.listen(fd, backlog: 1) }
    } catch {
      system.close(fd)
      throw CaptureError(bluetooth: error, "listening on RFCOMM channel \(channel)", address: nil)
    }
    return fd
  }

  /// Waits up to `timeoutMilliseconds` for one connection on `listener`.
  public func accept(_ listener: Int32, timeoutMilliseconds: Int32) throws(CaptureError) -> AcceptedLink? {
    do throws(Errno) {
      return try retrying { () throws(Errno) in
        try system.accept(listener, timeoutMilliseconds: timeoutMilliseconds)
      }
    } catch {
      throw CaptureError(bluetooth: error, "accepting an RFCOMM connection", address: nil)
    }
  }

  /// The local adapter's address from HCI: `adapter` ("hciN", default the first one that is up).
  public func adapterAddress(adapter: String?) throws(CaptureError) -> BluetoothAddress {
    do throws(Errno) {
      let device = try hciDevice(adapter)
      return try retrying { () throws(Errno) in try system.adapterAddress(device: device.id) }
    } catch {
      throw CaptureError(bluetooth: error, "reading the adapter address (HCI)", address: nil)
    }
  }

  /// The adapter called `adapter`, or the first one that is up; ENODEV when there is none.
  func hciDevice(_ adapter: String?) throws(Errno) -> HCIDevice {
    let devices = try retrying { () throws(Errno) in try system.hciDeviceList() }
    if let adapter {
      guard let device = devices.first(where: { $0.name == adapter }) else { throw Errno(ENODEV) }
      return device
    }
    guard let device = devices.first(where: \.isUp) ?? devices.first else { throw Errno(ENODEV) }
    return device
  }

  /// A found device: its address, class of device and name (nil when the name request failed).
  public struct Found: Sendable, Equatable {
    public var address: BluetoothAddress
    public var classOfDevice: UInt32
    public var name: String?
  }

  /// An HCI inquiry lasting about `seconds` (rounded up to 1.28 s units, at most 48 units per the
  /// HCI Inquiry command's Inquiry_Length range) and a remote name request for each answer.
  public func inquiry(adapter: String?, seconds: Double) throws(CaptureError) -> [Found] {
    do throws(Errno) {
      let device = try hciDevice(adapter)
      let length = min(48, max(1, Int((seconds / 1.28).rounded(.up))))
      let results = try retrying { () throws(Errno) in
        try system.inquiry(device: device.id, length: length, maxResponses: 255)
      }
      return results.map { result in
        let name = try? retrying { () throws(Errno) in
          try system.remoteName(device: device.id, address: result.address, timeoutMilliseconds: 5000)
        }
        return Found(address: result.address, classOfDevice: result.classOfDevice, name: name)
      }
    } catch {
      throw CaptureError(bluetooth: error, "inquiry (HCI)", address: nil)
    }
  }
}

extension CaptureError {
  /// The one mapping from a Bluetooth Classic errno to an SKT code.
  public init(bluetooth error: Errno, _ context: String, address: BluetoothAddress?) {
    let target = address.map { " \($0)" } ?? ""
    switch error.code {
    case EAFNOSUPPORT, ENODEV, EPROTONOSUPPORT:
      self.init(.notAvailable, "no Bluetooth in this kernel/adapter: \(context): \(error.message)")
    case EACCES, EPERM:
      self.init(.bluetoothPermissionMissing, "\(context): not permitted (\(error.message))")
    case ECONNREFUSED, EHOSTDOWN, EHOSTUNREACH:
      self.init(
        .communicationError,
        "\(context) to\(target): \(error.message) (is the scanner on, in range and in SPP acceptor mode?)")
    case ETIMEDOUT:
      self.init(.requestTimedOut, "\(context)\(address == nil ? "" : " to" + target): \(error.message)")
    case EINPROGRESS:
      // A blocking connect(2) inside libbluetooth (sdp_connect's L2CAP socket) whose send timeout ran
      // out before the link came up: bt_sock_wait_state returns EINPROGRESS, not ETIMEDOUT (Linux
      // net/bluetooth/af_bluetooth.c; L2CAP sockets wait L2CAP_CONN_TIMEOUT, 40 s). Seen against a real
      // kernel stack when the device stopped answering.
      self.init(
        .requestTimedOut,
        "\(context)\(address == nil ? "" : " to" + target): no answer in time (is the scanner on and in range?)"
      )
    case ENOENT:
      self.init(
        .notFound,
        "\(target.isEmpty ? "the device" : String(target.dropFirst())) has no serial port service (SDP class 0x1101); scan the SPP acceptor barcode #FNB00F40000# (1D) or #FNC SPP Acceptor 000000000000# (2D)"
      )
    default:
      self.init(.communicationError, "\(context)\(address == nil ? "" : " to" + target): \(error.message)")
    }
  }
}
