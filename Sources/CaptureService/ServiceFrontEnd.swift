import CaptureCore
import Synchronization

/// `capture serve` as a front end of the engine (docs/capturejs.md): the port is bound when it is
/// prepared, before any device is opened (a second `capture serve` fails at once and touches
/// nothing), and connections are accepted once the engine runs, with one line saying where.
public final class ServiceFrontEnd: FrontEnd {
  public struct Configuration: Sendable {
    public var host: String
    public var port: UInt16
    public var allowedOrigins: [String]
    /// Warnings (a refused origin, a client dropped); -v lines (the HTTP library's own, about what
    /// clients sent, not errors of the service); and the one line saying where the service is served,
    /// once it accepts connections.
    public var log: FrontEndLog

    public init(host: String, port: UInt16, allowedOrigins: [String], log: FrontEndLog) {
      self.host = host
      self.port = port
      self.allowedOrigins = allowedOrigins
      self.log = log
    }
  }

  private let configuration: Configuration
  private let parts = Mutex<(service: CaptureService, listener: ServiceListener)?>(nil)

  public init(_ configuration: Configuration) { self.configuration = configuration }

  /// The service subscribes to the engine as it is made, before the engine starts, so every arrival
  /// gets its GUID; then the port is bound.
  public func prepare(_ engine: CaptureEngine) async throws(CaptureError) {
    let configuration = self.configuration
    let service = CaptureService(
      engine: engine,
      configuration: .init(
        policy: AccessPolicy(
          listenHost: configuration.host, port: configuration.port,
          allowedOrigins: configuration.allowedOrigins),
        warn: configuration.log.warn))
    if configuration.allowedOrigins.contains("null") {
      configuration.log.warn(
        "serve: --allow-origin null admits every sandboxed iframe, file:// page and data: URL, of any website"
      )
    }
    let info = configuration.log.info
    let listener = try ServiceListener(
      host: configuration.host, port: configuration.port, service: service,
      log: { line in info("serve: libwebsockets: \(line)") })
    parts.withLock { $0 = (service, listener) }
  }

  public func start(_ engine: CaptureEngine, host: FrontEndHost) async throws(CaptureError) {}

  /// Connections are accepted from now on.
  public func engineStarted() throws(CaptureError) {
    guard let listener = parts.withLock({ $0?.listener }) else { return }
    try listener.start()
    let host = configuration.host
    let origin = "http://\(host):\(listener.port)"
    let how = listener.isInherited ? "; listening socket from systemd" : ""
    let path = CaptureServiceInfo.apiPath
    configuration.log.raw(
      "capture: serving CaptureJS on \(origin) (JSON-RPC POST \(path), WebSocket ws://\(host):\(listener.port)\(path)\(how))\n"
    )
  }

  /// Every WebSocket is told 1001 "going away" at once; no client is served again.
  public func stopping(interrupted: Bool) { parts.withLock { $0?.service }?.shutdown() }

  public func stop() async { await parts.withLock({ $0?.listener })?.shutdown() }
}
