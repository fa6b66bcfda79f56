import Bluetooth
import CaptureCore
import Dispatch
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A Socket Mobile Bluetooth Classic scanner in SPP mode over an RFCOMM socket (docs/device-protocols.md §5).
/// Two ways to make the link:
/// - `initiate`: the scanner is in SPP acceptor mode (`#FNB00F40000#`) and this host connects to it:
///   SDP finds the channel of its Serial Port service (class 0x1101), then RFCOMM connects.
/// - `accept`: the scanner is in SPP initiator mode (`#FNI<host address>#`) and connects to this host:
///   an RFCOMM server socket on a channel waits for it.
///
/// The data is the SPP byte stream, parsed by `SPPFrameParser` like a tty's. Host→scanner commands in
/// SPP mode are not public (docs/device-protocols.md §5.3), so it only listens. All calls go through
/// `BluetoothSystem`.
///
/// SDP decision: no fallback to a guessed channel. SDP runs over the same ACL link as RFCOMM, so when
/// it cannot reach the scanner RFCOMM cannot either; and a device that answers SDP without a Serial
/// Port record is not in SPP acceptor mode, where channel 1 may be another profile. The error says
/// which barcode to scan instead.
public final class ClassicSPPScanner: Device, Sendable {
  public enum Link: Sendable, Equatable {
    /// Connect to the scanner; channel nil = look it up with SDP.
    case initiate(BluetoothAddress, channel: UInt8?)
    /// Wait for the scanner to connect on this RFCOMM channel.
    case accept(channel: UInt8)
  }

  /// An RFCOMM connection made.
  struct Connection: Sendable {
    var fd: Int32
    var peer: BluetoothAddress
    var channel: UInt8
  }

  public let info: DeviceInfo
  public var events: AsyncStream<Event> { eventChannel.events }
  public let link: Link
  /// The RFCOMM channel the first connection used; nil when opened for properties only (no link).
  public let channel: UInt8?
  /// The adapter the request named (`--adapter`), for name look-ups.
  let adapter: String?
  let calls: ClassicCalls
  let framing: SPPFraming
  let reconnects: Bool
  let connectTimeout: Duration
  private let eventChannel: EventChannel
  /// Diagnostics on stderr (the request's): one line per outage while reconnecting.
  private let warn: @Sendable (String) -> Void
  /// Also where the blocking connect of `open` runs.
  private let reader: ReaderThread

  /// RFCOMM connect time limit without --timeout (an absent device's page timeout is ~5 s, Core spec
  /// default Page_Timeout 5.12 s, plus SDP).
  public static let defaultConnectTimeout: Duration = .seconds(15)
  static let pollMilliseconds: Int32 = 100
  static let stallMilliseconds = 500
  /// A reconnecting acceptor waits for the scanner in slices this long, looking at close() between.
  static let acceptSlice: Duration = .seconds(1)
  /// RFCOMM server channels are 1-30 (RFCOMM spec: server channel 5 bits, 0 and 31 reserved).
  public static let channels: ClosedRange<UInt8> = 1...30

  public var capabilities: Capabilities {
    Capabilities(
      readable: [.deviceType, .friendlyNameDevice, .bluetoothAddressDevice], writable: [], triggers: [],
      events: [.deviceArrival, .deviceRemoval, .decodedData, .undecodedData, .error])
  }

  /// Opens the link (blocking calls run on the scanner's own queue) and, when the request wants
  /// events, starts reading; otherwise the link is closed again (connect only proves it works).
  public static func open(
    _ link: Link, request: OpenRequest, system: any BluetoothSystem = LibBluetoothSystem(),
    name: String? = nil
  ) async throws(CaptureError) -> ClassicSPPScanner {
    if case .accept(let channel) = link, !channels.contains(channel) {
      throw .invalidParameter("RFCOMM channel must be 1-30, not \(channel)")
    }
    if case .initiate(_, let channel?) = link, !channels.contains(channel) {
      throw .invalidParameter("RFCOMM channel must be 1-30, not \(channel)")
    }
    // --adapter pins the RFCOMM socket and the SDP session to that adapter (bind before connect);
    // without it the kernel picks one.
    let calls = try ClassicCalls(system: system).pinned(to: request.adapter)
    let timeout = request.timeout ?? defaultConnectTimeout
    // Accepting waits for the scanner as long as the command runs (--timeout or SIGINT cancel it).
    let deadline: ContinuousClock.Instant? = {
      if case .accept = link { return request.timeout.map { ContinuousClock.now + $0 } }
      return nil
    }()
    // The SDP search and the connect (or accept) end: a blocking call for the `BlockingExecutor`, whose
    // cancellation (the calling task's) is what `establish` looks at between its bounded waits.
    let connection = try await BlockingExecutor.shared.run { (job) throws(CaptureError) in
      try establish(
        link, calls: calls, timeout: timeout, deadline: deadline, shouldStop: { job.isCancelled })
    }
    let scanner = ClassicSPPScanner(
      link: link, peer: connection.peer, channel: connection.channel, calls: calls, name: name,
      reconnects: request.reconnects, connectTimeout: timeout, adapter: request.adapter, warn: request.warn)
    if request.wantsEvents {
      try scanner.startReading(connection)
    } else {
      system.close(connection.fd)
    }
    return scanner
  }

  /// Connects to the scanner at `address` (text as a selector holds it), the channel found by SDP.
  public static func open(address: String, request: OpenRequest, name: String? = nil)
    async throws(CaptureError) -> ClassicSPPScanner
  {
    guard let parsed = BluetoothAddress(address) else {
      throw .invalidParameter("'\(address)' is not a Bluetooth address (AA:BB:CC:DD:EE:FF)")
    }
    return try await open(.initiate(parsed, channel: nil), request: request, name: name)
  }

  /// A remembered scanner opened for `get`/`set` only: no RFCOMM link is made, because no property
  /// comes over SPP (host→scanner commands are not public, docs/device-protocols.md §5.3): the address is
  /// known and the friendly name comes from bluetoothd or an HCI name request.
  public static func forProperties(
    _ address: BluetoothAddress, request: OpenRequest, system: any BluetoothSystem = LibBluetoothSystem(),
    name: String? = nil
  ) -> ClassicSPPScanner {
    ClassicSPPScanner(
      link: .initiate(address, channel: nil), peer: address, channel: nil,
      calls: ClassicCalls(system: system),
      name: name, reconnects: false,
      connectTimeout: request.timeout ?? defaultConnectTimeout, adapter: request.adapter)
  }

  /// Waits for a scanner in SPP initiator mode to connect on RFCOMM `channel`.
  public static func accept(channel: Int, request: OpenRequest) async throws(CaptureError)
    -> ClassicSPPScanner
  {
    guard let small = UInt8(exactly: channel), channels.contains(small) else {
      throw .invalidParameter("RFCOMM channel must be 1-30, not \(channel)")
    }
    return try await open(.accept(channel: small), request: request)
  }

  /// Makes one connection. `shouldStop` ends a wait for an accepting scanner.
  static func establish(
    _ link: Link, calls: ClassicCalls, timeout: Duration, deadline: ContinuousClock.Instant?,
    shouldStop: () -> Bool
  ) throws(CaptureError) -> Connection {
    switch link {
    case .initiate(let address, let given):
      let fd = try calls.socket()
      var channel: UInt8
      do throws(CaptureError) {
        if let given { channel = given } else { channel = try calls.serialPortChannel(address) }
      } catch {
        calls.system.close(fd)
        throw error
      }
      try calls.connect(fd, to: address, channel: channel, timeout: timeout)
      return Connection(fd: fd, peer: address, channel: channel)
    case .accept(let channel):
      let listener = try calls.listener(channel: channel)
      defer { calls.system.close(listener) }
      while true {
        if shouldStop() {
          throw CaptureError(.requestTimedOut, "stopped waiting for a scanner on RFCOMM channel \(channel)")
        }
        if let deadline, ContinuousClock.now >= deadline {
          throw CaptureError(.requestTimedOut, "no scanner connected on RFCOMM channel \(channel) in time")
        }
        if let accepted = try calls.accept(listener, timeoutMilliseconds: pollMilliseconds) {
          return Connection(fd: accepted.fd, peer: accepted.peer, channel: channel)
        }
      }
    }
  }

  init(
    link: Link, peer: BluetoothAddress, channel: UInt8?, calls: ClassicCalls, name: String?,
    reconnects: Bool, connectTimeout: Duration, adapter: String?,
    warn: @escaping @Sendable (String) -> Void = { _ in }
  ) {
    self.warn = warn
    self.link = link
    self.channel = channel
    self.adapter = adapter
    self.calls = calls
    self.framing = .auto
    self.reconnects = reconnects
    self.connectTimeout = connectTimeout
    self.reader = ReaderThread(name: "classic-spp")
    // A Classic scanner's model is not on the wire in SPP mode (docs/device-protocols.md §5.3): type None, as
    // for serial. Its Bluetooth name ("Socket 7Xi [0A1B2C]", from discovery or the state file) names the
    // model, when known; the placeholder below (remembered as the name of a scanner connected without one)
    // does not.
    let placeholder = "Bluetooth SPP scanner \(peer)"
    self.info = DeviceInfo(
      id: peer.description, name: name ?? placeholder, type: .none, model: name == placeholder ? nil : name)
    eventChannel = EventChannel(device: info)
  }

  // MARK: properties and trigger

  public func get(_ property: PropertyID, argument: PropertyValue) async throws(CaptureError) -> PropertyValue
  {
    switch property {
    case .deviceType: return .ulong(info.type.rawValue)
    case .friendlyNameDevice:
      // Asked live, not the name remembered at connect: the scanner's own (or the user's bluetoothd
      // alias) as it is now.
      guard let address = BluetoothAddress(info.id) else { return .string(info.name) }
      return .string(try await ClassicDiscovery.friendlyName(address, adapter: adapter, system: calls.system))
    case .bluetoothAddressDevice:
      return .array(BluetoothAddress(info.id)?.bytes ?? [])
    default: throw unsupported(property)
    }
  }

  public func set(_ property: PropertyID, _ value: PropertyValue) async throws(CaptureError) {
    if property == .friendlyNameDevice {
      throw .notSupported(
        "\(info.name): the friendly name of a Classic scanner cannot be set: host→scanner commands in SPP mode are not public (docs/device-protocols.md §5.3)"
      )
    }
    throw unsupported(property)
  }

  public func trigger(_ action: Trigger) async throws(CaptureError) {
    throw .sppTriggerNotPublic(info.name, action)
  }

  public func close() async {
    await reader.stop()
    finish()
  }

  // MARK: the reader

  private func emit(_ payload: Event.Payload) { eventChannel.emit(payload) }

  private func emit(_ parsed: [SPPEvent]) { eventChannel.emit(parsed, from: info.id) }

  private func announceRemoval() { eventChannel.announceRemoval() }

  private func finish() { eventChannel.finish() }

  private var isStopping: Bool { reader.isStopping }

  /// Sleeps `duration` on the reader's thread in poll-interval slices, so close() is still seen in time.
  private func pause(_ duration: Duration) {
    let until = ContinuousClock.now + duration
    while !isStopping && ContinuousClock.now < until {
      usleep(useconds_t(Self.pollMilliseconds) * 1000)
    }
  }

  private func startReading(_ connection: Connection) throws(CaptureError) {
    do throws(Errno) { try reader.start { [self] in readLoop(connection) } } catch {
      calls.system.close(connection.fd)
      throw CaptureError(
        error, "cannot start the reader thread of \(info.id)", other: .unableCreateThread)
    }
  }

  private func readLoop(_ first: Connection) {
    var connection: Connection? = first
    var parser = SPPFrameParser(framing: framing)
    var quietMilliseconds = 0
    var delays = Backoff().delays()
    // One warning per outage, not per attempt (as the BLE driver and listen's supervisors).
    var warned = false
    while !isStopping {
      guard let open = connection else {
        // Reconnecting: the same link again (SDP and connect, or a new accept) on the same channel.
        let again: Link
        switch link {
        case .initiate(let address, _):
          // The shared backoff between attempts: each one to an absent scanner costs a page timeout.
          pause(delays.next())
          again = .initiate(address, channel: channel)
        case .accept:
          // Waiting for the scanner to connect again is passive: accept in slices, no backoff.
          again = link
        }
        if isStopping { break }
        let made: Connection
        do throws(CaptureError) {
          made = try Self.establish(
            again, calls: calls, timeout: connectTimeout, deadline: ContinuousClock.now + Self.acceptSlice,
            shouldStop: { self.isStopping })
        } catch {
          if case .initiate = link, !warned {
            warned = true
            warn("\(info.id): reconnect failed: \(error.message); trying again in the background")
          }
          continue
        }
        warned = false
        delays.reset()
        connection = made
        parser = SPPFrameParser(framing: framing)
        eventChannel.announceArrival()
        continue
      }
      // Back-pressure: while the consumer is a full queue behind, the socket buffer and RFCOMM's
      // credit-based flow control hold the scanner's data.
      if !eventChannel.hasRoom {
        eventChannel.waitForRoom(timeoutMilliseconds: Self.pollMilliseconds)
        continue
      }
      var lost = false
      do throws(Errno) {
        let read = try calls.retrying { () throws(Errno) in
          try calls.system.read(open.fd, maxCount: 4096, timeoutMilliseconds: Self.pollMilliseconds)
        }
        switch read {
        case .data(let bytes):
          quietMilliseconds = 0
          emit(parser.feed(bytes))
        case .idle:
          quietMilliseconds += Int(Self.pollMilliseconds)
          if quietMilliseconds >= Self.stallMilliseconds && parser.hasPartialRecord {
            emit(parser.flushStalled())
          }
        case .closed:
          lost = true
        }
      } catch {
        // ECONNRESET, EHOSTDOWN, ETIMEDOUT (supervision timeout): the link is gone.
        emit(.error(CaptureError(bluetooth: error, "reading RFCOMM", address: open.peer)))
        lost = true
      }
      if lost {
        emit(parser.finish())
        calls.system.close(open.fd)
        connection = nil
        announceRemoval()
        if !reconnects {
          finish()
          return
        }
      }
    }
    if let connection { calls.system.close(connection.fd) }
  }
}
