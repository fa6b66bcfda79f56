import CaptureCore
import HTTPTransport

/// The Capture-level properties the SDK 2.0 clients send beyond CaptureJS 1.3.50's (docs/capturejs.md
/// §3.1): the Configuration strings, SocketCam's cancelled reads and the partnership properties.
extension CaptureService {
  // MARK: Configuration (-2141913085, get String, set String)

  /// The Configuration keys a published client sends, with the values each takes and its default.
  /// Flutter's `CaptureHelper.setSocketCamSymbologySelectorDisabled` sets
  /// `SocketCamSymbologySelector=disabled` or `=enabled` on the root client (capturesdk_flutter
  /// lib/capture_helper.dart:227-239); no published client sends another key.
  static let configurationKeys: [(key: String, values: [String], initial: String)] = [
    ("SocketCamSymbologySelector", ["enabled", "disabled"], "enabled")
  ]

  /// A `Key=value` set: a known key with one of its values is kept (the service's setting, read back
  /// by a get) and answered as the SDK answers it, with success. The symbology selector is a control
  /// of the SDK's own camera view; `capture serve` shows no view, so the setting changes nothing
  /// else. An unknown key is ESKT_UNKNOWNCONFIGURATION (-23), a known key with another value or no
  /// `=` ESKT_INVALIDCONFIGURATION (-24).
  func setConfiguration(_ text: String) throws(CaptureError) {
    guard let equals = text.firstIndex(of: "=") else {
      throw CaptureError(
        .invalidConfiguration, "Configuration takes KEY=VALUE (e.g. SocketCamSymbologySelector=disabled)")
    }
    let entry = try Self.configurationEntry(String(text[..<equals]))
    let asked = String(text[text.index(after: equals)...])
    guard let value = entry.values.first(where: { $0.lowercased() == asked.lowercased() }) else {
      throw CaptureError(
        .invalidConfiguration,
        "\(entry.key) takes \(entry.values.joined(separator: " or ")), not '\(Self.shown(asked))'")
    }
    state.withLock { $0.configuration[entry.key] = value }
  }

  /// A get names the key (a bare `Key`, or `Key=…` whose value is ignored) and answers `Key=value`;
  /// a get without a name answers every key, `;`-separated.
  func configurationItem(_ argument: PropertyValue) throws(CaptureError) -> String {
    let current = state.withLock { $0.configuration }
    func item(_ entry: (key: String, values: [String], initial: String)) -> String {
      "\(entry.key)=\(current[entry.key] ?? entry.initial)"
    }
    switch argument {
    case .none:
      return Self.configurationKeys.map(item).joined(separator: ";")
    case .string(let text):
      let name = text.firstIndex(of: "=").map { String(text[..<$0]) } ?? text
      return item(try Self.configurationEntry(name))
    default:
      throw .invalidParameter(
        "Configuration is read with a String naming the key (SocketCamSymbologySelector)")
    }
  }

  static func configurationEntry(_ name: String) throws(CaptureError) -> (
    key: String, values: [String], initial: String
  ) {
    guard let entry = configurationKeys.first(where: { $0.key.lowercased() == name.lowercased() }) else {
      throw CaptureError(
        .unknownConfiguration,
        "unknown Configuration key '\(shown(name))'; capture serve knows "
          + configurationKeys.map(\.key).joined(separator: ", "))
    }
    return entry
  }

  // MARK: SocketCam reads

  /// A SocketCam trigger as the SDK's SocketCam answers it: a read that a stop ends before any code
  /// was read sends DecodedData with result ESKT_CANCEL (-91) on every handle opened on that
  /// SocketCam, the event Flutter's helper routes to `onSocketCamCanceled` (capturesdk_flutter
  /// lib/capture_helper.dart `_onDecodedDataEvent`: `event.result == SktErrors.ESKT_CANCEL`) and
  /// CaptureJS keeps as -91 (docs/capturejs.md §4). A read is pending from its start until a code
  /// (the engine lane in `CaptureService.init` clears it), the device's removal, or a stop; the stop
  /// returns once the scan has ended with no event of it to follow.
  ///
  /// A code read in the instant before the stop may still be on its way through the engine when the
  /// stop returns; its lane then has not cleared the read, and the cancel is sent as well.
  func triggerSocketCam(_ device: any Device, _ action: Trigger, key: String) async throws(CaptureError) {
    switch action {
    case .start, .continuousScan, .continuousScanUntilRead:
      // Marked before the read starts: its first code can come as soon as it reads.
      state.withLock { _ = $0.pendingReads.insert(key) }
      do { try await device.trigger(action) } catch {
        state.withLock { _ = $0.pendingReads.remove(key) }
        throw error
      }
    case .stop:
      try await device.trigger(.stop)
      if state.withLock({ $0.pendingReads.remove(key) }) != nil { sendCancelledRead(key: key) }
    default:
      try await device.trigger(action)
    }
  }

  /// The cancel on every open handle of the connection `key`, on each client's socket.
  func sendCancelledRead(key: String) {
    let targets = state.withLock { s -> [(WebSocketID, [UInt32])] in
      guard let current = s.connections.current[key] else { return [] }
      return s.clients.values.compactMap { client in
        guard let socket = client.socket, client.subscription != nil else { return nil }
        let handles = client.opened.compactMap { handle, opened in
          opened.key == key && opened.guid == current.guid ? handle : nil
        }.sorted()
        return handles.isEmpty ? nil : (socket, handles)
      }
    }
    guard let output = state.withLock({ $0.output }) else { return }
    for (socket, handles) in targets {
      for handle in handles {
        var bytes: [UInt8] = []
        EventWire.cancelledRead(handle: handle).write(to: &bytes)
        guard output.send(socket, text: bytes) else { break }
      }
    }
  }

  // MARK: partnership

  /// ResetSinglePartnershipDevice on a device handle: what `capture partnership reset` does, through
  /// the same code (DeviceManager.resetPartnership): the device deletes its bonds (DeletePairingBondingDevice All, the D600's
  /// config command 0F, docs/device-protocols.md §2.6), then bluetoothd forgets this host's side, so
  /// neither keeps a stale key. A device without that command (every other model: no public fact
  /// gives one) answers ESKT_NOTSUPPORTED (-15), the SDK's "not supported by this device".
  func resetPartnership(_ device: any Device) async throws(CaptureError) {
    guard device.capabilities.canWrite(.deletePairingBondingDevice) else {
      throw .notSupported(
        "\(device.info.name) has no public command that resets its partnership (ResetSinglePartnershipDevice)"
      )
    }
    try await engine.devices.resetPartnership(of: device)
  }

  /// SinglePartnership and SinglePartnershipStamp are Capture-level (docs/capture-sdk.md §2.2), but no
  /// public source gives their values' layout (§7.14), so no answer could be read by an app: they are
  /// ESKT_NOTSUPPORTED, and the partnership of one device is ResetSinglePartnershipDevice on its
  /// handle (`capture partnership status` on the command line).
  static func singlePartnershipWhy(_ id: PropertyID) -> String {
    "\(describe(id)) is not supported: its value's layout is not published; reset one device's "
      + "partnership with ResetSinglePartnershipDevice (292) on its handle"
  }
}

extension EventWire {
  /// A SocketCam read that ended without a code: DecodedData with data source 0, empty `name` and
  /// `data`, and result ESKT_CANCEL (-91) in the event (docs/capturejs.md §4).
  public static func cancelledRead(handle: UInt32) -> JSON {
    message(
      handle: handle, id: .decodedData,
      value: .object(["id": .int(0), "name": .string(""), "data": .array([])]), result: .cancel)
  }
}
