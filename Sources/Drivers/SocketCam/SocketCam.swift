import CaptureCore
import Decoders
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// SocketCam C820, the software scanner (docs/capture-sdk.md §5.2: SocketCamC820 = 5, interface None):
/// decodes frames from images, stdin or a V4L2 camera with ZBar and zxing-cpp.
public final class SocketCam: Device {
  public static let defaultName = "SocketCam C820"

  public let info: DeviceInfo
  public let events: AsyncStream<Event>
  private let continuation: AsyncStream<Event>.Continuation
  private let store: StateStore
  private let request: OpenRequest
  private let settings: Mutex<SocketCamSettings>
  private let isClosed = Atomic<Bool>(false)
  /// The last presence event sent was an arrival, so close() owes a removal: false while a removed
  /// camera is waited for (FramePass.reconnects), which has sent its removal already.
  private let presence = Presence()
  private let running = Mutex<Task<Void, Never>?>(nil)

  public var capabilities: Capabilities {
    Capabilities(
      readable: [
        .versionDevice, .deviceType, .friendlyNameDevice, .dataSourceDevice, .socketCamStatus, .version,
      ],
      writable: [.friendlyNameDevice, .dataSourceDevice, .socketCamStatus, .triggerDevice],
      triggers: [.start, .stop, .continuousScan, .continuousScanUntilRead],
      events: [.deviceArrival, .deviceRemoval, .decodedData, .error],
      dataSources: SymbologyMap.supported)
  }

  /// How a `--camera` is opened (FramePass.v4l2; the driver tests script one).
  private let openCamera: FramePass.CameraOpener

  init(request: OpenRequest, store: StateStore, openCamera: @escaping FramePass.CameraOpener = FramePass.v4l2)
    throws(CaptureError)
  {
    let stored = try store.load().socketCam
    self.store = store
    self.request = request
    self.openCamera = openCamera
    self.settings = Mutex(stored)
    self.info = DeviceInfo(
      id: "socketcam", name: stored.friendlyName ?? Self.defaultName, type: .socketCamC820)
    (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
    continuation.yield(Event(time: .now(), device: info, payload: .deviceArrival))
  }

  var isEnabled: Bool { settings.withLock { $0.status } == SocketCamStatus.enable.rawValue }

  // MARK: properties

  public func get(_ property: PropertyID, argument: PropertyValue) async throws(CaptureError) -> PropertyValue
  {
    let current = settings.withLock { $0 }
    switch property {
    case .deviceType:
      return .ulong(DeviceType.socketCamC820.rawValue)
    case .friendlyNameDevice:
      return .string(current.friendlyName ?? Self.defaultName)
    case .versionDevice, .version:
      return .version(
        VersionValue(
          major: CaptureVersion.major, middle: CaptureVersion.middle, minor: CaptureVersion.minor,
          build: CaptureVersion.build, year: 0, month: 0, day: 0, hour: 0, minute: 0))
    case .socketCamStatus:
      return .byte(current.status)
    case .dataSourceDevice:
      guard case .dataSource(let requested) = argument else {
        throw .invalidParameter("data-source needs a data source to read")
      }
      return .dataSource(
        DataSourceValue(id: requested.id, status: Self.status(of: requested.id, in: current)))
    default:
      throw unsupported(property)
    }
  }

  static func status(of source: DataSource, in settings: SocketCamSettings) -> DataSourceStatus {
    guard SymbologyMap.supported.contains(source) else { return .notSupported }
    if let raw = settings.dataSources[String(source.rawValue)], let status = DataSourceStatus(rawValue: raw) {
      return status
    }
    return SymbologyMap.disabledByDefault.contains(source) ? .disable : .enable
  }

  public func set(_ property: PropertyID, _ value: PropertyValue) async throws(CaptureError) {
    // The one set of value rules (friendly-name length, status and trigger values), shared with `set`
    // and profile dry runs; what is left here is what only SocketCam knows.
    try PropertyRules.check(property, value)
    switch (property, value) {
    case (.friendlyNameDevice, .string(let name)):
      try await persist { $0.friendlyName = name == Self.defaultName ? nil : name }
    case (.socketCamStatus, .byte(let raw)):
      try await persist { $0.status = raw }
      // In a service, SocketCam disabled through its own handle leaves as the engine's
      // setSocketCamStatus makes it leave: closed, its DeviceRemoval published.
      if request.scansInBackground && raw == SocketCamStatus.disable.rawValue { await close() }
    case (.dataSourceDevice, .dataSource(let requested)):
      guard SymbologyMap.supported.contains(requested.id) else {
        throw .notSupported("SocketCam cannot decode \(requested.id.name) (\(requested.id.rawValue))")
      }
      try await persist { $0.dataSources[String(requested.id.rawValue)] = requested.status.rawValue }
    case (.triggerDevice, .byte(let raw)):
      guard let action = Trigger(rawValue: raw) else {
        throw .invalidParameter("unknown trigger value \(raw)")
      }
      try await trigger(action)
    case (.friendlyNameDevice, _), (.socketCamStatus, _), (.dataSourceDevice, _), (.triggerDevice, _):
      throw .invalidParameter("wrong value type \(value.type.name) for \(property.cliName)")
    default:
      throw unsupported(property)
    }
  }

  private func persist(_ change: @escaping @Sendable (inout SocketCamSettings) -> Void)
    async throws(CaptureError)
  {
    let updated = try await store.asyncUpdate {
      (state: inout StateFile) throws(CaptureError) -> SocketCamSettings in
      change(&state.socketCam)
      return state.socketCam
    }
    settings.withLock { $0 = updated }
  }

  /// The decoder formats enabled by the data-source settings.
  var enabledFormats: Set<BarcodeFormat> {
    let current = settings.withLock { $0 }
    var formats = Set<BarcodeFormat>()
    for source in SymbologyMap.supported where Self.status(of: source, in: current) == .enable {
      formats.formUnion(SymbologyMap.formats(source))
    }
    return formats
  }

  /// Whether EAN-2/EAN-5 add-ons are read: the `ean-add-on` data source (off by default).
  var readsAddOns: Bool { Self.status(of: .eanAddOn, in: settings.withLock { $0 }) == .enable }

  // MARK: trigger

  /// start / continuous read the frame source: a finite source (images, a directory, stdin) is decoded
  /// completely and then the device is removed (its stream ends); a camera reads until a code is found
  /// (start, continuousScanUntilRead) or until the device is closed (continuous).
  ///
  /// In a service (`OpenRequest.scansInBackground`) a trigger is a camera scan as the SDK's SocketCam
  /// view is one: start and continuousScanUntilRead read the source until the first decoded code or a
  /// stop, continuousScan until a stop; the trigger returns once the scan is reading (a watched
  /// directory's watch armed) and the codes arrive as DecodedData events. A start while a scan runs
  /// replaces it. Stop ends the scan and returns once it has ended: no event of it follows. Frames
  /// and files that arrive while no scan runs are not read, then or later (as a camera's view that is
  /// closed). A scan that ends leaves the device open.
  public func trigger(_ action: Trigger) async throws(CaptureError) {
    switch action {
    case .stop where request.scansInBackground:
      let scan = running.withLock { $0.take() }
      scan?.cancel()
      await scan?.value
      return
    case .stop:
      running.withLock { $0?.cancel() }
      return
    case .start, .continuousScan, .continuousScanUntilRead:
      break
    default:
      throw .notSupported("SocketCam has no trigger to \(action.cliName)")
    }
    guard isEnabled else {
      throw CaptureError(
        .notAvailable, "SocketCam is disabled; enable it with: capture set socketcam socket-cam-status enable"
      )
    }
    guard !request.frameSources.isEmpty else {
      throw .invalidParameter(
        "SocketCam needs a frame source: --image FILE, --dir DIR or --camera /dev/videoN")
    }
    guard !isClosed.load(ordering: .acquiring) else {
      throw CaptureError(.deviceNotOpen, "SocketCam is closed")
    }
    let pass = FramePass(
      sources: request.frameSources, formats: enabledFormats, addOns: readsAddOns, device: info,
      warn: request.warn, untilFirstRead: action != .continuousScan,
      reconnects: request.reconnects && !request.scansInBackground, openCamera: openCamera,
      emit: { [continuation, presence] event in
        switch event.payload {
        case .deviceArrival: presence.isAnnounced.store(true, ordering: .releasing)
        case .deviceRemoval: presence.isAnnounced.store(false, ordering: .releasing)
        default: break
        }
        continuation.yield(event)
      })
    if request.scansInBackground { return try await startScan(pass) }
    // Registered under the lock `close` takes the scan from, and only while the device is open: a
    // close between the check above and this (a SIGINT in a command's first instant) would otherwise
    // find no scan to cancel, and a read of a source that never ends (stdin held open) would run on.
    let scan = running.withLock { current -> Task<Void, Never>? in
      guard !isClosed.load(ordering: .acquiring) else { return nil }
      let task = Task { await pass.run() }
      current = task
      return task
    }
    guard let task = scan else { throw CaptureError(.deviceNotOpen, "SocketCam is closed") }
    await withTaskCancellationHandler {
      await task.value
    } onCancel: {
      task.cancel()
    }
    // A finite source is exhausted, or a continuous camera read ended (it only ends on an error or a
    // stop): either way the device is gone, and its stream must end so listeners finish.
    if pass.isFinite || action == .continuousScan { await close() }
  }

  /// A background scan: it waits for the scan it replaces to end (no two read one watched directory at
  /// once), and is registered under the same lock `close` takes it from, so a scan never outlives the
  /// device. Returns once the pass is reading.
  private func startScan(_ pass: FramePass) async throws(CaptureError) {
    let reading = Latch()
    let failure = StartFailure()
    let started = running.withLock { current -> Bool in
      guard !isClosed.load(ordering: .acquiring) else { return false }
      let previous = current
      current = Task {
        previous?.cancel()
        await previous?.value
        if !Task.isCancelled {
          await pass.run(ready: { error in
            if let error { failure.error.withLock { $0 = error } }
            reading.open()
          })
        }
        reading.open()
      }
      return true
    }
    guard started else { throw CaptureError(.deviceNotOpen, "SocketCam is closed") }
    await reading.wait()
    // A camera that cannot be opened fails the start itself, with its reason (the app's trigger call
    // shows it; an Error event would carry the code alone, docs/capturejs.md §4): no read is pending.
    if let error = failure.error.withLock({ $0 }) { throw error }
  }

  public func close() async {
    guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
    let task = running.withLock { $0 }
    task?.cancel()
    await task?.value
    // The pass has ended: no presence event of it can follow.
    if presence.isAnnounced.load(ordering: .acquiring) {
      continuation.yield(Event(time: .now(), device: info, payload: .deviceRemoval))
    }
    continuation.finish()
  }
}

/// Whether SocketCam's last presence event was an arrival (shared with the pass that may send a
/// removal and a new arrival for its camera).
private final class Presence: Sendable {
  let isAnnounced = Atomic<Bool>(true)
}

/// The reason a background scan could not start (its camera would not open), set before the scan's
/// `reading` latch opens.
private final class StartFailure: Sendable {
  let error = Mutex<CaptureError?>(nil)
}
