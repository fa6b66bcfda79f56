/// What an arrival event says about a device (capture-sdk.md §8 DeviceInfo), keyed for the command line
/// by `id`: the selector text that reaches it again ("socketcam", a Bluetooth address, a transport URI) —
/// never the SDK's per-connection GUID, which changes on every connection.
public struct DeviceInfo: Sendable, Hashable {
  public var id: String
  public var name: String
  public var type: DeviceType

  public init(id: String, name: String, type: DeviceType) {
    self.id = id
    self.name = name
    self.type = type
  }
}
