/// The one reconnect policy: after a failed attempt wait `initial`, doubling after each further
/// failure up to `maximum` (0.25 s → 5 s). It is shared by every driver that reconnects by itself (BLE
/// after link loss or a bluetoothd restart, Bluetooth Classic RFCOMM) and by listen's supervisors and
/// favourite discovery, so a device away for an hour costs ~720 attempts whichever way it is reached,
/// and one that comes back is seen within `maximum`. (A serial device node is not retried but polled:
/// looking for a path costs one stat, so it is looked for every 0.25 s.)
public struct Backoff: Sendable, Equatable {
  public var initial: Duration
  public var maximum: Duration

  public init(initial: Duration = .milliseconds(250), maximum: Duration = .seconds(5)) {
    self.initial = initial
    self.maximum = maximum
  }

  /// The waits of one outage, in order.
  public struct Delays: Sendable {
    private let policy: Backoff
    private var upcoming: Duration

    init(_ policy: Backoff) {
      self.policy = policy
      upcoming = policy.initial
    }

    /// The wait before the next attempt; each call doubles the one after, up to the maximum.
    public mutating func next() -> Duration {
      defer { upcoming = min(upcoming * 2, policy.maximum) }
      return upcoming
    }

    /// The device was back: the next outage starts from the initial wait.
    public mutating func reset() { upcoming = policy.initial }
  }

  public func delays() -> Delays { Delays(self) }
}
