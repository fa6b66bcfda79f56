// D600 scan-control characteristic commands (docs/device-protocols.md §2.5, TS `connect.page.ts`,
// `scanner-control.page.ts/.html`, `ble.service.ts`, `utils.ts`).

/// An RGB LED setting. For the FW >= 1.44 layout each channel is on (0xFF) or off (0x00) (TS).
public struct D600RGB: Sendable, Hashable {
  public var red: UInt8
  public var green: UInt8
  public var blue: UInt8

  public init(red: UInt8, green: UInt8, blue: UInt8) {
    self.red = red
    self.green = green
    self.blue = blue
  }

  public static let off = D600RGB(red: 0x00, green: 0x00, blue: 0x00)
  public static let red = D600RGB(red: 0xFF, green: 0x00, blue: 0x00)
  public static let green = D600RGB(red: 0x00, green: 0xFF, blue: 0x00)
  public static let blue = D600RGB(red: 0x00, green: 0x00, blue: 0xFF)
}

/// One LED of the FW >= 1.44 LED command: delay, colour, mode (docs/device-protocols.md §2.5, TS). TS's UI
/// defaults are delay 100 (labelled "ms") and mode 0x01; what the mode values mean is Unknown.
public struct D600LED: Sendable, Hashable {
  public var delay: UInt8
  public var color: D600RGB
  public var mode: UInt8

  public init(delay: UInt8 = 100, color: D600RGB, mode: UInt8 = 0x01) {
    self.delay = delay
    self.color = color
    self.mode = mode
  }

  /// Colour off, delay 0, mode 0x00 (our choice for "not driven"; the effect of mode 0 is Unknown).
  public static let off = D600LED(delay: 0, color: .off, mode: 0x00)
}

/// Scan-control commands: TS writes a 20-byte buffer, byte 0 = command, then the parameters, the rest
/// zero; the keep-alive is a 1-byte write (docs/device-protocols.md §2.5, TS).
public enum D600Control {
  /// TS's write size for every command but the keep-alive.
  public static let bufferLength = 20

  /// Command codes (docs/device-protocols.md §2.5, TS labels).
  public static let nop: UInt8 = 0x00
  public static let playSequenceCode: UInt8 = 0x90
  public static let ledsCode: UInt8 = 0x91
  public static let buzzerCode: UInt8 = 0x92
  public static let vibratorCode: UInt8 = 0x94
  public static let winkCode: UInt8 = 0x9F

  /// `command` then `parameters`, zero-padded to 20 bytes (parameters past byte 19 are dropped).
  public static func command(_ code: UInt8, _ parameters: [UInt8] = []) -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: bufferLength)
    buffer[0] = code
    for (index, value) in parameters.prefix(bufferLength - 1).enumerated() { buffer[index + 1] = value }
    return buffer
  }

  /// `00`, one byte: NOP / keep-alive, optionally sent after each frame (docs/device-protocols.md §2.3/§2.5,
  /// TS).
  public static func keepAlive() -> [UInt8] { [nop] }

  /// `90 <id>`: play a UI sequence (TS's UI default id is 0x01).
  public static func playSequence(_ id: UInt8) -> [UInt8] { command(playSequenceCode, [id]) }

  /// `91`, firmware >= 1.44 layout: pwrDelay, pwrR, pwrG, pwrB, pwrMode, scanDelay, scanR, scanG, scanB,
  /// scanMode, bleDelay, bleB, bleMode (docs/device-protocols.md §2.5, TS). The BLE LED is blue only: only
  /// `ble.color.blue` is sent.
  public static func leds(power: D600LED, scan: D600LED, ble: D600LED) -> [UInt8] {
    command(
      ledsCode,
      [
        power.delay, power.color.red, power.color.green, power.color.blue, power.mode,
        scan.delay, scan.color.red, scan.color.green, scan.color.blue, scan.mode,
        ble.delay, ble.color.blue, ble.mode,
      ])
  }

  /// `91`, firmware < 1.44 layout: duration, RFID-R, RFID-G, RFID-B, PWR-R, PWR-G, PWR-B, BT
  /// (docs/device-protocols.md §2.5, TS). TS's UI defaults are duration 1 and 0x01 per channel; whether the
  /// channel bytes are on/off flags or levels is Unknown.
  public static func legacyLEDs(duration: UInt8, scan: D600RGB, power: D600RGB, bluetooth: UInt8) -> [UInt8] {
    command(
      ledsCode,
      [duration, scan.red, scan.green, scan.blue, power.red, power.green, power.blue, bluetooth])
  }

  /// True when the firmware (major, minor) from SW revision `2A28` needs the old LED layout (< 1.44,
  /// docs/device-protocols.md §2.3, TS). Unknown firmware gets the current layout.
  public static func usesLegacyLEDLayout(firmware: (Int, Int)?) -> Bool {
    guard let firmware else { return false }
    return firmware < (1, 44)
  }

  /// `92 <duration> <frequency>` (TS's UI defaults: 6, 0x00; units Unknown).
  public static func buzzer(duration: UInt8 = 6, frequency: UInt8 = 0x00) -> [UInt8] {
    command(buzzerCode, [duration, frequency])
  }

  /// `94 <repeat> <duration> <decay>` (TS). A repeat of 255 means "pattern" instead: use
  /// ``vibratorPattern(_:)``.
  public static func vibrator(repeat count: UInt8, duration: UInt8, decay: UInt8) -> [UInt8] {
    command(vibratorCode, [count, duration, decay])
  }

  /// `94 FF <pattern>`: a pulse-pattern byte (TS; pattern values Unknown).
  public static func vibratorPattern(_ pattern: UInt8) -> [UInt8] { command(vibratorCode, [0xFF, pattern]) }

  /// `9F`: wink.
  public static func wink() -> [UInt8] { command(winkCode) }

  /// A0, A1 or A3 with no parameters: scan-mode / trigger commands. TS's "single scan" button sends A1 in
  /// Auto mode and A0 otherwise; Auto→Single sends A3, Single→Auto sends A0. Exact semantics Unknown
  /// (docs/device-protocols.md §2.5, TS).
  public static func scanMode(_ op: UInt8) -> [UInt8] { command(op) }

  /// The SDK's data confirmation (docs/capture-sdk.md §7.4: LED green/red, beep good/bad, rumble good/bad) as
  /// scan-control writes, LED first, then buzzer, then vibrator.
  ///
  /// The SDK does not publish what a D600 does for these; this mapping is ours, to be tuned on hardware:
  /// * LED: the scan LED green (good) or red (bad), delay 100, mode 0x01 (TS's defaults); power and BLE
  ///   LEDs ``D600LED/off``. Firmware < 1.44 (or as given): the legacy layout with duration 1 and 0x01
  ///   for the lit channel (TS's UI defaults).
  /// * Beep: good = 6 (TS's default duration), bad = 18 (three times as long), both frequency 0x00: the
  ///   frequency byte's scale is Unknown, so good and bad differ by length only.
  /// * Rumble: good = one vibration (repeat 1, duration 20, decay 10), bad = two (repeat 2). Units Unknown.
  public static func confirmation(good: Bool, led: Bool, beep: Bool, rumble: Bool, firmware: (Int, Int)?)
    -> [[UInt8]]
  {
    var writes: [[UInt8]] = []
    if led { writes.append(confirmationLED(good: good, firmware: firmware)) }
    if beep { writes.append(buzzer(duration: good ? 6 : 18, frequency: 0x00)) }
    if rumble { writes.append(vibrator(repeat: good ? 1 : 2, duration: 20, decay: 10)) }
    return writes
  }

  /// A packed `DataConfirmationAction` (docs/capture-sdk.md §7.4: LED = bits 0-1 (1 green, 2 red), beep =
  /// bits 2-3 and rumble = bits 4-5 (1 good, 2 bad), 0 = none) as scan-control writes, each field mapped as
  /// in ``confirmation(good:led:beep:rumble:firmware:)``. The value 3 in a field is not defined and is
  /// ignored.
  public static func confirmation(action: UInt32, firmware: (Int, Int)?) -> [[UInt8]] {
    let led = action & 3
    let beep = (action >> 2) & 3
    let rumble = (action >> 4) & 3
    var writes: [[UInt8]] = []
    if led == 1 || led == 2 {
      writes += confirmation(good: led == 1, led: true, beep: false, rumble: false, firmware: firmware)
    }
    if beep == 1 || beep == 2 {
      writes += confirmation(good: beep == 1, led: false, beep: true, rumble: false, firmware: firmware)
    }
    if rumble == 1 || rumble == 2 {
      writes += confirmation(good: rumble == 1, led: false, beep: false, rumble: true, firmware: firmware)
    }
    return writes
  }

  private static func confirmationLED(good: Bool, firmware: (Int, Int)?) -> [UInt8] {
    if usesLegacyLEDLayout(firmware: firmware) {
      let lit = good ? D600RGB(red: 0, green: 0x01, blue: 0) : D600RGB(red: 0x01, green: 0, blue: 0)
      return legacyLEDs(duration: 1, scan: lit, power: .off, bluetooth: 0x00)
    }
    return leds(power: .off, scan: D600LED(color: good ? .green : .red), ble: .off)
  }
}
