/// How the command line names a device (docs/architecture.md §1 "DEVICE selectors").
public enum DeviceSelector: Sendable, Hashable, CustomStringConvertible {
  case socketCam
  /// A Bluetooth address, upper-case `AA:BB:CC:DD:EE:FF`.
  case bluetooth(String)
  /// Cognex DataMan over DMCC/Telnet; the port defaults to 23.
  case tcp(host: String, port: UInt16)
  /// A tty, with query parameters (`baud`, `parity`, `framing`, `protocol`).
  case serial(path: String, parameters: [String: String])
  /// A keyboard-wedge input device, or "auto"; `path` keeps a `?keymap=..&timeout=..` query as typed
  /// (the driver reads it), so the selector prints back exactly.
  case hid(path: String)
  /// A remembered device's alias or friendly name.
  case name(String)
  /// `manager`: the SDK's device manager (docs/capture-sdk.md §2.2 scope "DeviceManager"), the handle the
  /// Favorite setting lives on (§7.16). Only `get` and `set` take it.
  case deviceManager

  /// The word that selects the device manager.
  public static let deviceManagerWord = "manager"

  public var description: String {
    switch self {
    case .socketCam: "socketcam"
    case .bluetooth(let a): a
    case .tcp(let host, let port): "tcp://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    case .serial(let path, let parameters):
      parameters.isEmpty
        ? "serial:\(path)"
        : "serial:\(path)?"
          + parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
    case .hid(let path): "hid:\(path)"
    case .name(let n): n
    case .deviceManager: Self.deviceManagerWord
    }
  }

  /// The short transport name stored with a remembered device and shown by `list`.
  public var transportKey: String {
    switch self {
    case .socketCam: "socketcam"
    case .bluetooth: "ble"
    case .tcp: "tcp"
    case .serial: "serial"
    case .hid: "hid"
    case .name: "name"
    case .deviceManager: "manager"
    }
  }

  /// The transport family a selector needs, named in "not supported yet" messages.
  public var transportName: String {
    switch self {
    case .socketCam: "SocketCam"
    case .bluetooth: "Bluetooth (BlueZ / libbluetooth)"
    case .tcp: "TCP (Cognex DataMan DMCC)"
    case .serial: "serial tty"
    case .hid: "keyboard-wedge (evdev)"
    case .name: "remembered device"
    case .deviceManager: "device manager"
    }
  }

  public static func parse(_ text: String) throws(CaptureError) -> DeviceSelector {
    if text.isEmpty { throw .invalidParameter("empty device selector") }
    if text.lowercased() == "socketcam" { return .socketCam }
    if text.lowercased() == deviceManagerWord { return .deviceManager }
    if let address = bluetoothAddress(text) { return .bluetooth(address) }
    let lower = text.lowercased()
    if lower.hasPrefix("tcp://") { return try parseTCP(String(text.dropFirst(6)), original: text) }
    if lower.hasPrefix("serial:") { return try parseSerial(String(text.dropFirst(7)), original: text) }
    if lower.hasPrefix("hid:") {
      let path = String(text.dropFirst(4))
      let bare = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
      guard bare == "auto" || bare.hasPrefix("/") else {
        throw .invalidParameter("'\(text)': expected hid:/dev/input/eventN or hid:auto")
      }
      try checkHIDQuery(path, original: text)
      return .hid(path: path)
    }
    if text.contains("://") {
      throw .invalidParameter("'\(text)': unknown device scheme; use tcp://, serial: or hid:")
    }
    if looksLikeBadAddress(text) {
      throw .invalidParameter("'\(text)' is not a Bluetooth address (AA:BB:CC:DD:EE:FF)")
    }
    return .name(text)
  }

  /// `AA:BB:CC:DD:EE:FF` (either case, `-` accepted as separator) → upper case with colons.
  static func bluetoothAddress(_ s: String) -> String? {
    let parts = s.split(separator: ":", omittingEmptySubsequences: false)
    let dashed = s.split(separator: "-", omittingEmptySubsequences: false)
    let groups = parts.count == 6 ? parts : (dashed.count == 6 ? dashed : [])
    guard groups.count == 6, groups.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isHexDigit) }) else {
      return nil
    }
    return groups.map { $0.uppercased() }.joined(separator: ":")
  }

  /// Hex digits and two or more colons but not six groups of two: a mistyped address, worth rejecting
  /// rather than looking up as a remembered name ("AA:BB:CC:DD:EE", "AA:BB:CC:DD:EE:FF:00").
  static func looksLikeBadAddress(_ s: String) -> Bool {
    s.filter { $0 == ":" }.count >= 2 && s.allSatisfy { $0.isHexDigit || $0 == ":" }
  }

  static func parseTCP(_ rest: String, original: String) throws(CaptureError) -> DeviceSelector {
    var hostPart = Substring(rest)
    if let slash = hostPart.firstIndex(of: "/") {
      guard hostPart[slash...] == "/" else {
        throw .invalidParameter("'\(original)': a tcp:// selector has no path")
      }
      hostPart = hostPart[..<slash]
    }
    var host: Substring
    var portText: Substring?
    if hostPart.hasPrefix("[") {
      guard let close = hostPart.firstIndex(of: "]") else {
        throw .invalidParameter("'\(original)': unclosed [")
      }
      host = hostPart[hostPart.index(after: hostPart.startIndex)..<close]
      let after = hostPart[hostPart.index(after: close)...]
      if after.hasPrefix(":") {
        portText = after.dropFirst()
      } else if !after.isEmpty {
        throw .invalidParameter("'\(original)': expected tcp://HOST[:PORT]")
      }
    } else if hostPart.filter({ $0 == ":" }).count > 1 {
      throw .invalidParameter("'\(original)': an IPv6 address needs brackets, e.g. tcp://[::1]:23")
    } else if let colon = hostPart.lastIndex(of: ":") {
      host = hostPart[..<colon]
      portText = hostPart[hostPart.index(after: colon)...]
    } else {
      host = hostPart
    }
    guard !host.isEmpty else { throw .invalidParameter("'\(original)': missing host in tcp://HOST[:PORT]") }
    var port: UInt16 = 23
    if let portText {
      guard let p = UInt16(portText), p > 0 else {
        throw .invalidParameter("'\(original)': port must be 1-65535")
      }
      port = p
    }
    return .tcp(host: String(host), port: port)
  }

  static let hidParameters: Set<String> = ["keymap", "timeout"]

  /// A `hid:` query may name only `keymap` and `timeout`, each as key=value; their values are checked
  /// by the driver, before it touches the device.
  static func checkHIDQuery(_ path: String, original: String) throws(CaptureError) {
    let pieces = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
    guard pieces.count == 2 else { return }
    for pair in pieces[1].split(separator: "&", omittingEmptySubsequences: false) {
      let kv = pair.split(separator: "=", maxSplits: 1)
      guard kv.count == 2, hidParameters.contains(String(kv[0])) else {
        throw .invalidParameter("'\(original)': unknown hid parameter '\(pair)' (use keymap, timeout)")
      }
    }
  }

  static let serialParameters: Set<String> = [
    "baud", "parity", "framing", "protocol", "databits", "stopbits",
  ]

  static func parseSerial(_ rest: String, original: String) throws(CaptureError) -> DeviceSelector {
    let pieces = rest.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
    let path = String(pieces[0])
    guard path.hasPrefix("/") else { throw .invalidParameter("'\(original)': expected serial:/dev/PATH") }
    var parameters: [String: String] = [:]
    if pieces.count == 2 {
      for pair in pieces[1].split(separator: "&") {
        let kv = pair.split(separator: "=", maxSplits: 1)
        guard kv.count == 2, serialParameters.contains(String(kv[0])) else {
          throw .invalidParameter(
            "'\(original)': unknown serial parameter '\(pair)' (use \(serialParameters.sorted().joined(separator: ", ")))"
          )
        }
        parameters[String(kv[0])] = String(kv[1])
      }
      if let baud = parameters["baud"], Int(baud).map({ $0 > 0 }) != true {
        throw .invalidParameter("'\(original)': baud must be a positive number")
      }
    }
    return .serial(path: path, parameters: parameters)
  }
}
