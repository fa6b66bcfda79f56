/// The device manager's Favorite setting (docs/capture-sdk.md §7.16, property 0x00050201, a string):
/// `"*"` auto-connects any Socket Mobile device found, `""` turns auto-connect off, otherwise a `;`
/// separated list of identifiers. The SDK lists peripheral UUIDs; on Linux a device is identified the
/// way the state file keys it (docs/architecture.md §2 State): a Bluetooth address or a transport URI.
public enum Favorites: Sendable, Hashable {
  case off
  case anySocketMobile
  case devices([String])

  /// Parses the SDK string. Identifiers are normalised through `DeviceSelector.parse` (so
  /// `aa-bb-…` and `AA:BB:…` are one device); names, SocketCam and empty items are rejected.
  public init(parsing text: String) throws(CaptureError) {
    let trimmed = String(text.trimmingSpaces())
    if trimmed.isEmpty {
      self = .off
      return
    }
    if trimmed == "*" {
      self = .anySocketMobile
      return
    }
    var ids: [String] = []
    for item in trimmed.split(separator: ";", omittingEmptySubsequences: false) {
      let item = String(item.trimmingSpaces())
      guard !item.isEmpty else {
        throw .invalidParameter("favorite '\(text)': empty identifier between ';'")
      }
      if item == "*" {
        throw .invalidParameter("favorite '\(text)': '*' stands alone (any Socket Mobile device)")
      }
      let selector = try DeviceSelector.parse(item)
      switch selector {
      case .name, .socketCam, .deviceManager:
        throw .invalidParameter(
          "favorite '\(item)': expected a Bluetooth address or a tcp://, serial: or hid: device")
      default: break
      }
      let id = selector.description
      if !ids.contains(id) { ids.append(id) }
    }
    self = .devices(ids)
  }

  /// The SDK string form, as `get manager favorite` prints it.
  public var value: String {
    switch self {
    case .off: ""
    case .anySocketMobile: "*"
    case .devices(let ids): ids.joined(separator: ";")
    }
  }
}
