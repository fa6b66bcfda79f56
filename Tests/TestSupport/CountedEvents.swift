import CaptureCore
import Synchronization

/// A device's events as its consumer takes them, counted (one consumer at a time): a test sees that
/// the consumer has moved on to an event, and so is past the one before, without waiting for a time.
public final class CountedEvents: @unchecked Sendable {
  private var source: AsyncStream<Event>.Iterator
  private let count = Mutex(0)

  public init(_ source: AsyncStream<Event>) { self.source = source.makeAsyncIterator() }

  /// Events the consumer has taken so far.
  public var taken: Int { count.withLock { $0 } }

  /// The stream to hand to the consumer.
  public var stream: AsyncStream<Event> {
    AsyncStream(unfolding: { [self] in
      let event = await source.next()
      if event != nil { count.withLock { $0 += 1 } }
      return event
    })
  }
}
