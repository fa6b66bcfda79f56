import Dispatch
import Synchronization

/// Where a stream driver's blocking reader runs (serial, Bluetooth Classic, keyboard wedge): one serial
/// Dispatch queue, because the loop blocks in poll(2) and must stay off the Swift concurrency pool, and
/// the stop flag it looks at between reads (every poll lasts at most the driver's poll interval).
/// The other half of the one policy for blocking work (see `BlockingExecutor`): a loop that lasts as
/// long as the device runs here; a blocking call that ends runs on the `BlockingExecutor`.
final class ReaderThread: Sendable {
  let queue: DispatchQueue
  private let stopRequested = Atomic<Bool>(false)

  init(label: String) { queue = DispatchQueue(label: label) }

  /// True once `stop()` was asked: the loop returns at its next look.
  var isStopping: Bool { stopRequested.load(ordering: .acquiring) }

  /// Runs `loop` on the queue.
  func start(_ loop: @escaping @Sendable () -> Void) { queue.async(execute: loop) }

  /// Asks the loop to stop and returns once it has: the queue is serial, so a block queued behind the
  /// loop runs only after the loop returned.
  func stop() async {
    stopRequested.store(true, ordering: .releasing)
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      queue.async { done.resume() }
    }
  }
}
