import TestSupport
import Testing

@testable import CaptureCore

/// A device double with a NotificationsDevice setting (`setting`): `get` and `set` of it, and the
/// `keepNotifications` NotificationSetup calls, are recorded.
private func notifyingDevice(
  setting: UInt32, bits: Notifications, events kinds: Set<EventKind>, writable: Bool = true
) -> FakeDevice {
  let readable: [PropertyID] = bits.isEmpty ? [] : [.notificationsDevice]
  var behaviour = FakeDevice.Behaviour()
  behaviour.triggerFailure = .notSupported("no trigger")
  return FakeDevice(
    DeviceInfo(id: "AA:BB:CC:DD:EE:FF", name: "Test scanner", type: .scannerD600),
    capabilities: Capabilities(
      readable: readable, writable: writable ? readable : [], triggers: [], events: kinds, notifications: bits
    ),
    values: [.notificationsDevice: .ulong(setting)], start: .finished, behaviour: behaviour)
}

/// The device's calls of the NotificationsDevice setting: "get", "set BITS" (taken), "keep BITS".
private func settingCalls(_ device: FakeDevice) -> [String] {
  device.calls.compactMap { call in
    switch call {
    case .get(.notificationsDevice, _): "get"
    case .set(.notificationsDevice, .ulong(let raw), accepted: true): "set \(raw)"
    case .keepNotifications(let bits): "keep \(bits.rawValue)"
    default: nil
    }
  }
}

@Suite("Notifications: read the setting first, set only when different (docs/capture-sdk.md §7.6)")
struct NotificationSetupTests {
  @Test("each event kind maps to its NotificationsDevice bits; other kinds need none")
  func bitsForKinds() {
    #expect(NotificationSetup.bits(for: [.batteryLevel]).rawValue == 32)
    #expect(NotificationSetup.bits(for: [.power]).rawValue == 16)
    #expect(NotificationSetup.bits(for: [.buttons]).rawValue == 0x0F)
    #expect(NotificationSetup.bits(for: Set(EventKind.allCases)).rawValue == 63)
    #expect(NotificationSetup.bits(for: [.decodedData, .deviceArrival, .error]).isEmpty)
  }

  @Test("every wanted bit already on: the setting is read and nothing is written")
  func noWriteWhenAlreadySet() async throws {
    let device = notifyingDevice(setting: 0x21, bits: .all, events: [.batteryLevel, .power, .buttons])
    let outcome = try await NotificationSetup.apply(device, kinds: [.batteryLevel, .decodedData])
    #expect(settingCalls(device) == ["get", "keep 32"])
    #expect(outcome == .init(before: Notifications(rawValue: 0x21), written: nil, unsupported: []))
  }

  @Test("a wanted bit off: one write of the bits already on plus the wanted ones")
  func writesTheUnion() async throws {
    // trigger-button-press (1) and an unknown bit (0x40) on: both are kept.
    let device = notifyingDevice(setting: 0x41, bits: .all, events: [.batteryLevel, .power, .buttons])
    let outcome = try await NotificationSetup.apply(device, kinds: [.batteryLevel, .power])
    #expect(settingCalls(device) == ["get", "set \(0x41 | 16 | 32)", "keep 48"])
    #expect(outcome.written?.rawValue == 0x71)
    let again = try await NotificationSetup.apply(device, kinds: [.batteryLevel, .power])
    #expect(again.written == nil, "a second run changes nothing")
    #expect(settingCalls(device) == ["get", "set \(0x71)", "keep 48", "get", "keep 48"])
  }

  @Test("only the bits the device has are asked for; kinds it cannot report are listed, not faked")
  func unsupportedKinds() async throws {
    let device = notifyingDevice(setting: 0, bits: .batteryLevelChange, events: [.batteryLevel])
    let outcome = try await NotificationSetup.apply(device, kinds: [.batteryLevel, .power, .buttons])
    #expect(settingCalls(device) == ["get", "set 32", "keep 32"])
    #expect(outcome.unsupported == [.power, .buttons])
  }

  @Test("a device without NotificationsDevice is neither read nor written")
  func deviceWithoutSetting() async throws {
    let device = notifyingDevice(setting: 0, bits: [], events: [.decodedData])
    let outcome = try await NotificationSetup.apply(device, kinds: Set(EventKind.allCases))
    #expect(settingCalls(device).isEmpty)
    #expect(outcome == .init(before: nil, written: nil, unsupported: [.batteryLevel, .power, .buttons]))
  }

  @Test("a read-only setting that lacks a wanted bit is NOTSUPPORTED, with no write attempted")
  func readOnlySetting() async throws {
    let device = notifyingDevice(
      setting: 0, bits: .batteryLevelChange, events: [.batteryLevel], writable: false)
    do {
      _ = try await NotificationSetup.apply(device, kinds: [.batteryLevel])
      Issue.record("no error")
    } catch {
      #expect(error.code == .notSupported)
    }
    #expect(settingCalls(device) == ["get"])
  }
}
