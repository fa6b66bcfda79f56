import CaptureCore
import Simulators
import Testing

@testable import Drivers

#if canImport(Glibc)
  import Glibc
#endif

/// The driver against the loopback simulator.
@Suite("DataMan reader over DMCC/TCP")
struct DataManReaderTests {
  func open(_ simulator: DMCCSimulator, timeout: Duration = .seconds(3)) async throws(CaptureError)
    -> DataManReader
  {
    var request = OpenRequest(selector: .tcp(host: "127.0.0.1", port: simulator.port))
    request.timeout = timeout
    return try await DataManReader.open(host: "127.0.0.1", port: simulator.port, request: request)
  }

  @Test("open: extended mode, name from DEVICE.NAME, DeviceType none, DEVICE.TYPE as model, arrival first")
  func opens() async throws {
    let simulator = try DMCCSimulator()
    defer { simulator.stop() }
    simulator.define("DEVICE.TYPE", "DM8072")
    let reader = try await open(simulator)
    #expect(reader.info.name == "Line 3 reader")
    #expect(reader.info.type == .none)
    #expect(reader.info.model == "DM8072")
    #expect(try await reader.get(.deviceType, argument: .none) == .ulong(0))
    #expect(reader.info.id == "tcp://127.0.0.1:\(simulator.port)")
    #expect(simulator.parameter("COM.DMCC-RESPONSE") == "1")
    #expect(simulator.commands.prefix(2) == ["SET COM.DMCC-RESPONSE 1", "GET DEVICE.TYPE"])
    await reader.close()
    var kinds: [EventKind] = []
    for await event in reader.events { kinds.append(event.kind) }
    #expect(kinds == [.deviceArrival, .deviceRemoval])
  }

  @Test("properties: friendly name, version, device type, data sources, raw parameters")
  func properties() async throws {
    let simulator = try DMCCSimulator()
    defer { simulator.stop() }
    let reader = try await open(simulator)
    defer { Task { await reader.close() } }
    #expect(try await reader.get(.friendlyNameDevice, argument: .none) == .string("Line 3 reader"))
    #expect(
      try await reader.get(.versionDevice, argument: .none)
        == .version(VersionValue(major: 6, middle: 1, minor: 5, build: 0)))
    #expect(try await reader.get(.deviceType, argument: .none) == .ulong(0))
    let qr = PropertyValue.dataSource(DataSourceValue(id: .qrCode, status: .defaultStatus))
    #expect(
      try await reader.get(.dataSourceDevice, argument: qr)
        == .dataSource(DataSourceValue(id: .qrCode, status: .enable)))
    try await reader.set(.dataSourceDevice, .dataSource(DataSourceValue(id: .code39, status: .enable)))
    #expect(simulator.parameter("SYMBOL.C39") == "ON")
    let name = "Dock \"B\" | left\\n"
    try await reader.set(.friendlyNameDevice, .string(name))
    #expect(simulator.parameter("DEVICE.NAME") == name)
    #expect(try await reader.get(.friendlyNameDevice, argument: .none) == .string(name))
    #expect(try await reader.getRaw("dmcc:DEVICE.TYPE") == "DM8050")
    try await reader.setRaw("dmcc:SYMBOL.PDF417", "ON")
    #expect(simulator.parameter("SYMBOL.PDF417") == "ON")
    let battery = await #expect(throws: CaptureError.self) {
      try await reader.get(.batteryLevelDevice, argument: .none)
    }
    #expect(battery?.code == .notSupported)
    do {
      try await reader.setRaw("dmcc:NO.SUCH", "1")
      Issue.record("an unknown parameter was accepted")
    } catch {
      #expect(error.code == .invalidParameter)
    }
    do {
      _ = try await reader.getRaw("dmcc:A B")
      Issue.record("a name with a space was sent")
    } catch {
      #expect(error.code == .invalidParameter)
    }
  }

  @Test("TRIGGER ON: the base64 read result becomes one decodedData with the exact bytes")
  func triggers() async throws {
    let simulator = try DMCCSimulator(readText: "ABC-é-123")
    defer { simulator.stop() }
    let reader = try await open(simulator)
    try await reader.trigger(.start)
    var decoded: [DecodedData] = []
    for await event in reader.events {
      if case .decodedData(let data) = event.payload {
        decoded.append(data)
        await reader.close()
      }
    }
    #expect(decoded.map(\.bytes) == [Array("ABC-é-123".utf8)])
    #expect(simulator.commands.contains("TRIGGER ON"))
    let continuous = await #expect(throws: CaptureError.self) { try await reader.trigger(.continuousScan) }
    #expect(continuous?.code == .notSupported)
  }

  /// Back-pressure (docs/architecture.md §2): with its queue full and nobody consuming, the reader stops
  /// reading read results — but a command still gets its reply (listen --confirm's feedback must not wait
  /// behind the events it is judging), and every result still arrives once.
  @Test("a command is answered while back-pressure holds the reads; every read arrives once")
  func commandAnsweredUnderBackPressure() async throws {
    let simulator = try DMCCSimulator(readText: "FULL")
    defer { simulator.stop() }
    var request = OpenRequest(selector: .tcp(host: "127.0.0.1", port: simulator.port))
    request.timeout = .seconds(15)
    let reader = try await DataManReader.open(
      host: "127.0.0.1", port: simulator.port, request: request, queueLimit: 16)
    let limit = reader.backlog.limit
    let triggers = limit + 24
    for _ in 0..<triggers { try await reader.trigger(.start) }
    #expect(reader.backlog.count >= limit)
    #expect(try await reader.get(.friendlyNameDevice, argument: .none) == .string("Line 3 reader"))
    await reader.close()
    var reads = 0
    for await event in reader.events {
      if case .decodedData(let data) = event.payload, data.bytes == Array("FULL".utf8) { reads += 1 }
    }
    #expect(reads == triggers)
  }

  @Test("a result sent under TRIGGER ON's id after its ack is a read; a late GET answer is not")
  func resultUnderCommandID() async throws {
    let simulator = try DMCCSimulator(readText: "UNDER-ID")
    defer { simulator.stop() }
    simulator.resultUnderCommandID = true
    let reader = try await open(simulator)
    try await reader.trigger(.start)
    var decoded: [[UInt8]] = []
    for await event in reader.events {
      if case .decodedData(let data) = event.payload {
        decoded.append(data.bytes)
        await reader.close()
      }
    }
    #expect(decoded == [Array("UNDER-ID".utf8)])

    let slow = try DMCCSimulator()
    defer { slow.stop() }
    let late = try await open(slow, timeout: .milliseconds(300))
    slow.replyDelay = 0.5
    let tooLate = await #expect(throws: CaptureError.self) {
      _ = try await late.get(.friendlyNameDevice, argument: .none)
    }
    #expect(tooLate?.code == .requestTimedOut)
    // The late answer must not become an event: a second request answered on the same connection
    // proves the reader has read past it (one TCP stream, answers in order, each under its command's
    // id), so nothing of it can still arrive after this.
    slow.replyDelay = 0
    _ = try await late.get(.friendlyNameDevice, argument: .none)
    await late.close()
    var kinds: [EventKind] = []
    for await event in late.events { kinds.append(event.kind) }
    #expect(kinds == [.deviceArrival, .deviceRemoval])
  }

  @Test("faults: never answers → 42, refused → 32, bad checksum → 36, closed → 38 and removal")
  func faults() async throws {
    let silent = try DMCCSimulator(fault: .neverAnswer)
    defer { silent.stop() }
    // Each open's own timeout applies, not one default: a second open of the same silent reader, with
    // a 60 s timeout, is still waiting when the 300 ms one has ended. Shown by order, not by a clock:
    // the first open resumes on a pool other suites may keep busy for a few seconds.
    let longer = Task { () -> ResultCode? in
      do throws(CaptureError) {
        _ = try await open(silent, timeout: .seconds(60))
        return nil
      } catch {
        return error.code
      }
    }
    let start = ContinuousClock.now
    await #expect(
      throws: CaptureError(
        .requestTimedOut, "127.0.0.1:\(silent.port) did not answer 'GET DEVICE.TYPE' in time")
    ) {
      _ = try await open(silent, timeout: .milliseconds(300))
    }
    // A lower bound, which no load can break: it waited its 300 ms.
    #expect(ContinuousClock.now - start >= .milliseconds(300))
    longer.cancel()
    #expect(await longer.value == .cancel, "the 60 s open ended before it was cancelled")

    let refusedPort = try Self.closedPort()
    var request = OpenRequest(selector: .tcp(host: "127.0.0.1", port: refusedPort))
    request.timeout = .seconds(1)
    do {
      _ = try await DataManReader.open(host: "127.0.0.1", port: refusedPort, request: request)
      Issue.record("connected to a closed port")
    } catch {
      #expect(error.code == .notAvailable)
      #expect(error.message.contains("127.0.0.1:\(refusedPort)"))
    }

    let corrupt = try DMCCSimulator(fault: .corruptChecksum)
    defer { corrupt.stop() }
    do {
      _ = try await open(corrupt)
      Issue.record("a bad checksum was accepted")
    } catch {
      #expect(error.code == .invalidChecksum)
    }

    let closing = try DMCCSimulator()
    defer { closing.stop() }
    // A generous deadline: the close must be seen as a closed connection (38), however loaded the
    // machine is, never as a timeout.
    let reader = try await open(closing, timeout: .seconds(120))
    closing.fault = .closeOnCommand
    do {
      _ = try await reader.get(.friendlyNameDevice, argument: .none)
      Issue.record("a closed connection answered")
    } catch {
      #expect(error.code == .communicationError)
    }
    var kinds: [EventKind] = []
    for await event in reader.events { kinds.append(event.kind) }
    #expect(kinds.first == .deviceArrival && kinds.last == .deviceRemoval)
  }

  @Test("a host name resolves (localhost) and IPv6 loopback is attempted")
  func resolves() async throws {
    let simulator = try DMCCSimulator()
    defer { simulator.stop() }
    var request = OpenRequest(selector: .tcp(host: "localhost", port: simulator.port))
    request.timeout = .seconds(2)
    let reader = try await DataManReader.open(host: "localhost", port: simulator.port, request: request)
    #expect(reader.info.name == "Line 3 reader")
    await reader.close()
    let port = try Self.closedPort()
    do {
      _ = try TCPConnection.connect(host: "::1", port: port, timeout: .seconds(1))
      Issue.record("connected to a closed IPv6 port")
    } catch {
      #expect(error.code == .notAvailable)
    }
  }

  /// A port nothing listens on: bind an ephemeral port, then close it.
  static func closedPort() throws -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return UInt16(bigEndian: address.sin_port)
  }

  @Test("a symbology switch the reader does not know (status 101) is NOTSUPPORTED for get and set")
  func unknownSymbologyIsNotSupported() async throws {
    let simulator = try DMCCSimulator()
    defer { simulator.stop() }
    simulator.forget("SYMBOL.CODABAR")
    let reader = try await open(simulator)
    let asked = PropertyValue.dataSource(DataSourceValue(id: .codabar, status: .defaultStatus))
    let get = await #expect(throws: CaptureError.self) {
      _ = try await reader.get(.dataSourceDevice, argument: asked)
    }
    #expect(get?.code == .notSupported)
    #expect(get?.message == "Line 3 reader has no Codabar: it does not know SYMBOL.CODABAR (DMCC status 101)")
    let set = await #expect(throws: CaptureError.self) {
      try await reader.set(.dataSourceDevice, .dataSource(DataSourceValue(id: .codabar, status: .enable)))
    }
    #expect(set?.code == .notSupported)
    // A switch it has still reads.
    #expect(
      try await reader.get(
        .dataSourceDevice, argument: .dataSource(DataSourceValue(id: .qrCode, status: .defaultStatus)))
        == .dataSource(DataSourceValue(id: .qrCode, status: .enable)))
    await reader.close()
  }
}
