import CaptureCore
import CaptureService
import Synchronization

/// `capture serve`: the Capture service CaptureJS web apps talk to (docs/capturejs.md), a front end of
/// the engine like `listen` without DEVICE: the same devices, supervision, favourites and state; the
/// DEVICE operands and a SOURCE add devices as they do for listen.
enum ServeCommand {
  struct Options: Sendable {
    /// The devices, SocketCam sources, --output and --keymap, read exactly as listen reads them.
    var devices: ListenCommand.Options
    var host: String
    var port: UInt16
    var allowedOrigins: [String]

    init(_ parsed: ParsedArguments) throws(UsageError) {
      devices = try ListenCommand.Options(parsed)
      (host, port) = try Self.address(
        parsed.value("listen") ?? "127.0.0.1:\(CaptureServiceInfo.defaultPort)", parsed)
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

  /// The order matters: the port is bound before any device is opened (a second `capture serve`
  /// fails at once and touches nothing); the engine is started after the service subscribed, so every
  /// arrival gets its GUID; connections are accepted last, with one line on stderr.
  static func run(_ options: Options, _ context: Context) async throws(CaptureError) -> CommandOutcome {
    // SIGINT/SIGTERM end serve with 0 from the first instant (one before the handler below is delivered
    // to it); SIGHUP is held until the service has read the state file (watchHangUp).
    Interruption.claim(interrupted: .noError, serviceHangUp: true)
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
    let service = CaptureService(
      engine: engine,
      configuration: .init(
        policy: AccessPolicy(
          listenHost: options.host, port: options.port, allowedOrigins: options.allowedOrigins),
        warn: { output.warn($0) }))
    if options.allowedOrigins.contains("null") {
      output.warn(
        "serve: --allow-origin null admits every sandboxed iframe, file:// page and data: URL, of any website"
      )
    }
    let listener = try ServiceListener(
      host: options.host, port: options.port, service: service,
      log: { line in output.info("serve: libwebsockets: \(line)") })

    let sink: EventSink?
    let devices: [any Device]
    do throws(CaptureError) {
      sink = try options.devices.output.map { path throws(CaptureError) in
        EventSink(
          output: output, stream: try .appending(to: path), printed: nil,
          onStreamFailure: {
            service.shutdown()
            Task { await engine.stop() }
          })
      }
      var explicit = options.devices
      explicit.selectors.removeAll { $0 == .socketCam }
      devices = try await ListenCommand.openDevices(explicit, context)
    } catch {
      await listener.shutdown()
      throw error
    }
    let fleet: FleetRun?
    do throws(CaptureError) {
      if let f = options.devices.fleet {
        fleet = try await FleetRun.start(f, engine: engine, sink: sink, context: context)
      } else {
        fleet = nil
      }
    } catch {
      for device in devices { await device.close() }
      await listener.shutdown()
      throw error
    }
    if let sink { _ = engine.subscribe("the --output stream") { event in await sink.take(event) } }
    let interrupted = Atomic<Bool>(false)
    Interruption.watch(
      {
        interrupted.store(true, ordering: .relaxed)
        sink?.markInterrupted()
        service.shutdown()
        Task { await engine.stop() }
      })
    do throws(CaptureError) {
      try engine.startService(evenIfEmpty: true)
    } catch {
      for device in devices { await device.close() }
      await listener.shutdown()
      throw error
    }
    // SIGHUP re-reads the state file once the service has read it.
    Interruption.watchHangUp { engine.reload() }
    engine.attach(devices)
    do { try listener.start() } catch {
      await engine.stop()
      throw error
    }
    let origin = "http://\(options.host):\(listener.port)"
    let how = listener.isInherited ? "; listening socket from systemd" : ""
    output.raw(
      stderr:
        "capture: serving CaptureJS on \(origin) (JSON-RPC POST \(CaptureServiceInfo.apiPath), WebSocket ws://\(options.host):\(listener.port)\(CaptureServiceInfo.apiPath)\(how))\n"
    )
    await engine.wait()
    await listener.shutdown()
    sink?.drained()
    await fleet?.stop()
    if let failure = fleet?.failure { return .failure(failure) }
    if interrupted.load(ordering: .relaxed) { return .success }
    if let error = sink?.result.firstError { return .status(error.code) }
    return .success
  }
}
