import CaptureCore
import Dispatch
import Synchronization
import Testing

@testable import Drivers

#if canImport(Glibc)
  import Glibc
#endif

/// Back-pressure (docs/architecture.md §2): a consumer that falls behind stops the reader, not the memory.
/// The pty's master is a scanner sending a burst far larger than the kernel's tty buffers; while nobody takes
/// the events the driver's backlog stays at its bound and the writer blocks (the kernel holds the rest), and
/// once the consumer reads, every code arrives exactly once, in order.
@Suite(.serialized) struct SerialBackPressureTests {
  @Test func aConsumerThatFallsBehindStopsTheReaderAndEveryCodeStillArrivesOnce() async throws {
    let pty = try PseudoTerminal()
    let scanner = try openScanner(pty.slavePath, ["framing": "line"])
    let limit = scanner.backlog.limit
    let codes = (0..<40_000).map { "C\($0)" }
    let feed = Array(codes.map { $0 + "\n" }.joined().utf8)  // about 270 KB
    // One read of the tty is at most 4096 bytes, so it adds at most 2048 events (a 1-byte code and
    // its LF) to a backlog at the limit.
    let bound = limit + 2048
    let writer = WriterProgress()
    // The master blocks in write(2) once the tty's buffers are full, so the feed is written on a
    // thread of the blocking executor: on Linux, Dispatch's global queues are the cooperative pool.
    Task {
      await BlockingExecutor.shared.run { _ in
        var offset = 0
        while offset < feed.count {
          let end = min(offset + 1024, feed.count)
          try? pty.write(Array(feed[offset..<end]))
          offset = end
          writer.written.store(offset, ordering: .releasing)
        }
        writer.done.store(true, ordering: .releasing)
      }
    }

    // Nobody consumes: the reader fills its queue to the limit, then leaves the bytes in the kernel.
    let filled = await eventually { scanner.backlog.count >= limit }
    #expect(filled, "the reader's queue never reached its limit")
    // The writer stalls: the master takes no more (the kernel's buffers are full), so its write blocks.
    let full = await eventually { !pty.acceptsMore }
    #expect(full, "the pty's master kept taking bytes")
    let finishedEarly = writer.done.load(ordering: .acquiring)
    #expect(!finishedEarly, "the whole burst fit somewhere: nothing held it back")
    let writtenWhilePaused = writer.written.load(ordering: .acquiring)
    #expect(writtenWhilePaused < feed.count)
    let paused = scanner.backlog.count
    #expect(paused >= limit && paused <= bound, "backlog \(paused)")

    // The consumer catches up: every code once, in order, and the backlog never passed its bound.
    var seen: [String] = []
    seen.reserveCapacity(codes.count)
    for await event in scanner.events {
      if case .decodedData(let data) = event.payload { seen.append(data.text) }
      if seen.count == codes.count { break }
      // A slow consumer: a pause every 1000 events lets the reader refill and stop again.
      if seen.count % 1000 == 0 { try await Task.sleep(for: .milliseconds(2)) }
    }
    #expect(seen.count == codes.count)
    #expect(seen == codes)
    // The writer's last write returned (its thread may note it a moment after the last code arrives).
    let finished = await eventually { writer.done.load(ordering: .acquiring) }
    #expect(finished, "the writer's last write never returned")
    #expect(scanner.backlog.highWater <= bound, "high water \(scanner.backlog.highWater)")
    await scanner.close()
  }

  /// close() is not held up by a reader paused on a full queue.
  @Test func closeEndsAReaderPausedByBackPressure() async throws {
    let pty = try PseudoTerminal()
    let scanner = try openScanner(pty.slavePath, ["framing": "line"])
    // More than the queue holds, little enough that the kernel takes the rest and the write ends.
    let feed = Array((0..<3000).map { "P\($0)\n" }.joined().utf8)
    Task { await BlockingExecutor.shared.run { _ in try? pty.write(feed) } }
    let filled = await eventually { scanner.backlog.count >= scanner.backlog.limit }
    #expect(filled, "the reader's queue never reached its limit")
    await scanner.close()
    // What was read is still delivered, then the removal, then the end.
    var kinds: [EventKind] = []
    for await event in scanner.events { kinds.append(event.kind) }
    #expect(kinds.first == .deviceArrival)
    #expect(kinds.last == .deviceRemoval)
    #expect(kinds.filter { $0 == .deviceRemoval }.count == 1)
    #expect(kinds.count - 2 >= scanner.backlog.limit)
    pty.close()
  }
}

/// How far the simulated scanner got (shared with its writer thread).
final class WriterProgress: Sendable {
  let written = Atomic<Int>(0)
  let done = Atomic<Bool>(false)
}
