#if canImport(Glibc)
  import Glibc
#endif

/// Kinds of event the command line streams; the raw values are the published `event` key values
/// (past-tense facts, camelCase, after the SDK's CaptureEventIds, docs/capture-sdk.md §4.1).
public enum EventKind: String, Sendable, CaseIterable, Hashable {
  case deviceArrival
  case deviceRemoval
  case decodedData
  /// Bytes a device sent that were not a barcode (line noise, a frame whose length lied). Not an SDK
  /// event: the SDK has no way to hand such bytes over.
  case undecodedData
  case batteryLevel
  case power
  case buttons
  case error
  case deviceDiscovered
  case discoveryEnd

  /// The SDK event id this kind corresponds to. undecodedData has none of its own; the nearest is the
  /// Error event (ESKT_INVALIDFORMAT), which is how such bytes were reported before they had a kind.
  public var sdkID: EventID {
    switch self {
    case .deviceArrival: .deviceArrival
    case .deviceRemoval: .deviceRemoval
    case .decodedData: .decodedData
    case .undecodedData: .error
    case .batteryLevel: .batteryLevel
    case .power: .power
    case .buttons: .buttons
    case .error: .error
    case .deviceDiscovered: .deviceDiscovered
    case .discoveryEnd: .discoveryEnd
    }
  }

  /// Parses a kind by its published name, case-insensitively (`decodedData`, `decoded-data`).
  public static func parse(_ text: String) -> EventKind? {
    let key = text.lowercased().filter { $0 != "-" && $0 != "_" }
    return allCases.first { $0.rawValue.lowercased() == key }
  }
}

/// A wall-clock instant with millisecond precision, printed as ISO 8601 UTC.
public struct Timestamp: Sendable, Hashable, Comparable {
  /// Milliseconds since 1970-01-01T00:00:00Z.
  public var milliseconds: Int64
  public init(milliseconds: Int64) { self.milliseconds = milliseconds }

  public static func < (a: Timestamp, b: Timestamp) -> Bool { a.milliseconds < b.milliseconds }

  /// The wall clock now (CLOCK_REALTIME).
  public static func now() -> Timestamp {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Timestamp(milliseconds: Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000)
  }

  /// `2026-11-30T13:50:34.123Z`. Civil-from-days arithmetic (proleptic Gregorian), so no calendar
  /// library or locale is involved.
  public var iso8601: String {
    let ms = milliseconds
    var days = ms >= 0 ? ms / 86_400_000 : (ms - 86_399_999) / 86_400_000
    let msOfDay = ms - days * 86_400_000
    days += 719_468
    let era = (days >= 0 ? days : days - 146_096) / 146_097
    let doe = days - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
    var year = yoe + era * 400
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let day = doy - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    if month <= 2 { year += 1 }
    let h = msOfDay / 3_600_000
    let m = (msOfDay / 60_000) % 60
    let s = (msOfDay / 1000) % 60
    let f = msOfDay % 1000
    guard (0...9999).contains(year) else {
      func pad(_ v: Int64, _ width: Int) -> String {
        let s = String(v)
        return String(repeating: "0", count: max(0, width - s.count)) + s
      }
      return
        "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(h, 2)):\(pad(m, 2)):\(pad(s, 2)).\(pad(f, 3))Z"
    }
    // Every event carries one: fixed-width digits into 24 bytes, one String at the end.
    return String(unsafeUninitializedCapacity: 24) { out in
      var at = 0
      func digits(_ v: Int64, _ width: Int, then separator: UInt8) {
        var v = v
        for k in stride(from: width - 1, through: 0, by: -1) {
          out[at + k] = UInt8(ascii: "0") + UInt8(v % 10)
          v /= 10
        }
        out[at + width] = separator
        at += width + 1
      }
      digits(year, 4, then: UInt8(ascii: "-"))
      digits(month, 2, then: UInt8(ascii: "-"))
      digits(day, 2, then: UInt8(ascii: "T"))
      digits(h, 2, then: UInt8(ascii: ":"))
      digits(m, 2, then: UInt8(ascii: ":"))
      digits(s, 2, then: UInt8(ascii: "."))
      digits(f, 3, then: UInt8(ascii: "Z"))
      return at
    }
  }
}

/// Something that happened on a device.
public struct Event: Sendable {
  public enum Payload: Sendable {
    case deviceArrival
    case deviceRemoval
    case decodedData(DecodedData)
    /// Bytes that were not a barcode; the stream goes on and nothing failed.
    case undecodedData(UndecodedData)
    case batteryLevel(BatteryLevel)
    case power(PowerState)
    case buttons(ButtonsState)
    /// An unsolicited error (the SDK's Error event); the stream goes on.
    case error(CaptureError)
  }

  public var time: Timestamp
  public var device: DeviceInfo
  public var payload: Payload

  public init(time: Timestamp, device: DeviceInfo, payload: Payload) {
    self.time = time
    self.device = device
    self.payload = payload
  }

  public var kind: EventKind {
    switch payload {
    case .deviceArrival: .deviceArrival
    case .deviceRemoval: .deviceRemoval
    case .decodedData: .decodedData
    case .undecodedData: .undecodedData
    case .batteryLevel: .batteryLevel
    case .power: .power
    case .buttons: .buttons
    case .error: .error
    }
  }
}

/// Bytes a device sent that were not a barcode: a stream scanner's line noise, garbage between
/// frames, a frame cut short by a removal. Kept, not dropped, so nothing a device sent disappears;
/// reported as data, not as a failure, because noise on a serial line is normal input.
public struct UndecodedData: Sendable, Hashable {
  /// At most this many bytes travel in one event (the SPP parser's longest record): a longer run of
  /// noise is several events, so neither a line of output nor the memory behind it grows with it.
  public static let maximumBytes = 4096

  public var bytes: [UInt8]
  /// Where the bytes came from (the tty or the RFCOMM peer), as DecodedData's `origin`.
  public var origin: String?

  /// `bytes` beyond `maximumBytes` are cut off; use `chunks` to keep them all.
  public init(bytes: [UInt8], origin: String?) {
    self.bytes = Array(bytes.prefix(Self.maximumBytes))
    self.origin = origin
  }

  /// `bytes` in pieces of at most `maximumBytes`, in order.
  public static func chunks(_ bytes: [UInt8], origin: String?) -> [UndecodedData] {
    stride(from: 0, to: bytes.count, by: maximumBytes).map { start in
      UndecodedData(bytes: Array(bytes[start..<min(start + maximumBytes, bytes.count)]), origin: origin)
    }
  }
}
