/// How a DEVICE word that is not a selector finds a remembered device, and which aliases may be given.
///
/// Precedence: the id it was remembered under, then an alias, then a friendly name; within one kind
/// the first remembered wins (two scanners of one model share their friendly name until one is given
/// an alias). So that a word never means two devices through aliases, an alias is unique: it may not
/// equal another remembered device's id, alias or friendly name (refused when it is given, at
/// `connect --alias`).
extension StateFile {
  public func device(named word: String) -> RememberedDevice? {
    devices.first { $0.id == word } ?? devices.first { $0.alias == word }
      ?? devices.first { $0.name == word }
  }

  /// Why `alias` cannot be given to the device remembered (or about to be) as `id`, or nil when it can.
  public func aliasConflict(_ alias: String, for id: String) -> String? {
    for other in devices where other.id != id {
      if other.id == alias { return "'\(alias)' is the id of another remembered device" }
      if other.alias == alias { return "alias '\(alias)' is already taken by \(other.id)" }
      if other.name == alias {
        return "'\(alias)' is the friendly name of \(other.id); an alias must name one device"
      }
    }
    return nil
  }
}

extension CaptureError {
  /// A refused alias: ESKT_INVALIDPARAMETER, before anything is connected or remembered.
  public static func aliasTaken(_ reason: String) -> CaptureError {
    .invalidParameter("--alias: \(reason); pick another name (capture list shows the remembered ones)")
  }
}
