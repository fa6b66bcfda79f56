import CaptureCore
import Drivers

#if canImport(Glibc)
  import Glibc
#endif

enum ConnectCommand {
  struct Options: Sendable {
    var selector: DeviceSelector
    var pair: Bool
    var alias: String?

    init(_ parsed: ParsedArguments) throws(UsageError) {
      try parsed.requireOperands(1...1, "DEVICE")
      selector = try Values.device(parsed.operands[0], command: parsed.commandName)
      pair = parsed.flag("pair")
      alias = parsed.value("alias")
      if let alias,
        alias.isEmpty
          || (try? DeviceSelector.parse(alias)).map({ if case .name = $0 { false } else { true } }) == true
      {
        throw parsed.usage("--alias '\(alias)' is empty or looks like a device selector; pick a plain name")
      }
    }
  }

  /// socketcam: enable SocketCam (SocketCamStatus, capture-sdk.md §7.13) and print its arrival.
  static func run(_ options: Options, _ context: Context) async throws(CaptureError) -> ResultCode {
    guard options.selector == .socketCam else {
      if case .name = options.selector { _ = try await context.open(options.selector) }
      throw DriverRegistry.transportMissing(options.selector)
    }
    if options.pair { throw .notSupported("SocketCam is built in; it has nothing to pair") }
    if options.alias != nil { throw .notSupported("SocketCam is built in; it is always called socketcam") }
    let device = try await context.open(.socketCam)
    try await device.set(.socketCamStatus, .byte(SocketCamStatus.enable.rawValue))
    await device.close()
    let arrival = Event(time: .now(), device: device.info, payload: .deviceArrival)
    if context.output.isJSON {
      context.output.json(Render.event(arrival))
    } else {
      context.output.line("\(device.info.id)\t\(device.info.name)\t\(device.info.type.typeName)")
    }
    return .noError
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
    switch options.selector {
    case .socketCam:
      throw .notSupported(
        "SocketCam is built in and cannot be removed; disable it with: capture set socketcam socket-cam-status disable"
      )
    case .name:
      _ = try await context.open(options.selector)  // NOTFOUND for an unknown name
      throw DriverRegistry.transportMissing(options.selector)
    default:
      throw DriverRegistry.transportMissing(options.selector)
    }
  }
}

enum ListCommand {
  struct Options: Sendable {
    init(_ parsed: ParsedArguments) throws(UsageError) {
      try parsed.requireOperands(0...0, "")
    }
  }

  static func run(_ options: Options, _ context: Context) async throws(CaptureError) -> ResultCode {
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
    for device in state.devices {
      rows.append(
        (
          device.id, device.name, DeviceType(device.type), device.transport, "remembered", device.alias,
          device.lastSeen
        ))
    }
    let output = context.output
    if output.isJSON {
      output.json(
        .object([
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
            })
        ]))
    } else {
      for row in rows { output.line("\(row.id)\t\(row.name)\t\(row.type.typeName)\t\(row.state)") }
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

  static func run(_ options: Options, _ context: Context) async throws(CaptureError) -> ResultCode {
    let transport = options.classic ? "Bluetooth Classic (libbluetooth)" : "Bluetooth LE (BlueZ over D-Bus)"
    throw .notSupported(
      "discover needs the \(transport) transport, which is not available in this build of capture")
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
    switch options.selector {
    case .socketCam: throw .notSupported("SocketCam is built in; it has no Bluetooth partnership")
    case .name: _ = try await context.open(options.selector)
    default: break
    }
    throw DriverRegistry.transportMissing(options.selector)
  }
}
