/// A pause another task can cut short: a reconnect loop's wait between attempts (DeviceSupervisor,
/// BLELink), ended early when the device is seen again or the loop is stopped.
public enum InterruptiblePause {
  /// Sleeps `duration` on a task of its own, so that only that sleeping task is ever cancelled to wake
  /// the caller, never a task that iterates a stream (cancelling one would end its iteration). `arm`
  /// gets the sleeping task first: under the caller's own lock it records the task where a waker
  /// finds it, or returns true when the pause is already moot (stopped, poked), and then it ends at
  /// once. Returns when the pause has ended either way.
  public static func sleep(_ duration: Duration, arm: (Task<Void, Never>) -> Bool) async {
    let sleeper = Task<Void, Never> { _ = try? await Task.sleep(for: duration) }
    if arm(sleeper) { sleeper.cancel() }
    await sleeper.value
  }
}
