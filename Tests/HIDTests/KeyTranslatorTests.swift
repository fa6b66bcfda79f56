import Drivers
import Testing

/// A scripted typist: key codes from linux/input-event-codes.h, 10 ms apart unless told otherwise,
/// each press followed by its release and an EV_SYN, as a USB HID keyboard reports them.
struct Typist {
  var events: [InputEvent] = []
  var now: Int64 = 1_700_000_000_000_000
  var step: Int64 = 10_000

  static let shift: UInt16 = 42
  static let altGr: UInt16 = 100
  static let enter: UInt16 = 28

  mutating func raw(_ code: UInt16, _ value: Int32) {
    events.append(.key(code, value, at: now))
    events.append(InputEvent(microseconds: now, type: InputEvent.typeSync, code: 0, value: 0))
    now += step
  }

  /// Presses and releases `code`, holding `modifier` around it when given. An EV_MSC scancode comes
  /// first, as from a real keyboard (it must be ignored).
  mutating func tap(_ code: UInt16, with modifier: UInt16? = nil) {
    if let modifier { raw(modifier, 1) }
    events.append(InputEvent(microseconds: now, type: InputEvent.typeMisc, code: 4, value: 0x7001E))
    raw(code, 1)
    raw(code, 0)
    if let modifier { raw(modifier, 0) }
  }

  mutating func pause(microseconds: Int64) { now += microseconds }
}

func translate(_ events: [InputEvent], keymap: Keymap = .us, timeout: Int64 = 100_000) -> [HIDCode] {
  var translator = KeyTranslator(keymap: keymap, interKeyTimeoutMicroseconds: timeout)
  var out = events.compactMap { translator.feed($0) }
  if let last = translator.flush() { out.append(last) }
  return out
}

/// Keys as (code, shifted?, altGr?) in a compact table: "s" shift, "g" AltGr.
func typed(_ keys: [(UInt16, String)], enter: Bool = true) -> [InputEvent] {
  var t = Typist()
  for (code, mods) in keys {
    t.tap(code, with: mods == "s" ? Typist.shift : mods == "g" ? Typist.altGr : nil)
  }
  if enter { t.tap(Typist.enter) }
  return t.events
}

@Suite struct KeyTranslatorTests {
  @Test func usHelloWithEnter() {
    // H e l l o - 1 2 3 Enter
    let keys: [(UInt16, String)] = [
      (35, "s"), (18, ""), (38, ""), (38, ""), (24, ""), (12, ""), (2, ""), (3, ""), (4, ""),
    ]
    #expect(translate(typed(keys)) == [HIDCode(text: "Hello-123")])
  }

  @Test(
    arguments: [
      // (keymap, keys, expected text)
      (Keymap.us, [(2, "s"), (3, "s"), (40, "s"), (43, ""), (53, "s"), (57, ""), (15, "")], "!@\"\\? \t"),
      (Keymap.uk, [(3, "s"), (4, "s"), (40, "s"), (43, ""), (86, ""), (86, "s"), (5, "g")], "\"£@#\\|€"),
      (Keymap.de, [(34, "s"), (19, ""), (26, ""), (12, ""), (18, "")], "Grüße"),
      (Keymap.de, [(21, ""), (44, ""), (21, "s"), (44, "s"), (53, ""), (53, "s")], "zyZY-_"),
      (Keymap.de, [(16, "g"), (18, "g"), (8, "g"), (12, "g"), (3, "s"), (4, "s"), (11, "s")], "@€{\\\"§="),
      (Keymap.de, [(39, ""), (40, ""), (26, "s"), (39, "s"), (40, "s")], "öäÜÖÄ"),
      (Keymap.fr, [(2, "s"), (3, "s"), (4, "s"), (10, "s"), (11, "s")], "12390"),
      (
        Keymap.fr,
        [(2, ""), (3, ""), (4, ""), (5, ""), (6, ""), (7, ""), (8, ""), (9, ""), (10, ""), (11, "")],
        "&é\"'(-è_çà"
      ),
      (
        Keymap.fr,
        [(16, ""), (17, ""), (30, ""), (39, ""), (44, ""), (50, ""), (51, ""), (52, ""), (53, "")],
        "azqmw,;:!"
      ),
      (Keymap.fr, [(11, "g"), (4, "g"), (18, "g"), (51, "s"), (52, "s")], "@#€./"),
    ] as [(Keymap, [(UInt16, String)], String)])
  func layouts(keymap: Keymap, keys: [(UInt16, String)], expected: String) {
    #expect(translate(typed(keys), keymap: keymap) == [HIDCode(text: expected)])
  }

  @Test func keypadEnterEndsACodeAndRightShiftShifts() {
    var t = Typist()
    t.tap(30, with: 54)  // KEY_A with KEY_RIGHTSHIFT
    t.tap(82)  // KEY_KP0
    t.tap(96)  // KEY_KPENTER
    t.tap(31)
    t.tap(28)
    #expect(translate(t.events) == [HIDCode(text: "A0"), HIDCode(text: "s")])
  }

  @Test func capsLockTogglesLettersOnly() {
    var t = Typist()
    t.tap(58)  // KEY_CAPSLOCK on
    t.tap(30)
    t.tap(2)
    t.tap(30, with: Typist.shift)
    t.tap(58)  // off
    t.tap(30)
    t.tap(28)
    #expect(translate(t.events) == [HIDCode(text: "A1aa")])
    var g = Typist()
    g.tap(58)
    g.tap(26)  // ü on de becomes Ü under CapsLock
    g.tap(12)  // ß has no upper case on this key: unchanged
    g.tap(28)
    #expect(translate(g.events, keymap: .de) == [HIDCode(text: "Üß")])
  }

  @Test func gapLongerThanTimeoutEndsTheCode() {
    var t = Typist()
    t.tap(2)
    t.tap(3)
    t.pause(microseconds: 150_000)
    t.tap(4)
    t.tap(5)
    // No Enter: the end of input flushes the second code.
    #expect(translate(t.events) == [HIDCode(text: "12"), HIDCode(text: "34")])
    // The same gap within a longer timeout keeps one code.
    #expect(translate(t.events, timeout: 500_000) == [HIDCode(text: "1234")])
  }

  @Test func gapJustAtTimeoutDoesNotSplit() {
    var t = Typist()
    t.step = 100_000  // every event exactly 100 ms after the last
    t.tap(2)
    t.tap(3)
    #expect(translate(t.events) == [HIDCode(text: "12")])
  }

  @Test func autorepeatTypesAgainButShiftRepeatDoesNot() {
    var t = Typist()
    t.raw(42, 1)
    t.raw(42, 2)  // Shift held long enough to repeat: still one Shift
    t.raw(42, 2)
    t.raw(30, 1)
    t.raw(30, 2)
    t.raw(30, 0)
    t.raw(42, 0)
    t.tap(30)
    t.tap(28)
    #expect(translate(t.events) == [HIDCode(text: "AAa")])
  }

  @Test func unmappedKeysAreKeptNotInvented() {
    var t = Typist()
    t.tap(2)
    t.tap(59)  // KEY_F1: no character
    t.tap(26)  // KEY_LEFTBRACE on fr: dead circumflex, reported rather than guessed
    t.tap(3)
    t.tap(14)  // KEY_BACKSPACE
    t.tap(28)
    #expect(translate(t.events, keymap: .fr) == [HIDCode(text: "&é", unmappedKeys: [59, 26, 14])])
    // A level the layout does not have (AltGr+a on us) is unmapped too.
    var u = Typist()
    u.tap(30, with: Typist.altGr)
    u.tap(28)
    #expect(translate(u.events) == [HIDCode(text: "", unmappedKeys: [30])])
  }

  @Test func controlHeldKeyIsUnmapped() {
    var t = Typist()
    t.tap(46, with: 29)  // Ctrl+C: not the character c
    t.tap(46)
    t.tap(28)
    #expect(translate(t.events) == [HIDCode(text: "c", unmappedKeys: [46])])
  }

  @Test func bareEnterIsNoCode() {
    var t = Typist()
    t.tap(28)
    t.tap(28)
    #expect(translate(t.events).isEmpty)
  }

  @Test func recordsRoundTripThroughTheirBytes() {
    let event = InputEvent.key(28, 1, at: 1_700_000_123_456_789)
    let bytes = event.bytes
    #expect(bytes.count == 24)
    #expect(bytes[16] == 1 && bytes[17] == 0 && bytes[18] == 28 && bytes[20] == 1)
    let back = bytes.withUnsafeBytes { InputEvent($0, at: 0) }
    #expect(back == event)
  }
}
