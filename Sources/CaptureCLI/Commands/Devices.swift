import CaptureContract
import CaptureCore

#if canImport(Glibc)
  import Glibc
#endif

enum ConnectCommand {
  struct Options: Sendable {
    /// nil only with --show-pairing-code.
    var selector: DeviceSelector?
    var pair: Bool
    var alias: String?
    /// Bluetooth Classic: connect over RFCOMM to a scanner in SPP acceptor mode.
    var classic: Bool
    /// Print the command barcodes that make a Classic scanner connect to this host.
    var showPairingCode: Bool

    init(_ parsed: ParsedArguments) throws(UsageError) {
      showPairingCode = parsed.flag("show-pairing-code")
      classic = parsed.flag("classic")
      try parsed.requireOperands(showPairingCode ? 0...1 : 1...1, "DEVICE")
      selector = try parsed.operands.first.map { (text: String) throws(UsageError) in
        try Values.device(text, command: parsed.commandName)
      }
      pair = parsed.flag("pair")
      alias = parsed.value("alias")
      if showPairingCode && (classic || pair || alias != nil) {
        throw parsed.usage(
          "--show-pairing-code only prints the barcodes; it takes no --classic, --pair or --alias")
      }
      if let alias,
        alias.isEmpty
          || (try? DeviceSelector.parse(alias)).map({ if case .name = $0 { false } else { true } }) == true
      {
        throw parsed.usage("--alias '\(alias)' is empty or looks like a device selector; pick a plain name")
      }
    }
  }

  /// socketcam: enable SocketCam (SocketCamStatus, docs/capture-sdk.md §7.13) and print its arrival.
  /// A Bluetooth address: connect, pair if needed, remember, print the arrival(s).
  static func run(_ options: Options, _ context: Context) async throws(CaptureError) -> ResultCode {
    guard let given = options.selector, !options.showPairingCode else {
      return try await showPairingCode(context)
    }
    let selector = try await context.resolve(given)
    // An alias that would make a word name two devices is refused before anything is connected.
    if let alias = options.alias,
      let reason = try context.state.load().aliasConflict(alias, for: selector.description)
    {
      throw .aliasTaken(reason)
    }
    if options.classic {
      return try await connectClassic(selector, options, context)
    }
    switch selector {
    case .socketCam:
      if options.pair { throw .notSupported("SocketCam is built in; it has nothing to pair") }
      if options.alias != nil { throw .notSupported("SocketCam is built in; it is always called socketcam") }
      let device = try await context.open(.socketCam)
      try await device.set(.socketCamStatus, .byte(SocketCamStatus.enable.rawValue))
      await device.close()
      printArrivals([device.info], context)
      return .noError
    case .bluetooth(let address):
      let connected = try await context.devices.connectAndRemember(
        address: address, pair: options.pair, alias: options.alias)
      printArrivals(connected.arrivals, context)
      return .noError
    case .tcp, .serial:
      // A DataMan or a serial scanner: open it (which proves it is there and answers), remember it under
      // its selector, print the arrival.
      if options.pair { throw .notSupported("\(selector.transportName) devices have nothing to pair") }
      let device = try await context.open(selector, wantsEvents: false)
      let info = device.info
      await device.close()
      try await context.state.asyncRemember(
        RememberedDevice(
          id: info.id, alias: options.alias, name: info.name, type: info.type.rawValue,
          transport: selector.transportKey, lastSeen: Timestamp.now().iso8601))
      printArrivals([info], context)
      return .noError
    case .hid:
      throw .notSupported(
        "\(selector): a keyboard-wedge scanner is used where it is plugged in (capture listen \(selector)); there is nothing to connect or remember"
      )
    default:
      throw .transportMissing(selector)
    }
  }

  /// --classic: SDP finds the scanner's serial port channel, RFCOMM connects (the scanner in SPP
  /// acceptor mode, docs/device-protocols.md §5.2), then it is remembered with transport "classic" so later
  /// commands open it over RFCOMM. With --pair, bluetoothd pairs and trusts it first (BR/EDR
  /// discovery when it does not know the address yet); a failure after pairing says pairing happened.
  static func connectClassic(_ selector: DeviceSelector, _ options: Options, _ context: Context)
    async throws(CaptureError) -> ResultCode
  {
    guard case .bluetooth(let address) = selector else {
      throw .invalidParameter("--classic needs a Bluetooth address, not \(selector)")
    }
    var pairedName: String? = nil
    if options.pair {
      pairedName = try await context.system.pairClassic(
        address: address, adapter: context.globals.adapter, timeout: context.globals.timeout)
      context.output.info("paired and trusted \(address) through bluetoothd")
    }
    var request = OpenRequest(selector: selector, adapter: context.globals.adapter)
    request.wantsEvents = false
    request.timeout = context.globals.timeout
    let probe: ClassicProbe
    do throws(CaptureError) {
      probe = try await context.system.probeClassic(address: address, request: request, name: pairedName)
    } catch  where pairedName != nil {
      throw CaptureError(
        error.code, "paired and trusted \(address) through bluetoothd, then: \(error.message)")
    }
    let info = probe.info
    try await context.state.asyncRemember(
      RememberedDevice(
        id: info.id, alias: options.alias, name: info.name, type: info.type.rawValue,
        transport: RememberedDevice.classicTransport, lastSeen: Timestamp.now().iso8601,
        channel: probe.channel))
    printArrivals([info], context)
    return .noError
  }

  /// --show-pairing-code: the SPP initiator command barcodes for this host's adapter address
  /// (docs/device-protocols.md §5.2), which a user scans so the scanner connects here (`listen --accept`).
  static func showPairingCode(_ context: Context) async throws(CaptureError) -> ResultCode {
    let code = try await context.system.pairingBarcodes(adapter: context.globals.adapter)
    context.output.document(
      ResultDocument(
        json: .object([
          "adapter": .string(code.host), "code1D": .string(code.linear),
          "code2D": .string(code.twoDimensional),
        ]),
        plain: .lines(["1D (Code 128):\t\(code.linear)", "2D (DataMatrix/QR):\t\(code.twoDimensional)"])))
    return .noError
  }

  static func printArrivals(_ arrivals: [DeviceInfo], _ context: Context) {
    for info in arrivals {
      context.output.document(
        ResultDocument(
          json: Render.event(Event(time: .now(), device: info, payload: .deviceArrival)),
          line: "\(info.id)\t\(info.name)\t\(info.type.typeName)"))
    }
  }
}

enum RemoveCommand {
  struct Options: Sendable {
    var selector: DeviceSelector
    init(_ parsed: ParsedArguments) throws(UsageError) {
      try parsed.requireOperands(1...1, "DEVICE")
      selector = try Values.device(parsed.operands[0], command: parsed.commandName)
    }
  }

  static func run(_ options: Options, _ context: Context) async throws(CaptureError) -> ResultCode {
    let selector = try await context.resolve(options.selector)
    switch selector {
    case .socketCam:
      throw .notSupported(
        "SocketCam is built in and cannot be removed; disable it with: capture set socketcam socket-cam-status disable"
      )
    case .bluetooth, .tcp, .serial:
      // Bluetooth: disconnected, unpaired and forgotten; TCP or a tty: nothing to unpair, forgotten.
      let removal = try await context.devices.remove(selector)
      for info in removal.removals {
        context.output.document(
          ResultDocument(
            json: Render.event(Event(time: .now(), device: info, payload: .deviceRemoval)),
            line: "\(info.id)\t\(info.name)\t\(info.type.typeName)\tremoved"))
      }
      return .noError
    case .hid:
      throw .notSupported(
        "\(selector): a keyboard-wedge scanner is never remembered, so there is nothing to remove")
    default:
      throw .transportMissing(selector)
    }
  }
}

enum ListCommand {
  struct Options: Sendable {
    /// `--hid`: input devices (keyboard-wedge scanner candidates) instead of remembered devices.
    var hid = false
    /// `--cameras`: the V4L2 video capture nodes instead.
    var cameras = false

    init(_ parsed: ParsedArguments) throws(UsageError) {
      try parsed.requireOperands(0...0, "")
      hid = parsed.flag("hid")
      cameras = parsed.flag("cameras")
      if hid && cameras { throw parsed.usage("--hid and --cameras cannot be combined") }
    }
  }

  static func run(_ options: Options, _ context: Context) async throws(CaptureError) -> ResultCode {
    if options.hid { return listInputDevices(context) }
    if options.cameras { return await listCameras(context) }
    let state = try context.state.load()
    let socketCamEnabled = state.socketCam.status == SocketCamStatus.enable.rawValue
    var rows:
      [(
        id: String, name: String, type: DeviceType, transport: String, state: String, alias: String?,
        lastSeen: String?
      )] = [
        (
          "socketcam", state.socketCam.friendlyName ?? "SocketCam C820", .socketCamC820, "socketcam",
          socketCamEnabled ? "enabled" : "disabled", nil, nil
        )
      ]
    // Which devices bluetoothd has connected now; without Bluetooth the list is still the remembered one.
    var connected: [String: BluetoothDeviceInfo] = [:]
    do {
      for device in try await context.system.connected(adapter: context.globals.adapter) {
        connected[device.address] = device
      }
    } catch {
      context.output.info("not asking bluetoothd: \(error.message)")
    }
    for device in state.devices {
      let isConnected = connected.removeValue(forKey: device.id) != nil
      rows.append(
        (
          device.id, device.name, DeviceType(device.type), device.transport,
          isConnected ? "connected" : "remembered",
          device.alias, device.lastSeen
        ))
    }
    for device in connected.values.sorted(by: { $0.address < $1.address }) {
      rows.append((device.address, device.name, device.deviceTypes[0], "ble", "connected", nil, nil))
    }
    let output = context.output
    // The document is an object, so the device manager's Favorite (docs/capture-sdk.md §7.16) is one more
    // key beside "devices"; always present, "" when auto-connect is off.
    output.document(
      ResultDocument(
        json: .object([
          "favorite": .string(state.favorite),
          "devices": .array(
            rows.map { row in
              var m: [String: JSON] = [
                "id": .string(row.id), "name": .string(row.name), "type": .int(row.type.rawValue),
                "typeName": .string(row.type.typeName), "transport": .string(row.transport),
                "state": .string(row.state),
              ]
              if let alias = row.alias { m["alias"] = .string(alias) }
              if let seen = row.lastSeen { m["lastSeen"] = .string(seen) }
              return .object(m)
            }),
        ]),
        plain: .table(rows.map { [$0.id, $0.name, $0.type.typeName, $0.state] }, separator: "\t")))
    if !output.isJSON {
      // stdout stays one device per line (`while read id name type state`); the setting goes to stderr.
      if !state.favorite.isEmpty {
        output.warn("auto-connect favorite: \(state.favorite) (capture get manager favorite)")
      }
    }
    return .noError
  }
}

enum DiscoverCommand {
  struct Options: Sendable {
    var le: Bool
    var classic: Bool
    var name: String?
    var timeout: Duration?
    var all: Bool

    init(_ parsed: ParsedArguments) throws(UsageError) {
      try parsed.requireOperands(0...0, "")
      le = parsed.flag("le")
      classic = parsed.flag("classic")
      if le && classic { throw parsed.usage("--le and --classic cannot be combined (give neither for both)") }
      name = parsed.value("name")
      if let name, name.isEmpty { throw parsed.usage("--name needs a pattern") }
      timeout = try parsed.timeout()
      all = parsed.flag("all")
    }
  }

  /// Discovery runs this long without --timeout.
  static let defaultTimeout: Duration = .seconds(10)

  static func run(_ options: Options, _ context: Context) async throws(CaptureError) -> ResultCode {
    let transport = options.le ? "le" : options.classic ? "bredr" : "auto"
    let output = context.output
    // BlueZ is preferred whenever bluetoothd runs; without it, --classic asks HCI directly.
    if options.classic, await !context.system.bluetoothdReachable(adapter: context.globals.adapter) {
      return try await classicInquiry(options, context)
    }
    let request = DiscoveryRequest(
      adapter: context.globals.adapter, transport: transport, all: options.all, namePattern: options.name,
      timeout: options.timeout ?? context.globals.timeout ?? defaultTimeout)
    let count = try await context.system.discover(request) { found in report(found, output) }
    reportEnd(count: count, output)
    return .noError
  }
}

extension DiscoverCommand {
  /// One `deviceDiscovered` event (or plain line), the same keys whichever way the device was found
  /// (bluetoothd LE, bluetoothd BR/EDR, HCI inquiry).
  static func report(_ found: DiscoveredDeviceInfo, _ output: Output) {
    let info = DeviceInfo(id: found.address, name: found.name ?? found.address, type: found.type)
    var m: [String: JSON] = [
      "event": .string(EventKind.deviceDiscovered.rawValue), "time": .string(Timestamp.now().iso8601),
      "device": Render.device(info), "address": .string(found.address),
      "addressType": .string(found.addressType), "rssi": found.rssi.map { .int(Int($0)) } ?? .null,
      "uuids": .array(found.uuids.map { .string($0) }),
    ]
    // BR/EDR devices (Device1.Class, or the inquiry's Class of Device).
    if let classOfDevice = found.classOfDevice {
      m["classOfDevice"] = .int(Int(classOfDevice))
      m["socketMobile"] = .bool(found.recognizedBy != nil)
      m["recognizedBy"] = found.recognizedBy.map { .string($0) } ?? .null
    }
    output.document(
      ResultDocument(
        json: .object(m),
        line:
          "\(found.address)\t\(found.name ?? "")\t\(found.type.typeName)\t\(found.rssi.map(String.init) ?? "")"
      ))
  }

  /// The `discoveryEnd` event (JSON) or the closing note on stderr (plain).
  static func reportEnd(count: Int, _ output: Output) {
    output.document(
      ResultDocument(
        json: .object([
          "event": .string(EventKind.discoveryEnd.rawValue), "time": .string(Timestamp.now().iso8601),
          "count": .int(count),
        ]), plain: .nothing))
    if !output.isJSON { output.info("discovery ended: \(count) device(s)") }
  }

  /// `discover --classic` without bluetoothd: an HCI inquiry, then a name request per device.
  static func classicInquiry(_ options: Options, _ context: Context) async throws(CaptureError) -> ResultCode
  {
    let seconds = (options.timeout ?? context.globals.timeout ?? defaultTimeout) / .seconds(1)
    let output = context.output
    var found = try await context.system.inquire(
      adapter: context.globals.adapter, seconds: seconds, all: options.all, note: { output.info($0) })
    if let pattern = options.name {
      found.removeAll { fnmatch(pattern, $0.name ?? "", 0) != 0 }
    }
    for device in found { report(device, output) }
    reportEnd(count: found.count, output)
    return .noError
  }
}

enum PartnershipCommand {
  struct Options: Sendable {
    var action: String
    var selector: DeviceSelector

    init(_ parsed: ParsedArguments) throws(UsageError) {
      guard let action = parsed.operands.first else {
        throw parsed.usage("missing ACTION (status, set or reset)")
      }
      guard ["status", "set", "reset"].contains(action) else {
        throw parsed.usage("unknown partnership action '\(action)'; use status, set or reset")
      }
      guard parsed.operands.count >= 2 else { throw parsed.usage("missing DEVICE") }
      if parsed.operands.count > 2 { throw parsed.usage("unexpected argument '\(parsed.operands[2])'") }
      self.action = action
      selector = try Values.device(parsed.operands[1], command: parsed.commandName)
    }
  }

  static func run(_ options: Options, _ context: Context) async throws(CaptureError) -> ResultCode {
    let selector = try await context.resolve(options.selector)
    guard case .bluetooth(let address) = selector else {
      if selector == .socketCam {
        throw .notSupported("SocketCam is built in; it has no Bluetooth partnership")
      }
      throw .notSupported(
        "\(selector): partnership is for Bluetooth devices; a \(selector.transportName) device has none")
    }
    let devices = context.devices
    switch options.action {
    case "set":
      try await devices.pair(address: address)
    case "reset":
      try await devices.resetPartnership(address: address)
    default:
      break
    }
    if options.action == "reset" {
      context.output.document(
        ResultDocument(
          json: .object(["address": .string(address), "reset": .bool(true)]), line: "\(address)\treset"))
      return .noError
    }
    let p = try await devices.partnership(address: address)
    context.output.document(
      ResultDocument(
        json: .object([
          "device": Render.device(p.device.arrivals[0]),
          "paired": .bool(p.device.isPaired), "bonded": .bool(p.isBonded), "trusted": .bool(p.isTrusted),
          "connected": .bool(p.isConnected), "variant": .string(p.variant),
        ]),
        line: "\(p.device.address)\t\(p.isBonded ? "bonded" : "not-bonded")\t\(p.variant)"))
    return .noError
  }
}

extension ListCommand {
  /// `list --cameras`: every /dev/video* node that captures video (VIDIOC_QUERYCAP device_caps:
  /// single- or multi-planar capture; output, metadata and radio nodes are not cameras) with its
  /// driver, its name and the formats it offers; none is an empty list and exit 0.
  static func listCameras(_ context: Context) async -> ResultCode {
    // Opening a USB camera's node wakes the device, which can take a while: not on the cooperative pool.
    let system = context.system
    let (cameras, unreadable) = await BlockingExecutor.shared.run { _ in system.cameras() }
    let output = context.output
    if !unreadable.isEmpty {
      output.warn(
        "\(unreadable.count) video node(s) could not be asked what they are (\(unreadable.joined(separator: ", "))): join the 'video' group or add a udev rule"
      )
    }
    output.document(
      ResultDocument(
        json: .object([
          "cameras": .array(
            cameras.map { c in
              .object([
                "path": .string(c.path), "driver": .string(c.driver), "card": .string(c.card),
                "formats": .array(c.formats.map { .string($0) }),
              ])
            })
        ]),
        plain: .lines(
          cameras.map { c in
            "\(c.path)\t\(c.driver)\t\(c.card)\t\(c.formats.isEmpty ? "-" : c.formats.joined(separator: ","))"
          })))
    return .noError
  }

  /// `list --hid`: every /dev/input/event* with its EVIOCGNAME name and EVIOCGID vendor/product; none
  /// (a machine without input devices) is an empty list and exit 0.
  static func listInputDevices(_ context: Context) -> ResultCode {
    let (devices, unreadable) = context.system.inputDevices()
    let output = context.output
    if !unreadable.isEmpty {
      output.warn(
        "\(unreadable.count) input device(s) could not be read (\(unreadable.joined(separator: ", "))): join the 'input' group or add a udev rule"
      )
    }
    func hex4(_ v: UInt16) -> String {
      let digits = String(v, radix: 16)
      return String(repeating: "0", count: 4 - digits.count) + digits
    }
    output.document(
      ResultDocument(
        json: .object([
          "devices": .array(
            devices.map { d in
              .object([
                "path": .string(d.path), "name": .string(d.name), "vendorId": .int(Int(d.vendorID)),
                "productId": .int(Int(d.productID)), "isScanner": .bool(d.isScanner),
              ])
            })
        ]),
        plain: .lines(
          devices.map { d in
            "\(d.path)\t\(hex4(d.vendorID)):\(hex4(d.productID))\t\(d.name)\t\(d.isScanner ? "scanner" : "-")"
          })))
    return .noError
  }
}
