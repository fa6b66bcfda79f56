import CaptureCore

/// `capture serve`: the Capture service CaptureJS web apps talk to (docs/capturejs.md), a front end of
/// the engine like `listen` without DEVICE: the same devices, supervision, favourites and state; the
/// DEVICE operands and a SOURCE add devices as they do for listen.
enum ServeCommand {
  /// CaptureJS's default service address is http://127.0.0.1:18481 (docs/capturejs.md §1.1).
  static let defaultPort: UInt16 = 18481

  struct Options: Sendable {
    /// The devices, SocketCam sources, --output and --keymap, read exactly as listen reads them.
    var devices: ListenCommand.Options
    var host: String
    var port: UInt16
    var allowedOrigins: [String]

    init(_ parsed: ParsedArguments, _ frontEnds: FrontEnds = .none) throws(UsageError) {
      devices = try ListenCommand.Options(parsed, frontEnds)
      (host, port) = try Self.address(
        parsed.value("listen") ?? "127.0.0.1:\(ServeCommand.defaultPort)", parsed)
      allowedOrigins = []
      for origin in parsed.allValues("allow-origin") {
        // `null` only written out, and lower-case as browsers send it (docs/capturejs.md §1.3).
        guard
          origin == "*" || origin == "null"
            || (Self.isOrigin(origin) && !origin.lowercased().hasPrefix("file:"))
        else {
          throw parsed.usage(
            "--allow-origin takes an origin such as https://shop.example or http://10.0.0.5:8080 (or *, or null), not '\(origin)'"
          )
        }
        allowedOrigins.append(origin)
      }
    }

    /// `HOST:PORT`: an IPv4 address or a name (the transport listens on IPv4), and a port 0-65535
    /// (0 lets the kernel pick; the serving line says which).
    static func address(_ text: String, _ parsed: ParsedArguments) throws(UsageError) -> (String, UInt16) {
      guard let colon = text.lastIndex(of: ":"), colon != text.startIndex else {
        throw parsed.usage("--listen takes HOST:PORT (e.g. 127.0.0.1:18481), not '\(text)'")
      }
      let host = String(text[..<colon])
      guard let port = UInt16(text[text.index(after: colon)...]), !host.contains(":") else {
        throw parsed.usage(
          "--listen takes HOST:PORT with an IPv4 address or a name and a port 0-65535, not '\(text)'")
      }
      return (host, port)
    }

    /// scheme://host[:port], nothing after (an origin has no path, RFC 6454 §6.1).
    static func isOrigin(_ text: String) -> Bool {
      guard let range = text.firstRange(of: "://") else { return false }
      let scheme = text[..<range.lowerBound]
      let rest = text[range.upperBound...]
      return !scheme.isEmpty && scheme.allSatisfy { $0.isLetter || $0.isNumber || "+-.".contains($0) }
        && !rest.isEmpty && !rest.contains("/") && !rest.contains(" ")
    }
  }

  /// serve is the engine run with the Capture service, the `--output` printer and `--mqtt`'s fleet
  /// front end (EngineRun): the port is bound before any device is opened (a second `capture serve`
  /// fails at once and touches nothing); the engine is started after the service subscribed, so every
  /// arrival gets its GUID; connections are accepted last, with one line on stderr.
  static func run(_ options: Options, _ context: Context) async throws(CaptureError) -> CommandOutcome {
    let output = context.output
    let engine = CaptureEngine(
      system: context.system, store: context.state,
      configuration: .init(
        adapter: context.globals.adapter, openTimeout: context.globals.timeout,
        keymap: options.devices.keymap,
        warn: { output.warn($0) },
        onOpen: { device in await ListenCommand.setUpNotifications(device, asked: nil, output) },
        // serve's SOURCE is what SocketCam reads when SocketCamStatus is Enable; --dir is watched.
        socketCamSources: FrameSourceItem.watching(options.devices.sources)))
    guard let makeService = context.frontEnds.service else {
      throw .notSupported("this capture has no Capture service (its composition root registered none)")
    }
    let service = makeService(
      ServiceAddress(host: options.host, port: options.port, allowedOrigins: options.allowedOrigins),
      output.frontEndLog)
    let printer = options.devices.output.map { path in
      EventPrinter(
        .init(
          output: output, stream: { () throws(CaptureError) in try .appending(to: path) },
          name: "the --output stream", printed: nil))
    }
    let fleet = options.devices.fleet.map { FleetWords.frontEnd($0, engine: engine, context: context) }
    let frontEnds: [any FrontEnd] = [service] + (fleet.map { [$0] } ?? []) + (printer.map { [$0] } ?? [])
    let run = EngineRun(
      engine: engine, frontEnds: frontEnds, serving: true, servesEmpty: true,
      report: { event in
        if let printer {
          printer.report(event)
        } else if case .error(let error) = event.payload {
          output.error(error, withObject: false)
        }
      })
    var explicit = options.devices
    explicit.selectors.removeAll { $0 == .socketCam }
    return try await run.run(
      open: { () throws(CaptureError) in try await ListenCommand.openDevices(explicit, context) },
      outcome: { interrupted in
        if interrupted { return .success }
        if let error = printer?.result.firstError { return .status(error.code) }
        return .success
      })
  }
}
