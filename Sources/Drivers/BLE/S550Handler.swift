import BlueZ
import CaptureCore
import Synchronization

/// The S550 "Smart Reader" over SpringCore Direct (docs/device-protocols.md §3.4): tag events notified
/// on the events characteristic of the open or the bound service.
final class S550Handler: BLEFamilyHandler {
  private let emitter: BLEEmitter
  private let direct = Mutex(DirectAssembler())

  init(emitter: BLEEmitter) {
    self.emitter = emitter
  }

  func dataRoutes(_ gatt: BLEGatt) throws(CaptureError) -> [String: NotifyRoute] {
    guard
      let events = gatt.characteristic(GattUUID.directEvents)
        ?? gatt.characteristic(GattUUID.directEventsBound)
    else { return [:] }
    return [events.path: .directEvents]
  }

  func broughtUp(_ gatt: BLEGatt) async throws(CaptureError) {}

  func receive(_ bytes: [UInt8], on route: NotifyRoute) {
    guard route == .directEvents else { return }
    let messages = direct.withLock { $0.feed(bytes) }
    for message in messages { emit(message) }
  }

  func linkDown() { direct.withLock { $0 = DirectAssembler() } }

  var readable: [PropertyID] { [] }
  var writable: [PropertyID] { [] }
  var triggers: Set<Trigger> { [] }
  var events: Set<EventKind> { [.decodedData] }

  /// B0 tag read / B1 inserted carry the tag; the data is the tag's data when it has some, else its
  /// UID (docs/device-protocols.md §3.4). A removal is not a read.
  private func emit(_ event: DirectEvent) {
    switch event {
    case .message(let message):
      guard let tag = SpringCoreTagEvent.decode(message), tag.kind != .removed else { return }
      let source =
        tag.info.flatMap { NFCProtocolMap.sdkTagTypeID(family: $0.protocol) }.map(DataSource.init)
        ?? .notSpecified
      emitter.emit(
        .decodedData(
          DecodedData(dataSource: source, bytes: tag.data.isEmpty ? tag.tagID : tag.data, tagID: tag.tagID)))
    case .malformed(let raw):
      emitter.emit(
        .error(CaptureError(.invalidFormat, "malformed SpringCore Direct message (\(raw.count) bytes)")))
    }
  }
}
