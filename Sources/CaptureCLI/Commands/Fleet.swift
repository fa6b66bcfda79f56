import CaptureCore
import CaptureMQTT
import MosquittoClient
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `--mqtt URL` and its options on listen and serve (docs/fleet.md), read and checked as usage.
struct FleetOptions: Sendable {
  var url: BrokerURL
  var hostID: String?
  var caFile: String?
  var certFile: String?
  var keyFile: String?
  var passwordFile: String?
  var spoolMax: Int
  var confirmDelivery: FleetSettings.ConfirmDelivery?
  var commands: FleetSettings.Commands
  var commandTimeout: Duration

  /// nil without --mqtt (and then no other --mqtt option may be given).
  init?(_ parsed: ParsedArguments) throws(UsageError) {
    let others = [
      "mqtt-ca", "mqtt-cert", "mqtt-key", "mqtt-password-file", "mqtt-host-id", "mqtt-spool-max",
      "confirm-delivery", "mqtt-command-timeout",
    ]
    guard let text = parsed.value("mqtt") else {
      if let given = others.first(where: { parsed.value($0) != nil })
        ?? (parsed.flag("mqtt-commands") ? "mqtt-commands" : nil)
      {
        throw parsed.usage("--\(given) works with --mqtt URL")
      }
      return nil
    }
    do { url = try BrokerURL.parse(text) } catch { throw parsed.usage(error.message) }
    hostID = parsed.value("mqtt-host-id")
    if let hostID, let problem = HostIdentity.problem(hostID) {
      throw parsed.usage("--mqtt-host-id: \(problem)")
    }
    caFile = parsed.value("mqtt-ca")
    certFile = parsed.value("mqtt-cert")
    keyFile = parsed.value("mqtt-key")
    passwordFile = parsed.value("mqtt-password-file")
    spoolMax =
      try parsed.value("mqtt-spool-max").map { (t: String) throws(UsageError) in
        try Values.count(t, option: "--mqtt-spool-max", command: parsed.commandName)
      } ?? FleetSettings.defaultSpoolMax
    if let when = parsed.value("confirm-delivery") {
      guard let value = FleetSettings.ConfirmDelivery(rawValue: when) else {
        throw parsed.usage("--confirm-delivery takes spool or broker, not '\(when)'")
      }
      confirmDelivery = value
    } else {
      confirmDelivery = nil
    }
    commands = !parsed.flag("mqtt-commands") ? .off : Self.commandsAll(parsed) ? .all : .standard
    if let text = parsed.value("mqtt-command-timeout") {
      guard commands != .off else { throw parsed.usage("--mqtt-command-timeout works with --mqtt-commands") }
      commandTimeout = try Values.duration(
        text, option: "--mqtt-command-timeout", command: parsed.commandName)
    } else {
      commandTimeout = CommandLimits.defaultDeadline
    }
    // The options between themselves, before anything is read.
    let check = FleetSettings(
      url: url, hostID: "check", caFile: caFile, certFile: certFile, keyFile: keyFile,
      password: passwordFile == nil ? nil : "", spoolMax: spoolMax, commandTimeout: commandTimeout)
    do { try check.validate() } catch { throw parsed.usage(error.message) }
  }

  /// `--mqtt-commands all`: the flag followed by the word `all` (taken from the operands).
  static func commandsAll(_ parsed: ParsedArguments) -> Bool {
    guard let i = parsed.arguments.firstIndex(of: "--mqtt-commands") else { return false }
    return i + 1 < parsed.arguments.count && parsed.arguments[i + 1] == "all"
  }

  /// The operands without the `all` of `--mqtt-commands all`.
  static func operands(_ parsed: ParsedArguments) -> [String] {
    var operands = parsed.operands
    if parsed.flag("mqtt-commands"), commandsAll(parsed), let i = operands.firstIndex(of: "all") {
      operands.remove(at: i)
    }
    return operands
  }

  /// The settings, with what needs reading: the host id (/etc/machine-id) and the password file.
  func settings(_ output: Output) throws(CaptureError) -> FleetSettings {
    let host = try HostIdentity.resolve(hostID)
    var password: String?
    if let passwordFile {
      let read = try PasswordFile.read(passwordFile)
      if let warning = read.warning { output.warn(warning) }
      password = read.password
    }
    return FleetSettings(
      url: url, hostID: host, caFile: caFile, certFile: certFile, keyFile: keyFile, password: password,
      spoolMax: spoolMax, confirmDelivery: confirmDelivery, commands: commands, commandTimeout: commandTimeout
    )
  }
}

extension MQTTConnection: MQTTLink {}

/// One running fleet front end: the spool and publisher, the broker connection, the engine lane.
final class FleetRun: Sendable {
  let fleet: Fleet
  let connection: MQTTConnection
  private let output: Output
  private let fatalError = Mutex<CaptureError?>(nil)

  /// Opens the spool, connects (in the background: an unreachable broker is retried, never fatal) and
  /// subscribes to the engine on the devices' lanes: the spool writer paces the devices (docs/engine.md
  /// §3). `sink` shows a refused code as an error event in listen's stream. A refused code gets a bad
  /// data confirmation where the device takes one, unless listen's `--confirm` judges the codes
  /// (`judged`: the device is told once, by the judge).
  static func start(
    _ options: FleetOptions, engine: CaptureEngine, sink: EventSink?, judged: Bool = false, context: Context
  ) async throws(CaptureError) -> FleetRun {
    let output = context.output
    let box = Mutex<FleetRun?>(nil)
    let hooks = Fleet.Hooks(
      run: options.commands == .off ? nil : RemoteRunner(context: context, engine: engine).run,
      warn: { output.warn($0) },
      fatal: { error in
        box.withLock { $0 }?.failed(error)
        Task { await engine.stop() }
      })
    // The host id, the password file and the spool's recovery (reading every segment) are file work:
    // on the blocking executor, not the cooperative pool.
    let location = try context.state.resolvedLocation()
    let (settings, fleet) = try await BlockingExecutor.shared.run {
      _ throws(CaptureError) -> (FleetSettings, Fleet) in
      let settings = try options.settings(output)
      return (settings, try Fleet(settings: settings, stateDirectory: location, hooks: hooks))
    }
    let connection: MQTTConnection
    do {
      connection = try MQTTConnection(endpoint: settings.endpoint, will: fleet.will, delegate: fleet)
    } catch {
      throw Fleet.refusal(error, settings)
    }
    let run = FleetRun(fleet: fleet, connection: connection, output: output)
    box.withLock { $0 = run }
    try fleet.connect(link: connection)
    connection.start()
    let confirm = settings.confirmDelivery
    _ = engine.subscribe("the MQTT spool") { event in
      let delivery = await fleet.take(event)
      guard case .decodedData(let data) = event.payload else { return }
      if case .refused(let error) = delivery {
        let refused = CaptureError(
          error.code, "\(event.device.name): \(data.plainLine) not sent: \(error.message)")
        if let sink {
          sink.handle(Event(time: .now(), device: event.device, payload: .error(refused)))
        } else {
          output.error(refused, withObject: false)
        }
      }
      let refused = delivery != .safe
      guard confirm != nil || (refused && !judged), let device = engine.device(id: event.device.id),
        device.capabilities.canWrite(.dataConfirmationDevice)
      else { return }
      let good = delivery == .safe
      do {
        try await device.set(
          .dataConfirmationDevice, .ulong((good ? DataConfirmation.good : DataConfirmation.bad).packed))
      } catch {
        output.warn(
          "\(event.device.name): could not tell the device \(good ? "good" : "bad") for \(data.plainLine)")
      }
    }
    return run
  }

  private init(fleet: Fleet, connection: MQTTConnection, output: Output) {
    self.fleet = fleet
    self.connection = connection
    self.output = output
  }

  private func failed(_ error: CaptureError) {
    fatalError.withLock { if $0 == nil { $0 = error } }
  }

  /// The broker refused us for good (a bad password): the command's error.
  var failure: CaptureError? { fatalError.withLock { $0 } }

  /// A clean stop: the spool saved (the PUBACKs of what is published awaited briefly), the retained
  /// status set offline, a clean DISCONNECT (no Will).
  func stop() async {
    await fleet.stop()
    await connection.stop(final: fleet.offline)
    let stats = fleet.publisher.statistics
    output.info(
      "MQTT: \(stats.published) published, \(stats.acknowledged) acknowledged, \(stats.fsyncs) fsyncs in \(stats.batches) batches, \(fleet.publisher.outstanding) left in the spool"
    )
  }
}
