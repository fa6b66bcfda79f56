// libFuzzer harness: D600ConfigAnswerAssembler and D600ConfigBlocks (docs/device-protocols.md §2.6).
// Input: byte 0 = options (bit 0: toggle check off; bits 1-7: a small cap), byte 1 = block size for
// the round trip; the rest is notifications by the length-prefix scheme.

@_cdecl("LLVMFuzzerTestOneInput")
public func d600ConfigAnswerFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let input = fuzzInput(data, size)
  guard input.count >= 2 else { return 0 }
  let notifications = fuzzNotifications(input.dropFirst(2))
  let checksToggle = input[0] & 1 == 0
  for cap in [D600ConfigAnswerAssembler.maxAnswerLength, Int(input[0] >> 1)] {
    var assembler = D600ConfigAnswerAssembler(maxAnswerLength: cap, checksToggle: checksToggle)
    for notification in notifications {
      do {
        if let answer = try assembler.feed(notification) {
          require(answer.data.count <= cap, "answer past the cap")
        }
      } catch .tooLong(let partial) {
        require(partial.data.count == cap, "too long keeps exactly the cap")
      } catch .interrupted(let partial, let restart) {
        require(partial.data.count <= cap && (restart?.data.count ?? 0) <= cap, "interrupted past the cap")
      } catch .empty {
        require(notification.isEmpty, "empty")
      } catch {
        require(!assembler.isCollecting, "an error leaves a partial answer")
      }
    }
    // Whatever came before, a complete first block is an answer again.
    do {
      let answer = try assembler.feed([0x01, 0x5A])
      require(answer == D600ConfigAnswer(status: 0x5A, data: []), "probe answer")
    } catch .interrupted(_, let restart) {
      require(restart == D600ConfigAnswer(status: 0x5A, data: []), "probe restart")
    } catch {
      require(false, "probe failed: \(error)")
    }
  }
  // Round trip: blocks built by the encoder are read back by the answer assembler (same framing).
  let command = input[0]
  let payload = Array(input.dropFirst(2).prefix(D600ConfigAnswerAssembler.maxAnswerLength))
  let blocks = D600ConfigBlocks.encode(command: command, payload: payload, blockSize: Int(input[1]))
  let blockSize = min(max(Int(input[1]), 2), 32)
  var reader = D600ConfigAnswerAssembler()
  var answer: D600ConfigAnswer?
  for (index, block) in blocks.enumerated() {
    require(block.count <= blockSize, "block too big")
    require(Int(block[0] & 0x1F) == block.count - 1, "length bits")
    require((block[0] & 0x20 != 0) == (index < blocks.count - 1), "more-follows bit")
    do {
      answer = try reader.feed(block)
    } catch {
      require(false, "round trip failed: \(error)")
    }
  }
  require(answer == D600ConfigAnswer(status: command, data: payload), "round trip")
  return 0
}
