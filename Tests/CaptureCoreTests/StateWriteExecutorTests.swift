import Synchronization
import TestSupport
import Testing

@testable import CaptureCore

#if canImport(Glibc)
  import Glibc
#endif

/// How many processes wait for a flock on the file with this inode now (`->` lines of /proc/locks,
/// proc(5)); nil when /proc/locks cannot be read.
private func flockWaiters(inode: UInt64) -> Int? {
  guard let f = fopen("/proc/locks", "r") else { return nil }
  defer { fclose(f) }
  var count = 0
  var buffer = [CChar](repeating: 0, count: 512)
  while fgets(&buffer, Int32(buffer.count), f) != nil {
    let line = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    // "2: -> FLOCK  ADVISORY  WRITE 4711 00:2a:123456 0 EOF": the inode is the last field of MAJ:MIN:INODE.
    let fields = line.split(separator: " ")
    guard fields.count > 6, fields[1] == "->", fields[2] == "FLOCK" else { continue }
    if fields[6].split(separator: ":").last == Substring(String(inode)) { count += 1 }
  }
  return count
}

@Suite("State writes off the cooperative pool", .timeLimit(.minutes(10)))
struct StateWriteExecutorTests {
  @Test(
    "state writes waiting on a flock held elsewhere run on the blocking executor: more of them than the pool has threads, and other async work still completes; each lands once the lock is released"
  )
  func heldLockDoesNotStallThePool() async throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore("capture")
    try store.update { (_: inout StateFile) throws(CaptureError) in }
    // Another open file description holds the lock, as another capture process would (flock(2)).
    let holder = open(store.lockPath, O_RDWR)
    try #require(holder >= 0)
    try #require(flock(holder, LOCK_EX) == 0)
    var info = stat()
    try #require(fstat(holder, &info) == 0)
    // Released by the test below; the watchdog releases it only if the pool stalled (the test then
    // fails on `stalled` rather than hanging). Its deadline is no measure of speed: a pool that does
    // not stall lets the test release the lock as soon as the other work is done, however loaded the
    // machine (a fresh-root CI run beside a loaded suite took 59 s to get there; 20 s fired the
    // watchdog). Only a regression waits the full 5 minutes.
    let released = Flag()
    let stalled = Flag()
    startThread {
      let deadline = ContinuousClock.now + .seconds(300)
      while !released.value.load(ordering: .acquiring) && ContinuousClock.now < deadline { usleep(10_000) }
      if !released.value.exchange(true, ordering: .acquiringAndReleasing) {
        stalled.value.store(true, ordering: .releasing)
        close(holder)
      }
    }

    // More writers than the cooperative pool has threads (one per core).
    let writers = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))) + 2
    let writes = (0..<writers).map { _ in
      Task {
        try await store.asyncUpdate { (state: inout StateFile) throws(CaptureError) -> Bool in
          state.favorite += "x"
          return BlockingExecutor.isWorkerThread
        }
      }
    }
    // Every writer is blocked in flock(LOCK_EX) (proc(5): a waiter is a "->" line), with a deadline.
    let waitUntil = ContinuousClock.now + .seconds(300)
    while let waiting = flockWaiters(inode: UInt64(info.st_ino)), waiting < writers,
      ContinuousClock.now < waitUntil
    {
      try await Task.sleep(for: .milliseconds(10))
    }
    #expect(flockWaiters(inode: UInt64(info.st_ino)).map { $0 == writers } ?? true)

    // Other async work, twice as many tasks as the pool has threads, completes meanwhile.
    let done = await withTaskGroup(of: Int.self) { group in
      for i in 0..<(2 * writers) {
        group.addTask {
          await Task.yield(); return i
        }
      }
      return await group.reduce(0) { count, _ in count + 1 }
    }
    #expect(done == 2 * writers)
    let poolStalled = stalled.value.load(ordering: .acquiring)
    #expect(!poolStalled, "the pool stalled until the watchdog released the lock")
    #expect(try store.load().favorite == "", "no write landed while the lock was held")

    if !released.value.exchange(true, ordering: .acquiringAndReleasing) { close(holder) }
    for write in writes { #expect(try await write.value, "the write ran on a BlockingExecutor thread") }
    #expect(try store.load().favorite == String(repeating: "x", count: writers))
  }

  @Test("asyncRemember remembers as remember does, on the blocking executor")
  func asyncRemember() async throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore("capture")
    try await store.asyncRemember(
      RememberedDevice(
        id: "tcp://10.0.0.9:23", alias: "dock", name: "DataMan", type: 7, transport: "tcp", lastSeen: nil))
    try await store.asyncRemember(
      RememberedDevice(
        id: "tcp://10.0.0.9:23", alias: nil, name: "DataMan", type: 7, transport: "tcp", lastSeen: nil),
      keepingAlias: true)
    #expect(try store.load().devices.map(\.alias) == ["dock"])
  }
}
