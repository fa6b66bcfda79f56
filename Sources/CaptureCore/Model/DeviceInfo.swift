/// What an arrival event says about a device (docs/capture-sdk.md §8 DeviceInfo), keyed for the command line
/// by `id`: the selector text that reaches it again ("socketcam", a Bluetooth address, a transport URI) —
/// never the SDK's per-connection GUID, which changes on every connection.
public struct DeviceInfo: Sendable, Hashable {
  public var id: String
  public var name: String
  public var type: DeviceType
  /// What the device itself says it is, for devices the SDK's type table has no entry for (a Cognex
  /// reader's DMCC `DEVICE.TYPE`, an input device's EVIOCGNAME, a tty's USB product): `type` is None
  /// for them, so without this a user could not tell a DM8072 from a keyboard. Nil when nothing
  /// reliable names the model; the JSON then leaves the `model` key out, as it does every optional key.
  public var model: String?

  public init(id: String, name: String, type: DeviceType, model: String? = nil) {
    self.id = id
    self.name = name
    self.type = type
    self.model = model
  }
}
