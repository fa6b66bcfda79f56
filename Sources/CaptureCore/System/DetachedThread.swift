#if canImport(Glibc)
  import Glibc
#endif

/// A detached pthread running `body`: the one place the project starts a thread, under the two types
/// every other layer uses (`ReaderThread` for a loop, `BlockingExecutor`'s workers for calls that
/// end). Not a thread of Swift's cooperative pool and not left to libdispatch, which on Linux may
/// defer starting a thread while the CPUs are busy (docs/swift-on-linux.md).
enum DetachedThread {
  /// Starts `body` on a new thread; `Errno` (EAGAIN: no thread to be had) when it could not start,
  /// and then `body` never runs.
  static func start(_ body: @escaping @Sendable () -> Void) throws(Errno) {
    let box = Unmanaged.passRetained(Body(body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(
      &thread, nil,
      { raw in
        Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue().run()
        return nil
      }, box)
    guard rc == 0 else {
      Unmanaged<Body>.fromOpaque(box).release()
      throw Errno(rc)
    }
    pthread_detach(thread)
  }

  private final class Body: Sendable {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
  }
}
