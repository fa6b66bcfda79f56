import CaptureCore
import Synchronization

/// A device's event stream and its presence bookkeeping, shared by the stream drivers (serial,
/// Bluetooth Classic, keyboard wedge): the stream opens with an arrival, every link loss owes exactly one
/// removal, a return announces a new arrival, and the stream finishes once (Device protocol).
final class EventChannel: Sendable {
  let events: AsyncStream<Event>
  private let continuation: AsyncStream<Event>.Continuation
  private let device: DeviceInfo
  private let state = Mutex(State())

  struct State {
    /// The last presence event sent was an arrival: a removal is owed.
    var isAnnounced = true
    var isFinished = false
  }

  init(device: DeviceInfo) {
    self.device = device
    (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
    continuation.yield(Event(time: .now(), device: device, payload: .deviceArrival))
  }

  func emit(_ payload: Event.Payload) {
    continuation.yield(Event(time: .now(), device: device, payload: payload))
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
    if first { continuation.finish() }
  }
}

extension EventChannel {
  /// SPP parser output as events (serial ttys and RFCOMM carry the same frames): a code becomes
  /// decodedData; malformed bytes become an INVALIDFORMAT error event. The SDK error event carries a
  /// code and a message only, so the bytes travel in the message, all of them (the parser caps one
  /// malformed run at 4 KiB): nothing the device sent is lost.
  func emit(_ parsed: [SPPEvent], from origin: String) {
    for event in parsed {
      switch event {
      case .code(let text, _, let source):
        emit(.decodedData(DecodedData(dataSource: DataSource(source ?? 0), bytes: text, origin: origin)))
      case .malformed(let raw):
        let hex = raw.map { b in (b < 0x10 ? "0" : "") + String(b, radix: 16, uppercase: true) }
          .joined(separator: " ")
        emit(
          .error(
            CaptureError(.invalidFormat, "\(raw.count) byte(s) from \(origin) were not a barcode: \(hex)")))
      }
    }
  }
}
