import CaptureCore
import Dispatch
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Options from `hid:PATH?keymap=de&timeout=100ms` (query) or `--keymap` (the query wins: it names
/// one device, the option all of them).
public struct WedgeSettings: Sendable, Equatable {
  public var keymap: Keymap = .us
  public var interKeyTimeoutMicroseconds: Int64 = 100_000

  public static let parameterNames: Set<String> = ["keymap", "timeout"]

  public init() {}

  /// Splits `PATH?QUERY` and reads the query; anything unknown or out of range is a usage error (18),
  /// found before the device is touched.
  public static func parse(_ selectorPath: String, defaultKeymap: String?) throws(CaptureError) -> (
    path: String, settings: WedgeSettings
  ) {
    var settings = WedgeSettings()
    if let name = defaultKeymap { settings.keymap = try keymap(name) }
    let pieces = selectorPath.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
    if pieces.count == 2 {
      for pair in pieces[1].split(separator: "&") {
        let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
        guard kv.count == 2, parameterNames.contains(kv[0]) else {
          throw .invalidParameter("unknown hid parameter '\(pair)' (use keymap, timeout)")
        }
        if kv[0] == "keymap" { settings.keymap = try keymap(kv[1]) }
        if kv[0] == "timeout" { settings.interKeyTimeoutMicroseconds = try microseconds(kv[1]) }
      }
    }
    return (String(pieces[0]), settings)
  }

  static func keymap(_ name: String) throws(CaptureError) -> Keymap {
    guard let map = Keymap(rawValue: name.lowercased()) else {
      let known = Keymap.allCases.map(\.rawValue).joined(separator: ", ")
      throw .invalidParameter("unknown keymap '\(name)' (use \(known))")
    }
    return map
  }

  /// `100ms`, `1s` or a bare number of milliseconds; 1 ms to 10 s.
  static func microseconds(_ text: String) throws(CaptureError) -> Int64 {
    let lower = text.lowercased()
    let value: Int64?
    if lower.hasSuffix("ms") {
      value = Int64(lower.dropLast(2))
    } else if lower.hasSuffix("s") {
      value = Int64(lower.dropLast()).map { $0 * 1000 }
    } else {
      value = Int64(lower)
    }
    guard let ms = value, ms >= 1, ms <= 10_000 else {
      throw .invalidParameter("hid timeout must be 1ms to 10s (e.g. 100ms), not '\(text)'")
    }
    return ms * 1000
  }
}

/// A keyboard-wedge barcode scanner read from evdev (`hid:/dev/input/eventN`, `hid:auto`). It types codes as
/// key presses; the driver grabs the device (EVIOCGRAB) so scans do not also land in the focused window,
/// translates keys with the scanner's keymap and reports each code as decodedData. A keyboard has no command
/// channel, so trigger and every settable property answer NOTSUPPORTED.
public final class KeyboardWedge: Device, Sendable {
  public let info: DeviceInfo
  public var events: AsyncStream<Event> { channel.events }
  let path: String
  let isAuto: Bool
  let settings: WedgeSettings
  let reconnects: Bool
  let system: any EvdevSystem
  let warn: @Sendable (String) -> Void
  private let channel: EventChannel
  private let reader: ReaderThread

  /// How often a reconnecting scanner looks for its device node (`listen` waits for it, docs/architecture.md
  /// §1).
  static let reconnectMicroseconds: useconds_t = 250_000

  public var capabilities: Capabilities {
    Capabilities(
      readable: [.deviceType, .friendlyNameDevice], writable: [], triggers: [],
      events: [.deviceArrival, .deviceRemoval, .decodedData, .error])
  }

  /// Validates the parameters, resolves `auto`, opens and grabs the device.
  public static func open(
    path selectorPath: String, request: OpenRequest, system: any EvdevSystem = LinuxEvdevSystem()
  ) throws(CaptureError) -> KeyboardWedge {
    let (path, settings) = try WedgeSettings.parse(selectorPath, defaultKeymap: request.keymap)
    let isAuto = path == "auto"
    let identity: EvdevIdentity?
    if isAuto {
      guard let found = findScanner(system: system) else {
        throw CaptureError(
          .notFound,
          "hid:auto found no input device named like a barcode scanner (see capture list --hid)")
      }
      identity = found
    } else {
      identity = nil
    }
    let devicePath = identity?.path ?? path
    let source = try EvdevSource(path: devicePath, system: system, warn: request.warn)
    // The input device's own name (EVIOCGNAME, linux/input.h) is the closest a keyboard comes to a
    // model ("Socket Mobile Socket S740", "Honeywell Imaging & Mobility 1900").
    let model = identity?.name ?? EvdevSource.identify(path: devicePath, system: system)?.name
    let wedge = KeyboardWedge(
      selector: request.selector.description, name: model ?? "Keyboard-wedge scanner (\(devicePath))",
      model: model, path: devicePath, isAuto: isAuto,
      settings: settings, reconnects: request.reconnects, system: system, warn: request.warn)
    if request.wantsEvents {
      try wedge.startReading(source)
    } else {
      source.close()
    }
    return wedge
  }

  static func findScanner(system: any EvdevSystem) -> EvdevIdentity? {
    EvdevSource.identifyAll(system: system).first(where: \.isScanner)
  }

  init(
    selector: String, name: String, model: String?, path: String, isAuto: Bool, settings: WedgeSettings,
    reconnects: Bool,
    system: any EvdevSystem, warn: @escaping @Sendable (String) -> Void
  ) {
    self.path = path
    self.isAuto = isAuto
    self.settings = settings
    self.reconnects = reconnects
    self.system = system
    self.warn = warn
    // No published device type has a keyboard interface (docs/capture-sdk.md §5.2): type None (0), and the
    // input device's name as the model.
    self.info = DeviceInfo(id: selector, name: name, type: .none, model: model)
    self.reader = ReaderThread(name: "hid")
    channel = EventChannel(device: info)
  }

  // MARK: properties and trigger

  public func get(_ property: PropertyID, argument: PropertyValue) async throws(CaptureError) -> PropertyValue
  {
    switch property {
    case .deviceType: return .ulong(info.type.rawValue)
    case .friendlyNameDevice: return .string(info.name)
    default: throw unsupported(property)
    }
  }

  public func set(_ property: PropertyID, _ value: PropertyValue) async throws(CaptureError) {
    throw unsupported(property)
  }

  public func trigger(_ action: Trigger) async throws(CaptureError) {
    throw .notSupported(
      "\(info.name) cannot \(action.cliName): a keyboard-wedge scanner only types, it takes no commands")
  }

  public func close() async {
    await reader.stop()
    finish()
  }

  // MARK: the reader

  private func emit(_ payload: Event.Payload) { channel.emit(payload) }

  private func emit(_ code: HIDCode) {
    if !code.text.isEmpty {
      emit(.decodedData(DecodedData(dataSource: .notSpecified, bytes: Array(code.text.utf8), origin: path)))
    }
    if !code.unmappedKeys.isEmpty {
      // The SDK error event carries a code and a message only, so the key codes travel in the message:
      // what the scanner typed is never silently dropped.
      let keys = code.unmappedKeys.map(String.init).joined(separator: ", ")
      emit(
        .error(
          CaptureError(
            .invalidFormat,
            "\(code.unmappedKeys.count) key(s) from \(path) have no character in keymap \(settings.keymap.rawValue) (code \"\(code.text)\"): unmapped: [\(keys)] (linux/input-event-codes.h)"
          )))
    }
  }

  private func announceArrival() { channel.announceArrival() }

  private func announceRemoval() { channel.announceRemoval() }

  private func finish() { channel.finish() }

  private var isStopping: Bool { reader.isStopping }

  private func startReading(_ source: EvdevSource) throws(CaptureError) {
    // EvdevSource is owned by the loop alone from here on; the box carries it across the thread hop.
    nonisolated(unsafe) let owned = source
    do throws(Errno) { try reader.start { [self] in readLoop(owned) } } catch {
      source.close()
      throw CaptureError(error, "cannot start the reader thread of \(path)", other: .unableCreateThread)
    }
  }

  /// Reopens the device once its node is back; hid:auto looks for any scanner again, since a
  /// replugged device may come back as another eventN.
  private func reopen() -> EvdevSource? {
    let candidate = isAuto ? Self.findScanner(system: system)?.path : path
    // Opening through the seam is the existence check (ENOENT until the node is back).
    guard let candidate else { return nil }
    // The "no grab possible" warning was given at open; retries every 250 ms must not repeat it.
    return try? EvdevSource(path: candidate, system: system, warn: { _ in })
  }

  private func readLoop(_ first: EvdevSource) {
    var source: EvdevSource? = first
    var translator = KeyTranslator(
      keymap: settings.keymap, interKeyTimeoutMicroseconds: settings.interKeyTimeoutMicroseconds)
    let timeoutMilliseconds = Int(settings.interKeyTimeoutMicroseconds / 1000)
    let pollMilliseconds = Int32(min(100, max(1, timeoutMilliseconds / 2)))
    var quietMilliseconds = 0
    /// What the reconnect probe read, handled as the loop's next result.
    var probed: EvdevSource.ReadResult?
    var awaitingArrival = false
    while !isStopping {
      guard let open = source else {
        usleep(Self.reconnectMicroseconds)
        guard let reopened = reopen() else { continue }
        // A FIFO whose writer has gone opens fine and then reads end of file at once (pipe(7)): that is
        // not a device coming back, so it is closed again without an arrival.
        let first = (try? reopened.read(timeoutMilliseconds: 0)) ?? .unplugged
        if first == .unplugged {
          reopened.close()
          continue
        }
        source = reopened
        probed = first
        translator = KeyTranslator(
          keymap: settings.keymap, interKeyTimeoutMicroseconds: settings.interKeyTimeoutMicroseconds)
        // A FIFO with no writer also opens fine and just stays quiet (pipe(7)), so only its first
        // events say a scanner is back; an evdev node that opens is the device itself.
        awaitingArrival = system.isStream(reopened.path)
        if !awaitingArrival { announceArrival() }
        continue
      }
      // No back-pressure here, unlike the tty and socket readers: an evdev client's kernel buffer is a
      // few packets and overflows by dropping input (SYN_DROPPED, input event codes doc), so pausing
      // for a stuck consumer would lose keystrokes. A scanner types at human-device rates, so the
      // queue only grows while the consumer is stuck, and nothing is lost.
      var result: EvdevSource.ReadResult
      if let first = probed {
        result = first
        probed = nil
      } else {
        do throws(CaptureError) {
          result = try open.read(timeoutMilliseconds: pollMilliseconds)
        } catch {
          emit(.error(error))
          result = .unplugged
        }
      }
      switch result {
      case .events(let events):
        quietMilliseconds = 0
        if awaitingArrival {
          awaitingArrival = false
          announceArrival()
        }
        for event in events {
          if let code = translator.feed(event) { emit(code) }
        }
      case .idle:
        // A scanner configured without an Enter suffix: the code ends when the keys stop coming
        // (the inter-key timeout, measured here by the wall clock since no further event arrives).
        quietMilliseconds += Int(pollMilliseconds)
        if quietMilliseconds >= timeoutMilliseconds, let code = translator.flush() { emit(code) }
      case .unplugged:
        // Keys typed before the removal still make a code: they are what the scanner sent.
        if let code = translator.flush() { emit(code) }
        open.close()
        source = nil
        announceRemoval()
        if !reconnects {
          finish()
          return
        }
      }
    }
    source?.close()
  }
}
