// SpringCore Direct protocol over BLE: messages and their reassembly (docs/device-protocols.md §3.4, SC-DOC
// Direct pages, AXM `springCoreUtils.js` + `s550-data-test.js`).

/// One Direct message: PCB, CLA, LEN (2 bytes, or 4 with the long-header bit), INS/STA/EVT, then LEN
/// data bytes; LEN counts the bytes after INS/STA/EVT and is big-endian (docs/device-protocols.md §3.4, AXM;
/// the LEN rule is an Observation verified on AXM frames; big-endian for the 4-byte form is assumed).
public struct DirectMessage: Sendable, Hashable {
  /// PCB bits as AXM decodes them (docs/device-protocols.md §3.4, AXM).
  public static let fromDeviceBit: UInt8 = 0x80
  public static let eventBit: UInt8 = 0x40
  public static let secureBit: UInt8 = 0x20
  public static let longHeaderBit: UInt8 = 0x10
  public static let sequenceMask: UInt8 = 0x0F

  public var pcb: UInt8
  public var cla: UInt8
  /// INS (host command), STA (device response) or EVT (device event).
  public var code: UInt8
  public var data: [UInt8]

  public init(pcb: UInt8, cla: UInt8, code: UInt8, data: [UInt8]) {
    self.pcb = pcb
    self.cla = cla
    self.code = code
    self.data = data
  }

  /// b7: device→host.
  public var isFromDevice: Bool { pcb & Self.fromDeviceBit != 0 }
  /// b6: interrupt/event channel.
  public var isEvent: Bool { pcb & Self.eventBit != 0 }
  /// b5: secure (ciphered) message (docs/device-protocols.md §3.3 describes the CCID side only).
  public var isSecure: Bool { pcb & Self.secureBit != 0 }
  /// b4: 4-byte LEN.
  public var isLongHeader: Bool { pcb & Self.longHeaderBit != 0 }
  /// b3-0: sequence number.
  public var sequence: UInt8 { pcb & Self.sequenceMask }

  /// The header length for a PCB: 5, or 7 with the long-header bit.
  public static func headerLength(pcb: UInt8) -> Int { pcb & longHeaderBit != 0 ? 7 : 5 }

  /// The message on the wire. The long-header bit is added when the data do not fit a 2-byte LEN.
  public var encoded: [UInt8] {
    let length = UInt64(data.count)
    var header = pcb
    if length > 0xFFFF { header |= Self.longHeaderBit }
    var bytes: [UInt8] = [header, cla]
    let lengthBytes = Self.headerLength(pcb: header) - 3
    for shift in stride(from: (lengthBytes - 1) * 8, through: 0, by: -8) {
      bytes.append(UInt8(truncatingIfNeeded: length >> UInt64(shift)))
    }
    bytes.append(code)
    return bytes + data
  }

  /// A host command. The PCB a host must send is **Unknown** (docs/device-protocols.md §3.4/§3.6: SC-DOC's
  /// page text was truncated); we use `0x00 | sequence` (direction host→device, command channel, not
  /// secure, short header unless the data need more), to be confirmed on hardware.
  public static func command(cla: UInt8, ins: UInt8, data: [UInt8] = [], sequence: UInt8 = 0) -> DirectMessage
  {
    DirectMessage(pcb: sequence & sequenceMask, cla: cla, code: ins, data: data)
  }
}

/// Direct classes (CLA) (docs/device-protocols.md §3.4, SC-DOC; 59, 5A, 5E named by AXM only).
public enum DirectClass {
  public static let protocolClass: UInt8 = 0x00
  public static let control: UInt8 = 0x58
  public static let atCrypto: UInt8 = 0x59
  public static let samAV: UInt8 = 0x5A
  public static let reader: UInt8 = 0x5B
  public static let dfu: UInt8 = 0x5D
  public static let echo: UInt8 = 0x5E
}

/// PROTOCOL-class instructions (docs/device-protocols.md §3.4, SC-DOC). Payloads are not documented here.
public enum DirectProtocolINS {
  public static let ping: UInt8 = 0x00
  public static let pingEvent: UInt8 = 0x01
  public static let authenticate: UInt8 = 0x0A
  public static let changeKey: UInt8 = 0x0C
  public static let setSerialParameters: UInt8 = 0x11
  public static let timeExtensionAck: UInt8 = 0xF0
  public static let cancel: UInt8 = 0xFC
  public static let hostEventPoll: UInt8 = 0xFE
  public static let following: UInt8 = 0xFF
}

/// CONTROL-class instructions (docs/device-protocols.md §3.4, SC-DOC list, truncated after A1). Payloads are
/// not documented here.
public enum DirectControlINS {
  public static let getMode: UInt8 = 0x14
  public static let getGPIOs: UInt8 = 0x15
  public static let setGPIOs: UInt8 = 0x16
  public static let getData: UInt8 = 0x20
  public static let ccidGetSlotName: UInt8 = 0x21
  public static let ccidStopSlot: UInt8 = 0x22
  public static let ccidStartSlot: UInt8 = 0x23
  public static let nfcPoller: UInt8 = 0x62
  public static let nfcListener: UInt8 = 0x63
  public static let micore: UInt8 = 0x70
  public static let readFreeRegister: UInt8 = 0x80
  public static let readRegister: UInt8 = 0x81
  public static let writeRegister: UInt8 = 0x82
  public static let loadFactoryConfig: UInt8 = 0x83
  public static let saveFactoryConfig: UInt8 = 0x84
  public static let getDateTime: UInt8 = 0x85
  public static let setDateTime: UInt8 = 0x86
  public static let productSpecific: UInt8 = 0x88
  public static let reset: UInt8 = 0x8E
  public static let reloadConfig: UInt8 = 0x8F
  public static let playSequence: UInt8 = 0x90
  public static let setLEDRGB: UInt8 = 0x91
  public static let setLEDs: UInt8 = 0x92
  public static let setBuzzer: UInt8 = 0x93
  public static let setLight: UInt8 = 0x97
  public static let playSequenceString: UInt8 = 0x98
  public static let autoDimmLight: UInt8 = 0x9A
  public static let autoSequences: UInt8 = 0x9B
  public static let wink: UInt8 = 0x9F
  public static let readerStop: UInt8 = 0xA0
}

/// What the Direct assembler produces.
public enum DirectEvent: Sendable, Hashable {
  case message(DirectMessage)
  /// Bytes that do not start a usable message (see ``DirectAssembler`` for the rules), kept as they came.
  case malformed(raw: [UInt8])
}

/// Reassembles device→host Direct messages from indications on Direct_Response or Direct_Events
/// (docs/device-protocols.md §3.4, AXM: long messages span several indications, reassembled by LEN).
///
/// Rules:
/// * A message may span indications, and one indication may end a message and start the next; a header
///   may itself be split.
/// * A message must start with a PCB that has the device→host bit (b7) set (unless
///   `requiresDeviceDirection` is false).
/// * Resync: when a message would start with a PCB without b7, or its LEN is larger than
///   `maxDataLength` (64 KiB by default), everything from its first byte to the end of the current
///   indication is reported as one `.malformed` (for a too-long LEN, this is the raw prefix of that
///   message), and the next indication is read as the start of a new message.
/// * An incomplete message never ends by itself: a lost chunk would make the next message's bytes
///   continue it. The driver calls ``flush()`` after a silence (and ``reset()`` on disconnect).
///
/// Every byte fed ends up in exactly one event, or is still pending.
public struct DirectAssembler: Sendable {
  /// Our cap on LEN: 64 KiB (no public maximum; AXM's largest capture is a 947-byte event).
  public static let maxDataLength = 65536

  public let maxDataLength: Int
  public let requiresDeviceDirection: Bool
  private var pending: [UInt8] = []
  private var expectedTotal: Int?

  public init(maxDataLength: Int = DirectAssembler.maxDataLength, requiresDeviceDirection: Bool = true) {
    self.maxDataLength = max(0, maxDataLength)
    self.requiresDeviceDirection = requiresDeviceDirection
  }

  /// Bytes of an incomplete message held back.
  public var pendingCount: Int { pending.count }

  /// Adds one indication; returns what it completes, in order.
  public mutating func feed(_ indication: [UInt8]) -> [DirectEvent] {
    var events: [DirectEvent] = []
    var index = indication.startIndex
    while index < indication.endIndex {
      if pending.isEmpty, requiresDeviceDirection, indication[index] & DirectMessage.fromDeviceBit == 0 {
        events.append(.malformed(raw: Array(indication[index...])))
        return events
      }
      if expectedTotal == nil {
        let headerLength = DirectMessage.headerLength(pcb: pending.first ?? indication[index])
        let take = min(headerLength - pending.count, indication.endIndex - index)
        pending += indication[index..<(index + take)]
        index += take
        if pending.count < headerLength { break }
        var length: UInt64 = 0
        for byte in pending[2..<(headerLength - 1)] { length = length << 8 | UInt64(byte) }
        if length > UInt64(maxDataLength) {
          events.append(.malformed(raw: pending + indication[index...]))
          pending = []
          return events
        }
        expectedTotal = headerLength + Int(length)
      }
      let total = expectedTotal ?? 0
      let take = min(total - pending.count, indication.endIndex - index)
      pending += indication[index..<(index + take)]
      index += take
      if pending.count == total {
        events.append(.message(Self.message(pending)))
        pending = []
        expectedTotal = nil
      }
    }
    return events
  }

  /// Reports an incomplete message as `.malformed` and forgets it (e.g. after a silence).
  public mutating func flush() -> [DirectEvent] {
    defer { reset() }
    return pending.isEmpty ? [] : [.malformed(raw: pending)]
  }

  /// Forgets any incomplete message.
  public mutating func reset() {
    pending = []
    expectedTotal = nil
  }

  /// Decodes one complete message; `bytes` holds exactly header + LEN bytes.
  private static func message(_ bytes: [UInt8]) -> DirectMessage {
    let headerLength = DirectMessage.headerLength(pcb: bytes[0])
    return DirectMessage(
      pcb: bytes[0], cla: bytes[1], code: bytes[headerLength - 1], data: Array(bytes[headerLength...]))
  }
}
