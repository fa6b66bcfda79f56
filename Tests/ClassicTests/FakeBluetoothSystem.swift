import Bluetooth
import CaptureCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A scripted `BluetoothSystem`: each call takes the next scripted outcome for its kind (success by
/// default) and is logged, so tests drive every errno path without AF_BLUETOOTH (docs/bluez-testing.md).
final class FakeBluetoothSystem: BluetoothSystem {
  struct State {
    var nextFD: Int32 = 100
    var socketErrors: [Errno?] = []
    var connectErrors: [Errno?] = []
    var bindErrors: [Errno?] = []
    var listenErrors: [Errno?] = []
    var sdp: [Result<UInt8, Errno>] = []
    var accepts: [Result<AcceptedLink?, Errno>] = []
    /// Reads for any connected fd, in order; when empty a read is idle.
    var reads: [Result<BluetoothRead, Errno>] = []
    var hciDevices: Result<[HCIDevice], Errno> = .success([HCIDevice(id: 0, isUp: true)])
    /// What socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI) gives (`doctor`'s kernel check).
    var hciSocket: Errno? = nil
    var adapterAddress: Result<BluetoothAddress, Errno> = .success(BluetoothAddress("00:1A:7D:DA:71:13")!)
    var inquiry: Result<[InquiryResult], Errno> = .success([])
    /// How long an inquiry blocks its thread, as the real one does for length × 1.28 s.
    var inquiryBlocks: Duration = .zero
    /// Called by every inquiry, on its thread, after it is logged: a test's gate it blocks at.
    var inquiryWait: (@Sendable () -> Void)? = nil
    /// Per inquiry: whether it ran on a BlockingExecutor thread.
    var inquiryOnWorker: [Bool] = []
    var names: [BluetoothAddress: String] = [:]
    /// SDP service-class searches: the answer per device (a device not listed has no such record);
    /// an Errno entry fails once with it, then the next entry (or "no record") answers.
    var serviceClasses: [BluetoothAddress: [Result<Bool, Errno>]] = [:]
    /// Which UUIDs were searched for.
    var searchedUUIDs: [UUID128] = []
    var log: [String] = []
    var closed: [Int32] = []
    var connectedChannels: [UInt8] = []
    /// Every bind as "LOCAL/channel", and the local adapter of every SDP session, in order.
    var binds: [String] = []
    var sdpLocals: [BluetoothAddress] = []
  }

  let state = Mutex(State())

  func script(_ change: (inout State) -> Void) { state.withLock { change(&$0) } }
  var log: [String] { state.withLock { $0.log } }
  var closed: [Int32] { state.withLock { $0.closed } }
  func count(_ call: String) -> Int { log.filter { $0 == call }.count }

  private func next(_ queue: WritableKeyPath<State, [Errno?]>, _ name: String) throws(Errno) {
    let outcome = state.withLock { s -> Errno? in
      s.log.append(name)
      return s[keyPath: queue].isEmpty ? nil : s[keyPath: queue].removeFirst()
    }
    if let outcome { throw outcome }
  }

  func probeHCISocket() throws(Errno) {
    if let failure = state.withLock({ $0.hciSocket }) { throw failure }
  }

  func socket() throws(Errno) -> Int32 {
    try next(\.socketErrors, "socket")
    return state.withLock { s in
      defer { s.nextFD += 1 }
      return s.nextFD
    }
  }

  func connect(_ fd: Int32, to address: BluetoothAddress, channel: UInt8, timeout: Duration) throws(Errno) {
    try next(\.connectErrors, "connect")
    state.withLock { $0.connectedChannels.append(channel) }
  }

  func bind(_ fd: Int32, local: BluetoothAddress, channel: UInt8) throws(Errno) {
    try next(\.bindErrors, "bind")
    state.withLock { $0.binds.append("\(local)/\(channel)") }
  }
  func listen(_ fd: Int32, backlog: Int32) throws(Errno) { try next(\.listenErrors, "listen") }

  func accept(_ fd: Int32, timeoutMilliseconds: Int32) throws(Errno) -> AcceptedLink? {
    let outcome = state.withLock { s -> Result<AcceptedLink?, Errno>? in
      s.log.append("accept")
      return s.accepts.isEmpty ? nil : s.accepts.removeFirst()
    }
    guard let outcome else {
      usleep(2000)
      return nil
    }
    return try outcome.get()
  }

  func read(_ fd: Int32, maxCount: Int, timeoutMilliseconds: Int32) throws(Errno) -> BluetoothRead {
    let outcome = state.withLock { s -> Result<BluetoothRead, Errno>? in
      s.reads.isEmpty ? nil : s.reads.removeFirst()
    }
    guard let outcome else {
      usleep(2000)
      return .idle
    }
    return try outcome.get()
  }

  func write(_ fd: Int32, _ bytes: [UInt8]) throws(Errno) -> Int { bytes.count }

  func close(_ fd: Int32) { state.withLock { $0.closed.append(fd) } }

  func hciDeviceList() throws(Errno) -> [HCIDevice] {
    try state.withLock { s in
      s.log.append("hciDeviceList")
      return s.hciDevices
    }.get()
  }

  func adapterAddress(device: Int) throws(Errno) -> BluetoothAddress {
    try state.withLock { $0.adapterAddress }.get()
  }

  func inquiry(device: Int, length: Int, maxResponses: Int) throws(Errno) -> [InquiryResult] {
    let (result, blocks, wait) = state.withLock { s in
      s.log.append("inquiry")
      s.inquiryOnWorker.append(BlockingExecutor.isWorkerThread)
      return (s.inquiry, s.inquiryBlocks, s.inquiryWait)
    }
    wait?()
    if blocks > .zero {
      let (seconds, attoseconds) = blocks.components
      usleep(useconds_t(seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
    }
    return try result.get()
  }

  func remoteName(device: Int, address: BluetoothAddress, timeoutMilliseconds: Int32) throws(Errno) -> String
  {
    let name = state.withLock { s -> String? in
      s.log.append("remoteName")
      return s.names[address]
    }
    guard let name else { throw Errno(ETIMEDOUT) }
    return name
  }

  func sdpHasServiceClass(_ address: BluetoothAddress, uuid: UUID128, local: BluetoothAddress) throws(Errno)
    -> Bool
  {
    let outcome = state.withLock { s -> Result<Bool, Errno> in
      s.log.append("sdpServiceClass")
      s.sdpLocals.append(local)
      s.searchedUUIDs.append(uuid)
      guard var answers = s.serviceClasses[address], !answers.isEmpty else { return .success(false) }
      let first = answers.removeFirst()
      s.serviceClasses[address] = answers
      return first
    }
    return try outcome.get()
  }

  func sdpSerialPortChannel(_ address: BluetoothAddress, local: BluetoothAddress) throws(Errno) -> UInt8 {
    let outcome = state.withLock { s -> Result<UInt8, Errno>? in
      s.log.append("sdp")
      s.sdpLocals.append(local)
      return s.sdp.isEmpty ? nil : s.sdp.removeFirst()
    }
    return try (outcome ?? .success(1)).get()
  }
}

/// The SPP frame of docs/device-protocols.md §5.3 (a raw COM-port capture of barcode "EQ0000013158").
let capturedFrame: [UInt8] =
  [
    0x02, 0x00, 0x29, 0x00, 0x64, 0x01, 0x00, 0x17, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x00, 0x01, 0x00,
    0x06,
  ]
  + Array("EQ0000013158".utf8) + [0x0D] + Array("]C0DB3".utf8) + [0x60] + Array("E5".utf8) + [0x03]
