// libFuzzer harness: D600ScanAssembler (docs/device-protocols.md §2.4).
// Input: byte 0 chooses a small second cap; the rest is notifications by the length-prefix scheme.

@_cdecl("LLVMFuzzerTestOneInput")
public func d600ScanFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let input = fuzzInput(data, size)
  guard let selector = input.first else { return 0 }
  let notifications = fuzzNotifications(input.dropFirst())
  let stream = notifications.flatMap { $0 }
  for cap in [D600ScanAssembler.maxFrameLength, 2 + Int(selector % 64)] {
    var split = D600ScanAssembler(maxFrameLength: cap)
    var events: [D600ScanEvent] = []
    for notification in notifications { events += split.feed(notification) }
    var whole = D600ScanAssembler(maxFrameLength: cap)
    let wholeEvents = whole.feed(stream)
    require(events == wholeEvents, "events depend on the split")
    require(split.pendingCount == whole.pendingCount, "pending depends on the split")
    require(split.pendingCount <= cap, "pending past the cap")
    var accounted = split.pendingCount + stream.lazy.filter { $0 == 0 }.count
    var sawOversized = false
    for event in events {
      switch event {
      case .frame(let frame):
        require(frame.raw.count >= 2 && frame.raw.count <= cap, "frame length")
        require(!frame.raw.contains(0), "terminator inside a frame")
        require(frame.family != nil && frame.familyCode.utf8.count == 2, "family")
        if frame.familyIsImplied {
          require(frame.payload == frame.raw && frame.family == 0x4F, "implied family")
        } else {
          require(Array(frame.raw.dropFirst(2)) == frame.payload, "payload is the rest")
        }
        _ = frame.thinfilmURL
        _ = frame.text
        _ = frame.familyName
        accounted += frame.raw.count
      case .oversized(let raw):
        require(raw.count == cap, "oversized keeps exactly the cap")
        sawOversized = true
      case .malformed(let raw):
        require(!raw.isEmpty && raw.count <= cap && !raw.contains(0), "malformed length")
        require(D600ScanAssembler.decode(frame: raw) == .malformed(raw: raw), "malformed is stable")
        accounted += raw.count
      }
    }
    if !sawOversized && !split.isDiscarding { require(accounted == stream.count, "bytes lost") }
  }
  return 0
}
