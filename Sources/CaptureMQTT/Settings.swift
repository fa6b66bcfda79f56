import CaptureCore
import MosquittoClient

#if canImport(Glibc)
  import Glibc
#endif

/// `--mqtt mqtt://[USER@]HOST[:PORT]/PREFIX` (or `mqtts://`): where the broker is and the topic prefix
/// every topic of this host starts with (docs/fleet.md §1).
public struct BrokerURL: Sendable, Equatable {
  public var tls: Bool
  public var username: String?
  public var host: String
  public var port: UInt16
  /// One or more topic levels, without a leading or trailing `/`.
  public var prefix: String

  public init(tls: Bool, username: String?, host: String, port: UInt16, prefix: String) {
    self.tls = tls
    self.username = username
    self.host = host
    self.port = port
    self.prefix = prefix
  }

  /// Parses the URL. A password in it (`user:pass@`) is refused: the command line shows in `ps` and in
  /// shell histories, so the password comes from --mqtt-password-file only.
  public static func parse(_ text: String) throws(CaptureError) -> BrokerURL {
    func refuse(_ why: String) -> CaptureError {
      CaptureError(.invalidParameter, "--mqtt: \(why)")
    }
    let tls: Bool
    let rest: Substring
    if text.hasPrefix("mqtt://") {
      tls = false
      rest = text.dropFirst("mqtt://".count)
    } else if text.hasPrefix("mqtts://") {
      tls = true
      rest = text.dropFirst("mqtts://".count)
    } else {
      throw refuse("takes mqtt://[USER@]HOST[:PORT]/PREFIX or mqtts://..., not '\(text)'")
    }
    guard let slash = rest.firstIndex(of: "/") else {
      throw refuse("a topic PREFIX is needed after the host (mqtt://HOST/PREFIX)")
    }
    var authority = rest[..<slash]
    var prefix = String(rest[rest.index(after: slash)...])
    while prefix.hasSuffix("/") { prefix.removeLast() }
    var username: String?
    if let at = authority.lastIndex(of: "@") {
      let user = authority[..<at]
      if user.contains(":") {
        throw refuse(
          "a password in the URL would show in ps; put it in a file and use --mqtt-password-file FILE")
      }
      guard !user.isEmpty else { throw refuse("an empty user name before '@'") }
      // `%XX` in a user name (RFC 3986 §2.1), decoded as a topic level is; anything else kept as written.
      username = Topics.unescape(String(user))
      authority = authority[authority.index(after: at)...]
    }
    var host = Substring(authority)
    var port: UInt16 = tls ? CaptureMQTTInfo.defaultTLSPort : CaptureMQTTInfo.defaultPort
    if host.hasPrefix("[") {
      // An IPv6 literal (RFC 3986 §3.2.2): [ADDR] or [ADDR]:PORT.
      guard let close = host.firstIndex(of: "]") else { throw refuse("an unclosed '[' in the host") }
      let after = host[host.index(after: close)...]
      if !after.isEmpty {
        guard after.hasPrefix(":"), let p = UInt16(after.dropFirst()), p > 0 else {
          throw refuse("the port must be 1-65535, not '\(after.dropFirst())'")
        }
        port = p
      }
      host = host[host.index(after: host.startIndex)..<close]
    } else if let colon = host.lastIndex(of: ":") {
      let text = host[host.index(after: colon)...]
      guard let p = UInt16(text), p > 0 else { throw refuse("the port must be 1-65535, not '\(text)'") }
      port = p
      host = host[..<colon]
    }
    guard !host.isEmpty else { throw refuse("no broker host in '\(text)'") }
    if let problem = hostProblem(host, bracketed: authority.hasPrefix("[")) { throw refuse(problem) }
    guard !prefix.isEmpty else {
      throw refuse("a topic PREFIX is needed after the host (mqtt://HOST/PREFIX)")
    }
    if let problem = Topics.problem(inPrefix: prefix) { throw refuse(problem) }
    if let username, let problem = userProblem(username) { throw refuse(problem) }
    return BrokerURL(tls: tls, username: username, host: String(host), port: port, prefix: prefix)
  }

  /// The longest broker host name: a DNS name is at most 253 characters written out (RFC 1035 §2.3.4,
  /// 255 octets on the wire).
  public static let maximumHostLength = 253

  /// Why `host` cannot name the broker, or nil: a DNS name or IPv4 address (letters, digits, `-`, `_`,
  /// `.`), or between brackets an IPv6 address (hex digits, `:`, `.`, and a `%` zone of letters and
  /// digits). Found here, as a usage error, and not by the transport when it connects.
  static func hostProblem(_ host: Substring, bracketed: Bool) -> String? {
    if host.utf8.count > maximumHostLength {
      return "the broker host is longer than \(maximumHostLength) characters"
    }
    let allowed = host.utf8.allSatisfy { b in
      if bracketed {
        return (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66) || b == 0x3A
          || b == 0x2E || b == 0x25 || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
      }
      return (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D
        || b == 0x5F || b == 0x2E
    }
    guard allowed else {
      let shown = String(host).unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : String($0) }
        .joined()
      return bracketed
        ? "'[\(shown)]' is not an IPv6 address"
        : "the broker host '\(shown)' is not a host name or address (letters, digits, '-', '_' and '.'; no spaces)"
    }
    if bracketed && !host.contains(":") { return "'[\(host)]' is not an IPv6 address" }
    return nil
  }

  /// Why a user name (after `%XX` decoding) cannot go in a CONNECT, or nil: an MQTT string is UTF-8
  /// without U+0000, at most 65,535 bytes (the MQTT 3.1.1 specification §1.5.3).
  static func userProblem(_ user: String) -> String? {
    if user.utf8.contains(0) { return "the user name holds NUL (%00)" }
    if user.utf8.count > 65535 { return "the user name is longer than 65535 bytes" }
    if user.unicodeScalars.contains("\u{FFFD}") { return "the user name is not UTF-8 once %XX is decoded" }
    return nil
  }
}

/// Everything `--mqtt*` says, checked: what the fleet front end needs to run.
public struct FleetSettings: Sendable {
  /// When the scanner hears its good beep (`--confirm-delivery`).
  public enum ConfirmDelivery: String, Sendable, CaseIterable {
    /// Once the code is fsynced in the spool.
    case spool
    /// Once the broker acknowledged it (PUBACK).
    case broker
  }

  /// Which remote commands run (`--mqtt-commands [all]`).
  public enum Commands: Sendable, Equatable {
    case off
    /// list, get, set, trigger.
    case standard
    /// Also connect and remove.
    case all
  }

  /// 100,000 events: at a busy scanner's few codes a second, hours of a broker outage; a record is a
  /// few hundred bytes, so tens of MiB on disk at most (docs/fleet.md §4).
  public static let defaultSpoolMax = 100_000

  public var url: BrokerURL
  public var hostID: String
  public var caFile: String?
  public var certFile: String?
  public var keyFile: String?
  public var password: String?
  public var spoolMax: Int
  public var confirmDelivery: ConfirmDelivery?
  public var commands: Commands
  /// `--mqtt-command-timeout DUR`: each remote command's deadline (docs/fleet.md §5).
  public var commandTimeout: Duration

  public init(
    url: BrokerURL, hostID: String, caFile: String? = nil, certFile: String? = nil, keyFile: String? = nil,
    password: String? = nil, spoolMax: Int = FleetSettings.defaultSpoolMax,
    confirmDelivery: ConfirmDelivery? = nil, commands: Commands = .off,
    commandTimeout: Duration = CommandLimits.defaultDeadline
  ) {
    self.url = url
    self.hostID = hostID
    self.caFile = caFile
    self.certFile = certFile
    self.keyFile = keyFile
    self.password = password
    self.spoolMax = spoolMax
    self.confirmDelivery = confirmDelivery
    self.commands = commands
    self.commandTimeout = commandTimeout
  }

  /// The remote commands' deadline and bounds.
  public var commandLimits: CommandLimits { CommandLimits(deadline: commandTimeout) }

  /// The MQTT client id: stable per host, so a broker that keeps sessions recognises the host after a
  /// restart, and two hosts never take each other's session. The MQTT 3.1.1 specification §3.1.3.1 only promises 23
  /// bytes of [0-9a-zA-Z]; every broker the fleets run takes longer ids, so the host id is kept whole.
  public var clientID: String { "capture-\(hostID)" }

  public var endpoint: MQTTEndpoint {
    MQTTEndpoint(
      host: url.host, port: url.port,
      tls: url.tls ? .init(caFile: caFile, certFile: certFile, keyFile: keyFile) : nil,
      username: url.username, password: password, clientID: clientID)
  }

  public var topics: Topics { Topics(prefix: url.prefix, host: hostID) }

  /// The checks between options, as usage errors (exit 18).
  public func validate() throws(CaptureError) {
    if !url.tls && (caFile != nil || certFile != nil || keyFile != nil) {
      throw CaptureError(.invalidParameter, "--mqtt-ca, --mqtt-cert and --mqtt-key need an mqtts:// URL")
    }
    if (certFile == nil) != (keyFile == nil) {
      throw CaptureError(.invalidParameter, "--mqtt-cert and --mqtt-key go together")
    }
    if password != nil && url.username == nil {
      throw CaptureError(
        .invalidParameter, "--mqtt-password-file needs a user name in the URL (mqtt://USER@HOST/PREFIX)")
    }
    guard spoolMax > 0 else { throw CaptureError(.invalidParameter, "--mqtt-spool-max must be at least 1") }
    guard commandTimeout > .zero else {
      throw CaptureError(.invalidParameter, "--mqtt-command-timeout must be longer than 0")
    }
  }
}

/// The host's identity: its topic level and the base of its client id.
public enum HostIdentity {
  /// The longest host id taken (a topic level stays readable; machine-id is 32).
  public static let maximumLength = 64

  /// `--mqtt-host-id NAME` when given, else /etc/machine-id (machine-id(5): 32 lowercase hex digits
  /// and a newline, set once at install), trimmed.
  public static func resolve(_ name: String?, machineIDPath: FilePath = "/etc/machine-id")
    throws(CaptureError)
    -> String
  {
    if let name {
      if let problem = problem(name) { throw CaptureError(.invalidParameter, "--mqtt-host-id: \(problem)") }
      return name
    }
    let bytes: [UInt8]
    do {
      bytes = try BoundedInput.contents(of: machineIDPath, accepting: .regularFiles, limit: 256)
    } catch {
      throw CaptureError(
        error, "cannot read \(machineIDPath) for the MQTT host id (name this host with --mqtt-host-id NAME)",
        other: .unableReadFile)
    }
    let text = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).first.map {
      // A machine-id file written on Windows may end its line with CR as well.
      String($0.trimmingSpaces([" ", "\t", "\r"]))
    }
    guard let text, !text.isEmpty, problem(text) == nil else {
      throw CaptureError(
        .invalidFormat, "\(machineIDPath) holds no usable host id; name this host with --mqtt-host-id NAME")
    }
    return text
  }

  /// Why `name` cannot be a host id, or nil: one topic level of letters, digits, `-`, `_` and `.`,
  /// so it needs no escaping anywhere (topics, client id, file names, ACL patterns).
  public static func problem(_ name: String) -> String? {
    if name.isEmpty { return "an empty host id" }
    if name.utf8.count > maximumLength { return "a host id is at most \(maximumLength) bytes" }
    let allowed = name.utf8.allSatisfy { b in
      (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D
        || b == 0x5F || b == 0x2E
    }
    if !allowed || name == "." || name == ".." {
      return "'\(name)' is not a host id: use letters, digits, '-', '_' and '.'"
    }
    return nil
  }
}

/// --mqtt-password-file: the first line of the file is the password.
public enum PasswordFile {
  /// A password file larger than this is not one.
  public static let maximumSize = 4096

  /// The password of `path` (nil without one), its permission warning told to `warn`: what `listen
  /// --mqtt` and `fleet` both do when they connect.
  public static func password(_ path: String?, warn: (String) -> Void) throws(CaptureError) -> String? {
    guard let path else { return nil }
    let read = try read(path)
    if let warning = read.warning { warn(warning) }
    return read.password
  }

  /// The password, and a warning when the file can be read by its group or others (it should be 0600
  /// or 0400, like ssh's keys).
  public static func read(_ path: String) throws(CaptureError) -> (password: String, warning: String?) {
    let bytes: [UInt8]
    do {
      bytes = try BoundedInput.contents(
        of: FilePath(path), accepting: .regularFiles, limit: maximumSize)
    } catch {
      throw CaptureError(error, "--mqtt-password-file \(path)", other: .unableReadFile)
    }
    let line = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).first ?? []
    var password = Array(line)
    if password.last == UInt8(ascii: "\r") { password.removeLast() }
    guard !password.isEmpty else {
      throw CaptureError(.invalidFormat, "--mqtt-password-file \(path): the first line is empty")
    }
    var info = stat()
    var warning: String?
    if stat(path, &info) == 0, info.st_mode & 0o077 != 0 {
      warning =
        "--mqtt-password-file \(path) can be read by others (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 600 it"
    }
    return (String(decoding: password, as: UTF8.self), warning)
  }
}
