import CaptureContract

/// The topic layout of one host (docs/fleet.md §1). Never renamed once published: consumers subscribe
/// to these names.
public struct Topics: Sendable, Equatable {
  public let prefix: String
  public let host: String

  public init(prefix: String, host: String) {
    self.prefix = prefix
    self.host = host
  }

  /// `PREFIX/HOST`
  public var base: String { "\(prefix)/\(host)" }
  /// Retained: `{"state":"online",...}` while connected, `{"state":"offline"}` (the Will, a clean stop).
  public var status: String { "\(base)/status" }
  /// Retained: the devices open now, each the object `list --json` prints.
  public var devices: String { "\(base)/devices" }
  /// Requests (with --mqtt-commands).
  public var commands: String { "\(base)/commands" }
  /// Retained, written by `capture fleet apply`: the profile this host should have (docs/fleet.md §9.4).
  public var desired: String { "\(base)/desired" }
  /// Retained, written by the host: what became of the desired state it last applied.
  public var applied: String { "\(base)/applied" }
  /// `PREFIX/HOST/events/DEVICE/EVENT`, QoS 1.
  public func event(device: String, kind: String) -> String {
    "\(base)/events/\(Self.escape(device))/\(kind)"
  }
  /// `PREFIX/HOST/replies/ID`, the request id escaped as a device id is.
  public func reply(id: String) -> String { "\(base)/replies/\(Self.escape(id))" }

  /// A device id made one topic level: `%` → `%25`, `/` → `%2F`, `+` → `%2B`, `#` → `%23` (the
  /// level separator and the two wildcards, the MQTT 3.1.1 specification §4.7.1; `%` so the escape
  /// can be undone), and NUL → `%00` (forbidden in topics, the specification §4.7.3). Every other
  /// byte is kept: a Bluetooth address `00:11:22:33:44:55`, `socketcam` and `/dev/ttyACM0` →
  /// `%2Fdev%2FttyACM0` stay readable.
  public static func escape(_ text: String) -> String {
    var out: [UInt8] = []
    out.reserveCapacity(text.utf8.count)
    for byte in text.utf8 {
      switch byte {
      case UInt8(ascii: "%"): out += "%25".utf8
      case UInt8(ascii: "/"): out += "%2F".utf8
      case UInt8(ascii: "+"): out += "%2B".utf8
      case UInt8(ascii: "#"): out += "%23".utf8
      case 0: out += "%00".utf8
      default: out.append(byte)
      }
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// The inverse of `escape` (for consumers and tests), and the broker URL's user name decoding:
  /// every `%XX` decoded, anything else kept as written.
  public static func unescape(_ text: String) -> String { PercentEscape.unescape(text) }

  /// The longest topic prefix taken: room for HOST, the longest level after it and a device id, well
  /// inside the 65,535 bytes of an MQTT topic.
  public static let maximumPrefixLength = 1024

  /// Why `prefix` cannot start this host's topics, or nil: no wildcards (a topic name cannot hold
  /// them, the MQTT 3.1.1 specification §4.7.1), no empty level, no NUL, and not `$...` (reserved for
  /// the broker, the specification §4.7.2).
  public static func problem(inPrefix prefix: String) -> String? {
    if prefix.contains("+") || prefix.contains("#") { return "the topic prefix cannot hold '+' or '#'" }
    if prefix.hasPrefix("$") { return "a topic prefix starting with '$' is the broker's" }
    if prefix.utf8.contains(0) { return "the topic prefix cannot hold NUL" }
    if prefix.split(separator: "/", omittingEmptySubsequences: false).contains(where: \.isEmpty) {
      return "the topic prefix has an empty level ('//')"
    }
    // Every topic is PREFIX/HOST/... and an MQTT string is at most 65,535 bytes (OASIS MQTT
    // Version 3.1.1, section 1.5.3 "UTF-8 encoded strings"); a prefix far past any real one would fail only when the transport first uses it.
    if prefix.utf8.count > maximumPrefixLength {
      return "the topic prefix is longer than \(maximumPrefixLength) bytes"
    }
    // The specification §1.5.3: a topic SHOULD NOT hold control characters, and libmosquitto refuses
    // them (its UTF-8 check), so a prefix with one could never be published to.
    if prefix.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
      return "the topic prefix cannot hold control characters"
    }
    return nil
  }
}
