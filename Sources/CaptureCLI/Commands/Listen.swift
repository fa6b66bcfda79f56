import CaptureCore

enum ListenCommand {
  struct Options: Sendable {
    var selectors: [DeviceSelector]
    var count: Int?
    var timeout: Duration?
    var events: Set<EventKind>?
    var confirm: String?
    /// --confirm-stdin: the co-process protocol (one good/bad line on stdin per code on stdout).
    var confirmStdin: Bool
    var confirmTimeout: Duration
    /// --output FILE: the event stream appended to FILE instead of stdout.
    var output: FilePath?
    var sources: [FrameSourceItem]
    /// --accept: wait for a Bluetooth Classic scanner in SPP initiator mode on this RFCOMM channel.
    var acceptChannel: Int?

    var keymap: String?
    /// --mqtt and its options (docs/fleet.md), as the fleet front end read them.
    var fleet: (any FrontEndRequest)?

    init(_ parsed: ParsedArguments, _ frontEnds: FrontEnds = .none) throws(UsageError) {
      keymap = try parsed.keymap()
      fleet = try FleetWords.request(parsed, frontEnds)
      if parsed.flag("accept") {
        acceptChannel =
          try parsed.value("channel").map { (t: String) throws(UsageError) in
            try Values.count(t, option: "--channel", command: parsed.commandName)
          } ?? 1
        // RFCOMM server channels are 1-30 (RFCOMM: a 5-bit server channel, 0 and 31 reserved).
        if let channel = acceptChannel, channel > 30 {
          throw parsed.usage("--channel: RFCOMM channels are 1-30, not \(channel)")
        }
      } else if parsed.value("channel") != nil {
        throw parsed.usage("--channel works with --accept")
      }
      var selectors: [DeviceSelector] = []
      for operand in FleetWords.operands(parsed) {
        let selector = try Values.device(operand, command: parsed.commandName)
        if !selectors.contains(selector) { selectors.append(selector) }
      }
      sources = try Values.frameSources(parsed)
      if !sources.isEmpty && selectors.isEmpty { selectors = [.socketCam] }
      if !sources.isEmpty && !selectors.contains(.socketCam) {
        throw parsed.usage("--image, --dir and --camera are SocketCam sources; add socketcam to the devices")
      }
      if selectors.contains(.socketCam) && sources.isEmpty {
        throw parsed.usage("socketcam needs a frame source: --image FILE, --dir DIR or --camera /dev/videoN")
      }
      self.selectors = selectors
      count = try parsed.value("count").map { (t: String) throws(UsageError) in
        try Values.count(t, option: "--count", command: parsed.commandName)
      }
      timeout = try parsed.timeout()
      events = try parsed.value("events").map { (t: String) throws(UsageError) in
        try Values.events(t, command: parsed.commandName)
      }
      confirm = parsed.value("confirm")
      if let confirm, confirm.isEmpty { throw parsed.usage("--confirm needs a command") }
      confirmTimeout =
        try parsed.value("confirm-timeout").map { (t: String) throws(UsageError) in
          try Values.duration(t, option: "--confirm-timeout", command: parsed.commandName)
        } ?? .seconds(10)
      confirmStdin = parsed.flag("confirm-stdin")
      if confirm != nil && confirmStdin {
        throw parsed.usage("--confirm and --confirm-stdin cannot be combined")
      }
      if confirmStdin && sources.contains(where: { if case .standardInput = $0 { true } else { false } }) {
        throw parsed.usage(
          "--confirm-stdin reads the answers on stdin; --image - cannot read an image there too")
      }
      if parsed.value("confirm-timeout") != nil && confirm == nil && !confirmStdin {
        throw parsed.usage("--confirm-timeout works with --confirm CMD or --confirm-stdin")
      }
      if fleet != nil && parsed.value("confirm-delivery") != nil && (confirm != nil || confirmStdin) {
        throw parsed.usage(
          "--confirm-delivery tells the device itself; it cannot be combined with --confirm or --confirm-stdin"
        )
      }
      output = parsed.path("output")
      if output == "" { throw parsed.usage("--output needs a file name") }
      if output == "-" { output = nil }
    }
  }

  /// listen is the engine run with the event printer (and `--mqtt`'s fleet front end): one lane
  /// subscriber (back-pressure on the devices' lanes: the printer paces each device). With DEVICE
  /// operands (or --accept) the devices are opened first and fail fast: one that cannot be opened
  /// fails the listen before anything is printed. Without, the engine serves every remembered device
  /// and the favourites, each supervised on its own; SIGHUP reloads the state file.
  static func run(_ options: Options, _ context: Context) async throws(CaptureError) -> CommandOutcome {
    let serving = options.selectors.isEmpty && options.acceptChannel == nil
    let output = context.output
    let engine = CaptureEngine(
      system: context.system, store: context.state,
      configuration: .init(
        adapter: context.globals.adapter, openTimeout: context.globals.timeout, keymap: options.keymap,
        warn: { output.warn($0) },
        onOpen: { [asked = options.events] device in await setUpNotifications(device, asked: asked, output) })
    )
    let judge = Self.judge(options, context)
    // --output is opened first: a file that cannot be written fails before any device is touched.
    let printer = EventPrinter(
      .init(
        output: output, stream: { () throws(CaptureError) in try Self.eventStream(options, context) },
        name: "the event stream", printed: options.events, limit: options.count, timeout: options.timeout,
        judge: judge))
    // --mqtt: the spool is opened (and the broker connection started) before any event flows, and its
    // lane comes before the printer's (with --confirm-delivery a code is printed once it is safe).
    let fleet = options.fleet.map {
      FleetWords.frontEnd($0, engine: engine, judged: judge != nil, context: context)
    }
    let run = EngineRun(
      engine: engine, frontEnds: (fleet.map { [$0] } ?? []) + [printer], serving: serving,
      servesEmpty: false, report: { printer.report($0) })
    let sources = options.sources
    return try await run.run(
      open: { () throws(CaptureError) in serving ? [] : try await openDevices(options, context) },
      running: { devices in
        await withTaskGroup(of: Void.self) { group in
          for device in devices where !sources.isEmpty && device.info.id == "socketcam" {
            group.addTask {
              do throws(CaptureError) { try await device.trigger(.continuousScan) } catch {
                // Closed by us while stopping (e.g. a failed --output write): not an error of its own.
                if error.code == .deviceNotOpen && printer.isStopping { return }
                printer.fail(error)
                await device.close()
              }
            }
          }
        }
      },
      outcome: { _ in outcome(printer.result, options) })
  }

  /// The explicit devices (and the --accept scanner), opened and with their notifications on; on any
  /// failure the ones already open are closed and the failure is the listen's.
  static func openDevices(_ options: Options, _ context: Context) async throws(CaptureError) -> [any Device] {
    var devices: [any Device] = []
    if let channel = options.acceptChannel {
      devices.append(try await acceptClassic(channel: channel, timeout: options.timeout, context))
    }
    do throws(CaptureError) {
      for selector in options.selectors {
        let sources = selector == .socketCam ? options.sources : []
        // Every device rides out its own removal: link loss, a tty or an input node that goes, and
        // SocketCam's camera unplugged (deviceRemoval, then deviceArrival when it is back).
        devices.append(
          try await context.open(selector, sources: sources, reconnects: true, keymap: options.keymap))
      }
      try await enableNotifications(devices, asked: options.events, context.output)
    } catch {
      for device in devices { await device.close() }
      throw error
    }
    return devices
  }

  /// listen's exit status (docs/engine.md "listen's exit status"): 0 after a signal; else the first
  /// error's code (an error event of any device, including one the service gave up on, or a failed
  /// write of the stream; all already shown in the stream); else 0 when --count was reached; 42 when
  /// --timeout ran out first; 17 when a finite source held no barcode; else 0 (a finite source ended).
  static func outcome(_ result: DrainResult, _ options: Options) -> CommandOutcome {
    if result.interrupted { return .success }
    if let error = result.firstError { return .status(error.code) }
    if let limit = options.count, result.decoded >= limit { return .success }
    if result.timedOut {
      return .failure(
        CaptureError(.requestTimedOut, "--timeout ran out after \(result.decoded) decoded code(s)"))
    }
    let finite =
      !options.sources.isEmpty && !options.sources.contains { if case .camera = $0 { true } else { false } }
    if finite && result.decoded == 0 {
      return .failure(
        CaptureError(.notFound, "no barcode found in \(TriggerCommand.describe(options.sources))"))
    }
    return .success
  }
}

extension ListenCommand {
  /// The batteryLevel, power and buttons events need their NotificationsDevice bit (docs/capture-sdk.md §4.1,
  /// §7.6): for each device that has the setting, read it and set it only when a wanted bit is off.
  /// A device that cannot report an explicitly asked kind gets a warning, never a made-up event; when no
  /// device can report any of the asked kinds (and nothing else was asked), listening would print
  /// nothing, so it is NOTSUPPORTED (15).
  static func enableNotifications(_ devices: [any Device], asked: Set<EventKind>?, _ output: Output)
    async throws(CaptureError)
  {
    for device in devices { await setUpNotifications(device, asked: asked, output) }
    if let asked, asked.isSubset(of: NotificationSetup.kinds),
      !devices.contains(where: { !$0.capabilities.events.isDisjoint(with: asked) })
    {
      let kinds = EventKind.allCases.filter(asked.contains).map(\.rawValue).joined(separator: ", ")
      throw .notSupported("no device here can report \(kinds) events")
    }
  }

  /// One device's part of `enableNotifications`; a service-mode supervisor runs it on every opening.
  static func setUpNotifications(_ device: any Device, asked: Set<EventKind>?, _ output: Output) async {
    let name = device.info.name
    do {
      let outcome = try await NotificationSetup.apply(device, kinds: asked ?? Set(EventKind.allCases))
      if let written = outcome.written {
        output.info("\(name): notifications set to \(written.names.joined(separator: ","))")
      } else if let before = outcome.before {
        output.info("\(name): notifications already on (\(before.names.joined(separator: ",")))")
      }
      if asked != nil {
        for kind in outcome.unsupported {
          output.warn("\(name) cannot report \(kind.rawValue) events (it has no notification for them)")
        }
      }
    } catch {
      output.warn("\(name): could not turn notifications on: \(error.code.name): \(error.message)")
    }
  }

  /// --accept: an RFCOMM server socket on `channel` takes the scanner that connects to this host
  /// (configured with `#FNI<host>#`, see `capture connect --show-pairing-code`); after link loss it
  /// waits for the scanner again.
  static func acceptClassic(channel: Int, timeout: Duration?, _ context: Context) async throws(CaptureError)
    -> any Device
  {
    let output = context.output
    var request = OpenRequest(
      selector: .bluetooth("00:00:00:00:00:00"), adapter: context.globals.adapter, warn: { output.warn($0) })
    request.reconnects = true
    request.timeout = timeout ?? context.globals.timeout
    output.info("waiting for a Bluetooth Classic scanner on RFCOMM channel \(channel)")
    return try await context.system.accept(channel: channel, request: request)
  }

  /// Where the events go: --output FILE, else stdout — except with --confirm-stdin, where stdout is
  /// the question channel (each decoded code, nothing else) and the full stream, verdicts included,
  /// goes only to --output FILE when one is given.
  static func eventStream(_ options: Options, _ context: Context) throws(CaptureError) -> EventStream {
    if let path = options.output { return try .appending(to: path) }
    return options.confirmStdin ? .discarded : .standardOutput(context.output)
  }

  /// Who judges each decoded code, if anyone: --confirm CMD or --confirm-stdin.
  static func judge(_ options: Options, _ context: Context) -> (any HostJudge)? {
    if options.confirmStdin {
      return StdinConfirmation(output: context.output, timeLimit: options.confirmTimeout)
    }
    return options.confirm.map { ConfirmCommand(command: $0, timeLimit: options.confirmTimeout) }
  }

  /// Asks the host for its verdict on a code (--confirm CMD or --confirm-stdin) and tells the device
  /// when it can take one (DataConfirmationDevice: good 0x15 / bad 0x2A, docs/capture-sdk.md §7.4).
  static func confirmation(
    _ judge: any HostJudge, _ target: @escaping @Sendable (String) -> DataConfirmationTarget?
  ) -> EventSink.Confirm {
    return { event, data in
      let verdict = await judge.verdict(event, data)
      guard let target = target(event.device.id) else { return (verdict, nil) }
      // Called by the sink once the code's line is written (or with bad when it could not be).
      return (
        verdict,
        { told in
          do {
            try await target.tell(good: told == .good)
            return true
          } catch {
            return false
          }
        }
      )
    }
  }
}
