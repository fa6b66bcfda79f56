import CaptureCore

enum TriggerCommand {
  struct Options {
    var selector: DeviceSelector
    var action: Trigger
    var wait: Bool
    var timeout: Duration?
    var sources: [FrameSourceItem]
    var keymap: String?

    init(_ parsed: ParsedArguments) throws(UsageError) {
      keymap = try parsed.keymap()
      try parsed.requireOperands(
        2...2, parsed.operands.isEmpty ? "DEVICE" : "ACTION (start, stop, continuous, enable or disable)")
      selector = try Values.device(parsed.operands[0], command: parsed.commandName)
      let word = parsed.operands[1]
      guard ["start", "stop", "continuous", "enable", "disable"].contains(word.lowercased()),
        let action = Trigger.parse(word)
      else {
        throw parsed.usage("unknown trigger action '\(word)'; use start, stop, continuous, enable or disable")
      }
      self.action = action
      wait = parsed.flag("wait")
      timeout = try parsed.timeout()
      sources = try Values.frameSources(parsed)
      if !sources.isEmpty && selector != .socketCam {
        throw parsed.usage("--image, --dir and --camera are SocketCam sources; the device is \(selector)")
      }
      if selector == .socketCam && sources.isEmpty && (action == .start || action == .continuousScan) {
        throw parsed.usage("socketcam needs a frame source: --image FILE, --dir DIR or --camera /dev/videoN")
      }
    }

    var isCamera: Bool { sources.contains { if case .camera = $0 { true } else { false } } }
  }

  /// The SDK's Start keeps a scanner reading for about 3 s (docs/capture-sdk.md §7.1); a camera read without
  /// --timeout uses the same window.
  static let cameraReadWindow: Duration = .seconds(3)
  /// `trigger DEV start --wait` on a scanner waits this long for a code without --timeout.
  static let scannerReadWindow: Duration = .seconds(10)

  static func run(_ options: Options, _ context: Context) async throws(CaptureError) -> CommandOutcome {
    // SIGINT/SIGTERM end trigger with ESKT_CANCEL from the first instant; SIGHUP keeps its default action.
    Interruption.claim(interrupted: .cancel, serviceHangUp: false)
    let device = try await context.open(options.selector, sources: options.sources, keymap: options.keymap)
    let sink = EventSink(output: context.output, printed: [.decodedData])
    let drain = Task { await sink.drain(device.events) }
    Interruption.watch {
      sink.markInterrupted()
      Task { await device.close() }
    }

    let timer = Deadline(options.timeout ?? (options.isCamera ? cameraReadWindow : nil)) {
      sink.markTimedOut()
      await device.close()
    }
    var failure: CaptureError?
    do { try await device.trigger(options.action) } catch { failure = error }
    if options.sources.isEmpty && failure == nil {
      // A scanner: the command went out. With --wait, stay for its first decoded code (or the timeout);
      // without, the trigger is all that was asked.
      guard options.wait, options.action != .stop, options.action != .enable, options.action != .disable
      else {
        timer.cancel()
        await device.close()
        await drain.value
        return .status(sink.result.firstError?.code ?? .noError)
      }
      let waitTimer = Deadline(options.timeout ?? context.globals.timeout ?? scannerReadWindow) {
        sink.markTimedOut()
        await device.close()
      }
      await sink.waitForFirstDecode()
      waitTimer.cancel()
      timer.cancel()
      await device.close()
      await drain.value
      let result = sink.result
      if result.decoded > 0 { return .success }
      if result.interrupted { return .status(.cancel) }
      return .failure(CaptureError(.requestTimedOut, "no code was read before the wait ran out"))
    }
    timer.cancel()
    await device.close()
    await drain.value

    let result = sink.result
    let action = options.action
    if let failure, !result.timedOut && !result.interrupted { throw failure }
    if result.interrupted { return .status(.cancel) }
    if let error = result.firstError { return .status(error.code) }
    guard action == .start || action == .continuousScan || action == .continuousScanUntilRead else {
      return .success
    }
    if result.decoded > 0 { return .success }
    if result.timedOut, let timeout = options.timeout {
      return .failure(CaptureError(.requestTimedOut, "no code was read within \(describe(timeout))"))
    }
    return .failure(CaptureError(.notFound, "no barcode found in \(describe(options.sources))"))
  }

  static func describe(_ d: Duration) -> String {
    let ms = d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
    return ms % 1000 == 0 ? "\(ms / 1000)s" : "\(ms)ms"
  }

  static func describe(_ sources: [FrameSourceItem]) -> String {
    let names = sources.map { item -> String in
      switch item {
      case .image(let p): "'\(p)'"
      case .standardInput: "standard input"
      case .directory(let d), .watchedDirectory(let d): "'\(d)'"
      case .camera(let c, _): "'\(c)'"
      }
    }
    return names.count > 3 ? "\(names.count) sources" : names.joined(separator: ", ")
  }
}
