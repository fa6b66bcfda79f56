/// Turning on the NotificationsDevice bits a listener needs (docs/capture-sdk.md §7.6): the Power, Buttons
/// and BatteryLevel events "need the Notifications bit" (§4.1). The SDK's rule is to read the setting first
/// and set it only when it differs; the new value keeps every bit that was already on (another
/// application, or the user, may rely on it) and adds the wanted ones.
public enum NotificationSetup {
  /// The event kinds that depend on a NotificationsDevice bit.
  public static let kinds: Set<EventKind> = [.batteryLevel, .power, .buttons]

  /// The bits that make a device send these event kinds: BatteryLevelChange for batteryLevel,
  /// PowerState for power, the four button bits (trigger and power button, press and release) for
  /// buttons (docs/capture-sdk.md §7.6).
  public static func bits(for kinds: Set<EventKind>) -> Notifications {
    var bits = Notifications()
    if kinds.contains(.batteryLevel) { bits.formUnion(.batteryLevelChange) }
    if kinds.contains(.power) { bits.formUnion(.powerState) }
    if kinds.contains(.buttons) {
      bits.formUnion([.triggerButtonPress, .triggerButtonRelease, .powerButtonPress, .powerButtonRelease])
    }
    return bits
  }

  /// What `apply` found and did on one device.
  public struct Outcome: Sendable, Equatable {
    /// The setting read first; nil when the device has none of the wanted bits (nothing was read).
    public var before: Notifications?
    /// The value written, or nil when nothing was written (the setting already had every wanted bit).
    public var written: Notifications?
    /// Asked-for kinds this device cannot report (no NotificationsDevice bit for them, or no way that
    /// public facts describe), in a stable order.
    public var unsupported: [EventKind]

    public init(before: Notifications? = nil, written: Notifications? = nil, unsupported: [EventKind] = []) {
      self.before = before
      self.written = written
      self.unsupported = unsupported
    }
  }

  /// Reads the device's NotificationsDevice and, only when a wanted bit is off, writes the current value
  /// plus the wanted bits. Kinds the device cannot report are listed, never faked.
  public static func apply(_ device: any Device, kinds wantedKinds: Set<EventKind>) async throws(CaptureError)
    -> Outcome
  {
    let caps = device.capabilities
    let asked = wantedKinds.intersection(kinds)
    var outcome = Outcome(
      unsupported: EventKind.allCases.filter { asked.contains($0) && !caps.events.contains($0) })
    let wanted = bits(for: asked).intersection(caps.notifications)
    guard !wanted.isEmpty, caps.canRead(.notificationsDevice) else { return outcome }
    let current = try await device.get(.notificationsDevice, argument: .none)
    guard case .ulong(let raw) = current else {
      throw CaptureError(.invalidValue, "notifications read back as \(current.type.name), not Ulong")
    }
    let before = Notifications(rawValue: raw)
    outcome.before = before
    if before.isSuperset(of: wanted) {
      await device.keepNotifications(wanted)
      return outcome
    }
    guard caps.canWrite(.notificationsDevice) else {
      throw .notSupported("\(device.info.name) cannot change its notifications setting")
    }
    let after = before.union(wanted)
    try await device.set(.notificationsDevice, .ulong(after.rawValue))
    await device.keepNotifications(wanted)
    outcome.written = after
    return outcome
  }
}
