import CaptureCore
import Drivers
import Synchronization

enum ListenCommand {
  struct Options: Sendable {
    var selectors: [DeviceSelector]
    var count: Int?
    var timeout: Duration?
    var events: Set<EventKind>?
    var confirm: String?
    var confirmTimeout: Duration
    var sources: [FrameSourceItem]
    /// --accept: wait for a Bluetooth Classic scanner in SPP initiator mode on this RFCOMM channel.
    var acceptChannel: Int?

    var keymap: String?

    init(_ parsed: ParsedArguments) throws(UsageError) {
      keymap = try parsed.keymap()
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
      for operand in parsed.operands {
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
      if parsed.value("confirm-timeout") != nil && confirm == nil {
        throw parsed.usage("--confirm-timeout works with --confirm CMD")
      }
    }
  }

  static func run(_ options: Options, _ context: Context) async throws(CaptureError) -> ResultCode {
    if options.selectors.isEmpty && options.acceptChannel == nil {
      return try await runService(options, context)
    }
    // Explicit devices fail fast: one that cannot be opened fails the listen.
    let selectors = options.selectors
    var devices: [any Device] = []
    if let channel = options.acceptChannel {
      devices.append(try await acceptClassic(channel: channel, timeout: options.timeout, context))
    }
    for selector in selectors {
      let sources = selector == .socketCam ? options.sources : []
      do {
        devices.append(
          try await context.open(
            selector, sources: sources, reconnects: selector != .socketCam, keymap: options.keymap))
      } catch {
        for device in devices { await device.close() }
        throw error
      }
    }

    let all = DeviceList(devices)
    let limit = options.count
    let devicesByID = Dictionary(devices.map { ($0.info.id, $0) }, uniquingKeysWith: { first, _ in first })
    let confirm = options.confirm.map { command in
      Self.confirmation(ConfirmCommand(command: command, timeLimit: options.confirmTimeout)) {
        devicesByID[$0]
      }
    }
    let sink = EventSink(
      output: context.output, printed: options.events, limit: limit, confirm: confirm
    ) { count in
      if let limit, count >= limit { Task { await all.closeAll() } }
    }
    Interruption.watch {
      sink.markInterrupted()
      Task { await all.closeAll() }
    }

    let timer = Deadline(options.timeout) {
      sink.markTimedOut()
      await all.closeAll()
    }
    let sources = options.sources
    let output = context.output
    await withTaskGroup(of: Void.self) { group in
      for device in devices {
        group.addTask { await sink.drain(device.events) }
        if !sources.isEmpty && device.info.id == "socketcam" {
          group.addTask {
            do throws(CaptureError) { try await device.trigger(.continuousScan) } catch {
              sink.record(error)
              output.error(error)
              await device.close()
            }
          }
        }
      }
    }
    timer.cancel()
    return outcome(sink.result, options, context)
  }

  /// listen without DEVICE: every remembered device and the favourites, each supervised on its own
  /// (ListenService); SIGHUP re-reads the state file.
  static func runService(_ options: Options, _ context: Context) async throws(CaptureError) -> ResultCode {
    let service = ListenService(context: context, options: options)
    let limit = options.count
    let confirm = options.confirm.map { command in
      Self.confirmation(ConfirmCommand(command: command, timeLimit: options.confirmTimeout)) {
        service.device(id: $0)
      }
    }
    let sink = EventSink(
      output: context.output, printed: options.events, limit: limit, confirm: confirm
    ) { count in
      if let limit, count >= limit { Task { await service.stop() } }
    }
    Interruption.watch(
      {
        sink.markInterrupted()
        Task { await service.stop() }
      }, onHangUp: { service.reload() })
    try service.start(sink)
    let timer = Deadline(options.timeout) {
      sink.markTimedOut()
      await service.stop()
    }
    await service.wait()
    timer.cancel()
    return outcome(sink.result, options, context)
  }

  /// The exit status once the events are drained: 0 after a signal or when --count was reached, the
  /// first error's code, 42 when --timeout ran out, 17 when a finite source held no barcode.
  static func outcome(_ result: DrainResult, _ options: Options, _ context: Context) -> ResultCode {
    if result.interrupted { return .noError }
    if let error = result.firstError { return error.code }
    if let limit = options.count, result.decoded >= limit { return .noError }
    if result.timedOut {
      context.output.error(
        CaptureError(.requestTimedOut, "--timeout ran out after \(result.decoded) decoded code(s)"))
      return .requestTimedOut
    }
    let finite =
      !options.sources.isEmpty && !options.sources.contains { if case .camera = $0 { true } else { false } }
    if finite && result.decoded == 0 {
      context.output.error(
        CaptureError(.notFound, "no barcode found in \(TriggerCommand.describe(options.sources))"))
      return .notFound
    }
    return .noError
  }
}

extension ListenCommand {
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
    return try await ClassicSPPScanner.accept(channel: channel, request: request)
  }

  /// Runs the host's command for a code and tells the device the verdict when it can take one
  /// (DataConfirmationDevice: good 0x15 / bad 0x2A, capture-sdk.md §7.4).
  static func confirmation(
    _ command: ConfirmCommand, _ device: @escaping @Sendable (String) -> (any Device)?
  ) -> EventSink.Confirm {
    return { event, data in
      let verdict = command.run(data: data.bytes, eventJSON: Render.event(event).serialized)
      guard let device = device(event.device.id), device.capabilities.canWrite(.dataConfirmationDevice)
      else {
        return (verdict, false)
      }
      let packed = (verdict == .good ? DataConfirmation.good : DataConfirmation.bad).packed
      do {
        try await device.set(.dataConfirmationDevice, .ulong(packed))
        return (verdict, true)
      } catch {
        return (verdict, false)
      }
    }
  }
}

/// The devices of one listen, closed together (count reached, timeout, signal).
final class DeviceList: Sendable {
  let devices: [any Device]
  init(_ devices: [any Device]) { self.devices = devices }
  func closeAll() async {
    for device in devices { await device.close() }
  }
}
