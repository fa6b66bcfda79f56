import CaptureCore

/// The front ends besides the command line's own printer, as the composition root (the `capture`
/// executable) registers them, the way it passes the drivers (`DeviceSystem`): the command line
/// imports neither CaptureService nor CaptureMQTT (docs/architecture.md §2). Tests pass their own, or
/// none.
public struct FrontEnds: Sendable {
  /// `--mqtt URL` and its options, read and checked as usage (thrown: ESKT_INVALIDPARAMETER and the
  /// message), into what makes the fleet front end once the run has its engine; nil without --mqtt.
  public var fleet: (@Sendable (any FrontEndOptions) throws(CaptureError) -> (any FrontEndRequest)?)?
  /// `capture serve`'s Capture service, bound to the address given.
  public var service: (@Sendable (ServiceAddress, FrontEndLog) -> any FrontEnd)?
  /// `capture fleet`'s controller, made from `--mqtt URL` and its TLS and password options (checked
  /// as usage: thrown ESKT_INVALIDPARAMETER); it connects on first use.
  public var controller:
    (@Sendable (any FrontEndOptions, FrontEndLog) throws(CaptureError) -> any FleetControl)?

  public init(
    fleet: (@Sendable (any FrontEndOptions) throws(CaptureError) -> (any FrontEndRequest)?)? = nil,
    service: (@Sendable (ServiceAddress, FrontEndLog) -> any FrontEnd)? = nil,
    controller: (@Sendable (any FrontEndOptions, FrontEndLog) throws(CaptureError) -> any FleetControl)? = nil
  ) {
    self.fleet = fleet
    self.service = service
    self.controller = controller
  }

  /// No front end but the printer: `--mqtt` is a usage error, `serve` is not supported.
  public static let none = FrontEnds()
}

/// Where `capture serve` listens and whom it admits (`--listen`, `--allow-origin`).
public struct ServiceAddress: Sendable {
  public var host: String
  public var port: UInt16
  public var allowedOrigins: [String]
}

/// The words of `--mqtt` and its options, read for the fleet front end (FleetOptions in CaptureMQTT).
struct FleetWords: FrontEndOptions {
  let parsed: ParsedArguments

  /// `--mqtt-commands` is a flag; `--mqtt-commands all` reads as its value `all` (the word is taken
  /// from the operands, `operands`).
  func value(_ long: String) -> String? {
    if long == "mqtt-commands" { return parsed.flag(long) && Self.commandsAll(parsed) ? "all" : nil }
    return parsed.value(long)
  }

  func flag(_ long: String) -> Bool { parsed.flag(long) }

  func count(_ long: String) throws(CaptureError) -> Int? {
    guard let text = parsed.value(long) else { return nil }
    do { return try Values.count(text, option: "--\(long)", command: parsed.commandName) } catch {
      throw CaptureError(.invalidParameter, error.message)
    }
  }

  func duration(_ long: String) throws(CaptureError) -> Duration? {
    guard let text = parsed.value(long) else { return nil }
    do { return try Values.duration(text, option: "--\(long)", command: parsed.commandName) } catch {
      throw CaptureError(.invalidParameter, error.message)
    }
  }

  /// The fleet front end's request (nil without --mqtt); its problems are usage errors.
  static func request(_ parsed: ParsedArguments, _ frontEnds: FrontEnds) throws(UsageError)
    -> (any FrontEndRequest)?
  {
    guard let fleet = frontEnds.fleet else {
      if parsed.value("mqtt") != nil { throw parsed.usage("--mqtt: this capture has no MQTT front end") }
      return nil
    }
    do { return try fleet(FleetWords(parsed: parsed)) } catch { throw parsed.usage(error.message) }
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

  /// The fleet front end of one run, with the command line's remote-command runner. `judged`:
  /// listen's `--confirm` tells each device its verdict, so a refused code is not told bad twice.
  static func frontEnd(
    _ request: any FrontEndRequest, engine: CaptureEngine, judged: Bool = false, context: Context
  ) -> any FrontEnd {
    let output = context.output
    return request.frontEnd(
      FrontEndContext(
        engine: engine, store: context.state, runner: RemoteRunner(context: context, engine: engine).run,
        judged: judged, log: output.frontEndLog))
  }
}

extension Output {
  /// A front end's diagnostics, on stderr as the command line's own.
  var frontEndLog: FrontEndLog {
    FrontEndLog(warn: { self.warn($0) }, info: { self.info($0) }, raw: { self.raw(stderr: $0) })
  }
}
