import Synchronization
import Testing

@testable import CaptureCore

/// A device double with a NotificationsDevice setting: records every get and set it receives.
private final class NotifyingDevice: Device, Sendable {
  let info = DeviceInfo(id: "AA:BB:CC:DD:EE:FF", name: "Test scanner", type: .scannerD600)
  let capabilities: Capabilities
  let events: AsyncStream<Event>
  let setting: Mutex<UInt32>
  let calls = Mutex<[String]>([])

  init(setting: UInt32, bits: Notifications, events kinds: Set<EventKind>, writable: Bool = true) {
    self.setting = Mutex(setting)
    let readable: [PropertyID] = bits.isEmpty ? [] : [.notificationsDevice]
    capabilities = Capabilities(
      readable: readable, writable: writable ? readable : [], triggers: [], events: kinds, notifications: bits
    )
    events = AsyncStream { $0.finish() }
  }

  func get(_ property: PropertyID, argument: PropertyValue) async throws(CaptureError) -> PropertyValue {
    guard property == .notificationsDevice else { throw unsupported(property) }
    calls.withLock { $0.append("get") }
    return .ulong(setting.withLock { $0 })
  }

  func set(_ property: PropertyID, _ value: PropertyValue) async throws(CaptureError) {
    guard property == .notificationsDevice, case .ulong(let raw) = value else { throw unsupported(property) }
    calls.withLock { $0.append("set \(raw)") }
    setting.withLock { $0 = raw }
  }

  func keepNotifications(_ bits: Notifications) async {
    calls.withLock { $0.append("keep \(bits.rawValue)") }
  }

  func trigger(_ action: Trigger) async throws(CaptureError) { throw .notSupported("no trigger") }
  func close() async {}
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
    let device = NotifyingDevice(setting: 0x21, bits: .all, events: [.batteryLevel, .power, .buttons])
    let outcome = try await NotificationSetup.apply(device, kinds: [.batteryLevel, .decodedData])
    #expect(device.calls.withLock { $0 } == ["get", "keep 32"])
    #expect(outcome == .init(before: Notifications(rawValue: 0x21), written: nil, unsupported: []))
  }

  @Test("a wanted bit off: one write of the bits already on plus the wanted ones")
  func writesTheUnion() async throws {
    // trigger-button-press (1) and an unknown bit (0x40) on: both are kept.
    let device = NotifyingDevice(setting: 0x41, bits: .all, events: [.batteryLevel, .power, .buttons])
    let outcome = try await NotificationSetup.apply(device, kinds: [.batteryLevel, .power])
    #expect(device.calls.withLock { $0 } == ["get", "set \(0x41 | 16 | 32)", "keep 48"])
    #expect(outcome.written?.rawValue == 0x71)
    let again = try await NotificationSetup.apply(device, kinds: [.batteryLevel, .power])
    #expect(again.written == nil, "a second run changes nothing")
    #expect(device.calls.withLock { $0 } == ["get", "set \(0x71)", "keep 48", "get", "keep 48"])
  }

  @Test("only the bits the device has are asked for; kinds it cannot report are listed, not faked")
  func unsupportedKinds() async throws {
    let device = NotifyingDevice(setting: 0, bits: .batteryLevelChange, events: [.batteryLevel])
    let outcome = try await NotificationSetup.apply(device, kinds: [.batteryLevel, .power, .buttons])
    #expect(device.calls.withLock { $0 } == ["get", "set 32", "keep 32"])
    #expect(outcome.unsupported == [.power, .buttons])
  }

  @Test("a device without NotificationsDevice is neither read nor written")
  func deviceWithoutSetting() async throws {
    let device = NotifyingDevice(setting: 0, bits: [], events: [.decodedData])
    let outcome = try await NotificationSetup.apply(device, kinds: Set(EventKind.allCases))
    #expect(device.calls.withLock { $0 }.isEmpty)
    #expect(outcome == .init(before: nil, written: nil, unsupported: [.batteryLevel, .power, .buttons]))
  }

  @Test("a read-only setting that lacks a wanted bit is NOTSUPPORTED, with no write attempted")
  func readOnlySetting() async throws {
    let device = NotifyingDevice(
      setting: 0, bits: .batteryLevelChange, events: [.batteryLevel], writable: false)
    do {
      _ = try await NotificationSetup.apply(device, kinds: [.batteryLevel])
      Issue.record("no error")
    } catch {
      #expect(error.code == .notSupported)
    }
    #expect(device.calls.withLock { $0 } == ["get"])
  }
}
