/// The rules a property value must meet whatever the device, checked before anything is written: by
/// `set` while it parses its words and by `set --from` for every entry of a profile, dry run or not,
/// so a value that would fail the write fails the check first and a profile is never applied in part.
public enum PropertyRules {
  /// FriendlyNameDevice is at most 31 UTF-8 bytes (docs/capture-sdk.md §10).
  public static let maxFriendlyNameBytes = 31

  public static func check(_ property: PropertyID, _ value: PropertyValue) throws(CaptureError) {
    switch (property, value) {
    case (.friendlyNameDevice, .string(let name)):
      guard !name.isEmpty, name.utf8.count <= maxFriendlyNameBytes else {
        throw .invalidParameter("friendly-name must be 1 to \(maxFriendlyNameBytes) UTF-8 bytes")
      }
      // The name is printed in line- and tab-separated output (list, events); a control character
      // would split a record.
      guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
        throw .invalidParameter("friendly-name cannot contain control characters (newline, tab, ...)")
      }
    case (.socketCamStatus, .byte(let raw)):
      guard raw == SocketCamStatus.enable.rawValue || raw == SocketCamStatus.disable.rawValue else {
        throw .invalidParameter("socket-cam-status takes enable (0) or disable (1)")
      }
    case (.triggerDevice, .byte(let raw)):
      guard Trigger(rawValue: raw) != nil else { throw .invalidParameter("unknown trigger value \(raw)") }
    case (.dataSourceDevice, .dataSource(let source)):
      guard source.status == .enable || source.status == .disable else {
        throw .invalidParameter("data source status must be enable or disable")
      }
    default: return
    }
  }
}
