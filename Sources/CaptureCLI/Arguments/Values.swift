import CaptureCore

/// Typed option and operand values. Each failure is a UsageError naming the option and the bad text.
enum Values {
  /// `500ms`, `10s`, `2m`, `1h`, `1.5s`; a bare number means seconds.
  static func duration(_ text: String, option: String, command: String?) throws(UsageError) -> Duration {
    let units: [(suffix: String, millis: Double)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000)]
    var number = Substring(text)
    var scale = 1000.0
    for unit in units where text.hasSuffix(unit.suffix) {
      number = text.dropLast(unit.suffix.count)
      scale = unit.millis
      break
    }
    guard !number.isEmpty, number.allSatisfy({ $0.isNumber || $0 == "." }),
      number.filter({ $0 == "." }).count <= 1,
      let value = Double(number), value.isFinite
    else {
      throw UsageError(
        message: "\(option): '\(text)' is not a duration (e.g. 500ms, 10s, 2m)", command: command)
    }
    let millis = value * scale
    guard millis <= 365 * 86_400_000 else {
      throw UsageError(message: "\(option): '\(text)' is longer than a year", command: command)
    }
    return .milliseconds(Int64(millis.rounded()))
  }

  static func count(_ text: String, option: String, command: String?) throws(UsageError) -> Int {
    guard let n = Int(text), n > 0 else {
      throw UsageError(message: "\(option): '\(text)' is not a positive whole number", command: command)
    }
    return n
  }

  /// A DEVICE operand. `manager` (the device manager) holds properties only, so only get and set take it.
  static func device(_ text: String, command: String?) throws(UsageError) -> DeviceSelector {
    let selector: DeviceSelector
    do { selector = try DeviceSelector.parse(text) } catch {
      throw UsageError(message: error.message, command: command)
    }
    if selector == .deviceManager && !managerCommands.contains(command ?? "") {
      throw UsageError(
        message:
          "'\(text)' is the device manager; only get and set take it (e.g. capture get manager favorite)",
        command: command)
    }
    return selector
  }

  /// The commands whose DEVICE may be `manager`.
  static let managerCommands: Set<String> = ["get", "set"]

  static func events(_ text: String, command: String?) throws(UsageError) -> Set<EventKind> {
    var kinds = Set<EventKind>()
    for word in text.split(separator: ",") {
      guard let kind = EventKind.parse(String(word)) else {
        let names = EventKind.allCases.map(\.rawValue).joined(separator: ", ")
        throw UsageError(message: "--events: unknown event '\(word)' (known: \(names))", command: command)
      }
      kinds.insert(kind)
    }
    guard !kinds.isEmpty else {
      throw UsageError(message: "--events needs at least one event kind", command: command)
    }
    return kinds
  }

  /// SocketCam frame sources in command-line order.
  static func frameSources(_ parsed: ParsedArguments) throws(UsageError) -> [FrameSourceItem] {
    var items: [FrameSourceItem] = []
    var stdinUsed = false
    for ((option, value), path) in zip(parsed.ordered, parsed.orderedPaths) {
      // Images, directories and cameras are opened by their bytes (`path`), never by a U+FFFD spelling.
      switch option {
      case "image":
        if value == "-" {
          guard !stdinUsed else {
            throw UsageError(message: "--image - can be given once", command: parsed.command?.name)
          }
          stdinUsed = true
          items.append(.standardInput)
        } else {
          guard !value.isEmpty else {
            throw UsageError(message: "--image needs a file name", command: parsed.command?.name)
          }
          items.append(.image(path ?? FilePath(value)))
        }
      case "dir":
        guard !value.isEmpty else {
          throw UsageError(message: "--dir needs a directory", command: parsed.command?.name)
        }
        items.append(.directory(path ?? FilePath(value)))
      case "camera":
        guard value.hasPrefix("/") else {
          throw UsageError(
            message: "--camera needs a device path like /dev/video0", command: parsed.command?.name)
        }
        items.append(.camera(path ?? FilePath(value), format: try cameraFormat(parsed)))
      default: continue
      }
    }
    let hasCamera = items.contains(where: { if case .camera = $0 { true } else { false } })
    if hasCamera && items.count > 1 {
      throw UsageError(
        message: "--camera cannot be combined with --image or --dir", command: parsed.command?.name)
    }
    if !hasCamera && parsed.value("camera-format") != nil {
      throw UsageError(message: "--camera-format works with --camera", command: parsed.command?.name)
    }
    return items
  }

  /// `--camera-format FOURCC`: one of FrameSourceItem.cameraFormats, in any case (the fourccs differ
  /// in more than case).
  static func cameraFormat(_ parsed: ParsedArguments) throws(UsageError) -> String? {
    guard let text = parsed.value("camera-format") else { return nil }
    let fourcc = text.uppercased()
    guard FrameSourceItem.cameraFormats.contains(fourcc) else {
      // Shown on one line whatever was typed: control characters as "?", at most 16 characters.
      let shown = String(
        String.UnicodeScalarView(
          text.unicodeScalars.prefix(16).map { $0.value < 0x20 || $0.value == 0x7F ? "?" : $0 }))
      throw UsageError(
        message:
          "--camera-format: unknown pixel format '\(shown)'; use one of "
          + FrameSourceItem.cameraFormats.joined(separator: ", "),
        command: parsed.command?.name)
    }
    return fourcc
  }
}
