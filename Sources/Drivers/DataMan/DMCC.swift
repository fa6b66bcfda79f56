// The DMCC wire format (Cognex DataMan Control Commands), docs/device-protocols.md §7. Pure and
// import-free so it can be table-tested and fuzzed without a socket.

/// One DMCC command line: `header command [arguments] footer` (docs/device-protocols.md §7 "Command syntax").
public struct DMCCCommand: Sendable, Equatable {
  /// The command and its arguments, already quoted where needed (`GET DEVICE.NAME`).
  public var text: String
  /// Append the checksum byte (header `||1…>`, docs/device-protocols.md §7 "Header").
  public var checksum: Bool
  /// Echoed by the reader in the reply header so a reply can be matched to its command.
  public var commandID: Int?

  public init(_ text: String, checksum: Bool = false, commandID: Int? = nil) {
    self.text = text
    self.checksum = checksum
    self.commandID = commandID
  }

  /// The header: `||>` with the defaults, else `||checksum:id>` / `||checksum>` (docs/device-protocols.md §7
  /// examples `||>`, `||0:123>`, `||1>`).
  public var header: String {
    if !checksum && commandID == nil { return "||>" }
    let flag = checksum ? "1" : "0"
    return "||" + flag + (commandID.map { ":\($0)" } ?? "") + ">"
  }

  /// The bytes on the wire. With `checksum`, the last byte before CR LF is the XOR of every byte that
  /// precedes it on the line — header, command and arguments. docs/device-protocols.md §7 says only "XOR of
  /// bytes"; taking the whole line before the checksum byte is the plain reading (nothing else is excluded by
  /// the text). To be verified on a reader.
  public func encoded() -> [UInt8] {
    var bytes = Array(header.utf8) + Array(text.utf8)
    if checksum { bytes.append(DMCC.xor(bytes[...])) }
    bytes += [0x0D, 0x0A]
    return bytes
  }

  /// `GET NAME`.
  public static func get(_ name: String) -> String { "GET \(name)" }
  /// `SET NAME VALUE` with `value` already formatted (see `DMCC.argument`).
  public static func set(_ name: String, _ value: String) -> String { "SET \(name) \(value)" }
}

public enum DMCC {
  /// XOR of the bytes, the DMCC checksum (docs/device-protocols.md §7 "Header": checksum 1).
  public static func xor(_ bytes: ArraySlice<UInt8>) -> UInt8 { bytes.reduce(0, ^) }

  /// A DMCC string argument: double quotes, with backslash before quote, backslash and pipe, and
  /// `\t` `\r` `\n` for tab, CR and LF (docs/device-protocols.md §7 "Arguments"). The pipe is escaped because
  /// `||` starts a header.
  public static func quote(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "|": out += "\\|"
      case "\t": out += "\\t"
      case "\r": out += "\\r"
      case "\n": out += "\\n"
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out + "\""
  }

  /// Inverse of `quote` when `text` is a quoted string; other text comes back as it is.
  public static func unquote(_ text: String) -> String {
    let scalars = Array(text.unicodeScalars)
    guard scalars.count >= 2, scalars.first == "\"", scalars.last == "\"" else { return text }
    var out = String.UnicodeScalarView()
    var i = 1
    while i < scalars.count - 1 {
      var c = scalars[i]
      if c == "\\" && i + 1 < scalars.count - 1 {
        i += 1
        switch scalars[i] {
        case "t": c = "\t"
        case "r": c = "\r"
        case "n": c = "\n"
        default: c = scalars[i]
        }
      }
      out.append(c)
      i += 1
    }
    return String(out)
  }

  /// A value as typed by a person, made into one DMCC argument: a bare word (ON, OFF, 12, -1.5,
  /// DM8050) stays bare; anything else (spaces, quotes, empty) becomes a quoted string.
  public static func argument(_ value: String) -> String {
    let bare =
      !value.isEmpty
      && value.unicodeScalars.allSatisfy {
        ("A"..."Z").contains($0) || ("a"..."z").contains($0) || ("0"..."9").contains($0)
          || $0 == "." || $0 == "-" || $0 == "+" || $0 == "_"
      }
    // Already quoted: kept as typed, unless it holds a CR or LF, which would end the command line
    // early and start another one (found by fuzz/dmcc.swift); then it is quoted like any other text.
    if value.hasPrefix("\"") && value.hasSuffix("\"") && value.count >= 2
      && !value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" })
    {
      return value
    }
    return bare ? value : quote(value)
  }

  /// Extended-mode status (docs/device-protocols.md §7 "Status codes") → the SKT result code
  /// (docs/capture-sdk.md; real negative values): 0 ok, 1 a read string (not an error), 100 → -38
  /// COMMUNICATIONERROR, 101 command invalid and 102 parameter invalid → -18 INVALIDPARAMETER, 103 → -36
  /// INVALIDCHECKSUM, 104 → -37 COMMANDDENIED, 105 → -32 NOTAVAILABLE; the rest of the manual's list was not
  /// retrieved, so any other status is -38.
  public static func sktCode(status: Int) -> Int32 {
    switch status {
    case 0, 1: 0
    case 101, 102: -18
    case 103: -36
    case 104: -37
    case 105: -32
    default: -38
    }
  }

  /// RFC 2045 base64 (read data in extended mode, docs/device-protocols.md §7 "Extended reply"). Line breaks
  /// and spaces are skipped as RFC 2045 allows; any other character outside the alphabet, or a bad length, is
  /// nil.
  public static func base64Decode(_ text: ArraySlice<UInt8>) -> [UInt8]? {
    var out: [UInt8] = []
    out.reserveCapacity(text.count * 3 / 4)
    var accumulator: UInt32 = 0
    var bits = 0
    var padding = 0
    var count = 0
    for c in text {
      let v: UInt32
      switch c {
      case UInt8(ascii: "A")...UInt8(ascii: "Z"): v = UInt32(c - UInt8(ascii: "A"))
      case UInt8(ascii: "a")...UInt8(ascii: "z"): v = UInt32(c - UInt8(ascii: "a")) + 26
      case UInt8(ascii: "0")...UInt8(ascii: "9"): v = UInt32(c - UInt8(ascii: "0")) + 52
      case UInt8(ascii: "+"): v = 62
      case UInt8(ascii: "/"): v = 63
      case UInt8(ascii: "="):
        padding += 1
        count += 1
        continue
      case 0x20, 0x09, 0x0D, 0x0A: continue
      default: return nil
      }
      if padding > 0 { return nil }  // data after padding
      count += 1
      accumulator = (accumulator << 6) | v
      bits += 6
      if bits >= 8 {
        bits -= 8
        out.append(UInt8((accumulator >> UInt32(bits)) & 0xFF))
      }
    }
    guard count % 4 == 0, padding <= 2 else { return nil }
    return out
  }

  public static func base64Encode(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    var out: [UInt8] = []
    var i = 0
    while i < bytes.count {
      let b0 = UInt32(bytes[i])
      let b1 = i + 1 < bytes.count ? UInt32(bytes[i + 1]) : 0
      let b2 = i + 2 < bytes.count ? UInt32(bytes[i + 2]) : 0
      let n = (b0 << 16) | (b1 << 8) | b2
      out.append(alphabet[Int((n >> 18) & 63)])
      out.append(alphabet[Int((n >> 12) & 63)])
      out.append(i + 1 < bytes.count ? alphabet[Int((n >> 6) & 63)] : UInt8(ascii: "="))
      out.append(i + 2 < bytes.count ? alphabet[Int(n & 63)] : UInt8(ascii: "="))
      i += 3
    }
    return String(decoding: out, as: UTF8.self)
  }
}

/// One line from a reader.
public enum DMCCMessage: Sendable, Equatable {
  /// An extended reply `||checksum:id[status]data`: the answer to a command (status 0 or an error).
  case reply(commandID: Int?, status: Int, data: [UInt8])
  /// Status 1, a reader-initiated read string; `bytes` is the base64-decoded data (the raw data when it
  /// is not base64, so nothing is lost).
  case read(commandID: Int?, bytes: [UInt8])
  /// A line without a header: silent mode (docs/device-protocols.md §7 "Response mode" 0) sends read results
  /// as plain text.
  case plain([UInt8])
  /// A reply whose checksum byte does not match: the SKT answer is INVALIDCHECKSUM (-36).
  case badChecksum(commandID: Int?)
  /// A line that starts like a header but is not one.
  case malformed([UInt8])
}

/// Splits a byte stream into DMCC lines at CR LF and decodes each one. Feed it bytes as they arrive,
/// split anywhere; a line longer than `maximumLine` is dropped as malformed so noise cannot grow memory.
public struct DMCCResponseParser: Sendable {
  public var maximumLine: Int
  private var buffer: [UInt8] = []
  private var overflowed = false

  public init(maximumLine: Int = 1 << 20) { self.maximumLine = maximumLine }

  public mutating func feed(_ bytes: some Sequence<UInt8>) -> [DMCCMessage] {
    var messages: [DMCCMessage] = []
    for b in bytes {
      if b == 0x0A, buffer.last == 0x0D {
        buffer.removeLast()
        if overflowed {
          messages.append(.malformed(Array(buffer.prefix(64))))
        } else if !buffer.isEmpty {
          messages.append(Self.decode(buffer))
        }
        buffer.removeAll(keepingCapacity: true)
        overflowed = false
        continue
      }
      if buffer.count >= maximumLine {
        // Keep only the tail so a CR LF split across the limit is still seen.
        overflowed = true
        buffer.removeFirst(buffer.count - 1)
      }
      buffer.append(b)
    }
    return messages
  }

  /// Decodes one line without its CR LF.
  public static func decode(_ line: [UInt8]) -> DMCCMessage {
    let bar = UInt8(ascii: "|")
    guard line.count >= 2, line[0] == bar, line[1] == bar else { return .plain(line) }
    // ||checksum:id[status]data — checksum and id are optional digits (the reader echoes the
    // command's header, docs/device-protocols.md §7 "Extended reply").
    var i = 2
    func number() -> Int? {
      var value = 0
      var digits = 0
      while i < line.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(line[i]), digits < 10 {
        value = value * 10 + Int(line[i] - UInt8(ascii: "0"))
        digits += 1
        i += 1
      }
      return digits > 0 ? value : nil
    }
    let checksumFlag = number()
    var commandID: Int?
    if i < line.count, line[i] == UInt8(ascii: ":") {
      i += 1
      guard let id = number() else { return .malformed(line) }
      commandID = id
    }
    guard i < line.count, line[i] == UInt8(ascii: "[") else { return .malformed(line) }
    i += 1
    guard let status = number(), i < line.count, line[i] == UInt8(ascii: "]") else { return .malformed(line) }
    i += 1
    var end = line.count
    switch checksumFlag {
    case nil, 0: break
    case 1:
      // The last byte before the footer is the XOR of every byte before it (same rule as DMCCCommand).
      guard end > i else { return .badChecksum(commandID: commandID) }  // no room for the byte
      guard DMCC.xor(line[..<(end - 1)]) == line[end - 1] else { return .badChecksum(commandID: commandID) }
      end -= 1
    default: return .malformed(line)
    }
    let data = Array(line[i..<end])
    if status == 1 {
      return .read(commandID: commandID, bytes: DMCC.base64Decode(data[...]) ?? data)
    }
    return .reply(commandID: commandID, status: status, data: data)
  }
}
