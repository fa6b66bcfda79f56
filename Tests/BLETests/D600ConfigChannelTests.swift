import CaptureCore
import Synchronization
import Testing

@testable import Drivers

/// A fake config characteristic: records every block written and answers through `onWrite`, which may
/// deliver notifications to the channel before the write call returns (as bluetoothd can: a
/// notification and the WriteValue reply race on the bus).
private final class FakeConfigCharacteristic: Sendable {
  let writes = Mutex<[[UInt8]]>([])
  let channel = Mutex<D600ConfigChannel?>(nil)
  let onWrite: @Sendable (_ block: [UInt8], _ count: Int, _ channel: D600ConfigChannel) async -> Void

  init(
    onWrite: @escaping @Sendable (_ block: [UInt8], _ count: Int, _ channel: D600ConfigChannel) async -> Void
  ) {
    self.onWrite = onWrite
  }

  func makeChannel() -> D600ConfigChannel {
    let channel = D600ConfigChannel { [self] block throws(CaptureError) in
      let count = writes.withLock { w -> Int in
        w.append(block)
        return w.count
      }
      guard let channel = self.channel.withLock({ $0 }) else { return }
      await onWrite(block, count, channel)
    }
    self.channel.withLock { $0 = channel }
    return channel
  }
}

/// Waits (polling, at most 20 s) until `fake` has received `count` writes.
private func waitForWrites(_ fake: FakeConfigCharacteristic, _ count: Int) async throws {
  for _ in 0..<2000 {
    if fake.writes.withLock({ $0.count }) >= count { return }
    try await Task.sleep(for: .milliseconds(10))
  }
  Issue.record("no write \(count) within 20 s")
}

@Suite("D600 config channel")
struct D600ConfigChannelTests {
  @Test("an answer that arrives before the write call returns is kept (the waiter is registered first)")
  func answerBeforeWriteReturns() async throws {
    let fake = FakeConfigCharacteristic { _, _, channel in
      // The answer (status 00, data AB) is delivered synchronously, inside the write.
      channel.receive([0x02, 0x00, 0xAB])
    }
    let channel = fake.makeChannel()
    let started = ContinuousClock.now
    let answer = try await channel.command(0x0E, [0x01], timeout: .seconds(30))
    #expect(answer == D600ConfigAnswer(status: 0x00, data: [0xAB]))
    // Far below the timeout: the answer was kept, not lost and waited out.
    #expect(ContinuousClock.now - started < .seconds(10))
    #expect(fake.writes.withLock { $0 } == [[0x02, 0x0E, 0x01]])
  }

  @Test("a command that times out fails alone: a concurrent command still gets its own answer")
  func timeoutFailsOnlyItsOwnCommand() async throws {
    // The device ignores command 0E 01 and answers command 0E 02 a little later.
    let fake = FakeConfigCharacteristic { block, _, channel in
      guard block == [0x02, 0x0E, 0x02] else { return }
      Task {
        try? await Task.sleep(for: .milliseconds(150))
        channel.receive([0x02, 0x00, 0x22])
      }
    }
    let channel = fake.makeChannel()
    async let first = channel.command(0x0E, [0x01], timeout: .milliseconds(300))
    // The second command is issued while the first waits for its answer.
    try await waitForWrites(fake, 1)
    async let second = channel.command(0x0E, [0x02], timeout: .seconds(30))
    let (a, b) = try await (first, second)
    #expect(a == nil)
    #expect(b == D600ConfigAnswer(status: 0x00, data: [0x22]))
    // One command on the wire at a time: the second was written after the first gave up.
    #expect(fake.writes.withLock { $0 } == [[0x02, 0x0E, 0x01], [0x02, 0x0E, 0x02]])
  }

  @Test("link loss fails the command on the wire at once, not after its timeout")
  func linkLossFailsCurrent() async throws {
    let fake = FakeConfigCharacteristic { _, _, _ in }
    let channel = fake.makeChannel()
    let started = ContinuousClock.now
    // A timeout no loaded machine reaches: ending well before it is ending by the link loss.
    async let answer = channel.command(0xAE, [0x07], timeout: .seconds(600))
    try await waitForWrites(fake, 1)
    channel.failCurrent()
    #expect(try await answer == nil)
    #expect(ContinuousClock.now - started < .seconds(300))
  }

  @Test("a write that fails throws and lets the next command go ahead")
  func writeFailure() async throws {
    let writes = Mutex(0)
    let box = Mutex<D600ConfigChannel?>(nil)
    let channel = D600ConfigChannel { _ throws(CaptureError) in
      let n = writes.withLock { w -> Int in
        w += 1
        return w
      }
      if n == 1 { throw CaptureError(.bleGatt, "GATT write: Not connected") }
      box.withLock { $0 }?.receive([0x01, 0x00])
    }
    box.withLock { $0 = channel }
    let error = await #expect(throws: CaptureError.self) { _ = try await channel.command(0x0E, [0x01]) }
    #expect(error?.code == .bleGatt)
    let answer = try await channel.command(0x0E, [0x02], timeout: .seconds(30))
    #expect(answer == D600ConfigAnswer(status: 0, data: []))
    #expect(writes.withLock { $0 } == 2)
  }
}
