import Drivers
import Testing

private func feed(_ assembler: inout D600ConfigAnswerAssembler, _ block: [UInt8])
  -> Result<D600ConfigAnswer?, D600ConfigAnswerError>
{
  do {
    return .success(try assembler.feed(block))
  } catch {
    return .failure(error)
  }
}

private let fifty: [UInt8] = Array(0x01...0x32)

/// The blocks of a 50-byte payload, worked out by hand from the docs/device-protocols.md §2.6 rule
/// (docs/device-protocols.md §2.6, TS): 18 + 19 + 13 bytes; headers (18+1)|0x20 = 0x33, 19|0x80|0x20 = 0xB3,
/// 13|0x80|0x40 = 0xCD.
private let fiftyBlocks: [[UInt8]] = [
  [
    0x33, 0x0D, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F,
    0x10, 0x11, 0x12,
  ],
  [
    0xB3, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x1B, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x21, 0x22,
    0x23, 0x24, 0x25,
  ],
  [0xCD, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x2D, 0x2E, 0x2F, 0x30, 0x31, 0x32],
]

@Suite struct D600ConfigBlocksCodecTests {
  @Test func scannerModeIsOneBlock() {
    // TS and SC-NET write 02 AE 07 (payload + 1); AXM's 03 AE 07 is the documented discrepancy.
    #expect(D600ConfigBlocks.encode(command: 0xAE, payload: [0x07]) == [[0x02, 0xAE, 0x07]])
    #expect(D600ConfigBlocks.operatingMode(D600OperatingMode.scanner) == [[0x02, 0xAE, 0x07]])
    #expect(D600ConfigBlocks.operatingMode(D600OperatingMode.pcscProtocolV3) == [[0x02, 0xAE, 0x03]])
    #expect(D600ConfigBlocks.operatingMode(D600OperatingMode.leavePCSC) == [[0x02, 0xAE, 0x00]])
  }

  @Test func fiftyBytePayload() {
    let blocks = D600ConfigBlocks.encode(command: 0x0D, payload: fifty)
    #expect(blocks == fiftyBlocks)
    #expect(blocks.map(\.count) == [20, 20, 14])
  }

  @Test func emptyPayload() {
    #expect(D600ConfigBlocks.encode(.resetMCU) == [[0x01, 0x8E]])
    #expect(D600ConfigBlocks.encode(.pushTemporaryConfig) == [[0x01, 0x8D]])
    #expect(D600ConfigBlocks.encode(.getDeviceData) == [[0x01, 0x20]])
  }

  @Test func blockBoundaries() {
    let eighteen: [UInt8] = Array(1...18)
    #expect(D600ConfigBlocks.encode(command: 0x0D, payload: eighteen) == [[0x13, 0x0D] + eighteen])
    let nineteen: [UInt8] = Array(1...19)
    #expect(
      D600ConfigBlocks.encode(command: 0x0D, payload: nineteen) == [[0x33, 0x0D] + eighteen, [0x81, 19]])
    // 18 + 19 + 19 + 19: headers 0x33, 0xB3 (k=1), 0xF3 (k=2: toggle), 0x93 (k=3, last).
    let long: [UInt8] = Array(repeating: 0xEE, count: 75)
    #expect(D600ConfigBlocks.encode(command: 0x0D, payload: long).map { $0[0] } == [0x33, 0xB3, 0xF3, 0x93])
    let longer: [UInt8] = Array(repeating: 0xEE, count: 76)
    #expect(
      D600ConfigBlocks.encode(command: 0x0D, payload: longer).map { $0[0] } == [0x33, 0xB3, 0xF3, 0xB3, 0xC1])
  }

  @Test func blockSizeIsClamped() {
    #expect(
      D600ConfigBlocks.encode(command: 0x0D, payload: [0xAA, 0xBB], blockSize: 0)
        == [[0x21, 0x0D], [0xA1, 0xAA], [0xC1, 0xBB]])
    let payload: [UInt8] = Array(repeating: 0x11, count: 40)
    let blocks = D600ConfigBlocks.encode(command: 0x0D, payload: payload, blockSize: 100)
    #expect(blocks.map(\.count) == [32, 11])
    #expect(blocks.map { $0[0] } == [0x3F, 0x8A])
  }

  @Test func resetMagics() {
    #expect(D600ResetMagic.deleteBonds == [0xFE, 0xDA, 0xFA, 0xED])
    #expect(D600ResetMagic.deleteBondsAndFactoryReset == [0xDA, 0xFA, 0xED, 0xFE])
    #expect(D600ResetMagic.factoryReset == [0xFE, 0xED, 0xFA, 0xDA])
    #expect(
      D600ConfigBlocks.encode(.resetOrDeleteBonds, payload: D600ResetMagic.factoryReset)
        == [[0x05, 0x0F, 0xFE, 0xED, 0xFA, 0xDA]])
  }

  @Test func registers() {
    #expect(
      D600ConfigBlocks.writeRegister(address: 0x42, value: [0x01, 0x02]) == [[0x04, 0x0D, 0x42, 0x01, 0x02]])
    #expect(D600ConfigBlocks.readRegister(address: 0x42) == [[0x02, 0x0E, 0x42]])
  }

  @Test func commandCodes() {
    let codes: [(D600ConfigCommand, UInt8)] = [
      (.writeRegister, 0x0D), (.readRegister, 0x0E), (.resetOrDeleteBonds, 0x0F), (.bleTest, 0x14),
      (.rfTest, 0x15), (.bleTestAlternative, 0x18), (.rfTestAlternative, 0x19), (.getDeviceData, 0x20),
      (.pushTemporaryConfig, 0x8D), (.resetMCU, 0x8E), (.playSequence, 0x90), (.leds, 0x91), (.buzzer, 0x92),
      (.vibrator, 0x94), (.operatingMode, 0xAE),
    ]
    for (command, code) in codes { #expect(command.rawValue == code) }
    #expect(D600ConfigCommand.allCases.count == codes.count)
    #expect(D600OperatingMode.scanner == 0x07)
    #expect(D600OperatingMode.pcscProtocolV2 == 0x02)
  }
}

@Suite struct D600ConfigAnswerCodecTests {
  @Test func singleBlockAnswers() {
    var assembler = D600ConfigAnswerAssembler()
    #expect(feed(&assembler, [0x01, 0x00]) == .success(D600ConfigAnswer(status: 0x00, data: [])))
    #expect(
      feed(&assembler, [0x03, 0x00, 0xAB, 0xCD])
        == .success(D600ConfigAnswer(status: 0x00, data: [0xAB, 0xCD])))
    #expect(feed(&assembler, [0x02, 0x05, 0x01]) == .success(D600ConfigAnswer(status: 0x05, data: [0x01])))
    #expect(D600ConfigAnswer(status: 0x00, data: []).isSuccess)
    #expect(!D600ConfigAnswer(status: 0x05, data: []).isSuccess)
  }

  @Test func lengthBits() {
    var assembler = D600ConfigAnswerAssembler()
    // Declared 2 (status + 1): the rest is padding.
    #expect(
      feed(&assembler, [0x02, 0x00, 0xAB, 0x00, 0x00]) == .success(D600ConfigAnswer(status: 0, data: [0xAB])))
    // Declared more than arrived, or 0: the notification counts.
    #expect(feed(&assembler, [0x05, 0x00, 0xAB]) == .success(D600ConfigAnswer(status: 0, data: [0xAB])))
    #expect(feed(&assembler, [0x00, 0x00, 0xAB]) == .success(D600ConfigAnswer(status: 0, data: [0xAB])))
  }

  @Test func chainedAnswer() {
    var assembler = D600ConfigAnswerAssembler()
    let blocks = [[0x33, 0x00] + fiftyBlocks[0].dropFirst(2), fiftyBlocks[1], fiftyBlocks[2]]
    #expect(feed(&assembler, blocks[0]) == .success(nil))
    #expect(assembler.isCollecting)
    #expect(feed(&assembler, blocks[1]) == .success(nil))
    #expect(feed(&assembler, blocks[2]) == .success(D600ConfigAnswer(status: 0x00, data: fifty)))
    #expect(!assembler.isCollecting)
  }

  @Test func roundTripThroughTheEncoder() {
    for count in 0...120 {
      let payload = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7) }
      var assembler = D600ConfigAnswerAssembler()
      var results: [Result<D600ConfigAnswer?, D600ConfigAnswerError>] = []
      for block in D600ConfigBlocks.encode(command: 0x42, payload: payload) {
        results.append(feed(&assembler, block))
      }
      #expect(results.last == .success(D600ConfigAnswer(status: 0x42, data: payload)), "\(count) bytes")
      #expect(results.dropLast().allSatisfy { $0 == .success(nil) })
    }
  }

  @Test func garbageIsATypedError() {
    var assembler = D600ConfigAnswerAssembler()
    #expect(feed(&assembler, []) == .failure(.empty))
    #expect(feed(&assembler, [0x01]) == .failure(.truncated(raw: [0x01])))
    #expect(feed(&assembler, [0x41, 0x00]) == .failure(.invalidHeader(raw: [0x41, 0x00])))
    #expect(feed(&assembler, [0x81, 0x07]) == .failure(.unexpectedContinuation(raw: [0x81, 0x07])))
    #expect(feed(&assembler, [0xC1, 0x07]) == .failure(.unexpectedContinuation(raw: [0xC1, 0x07])))
    // Still usable.
    #expect(feed(&assembler, [0x01, 0x00]) == .success(D600ConfigAnswer(status: 0, data: [])))
  }

  @Test func wrongToggleIsOutOfSequence() {
    var assembler = D600ConfigAnswerAssembler()
    #expect(feed(&assembler, [0x22, 0x00, 0x01]) == .success(nil))
    #expect(feed(&assembler, [0xE1, 0x02]) == .failure(.outOfSequence(expectedBlock: 1, raw: [0xE1, 0x02])))
    #expect(!assembler.isCollecting)
    #expect(feed(&assembler, [0x22, 0x00, 0x01]) == .success(nil))
    #expect(feed(&assembler, [0xA1, 0x02]) == .success(nil))
    #expect(feed(&assembler, [0xA1, 0x03]) == .failure(.outOfSequence(expectedBlock: 2, raw: [0xA1, 0x03])))
  }

  @Test func toggleCheckCanBeTurnedOff() {
    var assembler = D600ConfigAnswerAssembler(checksToggle: false)
    #expect(feed(&assembler, [0x22, 0x00, 0x01]) == .success(nil))
    #expect(feed(&assembler, [0xE1, 0x02]) == .success(nil))
    #expect(
      feed(&assembler, [0x81, 0x03]) == .success(D600ConfigAnswer(status: 0, data: [0x01, 0x02, 0x03])))
  }

  @Test func newFirstBlockInterruptsAChainedAnswer() {
    var assembler = D600ConfigAnswerAssembler()
    #expect(feed(&assembler, [0x23, 0x00, 0x01, 0x02]) == .success(nil))
    #expect(
      feed(&assembler, [0x02, 0x07, 0x09])
        == .failure(
          .interrupted(
            partial: D600ConfigAnswer(status: 0, data: [0x01, 0x02]),
            restart: D600ConfigAnswer(status: 0x07, data: [0x09]))))
    #expect(feed(&assembler, [0x23, 0x00, 0x01, 0x02]) == .success(nil))
    #expect(
      feed(&assembler, [0x22, 0x00, 0x05])
        == .failure(.interrupted(partial: D600ConfigAnswer(status: 0, data: [0x01, 0x02]), restart: nil)))
    #expect(feed(&assembler, [0x81, 0x06]) == .success(D600ConfigAnswer(status: 0, data: [0x05, 0x06])))
  }

  @Test func tooLongThenSkippedThenUsable() {
    var assembler = D600ConfigAnswerAssembler(maxAnswerLength: 4)
    #expect(feed(&assembler, [0x24, 0x00, 0x01, 0x02, 0x03]) == .success(nil))
    #expect(
      feed(&assembler, [0xA2, 0x04, 0x05])
        == .failure(.tooLong(partial: D600ConfigAnswer(status: 0, data: [0x01, 0x02, 0x03, 0x04]))))
    #expect(feed(&assembler, [0xE1, 0x06]) == .success(nil))
    #expect(feed(&assembler, [0x81, 0x07]) == .success(nil))
    #expect(feed(&assembler, [0x81, 0x07]) == .failure(.unexpectedContinuation(raw: [0x81, 0x07])))
    #expect(feed(&assembler, [0x01, 0x00]) == .success(D600ConfigAnswer(status: 0, data: [])))
  }

  @Test func resetForgetsAPartialAnswer() {
    var assembler = D600ConfigAnswerAssembler()
    #expect(feed(&assembler, [0x22, 0x00, 0x01]) == .success(nil))
    assembler.reset()
    #expect(feed(&assembler, [0x81, 0x02]) == .failure(.unexpectedContinuation(raw: [0x81, 0x02])))
  }
}
