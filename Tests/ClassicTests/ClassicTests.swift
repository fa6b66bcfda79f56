import CBluetooth
import CaptureCore
import Drivers
import Synchronization
import Testing

@testable import Bluetooth

#if canImport(Glibc)
  import Glibc
#endif

let scanner = BluetoothAddress("AA:BB:CC:DD:EE:FF")!

func request(reconnects: Bool = false, wantsEvents: Bool = true, timeout: Duration? = nil) -> OpenRequest {
  var r = OpenRequest(selector: .bluetooth(scanner.description))
  r.reconnects = reconnects
  r.wantsEvents = wantsEvents
  r.timeout = timeout
  return r
}

/// Opens and expects a CaptureError.
func openFailure(
  _ fake: FakeBluetoothSystem, _ link: ClassicSPPScanner.Link = .initiate(scanner, channel: nil)
)
  async -> CaptureError?
{
  do {
    let device = try await ClassicSPPScanner.open(link, request: request(wantsEvents: false), system: fake)
    await device.close()
    return nil
  } catch {
    return error
  }
}

/// Collects events until the stream ends or `limit` events came.
func collect(_ device: ClassicSPPScanner, limit: Int = 1000) async -> [Event] {
  var out: [Event] = []
  for await event in device.events {
    out.append(event)
    if out.count >= limit { break }
  }
  return out
}

/// The first `count` arrivals and removals of the device's stream, as "arrival"/"removal".
func presence(_ device: ClassicSPPScanner, count: Int) async -> [String] {
  var kinds: [String] = []
  for await event in device.events {
    switch event.payload {
    case .deviceArrival: kinds.append("arrival")
    case .deviceRemoval: kinds.append("removal")
    default: break
    }
    if kinds.count == count { break }
  }
  return kinds
}

func decodedTexts(_ events: [Event]) -> [String] {
  events.compactMap { event in
    if case .decodedData(let d) = event.payload { return String(decoding: d.bytes, as: UTF8.self) }
    return nil
  }
}

@Suite struct BluetoothAddressTests {
  @Test func parsesAndFormats() {
    let a = BluetoothAddress("aa:bb:cc:dd:ee:0f")!
    #expect(a.description == "AA:BB:CC:DD:EE:0F")
    #expect(a.compact == "AABBCCDDEE0F")
    #expect(BluetoothAddress("AA-BB-CC-DD-EE-0F") == a)
    #expect(BluetoothAddress("AABBCCDDEE0F") == a)
    #expect(BluetoothAddress(a.description) == a)
    #expect(BluetoothAddress(a.compact) == a)
  }

  @Test(arguments: [
    "", "AA:BB:CC:DD:EE", "AA:BB:CC:DD:EE:FF:00", "GG:BB:CC:DD:EE:FF", "A:BB:CC:DD:EE:FFF", "AABBCCDDEEF",
  ])
  func rejects(_ text: String) {
    #expect(BluetoothAddress(text) == nil)
  }

  @Test func bdaddrIsLittleEndian() {
    let a = BluetoothAddress("00:11:22:33:44:55")!
    #expect(a.bytes == [0x00, 0x11, 0x22, 0x33, 0x44, 0x55])
    #expect(a.littleEndianBytes == [0x55, 0x44, 0x33, 0x22, 0x11, 0x00])
    #expect(BluetoothAddress(littleEndianBytes: a.littleEndianBytes) == a)
    #expect(BluetoothAddress(littleEndianBytes: [1, 2, 3, 4, 5, 6])?.description == "06:05:04:03:02:01")
  }

  @Test func pairingCodeTexts() {
    let code = PairingCode(host: BluetoothAddress("00:1a:7d:da:71:13")!)
    #expect(code.linear == "#FNI001A7DDA7113#")
    #expect(code.twoDimensional == "#FNC SPP Initiator 001A7DDA7113#")
  }
}

@Suite struct ClassicErrnoTests {
  @Test func noBluetoothInKernel() async {
    let fake = FakeBluetoothSystem()
    fake.script { $0.socketErrors = [Errno(EAFNOSUPPORT)] }
    let error = await openFailure(fake)
    #expect(error?.code == .notAvailable)
    #expect(error?.message.contains("no Bluetooth") == true)
    #expect(fake.count("sdp") == 0)
  }

  @Test func interruptedCallsAreRetried() async throws {
    let fake = FakeBluetoothSystem()
    fake.script {
      $0.socketErrors = [Errno(EINTR), nil]
      $0.sdp = [.failure(Errno(EINTR)), .success(4)]
      $0.connectErrors = [Errno(EINTR), Errno(EINTR), nil]
    }
    let device = try await ClassicSPPScanner.open(
      .initiate(scanner, channel: nil), request: request(wantsEvents: false), system: fake)
    await device.close()
    #expect(fake.count("socket") == 2)
    #expect(fake.count("sdp") == 2)
    #expect(fake.count("connect") == 3)
    #expect(device.channel == 4)
    #expect(device.info.id == "AA:BB:CC:DD:EE:FF")
  }

  @Test(arguments: [
    (ECONNREFUSED, ResultCode.communicationError), (EHOSTDOWN, .communicationError),
    (EHOSTUNREACH, .communicationError), (EACCES, .bluetoothPermissionMissing),
    (EPERM, .bluetoothPermissionMissing),
    (ETIMEDOUT, .requestTimedOut), (ENODEV, .notAvailable),
  ])
  func connectFailures(_ code: Int32, _ expected: ResultCode) async {
    let fake = FakeBluetoothSystem()
    fake.script { $0.connectErrors = [Errno(code)] }
    let error = await openFailure(fake)
    #expect(error?.code == expected)
    if expected == .communicationError { #expect(error?.message.contains("AA:BB:CC:DD:EE:FF") == true) }
    #expect(fake.closed == [100], "the socket is closed after a failed connect")
  }

  @Test func noSerialPortService() async {
    let fake = FakeBluetoothSystem()
    fake.script { $0.sdp = [.failure(Errno(ENOENT))] }
    let error = await openFailure(fake)
    #expect(error?.code == .notFound)
    #expect(error?.message.contains("serial port service") == true)
    #expect(fake.count("connect") == 0, "no guessed channel when SDP says there is no serial port")
    #expect(fake.closed == [100])
  }

  @Test func sdpHostDown() async {
    let fake = FakeBluetoothSystem()
    fake.script { $0.sdp = [.failure(Errno(EHOSTDOWN))] }
    let error = await openFailure(fake)
    #expect(error?.code == .communicationError)
    #expect(fake.count("connect") == 0)
  }

  @Test("SDP whose L2CAP connect(2) ran out of time (EINPROGRESS from the kernel) is REQUESTTIMEDOUT")
  func sdpConnectTimeout() async {
    let fake = FakeBluetoothSystem()
    fake.script { $0.sdp = [.failure(Errno(EINPROGRESS))] }
    let error = await openFailure(fake)
    #expect(error?.code == .requestTimedOut)
    #expect(
      error?.message
        == "looking up the serial port service (SDP) to AA:BB:CC:DD:EE:FF: no answer in time (is the scanner on and in range?)"
    )
    #expect(!(error?.message.contains("in progress") ?? true))
    #expect(fake.count("connect") == 0)
  }

  @Test func sdpChannelIsUsed() async throws {
    let fake = FakeBluetoothSystem()
    fake.script { $0.sdp = [.success(7)] }
    let device = try await ClassicSPPScanner.open(
      .initiate(scanner, channel: nil), request: request(wantsEvents: false), system: fake)
    await device.close()
    #expect(fake.state.withLock { $0.connectedChannels } == [7])
  }

  @Test func givenChannelSkipsSDP() async throws {
    let fake = FakeBluetoothSystem()
    let device = try await ClassicSPPScanner.open(
      .initiate(scanner, channel: 3), request: request(wantsEvents: false), system: fake)
    await device.close()
    #expect(fake.count("sdp") == 0)
    #expect(fake.state.withLock { $0.connectedChannels } == [3])
  }

  @Test func badChannel() async {
    let error = await openFailure(FakeBluetoothSystem(), .accept(channel: 31))
    #expect(error?.code == .invalidParameter)
  }
}

@Suite struct ClassicDataTests {
  @Test func framesSplitAnywhereAreDecoded() async throws {
    var generator = SystemRandomNumberGenerator()
    let stream = capturedFrame + capturedFrame + capturedFrame
    var chunks: [[UInt8]] = []
    var i = 0
    while i < stream.count {
      let n = Int.random(in: 1...9, using: &generator)
      chunks.append(Array(stream[i..<min(stream.count, i + n)]))
      i += n
    }
    let fake = FakeBluetoothSystem()
    fake.script { s in
      s.reads = [.failure(Errno(EINTR))] + chunks.map { .success(.data($0)) } + [.success(.closed)]
    }
    let device = try await ClassicSPPScanner.open(
      .initiate(scanner, channel: nil), request: request(), system: fake)
    let events = await collect(device)
    #expect(decodedTexts(events) == ["EQ0000013158", "EQ0000013158", "EQ0000013158"])
    guard case .deviceArrival = events.first?.payload, case .deviceRemoval = events.last?.payload else {
      Issue.record("arrival first and removal last: \(events.map(\.payload))")
      return
    }
    #expect(fake.closed.contains(100))
  }

  @Test func linkLossMidFrameKeepsTheBytes() async throws {
    let fake = FakeBluetoothSystem()
    fake.script { s in
      s.reads = [
        .success(.data(capturedFrame)), .success(.data(Array(capturedFrame[0..<10]))),
        .failure(Errno(ECONNRESET)),
      ]
    }
    let device = try await ClassicSPPScanner.open(
      .initiate(scanner, channel: nil), request: request(), system: fake)
    let events = await collect(device)
    #expect(decodedTexts(events) == ["EQ0000013158"])
    let errors = events.compactMap { e -> CaptureError? in
      if case .error(let error) = e.payload { return error }
      return nil
    }
    let undecoded = events.compactMap { e -> [UInt8]? in
      if case .undecodedData(let noise) = e.payload { return noise.bytes }
      return nil
    }
    #expect(undecoded == [Array(capturedFrame[0..<10])], "the cut frame is reported, not decoded")
    #expect(!errors.contains { $0.code == .invalidFormat })
    #expect(errors.contains { $0.code == .communicationError })
    if case .deviceRemoval = events.last?.payload {} else { Issue.record("no removal: \(events)") }
  }

  @Test func lineNoiseIsUndecodedDataAndNotAnError() async throws {
    let noise: [UInt8] = [0xDE, 0xAD, 0xBE, 0xEF, 0x0D]
    let fake = FakeBluetoothSystem()
    fake.script { s in
      s.reads = [.success(.data(noise + capturedFrame)), .success(.closed)]
    }
    let device = try await ClassicSPPScanner.open(
      .initiate(scanner, channel: nil), request: request(), system: fake, name: "Socket 7Xi [0A1B2C]")
    #expect(device.info.model == "Socket 7Xi [0A1B2C]")
    let events = await collect(device)
    #expect(events.map(\.kind) == [.deviceArrival, .undecodedData, .decodedData, .deviceRemoval])
    let undecoded = events.compactMap { e -> UndecodedData? in
      if case .undecodedData(let data) = e.payload { return data }
      return nil
    }
    #expect(undecoded.map(\.bytes) == [noise])
    #expect(decodedTexts(events) == ["EQ0000013158"])
  }

  @Test func modelIsTheBluetoothNameWhenOneIsKnown() {
    let named = ClassicSPPScanner.forProperties(
      scanner, request: request(wantsEvents: false), system: FakeBluetoothSystem(),
      name: "Socket 7Xi [DDEEFF]")
    #expect(named.info.model == "Socket 7Xi [DDEEFF]")
    let unnamed = ClassicSPPScanner.forProperties(
      scanner, request: request(wantsEvents: false), system: FakeBluetoothSystem())
    #expect(unnamed.info.model == nil)
    // The placeholder a nameless scanner was remembered under is no model.
    let remembered = ClassicSPPScanner.forProperties(
      scanner, request: request(wantsEvents: false), system: FakeBluetoothSystem(),
      name: "Bluetooth SPP scanner \(scanner)")
    #expect(remembered.info.model == nil)
  }

  @Test func reconnectsAfterLinkLoss() async throws {
    let fake = FakeBluetoothSystem()
    fake.script { s in s.reads = [.success(.closed)] }
    let device = try await ClassicSPPScanner.open(
      .initiate(scanner, channel: nil), request: request(reconnects: true), system: fake)
    let kinds = await presence(device, count: 3)
    #expect(kinds == ["arrival", "removal", "arrival"])
    #expect(fake.state.withLock { $0.connectedChannels } == [1, 1], "the reconnect reuses the channel")
    #expect(fake.count("sdp") == 1)
    await device.close()
  }

  /// A scanner that stays away for two attempts: the shared backoff between attempts (0.25 s, 0.5 s, …)
  /// and one warning for the outage, not one per attempt; the third attempt brings it back.
  @Test func reconnectFailuresWarnOncePerOutage() async throws {
    let fake = FakeBluetoothSystem()
    fake.script { s in
      s.reads = [.success(.closed)]
      s.connectErrors = [nil, Errno(EHOSTDOWN), Errno(EHOSTDOWN), nil]
    }
    let warnings = Mutex<[String]>([])
    var r = request(reconnects: true)
    r.warn = { line in warnings.withLock { $0.append(line) } }
    let device = try await ClassicSPPScanner.open(.initiate(scanner, channel: nil), request: r, system: fake)
    let kinds = await presence(device, count: 3)
    await device.close()
    #expect(kinds == ["arrival", "removal", "arrival"])
    #expect(fake.count("connect") == 4)
    let lines = warnings.withLock { $0 }
    #expect(lines.count == 1, "\(lines)")
    #expect(lines.first?.hasPrefix("AA:BB:CC:DD:EE:FF: reconnect failed: ") == true, "\(lines)")
    #expect(lines.first?.hasSuffix("; trying again in the background") == true, "\(lines)")
  }

  /// `--adapter hciN` pins the link: the RFCOMM socket is bound to that adapter's address before it
  /// connects and the SDP session goes out from it; without --adapter the kernel picks (no bind, SDP
  /// from BDADDR_ANY).
  @Test func adapterPinsSocketAndSDP() async throws {
    let hci0 = BluetoothAddress("00:1A:7D:DA:71:13")!
    let fake = FakeBluetoothSystem()
    var r = request(wantsEvents: false)
    r.adapter = "hci0"
    let device = try await ClassicSPPScanner.open(.initiate(scanner, channel: nil), request: r, system: fake)
    await device.close()
    #expect(fake.state.withLock { $0.binds } == ["\(hci0)/0"])
    #expect(fake.state.withLock { $0.sdpLocals } == [hci0])
    let order = fake.log.filter { ["bind", "connect"].contains($0) }
    #expect(order == ["bind", "connect"], "bound before connecting")

    let any = FakeBluetoothSystem()
    let plain = try await ClassicSPPScanner.open(
      .initiate(scanner, channel: nil), request: request(wantsEvents: false), system: any)
    await plain.close()
    #expect(any.state.withLock { $0.binds }.isEmpty)
    #expect(any.state.withLock { $0.sdpLocals } == [.any])
  }

  @Test func adapterPinsTheAcceptor() async throws {
    let fake = FakeBluetoothSystem()
    fake.script { $0.accepts = [.success(AcceptedLink(fd: 7, peer: scanner, channel: 5))] }
    var r = request(wantsEvents: false)
    r.adapter = "hci0"
    let device = try await ClassicSPPScanner.open(.accept(channel: 5), request: r, system: fake)
    await device.close()
    #expect(fake.state.withLock { $0.binds } == ["00:1A:7D:DA:71:13/5"])
  }

  @Test func unknownAdapterIsNotAvailableBeforeAnySocket() async {
    let fake = FakeBluetoothSystem()
    var r = request(wantsEvents: false)
    r.adapter = "hci7"
    do {
      let device = try await ClassicSPPScanner.open(
        .initiate(scanner, channel: nil), request: r, system: fake)
      await device.close()
      Issue.record("hci7 does not exist; the open should fail")
    } catch {
      #expect(error.code == .notAvailable)
    }
    #expect(fake.count("socket") == 0)
  }

  @Test func closeEndsTheStream() async throws {
    let fake = FakeBluetoothSystem()
    let device = try await ClassicSPPScanner.open(
      .initiate(scanner, channel: nil), request: request(), system: fake)
    await device.close()
    let events = await collect(device)
    #expect(events.count == 2)
    #expect(fake.closed == [100])
  }

  @Test func acceptModeTakesTheScannerThatConnects() async throws {
    let peer = BluetoothAddress("00:C0:1B:12:34:56")!
    let fake = FakeBluetoothSystem()
    fake.script { s in
      s.accepts = [
        .success(nil), .failure(Errno(EINTR)), .success(AcceptedLink(fd: 200, peer: peer, channel: 5)),
      ]
      s.reads = [
        .success(.data(Array(capturedFrame[0..<20]))), .success(.data(Array(capturedFrame[20...]))),
        .success(.closed),
      ]
    }
    let device = try await ClassicSPPScanner.open(.accept(channel: 5), request: request(), system: fake)
    #expect(device.info.id == "00:C0:1B:12:34:56")
    #expect(device.channel == 5)
    let events = await collect(device)
    #expect(decodedTexts(events) == ["EQ0000013158"])
    #expect(fake.log.prefix(2) == ["socket", "bind"])
    #expect(fake.count("listen") == 1)
    #expect(fake.closed.contains(100), "the listening socket is closed once a scanner is in")
    #expect(fake.closed.contains(200))
    let address = try await device.get(.bluetoothAddressDevice, argument: .none)
    #expect(address == .array([0x00, 0xC0, 0x1B, 0x12, 0x34, 0x56]))
  }

  @Test func acceptTimesOut() async {
    let fake = FakeBluetoothSystem()
    do {
      _ = try await ClassicSPPScanner.open(
        .accept(channel: 1), request: request(timeout: .milliseconds(50)), system: fake)
      Issue.record("accepted nothing")
    } catch {
      #expect(error.code == .requestTimedOut)
    }
    #expect(fake.closed == [100])
  }

  @Test func acceptBindInUse() async {
    let fake = FakeBluetoothSystem()
    fake.script { $0.bindErrors = [Errno(EADDRINUSE)] }
    let error = await openFailure(fake, .accept(channel: 1))
    #expect(error?.code == .communicationError)
    #expect(fake.closed == [100])
  }

  @Test func triggerIsNotSupported() async throws {
    let device = try await ClassicSPPScanner.open(
      .initiate(scanner, channel: 1), request: request(wantsEvents: false), system: FakeBluetoothSystem())
    let error = await #expect(throws: CaptureError.self) { try await device.trigger(.start) }
    #expect(error?.code == .notSupported)
    await device.close()
  }
}

@Suite struct ClassicDiscoveryTests {
  @Test(arguments: [
    ("Socket 7Xi [0A1B2C]", true), ("Socket CHS [abcdef]", true), ("Socket S740 [123456]", true),
    ("Socket [123456]", false), ("Socket 7Xi [12345]", false), ("Socket 7Xi 123456", false),
    ("Keyboard K380", false), ("socket 7Xi [123456]", false),
  ])
  func socketNames(_ name: String, _ expected: Bool) {
    #expect(ClassicDiscovery.isSocketMobileName(name) == expected)
  }

  @Test func inquiryWithNames() async throws {
    let socket = BluetoothAddress("00:06:66:0A:1B:2C")!
    let other = BluetoothAddress("11:22:33:44:55:66")!
    let silent = BluetoothAddress("11:22:33:44:55:77")!
    let fake = FakeBluetoothSystem()
    fake.script { s in
      s.inquiry = .success([
        InquiryResult(address: socket, classOfDevice: 0x001F00),
        InquiryResult(address: other, classOfDevice: 0x240404),
        InquiryResult(address: silent, classOfDevice: 0),
      ])
      s.names = [socket: "Socket 7Xi [0A1B2C]", other: "Headphones"]
    }
    let mine = try await ClassicDiscovery.inquiry(adapter: nil, seconds: 5, all: false, system: fake)
    #expect(mine.map(\.address) == [socket])
    #expect(mine.first?.classOfDevice == 0x001F00)
    let all = try await ClassicDiscovery.inquiry(adapter: nil, seconds: 5, all: true, system: fake)
    #expect(all.map(\.name) == ["Socket 7Xi [0A1B2C]", "Headphones", nil])
  }

  @Test func inquiryWithoutBluetooth() async {
    let fake = FakeBluetoothSystem()
    fake.script { $0.hciDevices = .failure(Errno(EAFNOSUPPORT)) }
    do {
      _ = try await ClassicDiscovery.inquiry(adapter: nil, seconds: 1, all: true, system: fake)
      Issue.record("no HCI here")
    } catch {
      #expect(error.code == .notAvailable)
      #expect(error.message.contains("no Bluetooth"))
    }
  }

  @Test func adapterAddressFromHCI() throws {
    let fake = FakeBluetoothSystem()
    fake.script { $0.hciDevices = .success([HCIDevice(id: 0, isUp: false), HCIDevice(id: 1, isUp: true)]) }
    let calls = ClassicCalls(system: fake)
    #expect(try calls.adapterAddress(adapter: nil).description == "00:1A:7D:DA:71:13")
    #expect(try calls.adapterAddress(adapter: "hci0").description == "00:1A:7D:DA:71:13")
    do {
      _ = try calls.adapterAddress(adapter: "hci5")
      Issue.record("hci5 does not exist")
    } catch {
      #expect(error.code == .notAvailable)
    }
    fake.script { $0.hciDevices = .success([]) }
    let none = #expect(throws: CaptureError.self) { try calls.adapterAddress(adapter: nil) }
    #expect(none?.code == .notAvailable)
    fake.script { $0.hciDevices = .failure(Errno(EPERM)) }
    do {
      _ = try calls.adapterAddress(adapter: nil)
    } catch {
      #expect(error.code == .bluetoothPermissionMissing)
    }
  }
}

/// The real seam on this machine kind, whose kernel has no AF_BLUETOOTH (docs/bluez-testing.md): every
/// call must fail with a typed errno that maps to NOTAVAILABLE, never crash or hang. On a host with
/// Bluetooth the first call succeeds and the test has nothing to check.
@Suite struct LibBluetoothSystemTests {
  @Test func withoutBluetoothEveryCallIsNotAvailable() throws {
    let system = LibBluetoothSystem()
    let fd: Int32
    do {
      fd = try system.socket()
    } catch {
      #expect(error.code == EAFNOSUPPORT)
      var codes: [Int32] = []
      do { _ = try system.hciDeviceList() } catch { codes.append(error.code) }
      do { _ = try system.adapterAddress(device: 0) } catch { codes.append(error.code) }
      do { _ = try system.inquiry(device: 0, length: 1, maxResponses: 1) } catch { codes.append(error.code) }
      do { _ = try system.remoteName(device: 0, address: scanner, timeoutMilliseconds: 10) } catch {
        codes.append(error.code)
      }
      do { _ = try system.sdpSerialPortChannel(scanner, local: .any) } catch { codes.append(error.code) }
      #expect(codes.count == 5)
      for code in codes {
        #expect(
          CaptureError(bluetooth: Errno(code), "x", address: scanner).code == .notAvailable, "errno \(code)")
      }
      return
    }
    system.close(fd)
  }
}

/// Recognition of Socket Mobile Classic scanners: by name (docs/device-protocols.md §5.1) or by the SDP
/// service class A1220169-E854-473E-9CB5-873ACBDF1F13 (§5.3), through the seam.
@Suite struct ClassicRecognitionTests {
  let named = BluetoothAddress("00:06:66:0A:1B:2C")!
  let unnamed = BluetoothAddress("00:06:66:0A:1B:2D")!
  let headset = BluetoothAddress("11:22:33:44:55:66")!

  func fake(_ classes: [BluetoothAddress: [Result<Bool, Errno>]]) -> FakeBluetoothSystem {
    let fake = FakeBluetoothSystem()
    fake.script { s in
      s.inquiry = .success([
        InquiryResult(address: named, classOfDevice: 0x000540),
        InquiryResult(address: unnamed, classOfDevice: 0x000540),
        InquiryResult(address: headset, classOfDevice: 0x240404),
      ])
      s.names = [named: "Socket CHS [0A1B2C]", unnamed: "Barcode scanner", headset: "Headset"]
      s.serviceClasses = classes
    }
    return fake
  }

  @Test func scannerUUIDIsTheOneFromTheReference() {
    #expect(ClassicDiscovery.scannerServiceClass.description == "a1220169-e854-473e-9cb5-873acbdf1f13")
    #expect(ClassicDiscovery.scannerServiceClass.bytes.prefix(4) == [0xA1, 0x22, 0x01, 0x69])
    #expect(UUID128("A1220169E854473E9CB5873ACBDF1F13") == nil)
    #expect(UUID128("A1220169-E854-473E-9CB5-873ACBDF1F1G") == nil)
  }

  @Test func recognisedByServiceClassWithoutASocketName() async throws {
    let fake = fake([unnamed: [.success(true)]])
    let found = try await ClassicDiscovery.inquiry(adapter: nil, seconds: 5, all: false, system: fake)
    #expect(found.map(\.address) == [named, unnamed])
    #expect(found.map(\.recognition) == [.name, .serviceClass])
    // The name already says Socket: no SDP search for it; one search each for the other two.
    #expect(fake.count("sdpServiceClass") == 2)
    #expect(
      fake.state.withLock { $0.searchedUUIDs }.allSatisfy { $0 == ClassicDiscovery.scannerServiceClass })
  }

  @Test func othersOnlyWithAll() async throws {
    let fake = fake([:])
    #expect(
      try await ClassicDiscovery.inquiry(adapter: nil, seconds: 5, all: false, system: fake).map(\.address)
        == [
          named
        ])
    let all = try await ClassicDiscovery.inquiry(adapter: nil, seconds: 5, all: true, system: fake)
    #expect(all.map(\.address) == [named, unnamed, headset])
    #expect(all.map(\.recognition) == [.name, nil, nil])
    #expect(all.map(\.isSocketMobile) == [true, false, false])
  }

  @Test func sdpFailureSkipsTheDeviceAndSaysWhy() async throws {
    let fake = fake([
      unnamed: [.failure(Errno(EHOSTDOWN))], headset: [.failure(Errno(EINTR)), .success(true)],
    ])
    let notes = Mutex<[String]>([])
    let found = try await ClassicDiscovery.inquiry(
      adapter: nil, seconds: 5, all: false, system: fake, note: { note in notes.withLock { $0.append(note) } }
    )
    // EINTR is retried (the headset answers the second time); EHOSTDOWN leaves the device unrecognised.
    #expect(found.map(\.address) == [named, headset])
    #expect(found.last?.recognition == .serviceClass)
    let said = notes.withLock { $0 }
    #expect(said.count == 1)
    #expect(said.first?.hasPrefix("00:06:66:0A:1B:2D: not recognised, SDP failed: ") == true, "\(said)")
  }

  @Test(arguments: [
    (
      "Barcode scanner", ["00001101-0000-1000-8000-00805f9b34fb", "A1220169-E854-473E-9CB5-873ACBDF1F13"],
      "serviceClass"
    ),
    ("Socket 7Xi [0A1B2C]", ["a1220169-e854-473e-9cb5-873acbdf1f13"], "serviceClass"),
    ("Socket 7Xi [0A1B2C]", ["00001101-0000-1000-8000-00805f9b34fb"], "name"),
    ("Headset", ["0000110b-0000-1000-8000-00805f9b34fb"], nil),
  ])
  func bluezUUIDsOrName(_ name: String, _ uuids: [String], _ expected: String?) {
    #expect(ClassicDiscovery.recognize(name: name, uuids: uuids)?.rawValue == expected)
  }
}

/// Classic scanner properties: no RFCOMM link for get/set; the name from an HCI remote name request
/// when bluetoothd does not answer.
@Suite struct ClassicPropertyTests {
  /// Without a system bus bluetoothd cannot be asked, so the name comes from the (fake) HCI request
  /// and pairing fails as NOTAVAILABLE; where a bus exists, a real bluetoothd might answer instead.
  static let noSystemBus =
    getenv("DBUS_SYSTEM_BUS_ADDRESS") == nil && access("/run/dbus/system_bus_socket", F_OK) != 0
  static let systemBusReason: Comment = "a D-Bus system bus is reachable here, so bluetoothd might answer"

  @Test(.enabled(if: noSystemBus, systemBusReason)) func addressAndNameWithoutALink() async throws {
    let fake = FakeBluetoothSystem()
    fake.script { $0.names = [scanner: "Socket 7Xi [DDEEFF]"] }
    let device = ClassicSPPScanner.forProperties(
      scanner, request: request(wantsEvents: false), system: fake, name: "remembered")
    #expect(device.channel == nil)
    #expect(
      try await device.get(.bluetoothAddressDevice, argument: .none)
        == .array([0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF]))
    #expect(try await device.get(.friendlyNameDevice, argument: .none) == .string("Socket 7Xi [DDEEFF]"))
    #expect(fake.count("socket") == 0, "no RFCOMM socket for properties")
    #expect(fake.count("remoteName") == 1)
    await device.close()
  }

  @Test(.enabled(if: noSystemBus, systemBusReason)) func remoteNameErrors() async {
    let fake = FakeBluetoothSystem()
    let device = ClassicSPPScanner.forProperties(scanner, request: request(wantsEvents: false), system: fake)
    do {
      _ = try await device.get(.friendlyNameDevice, argument: .none)
      Issue.record("no name scripted: the request times out")
    } catch {
      #expect(error.code == .requestTimedOut)
      #expect(
        error.message.hasPrefix("reading the remote name (HCI) to AA:BB:CC:DD:EE:FF: "), "\(error.message)")
    }
    fake.script { $0.hciDevices = .failure(Errno(EAFNOSUPPORT)) }
    do {
      _ = try await device.get(.friendlyNameDevice, argument: .none)
      Issue.record("no HCI")
    } catch {
      #expect(error.code == .notAvailable)
    }
  }

  @Test func setAndOtherPropertiesAreNotSupported() async {
    let device = ClassicSPPScanner.forProperties(
      scanner, request: request(wantsEvents: false), system: FakeBluetoothSystem(), name: "dock")
    do {
      try await device.set(.friendlyNameDevice, .string("Front door"))
      Issue.record("friendly-name cannot be set over SPP")
    } catch {
      #expect(error.code == .notSupported)
      #expect(
        error.message
          == "dock: the friendly name of a Classic scanner cannot be set: host→scanner commands in SPP mode are not public (docs/device-protocols.md §5.3)"
      )
    }
    for property in [PropertyID.batteryLevelDevice, .versionDevice] {
      let error = await #expect(throws: CaptureError.self) {
        _ = try await device.get(property, argument: .none)
      }
      #expect(error?.code == .notSupported, "\(property.cliName)")
    }
    #expect(device.capabilities.writable.isEmpty)
  }

  @Test(.enabled(if: noSystemBus, systemBusReason)) func pairingWithoutBluetoothdNamesIt() async {
    do {
      _ = try await ClassicPairing.pair(address: scanner.description, adapter: nil, timeout: .seconds(1))
      Issue.record("no bluetoothd here")
    } catch {
      #expect(error.code == .notAvailable)
      #expect(
        error.message.hasPrefix("--pair with --classic pairs through bluetoothd, which is not reachable: "))
    }
  }
}

/// A gate that inquiries block their thread at until a task opens it.
final class InquiryGate: Sendable {
  private let state = Mutex((open: false, waiting: 0, gaveUp: 0))

  var waiting: Int { state.withLock { $0.waiting } }
  /// Waits that ended at their deadline with the gate still shut.
  var gaveUp: Int { state.withLock { $0.gaveUp } }

  func open() { state.withLock { $0.open = true } }

  /// Blocks the calling thread (short sleeps, as a blocking call holds it) until the gate opens or
  /// `deadline` passes.
  func wait(until deadline: ContinuousClock.Instant) {
    state.withLock { $0.waiting += 1 }
    while !state.withLock({ $0.open }) {
      if ContinuousClock.now >= deadline {
        state.withLock { $0.gaveUp += 1 }
        return
      }
      usleep(5_000)
    }
  }
}

@Suite struct ClassicBlockingTests {
  static let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))

  /// Deterministic, not timed: every inquiry blocks its thread at a gate that only a task on the
  /// cooperative pool opens. Had the inquiries run on the pool (as wide as the core count), that task
  /// could not run before they gave up at the safety deadline (60 s, which a healthy run never
  /// nears, however loaded the machine).
  @Test("HCI inquiries block the blocking executor, not the cooperative pool: a concurrent task runs at once")
  func inquiryLeavesThePoolFree() async throws {
    let fake = FakeBluetoothSystem()
    let gate = InquiryGate()
    let deadline = ContinuousClock.now + .seconds(60)
    fake.script { $0.inquiryWait = { gate.wait(until: deadline) } }
    let inquiries = Self.cores + 2
    try await withThrowingTaskGroup(of: Int.self) { group in
      for _ in 0..<inquiries {
        group.addTask {
          try await ClassicDiscovery.inquiry(adapter: nil, seconds: 1, all: true, system: fake).count
        }
      }
      // Suspends (needs a free pool thread) until every inquiry holds its thread at the gate.
      while gate.waiting < inquiries && ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(10))
      }
      #expect(gate.waiting == inquiries)
      // A fresh pool task opens the gate while every inquiry blocks.
      await Task.detached { gate.open() }.value
      for try await count in group { #expect(count == 0) }
    }
    #expect(gate.gaveUp == 0, "an inquiry gave up at the gate: the pool task could not run")
    #expect(fake.count("inquiry") == inquiries)
    #expect(fake.state.withLock { $0.inquiryOnWorker } == Array(repeating: true, count: inquiries))
  }
}

/// The C shim's argument checks, through the Swift seam where it has one. They come before any socket,
/// so they answer EINVAL the same on this kernel without AF_BLUETOOTH.
@Suite struct CBluetoothArgumentTests {
  @Test("a device list with room for no entry is EINVAL, never a write of 16 into it")
  func deviceListWithoutRoom() {
    #expect(throws: Errno(EINVAL)) { try LibBluetoothSystem().hciDeviceList(capacity: 0) }
    var id: UInt16 = 0xBEEF
    var up: UInt8 = 0xAA
    errno = 0
    #expect(cbt_hci_device_list(&id, &up, 0) == -1)
    #expect(errno == EINVAL)
    #expect(cbt_hci_device_list(&id, &up, -5) == -1)
    #expect(errno == EINVAL)
    #expect(id == 0xBEEF && up == 0xAA)
  }

  @Test("a remote name into a buffer of size <= 0 is EINVAL, not a memset underflow")
  func remoteNameWithoutRoom() {
    let address = BluetoothAddress("00:06:66:0A:1B:2C")!
    #expect(throws: Errno(EINVAL)) {
      try LibBluetoothSystem().remoteName(device: 0, address: address, timeoutMilliseconds: 10, capacity: 0)
    }
    var name: [CChar] = [65, 66]
    for size: Int32 in [0, -1, Int32.min] {
      errno = 0
      let rc = address.littleEndianBytes.withUnsafeBufferPointer {
        cbt_hci_remote_name(0, $0.baseAddress, &name, size, 10)
      }
      #expect(rc == -1)
      #expect(errno == EINVAL)
    }
    #expect(name == [65, 66])
  }

  @Test("an inquiry with room for no answer is EINVAL (hci_inquiry would take max 0 as 255)")
  func inquiryWithoutRoom() {
    var addresses = [UInt8](repeating: 0, count: 6)
    var classes: [UInt32] = [0]
    errno = 0
    #expect(cbt_hci_inquiry(0, 1, 0, &addresses, &classes) == -1)
    #expect(errno == EINVAL)
    #expect(cbt_hci_inquiry(0, 0, 1, &addresses, &classes) == -1)
    #expect(errno == EINVAL)
  }

  @Test("with room, the checks pass and the call reaches the kernel (here: no Bluetooth, not EINVAL)")
  func deviceListWithRoomReachesTheKernel() {
    do {
      _ = try LibBluetoothSystem().hciDeviceList(capacity: 1)
    } catch {
      #expect(error.code != EINVAL)
    }
  }
}
