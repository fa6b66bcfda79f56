import CaptureCore
import Synchronization
import Testing

@Suite("the helpers several layers share")
struct FoldedHelpersTests {
  @Test("trimmingSpaces takes spaces and tabs by default, or the set a caller names, from both ends only")
  func trimming() {
    #expect(" \t a b \t".trimmingSpaces() == "a b")
    #expect("\r id \r".trimmingSpaces([" ", "\t", "\r"]) == "id")
    #expect("\tSocket S700 ".trimmingSpaces([" "]) == "\tSocket S700")
    #expect("   ".trimmingSpaces().isEmpty)
  }

  @Test("a pause armed as moot ends at once; a pause whose task is cancelled ends then, long before its time")
  func interruptiblePause() async {
    let clock = ContinuousClock()
    let start = clock.now
    await InterruptiblePause.sleep(.seconds(600)) { _ in true }
    let armed = Mutex<Task<Void, Never>?>(nil)
    async let paused: Void = InterruptiblePause.sleep(.seconds(600)) { sleeper in
      armed.withLock { $0 = sleeper }
      return false
    }
    while armed.withLock({ $0 }) == nil { await Task.yield() }
    armed.withLock { $0 }?.cancel()
    await paused
    #expect(clock.now - start < .seconds(300))
  }
}
