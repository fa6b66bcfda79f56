import CaptureCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Runs `body` on a new detached pthread of its own, at once: for a test's helper that blocks (a
/// FIFO's open, a write into a full pipe) and must neither wait for nor hold a thread of the
/// cooperative pool, which other suites in the same process may keep busy for seconds.
func startThread(_ body: @escaping @Sendable () -> Void) {
  final class Box: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
  }
  let raw = Unmanaged.passRetained(Box(body)).toOpaque()
  var thread = pthread_t()
  let rc = pthread_create(
    &thread, nil,
    { raw in
      Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
      return nil
    }, raw)
  precondition(rc == 0, "pthread_create: \(rc)")
  pthread_detach(thread)
}
