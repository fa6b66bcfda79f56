/// The SDK's device manager as `get manager …` / `set manager …` open it: the handle whose properties
/// have scope "DeviceManager" (docs/capture-sdk.md §2.2). Of those, capture keeps only Favorite (§7.16),
/// stored in the state file under its lock; StartDiscovery, UniqueDeviceIdentifier and
/// Connect/DisconnectDiscoveredDevice drive the SDK's own BLE manager, which `discover` and `connect`
/// replace here, so they answer ESKT_NOTSUPPORTED like every property outside a capability table.
/// A property of another scope (a device's friendly-name, Capture's socket-cam-status) sent to this
/// handle is also NOTSUPPORTED: the SDK judges a property by the handle it is sent on (docs/architecture.md
/// §2 "everything else answers ESKT_NOTSUPPORTED"), it is not a usage error.
public final class DeviceManagerHandle: Device, Sendable {
  /// The SDK's BLE device manager type (docs/capture-sdk.md §5: DeviceManagerBle 0x1050001), the only
  /// device-manager type the SDK defines.
  public static let deviceInfo = DeviceInfo(
    id: DeviceSelector.deviceManagerWord, name: "Device Manager", type: .deviceManagerBle)

  private let store: StateStore
  public let info = DeviceManagerHandle.deviceInfo
  public let events: AsyncStream<Event>

  public init(store: StateStore) {
    self.store = store
    // The manager sends no events of its own here; the stream ends at once.
    events = AsyncStream { $0.finish() }
  }

  public var capabilities: Capabilities {
    Capabilities(readable: [.favorite], writable: [.favorite], triggers: [], events: [])
  }

  public func get(_ property: PropertyID, argument: PropertyValue) async throws(CaptureError) -> PropertyValue
  {
    guard property == .favorite else { throw unsupported(property) }
    return .string(try store.load().favorite)
  }

  /// Favorite: the SDK string, checked and normalised by `Favorites` before anything is written, then
  /// stored as the normalised form (so `get` prints what will be matched).
  public func set(_ property: PropertyID, _ value: PropertyValue) async throws(CaptureError) {
    guard property == .favorite else { throw unsupported(property) }
    guard case .string(let text) = value else {
      throw .invalidParameter("favorite takes a string (\"*\", identifiers separated by ';', or \"\")")
    }
    let favorites = try Favorites(parsing: text)
    try await store.asyncUpdate { (state: inout StateFile) throws(CaptureError) in
      state.favorite = favorites.value
    }
  }

  public func trigger(_ action: Trigger) async throws(CaptureError) {
    throw .notSupported("the device manager has no trigger")
  }

  public func close() async {}
}
