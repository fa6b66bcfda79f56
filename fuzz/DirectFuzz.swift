// libFuzzer harness: DirectAssembler, SpringCoreTagEvent.decode and BerTLV (docs/device-protocols.md §3.4).
// Input: byte 0 = options (bit 0: accept host-direction PCBs; bits 1-7: a small cap); the rest is
// indications by the length-prefix scheme, and is also decoded directly as TLVs and as a tag event.

@_cdecl("LLVMFuzzerTestOneInput")
public func directFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let input = fuzzInput(data, size)
  guard let options = input.first else { return 0 }
  let body = Array(input.dropFirst())
  let indications = fuzzNotifications(body[...])
  let stream = indications.flatMap { $0 }
  for cap in [DirectAssembler.maxDataLength, Int(options >> 1)] {
    var assembler = DirectAssembler(maxDataLength: cap, requiresDeviceDirection: options & 1 == 0)
    var events: [DirectEvent] = []
    for indication in indications { events += assembler.feed(indication) }
    // Every byte is in exactly one event, in order, or still pending.
    var replay: [UInt8] = []
    var messages: [DirectMessage] = []
    for event in events {
      switch event {
      case .message(let message):
        require(message.data.count <= cap, "message past the cap")
        replay += message.encoded
        messages.append(message)
        checkTagEvent(message)
      case .malformed(let raw):
        require(!raw.isEmpty, "empty malformed")
        replay += raw
      }
    }
    require(replay.count + assembler.pendingCount == stream.count, "bytes lost or invented")
    require(replay == Array(stream.prefix(replay.count)), "bytes reordered")
    // Valid messages read back the same in one indication.
    var again = DirectAssembler(maxDataLength: cap, requiresDeviceDirection: false)
    let reread = again.feed(messages.flatMap(\.encoded))
    require(reread == messages.map(DirectEvent.message), "messages do not read back")
    let flushed = assembler.flush()
    require(flushed.count == (replay.count < stream.count ? 1 : 0), "flush")
  }
  checkTLV(body)
  checkTagEvent(DirectMessage(pcb: 0xCC, cla: 0x5B, code: 0xB0 | (options & 1), data: body))
  return 0
}

private func checkTLV(_ bytes: [UInt8]) {
  if case .success(let items) = BerTLV.parse(bytes) {
    require(items.reduce(0) { $0 + $1.value.count } <= bytes.count, "TLV values past the input")
    let encoded = BerTLV.encode(items)
    guard case .success(let again) = BerTLV.parse(encoded) else {
      require(false, "TLV encoding does not parse")
      return
    }
    require(
      again.map(\.tag) == items.map(\.tag) && again.map(\.value) == items.map(\.value), "TLV round trip")
    require(encoded.count <= bytes.count, "minimal encoding is not longer")
  }
}

private func checkTagEvent(_ message: DirectMessage) {
  checkTLV(message.data)
  guard let event = SpringCoreTagEvent.decode(message) else { return }
  require(message.cla == 0x5B && (message.code == 0xB0 || message.code == 0xB1), "decoded another message")
  require((event.kind == .read) == (message.code == 0xB0), "kind")
  if event.kind == .removed { require(event.info == nil && event.tagIndex != nil, "removed") }
  _ = event.tagIDHex
  _ = event.dataText
  _ = event.detailsText
  _ = event.sdkTagTypeID
}
