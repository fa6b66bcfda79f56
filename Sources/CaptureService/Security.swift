import CaptureCore

/// Who may talk to the service (docs/capturejs.md §1.3). Two checks on every request and every
/// WebSocket upgrade, before anything else:
///
/// - **Host.** Only a loopback name or address with the served port (`localhost`, `127.0.0.0/8`,
///   `[::1]`), or the host `--listen` named with that port. A page whose own name a DNS rebinding has
///   pointed at 127.0.0.1 sends its own name here and is refused (403).
/// - **Origin.** Absent (not a browser, or a same-origin GET), a loopback origin
///   (`http://localhost:*`, `http://127.x.x.x:*`, `http://[::1]:*`, or https), or one given with
///   `--allow-origin`. `*` (only when written out) allows every origin of the form scheme://host[:port]
///   except `file://`. `null` is never trusted unless `--allow-origin null` names it: browsers send it
///   for every opaque origin — a sandboxed iframe on any website, a `data:` URL, a `file://` page, a
///   cross-origin redirect (Fetch standard, "serializing a request origin") — so it says nothing
///   about who is asking, and `*` does not include it. Anything else is 403.
///
/// An Origin header the transport could not read whole is never taken as absent: the transport
/// refuses such a request itself (431) before it reaches here.
public struct AccessPolicy: Sendable {
  /// The host `--listen` named (lower-cased; an IPv6 address in brackets) and the served port.
  public var listenHost: String
  public var port: UInt16
  /// `--allow-origin` values, normalised (`*` kept as is).
  public var allowedOrigins: Set<String>

  public init(listenHost: String, port: UInt16, allowedOrigins: [String]) {
    self.listenHost = Self.normaliseHost(listenHost)
    self.port = port
    self.allowedOrigins = Set(allowedOrigins.map { $0 == "*" ? "*" : Self.normaliseOrigin($0) })
  }

  public var allowsAnyOrigin: Bool { allowedOrigins.contains("*") }

  // MARK: Host

  /// Whether a request's `Host` header names this service (RFC 9110 §7.2: host, then an optional port).
  public func allowsHost(_ header: String?) -> Bool {
    guard let header, let (host, hostPort) = Self.splitAuthority(header.lowercased()) else { return false }
    guard hostPort == port else { return false }
    return Self.isLoopback(host) || host == listenHost
  }

  /// `host[:port]` → (host, port); a missing port is HTTP's 80. IPv6 hosts keep their brackets.
  static func splitAuthority(_ text: String) -> (String, UInt16)? {
    guard !text.isEmpty else { return nil }
    var host = Substring(text)
    var portText: Substring?
    if host.hasPrefix("[") {
      guard let close = host.firstIndex(of: "]") else { return nil }
      let after = host[host.index(after: close)...]
      if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty { return nil }
      host = host[...close]
    } else if let colon = host.lastIndex(of: ":") {
      portText = host[host.index(after: colon)...]
      host = host[..<colon]
      if host.contains(":") { return nil }
    }
    guard !host.isEmpty else { return nil }
    guard let portText else { return (String(host), 80) }
    guard !portText.isEmpty, portText.allSatisfy(\.isASCIIDigit), let value = UInt16(portText) else {
      return nil
    }
    return (String(host), value)
  }

  /// `localhost`, any 127.0.0.0/8 address written as four decimal octets, or `[::1]`.
  static func isLoopback(_ host: String) -> Bool {
    if host == "localhost" || host == "[::1]" { return true }
    let parts = host.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 4, parts[0] == "127" else { return false }
    return parts.allSatisfy { part in
      !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCIIDigit) && (Int(part) ?? 256) <= 255
    }
  }

  static func normaliseHost(_ host: String) -> String {
    let lower = host.lowercased()
    if lower.contains(":") && !lower.hasPrefix("[") { return "[\(lower)]" }
    return lower
  }

  // MARK: Origin

  public enum OriginVerdict: Sendable, Equatable {
    /// No Origin header: nothing to echo.
    case absent
    /// Allowed; echo this value in Access-Control-Allow-Origin.
    case allowed(String)
    case refused(String)
  }

  public func judgeOrigin(_ header: String?) -> OriginVerdict {
    guard let header else { return .absent }
    let origin = String(header.trimmingSpaces())
    let normalised = Self.normaliseOrigin(origin)
    // Named explicitly (`null` included: only `--allow-origin null` admits the opaque origin).
    if normalised != "*" && allowedOrigins.contains(normalised) { return .allowed(origin) }
    // Everything else must be a tuple origin, scheme://host[:port] (RFC 6454 §6.1): `null`, a
    // `file://` page (some browsers send that instead of `null`), a list of origins or anything
    // malformed is refused, `*` or not.
    guard let (scheme, host) = Self.tupleOrigin(normalised), scheme != "file" else { return .refused(origin) }
    if (scheme == "http" || scheme == "https") && Self.isLoopback(host) { return .allowed(origin) }
    if allowsAnyOrigin { return .allowed(origin) }
    return .refused(origin)
  }

  /// `scheme://host[:port]` with nothing after → (scheme, host); nil for anything else (`null`,
  /// `file://`, a path, an empty host, two origins in one header).
  static func tupleOrigin(_ normalised: String) -> (scheme: String, host: String)? {
    guard let range = normalised.firstRange(of: "://") else { return nil }
    let scheme = String(normalised[..<range.lowerBound])
    let authority = String(normalised[range.upperBound...])
    guard !scheme.isEmpty,
      scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }),
      !authority.isEmpty, !authority.contains("/"), !authority.contains(","), !authority.contains(" "),
      !authority.contains("@"), let (host, _) = Self.splitAuthority(authority)
    else { return nil }
    return (scheme, host)
  }

  /// Lower-case scheme and host, no trailing slash (`HTTPS://Shop.Example/` = `https://shop.example`).
  static func normaliseOrigin(_ origin: String) -> String {
    var text = origin.trimmingSpaces().lowercased()
    while text.hasSuffix("/") { text.removeLast() }
    return text
  }
}

extension Character {
  fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
