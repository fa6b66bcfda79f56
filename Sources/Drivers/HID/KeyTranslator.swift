import CaptureCore

/// One `struct input_event` from an evdev node (linux/input.h). On 64-bit Linux it is 24 bytes,
/// little-endian on x86_64 and aarch64: `struct timeval` (two 8-byte longs), `__u16 type`,
/// `__u16 code`, `__s32 value`.
public struct InputEvent: Sendable, Equatable {
  public static let size = 24
  /// linux/input-event-codes.h: EV_SYN 0x00, EV_KEY 0x01, EV_MSC 0x04.
  public static let typeSync: UInt16 = 0x00
  public static let typeKey: UInt16 = 0x01
  public static let typeMisc: UInt16 = 0x04

  /// The kernel's timestamp in microseconds (tv_sec * 10^6 + tv_usec).
  public var microseconds: Int64
  public var type: UInt16
  public var code: UInt16
  public var value: Int32

  public init(microseconds: Int64, type: UInt16, code: UInt16, value: Int32) {
    self.microseconds = microseconds
    self.type = type
    self.code = code
    self.value = value
  }

  /// A key event: value 1 press, 2 autorepeat, 0 release (Documentation/input/input.rst).
  public static func key(_ code: UInt16, _ value: Int32, at microseconds: Int64) -> InputEvent {
    InputEvent(microseconds: microseconds, type: typeKey, code: code, value: value)
  }

  /// Decodes the record at `offset` (24 bytes must be available).
  public init(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
    let seconds = Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: Int64.self))
    let micros = Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 8, as: Int64.self))
    microseconds = seconds &* 1_000_000 &+ micros
    type = UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 16, as: UInt16.self))
    code = UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 18, as: UInt16.self))
    value = Int32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 20, as: Int32.self))
  }

  /// The record's 24 bytes, as the kernel writes them (for tests and the benchmark).
  public var bytes: [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(Self.size)
    func put<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
    put(microseconds / 1_000_000)
    put(microseconds % 1_000_000)
    put(type)
    put(code)
    put(value)
    return out
  }
}

/// One scanned code as typed by a keyboard-wedge scanner. Lossless: every key press that the layout
/// cannot turn into a character is kept in `unmappedKeys` (its evdev key code, in order), never
/// dropped and never replaced by an invented character.
public struct HIDCode: Sendable, Equatable {
  public var text: String
  public var unmappedKeys: [UInt16]

  public init(text: String, unmappedKeys: [UInt16] = []) {
    self.text = text
    self.unmappedKeys = unmappedKeys
  }
}

/// The keyboard layout the scanner was configured to type for: Core's `KeyboardLayout` (its one list
/// of layouts, which `--keymap` is checked against), with the key tables this driver translates by.
public typealias Keymap = KeyboardLayout

extension KeyboardLayout {

  /// The characters one key position types: without modifiers, with Shift, with AltGr.
  struct Levels: Sendable {
    var plain: Character?
    var shifted: Character?
    var altGr: Character?
    /// CapsLock swaps the plain and shifted levels only where they are the two cases of one letter
    /// (xkb's ALPHABETIC key type); on digits and punctuation it changes nothing.
    let isLetter: Bool

    init(plain: Character? = nil, shifted: Character? = nil, altGr: Character? = nil) {
      self.plain = plain
      self.shifted = shifted
      self.altGr = altGr
      if let plain, let shifted {
        isLetter = plain != shifted && plain.isLetter && String(plain).uppercased() == String(shifted)
      } else {
        isLetter = false
      }
    }
  }

  /// Key codes from linux/input-event-codes.h. Keys with the same meaning on every layout.
  private static let common: [UInt16: Levels] = [
    15: Levels(plain: "\t", shifted: "\t"),  // KEY_TAB
    57: Levels(plain: " ", shifted: " "),  // KEY_SPACE
    // Keypad with NumLock on: scanners that emit Alt+keypad codes or keypad digits send these.
    71: Levels(plain: "7"), 72: Levels(plain: "8"), 73: Levels(plain: "9"),  // KEY_KP7..KP9
    75: Levels(plain: "4"), 76: Levels(plain: "5"), 77: Levels(plain: "6"),  // KEY_KP4..KP6
    79: Levels(plain: "1"), 80: Levels(plain: "2"), 81: Levels(plain: "3"),  // KEY_KP1..KP3
    82: Levels(plain: "0"),  // KEY_KP0
    55: Levels(plain: "*"), 74: Levels(plain: "-"), 78: Levels(plain: "+"), 98: Levels(plain: "/"),
  ]

  /// Letter rows of a QWERTY board: KEY_Q 16 … KEY_P 25, KEY_A 30 … KEY_L 38, KEY_Z 44 … KEY_M 50.
  private static func letters(_ rows: [(UInt16, String)]) -> [UInt16: Levels] {
    var out: [UInt16: Levels] = [:]
    for (first, row) in rows {
      for (i, c) in row.enumerated() {
        out[first + UInt16(i)] = Levels(plain: c, shifted: Character(String(c).uppercased()))
      }
    }
    return out
  }

  /// Keys whose plain and shifted characters are given as a two-character string.
  private static func pairs(_ table: [UInt16: String]) -> [UInt16: Levels] {
    table.mapValues { s in Levels(plain: s.first, shifted: s.dropFirst().first) }
  }

  private static func merge(_ tables: [UInt16: Levels]...) -> [UInt16: Levels] {
    tables.reduce(into: [:]) { result, table in result.merge(table) { _, new in new } }
  }

  private static func withAltGr(_ base: [UInt16: Levels], _ extra: [UInt16: Character]) -> [UInt16: Levels] {
    var out = base
    for (code, c) in extra { out[code, default: Levels()].altGr = c }
    return out
  }

  /// US QWERTY (xkb "us"): KEY_1 2 … KEY_0 11, KEY_MINUS 12, KEY_EQUAL 13, KEY_LEFTBRACE 26,
  /// KEY_RIGHTBRACE 27, KEY_SEMICOLON 39, KEY_APOSTROPHE 40, KEY_GRAVE 41, KEY_BACKSLASH 43,
  /// KEY_COMMA 51, KEY_DOT 52, KEY_SLASH 53, KEY_KPDOT 83.
  private static let usTable: [UInt16: Levels] = merge(
    common, letters([(16, "qwertyuiop"), (30, "asdfghjkl"), (44, "zxcvbnm")]),
    pairs([
      2: "1!", 3: "2@", 4: "3#", 5: "4$", 6: "5%", 7: "6^", 8: "7&", 9: "8*", 10: "9(", 11: "0)",
      12: "-_", 13: "=+", 26: "[{", 27: "]}", 39: ";:", 40: "'\"", 41: "`~", 43: "\\|",
      51: ",<", 52: ".>", 53: "/?",
    ]),
    [83: Levels(plain: ".")])

  /// UK (xkb "gb"): as US except Shift+2 `"`, Shift+3 `£`, KEY_APOSTROPHE `' @`, KEY_GRAVE `` ` ¬``,
  /// KEY_BACKSLASH (the ISO key left of Enter) `# ~`, KEY_102ND 86 `\ |`; AltGr+4 `€`.
  private static let ukTable: [UInt16: Levels] = withAltGr(
    merge(usTable, pairs([3: "2\"", 4: "3£", 40: "'@", 41: "`¬", 43: "#~", 86: "\\|"])), [5: "€"])

  /// German (xkb "de", QWERTZ): KEY_Y 21 types z and KEY_Z 44 types y; ß on KEY_MINUS, ü ö ä on
  /// KEY_LEFTBRACE, KEY_SEMICOLON, KEY_APOSTROPHE. KEY_EQUAL (´) and KEY_GRAVE (^) are dead keys that
  /// combine with the next key, so they stay unmapped (reported, not guessed). AltGr per xkb "de":
  /// 2 ² 3 ³ 7 { 8 [ 9 ] 0 } ß \ q @ e € + ~ < |.
  private static let deTable: [UInt16: Levels] = withAltGr(
    merge(
      common, letters([(16, "qwertzuiop"), (30, "asdfghjkl"), (44, "yxcvbnm")]),
      pairs([
        2: "1!", 3: "2\"", 4: "3§", 5: "4$", 6: "5%", 7: "6&", 8: "7/", 9: "8(", 10: "9)", 11: "0=",
        12: "ß?", 26: "üÜ", 27: "+*", 39: "öÖ", 40: "äÄ", 43: "#'", 51: ",;", 52: ".:", 53: "-_",
        86: "<>",
      ])),
    [3: "²", 4: "³", 8: "{", 9: "[", 10: "]", 11: "}", 12: "\\", 16: "@", 18: "€", 27: "~", 86: "|"])

  /// French (xkb "fr", AZERTY): the digit row types & é " ' ( - è _ ç à and needs Shift for 1…0;
  /// KEY_Q 16 a, KEY_W 17 z, KEY_A 30 q, KEY_SEMICOLON 39 m, KEY_Z 44 w, KEY_M 50 `, ?`. KEY_LEFTBRACE
  /// (^ ¨) is a dead key and stays unmapped. AltGr: " # ' { ( [ - | _ \ à @ ) ] = } e €.
  private static let frTable: [UInt16: Levels] = withAltGr(
    merge(
      common, letters([(16, "azertyuiop"), (30, "qsdfghjklm"), (44, "wxcvbn")]),
      pairs([
        2: "&1", 3: "é2", 4: "\"3", 5: "'4", 6: "(5", 7: "-6", 8: "è7", 9: "_8", 10: "ç9", 11: "à0",
        12: ")°", 13: "=+", 27: "$£", 40: "ù%", 43: "*µ", 50: ",?", 51: ";.", 52: ":/", 53: "!§",
        86: "<>",
      ]),
      [41: Levels(plain: "²")]),
    [4: "#", 5: "{", 6: "[", 7: "|", 9: "\\", 11: "@", 12: "]", 13: "}", 18: "€"])

  var table: [UInt16: Levels] {
    switch self {
    case .us: Self.usTable
    case .uk: Self.ukTable
    case .de: Self.deTable
    case .fr: Self.frTable
    }
  }
}

/// Turns key events from a keyboard-wedge scanner into codes. Pure: no clock but the events' own
/// timestamps, no I/O, so tests and the benchmark drive it with scripted records.
public struct KeyTranslator: Sendable {
  /// Key codes from linux/input-event-codes.h.
  static let leftShift: UInt16 = 42
  static let rightShift: UInt16 = 54
  static let capsLock: UInt16 = 58
  static let rightAlt: UInt16 = 100  // AltGr on every layout here
  static let enter: UInt16 = 28
  static let keypadEnter: UInt16 = 96
  /// Ctrl, left Alt, Meta: while held, a key does not type its character, so it is reported unmapped.
  static let otherModifiers: Set<UInt16> = [29, 97, 56, 125, 126]

  public let keymap: Keymap
  /// A longer gap between key events ends the pending code (scanners type a whole code in a burst).
  public let interKeyTimeoutMicroseconds: Int64
  /// Indexed by key code: an array lookup per key keeps the translator far faster than the scanner.
  private let table: [Keymap.Levels?]

  private var shiftsDown = 0
  private var isCapsLocked = false
  private var isAltGrDown = false
  private var otherModifiersDown: Set<UInt16> = []
  private var pendingText = ""
  private var pendingUnmapped: [UInt16] = []
  private var lastKeyMicroseconds: Int64?

  public init(keymap: Keymap = .us, interKeyTimeoutMicroseconds: Int64 = 100_000) {
    self.keymap = keymap
    self.interKeyTimeoutMicroseconds = interKeyTimeoutMicroseconds
    var table = [Keymap.Levels?](repeating: nil, count: 256)
    for (code, levels) in keymap.table where Int(code) < table.count { table[Int(code)] = levels }
    self.table = table
  }

  /// A code has been started and not yet ended by Enter or a timeout.
  public var hasPending: Bool { !pendingText.isEmpty || !pendingUnmapped.isEmpty }

  /// Feeds one event; returns the code it ended, if any. At most one code ends per event: a timeout
  /// ends the old code, and the key that arrived late starts the next one.
  public mutating func feed(_ event: InputEvent) -> HIDCode? {
    // EV_SYN separates event packets and EV_MSC carries the scancode (MSC_SCAN): neither types.
    guard event.type == InputEvent.typeKey else { return nil }
    var ended: HIDCode?
    if let last = lastKeyMicroseconds, event.microseconds - last > interKeyTimeoutMicroseconds {
      ended = flush()
    }
    lastKeyMicroseconds = event.microseconds
    let code = event.code
    let isDown = event.value != 0
    switch code {
    case Self.leftShift, Self.rightShift:
      // Autorepeat of a held Shift (value 2) must not count it twice.
      if event.value == 1 { shiftsDown += 1 } else if event.value == 0 { shiftsDown = max(0, shiftsDown - 1) }
      return ended
    case Self.capsLock:
      if event.value == 1 { isCapsLocked.toggle() }
      return ended
    case Self.rightAlt:
      isAltGrDown = isDown
      return ended
    case _ where Self.otherModifiers.contains(code):
      if isDown { otherModifiersDown.insert(code) } else { otherModifiersDown.remove(code) }
      return ended
    default:
      break
    }
    // Releases type nothing; a press (1) and an autorepeat (2) each type the key once, as a focused
    // text field would show it.
    guard isDown else { return ended }
    if code == Self.enter || code == Self.keypadEnter {
      // Enter is the scanner's suffix: it ends the code and is not part of it. A bare Enter with
      // nothing pending is not an empty code.
      if let code = flush() { return code }
      return ended
    }
    if let c = character(for: code) {
      pendingText.append(c)
    } else {
      pendingUnmapped.append(code)
    }
    return ended
  }

  /// Ends the pending code now (end of input, or the reader saw the line idle past the timeout).
  public mutating func flush() -> HIDCode? {
    guard hasPending else { return nil }
    defer {
      pendingText = ""
      pendingUnmapped = []
    }
    return HIDCode(text: pendingText, unmappedKeys: pendingUnmapped)
  }

  private func character(for code: UInt16) -> Character? {
    guard otherModifiersDown.isEmpty, Int(code) < table.count, let levels = table[Int(code)] else {
      return nil
    }
    if isAltGrDown { return levels.altGr }
    let shifted = (shiftsDown > 0) != (isCapsLocked && levels.isLetter)
    return shifted ? levels.shifted : levels.plain
  }
}
