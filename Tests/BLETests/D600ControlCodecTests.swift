import Drivers
import Testing

/// `bytes` zero-padded to TS's 20-byte write (docs/device-protocols.md §2.5, TS).
private func padded(_ bytes: [UInt8]) -> [UInt8] { bytes + [UInt8](repeating: 0, count: 20 - bytes.count) }

@Suite struct D600ControlCodecTests {
  @Test func keepAliveIsOneByte() {
    #expect(D600Control.keepAlive() == [0x00])
  }

  @Test func simpleCommands() {
    #expect(D600Control.playSequence(0x01) == padded([0x90, 0x01]))
    #expect(D600Control.buzzer(duration: 6, frequency: 0x00) == padded([0x92, 0x06, 0x00]))
    #expect(D600Control.buzzer() == padded([0x92, 0x06, 0x00]))
    #expect(D600Control.vibrator(repeat: 2, duration: 20, decay: 10) == padded([0x94, 0x02, 0x14, 0x0A]))
    #expect(D600Control.vibratorPattern(0x03) == padded([0x94, 0xFF, 0x03]))
    #expect(D600Control.wink() == padded([0x9F]))
    #expect(D600Control.scanMode(0xA0) == padded([0xA0]))
    #expect(D600Control.scanMode(0xA1) == padded([0xA1]))
    #expect(D600Control.scanMode(0xA3) == padded([0xA3]))
    for command in [D600Control.playSequence(1), D600Control.wink(), D600Control.buzzer()] {
      #expect(command.count == 20)
    }
  }

  @Test func commandDropsParametersPastTheBuffer() {
    let command = D600Control.command(0x90, Array(1...30))
    #expect(command == [0x90] + Array(1...19))
  }

  @Test func ledsCurrentLayout() {
    let command = D600Control.leds(
      power: D600LED(delay: 100, color: .red, mode: 0x01),
      scan: D600LED(delay: 50, color: .green, mode: 0x02),
      ble: D600LED(delay: 25, color: .blue, mode: 0x03))
    #expect(
      command
        == padded([0x91, 100, 0xFF, 0x00, 0x00, 0x01, 50, 0x00, 0xFF, 0x00, 0x02, 25, 0xFF, 0x03]))
    let white = D600RGB(red: 0xFF, green: 0xFF, blue: 0xFF)
    #expect(
      D600Control.leds(power: .off, scan: D600LED(color: white), ble: .off)
        == padded([0x91, 0, 0, 0, 0, 0, 100, 0xFF, 0xFF, 0xFF, 0x01, 0, 0, 0]))
  }

  @Test func ledsLegacyLayout() {
    let on = D600RGB(red: 1, green: 1, blue: 1)
    #expect(
      D600Control.legacyLEDs(duration: 1, scan: on, power: on, bluetooth: 1)
        == padded([0x91, 1, 1, 1, 1, 1, 1, 1, 1]))
    #expect(
      D600Control.legacyLEDs(duration: 2, scan: D600RGB(red: 0, green: 1, blue: 0), power: .off, bluetooth: 0)
        == padded([0x91, 2, 0, 1, 0, 0, 0, 0, 0]))
  }

  @Test func ledLayoutByFirmware() {
    #expect(D600Control.usesLegacyLEDLayout(firmware: (1, 43)))
    #expect(D600Control.usesLegacyLEDLayout(firmware: (0, 99)))
    #expect(!D600Control.usesLegacyLEDLayout(firmware: (1, 44)))
    #expect(!D600Control.usesLegacyLEDLayout(firmware: (1, 49)))
    #expect(!D600Control.usesLegacyLEDLayout(firmware: (2, 0)))
    #expect(!D600Control.usesLegacyLEDLayout(firmware: nil))
  }

  private static let goodLED = padded([0x91, 0, 0, 0, 0, 0, 100, 0x00, 0xFF, 0x00, 0x01, 0, 0, 0])
  private static let badLED = padded([0x91, 0, 0, 0, 0, 0, 100, 0xFF, 0x00, 0x00, 0x01, 0, 0, 0])
  private static let goodBeep = padded([0x92, 6, 0x00])
  private static let badBeep = padded([0x92, 18, 0x00])
  private static let goodRumble = padded([0x94, 1, 20, 10])
  private static let badRumble = padded([0x94, 2, 20, 10])

  @Test func confirmationGoodAndBad() {
    #expect(
      D600Control.confirmation(good: true, led: true, beep: true, rumble: true, firmware: nil)
        == [Self.goodLED, Self.goodBeep, Self.goodRumble])
    #expect(
      D600Control.confirmation(good: false, led: true, beep: true, rumble: true, firmware: (1, 44))
        == [Self.badLED, Self.badBeep, Self.badRumble])
    #expect(
      D600Control.confirmation(good: true, led: false, beep: true, rumble: false, firmware: nil) == [
        Self.goodBeep
      ])
    #expect(
      D600Control.confirmation(good: true, led: false, beep: false, rumble: false, firmware: nil).isEmpty)
  }

  @Test func confirmationWithOldFirmwareUsesTheLegacyLEDs() {
    #expect(
      D600Control.confirmation(good: true, led: true, beep: false, rumble: false, firmware: (1, 43))
        == [padded([0x91, 1, 0x00, 0x01, 0x00, 0, 0, 0, 0])])
    #expect(
      D600Control.confirmation(good: false, led: true, beep: false, rumble: false, firmware: (1, 20))
        == [padded([0x91, 1, 0x01, 0x00, 0x00, 0, 0, 0, 0])])
  }

  @Test func confirmationFromTheSDKActionValue() {
    // docs/capture-sdk.md §7.4: good = 0x15 (green, good beep, good rumble), bad = 0x2A, green + good beep =
    // 0x05.
    #expect(
      D600Control.confirmation(action: 0x15, firmware: nil) == [Self.goodLED, Self.goodBeep, Self.goodRumble])
    #expect(
      D600Control.confirmation(action: 0x2A, firmware: nil) == [Self.badLED, Self.badBeep, Self.badRumble])
    #expect(D600Control.confirmation(action: 0x05, firmware: nil) == [Self.goodLED, Self.goodBeep])
    #expect(D600Control.confirmation(action: 0x20, firmware: nil) == [Self.badRumble])
    #expect(D600Control.confirmation(action: 0x00, firmware: nil).isEmpty)
    #expect(D600Control.confirmation(action: 0x3F, firmware: nil).isEmpty)
  }
}
