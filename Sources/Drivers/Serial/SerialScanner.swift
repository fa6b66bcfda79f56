import CaptureCore
import Dispatch
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A barcode scanner on a tty (`serial:/dev/PATH?baud=N&parity=..&framing=stx|line|auto`): a Socket
/// scanner in SPP mode over /dev/rfcommN, or any scanner on /dev/ttyACM*, /dev/ttyUSB*. It only listens: the
/// host→scanner commands of SPP mode are not public (docs/device-protocols.md §5.3), so trigger and every
/// settable property answer NOTSUPPORTED.
public final class SerialScanner: Device, Sendable {
  public let info: DeviceInfo
  public var events: AsyncStream<Event> { channel.events }
  let path: String
  let settings: SerialSettings
  let framing: SPPFraming
  let reconnects: Bool
  private let channel: EventChannel
  /// The events read and not yet taken by the consumer (tests of back-pressure).
  var backlog: EventQueue { channel.queue }
  private let reader: ReaderThread

  /// How long the line must stay quiet before a frame still short of its stated length is given up.
  static let stallMilliseconds = 500
  /// How often a reconnecting scanner looks for its device node (`listen` waits for it, docs/architecture.md
  /// §1).
  static let reconnectMicroseconds: useconds_t = 250_000
  static let pollMilliseconds: Int32 = 100

  public var capabilities: Capabilities {
    Capabilities(
      readable: [.deviceType, .friendlyNameDevice], writable: [], triggers: [],
      events: [.deviceArrival, .deviceRemoval, .decodedData, .undecodedData, .error])
  }

  /// Validates every parameter before touching the device (usage errors are 18 even when the path is
  /// wrong too), then opens it.
  public static func open(path: String, parameters: [String: String], request: OpenRequest)
    throws(CaptureError) -> SerialScanner
  {
    let settings = try SerialSettings(parameters: parameters)
    var framing = SPPFraming.auto
    if let text = parameters["framing"] {
      guard let chosen = SPPFraming(rawValue: text.lowercased()) else {
        throw .invalidParameter("framing must be stx, line or auto, not '\(text)'")
      }
      framing = chosen
    }
    if let proto = parameters["protocol"], proto.lowercased() != "spp" {
      throw .notSupported(
        "serial protocol '\(proto)' is not supported: protocol is spp (the default) or dmcc; framing=line reads codes ended by a line break"
      )
    }
    let port = try SerialPort(path: path, settings: settings)
    let scanner = SerialScanner(
      selector: request.selector.description, path: path, settings: settings, framing: framing,
      reconnects: request.reconnects)
    if request.wantsEvents {
      try scanner.startReading(port)
    } else {
      port.close()
    }
    return scanner
  }

  init(selector: String, path: String, settings: SerialSettings, framing: SPPFraming, reconnects: Bool) {
    self.path = path
    self.settings = settings
    self.framing = framing
    self.reconnects = reconnects
    // No published device type has the Serial interface (docs/capture-sdk.md §5.2): type None (0), and as
    // the model what the host knows of the line (the USB adapter's product, else the tty's name).
    self.info = DeviceInfo(
      id: selector, name: "Serial scanner (\(path))", type: .none, model: TTYModel.describe(path: path))
    self.reader = ReaderThread(name: "serial")
    channel = EventChannel(device: info)
  }

  // MARK: properties and trigger

  public func get(_ property: PropertyID, argument: PropertyValue) async throws(CaptureError) -> PropertyValue
  {
    switch property {
    case .deviceType: return .ulong(info.type.rawValue)
    case .friendlyNameDevice: return .string(path)
    default: throw unsupported(property)
    }
  }

  public func set(_ property: PropertyID, _ value: PropertyValue) async throws(CaptureError) {
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

  private func emit(_ payload: Event.Payload) { channel.emit(payload) }

  private func emit(_ parsed: [SPPEvent]) { channel.emit(parsed, from: path) }

  private func announceRemoval() { channel.announceRemoval() }

  private func finish() { channel.finish() }

  private var isStopping: Bool { reader.isStopping }

  private func startReading(_ port: SerialPort) throws(CaptureError) {
    // SerialPort is owned by the loop alone from here on; the box carries it across the thread hop.
    nonisolated(unsafe) let owned = port
    do throws(Errno) { try reader.start { [self] in readLoop(owned) } } catch {
      port.close()
      throw CaptureError(error, "cannot start the reader thread of \(path)", other: .unableCreateThread)
    }
  }

  private func readLoop(_ first: SerialPort) {
    var port: SerialPort? = first
    var parser = SPPFrameParser(framing: framing)
    var quietMilliseconds = 0
    while !isStopping {
      guard let open = port else {
        // Waiting for the device node to come back (a USB adapter replugged, rfcomm re-bound).
        usleep(Self.reconnectMicroseconds)
        guard access(path, F_OK) == 0, let reopened = try? SerialPort(path: path, settings: settings) else {
          continue
        }
        port = reopened
        parser = SPPFrameParser(framing: framing)
        channel.announceArrival()
        continue
      }
      // Back-pressure: while the consumer is a full queue behind, the tty's buffer holds the bytes.
      if !channel.hasRoom {
        channel.waitForRoom(timeoutMilliseconds: Self.pollMilliseconds)
        continue
      }
      let result: SerialPort.ReadResult
      do throws(CaptureError) {
        result = try open.read(timeoutMilliseconds: Self.pollMilliseconds)
      } catch {
        emit(.error(error))
        result = .unplugged
      }
      switch result {
      case .data(let bytes):
        quietMilliseconds = 0
        emit(parser.feed(bytes))
      case .idle:
        quietMilliseconds += Int(Self.pollMilliseconds)
        if quietMilliseconds >= Self.stallMilliseconds && parser.hasPartialRecord {
          emit(parser.flushStalled())
        }
      case .unplugged:
        // A frame cut short by the removal is reported as malformed (its bytes kept), never decoded.
        emit(parser.finish())
        open.close()
        port = nil
        announceRemoval()
        if !reconnects {
          finish()
          return
        }
      }
    }
    port?.close()
  }
}
