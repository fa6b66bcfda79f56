import CaptureCore

/// What a read from an RFCOMM socket gave.
public enum BluetoothRead: Sendable, Equatable {
  case data([UInt8])
  /// Nothing arrived within the poll timeout; the link is still up.
  case idle
  /// The peer closed the link (read returned 0).
  case closed
}

/// A connection taken from a listening RFCOMM socket.
public struct AcceptedLink: Sendable, Equatable {
  public var fd: Int32
  public var peer: BluetoothAddress
  public var channel: UInt8
  public init(fd: Int32, peer: BluetoothAddress, channel: UInt8) {
    self.fd = fd
    self.peer = peer
    self.channel = channel
  }
}

/// A local HCI adapter as HCIGETDEVLIST reports it.
public struct HCIDevice: Sendable, Equatable {
  public var id: Int
  public var isUp: Bool
  public var name: String { "hci\(id)" }
  public init(id: Int, isUp: Bool) {
    self.id = id
    self.isUp = isUp
  }
}

/// One answer to an HCI inquiry.
public struct InquiryResult: Sendable, Equatable {
  public var address: BluetoothAddress
  /// The 24-bit Class of Device (Bluetooth Assigned Numbers, "Class of Device").
  public var classOfDevice: UInt32
  public init(address: BluetoothAddress, classOfDevice: UInt32) {
    self.address = address
    self.classOfDevice = classOfDevice
  }
}

/// The seam under every Bluetooth Classic call (docs/bluez-testing.md: "put every libbluetooth call behind
/// one small syscall seam so unit tests can script results and errno"). Each method is one system or
/// libbluetooth call and throws the `Errno` it set, EINTR included: retrying is the caller's job
/// (`ClassicCalls`), so a scripted EINTR exercises the retry. `LibBluetoothSystem` is the real one.
public protocol BluetoothSystem: Sendable {
  /// An RFCOMM stream socket.
  func socket() throws(Errno) -> Int32
  /// Connects `fd` to `address` on RFCOMM `channel`, giving up with ETIMEDOUT after `timeout`.
  func connect(_ fd: Int32, to address: BluetoothAddress, channel: UInt8, timeout: Duration) throws(Errno)
  /// Binds `fd` to RFCOMM `channel` on local adapter `local` (`.any`: any adapter; channel 0 for a
  /// client socket, which only picks the adapter).
  func bind(_ fd: Int32, local: BluetoothAddress, channel: UInt8) throws(Errno)
  func listen(_ fd: Int32, backlog: Int32) throws(Errno)
  /// Waits up to `timeoutMilliseconds` for a connection; nil when none came.
  func accept(_ fd: Int32, timeoutMilliseconds: Int32) throws(Errno) -> AcceptedLink?
  /// Waits up to `timeoutMilliseconds` for bytes (at most `maxCount`).
  func read(_ fd: Int32, maxCount: Int, timeoutMilliseconds: Int32) throws(Errno) -> BluetoothRead
  /// Writes some of `bytes`; returns how many.
  func write(_ fd: Int32, _ bytes: [UInt8]) throws(Errno) -> Int
  func close(_ fd: Int32)
  /// Opens and closes a raw HCI socket (socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI)): does this kernel
  /// have Bluetooth, and may this process use it? EAFNOSUPPORT when the bluetooth module is missing.
  func probeHCISocket() throws(Errno)
  /// The local HCI adapters (HCIGETDEVLIST).
  func hciDeviceList() throws(Errno) -> [HCIDevice]
  /// The BD address of adapter `device` (hci_devba).
  func adapterAddress(device: Int) throws(Errno) -> BluetoothAddress
  /// An HCI inquiry on adapter `device` lasting `length` × 1.28 s.
  func inquiry(device: Int, length: Int, maxResponses: Int) throws(Errno) -> [InquiryResult]
  /// The remote device's name (HCI Remote Name Request).
  func remoteName(device: Int, address: BluetoothAddress, timeoutMilliseconds: Int32) throws(Errno) -> String
  /// The RFCOMM channel of `address`'s Serial Port service (SDP class 0x1101); ENOENT when it has none.
  /// The SDP session goes out from adapter `local` (`.any`: the kernel picks).
  func sdpSerialPortChannel(_ address: BluetoothAddress, local: BluetoothAddress) throws(Errno) -> UInt8
  /// Whether `address` has an SDP record with the 128-bit service class `uuid` (SDP service search).
  func sdpHasServiceClass(_ address: BluetoothAddress, uuid: UUID128, local: BluetoothAddress) throws(Errno)
    -> Bool
}

/// A 128-bit UUID as written (`A1220169-E854-473E-9CB5-873ACBDF1F13`), bytes in that order (SDP sends
/// UUIDs big-endian, Core spec Vol 3 Part B 2.5.1).
public struct UUID128: Sendable, Hashable, CustomStringConvertible {
  public let bytes: [UInt8]

  public init?(_ text: String) {
    let digits = text.filter { $0 != "-" }
    guard text.count == 36, digits.count == 32, digits.allSatisfy(\.isHexDigit) else { return nil }
    let chars = Array(digits)
    bytes = stride(from: 0, to: 32, by: 2).map { UInt8(String(chars[$0..<$0 + 2]), radix: 16)! }
  }

  /// Lower case with dashes, as bluetoothd lists UUIDs in Device1.UUIDs.
  public var description: String {
    let hex = bytes.map { BluetoothAddress.hex($0).lowercased() }.joined()
    let c = Array(hex)
    return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(c[$0]) }.joined(separator: "-")
  }
}
