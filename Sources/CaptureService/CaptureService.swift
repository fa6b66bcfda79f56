import CaptureCore
import HTTPServer

/// The Capture service for CaptureJS web apps (docs/capturejs.md): JSON-RPC over HTTP and a WebSocket
/// per client, on top of the engine.
public enum CaptureServiceInfo {
  /// The port CaptureJS connects to by default (its DEFAULT_HOST is http://127.0.0.1:18481).
  public static let defaultPort: UInt16 = 18481
}
