import Drivers
import Testing

// Real D600 frames captured by AXM (docs/device-protocols.md §2.4, AXM `d600-data-test.js`). The springcard
// URL is quoted in the reference with its middle elided as "…"; the test uses it exactly as quoted.
private let stText = "st.com/nfc-rfid"
private let springcardText = "http://tags.springcard.com/uid/…/springfield-florida"
private let stFrame: [UInt8] = [0x34, 0x46] + Array(stText.utf8) + [0x00]
private let springcardFrame: [UInt8] = [0x34, 0x46] + Array(springcardText.utf8) + [0x00]

private func expectedFrame(_ frame: [UInt8]) -> D600ScanEvent {
  let raw = Array(frame.dropLast())
  return .frame(D600ScanFrame(familyCode: "4F", family: 0x4F, payload: Array(raw.dropFirst(2)), raw: raw))
}

private func feed(_ notifications: [[UInt8]], maxFrameLength: Int = 4096) -> [D600ScanEvent] {
  var assembler = D600ScanAssembler(maxFrameLength: maxFrameLength)
  return notifications.flatMap { assembler.feed($0) }
}

private func chunks(_ bytes: [UInt8], _ size: Int) -> [[UInt8]] {
  stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<min($0 + size, bytes.count)]) }
}

private func text(_ string: String) -> [UInt8] { Array(string.utf8) }

@Suite struct D600ScanCodecTests {
  @Test func stFrameDecodes() throws {
    let events = feed([stFrame])
    #expect(
      events == [
        .frame(
          D600ScanFrame(
            familyCode: "4F", family: 0x4F, payload: text("st.com/nfc-rfid"),
            raw: [0x34, 0x46] + text("st.com/nfc-rfid")))
      ])
    guard case .frame(let frame) = try #require(events.first) else { return }
    #expect(frame.text == "st.com/nfc-rfid")
    #expect(frame.familyName == "NFC Forum")
    #expect(frame.familyIsImplied == false)
    #expect(frame.thinfilmURL == nil)
  }

  @Test func springcardFrameDecodes() throws {
    let events = feed([springcardFrame])
    #expect(events == [expectedFrame(springcardFrame)])
    guard case .frame(let frame) = try #require(events.first) else { return }
    #expect(frame.text == "http://tags.springcard.com/uid/…/springfield-florida")
    #expect(frame.payload.count == 54)
  }

  @Test(arguments: [stFrame, springcardFrame])
  func splitAtEveryBoundary(frame: [UInt8]) {
    for cut in 0...frame.count {
      let events = feed([Array(frame[..<cut]), Array(frame[cut...])])
      #expect(events == [expectedFrame(frame)], "cut at \(cut)")
    }
  }

  @Test(arguments: [stFrame, springcardFrame])
  func splitIntoOneToNNotifications(frame: [UInt8]) {
    for size in 1...frame.count {
      #expect(feed(chunks(frame, size)) == [expectedFrame(frame)], "notifications of \(size) bytes")
    }
  }

  @Test func splitInThreeEverywhere() {
    for first in 0...stFrame.count {
      for second in first...stFrame.count {
        let parts = [Array(stFrame[..<first]), Array(stFrame[first..<second]), Array(stFrame[second...])]
        #expect(feed(parts) == [expectedFrame(stFrame)], "cuts at \(first), \(second)")
      }
    }
  }

  @Test func twoFramesInOneNotification() {
    #expect(feed([stFrame + springcardFrame]) == [expectedFrame(stFrame), expectedFrame(springcardFrame)])
  }

  @Test func endOfOneFrameAndStartOfTheNextInOneNotification() {
    let stream = stFrame + springcardFrame
    for cut in 0...stream.count {
      let parts = [Array(stream[..<cut]), Array(stream[cut...])]
      #expect(feed(parts) == [expectedFrame(stFrame), expectedFrame(springcardFrame)], "cut at \(cut)")
    }
    for size in 1...stream.count {
      #expect(feed(chunks(stream, size)) == [expectedFrame(stFrame), expectedFrame(springcardFrame)])
    }
  }

  @Test func emptyFramesYieldNothing() {
    #expect(feed([[0x00, 0x00]]).isEmpty)
    #expect(feed([[0x00], [0x00], []]).isEmpty)
    #expect(feed([[0x00, 0x00] + stFrame + [0x00]]) == [expectedFrame(stFrame)])
  }

  @Test func garbageThenFrame() {
    let garbage: [UInt8] = [0x7A, 0x7A, 0x01, 0xFF, 0x00]
    #expect(
      feed([garbage, stFrame]) == [.malformed(raw: [0x7A, 0x7A, 0x01, 0xFF]), expectedFrame(stFrame)])
    #expect(
      feed([garbage + stFrame]) == [.malformed(raw: [0x7A, 0x7A, 0x01, 0xFF]), expectedFrame(stFrame)])
  }

  @Test func nonHexPrefixIsMalformedWithRawKept() {
    #expect(feed([text("zz123") + [0x00]]) == [.malformed(raw: text("zz123"))])
    #expect(feed([text("4G12") + [0x00]]) == [.malformed(raw: text("4G12"))])
    #expect(feed([text(" 4F") + [0x00]]) == [.malformed(raw: text(" 4F"))])
    #expect(feed([text("hx://") + [0x00]]) == [.malformed(raw: text("hx://"))])
  }

  @Test func shorterThanTwoBytesIsMalformed() {
    #expect(feed([[0x34, 0x00]]) == [.malformed(raw: [0x34])])
    #expect(feed([[0x68, 0x00]]) == [.malformed(raw: [0x68])])
  }

  @Test func prefixOnlyIsAFrameWithEmptyPayload() {
    #expect(
      feed([[0x30, 0x31, 0x00]]) == [
        .frame(D600ScanFrame(familyCode: "01", family: 0x01, payload: [], raw: [0x30, 0x31]))
      ])
  }

  @Test func lowercasePrefixIsUppercased() {
    let events = feed([text("4fabc") + [0x00]])
    #expect(
      events == [
        .frame(D600ScanFrame(familyCode: "4F", family: 0x4F, payload: text("abc"), raw: text("4fabc")))
      ])
  }

  @Test func htRuleImpliesNFCForum() {
    // AXM: a frame starting with "ht" is an NFC Forum URL without type prefix (docs/device-protocols.md
    // §2.4).
    let url = text("http://tags.springcard.com/uid/…/springfield-florida")
    for size in [1, 7, 20, url.count + 1] {
      let events = feed(chunks(url + [0x00], size))
      #expect(
        events == [
          .frame(D600ScanFrame(familyCode: "4F", family: 0x4F, payload: url, raw: url, familyIsImplied: true))
        ])
    }
  }

  @Test func frameOfExactlyTheCapDecodes() {
    let frame = text("4F") + [UInt8](repeating: 0x41, count: 4094)
    #expect(feed(chunks(frame + [0x00], 20)) == [expectedFrame(frame + [0x00])])
  }

  @Test func oversizedOnceThenResynchronises() {
    let big = text("4F") + [UInt8](repeating: 0x41, count: 5000)
    let events = feed(chunks(big + [0x00] + stFrame, 20))
    #expect(events == [.oversized(raw: Array(big.prefix(4096))), expectedFrame(stFrame)])
    #expect(feed([big + [0x00] + stFrame]) == events)
  }

  @Test func oversizedIsReportedAsSoonAsItPassesTheCap() {
    var assembler = D600ScanAssembler()
    let big = text("4F") + [UInt8](repeating: 0x41, count: 4094)
    #expect(assembler.feed(big).isEmpty)
    #expect(assembler.pendingCount == 4096)
    #expect(assembler.feed([0x42]) == [.oversized(raw: big)])
    #expect(assembler.isDiscarding)
    #expect(assembler.feed([UInt8](repeating: 0x43, count: 300)).isEmpty)
    #expect(assembler.pendingCount == 0)
    #expect(assembler.feed([0x43, 0x00] + stFrame) == [expectedFrame(stFrame)])
    #expect(!assembler.isDiscarding)
  }

  @Test func oversizedWithASmallCap() {
    let events = feed([text("4F12345") + [0x00] + stFrame + text("4F1") + [0x00]], maxFrameLength: 4)
    #expect(
      events == [
        .oversized(raw: text("4F12")), .oversized(raw: text("4Fst")), expectedFrame(text("4F1") + [0x00]),
      ])
  }

  @Test func aKilobyteFrameInFourNotifications() {
    // Synthetic, shaped like AXM's ~1 kB four-notification capture (bytes not quoted in the reference).
    let frame = text("4F") + [UInt8](repeating: 0x61, count: 1000) + [0x00]
    #expect(feed(chunks(frame, 251)) == [expectedFrame(frame)])
  }

  @Test func resetDropsAPartialFrame() {
    var assembler = D600ScanAssembler()
    _ = assembler.feed(Array(stFrame.prefix(10)))
    assembler.reset()
    #expect(assembler.pendingCount == 0)
    #expect(assembler.feed(stFrame) == [expectedFrame(stFrame)])
  }

  @Test func familyNames() {
    let names: [(UInt8, String)] = [
      (0x01, "ISO 14443-A (NFC-A)"), (0x02, "ISO 14443-B (NFC-B)"), (0x03, "FeliCa"),
      (0x04, "ISO 15693 (NFC-V)"),
      (0x08, "NXP ICODE1"), (0x10, "Inside PicoPass/PicoTag"), (0x11, "Innovision Topaz/Jewel"),
      (0x14, "EM4134"), (0x18, "Thinfilm/Kovio NFC barcode"), (0x20, "ST SR family"),
      (0x34, "ISO 18000-3M3 / EPC HF"), (0x40, "ASK CTS256B/512B"), (0x4F, "NFC Forum"), (0x80, "Innovatron"),
      (0x00, "Unknown 0x00"), (0x99, "Unknown 0x99"), (0xFF, "Unknown 0xFF"),
    ]
    for (code, name) in names { #expect(D600ScanFrame.familyName(code) == name) }
  }

  @Test func thinfilmURL() throws {
    // Synthetic payloads following TS's rule (docs/device-protocols.md §2.4); no Thinfilm capture is quoted.
    func frame(_ bytes: [UInt8]) throws -> D600ScanFrame {
      guard case .frame(let frame) = D600ScanAssembler.decode(frame: bytes) else { throw NotAFrame() }
      return frame
    }
    #expect(
      try frame(text("18") + [0xB7, 0x03] + text("example.com/a") + [0xFE, 0x12]).thinfilmURL
        == "http://example.com/a")
    #expect(
      try frame(text("18") + [0xB7, 0x04] + text("example.com") + [0xFE]).thinfilmURL == "https://example.com"
    )
    #expect(try frame(text("18") + [0xB7, 0x04] + text("example.com")).thinfilmURL == "https://example.com")
    #expect(try frame(text("18") + [0xB7, 0x05] + text("example.com")).thinfilmURL == nil)
    #expect(try frame(text("18") + [0xB7]).thinfilmURL == nil)
    #expect(try frame(text("4F") + [0xB7, 0x03] + text("example.com")).thinfilmURL == nil)
  }

  @Test func invalidUTF8HasNoText() throws {
    guard case .frame(let frame) = D600ScanAssembler.decode(frame: text("4F") + [0xC3, 0x28]) else {
      Issue.record("not a frame")
      return
    }
    #expect(frame.text == nil)
  }
}

private struct NotAFrame: Error {}
