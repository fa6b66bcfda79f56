// D600 device-configuration characteristic: block framing, command codes and answers
// (docs/device-protocols.md §2.6, TS `blocks.service.ts` + `configure.page`, SC-NET `SoMoD600.cs`, AXM).

/// Config command codes (docs/device-protocols.md §2.6, TS `configure.page.html/.ts`; SC-NET for AE).
public enum D600ConfigCommand: UInt8, Sendable, CaseIterable {
  /// 1-byte address + value bytes.
  case writeRegister = 0x0D
  /// 1-byte address.
  case readRegister = 0x0E
  /// Payload: one of ``D600ResetMagic``.
  case resetOrDeleteBonds = 0x0F
  /// BLE test, 1 byte (0x18 is the alternative code).
  case bleTest = 0x14
  /// RF test, 1 byte (0x19 is the alternative code).
  case rfTest = 0x15
  case bleTestAlternative = 0x18
  case rfTestAlternative = 0x19
  /// No payload in TS; identifier byte Unknown.
  case getDeviceData = 0x20
  case pushTemporaryConfig = 0x8D
  case resetMCU = 0x8E
  /// The scan-control commands of docs/device-protocols.md §2.5, block-framed (same parameters).
  case playSequence = 0x90
  case leds = 0x91
  case buzzer = 0x92
  case vibrator = 0x94
  /// 1 byte, one of ``D600OperatingMode``.
  case operatingMode = 0xAE
}

/// Payloads of command 0F (docs/device-protocols.md §2.6, TS).
public enum D600ResetMagic {
  public static let deleteBonds: [UInt8] = [0xFE, 0xDA, 0xFA, 0xED]
  public static let deleteBondsAndFactoryReset: [UInt8] = [0xDA, 0xFA, 0xED, 0xFE]
  public static let factoryReset: [UInt8] = [0xFE, 0xED, 0xFA, 0xDA]
}

/// Values of command AE (docs/device-protocols.md §2.6/§2.7, TS, AXM, SC-NET).
public enum D600OperatingMode {
  /// "RFID"/scanner mode, written before enabling scan-data notifications (TS, AXM).
  public static let scanner: UInt8 = 0x07
  /// Enter PC/SC (CCID) mode, protocol v2, firmware < 1.49 (SC-NET).
  public static let pcscProtocolV2: UInt8 = 0x02
  /// Enter PC/SC (CCID) mode, protocol v3, firmware >= 1.49 (SC-NET).
  public static let pcscProtocolV3: UInt8 = 0x03
  /// Leave PC/SC mode (SC-NET).
  public static let leavePCSC: UInt8 = 0x00
}

/// Splits a config command into BLE writes (docs/device-protocols.md §2.6, TS `blocks.service.ts`).
///
/// * First block: byte 0 = (payload bytes in this block + 1) | `0x20` if more blocks follow; byte 1 =
///   command; then up to `blockSize - 2` payload bytes.
/// * Continuation block k = 1, 2, …: byte 0 = (payload bytes in this block) | `0x80` | `0x40` when k is
///   even | `0x20` if more follow; then up to `blockSize - 1` payload bytes.
///
/// The low five bits thus count the bytes after byte 0 in every block.
///
/// Discrepancy (docs/device-protocols.md §2.6/§2.9/§8.1): AXM writes `03 AE 07` for command AE with one
/// parameter, SC-NET and TS give `02 AE 07`. We follow TS and SC-NET (payload + 1, i.e. the command byte
/// plus the payload bytes); AXM's 03 would count the header byte too. To be confirmed on hardware.
public enum D600ConfigBlocks {
  /// More blocks follow.
  public static let moreFollows: UInt8 = 0x20
  /// A continuation block.
  public static let continuation: UInt8 = 0x80
  /// Set on even continuation blocks.
  public static let toggle: UInt8 = 0x40
  /// The byte-count bits.
  public static let lengthMask: UInt8 = 0x1F

  /// The writes for one command. `blockSize` (20 by default: a write fits the default ATT MTU) is
  /// clamped to 2…32 so that the counts fit in the five length bits.
  public static func encode(command: UInt8, payload: [UInt8], blockSize: Int = 20) -> [[UInt8]] {
    let size = min(max(blockSize, 2), 32)
    let firstCount = min(payload.count, size - 2)
    var offset = firstCount
    var blocks: [[UInt8]] = []
    let first = UInt8(firstCount + 1) | (offset < payload.count ? moreFollows : 0)
    blocks.append([first, command] + payload[0..<firstCount])
    var k = 1
    while offset < payload.count {
      let count = min(payload.count - offset, size - 1)
      var header = UInt8(count) | continuation
      if k % 2 == 0 { header |= toggle }
      if offset + count < payload.count { header |= moreFollows }
      blocks.append([header] + payload[offset..<(offset + count)])
      offset += count
      k += 1
    }
    return blocks
  }

  /// ``encode(command:payload:blockSize:)`` with a named command.
  public static func encode(_ command: D600ConfigCommand, payload: [UInt8] = [], blockSize: Int = 20)
    -> [[UInt8]]
  {
    encode(command: command.rawValue, payload: payload, blockSize: blockSize)
  }

  /// `AE <mode>`: e.g. `[[02 AE 07]]` for scanner mode (docs/device-protocols.md §2.3, TS, SC-NET).
  public static func operatingMode(_ mode: UInt8) -> [[UInt8]] {
    encode(.operatingMode, payload: [mode])
  }

  /// `0D <address> <value…>` (docs/device-protocols.md §2.6, TS; register map Unknown).
  public static func writeRegister(address: UInt8, value: [UInt8]) -> [[UInt8]] {
    encode(.writeRegister, payload: [address] + value)
  }

  /// `0E <address>` (docs/device-protocols.md §2.6, TS).
  public static func readRegister(address: UInt8) -> [[UInt8]] {
    encode(.readRegister, payload: [address])
  }
}

/// One config answer: status byte (0x00 = success) and data (docs/device-protocols.md §2.6, TS).
public struct D600ConfigAnswer: Sendable, Hashable {
  public var status: UInt8
  public var data: [UInt8]

  public init(status: UInt8, data: [UInt8]) {
    self.status = status
    self.data = data
  }

  public var isSuccess: Bool { status == 0x00 }
}

/// Why a notification on the config characteristic could not be used. After any of these the assembler
/// is ready for a new answer (``D600ConfigAnswerAssembler``).
public enum D600ConfigAnswerError: Error, Sendable, Hashable {
  /// A notification with no bytes (the assembler state is kept).
  case empty
  /// A first block without a status byte; any partial answer is abandoned too.
  case truncated(raw: [UInt8])
  /// Byte 0 has bit 6 set but not bit 7: neither a first nor a continuation block.
  case invalidHeader(raw: [UInt8])
  /// A continuation block while no chained answer was pending.
  case unexpectedContinuation(raw: [UInt8])
  /// A continuation block whose toggle bit (0x40) is wrong for block `expectedBlock`: a block was lost or
  /// repeated. The partial answer is abandoned.
  case outOfSequence(expectedBlock: Int, raw: [UInt8])
  /// A new first block arrived before a chained answer was complete. `partial` is what had arrived;
  /// `restart` is the new answer when that first block was complete on its own, otherwise the assembler
  /// now collects it. (When that first block is itself unusable, its own error is thrown instead.)
  case interrupted(partial: D600ConfigAnswer, restart: D600ConfigAnswer?)
  /// The answer grew past `maxAnswerLength` data bytes; `partial` holds the first `maxAnswerLength`.
  /// Its remaining continuation blocks are skipped silently.
  case tooLong(partial: D600ConfigAnswer)
}

/// Reassembles config answers from notifications (docs/device-protocols.md §2.6, TS).
///
/// * First block: bits 7-6 of byte 0 are 0, bit 5 = chained (more blocks follow), byte 1 = status, data
///   from byte 2 (TS).
/// * Continuation blocks: taken to follow the command rule (bit 7 set, bit 6 on even k, bit 5 = more
///   follow); the reference describes them for commands only, so this is an **Observation** (same
///   framing both ways), to be confirmed on hardware. ``checksToggle`` can turn the bit-6 check off.
/// * Length: the low five bits are read as in commands (bytes after byte 0). When they are between 1 and
///   what arrived, the rest of the notification is padding; when they are 0 or larger than what arrived,
///   the whole notification counts (our choice: lenient, as answers' length bits are not documented).
///
/// Garbage is reported by throwing a ``D600ConfigAnswerError``, never by trapping.
public struct D600ConfigAnswerAssembler: Sendable {
  /// Our own cap on one answer's data; config answers are short (no public maximum).
  public static let maxAnswerLength = 4096

  private enum State: Sendable {
    case idle
    case collecting(status: UInt8, data: [UInt8], nextBlock: Int)
    case discarding
  }

  public let maxAnswerLength: Int
  /// Check bit 6 of continuation blocks against their position (on by default).
  public let checksToggle: Bool
  private var state = State.idle

  public init(maxAnswerLength: Int = D600ConfigAnswerAssembler.maxAnswerLength, checksToggle: Bool = true) {
    self.maxAnswerLength = max(0, maxAnswerLength)
    self.checksToggle = checksToggle
  }

  /// True while a chained answer is incomplete.
  public var isCollecting: Bool {
    if case .collecting = state { return true }
    return false
  }

  /// Forgets any partial answer.
  public mutating func reset() { state = .idle }

  /// Adds one notification; returns the answer it completes, nil while a chained answer is incomplete
  /// (or while the rest of a too-long answer is skipped).
  public mutating func feed(_ notification: [UInt8]) throws(D600ConfigAnswerError) -> D600ConfigAnswer? {
    guard let header = notification.first else { throw .empty }
    let body = Self.body(notification)
    switch header & 0xC0 {
    case 0x00:
      var abandoned: D600ConfigAnswer?
      if case .collecting(let status, let data, _) = state {
        abandoned = D600ConfigAnswer(status: status, data: data)
      }
      state = .idle
      guard let status = body.first else { throw .truncated(raw: notification) }
      let restart = try start(status: status, data: Array(body.dropFirst()), more: header & 0x20 != 0)
      if let abandoned { throw .interrupted(partial: abandoned, restart: restart) }
      return restart
    case 0x40:
      state = .idle
      throw .invalidHeader(raw: notification)
    default:
      switch state {
      case .idle:
        throw .unexpectedContinuation(raw: notification)
      case .discarding:
        if header & 0x20 == 0 { state = .idle }
        return nil
      case .collecting(let status, var data, let block):
        // Releasing the state's copy first lets `data` grow in place instead of being copied per block.
        state = .idle
        if checksToggle, (header & 0x40 != 0) != (block % 2 == 0) {
          throw .outOfSequence(expectedBlock: block, raw: notification)
        }
        data += body
        return try append(status: status, data: data, more: header & 0x20 != 0, nextBlock: block + 1)
      }
    }
  }

  private mutating func start(status: UInt8, data: [UInt8], more: Bool) throws(D600ConfigAnswerError)
    -> D600ConfigAnswer?
  {
    try append(status: status, data: data, more: more, nextBlock: 1)
  }

  private mutating func append(status: UInt8, data: [UInt8], more: Bool, nextBlock: Int)
    throws(D600ConfigAnswerError) -> D600ConfigAnswer?
  {
    if data.count > maxAnswerLength {
      state = more ? .discarding : .idle
      throw .tooLong(partial: D600ConfigAnswer(status: status, data: Array(data.prefix(maxAnswerLength))))
    }
    if more {
      state = .collecting(status: status, data: data, nextBlock: nextBlock)
      return nil
    }
    state = .idle
    return D600ConfigAnswer(status: status, data: data)
  }

  /// The bytes after byte 0 that the length bits cover (see the type's documentation).
  private static func body(_ block: [UInt8]) -> ArraySlice<UInt8> {
    let available = block.count - 1
    let declared = Int(block[0] & D600ConfigBlocks.lengthMask)
    let count = declared >= 1 && declared <= available ? declared : available
    return block[1..<(1 + count)]
  }
}
