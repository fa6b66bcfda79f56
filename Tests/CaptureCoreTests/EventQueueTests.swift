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
    let waiting = Flag()
    let released = Flag()
    // The backlog the reader saw when its wait ended: the consumer's doing, not time's, proves it was
    // not let go early (a wait that ended while the queue was still full would see 3 or 4).
    let backlogAtRelease = Number(-1)
    // The producer waits on a thread of its own, as a reader thread does: never on the cooperative
    // pool (on Linux, Dispatch's global queues are that pool).
    startThread {
      waiting.value.store(true, ordering: .releasing)
      queue.waitForRoom(timeoutMilliseconds: 600_000)
      backlogAtRelease.value.store(queue.count, ordering: .releasing)
      released.value.store(true, ordering: .releasing)
    }
    // The safety net above is ten minutes here, past this deadline: a loaded run starved this task
    // for over 30 s once (2 hogs and 2 builds on 2 cores), and a 30 s net then let the reader go with
    // the queue still full (backlog 4), which is time's doing, not the consumer's.
    let deadline = ContinuousClock.now + .seconds(300)
    let started = await eventually(until: deadline) { waiting.value.load(ordering: .acquiring) }
    #expect(started, "the reader thread never started")
    var iterator = queue.stream.makeAsyncIterator()
    #expect(await iterator.next().map(number) == 0)
    #expect(await iterator.next().map(number) == 1)  // down to 2 = limit / 2: the reader may go on
    // Released by the consumer, long before the wait's ten-minute timeout (the safety net).
    let late = await eventually(until: deadline) { released.value.load(ordering: .acquiring) }
    #expect(late, "the reader waiting for room was never released")
    #expect(backlogAtRelease.value.load(ordering: .acquiring) == 2, "released before the consumer made room")
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
    let asking = Flag()
    let producer = Task {
      asking.value.store(true, ordering: .releasing)
      await queue.waitForRoom()
    }
    // The producer is on its way into the wait (nothing shows the wait itself; one that only arrives
    // after finish() returns at once too, so the outcome is the same either way).
    let started = await eventually(until: .now + .seconds(120)) { asking.value.load(ordering: .acquiring) }
    #expect(started, "the producer task never started")
    queue.finish()
    await producer.value
    #expect(queue.count == 2)
  }
}

final class Flag: Sendable {
  let value = Atomic<Bool>(false)
}

final class Number: Sendable {
  let value: Atomic<Int>
  init(_ initial: Int) { value = Atomic(initial) }
}
