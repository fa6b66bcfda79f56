import Decoders
import Testing

@testable import Drivers

/// The camera's repeat rule (docs/capture-sdk.md §6.5): a code in view is reported once; again only
/// after 3 decoded frames in a row spanning 1 s went without it.
@Suite struct RepeatRuleTests {
  let start = ContinuousClock.now

  /// Runs frames `period` apart; each element the codes that frame showed. Returns what was reported.
  func run(_ frames: [[String]], period: Duration, rule: inout RepeatRule<String>) -> [[String]] {
    frames.enumerated().map { i, keys in rule.frame(keys, at: start.advanced(by: period * i)) }
  }

  @Test("a code held in view is reported once, even when each decode takes longer than a second")
  func heldInViewWithSlowDecoding() {
    var rule = RepeatRule<String>()
    let reported = run(Array(repeating: ["A"], count: 10), period: .milliseconds(1500), rule: &rule)
    #expect(reported == [["A"]] + Array(repeating: [], count: 9))
  }

  @Test("at 30 frames a second: hidden for half a second is not out of sight; for 1.1 s it is")
  func fastCameraNeedsASecond() {
    var rule = RepeatRule<String>()
    let half = [["A"]] + Array(repeating: [String](), count: 15) + [["A"]]
    #expect(run(half, period: .milliseconds(33), rule: &rule).flatMap { $0 } == ["A"])
    var again = RepeatRule<String>()
    let longer = [["A"]] + Array(repeating: [String](), count: 34) + [["A"]]
    #expect(run(longer, period: .milliseconds(33), rule: &again).flatMap { $0 } == ["A", "A"])
  }

  @Test("a camera's steps: only frames of a step that has read the code count as missing it")
  func framesOfOtherStepsDoNotCount() {
    // A light-on-dark code only ZBar's inverted scan reads: read on frame 15 of each cycle of 16,
    // decoded slowly (0.5 s a frame): the 15 frames between are other steps' and do not make it out of
    // sight.
    let start = self.start
    func cycle(_ rule: inout RepeatRule<String>, cycles: Int, showing: (Int) -> Bool) -> [String] {
      (0..<(BarcodeReader.videoCycle * cycles)).flatMap { n in
        let step = BarcodeReader.videoStep(n)
        return rule.frame(
          step == .zbarInverted && showing(n) ? ["A"] : [], at: start.advanced(by: .milliseconds(500) * n),
          step: step)
      }
    }
    var held = RepeatRule<String>()
    #expect(cycle(&held, cycles: 6) { _ in true } == ["A"])
    // Gone for 3 of its frames (cycles 1–3) and 24 s: out of sight, so reported again in cycle 4.
    var back = RepeatRule<String>()
    #expect(cycle(&back, cycles: 6) { n in !(16..<64).contains(n) } == ["A", "A"])
    // Gone for 2 of its frames only: still in view.
    var brief = RepeatRule<String>()
    #expect(cycle(&brief, cycles: 6) { n in !(16..<48).contains(n) } == ["A"])
  }

  @Test("with slow decoding: missing from 2 frames (3 s) is not out of sight; from 3 frames it is")
  func slowDecodingNeedsThreeFrames() {
    var rule = RepeatRule<String>()
    #expect(run([["A"], [], [], ["A"]], period: .milliseconds(1500), rule: &rule).flatMap { $0 } == ["A"])
    var again = RepeatRule<String>()
    #expect(
      run([["A"], [], [], [], ["A"]], period: .milliseconds(1500), rule: &again).flatMap { $0 } == ["A", "A"])
  }

  @Test(
    "a frame's codes are reported once each, in decode order; a new code beside a held one is reported at once"
  )
  func codesOfAFrame() {
    var rule = RepeatRule<String>()
    let reported = run(
      [["B", "A", "B"], ["A", "B"], ["A", "C", "B"]], period: .milliseconds(50), rule: &rule)
    #expect(reported == [["B", "A"], [], ["C"]])
  }

  @Test("a code out of sight is forgotten: what is remembered is bounded by the codes of the last second")
  func forgetsWhatIsOutOfSight() {
    var rule = RepeatRule<String>()
    let many = (0..<1000).map { ["code \($0)"] }
    _ = run(many, period: .milliseconds(100), rule: &rule)
    // 1 s at 10 frames a second: the codes of the last 11 frames at most.
    #expect(rule.trackedCount <= 11)
  }
}
