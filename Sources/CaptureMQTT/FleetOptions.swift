import CaptureCore

/// `--mqtt URL` and its options on listen and serve (docs/fleet.md), read and checked as usage: every
/// problem is ESKT_INVALIDPARAMETER with the message the command line shows (exit 18).
public struct FleetOptions: FrontEndRequest {
  public var url: BrokerURL
  public var hostID: String?
  public var caFile: String?
  public var certFile: String?
  public var keyFile: String?
  public var passwordFile: String?
  public var spoolMax: Int
  public var confirmDelivery: FleetSettings.ConfirmDelivery?
  public var commands: FleetSettings.Commands
  public var commandTimeout: Duration

  /// The options `--mqtt` brings, besides `--mqtt` itself and the flag `--mqtt-commands`.
  static let others = [
    "mqtt-ca", "mqtt-cert", "mqtt-key", "mqtt-password-file", "mqtt-host-id", "mqtt-spool-max",
    "confirm-delivery", "mqtt-command-timeout",
  ]

  /// nil without --mqtt (and then no other --mqtt option may be given). `--mqtt-commands all` is the
  /// flag with the value `all` (the command line takes the word from the operands).
  public init?(_ options: any FrontEndOptions) throws(CaptureError) {
    func usage(_ message: String) -> CaptureError { CaptureError(.invalidParameter, message) }
    guard let text = options.value("mqtt") else {
      if let given = Self.others.first(where: { options.value($0) != nil })
        ?? (options.flag("mqtt-commands") ? "mqtt-commands" : nil)
      {
        throw usage("--\(given) works with --mqtt URL")
      }
      return nil
    }
    do { url = try BrokerURL.parse(text) } catch { throw usage(error.message) }
    hostID = options.value("mqtt-host-id")
    if let hostID, let problem = HostIdentity.problem(hostID) {
      throw usage("--mqtt-host-id: \(problem)")
    }
    caFile = options.value("mqtt-ca")
    certFile = options.value("mqtt-cert")
    keyFile = options.value("mqtt-key")
    passwordFile = options.value("mqtt-password-file")
    spoolMax = try options.count("mqtt-spool-max") ?? FleetSettings.defaultSpoolMax
    if let when = options.value("confirm-delivery") {
      guard let value = FleetSettings.ConfirmDelivery(rawValue: when) else {
        throw usage("--confirm-delivery takes spool or broker, not '\(when)'")
      }
      confirmDelivery = value
    } else {
      confirmDelivery = nil
    }
    commands =
      !options.flag("mqtt-commands") ? .off : options.value("mqtt-commands") == "all" ? .all : .standard
    if options.value("mqtt-command-timeout") != nil {
      guard commands != .off else { throw usage("--mqtt-command-timeout works with --mqtt-commands") }
      commandTimeout = try options.duration("mqtt-command-timeout") ?? CommandLimits.defaultDeadline
    } else {
      commandTimeout = CommandLimits.defaultDeadline
    }
    // The options between themselves, before anything is read.
    let check = FleetSettings(
      url: url, hostID: "check", caFile: caFile, certFile: certFile, keyFile: keyFile,
      password: passwordFile == nil ? nil : "", spoolMax: spoolMax, commandTimeout: commandTimeout)
    do { try check.validate() } catch { throw usage(error.message) }
  }

  /// The settings, with what needs reading: the host id (/etc/machine-id) and the password file.
  public func settings(warn: (String) -> Void) throws(CaptureError) -> FleetSettings {
    let host = try HostIdentity.resolve(hostID)
    let password = try PasswordFile.password(passwordFile, warn: warn)
    return FleetSettings(
      url: url, hostID: host, caFile: caFile, certFile: certFile, keyFile: keyFile, password: password,
      spoolMax: spoolMax, confirmDelivery: confirmDelivery, commands: commands, commandTimeout: commandTimeout
    )
  }

  /// The fleet front end these options ask for; remote commands run through `context.runner` when
  /// `--mqtt-commands` allows them.
  public func frontEnd(_ context: FrontEndContext) -> any FrontEnd {
    let log = context.log
    return FleetFrontEnd(
      .init(
        settings: { () throws(CaptureError) in try settings(warn: log.warn) }, store: context.store,
        runner: commands == .off ? nil : context.runner, judged: context.judged, warn: log.warn,
        info: log.info))
  }
}
