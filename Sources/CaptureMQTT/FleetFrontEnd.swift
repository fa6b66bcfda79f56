import CaptureCore
import MosquittoClient
import Synchronization

extension MQTTConnection: MQTTLink {}

/// `--mqtt` as a front end of the engine (docs/fleet.md): the spool and publisher, the broker
/// connection and the engine lane, started and stopped by the runner like every front end
/// (`FrontEnd`, docs/engine.md §1).
public final class FleetFrontEnd: FrontEnd {
  public struct Configuration: Sendable {
    /// The settings, with what needs reading (the host id, the password file): called once, on the
    /// blocking executor, when the front end starts.
    public var settings: @Sendable () throws(CaptureError) -> FleetSettings
    /// The state directory the spool lives under.
    public var store: StateStore
    /// Runs one remote command (nil: no remote commands).
    public var runner: CommandService.Runner?
    /// Someone else (listen's `--confirm`) tells each device its verdict on a code: a refused code is
    /// then not told bad here (the device is told once).
    public var judged: Bool
    public var warn: @Sendable (String) -> Void
    /// -v lines (the publisher's statistics at the end).
    public var info: @Sendable (String) -> Void

    public init(
      settings: @escaping @Sendable () throws(CaptureError) -> FleetSettings, store: StateStore,
      runner: CommandService.Runner?, judged: Bool, warn: @escaping @Sendable (String) -> Void,
      info: @escaping @Sendable (String) -> Void
    ) {
      self.settings = settings
      self.store = store
      self.runner = runner
      self.judged = judged
      self.warn = warn
      self.info = info
    }
  }

  private let configuration: Configuration
  private struct Running: Sendable {
    let fleet: Fleet
    let connection: MQTTConnection
  }
  private let running = Mutex<Running?>(nil)
  private let fatalError = Mutex<CaptureError?>(nil)

  public init(_ configuration: Configuration) { self.configuration = configuration }

  /// Opens the spool, connects (in the background: an unreachable broker is retried, never fatal) and
  /// subscribes to the engine on the devices' lanes: the spool writer paces the devices (docs/engine.md
  /// §3). A refused code is reported to the run (an error event in listen's stream) and gets a bad
  /// data confirmation where the device takes one, unless another judges the codes (`judged`).
  public func start(_ engine: CaptureEngine, host: FrontEndHost) async throws(CaptureError) {
    let configuration = self.configuration
    let hooks = Fleet.Hooks(
      run: configuration.runner, warn: configuration.warn,
      fatal: { [weak self] error in
        self?.fatalError.withLock { if $0 == nil { $0 = error } }
        host.finish()
      })
    // The host id, the password file and the spool's recovery (reading every segment) are file work:
    // on the blocking executor, not the cooperative pool.
    let location = try configuration.store.resolvedLocation()
    let (settings, fleet) = try await BlockingExecutor.shared.run {
      _ throws(CaptureError) -> (FleetSettings, Fleet) in
      let settings = try configuration.settings()
      return (settings, try Fleet(settings: settings, stateDirectory: location, hooks: hooks))
    }
    let connection: MQTTConnection
    do {
      connection = try MQTTConnection(endpoint: settings.endpoint, will: fleet.will, delegate: fleet)
    } catch {
      throw Fleet.refusal(error, settings)
    }
    try fleet.connect(link: connection)
    connection.start()
    // Stopped (by `stop`) only once started: a start that failed before holds nothing to stop.
    running.withLock { $0 = Running(fleet: fleet, connection: connection) }
    let confirm = settings.confirmDelivery
    let judged = configuration.judged
    let warn = configuration.warn
    _ = engine.subscribe("the MQTT spool") { event in
      let delivery = await fleet.take(event)
      guard case .decodedData(let data) = event.payload else { return }
      if case .refused(let error) = delivery {
        let refused = CaptureError(
          error.code, "\(event.device.name): \(data.plainLine) not sent: \(error.message)")
        host.report(Event(time: .now(), device: event.device, payload: .error(refused)))
      }
      let refused = delivery != .safe
      guard confirm != nil || (refused && !judged),
        let target = engine.dataConfirmationTarget(id: event.device.id)
      else { return }
      let good = delivery == .safe
      do {
        try await target.tell(good: good)
      } catch {
        warn("\(event.device.name): could not tell the device \(good ? "good" : "bad") for \(data.plainLine)")
      }
    }
  }

  /// The broker refused us for good (a bad password): the command's error.
  public var failure: CaptureError? { fatalError.withLock { $0 } }

  /// A clean stop: the spool saved (the PUBACKs of what is published awaited briefly), the retained
  /// status set offline, a clean DISCONNECT (no Will).
  public func stop() async {
    guard let run = running.withLock({ $0 }) else { return }
    await run.fleet.stop()
    await run.connection.stop(final: run.fleet.offline)
    let stats = run.fleet.publisher.statistics
    configuration.info(
      "MQTT: \(stats.published) published, \(stats.acknowledged) acknowledged, \(stats.fsyncs) fsyncs in \(stats.batches) batches, \(run.fleet.publisher.outstanding) left in the spool"
    )
  }
}
