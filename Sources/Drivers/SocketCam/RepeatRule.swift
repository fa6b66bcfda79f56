import Decoders

/// When a camera reports a code it keeps seeing (docs/capture-sdk.md §6.5): once when it comes into
/// view, and again only after it has been out of sight — missing from at least `frames` decoded
/// frames in a row that span at least `time`. Counting frames, not only the time between decodes,
/// is what keeps a code held in view from repeating when decoding is slower than `time`: every
/// decoded frame that shows the code keeps it in view, however long the decode took. Counting time
/// as well keeps a fast camera (30 decoded frames a second) from repeating a code that one hand
/// movement hid for a tenth of a second.
struct RepeatRule<Key: Hashable> {
  let frames: Int
  let time: Duration

  /// The codes seen and not yet out of sight: when each was last seen, and in how many decoded
  /// frames since it has been missing. A code out of sight is dropped, so this holds at most the
  /// codes of the last second or so.
  private var tracked: [Key: Seen] = [:]

  /// A code in view: when it was last seen, in how many frames since it has been missing, and the
  /// search steps (BarcodeReader.videoStep) whose frames have shown it; only a frame of one of them
  /// that does not show it counts as missing it.
  private struct Seen {
    var lastSeen: ContinuousClock.Instant
    var missing = 0
    var steps: Set<BarcodeReader.VideoStep>
  }

  /// How many codes are remembered (for the bound above).
  var trackedCount: Int { tracked.count }

  init(frames: Int = 3, time: Duration = .seconds(1)) {
    self.frames = frames
    self.time = time
  }

  /// One decoded frame at `now` with the codes it showed (in decode order, repeats allowed): the
  /// ones to report, in that order, each once. `step` is the search step the frame was decoded with: a
  /// camera's frames take the steps in turn (BarcodeReader.videoStep), and a frame whose step never
  /// read a code is no evidence that the code left (a light-on-dark Code 128 is read only by ZBar's
  /// inverted scan, one frame in 16). So "3 frames" is 3 frames of a step that has read the code: as many
  /// chances to see it as before the steps, whatever its symbology. Frames of one step (the default)
  /// count every one.
  mutating func frame(
    _ keys: [Key], at now: ContinuousClock.Instant, step: BarcodeReader.VideoStep = .zxing
  ) -> [Key] {
    var shown = Set<Key>()
    var report: [Key] = []
    for key in keys where shown.insert(key).inserted {
      if let state = tracked[key], !outOfSight(state, at: now) {
        tracked[key] = Seen(lastSeen: now, steps: state.steps.union([step]))
        continue
      }
      tracked[key] = Seen(lastSeen: now, steps: [step])
      report.append(key)
    }
    for (key, state) in tracked where !shown.contains(key) && state.steps.contains(step) {
      var missing = state
      missing.missing += 1
      if outOfSight(missing, at: now) {
        tracked.removeValue(forKey: key)
      } else {
        tracked[key] = missing
      }
    }
    return report
  }

  private func outOfSight(_ state: Seen, at now: ContinuousClock.Instant) -> Bool {
    state.missing >= frames && now - state.lastSeen >= time
  }
}
