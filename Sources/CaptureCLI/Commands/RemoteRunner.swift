import CaptureContract
import CaptureCore
import Synchronization

/// Runs a remote command (`--mqtt-commands`, docs/fleet.md §5) through the same parser and command code
/// as the command line, with `--json` on, against the devices the engine holds: a device the engine
/// has open is lent to the command (its close does not close it; its events, for trigger, come from
/// the engine), any other is opened as the command line would. The command's documents (its `--json`
/// results and error object, ResultDocument) are kept as values (Output(collecting:)) and become the
/// reply: nothing is written to a file or read back from text.
struct RemoteRunner: Sendable {
  let context: Context
  let engine: CaptureEngine

  /// The most a reply carries of a command's documents, serialized (DocumentCollector).
  static let outputLimit = 1 << 20

  func run(_ argv: [String], _ profile: JSON?) async -> (exit: Int32, documents: [JSON]) {
    let parsed: ParsedArguments
    let globals: GlobalOptions
    do {
      parsed = try ArgumentParser.parse(argv)
      globals = try CaptureCLI.globalOptions(parsed)
    } catch {
      return Self.failure(CaptureError(.invalidParameter, error.message))
    }
    guard let command = parsed.command else {
      return Self.failure(CaptureError(.invalidParameter, "no command given"))
    }
    // The allow-list judged the first word (CommandService); it must be the command the parser found.
    guard command.name == argv.first else {
      return Self.failure(
        CaptureError(.invalidParameter, "a remote command starts with the command's name ('\(command.name)')")
      )
    }
    if let refusal = Self.refusal(parsed, hasProfile: profile != nil) { return Self.failure(refusal) }
    var remoteGlobals = globals
    remoteGlobals.json = true
    remoteGlobals.quiet = true
    let documents = DocumentCollector(limit: Self.outputLimit)
    let output = Output(collecting: documents)
    // refusal() made sure a profile goes with set --from -: the `-` reads it, not capture's stdin.
    let remote = Context(
      globals: remoteGlobals, output: output, state: context.state,
      system: EngineHeldSystem(base: context.system, engine: engine, state: context.state),
      frontEnds: context.frontEnds, standardInput: profile.map { Array($0.serialized.utf8) })
    // The deadline (CommandService) cancels this task: the command's own signal handler is called, as
    // SIGINT would be on the command line (trigger closes its device), and its blocking work, which
    // runs on the blocking executor, sees the cancellation.
    let cut = Interruption.Cut()
    let exit = await withTaskCancellationHandler {
      await Interruption.$isNested.withValue(true) {
        await Interruption.$cut.withValue(cut) { await CaptureCLI.run(command, parsed, remote) }
      }
    } onCancel: {
      cut.fire()
    }
    return (exit, documents.documents)
  }

  /// Why a parsed remote command may not run, or nil. Judged on what the parser made of the words, so
  /// every spelling it takes (`--from PATH`, `--from=PATH`, a value after `--`) is judged alike:
  /// - no option that names a local file, directory or device (`--from`, `--image`, `--dir`,
  ///   `--camera`, `--output`, every `.file`/`.directory` option the command tree has) and none that
  ///   runs a program: a remote peer must not read or block on this host's files. The one exception
  ///   is `set --from -` with the profile inline in the request (`"profile"`), which becomes a private
  ///   temporary file; without an inline profile, `-` would be capture's own standard input;
  /// - no `--help` or `--version` (they print the command line's text, not a `--json` document).
  static func refusal(_ parsed: ParsedArguments, hasProfile: Bool) -> CaptureError? {
    if parsed.flag("help") || parsed.flag("version") {
      return CaptureError(.invalidParameter, "--help and --version are not taken remotely")
    }
    let options = CommandTree.globalOptions + (parsed.command?.options ?? [])
    let inlineProfile = parsed.command?.name == "set" && parsed.allValues("from") == ["-"]
    for spec in options where !parsed.allValues(spec.long).isEmpty {
      let local: String
      switch spec.kind {
      case .file: local = "a file or device"
      case .directory: local = "a directory"
      case .command: local = "a program"
      default: continue
      }
      if spec.long == "from" && inlineProfile && hasProfile { continue }
      if spec.long == "from" {
        return CaptureError(
          .invalidParameter,
          "a remote set --from takes the profile inline: \"argv\":[\"set\",DEVICE,\"--from\",\"-\"] and \"profile\":{...}"
        )
      }
      return CaptureError(
        .invalidParameter, "--\(spec.long) names \(local) on this host and is not taken remotely")
    }
    if hasProfile && !inlineProfile {
      return CaptureError(.invalidParameter, "\"profile\" goes with set DEVICE --from -")
    }
    return nil
  }

  static func failure(_ error: CaptureError) -> (exit: Int32, documents: [JSON]) {
    (ExitStatus.of(error.code), [Render.errorDocument(error)])
  }
}

/// The drivers as a remote command sees them: a device the engine holds is lent, not opened again.
struct EngineHeldSystem: DeviceSystem {
  let base: any DeviceSystem
  let engine: CaptureEngine
  let state: StateStore

  func open(_ request: OpenRequest, state: StateStore) async throws(CaptureError) -> any Device {
    var selector = request.selector
    if case .name(let name) = selector, let remembered = try? state.load().device(named: name),
      let resolved = try? DeviceSelector.parse(remembered.id)
    {
      selector = resolved
    }
    if let held = engine.openDevices.first(where: { Self.matches($0.info, selector) }) {
      return LentDevice(held, engine: engine)
    }
    return try await base.open(request, state: state)
  }

  static func matches(_ info: DeviceInfo, _ selector: DeviceSelector) -> Bool {
    if info.id == selector.description { return true }
    if let parsed = try? DeviceSelector.parse(info.id), parsed == selector { return true }
    switch selector {
    case .serial(let path, _), .hid(let path): return info.id == path || info.id.hasSuffix(path)
    case .name(let name): return info.name == name
    default: return false
    }
  }

  func discover(_ request: DiscoveryRequest, found: @escaping @Sendable (DiscoveredDeviceInfo) -> Void)
    async throws(CaptureError) -> Int
  { try await base.discover(request, found: found) }
  func bluetoothdReachable(adapter: String?) async -> Bool {
    await base.bluetoothdReachable(adapter: adapter)
  }
  func inquire(adapter: String?, seconds: Double, all: Bool, note: (String) -> Void)
    async throws(CaptureError)
    -> [DiscoveredDeviceInfo]
  { try await base.inquire(adapter: adapter, seconds: seconds, all: all, note: note) }
  func connect(address: String, adapter: String?, pair: Bool, timeout: Duration?) async throws(CaptureError)
    -> BluetoothDeviceInfo
  { try await base.connect(address: address, adapter: adapter, pair: pair, timeout: timeout) }
  func pairClassic(address: String, adapter: String?, timeout: Duration?) async throws(CaptureError) -> String
  {
    try await base.pairClassic(address: address, adapter: adapter, timeout: timeout)
  }
  func probeClassic(address: String, request: OpenRequest, name: String?) async throws(CaptureError)
    -> ClassicProbe
  { try await base.probeClassic(address: address, request: request, name: name) }
  func remove(address: String, adapter: String?) async throws(CaptureError) -> BluetoothDeviceInfo? {
    try await base.remove(address: address, adapter: adapter)
  }
  func partnership(address: String, adapter: String?) async throws(CaptureError) -> PartnershipInfo {
    try await base.partnership(address: address, adapter: adapter)
  }
  func connected(adapter: String?) async throws(CaptureError) -> [BluetoothDeviceInfo] {
    try await base.connected(adapter: adapter)
  }
  func accept(channel: Int, request: OpenRequest) async throws(CaptureError) -> any Device {
    try await base.accept(channel: channel, request: request)
  }
  func pairingBarcodes(adapter: String?) async throws(CaptureError) -> PairingBarcodes {
    try await base.pairingBarcodes(adapter: adapter)
  }
  func inputDevices() -> (devices: [InputDeviceInfo], unreadable: [String]) { base.inputDevices() }
  func cameras() -> (cameras: [CameraInfo], unreadable: [String]) { base.cameras() }
  func diagnose(_ request: DiagnosisRequest) async -> [HostCheck] { await base.diagnose(request) }
}

/// An engine's device lent to a remote command: everything goes to the device but `close`, which only
/// ends the command's view of it; its events are the engine's for that device, from the moment the
/// command asks for them (trigger's decoded data).
final class LentDevice: Device {
  let device: any Device
  let engine: CaptureEngine
  /// The subscriptions `events` made, and whether the command closed its view: a stream asked for
  /// after the close (trigger's drain task may ask after trigger has already closed the device) ends at
  /// once instead of subscribing for ever and holding the command.
  private let state = Mutex<(subscriptions: [EngineSubscription], closed: Bool)>(([], false))

  init(_ device: any Device, engine: CaptureEngine) {
    self.device = device
    self.engine = engine
  }

  var info: DeviceInfo { device.info }
  var capabilities: Capabilities { device.capabilities }
  func get(_ property: PropertyID, argument: PropertyValue) async throws(CaptureError) -> PropertyValue {
    try await device.get(property, argument: argument)
  }
  func set(_ property: PropertyID, _ value: PropertyValue) async throws(CaptureError) {
    try await device.set(property, value)
  }
  func trigger(_ action: Trigger) async throws(CaptureError) { try await device.trigger(action) }
  func getRaw(_ name: String) async throws(CaptureError) -> String { try await device.getRaw(name) }
  func setRaw(_ name: String, _ value: String) async throws(CaptureError) {
    try await device.setRaw(name, value)
  }
  func keepNotifications(_ bits: Notifications) async { await device.keepNotifications(bits) }

  var events: AsyncStream<Event> {
    if state.withLock({ $0.closed }) { return AsyncStream { $0.finish() } }
    // A client of the engine like any other: dropped, not waited for, if the command stops reading.
    let subscription = engine.subscribe("a remote command", policy: .dropWhenBehind(limit: 256))
    let kept = state.withLock { s -> Bool in
      guard !s.closed else { return false }
      s.subscriptions.append(subscription)
      return true
    }
    guard kept else {
      subscription.cancel()
      return AsyncStream { $0.finish() }
    }
    let id = device.info.id
    return AsyncStream { continuation in
      let task = Task {
        for await event in subscription.events where event.device.id == id { continuation.yield(event) }
        continuation.finish()
      }
      continuation.onTermination = { _ in task.cancel() }
    }
  }

  func close() async {
    let subscriptions = state.withLock { s -> [EngineSubscription] in
      s.closed = true
      defer { s.subscriptions = [] }
      return s.subscriptions
    }
    for subscription in subscriptions { subscription.cancel() }
  }
}
