import CaptureContract
import CaptureCore

/// Global options, validated once.
struct GlobalOptions: Sendable {
  var json = false
  var quiet = false
  var verbose = false
  var timeout: Duration?
  var adapter: String?
  var noColor = false
}

/// What a command needs from the outside world; tests inject their own.
struct Context: Sendable {
  var globals: GlobalOptions
  var output: Output
  var state: StateStore
  /// The drivers: opening devices and device management. The composition root (the `capture`
  /// executable) passes the real ones; tests pass fakes.
  var system: any DeviceSystem
  /// The other front ends (the Capture service, the MQTT fleet), as the composition root registered
  /// them.
  var frontEnds: FrontEnds = .none
  /// What a `-` operand reads instead of capture's own standard input: a remote command's inline
  /// profile (`set --from -` with "profile", docs/fleet.md §5), handed over as bytes. nil: stdin.
  var standardInput: [UInt8]? = nil
}

/// How a command ended, for `CaptureCLI.run` to render: the status, and the errors that made it (a
/// command never prints its own failure). A status without errors may still be an error code that was
/// already shown as an event of a stream (listen, trigger).
struct CommandOutcome: Sendable {
  var status: ResultCode
  /// In the order met: each one's `capture: NAME (code): message` line on stderr.
  var errors: [CaptureError] = []
  /// The command's own --json document carries the first error (get's `error` key), so no separate
  /// `{"error":{...}}` object goes to stdout.
  var isDocumented = false

  static let success = CommandOutcome(status: .noError)
  static func status(_ code: ResultCode) -> CommandOutcome { CommandOutcome(status: code) }
  /// The command failed with `error`: its line, and with --json its error object on stdout.
  static func failure(_ error: CaptureError) -> CommandOutcome {
    CommandOutcome(status: error.code, errors: [error])
  }
  /// Several failures (get of several properties); the status is the first one's code.
  static func failures(_ errors: [CaptureError], documented: Bool) -> CommandOutcome {
    CommandOutcome(status: errors.first?.code ?? .noError, errors: errors, isDocumented: documented)
  }
}

/// The command line's entry point: parse → options → run → exit status, with errors rendered once here.
public enum CaptureCLI {
  /// What the process needs before it opens any descriptor or does anything that takes time (the
  /// executable calls it first thing): fds 0–2 held, SIGPIPE ignored (StandardDescriptors), and
  /// SIGINT, SIGTERM and SIGHUP caught and held until the command says what they mean for it
  /// (Interruption), so a signal in the process's first instant never kills listen or serve.
  /// `main` calls it again, harmlessly.
  public static func prepareProcess() {
    StandardDescriptors.reserve()
    StandardDescriptors.ignoreBrokenPipes()
    Interruption.install()
  }

  /// Runs the command line and returns the exit status, a failed stdout write included (`settle`).
  public static func main(_ arguments: [String], system: any DeviceSystem, frontEnds: FrontEnds = .none) async
    -> Int32
  {
    await main(rawArguments: arguments.map { Array($0.utf8) }, system: system, frontEnds: frontEnds)
  }

  /// The entry point for argv as the kernel gave it (`CommandLine.unsafeArgv`): bytes, since a file
  /// name need not be UTF-8 and `CommandLine.arguments` replaces such bytes with U+FFFD. Returns the
  /// exit status, a failed stdout write included (`settle`).
  public static func main(rawArguments: [[UInt8]], system: any DeviceSystem, frontEnds: FrontEnds = .none)
    async -> Int32
  {
    prepareProcess()
    let status = Interruption.settle(await dispatch(rawArguments, system: system, frontEnds: frontEnds))
    return Output(mode: .plain, quiet: false, verbose: false, noColor: true).settle(status)
  }

  /// The commands that end the documented way on SIGINT/SIGTERM rather than by the signal.
  static let signalHandlingCommands: Set<String> = ["listen", "serve", "trigger"]

  static func dispatch(_ rawArguments: [[UInt8]], system: any DeviceSystem, frontEnds: FrontEnds) async
    -> Int32
  {
    let arguments = rawArguments.map { String(decoding: $0, as: UTF8.self) }
    let parsed: ParsedArguments
    do {
      parsed = try ArgumentParser.parse(raw: rawArguments)
    } catch {
      return usageFailure(
        error, json: arguments.contains("--json"), noColor: arguments.contains("--no-color"),
        arguments: arguments)
    }
    // --version wins wherever it appears, as --help does.
    if parsed.flag("version") {
      Output(mode: .plain, quiet: false, verbose: false).line("capture \(CaptureVersion.string)")
      return 0
    }
    let globals: GlobalOptions
    do { globals = try globalOptions(parsed) } catch {
      return usageFailure(
        error, json: parsed.flag("json"), noColor: parsed.flag("no-color"), arguments: arguments)
    }
    let output = Output(
      mode: globals.json ? .json : .plain, quiet: globals.quiet, verbose: globals.verbose,
      noColor: globals.noColor)
    if parsed.wantsHelp {
      if let operandCommand = parsed.command == nil ? parsed.operands.first : nil {
        guard let spec = CommandTree.command(named: operandCommand) else {
          return usageFailure(
            UsageError(message: ArgumentParser.unknownCommandMessage(operandCommand)), json: globals.json,
            noColor: globals.noColor, arguments: arguments)
        }
        output.raw(stdout: Help.command(spec))
        return 0
      }
      output.raw(stdout: parsed.command.map(Help.command) ?? Help.topLevel())
      return 0
    }
    guard let command = parsed.command else {
      return usageFailure(
        UsageError(message: "no command given"), json: globals.json, noColor: globals.noColor)
    }
    // listen, serve and trigger handle SIGINT, SIGTERM and SIGHUP themselves (they claim them in their
    // run); every other command gets the default actions back now, before it does anything.
    if !Self.signalHandlingCommands.contains(command.name) { Interruption.useDefaultActions() }
    let context = Context(
      globals: globals, output: output, state: StateStore.fromEnvironment(warn: { output.warn($0) }),
      system: system, frontEnds: frontEnds)
    return await run(command, parsed, context)
  }

  /// Runs one command and renders how it ended: the only place a command's errors are shown (errors
  /// inside an event stream are events, shown by the stream as they happen).
  static func run(_ command: CommandSpec, _ parsed: ParsedArguments, _ context: Context) async -> Int32 {
    do {
      let outcome: CommandOutcome
      switch command.name {
      case "discover":
        outcome = .status(try await DiscoverCommand.run(try DiscoverCommand.Options(parsed), context))
      case "connect":
        outcome = .status(try await ConnectCommand.run(try ConnectCommand.Options(parsed), context))
      case "remove":
        outcome = .status(try await RemoveCommand.run(try RemoveCommand.Options(parsed), context))
      case "list": outcome = .status(try await ListCommand.run(try ListCommand.Options(parsed), context))
      case "trigger": outcome = try await TriggerCommand.run(try TriggerCommand.Options(parsed), context)
      case "get": outcome = try await GetCommand.run(try GetCommand.Options(parsed), context)
      case "set": outcome = try await SetCommand.run(try SetCommand.Options(parsed), context)
      case "listen":
        outcome = try await ListenCommand.run(try ListenCommand.Options(parsed, context.frontEnds), context)
      case "serve":
        outcome = try await ServeCommand.run(try ServeCommand.Options(parsed, context.frontEnds), context)
      case "partnership":
        outcome = .status(try await PartnershipCommand.run(try PartnershipCommand.Options(parsed), context))
      case "fleet": outcome = try await FleetCommand.run(try FleetCommand.Options(parsed, context), context)
      case "doctor": outcome = await DoctorCommand.run(try DoctorCommand.Options(parsed), context)
      case "__generate-docs": outcome = .status(try GenerateDocsCommand.run(parsed, context))
      default: throw UsageError(message: ArgumentParser.unknownCommandMessage(command.name))
      }
      for (index, error) in outcome.errors.enumerated() {
        context.output.error(
          Elision.error(error, arguments: parsed.arguments), withObject: index == 0 && !outcome.isDocumented)
      }
      return context.output.settle(ExitStatus.of(outcome.status))
    } catch let error as UsageError {
      return usageFailure(
        error, json: context.globals.json, noColor: context.globals.noColor, arguments: parsed.arguments,
        output: context.output)
    } catch let error as CaptureError {
      context.output.error(Elision.error(error, arguments: parsed.arguments))
      // An invalid parameter is a usage error wherever it was found: the usage follows the message.
      if error.code == .invalidParameter { context.output.raw(stderr: Help.usage(command) + "\n") }
      return context.output.settle(ExitStatus.of(error.code))
    } catch {
      let wrapped = Elision.error(
        CaptureError(.unableToCompleteOperation, "\(error)"), arguments: parsed.arguments)
      context.output.error(wrapped)
      return context.output.settle(ExitStatus.of(wrapped.code))
    }
  }

  /// Every usage error: one line, the command's usage, exit 18 (ESKT_INVALIDPARAMETER).
  /// `output`: the command's own (a remote command's goes to its reply, not to stdout).
  static func usageFailure(
    _ error: UsageError, json: Bool, noColor: Bool = false, arguments: [String] = [], output: Output? = nil
  ) -> Int32 {
    let output = output ?? Output(mode: json ? .json : .plain, quiet: false, verbose: false, noColor: noColor)
    output.error(CaptureError(.invalidParameter, Elision.message(error.message, arguments: arguments)))
    output.raw(stderr: Help.usage(error.command.flatMap(CommandTree.command(named:))) + "\n")
    return ExitStatus.of(.invalidParameter)
  }

  static func globalOptions(_ parsed: ParsedArguments) throws(UsageError) -> GlobalOptions {
    var globals = GlobalOptions()
    globals.json = parsed.flag("json")
    globals.quiet = parsed.flag("quiet")
    globals.verbose = parsed.flag("verbose")
    globals.noColor = parsed.flag("no-color")
    if let text = parsed.value("timeout") {
      globals.timeout = try Values.duration(text, option: "--timeout", command: parsed.command?.name)
    }
    if let adapter = parsed.value("adapter") {
      guard adapter.hasPrefix("hci"), let n = Int(adapter.dropFirst(3)), n >= 0 else {
        throw UsageError(
          message: "--adapter must be hciN (e.g. hci0), not '\(adapter)'", command: parsed.command?.name)
      }
      globals.adapter = adapter
    }
    return globals
  }
}
