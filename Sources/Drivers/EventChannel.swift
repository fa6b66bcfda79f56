import CaptureCore
import Synchronization

/// A device's event stream and its presence bookkeeping, shared by the stream drivers (serial,
/// Bluetooth Classic, keyboard wedge): the stream opens with an arrival, every link loss owes exactly one
/// removal, a return announces a new arrival, and the stream finishes once (Device protocol).
///
/// The events wait in a bounded `EventQueue`: a reader calls `waitForRoom` before each read of its
/// descriptor, so a consumer that falls behind stops the reading, not the memory, from growing.
final class EventChannel: Sendable {
  let queue: EventQueue
  var events: AsyncStream<Event> { queue.stream }
  private let device: DeviceInfo
  private let state = Mutex(State())

  struct State {
    /// The last presence event sent was an arrival: a removal is owed.
    var isAnnounced = true
    var isFinished = false
  }

  init(device: DeviceInfo, limit: Int = EventQueue.defaultLimit) {
    self.device = device
    queue = EventQueue(limit: limit)
    queue.push(Event(time: .now(), device: device, payload: .deviceArrival))
  }

  func emit(_ payload: Event.Payload) {
    queue.push(Event(time: .now(), device: device, payload: payload))
  }

  /// True when the reader may read more now. When false it should call `waitForRoom` and look again:
  /// the bytes it has not read stay in the kernel (and the sender's flow control) meanwhile.
  var hasRoom: Bool { queue.hasRoom }

  /// Blocks the reader thread until the consumer has drained half the backlog, at most
  /// `timeoutMilliseconds` (the reader's poll interval, so close() is still seen in time).
  func waitForRoom(timeoutMilliseconds: Int32) {
    queue.waitForRoom(timeoutMilliseconds: Int(timeoutMilliseconds))
  }

  /// The device is back (reconnected, node reappeared).
  func announceArrival() {
    state.withLock { $0.isAnnounced = true }
    emit(.deviceArrival)
  }

  /// Sends the removal owed by an arrival, once.
  func announceRemoval() {
    let owed = state.withLock { state in
      defer { state.isAnnounced = false }
      return state.isAnnounced && !state.isFinished
    }
    if owed { emit(.deviceRemoval) }
  }

  /// The removal if one is owed, then the end of the stream; later calls do nothing.
  func finish() {
    announceRemoval()
    let first = state.withLock { state in
      defer { state.isFinished = true }
      return !state.isFinished
    }
    if first { queue.finish() }
  }
}

extension EventChannel {
  /// SPP parser output as events (serial ttys and RFCOMM carry the same frames): a code becomes
  /// decodedData; bytes that were not a barcode become undecodedData, all of them, in pieces of at most
  /// `UndecodedData.maximumBytes` (the parser already reports a run of garbage 4 KiB at a time). Line
  /// noise is not a failure of the device or of the listen, so it is not an error event.
  func emit(_ parsed: [SPPEvent], from origin: String) {
    for event in parsed {
      switch event {
      case .code(let text, _, let source):
        emit(.decodedData(DecodedData(dataSource: DataSource(source ?? 0), bytes: text, origin: origin)))
      case .malformed(let raw):
        for piece in UndecodedData.chunks(raw, origin: origin) { emit(.undecodedData(piece)) }
      }
    }
  }
}

extension CaptureError {
  /// An SPP scanner (tty or RFCOMM) cannot be triggered: host→scanner commands in SPP mode are not
  /// public (docs/device-protocols.md §5.3).
  static func sppTriggerNotPublic(_ name: String, _ action: Trigger) -> CaptureError {
    .notSupported(
      "\(name) cannot \(action.cliName): scanner commands in SPP mode are not public (docs/device-protocols.md §5.3)"
    )
  }
}
