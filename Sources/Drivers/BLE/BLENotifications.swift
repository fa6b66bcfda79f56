import BlueZ
import CaptureCore

/// Where a BLE device's battery level changes come from. Public facts give no GATT characteristic for
/// power state or buttons on any Socket Mobile BLE device (docs/device-protocols.md §2.2, §3, §4), so
/// BatteryLevelChange is the only NotificationsDevice bit (docs/capture-sdk.md §7.6) a BLE device has here.
enum BatterySource {
  /// bluetoothd's battery plugin (on by default in Debian) claims 0x180F, subscribes to 0x2A19 itself
  /// and keeps Battery1.Percentage current: the notification is on while the link is up, and no
  /// client can turn it off.
  case battery1
  /// 0x2A19 exported as GATT with notify or indicate: on while some client holds a notify session.
  case gatt(CharacteristicInfo)
}

extension BLEDevice {
  var batterySource: BatterySource? {
    if let c = characteristic(GattUUID.batteryLevel) { return c.canNotify ? .gatt(c) : nil }
    if hasBatteryInterface || hasBatteryService { return .battery1 }
    return nil
  }

  /// NotificationsDevice as the device has it now: BatteryLevelChange when its battery level
  /// notifications are on (Battery1: always; GATT: our session, or GattCharacteristic1.Notifying for
  /// another client's).
  func notificationsSetting() async throws(CaptureError) -> Notifications {
    switch batterySource {
    case nil:
      throw unsupported(.notificationsDevice)
    case .battery1:
      return .batteryLevelChange
    case .gatt(let c):
      if sessions.holds(c.path) { return .batteryLevelChange }
      return try await client.isNotifying(c.path) ? .batteryLevelChange : []
    }
  }

  /// Sets NotificationsDevice. Reads first and writes nothing when the setting already matches (the
  /// SDK's rule). On GATT, turning the bit on is StartNotify on 0x2A19: a BlueZ notify session belongs
  /// to the D-Bus client that started it and ends with it, so only a process that stays to receive the
  /// events (listen) can hold one; a one-shot `capture set` says so instead of pretending.
  func setNotifications(_ wanted: Notifications) async throws(CaptureError) {
    let extra = wanted.subtracting(capabilities.notifications)
    guard extra.isEmpty else {
      var names = extra.names
      if extra.unknownBits != 0 { names.append("0x" + String(extra.unknownBits, radix: 16)) }
      throw .notSupported(
        "\(info.name) cannot report \(names.joined(separator: ", ")): it has only battery-level-change "
          + "(no public fact gives a BLE characteristic for power state or buttons)")
    }
    let current = try await notificationsSetting()
    if current == wanted {
      state.withLock { $0.notifications = wanted }
      return
    }
    guard case .gatt(let c)? = batterySource else {
      throw .notSupported(
        "bluetoothd's battery plugin keeps the battery notifications of \(info.name) on; a client cannot turn them off"
      )
    }
    guard request.wantsEvents else {
      throw .notSupported(
        "a BLE notify session lasts only as long as the capture process that starts it; "
          + "capture listen turns battery notifications on for its run")
    }
    state.withLock { $0.notifications = wanted }
    if wanted.contains(.batteryLevelChange) {
      try await keepBatteryNotifying()
      return
    }
    guard try await sessions.stop(c.path) else {
      throw .notSupported(
        "another client's notify session holds the battery notifications of \(info.name) on")
    }
  }

  /// Remembers the bits a listener relies on. When the battery notifications were already on through
  /// another client's session, nothing was written; if that session ends, `handle` sees Notifying go
  /// false and `keepBatteryNotifying` turns them on again for this process.
  public func keepNotifications(_ bits: Notifications) async {
    state.withLock { $0.notifications.formUnion(bits.intersection(.batteryLevelChange)) }
    // The session may have ended between the read and now.
    try? await keepBatteryNotifying()
  }

  /// Holds a notify session on 0x2A19 while the setting asks for battery changes and no client has
  /// the CCCD on. When another client's session already has it on, nothing is subscribed (set only when
  /// different; docs/bluez-testing.md: its notifications reach every bus client as PropertiesChanged), and
  /// `handle` takes over when that session ends (Notifying goes false).
  func keepBatteryNotifying() async throws(CaptureError) {
    guard case .gatt(let c)? = batterySource else { return }
    let (wanted, closed) = state.withLock { ($0.notifications.contains(.batteryLevelChange), $0.isClosed) }
    guard wanted, !closed, !sessions.holds(c.path), link.isUsable else { return }
    if try await client.isNotifying(c.path) { return }
    // A concurrent call of ours may win the race: starting a session we hold is a no-op.
    try await sessions.start(c.path)
  }
}
