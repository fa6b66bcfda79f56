import BlueZ
import CaptureCore
import Synchronization

/// What a characteristic's notifications are, for the family handler that receives them.
enum NotifyRoute: Sendable, Equatable {
  case d600ScanData
  case d600Config
  case directEvents
  case battery
}

/// This process's notify sessions on one device. A BlueZ notify session belongs to the D-Bus client
/// that started it and ends with it (docs/bluez-testing.md, "GattCharacteristic1" and "Disconnect / link loss"); bluetoothd re-arms it
/// after a link loss. A route can exist without a session: 0x2A19 values notified for another client's
/// session reach every bus client as PropertiesChanged, so an armed CCCD is not subscribed twice.
final class NotifySessions: Sendable {
  private let client: BlueZClient
  private let state = Mutex(State())

  private struct State {
    /// Characteristic path → what its notifications are.
    var routes: [String: NotifyRoute] = [:]
    /// Characteristics on which this process holds a session (StartNotify succeeded).
    var held: Set<String> = []
  }

  init(client: BlueZClient) {
    self.client = client
  }

  func route(_ path: String) -> NotifyRoute? { state.withLock { $0.routes[path] } }

  var hasBatteryRoute: Bool { state.withLock { $0.routes.values.contains(.battery) } }

  func holds(_ path: String) -> Bool { state.withLock { $0.held.contains(path) } }

  var heldPaths: [String] { state.withLock { $0.held.sorted() } }

  /// Replaces the routes (a new link can have new characteristic paths).
  func setRoutes(_ routes: [String: NotifyRoute]) { state.withLock { $0.routes = routes } }

  /// Starts a session on `path` (a no-op when this client holds one already).
  func start(_ path: String) async throws(CaptureError) {
    try await client.startNotify(path)
    _ = state.withLock { $0.held.insert(path) }
  }

  /// Ends our session on `path`; false when we held none.
  func stop(_ path: String) async throws(CaptureError) -> Bool {
    guard state.withLock({ $0.held.remove(path) != nil }) else { return false }
    try await client.stopNotify(path)
    return true
  }

  /// bluetoothd left the bus: a new one knows none of our sessions.
  func forgetAll() { state.withLock { $0.held = [] } }

  /// Courtesy at close: our sessions end with our bus connection anyway.
  func stopAll() async {
    for path in heldPaths { try? await client.stopNotify(path) }
  }
}
