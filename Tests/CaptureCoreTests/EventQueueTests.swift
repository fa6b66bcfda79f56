import Dispatch
import Synchronization
import Testing

@testable import CaptureCore

/// Events numbered for the queue tests: the number travels as the code's text.
private func event(_ number: Int) -> Event {
  Event(
    time: Timestamp(milliseconds: 0), device: DeviceInfo(id: "test", name: "Test", type: .none),
    payload: .decodedData(DecodedData(dataSource: .notSpecified, bytes: Array(String(number).utf8))))
}

private func number(_ event: Event) -> Int {
  guard case .decodedData(let data) = event.payload, let n = Int(data.text) else { return -1 }
  return n
}

/// The bounded queue between a device's reader and the consumer (back-pressure, docs/architecture.md §2): it
/// never drops, never duplicates, keeps order, and tells producers to wait while the consumer is behind.
@Suite struct EventQueueTests {
  @Test func pushNeverDropsEvenPastTheLimitAndTheStreamKeepsOrder() async {
    let queue = EventQueue(limit: 4)
    for i in 0..<10 { queue.push(event(i)) }
    #expect(queue.count == 10)
    #expect(queue.highWater == 10)
    #expect(!queue.hasRoom)
    queue.finish()
    var seen: [Int] = []
    for await e in queue.stream {
      seen.append(number(e))
    }
    #expect(seen == Array(0..<10))
    #expect(queue.count == 0)
  }

  @Test func pushAfterFinishIsIgnoredAsWithAsyncStream() async {
    let queue = EventQueue(limit: 4)
    queue.push(event(1))
    queue.finish()
    queue.push(event(2))
    var seen: [Int] = []
    for await e in queue.stream {
      seen.append(number(e))
    }
    #expect(seen == [1])
  }

  /// An async producer that waits for room before each push keeps the backlog at the limit however
  /// slow the consumer is, and everything arrives once, in order.
  @Test func aProducerThatWaitsForRoomKeepsTheBacklogBounded() async throws {
    let queue = EventQueue(limit: 8)
    let producer = Task {
      for i in 0..<500 {
        await queue.waitForRoom()
        queue.push(event(i))
      }
      queue.finish()
    }
    var seen: [Int] = []
    for await e in queue.stream {
      let i = number(e)
      seen.append(i)
      if i % 50 == 0 { try await Task.sleep(for: .milliseconds(5)) }
    }
    await producer.value
    #expect(seen == Array(0..<500))
    #expect(queue.highWater <= 8)
  }

  /// A reader thread waiting for room returns when the consumer has drained half the backlog, and at
  /// the latest after its timeout (so it can see its stop flag).
  @Test func aThreadWaitingForRoomIsReleasedByTheConsumerOrItsTimeout() async throws {
    let queue = EventQueue(limit: 4)
    for i in 0..<4 { queue.push(event(i)) }
    // Nobody consumes: the wait ends by its timeout with the queue still full.
    queue.waitForRoom(timeoutMilliseconds: 50)
    #expect(queue.count == 4)
    let released = Flag()
    // The producer waits on a thread of its own, as a reader thread does: never on the cooperative
    // pool (on Linux, Dispatch's global queues are that pool).
    startThread {
      queue.waitForRoom(timeoutMilliseconds: 30_000)
      released.value.store(true, ordering: .releasing)
    }
    try await Task.sleep(for: .milliseconds(100))
    let early = released.value.load(ordering: .acquiring)
    #expect(!early)
    var iterator = queue.stream.makeAsyncIterator()
    #expect(await iterator.next().map(number) == 0)
    #expect(await iterator.next().map(number) == 1)  // down to 2 = limit / 2: the reader may go on
    // Released by the consumer, long before the wait's 30 s timeout (the safety net).
    let deadline = ContinuousClock.now + .seconds(60)
    while !released.value.load(ordering: .acquiring) && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(10))
    }
    let late = released.value.load(ordering: .acquiring)
    #expect(late)
    #expect(queue.hasRoom)
  }

  /// As with AsyncStream, cancelling the consumer ends the stream: later pushes are ignored and a
  /// producer asking for room is not left waiting for a consumer that is gone.
  @Test func cancellingTheConsumerFinishesTheQueue() async {
    let queue = EventQueue(limit: 2)
    for i in 0..<3 { queue.push(event(i)) }
    let consumer = Task {
      var seen: [Int] = []
      for await e in queue.stream {
        let i = number(e)
        seen.append(i)
        if i == 2 { try? await Task.sleep(for: .seconds(30)) }
      }
      return seen
    }
    while queue.count > 0 { await Task.yield() }
    consumer.cancel()
    #expect(await consumer.value == [0, 1, 2])
    #expect(queue.isFinished)
    queue.push(event(3))
    #expect(queue.count == 0)
    await queue.waitForRoom()
  }

  @Test func finishReleasesAProducerWaitingForRoom() async throws {
    let queue = EventQueue(limit: 2)
    queue.push(event(0))
    queue.push(event(1))
    let producer = Task { await queue.waitForRoom() }
    try await Task.sleep(for: .milliseconds(50))
    queue.finish()
    await producer.value
    #expect(queue.count == 2)
  }
}

final class Flag: Sendable {
  let value = Atomic<Bool>(false)
}
