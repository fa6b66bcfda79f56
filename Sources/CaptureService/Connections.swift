import CaptureCore

/// The GUIDs of device connections (docs/capturejs.md §4: "it changes on every connection of the
/// same scanner"). One connection is one arrival of a device; its GUID is a random UUID v4, written
/// upper-case in braces as CaptureJS's own samples show it (`{2EAAAA3F-B51E-4537-851C-31CA683C3BEF}`).
///
/// Every client sees the same events in the same order per device, each through its own engine
/// subscription, so a connection is named by what all of them see alike: the device's key and the
/// time of its arrival event. Whoever meets an arrival first makes its GUID; the others find it.
struct Connections {
  struct Connection: Sendable, Equatable {
    var key: String
    var guid: String
    var info: DeviceInfo
    var arrival: Timestamp
  }

  /// The connected devices by key, as the engine's arrivals and removals say (`observe`).
  private(set) var current: [String: Connection] = [:]
  /// The last few arrivals of each key and their GUIDs: a client behind the others still names an
  /// arrival it meets late with the GUID the others were told. Bounded per key.
  private var recent: [String: [(arrival: Timestamp, guid: String)]] = [:]
  static let recentPerKey = 8

  /// A device's key: its id and type (an S370 arrives twice under one address, its barcode half and
  /// its NFC half, docs/capture-sdk.md §5.2).
  static func key(_ info: DeviceInfo) -> String { "\(info.id)#\(info.type.rawValue)" }

  mutating func guid(key: String, arrival: Timestamp) -> String {
    if let found = recent[key]?.first(where: { $0.arrival == arrival }) { return found.guid }
    let guid = Self.newGUID()
    var list = recent[key] ?? []
    list.append((arrival, guid))
    if list.count > Self.recentPerKey { list.removeFirst(list.count - Self.recentPerKey) }
    recent[key] = list
    return guid
  }

  /// The engine's view, taken on the devices' own lanes: arrivals and removals keep `current`.
  mutating func observe(_ event: Event) {
    let key = Self.key(event.device)
    switch event.payload {
    case .deviceArrival:
      current[key] = Connection(
        key: key, guid: guid(key: key, arrival: event.time), info: event.device, arrival: event.time)
    case .deviceRemoval:
      current[key] = nil
    default:
      break
    }
  }

  func connection(guid: String) -> Connection? {
    let wanted = Self.normaliseGUID(guid)
    return current.values.first { $0.guid == wanted }
  }

  /// GUIDs compare without case and with or without braces (E1's samples write them bare, lower-case).
  static func normaliseGUID(_ text: String) -> String {
    var s = Substring(text.uppercased())
    if s.hasPrefix("{") { s = s.dropFirst() }
    if s.hasSuffix("}") { s = s.dropLast() }
    return "{\(s)}"
  }

  /// A random (version 4, variant 1) UUID, RFC 9562 §5.4.
  static func newGUID() -> String {
    var rng = SystemRandomNumberGenerator()
    var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
    bytes[6] = (bytes[6] & 0x0F) | 0x40
    bytes[8] = (bytes[8] & 0x3F) | 0x80
    let hex = EventWire.hexUpper(bytes)
    let u = Array(hex)
    func part(_ r: Range<Int>) -> String { String(u[r]) }
    return "{\(part(0..<8))-\(part(8..<12))-\(part(12..<16))-\(part(16..<20))-\(part(20..<32))}"
  }
}
