// A loopback Cognex DataMan for tests: a TCP server on 127.0.0.1 with an
// ephemeral port that speaks DMCC as docs/device-protocols.md §7 describes it. Written independently of the
// driver's codec (it imports only Glibc and Foundation) so a shared misunderstanding cannot hide; the
// driver's tests and the black-box tests share it through this small library target.

import Foundation

#if canImport(Glibc)
  import Glibc
#endif

public final class DMCCSimulator: @unchecked Sendable {
  public enum Fault: Sendable {
    case none
    /// Close the connection as soon as a command arrives.
    case closeOnCommand
    /// Accept, read, never answer.
    case neverAnswer
    /// Answer every command with checksum flag 1 and a wrong checksum byte.
    case corruptChecksum
  }

  public let port: UInt16
  private let listenFD: Int32
  private let lock = NSLock()
  private var parameters: [String: String] = [
    "DEVICE.NAME": "Line 3 reader", "DEVICE.TYPE": "DM8050", "DEVICE.FIRMWARE-VER": "6.1.5",
    "COM.DMCC-RESPONSE": "0", "SYMBOL.QR": "ON", "SYMBOL.DATAMATRIX": "ON", "SYMBOL.C128": "ON",
    "SYMBOL.C39": "OFF", "SYMBOL.UPC-EAN": "ON", "SYMBOL.PDF417": "OFF", "SYMBOL.I2O5": "OFF",
    "SYMBOL.CODABAR": "OFF", "SYMBOL.C93": "OFF", "SYMBOL.DATABAR": "OFF",
  ]
  private var stopped = false
  private var listenerClosed = false
  private var _fault: Fault
  private var _readText: String
  private var _commands: [String] = []

  public var fault: Fault {
    get { lock.withLock { _fault } }
    set { lock.withLock { _fault = newValue } }
  }
  /// What TRIGGER ON reads.
  public var readText: String {
    get { lock.withLock { _readText } }
    set { lock.withLock { _readText = newValue } }
  }
  /// Send TRIGGER ON's read result as a second status-0 reply under the command's id, not as status 1.
  public var resultUnderCommandID: Bool {
    get { lock.withLock { _resultUnderCommandID } }
    set { lock.withLock { _resultUnderCommandID = newValue } }
  }
  private var _resultUnderCommandID = false
  /// Seconds to wait before answering each command (a slow reader).
  public var replyDelay: Double {
    get { lock.withLock { _replyDelay } }
    set { lock.withLock { _replyDelay = newValue } }
  }
  private var _replyDelay = 0.0
  /// Every command line received, without header and footer.
  public var commands: [String] { lock.withLock { _commands } }

  public func parameter(_ name: String) -> String? { lock.withLock { parameters[name] } }

  /// Gives the reader `name` with `value` (another model: `define("DEVICE.TYPE", "DM8072")`).
  public func define(_ name: String, _ value: String) { lock.withLock { parameters[name] = value } }

  /// A reader model without `name` (a symbology it has no switch for): GET and SET of it then answer
  /// status 101, command invalid, as for any name the reader does not know.
  public func forget(_ name: String) { lock.withLock { _ = parameters.removeValue(forKey: name) } }

  public init(readText: String = "HELLO-123", fault: Fault = .none) throws {
    _readText = readText
    _fault = fault
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
    guard bound == 0, listen(fd, 16) == 0 else {
      close(fd)
      throw POSIXError(.init(rawValue: errno) ?? .EIO)
    }
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    listenFD = fd
    port = UInt16(bigEndian: address.sin_port)
    let thread = Thread { [self] in acceptLoop() }
    thread.start()
  }

  public func stop() {
    lock.withLock { stopped = true }
  }

  /// Closes the listening socket now (after `stop`), so the port refuses connections.
  public func closeListener() {
    lock.withLock {
      if !listenerClosed { close(listenFD) }
      listenerClosed = true
    }
  }

  deinit { closeListener() }

  private var isStopped: Bool { lock.withLock { stopped } }

  private func acceptLoop() {
    while !isStopped {
      var pfd = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
      guard poll(&pfd, 1, 50) > 0 else { continue }
      let client = accept(listenFD, nil, nil)
      guard client >= 0 else { continue }
      let thread = Thread { [self] in serve(client) }
      thread.start()
    }
  }

  private func serve(_ fd: Int32) {
    defer { close(fd) }
    var buffer: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while !isStopped {
      var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      guard poll(&pfd, 1, 50) > 0 else { continue }
      let n = recv(fd, &chunk, chunk.count, 0)
      if n <= 0 { return }
      buffer += chunk[0..<n]
      while let end = crlf(buffer) {
        let line = Array(buffer[0..<end])
        buffer.removeFirst(end + 2)
        switch fault {
        case .closeOnCommand: return
        case .neverAnswer: continue
        default: break
        }
        if replyDelay > 0 { Thread.sleep(forTimeInterval: replyDelay) }
        for reply in answer(line) {
          let sent = reply.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
          if sent < 0 { return }
        }
      }
    }
  }

  private func crlf(_ bytes: [UInt8]) -> Int? {
    guard bytes.count >= 2 else { return nil }
    for i in 0..<(bytes.count - 1) where bytes[i] == 13 && bytes[i + 1] == 10 { return i }
    return nil
  }

  /// One command line (without CR LF) → the reply lines to send.
  public func answer(_ line: [UInt8]) -> [[UInt8]] {
    var body = line[...]
    var checksummed = false
    var id: String?
    if body.starts(with: Array("||".utf8)) {
      guard let close = body.firstIndex(of: UInt8(ascii: ">")) else { return [] }
      let header = String(decoding: body[(body.startIndex + 2)..<close], as: UTF8.self)
      let fields = header.split(separator: ":", omittingEmptySubsequences: false)
      checksummed = fields.first == "1"
      if fields.count > 1 { id = String(fields[1]) }
      body = body[(close + 1)...]
      if checksummed {
        // The last byte before CR LF is the XOR of every byte before it on the line.
        guard let sum = body.last else { return [] }
        let xor = line.dropLast().reduce(0, ^)
        body = body.dropLast()
        if xor != sum { return reply(status: 103, data: "", id: id, checksummed: checksummed) }
      }
    }
    let text = String(decoding: body, as: UTF8.self)
    lock.withLock { _commands.append(text) }
    let words = text.split(separator: " ", maxSplits: 2).map(String.init)
    let verb = words.first?.uppercased() ?? ""
    switch verb {
    case "GET" where words.count == 2:
      // DMCC reads `GET NAME` as one command: a name the reader lacks is an unknown command.
      guard let value = parameter(words[1].uppercased()) else {
        return reply(status: 101, data: "", id: id, checksummed: checksummed)
      }
      return reply(status: 0, data: value, id: id, checksummed: checksummed)
    case "SET" where words.count == 3:
      let name = words[1].uppercased()
      guard parameter(name) != nil else {
        return reply(status: 101, data: "", id: id, checksummed: checksummed)
      }
      let answer = reply(status: 0, data: "", id: id, checksummed: checksummed)
      lock.withLock { parameters[name] = Self.unquote(words[2]) }
      return answer
    case "TRIGGER" where words.count == 2 && words[1].uppercased() == "ON":
      let ack = reply(status: 0, data: "", id: id, checksummed: checksummed)
      let data = Array(readText.utf8)
      if extended {
        let encoded = Array(Data(data).base64EncodedString().utf8)
        if resultUnderCommandID, let id { return ack + [Array("||0:\(id)[0]".utf8) + encoded + [13, 10]] }
        return ack + [Array("||[1]".utf8) + encoded + [13, 10]]
      }
      return ack + [data + [13, 10]]
    case "TRIGGER" where words.count == 2 && words[1].uppercased() == "OFF":
      return reply(status: 0, data: "", id: id, checksummed: checksummed)
    default:
      return reply(status: 101, data: "", id: id, checksummed: checksummed)
    }
  }

  private var extended: Bool { parameter("COM.DMCC-RESPONSE") == "1" }

  private func reply(status: Int, data: String, id: String?, checksummed: Bool) -> [[UInt8]] {
    guard extended else {
      // Silent mode: values as plain text, everything else (errors included) unanswered
      // (docs/device-protocols.md §7).
      return status == 0 && !data.isEmpty ? [Array(data.utf8) + [13, 10]] : []
    }
    let corrupt = fault == .corruptChecksum
    let flag = checksummed || corrupt
    var line = Array("||\(flag ? 1 : 0)\(id.map { ":\($0)" } ?? "")[\(status)]\(data)".utf8)
    if flag {
      let xor = line.reduce(0, ^)
      line.append(corrupt ? xor ^ 0x5A : xor)
    }
    return [line + [13, 10]]
  }

  static func unquote(_ text: String) -> String {
    guard text.count >= 2, text.first == "\"", text.last == "\"" else { return text }
    var out = ""
    var escaped = false
    for c in text.dropFirst().dropLast() {
      if escaped {
        switch c {
        case "t": out.append("\t")
        case "r": out.append("\r")
        case "n": out.append("\n")
        default: out.append(c)
        }
        escaped = false
      } else if c == "\\" {
        escaped = true
      } else {
        out.append(c)
      }
    }
    return out
  }
}
