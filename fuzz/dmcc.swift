// libFuzzer harness: DMCCResponseParser and the DMCC command/argument encoders (docs/device-protocols.md §7).
// Input: byte 0 = options (bits 0-6: a small line cap, 1...128; bit 7: checksum on the built lines);
// the rest is chunks by the length-prefix scheme (Support.swift), as reads from the socket would split
// the stream. The same bytes, as text, are also used as a string argument and as read data.

@_cdecl("LLVMFuzzerTestOneInput")
public func dmccFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let input = fuzzInput(data, size)
  guard let options = input.first else { return 0 }
  let body = Array(input.dropFirst())
  let chunks = fuzzNotifications(body[...])
  let stream = chunks.flatMap { $0 }
  // Default cap (never reached here): split or whole, the lines between CR LF, each decoded.
  let messages = parseSplit(chunks, maximumLine: 1 << 20)
  require(messages == parseWhole(stream, maximumLine: 1 << 20), "split and whole streams differ")
  require(messages == lines(stream).map(DMCCResponseParser.decode), "messages are not the CR LF lines")
  for (message, line) in zip(messages, lines(stream)) { checkMessage(message, line) }
  // A small cap: split or whole still agree, and no message is longer than the cap allows.
  let cap = Int(options & 0x7F) + 1
  let capped = parseSplit(chunks, maximumLine: cap)
  require(capped == parseWhole(stream, maximumLine: cap), "split and whole streams differ (small cap)")
  checkRoundTrips(String(decoding: body, as: UTF8.self), body, checksum: options & 0x80 != 0)
  return 0
}

private func parseSplit(_ chunks: [[UInt8]], maximumLine: Int) -> [DMCCMessage] {
  var parser = DMCCResponseParser(maximumLine: maximumLine)
  return chunks.flatMap { parser.feed($0) }
}

private func parseWhole(_ stream: [UInt8], maximumLine: Int) -> [DMCCMessage] {
  var parser = DMCCResponseParser(maximumLine: maximumLine)
  return parser.feed(stream)
}

/// The non-empty lines that end in CR LF (an unterminated tail is not a line yet).
private func lines(_ stream: [UInt8]) -> [[UInt8]] {
  var out: [[UInt8]] = []
  var start = 0
  var i = 0
  while i + 1 < stream.count {
    if stream[i] == 0x0D && stream[i + 1] == 0x0A {
      if i > start { out.append(Array(stream[start..<i])) }
      i += 2
      start = i
    } else {
      i += 1
    }
  }
  return out
}

private func checkMessage(_ message: DMCCMessage, _ line: [UInt8]) {
  let headed = line.starts(with: [UInt8(ascii: "|"), UInt8(ascii: "|")])
  switch message {
  case .plain(let bytes): require(!headed && bytes == line, "plain")
  case .malformed(let bytes): require(headed && bytes == line, "malformed")
  case .badChecksum: require(headed, "bad checksum without a header")
  case .reply(_, let status, let data):
    require(headed && status != 1, "reply")
    require(line.count >= data.count && line.suffix(data.count + 1).dropLast().elementsEqual(data)
      || line.suffix(data.count).elementsEqual(data), "reply data is not the end of the line")
  case .read(_, let bytes):
    require(headed, "read")
    if let again = DMCC.base64Decode(Array(DMCC.base64Encode(bytes).utf8)[...]) {
      require(again == bytes, "base64 does not round trip")
    } else {
      require(false, "base64 encoding does not decode")
    }
  }
}

private func checkRoundTrips(_ text: String, _ bytes: [UInt8], checksum: Bool) {
  // quote/unquote, and argument (bare words stay, anything else is quoted).
  let quoted = DMCC.quote(text)
  require(DMCC.unquote(quoted) == text, "unquote(quote(s)) != s")
  let argument = DMCC.argument(text)
  require(argument == text || DMCC.unquote(argument) == text, "argument does not read back")
  // A command is one line: header, text, optional checksum, CR LF, and nothing else ends a line.
  for id in [nil, bytes.count] as [Int?] {
    let command = DMCCCommand(DMCCCommand.set("DEVICE.NAME", argument), checksum: checksum, commandID: id)
    let encoded = command.encoded()
    require(encoded.suffix(2) == [0x0D, 0x0A], "command footer")
    let head = Array(command.header.utf8)
    require(encoded.starts(with: head), "command header")
    let lineEnd = encoded.count - 2 - (checksum ? 1 : 0)
    let line = encoded[..<lineEnd]
    require(!line.contains(0x0D) && !line.contains(0x0A), "a CR or LF inside a command line")
    if checksum { require(DMCC.xor(line) == encoded[lineEnd], "command checksum") }
    // Parse the argument back out of the line.
    let prefix = head + Array("SET DEVICE.NAME ".utf8)
    require(line.starts(with: prefix), "command text")
    let back = String(decoding: line.dropFirst(prefix.count), as: UTF8.self)
    require(back == argument, "argument changed on the wire")
    require(DMCC.unquote(back) == text || back == text, "argument does not parse back")
    // A reader's replies built the same way come back through the parser: quoted data, base64 read.
    var replyLine = Array("||\(checksum ? 1 : 0)\(id.map { ":\($0)" } ?? "")[0]".utf8) + Array(quoted.utf8)
    if checksum { replyLine.append(DMCC.xor(replyLine[...])) }
    var readLine = Array("||\(checksum ? 1 : 0)\(id.map { ":\($0)" } ?? "")[1]".utf8)
    readLine += Array(DMCC.base64Encode(bytes).utf8)
    if checksum { readLine.append(DMCC.xor(readLine[...])) }
    var parser = DMCCResponseParser()
    let got = parser.feed(replyLine + [0x0D, 0x0A] + readLine + [0x0D, 0x0A])
    guard got.count == 2, case .reply(let rid, 0, let data) = got[0], case .read(let did, let read) = got[1] else {
      require(false, "replies do not parse back: \(got)")
      return
    }
    require(rid == id && did == id, "command id")
    require(DMCC.unquote(String(decoding: data, as: UTF8.self)) == text, "quoted reply data")
    require(read == bytes, "base64 read data")
  }
}
