import Drivers
import Testing

// The AXM S550 worked example (docs/device-protocols.md §3.4, AXM `s550-data-test.js`):
// CC 5B 0020 B0 | C1 04 20 03 01 00 | C2 07 02C40044F99DB6 | C3 0F "st.com/nfc-rfid".
private let readData: [UInt8] =
  [0xC1, 0x04, 0x20, 0x03, 0x01, 0x00, 0xC2, 0x07, 0x02, 0xC4, 0x00, 0x44, 0xF9, 0x9D, 0xB6, 0xC3, 0x0F]
  + Array("st.com/nfc-rfid".utf8)
private let readEvent: [UInt8] = [0xCC, 0x5B, 0x00, 0x20, 0xB0] + readData
private let readMessage = DirectMessage(pcb: 0xCC, cla: 0x5B, code: 0xB0, data: readData)

// B1 events shaped as SC-DOC `Events/Tag` describes them (no capture is quoted): inserted carries
// TagIndex + TagInfo + TagId, removed carries only TagIndex.
private let insertedData: [UInt8] = [
  0xC0, 0x01, 0x00, 0xC1, 0x04, 0x80, 0x03, 0x01, 0x00, 0xC2, 0x07, 0x02, 0xC4, 0x00, 0x44, 0xF9, 0x9D, 0xB6,
]
private let insertedEvent: [UInt8] = [0xCC, 0x5B, 0x00, 0x12, 0xB1] + insertedData
private let removedEvent: [UInt8] = [0xCD, 0x5B, 0x00, 0x03, 0xB1, 0xC0, 0x01, 0x00]

private func feed(_ indications: [[UInt8]], _ assembler: DirectAssembler = DirectAssembler()) -> [DirectEvent]
{
  var assembler = assembler
  return indications.flatMap { assembler.feed($0) }
}

private func chunks(_ bytes: [UInt8], _ size: Int) -> [[UInt8]] {
  stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<min($0 + size, bytes.count)]) }
}

@Suite struct DirectAssemblerCodecTests {
  @Test func workedExampleWhole() {
    #expect(readEvent.count == 37)
    #expect(feed([readEvent]) == [.message(readMessage)])
    #expect(readMessage.isFromDevice)
    #expect(readMessage.isEvent)
    #expect(!readMessage.isSecure)
    #expect(!readMessage.isLongHeader)
    #expect(readMessage.sequence == 0x0C)
    #expect(readMessage.data.count == 0x20)
    #expect(readMessage.encoded == readEvent)
  }

  @Test func workedExampleSplitAtEveryByte() {
    for cut in 0...readEvent.count {
      #expect(
        feed([Array(readEvent[..<cut]), Array(readEvent[cut...])]) == [.message(readMessage)], "cut \(cut)")
    }
    for size in 1...readEvent.count {
      #expect(feed(chunks(readEvent, size)) == [.message(readMessage)], "indications of \(size) bytes")
    }
  }

  @Test func workedExampleSplitInThreeEverywhere() {
    for first in 0...readEvent.count {
      for second in first...readEvent.count {
        let parts = [
          Array(readEvent[..<first]), Array(readEvent[first..<second]), Array(readEvent[second...]),
        ]
        #expect(feed(parts) == [.message(readMessage)], "cuts \(first), \(second)")
      }
    }
  }

  @Test func severalMessagesInOneIndicationAndAcrossBoundaries() {
    let stream = insertedEvent + removedEvent + readEvent
    let expected: [DirectEvent] = [
      .message(DirectMessage(pcb: 0xCC, cla: 0x5B, code: 0xB1, data: insertedData)),
      .message(DirectMessage(pcb: 0xCD, cla: 0x5B, code: 0xB1, data: [0xC0, 0x01, 0x00])),
      .message(readMessage),
    ]
    #expect(feed([stream]) == expected)
    for cut in 0...stream.count {
      #expect(feed([Array(stream[..<cut]), Array(stream[cut...])]) == expected, "cut \(cut)")
    }
    for size in 1...30 { #expect(feed(chunks(stream, size)) == expected) }
  }

  @Test func garbageIndicationIsMalformedThenResync() {
    #expect(
      feed([[0x01, 0x02, 0x03], readEvent]) == [.malformed(raw: [0x01, 0x02, 0x03]), .message(readMessage)])
    // Garbage after a complete message: the rest of that indication.
    #expect(
      feed([readEvent + [0x4C, 0x5B, 0x00], readEvent])
        == [.message(readMessage), .malformed(raw: [0x4C, 0x5B, 0x00]), .message(readMessage)])
  }

  @Test func hostDirectionAcceptedWhenAsked() {
    let command = DirectMessage.command(cla: 0x58, ins: 0x9F, data: [], sequence: 1)
    #expect(feed([command.encoded]) == [.malformed(raw: [0x01, 0x58, 0x00, 0x00, 0x9F])])
    #expect(feed([command.encoded], DirectAssembler(requiresDeviceDirection: false)) == [.message(command)])
  }

  @Test func longHeader() {
    let bytes: [UInt8] = [0xDC, 0x5B, 0x00, 0x00, 0x00, 0x03, 0xB1, 0xC0, 0x01, 0x02]
    let message = DirectMessage(pcb: 0xDC, cla: 0x5B, code: 0xB1, data: [0xC0, 0x01, 0x02])
    #expect(feed([bytes]) == [.message(message)])
    #expect(message.isLongHeader)
    #expect(message.encoded == bytes)
    for cut in 0...bytes.count {
      #expect(feed([Array(bytes[..<cut]), Array(bytes[cut...])]) == [.message(message)])
    }
  }

  @Test func oversizedIsMalformedWithTheRawPrefixKept() {
    // LEN 0x00010001 = 65537 > 64 KiB.
    let header: [UInt8] = [0xDC, 0x5B, 0x00, 0x01, 0x00, 0x01, 0xB0]
    #expect(
      feed([header + [0xC3, 0x01], readEvent]) == [
        .malformed(raw: header + [0xC3, 0x01]), .message(readMessage),
      ])
    // The LEN may arrive in a later indication than the PCB.
    #expect(
      feed([[0xDC, 0x5B, 0x00], [0x01, 0x00, 0x01, 0xB0, 0xAA], readEvent])
        == [.malformed(raw: header + [0xAA]), .message(readMessage)])
  }

  @Test func capBoundary() {
    let small = DirectAssembler(maxDataLength: 3)
    #expect(feed([[0xCC, 0x5B, 0x00, 0x03, 0xB1, 0xC0, 0x01, 0x00]], small).count == 1)
    #expect(
      feed([[0xCC, 0x5B, 0x00, 0x04, 0xB1, 0xC0, 0x02, 0x00, 0x00]], small)
        == [.malformed(raw: [0xCC, 0x5B, 0x00, 0x04, 0xB1, 0xC0, 0x02, 0x00, 0x00])])
    // A 64 KiB message is accepted by default.
    let data = [UInt8](repeating: 0x5A, count: 65536)
    let big = DirectMessage(pcb: 0xD0, cla: 0x5E, code: 0x00, data: data)
    #expect(big.encoded.prefix(7) == [0xD0, 0x5E, 0x00, 0x01, 0x00, 0x00, 0x00])
    #expect(feed(chunks(big.encoded, 244)) == [.message(big)])
  }

  @Test func flushAndReset() {
    var assembler = DirectAssembler()
    #expect(assembler.feed(Array(readEvent.prefix(12))).isEmpty)
    #expect(assembler.pendingCount == 12)
    #expect(assembler.flush() == [.malformed(raw: Array(readEvent.prefix(12)))])
    #expect(assembler.pendingCount == 0)
    #expect(assembler.flush().isEmpty)
    #expect(assembler.feed(Array(readEvent.prefix(3))).isEmpty)
    assembler.reset()
    #expect(assembler.feed(readEvent) == [.message(readMessage)])
  }

  @Test func emptyIndicationsAreHarmless() {
    #expect(feed([[], readEvent, []]) == [.message(readMessage)])
  }
}

@Suite struct DirectMessageCodecTests {
  @Test func hostCommand() {
    // Host PCB Unknown (docs/device-protocols.md §3.4): 0x00 | sequence.
    let wink = DirectMessage.command(cla: DirectClass.control, ins: DirectControlINS.wink, sequence: 1)
    #expect(wink == DirectMessage(pcb: 0x01, cla: 0x58, code: 0x9F, data: []))
    #expect(wink.encoded == [0x01, 0x58, 0x00, 0x00, 0x9F])
    #expect(!wink.isFromDevice)
    let getData = DirectMessage.command(
      cla: 0x58, ins: DirectControlINS.getData, data: [0x06], sequence: 0x1F)
    #expect(getData.encoded == [0x0F, 0x58, 0x00, 0x01, 0x20, 0x06])
    #expect(getData.sequence == 0x0F)
  }

  @Test func pcbBits() {
    let message = DirectMessage(pcb: 0xB5, cla: 0, code: 0, data: [])
    #expect(message.isFromDevice && !message.isEvent && message.isSecure && message.isLongHeader)
    #expect(message.sequence == 5)
    #expect(DirectMessage.headerLength(pcb: 0xB5) == 7)
    #expect(DirectMessage.headerLength(pcb: 0xA5) == 5)
  }

  @Test func encodingAddsTheLongHeaderWhenNeeded() {
    let message = DirectMessage(pcb: 0x80, cla: 0x5E, code: 0x01, data: [UInt8](repeating: 1, count: 0x10000))
    #expect(message.encoded.prefix(7) == [0x90, 0x5E, 0x00, 0x01, 0x00, 0x00, 0x01])
    #expect(
      DirectMessage(pcb: 0x80, cla: 0x5E, code: 0x01, data: [1, 2]).encoded == [
        0x80, 0x5E, 0x00, 0x02, 0x01, 1, 2,
      ])
  }

  @Test func classAndInstructionConstants() {
    #expect(
      [
        DirectClass.protocolClass, DirectClass.control, DirectClass.atCrypto, DirectClass.samAV,
        DirectClass.reader,
        DirectClass.dfu, DirectClass.echo,
      ] == [0x00, 0x58, 0x59, 0x5A, 0x5B, 0x5D, 0x5E])
    #expect(DirectProtocolINS.hostEventPoll == 0xFE)
    #expect(DirectControlINS.readerStop == 0xA0)
  }
}

@Suite struct SpringCoreTagEventCodecTests {
  @Test func workedExampleIsATagRead() throws {
    let event = try #require(SpringCoreTagEvent.decode(readMessage))
    #expect(event.kind == .read)
    #expect(event.tagIndex == nil)
    let info = try #require(event.info)
    #expect(info == SpringCoreTagEvent.TagInfo(flags: 0x20, interface: 0x03, protocol: 0x01, template: 0x00))
    #expect(info.interface == 3)
    #expect(info.protocol == 1)
    #expect(!info.isNew && !info.isOriginal && info.dataIsString && !info.detailsIsString)
    #expect(event.tagID == [0x02, 0xC4, 0x00, 0x44, 0xF9, 0x9D, 0xB6])
    #expect(event.tagIDHex == "02C40044F99DB6")
    #expect(event.data == Array("st.com/nfc-rfid".utf8))
    #expect(event.dataText == "st.com/nfc-rfid")
    #expect(event.details.isEmpty)
    #expect(event.detailsText == nil)
    #expect(event.sdkTagTypeID == 0x100)
  }

  @Test func workedExampleThroughTheAssemblerSplitAtEveryByte() {
    let expected = SpringCoreTagEvent.decode(readMessage)
    #expect(expected != nil)
    for cut in 0...readEvent.count {
      let events = feed([Array(readEvent[..<cut]), Array(readEvent[cut...])])
      guard events.count == 1, case .message(let message) = events[0] else {
        Issue.record("cut \(cut): \(events)")
        continue
      }
      #expect(SpringCoreTagEvent.decode(message) == expected)
    }
  }

  @Test func insertedAndRemoved() throws {
    let events = feed([insertedEvent, removedEvent])
    guard events.count == 2, case .message(let first) = events[0], case .message(let second) = events[1]
    else {
      Issue.record("\(events)")
      return
    }
    let inserted = try #require(SpringCoreTagEvent.decode(first))
    #expect(
      inserted
        == SpringCoreTagEvent(
          kind: .inserted, tagIndex: 0,
          info: SpringCoreTagEvent.TagInfo(flags: 0x80, interface: 0x03, protocol: 0x01, template: 0x00),
          tagID: [0x02, 0xC4, 0x00, 0x44, 0xF9, 0x9D, 0xB6]))
    #expect(inserted.info?.isNew == true)
    #expect(inserted.dataText == nil)
    let removed = try #require(SpringCoreTagEvent.decode(second))
    #expect(removed == SpringCoreTagEvent(kind: .removed, tagIndex: 0))
  }

  @Test func insertedWithTagIDOnly() {
    let message = DirectMessage(pcb: 0xC0, cla: 0x5B, code: 0xB1, data: [0xC2, 0x02, 0xAB, 0xCD])
    #expect(SpringCoreTagEvent.decode(message) == SpringCoreTagEvent(kind: .inserted, tagID: [0xAB, 0xCD]))
  }

  @Test func flagsAndOtherTLVs() throws {
    let data: [UInt8] = [
      0xC1, 0x05, 0xF0, 0x03, 0x4F, 0x00, 0x99, 0x85, 0x02, 0x03, 0x01, 0xC4, 0x02, 0x68, 0x69, 0xC3, 0x00,
      0xC2, 0x01, 0x01, 0xC2, 0x01, 0x02, 0x77, 0x01, 0x00,
    ]
    let event = try #require(
      SpringCoreTagEvent.decode(DirectMessage(pcb: 0xC0, cla: 0x5B, code: 0xB0, data: data)))
    let info = try #require(event.info)
    #expect(info.isNew && info.isOriginal && info.dataIsString && info.detailsIsString)
    #expect(event.interfaceAndProtocols == [0x03, 0x01])
    #expect(event.detailsText == "hi")
    #expect(event.dataText == "")
    #expect(event.tagID == [0x01])  // the first C2 counts
    #expect(event.sdkTagTypeID == 0x10A)
  }

  @Test func notATagEvent() {
    let cases: [DirectMessage] = [
      DirectMessage(pcb: 0xCC, cla: 0x58, code: 0xB0, data: readData),  // CONTROL class
      DirectMessage(pcb: 0xCC, cla: 0x5B, code: 0x8B, data: readData),  // reader start/stop
      DirectMessage(pcb: 0x4C, cla: 0x5B, code: 0xB0, data: readData),  // host direction
      DirectMessage(pcb: 0xCC, cla: 0x5B, code: 0xB0, data: [0xC3, 0x05, 0x01]),  // TLV overrun
      DirectMessage(pcb: 0xCC, cla: 0x5B, code: 0xB1, data: [0xC0, 0x02, 0x00, 0x01]),  // TagIndex of 2 bytes
      DirectMessage(pcb: 0xCC, cla: 0x5B, code: 0xB0, data: [0xC1, 0x03, 0x20, 0x03, 0x01]),  // short TagInfo
      DirectMessage(pcb: 0xCC, cla: 0x5B, code: 0xB1, data: []),  // nothing to report
      DirectMessage(pcb: 0xCC, cla: 0x5B, code: 0xB1, data: [0xC3, 0x01, 0x41]),  // data only
    ]
    for message in cases { #expect(SpringCoreTagEvent.decode(message) == nil, "\(message)") }
  }

  @Test func nonHFTagHasNoSDKType() throws {
    let data: [UInt8] = [0xC1, 0x04, 0x00, 0x06, 0x03, 0x00]
    let event = try #require(
      SpringCoreTagEvent.decode(DirectMessage(pcb: 0xC0, cla: 0x5B, code: 0xB0, data: data)))
    #expect(event.sdkTagTypeID == nil)
  }
}
