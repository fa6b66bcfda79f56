import CaptureCore
import HTTPTransport

/// The service's listening socket and the transport serving it; the transport's errors become
/// `CaptureError` here, once (docs/architecture.md §2: one error type per layer).
public final class ServiceListener: Sendable {
  let server: HTTPServer
  /// The port served: the one asked for, the kernel's pick for 0, or the inherited socket's.
  public var port: UInt16 { server.boundPort }
  /// The socket came from systemd socket activation (sd_listen_fds(3): LISTEN_PID, LISTEN_FDS).
  public let isInherited: Bool

  /// Binds `host:port` now (or takes the socket systemd passed), before any device is opened, so a
  /// port in use fails at once. Connections are served from `start()` on. `log` takes the HTTP
  /// library's own lines (about what clients sent: for -v, not errors of the service).
  public init(
    host: String, port: UInt16, service: CaptureService, log: (@Sendable (String) -> Void)? = nil
  ) throws(CaptureError) {
    let inherited = HTTPServer.Configuration.systemdListenDescriptor()
    isInherited = inherited != nil
    do {
      server = try HTTPServer(
        configuration: .init(host: host, port: port, listenDescriptor: inherited, log: log), handler: service)
    } catch {
      throw Self.convert(error)
    }
    service.attach(server)
    service.setServedPort(server.boundPort)
  }

  public func start() throws(CaptureError) {
    do { try server.start() } catch { throw Self.convert(error) }
  }

  /// Every WebSocket gets close code 1001 (going away), then the loop ends and the socket closes.
  public func shutdown() async {
    await server.shutdown(closeCode: 1001, reason: "capture serve is stopping")
  }

  /// The SDK has no "address in use"; the nearest result is ESKT_ALREADYEXISTING (-25): something
  /// already exists where the service would be.
  static func convert(_ error: HTTPServerError) -> CaptureError {
    switch error {
    case .addressInUse: CaptureError(.alreadyExisting, error.description)
    case .permissionDenied: CaptureError(.fileAccessDenied, error.description)
    case .badAddress: CaptureError(.invalidParameter, error.description)
    case .systemError, .libraryUnavailable: CaptureError(.notAvailable, error.description)
    }
  }
}
