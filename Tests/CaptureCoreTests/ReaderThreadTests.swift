import CaptureCore
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite("ReaderThread")
struct ReaderThreadTests {
  /// The loop blocks its thread at a gate only a task on the cooperative pool opens: had it run on the
  /// pool, or on a thread that starts late, the gate would stay shut until the safety deadline.
  @Test("the loop runs on a named thread of its own at once, off the cooperative pool; stop joins it")
  func runsOnANamedThreadAndStopJoins() async throws {
    let gate = Gate()
    let seen = Mutex<(name: String, worker: Bool, stoppedSeen: Bool)?>(nil)
    let thread = ReaderThread(name: "test-reader")
    try thread.start {
      var comm = [CChar](repeating: 0, count: 16)
      let fd = open("/proc/thread-self/comm", O_RDONLY)
      if fd >= 0 {
        _ = comm.withUnsafeMutableBytes { read(fd, $0.baseAddress, 15) }
        close(fd)
      }
      // The comm file ends the name with a line break (proc(5)).
      let name = String(
        decoding: comm.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
      _ = gate.wait(until: .now + safetyDeadline)
      while !thread.isStopping { usleep(1000) }
      seen.withLock { $0 = (name, BlockingExecutor.isWorkerThread, true) }
    }
    let deadline = ContinuousClock.now + safetyDeadline
    #expect(await eventually(until: deadline) { gate.waiting == 1 })
    gate.open()
    await thread.stop()
    // stop returned only after the loop had returned: what it recorded last is there.
    let result = try #require(seen.withLock { $0 })
    #expect(result.name == "test-reader")
    #expect(result.worker == false)
    #expect(result.stoppedSeen)
  }

  @Test("requestStop runs the wake that cuts the loop's wait short; join waits for the loop's end")
  func requestStopWakes() async throws {
    var fds: [Int32] = [-1, -1]
    #expect(pipe(&fds) == 0)
    let (readEnd, writeEnd) = (fds[0], fds[1])
    defer {
      close(readEnd)
      close(writeEnd)
    }
    let thread = ReaderThread(name: "test-wake") {
      var byte: UInt8 = 1
      _ = write(writeEnd, &byte, 1)
    }
    let ended = Atomic<Bool>(false)
    try thread.start {
      // Blocks with no timeout: only the wake ends it.
      var descriptor = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
      while !thread.isStopping { _ = poll(&descriptor, 1, -1) }
      ended.store(true, ordering: .releasing)
    }
    thread.requestStop()
    await thread.join()
    let loopEnded = ended.load(ordering: .acquiring)
    #expect(loopEnded)
  }

  @Test("join and stop return at once for a thread never started; a second start does nothing")
  func neverStartedAndStartOnce() async throws {
    await ReaderThread(name: "idle").stop()
    let runs = Atomic<Int>(0)
    let thread = ReaderThread(name: "once")
    try thread.start { runs.add(1, ordering: .relaxed) }
    try thread.start { runs.add(1, ordering: .relaxed) }
    await thread.join()
    let ran = runs.load(ordering: .relaxed)
    #expect(ran == 1)
  }

  @Test("a name longer than the kernel's 15 bytes is cut on a character boundary")
  func namesAreCut() {
    #expect(ReaderThread(name: "capture.serial./dev/ttyUSB0").name == "capture.serial.")
    #expect(ReaderThread(name: "ééééééééé").name == "ééééééé")
    #expect(ReaderThread(name: "http-loop").name == "http-loop")
  }
}
