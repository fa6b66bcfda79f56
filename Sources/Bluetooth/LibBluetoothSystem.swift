import CBluetooth
import CaptureCore

#if canImport(Glibc)
  import Glibc
#endif

/// The real `BluetoothSystem`: libbluetooth and the socket calls through the CBluetooth shim. Each
/// method makes its call once and throws the errno it set (EINTR too), except where a retry at this
/// level is the only correct one (see `connect`).
public struct LibBluetoothSystem: BluetoothSystem {
  public init() {}

  public func socket() throws(Errno) -> Int32 {
    let fd = cbt_rfcomm_socket()
    if fd < 0 { throw .current }
    return fd
  }

  /// A non-blocking connect(2) and a poll(2) for writability, then SO_ERROR (connect(2) man page,
  /// EINPROGRESS). An interrupted connect(2) goes on asynchronously (POSIX connect(): EINTR), and
  /// calling it again would give EALREADY, so EINTR is handled here by polling like EINPROGRESS;
  /// an interrupted poll(2) is polled again with the time left.
  public func connect(_ fd: Int32, to address: BluetoothAddress, channel: UInt8, timeout: Duration)
    throws(Errno)
  {
    let flags = fcntl(fd, F_GETFL)
    guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else { throw .current }
    defer { _ = fcntl(fd, F_SETFL, flags) }
    let result = address.littleEndianBytes.withUnsafeBufferPointer {
      cbt_rfcomm_connect(fd, $0.baseAddress, channel)
    }
    if result == 0 { return }
    let failure = errno
    guard failure == EINPROGRESS || failure == EINTR else { throw Errno(failure) }
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while true {
      let left = clock.now.duration(to: deadline)
      if left <= .zero { throw Errno(ETIMEDOUT) }
      let (seconds, attoseconds) = left.components
      let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
      var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
      let ready = poll(&pfd, 1, milliseconds)
      if ready < 0 {
        if errno == EINTR { continue }
        throw .current
      }
      if ready == 0 { continue }
      var error: Int32 = 0
      var length = socklen_t(MemoryLayout<Int32>.size)
      guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else { throw .current }
      if error != 0 { throw Errno(error) }
      return
    }
  }

  public func bind(_ fd: Int32, local: BluetoothAddress, channel: UInt8) throws(Errno) {
    let result = local.littleEndianBytes.withUnsafeBufferPointer {
      cbt_rfcomm_bind(fd, $0.baseAddress, channel)
    }
    if result != 0 { throw .current }
  }

  public func listen(_ fd: Int32, backlog: Int32) throws(Errno) {
    if Glibc.listen(fd, backlog) != 0 { throw .current }
  }

  public func accept(_ fd: Int32, timeoutMilliseconds: Int32) throws(Errno) -> AcceptedLink? {
    var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    let ready = poll(&pfd, 1, timeoutMilliseconds)
    if ready < 0 { throw .current }
    if ready == 0 { return nil }
    var peer = [UInt8](repeating: 0, count: 6)
    var channel: UInt8 = 0
    let client = peer.withUnsafeMutableBufferPointer { cbt_rfcomm_accept(fd, $0.baseAddress, &channel) }
    if client < 0 { throw .current }
    return AcceptedLink(fd: client, peer: BluetoothAddress(littleEndianBytes: peer)!, channel: channel)
  }

  public func read(_ fd: Int32, maxCount: Int, timeoutMilliseconds: Int32) throws(Errno) -> BluetoothRead {
    var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    let ready = poll(&pfd, 1, timeoutMilliseconds)
    if ready < 0 { throw .current }
    if ready == 0 { return .idle }
    var buffer = [UInt8](repeating: 0, count: maxCount)
    let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
    if n < 0 { throw .current }
    if n == 0 { return .closed }
    return .data(Array(buffer[0..<n]))
  }

  public func write(_ fd: Int32, _ bytes: [UInt8]) throws(Errno) -> Int {
    let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    if n < 0 { throw .current }
    return n
  }

  public func close(_ fd: Int32) { _ = Glibc.close(fd) }

  public func probeHCISocket() throws(Errno) {
    if cbt_hci_socket_probe() != 0 { throw .current }
  }

  public func hciDeviceList() throws(Errno) -> [HCIDevice] {
    // HCI_MAX_DEV is 16 (bluetooth/hci.h).
    try hciDeviceList(capacity: 16)
  }

  /// HCIGETDEVLIST into arrays of `capacity` entries (the shim never writes more; 0 is EINVAL).
  func hciDeviceList(capacity: Int) throws(Errno) -> [HCIDevice] {
    var ids = [UInt16](repeating: 0, count: capacity)
    var up = [UInt8](repeating: 0, count: capacity)
    let count = ids.withUnsafeMutableBufferPointer { idp in
      up.withUnsafeMutableBufferPointer { upp in
        cbt_hci_device_list(idp.baseAddress, upp.baseAddress, Int32(clamping: capacity))
      }
    }
    if count < 0 { throw .current }
    return (0..<min(Int(count), capacity)).map { HCIDevice(id: Int(ids[$0]), isUp: up[$0] != 0) }
  }

  public func adapterAddress(device: Int) throws(Errno) -> BluetoothAddress {
    var bytes = [UInt8](repeating: 0, count: 6)
    let result = bytes.withUnsafeMutableBufferPointer {
      cbt_hci_device_address(Int32(device), $0.baseAddress)
    }
    if result < 0 { throw .current }
    return BluetoothAddress(littleEndianBytes: bytes)!
  }

  public func inquiry(device: Int, length: Int, maxResponses: Int) throws(Errno) -> [InquiryResult] {
    let max = Swift.max(1, maxResponses)
    var addresses = [UInt8](repeating: 0, count: 6 * max)
    var classes = [UInt32](repeating: 0, count: max)
    let count = addresses.withUnsafeMutableBufferPointer { ap in
      classes.withUnsafeMutableBufferPointer { cp in
        cbt_hci_inquiry(Int32(device), Int32(length), Int32(max), ap.baseAddress, cp.baseAddress)
      }
    }
    if count < 0 { throw .current }
    return (0..<Int(count)).map { i in
      InquiryResult(
        address: BluetoothAddress(littleEndianBytes: Array(addresses[6 * i..<6 * i + 6]))!,
        classOfDevice: classes[i])
    }
  }

  public func remoteName(device: Int, address: BluetoothAddress, timeoutMilliseconds: Int32) throws(Errno)
    -> String
  {
    // A remote name is at most 248 bytes (HCI Remote Name Request Complete), plus the NUL.
    try remoteName(device: device, address: address, timeoutMilliseconds: timeoutMilliseconds, capacity: 249)
  }

  /// The name request into a buffer of `capacity` bytes (the NUL included; 0 is EINVAL).
  func remoteName(device: Int, address: BluetoothAddress, timeoutMilliseconds: Int32, capacity: Int)
    throws(Errno) -> String
  {
    var name = [CChar](repeating: 0, count: capacity)
    let result = address.littleEndianBytes.withUnsafeBufferPointer { ap in
      name.withUnsafeMutableBufferPointer { np in
        cbt_hci_remote_name(
          Int32(device), ap.baseAddress, np.baseAddress, Int32(np.count), timeoutMilliseconds)
      }
    }
    if result < 0 { throw .current }
    let bytes = name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
    return String(decoding: bytes, as: UTF8.self)
  }

  public func sdpSerialPortChannel(_ address: BluetoothAddress, local: BluetoothAddress) throws(Errno)
    -> UInt8
  {
    let channel = local.littleEndianBytes.withUnsafeBufferPointer { lp in
      address.littleEndianBytes.withUnsafeBufferPointer {
        cbt_sdp_serial_port_channel(lp.baseAddress, $0.baseAddress)
      }
    }
    if channel < 0 { throw .current }
    return UInt8(clamping: channel)
  }

  public func sdpHasServiceClass(_ address: BluetoothAddress, uuid: UUID128, local: BluetoothAddress)
    throws(Errno)
    -> Bool
  {
    let result = local.littleEndianBytes.withUnsafeBufferPointer { lp in
      address.littleEndianBytes.withUnsafeBufferPointer { ap in
        uuid.bytes.withUnsafeBufferPointer { up in
          cbt_sdp_has_service_class(lp.baseAddress, ap.baseAddress, up.baseAddress)
        }
      }
    }
    if result < 0 { throw .current }
    return result == 1
  }
}
