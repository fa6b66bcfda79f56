import CaptureContract
import CaptureCore

/// The one conversion between a property on the wire (`{"id","type","value"}`, docs/capturejs.md §3)
/// and the typed `PropertyValue` that `get` and `set` use: a web app and the command line read and
/// write the same values.
public enum PropertyWire {
  /// A property as a request carries it: the id (signed 32-bit), the type the client wrote, the JSON
  /// value (absent for None).
  public struct Request: Sendable, Equatable {
    public var id: PropertyID
    public var type: PropertyType
    public var value: JSON?
  }

  /// Reads `{"id","type","value"}`. The id is a signed 32-bit number (Capture-level ids are negative,
  /// docs/capturejs.md §3); an unsigned spelling of the same bits is taken too.
  public static func request(_ json: JSON?) throws(CaptureError) -> Request {
    guard case .object(let members)? = json else {
      throw .invalidParameter("params.property must be an object {id, type, value}")
    }
    guard let raw = members["id"]?.integer else {
      throw .invalidParameter("params.property.id must be an integer")
    }
    let id: PropertyID
    if let signed = Int32(exactly: raw) {
      id = PropertyID(signed)
    } else if let unsigned = UInt32(exactly: raw) {
      id = PropertyID(Int32(bitPattern: unsigned))
    } else {
      throw .invalidParameter("params.property.id \(raw) is not a 32-bit property id")
    }
    // A get without a type is a get of type None (clients send 0 with {} for most gets).
    var type = PropertyType.none
    if let typeJSON = members["type"], !typeJSON.isNull {
      guard let t = typeJSON.integer, let known = UInt8(exactly: t).flatMap(PropertyType.init(rawValue:))
      else {
        throw .invalidParameter("params.property.type must be a property type 0-9")
      }
      type = known
    }
    // DataSource values arrive under `value` from CaptureJS and Flutter, under `dataSource` from
    // Socket Mobile's iOS bridge (docs/capturejs.md §3): either is read.
    var value = members["value"]
    if value == nil || value == .null, type == .dataSource { value = members["dataSource"] }
    return Request(id: id, type: type, value: value)
  }

  /// The typed value of `json` read as `type`. Numbers must be integers in the type's range; an
  /// Array's bytes may be written signed (-128…-1), as a C `char` prints them (docs/capturejs.md §3).
  public static func decode(_ type: PropertyType, _ json: JSON?) throws(CaptureError) -> PropertyValue {
    func integer(_ json: JSON?, _ range: ClosedRange<Int64>, _ what: String) throws(CaptureError) -> Int64 {
      guard let n = json?.integer, range.contains(n) else {
        throw .invalidParameter("a \(what) value must be an integer \(range.lowerBound)-\(range.upperBound)")
      }
      return n
    }
    switch type {
    case .none, .notApplicable:
      return .none
    case .byte:
      return .byte(UInt8(truncatingIfNeeded: try integer(json, -128...255, "Byte")))
    case .ulong:
      // An SKT code or a packed value may come signed; the 32 bits are what counts.
      return .ulong(
        UInt32(truncatingIfNeeded: try integer(json, Int64(Int32.min)...Int64(UInt32.max), "Ulong")))
    case .array:
      guard case .array(let items)? = json else {
        throw .invalidParameter("an Array value must be a list of bytes")
      }
      var bytes: [UInt8] = []
      bytes.reserveCapacity(items.count)
      for item in items {
        guard let n = item.integer, (-128...255).contains(n) else {
          throw .invalidParameter("an Array value holds bytes 0-255")
        }
        bytes.append(UInt8(truncatingIfNeeded: n))
      }
      return .array(bytes)
    case .string:
      guard let text = json?.string else { throw .invalidParameter("a String value must be a string") }
      return .string(text)
    case .version:
      guard case .object? = json else { throw .invalidParameter("a Version value must be an object") }
      func field(_ name: String, _ alternative: String? = nil) throws(CaptureError) -> Int {
        let v = json?[name] ?? alternative.flatMap { json?[$0] }
        guard let v else { return 0 }
        return Int(try integer(v, 0...Int64(Int32.max), "Version \(name)"))
      }
      return .version(
        VersionValue(
          major: try field("major"), middle: try field("middle"), minor: try field("minor"),
          build: try field("build"), year: try field("year"), month: try field("month"),
          day: try field("day"),
          hour: try field("hour"), minute: try field("minute", "minutes")))
    case .dataSource:
      guard case .object? = json else { throw .invalidParameter("a DataSource value must be an object") }
      let id = try integer(json?["id"], Int64(Int32.min)...Int64(Int32.max), "DataSource id")
      var status = DataSourceStatus.defaultStatus
      if let s = json?["status"] {
        let raw = try integer(s, -1...2, "DataSource status")
        status = DataSourceStatus(rawValue: Int8(raw)) ?? .defaultStatus
      }
      var flags = DataSourceFlags.status
      if let f = json?["flags"] {
        flags = DataSourceFlags(rawValue: UInt8(try integer(f, 0...255, "DataSource flags")))
      }
      return .dataSource(DataSourceValue(id: DataSource(Int32(id)), status: status, flags: flags))
    case .enumeration, .object, .lastType:
      throw .notSupported("property values of type \(type.name) are not supported")
    }
  }

  /// The JSON of a typed value; nil for None (the reply then has no `value`, docs/capturejs.md §3).
  public static func encode(_ value: PropertyValue) -> JSON? {
    switch value {
    case .none: return nil
    case .byte(let v): return .int(v)
    case .ulong(let v): return .int(v)
    case .array(let bytes): return .array(bytes.map { .int($0) })
    case .string(let s): return .string(s)
    case .version(let v):
      // Both spellings of the minute: CaptureJS's typing says `minutes`, its bridges and Flutter
      // `minute` (docs/capturejs.md §3).
      return .object([
        "major": .int(v.major), "middle": .int(v.middle), "minor": .int(v.minor), "build": .int(v.build),
        "year": .int(v.year), "month": .int(v.month), "day": .int(v.day), "hour": .int(v.hour),
        "minute": .int(v.minute), "minutes": .int(v.minute),
      ])
    case .dataSource(let d):
      return .object([
        "id": .int(d.id.rawValue), "name": .string(d.id.name), "status": .int(d.status.rawValue),
        "flags": .int(d.flags.rawValue),
      ])
    }
  }

  /// `{"id","type"[,"value"]}`: the type is the value's own (a BatteryLevelDevice reply is Ulong 3).
  public static func property(_ id: PropertyID, _ value: PropertyValue) -> JSON {
    var members: [String: JSON] = ["id": .int(id.rawValue), "type": .int(value.type.rawValue)]
    if let json = encode(value) { members["value"] = json }
    return .object(members)
  }
}

/// The event messages a client's WebSocket carries (docs/capturejs.md §4): JSON-RPC results without
/// an id, `{"jsonrpc":"2.0","result":{"handle":h,"event":{"id","type","value"[,"result"]}}}`. Event
/// type ids are the event data types (docs/capture-sdk.md §4.2), not the property types.
public enum EventWire {
  public static func message(handle: UInt32, id: EventID, value: JSON?, result: ResultCode? = nil) -> JSON {
    var event: [String: JSON] = ["id": .int(id.rawValue), "type": .int(id.wireType.rawValue)]
    if let value { event["value"] = value }
    if let result { event["result"] = .int(result.rawValue) }
    return .object([
      "jsonrpc": .string("2.0"), "result": .object(["handle": .int(handle), "event": .object(event)]),
    ])
  }

  /// DeviceInfo `{"guid","name","type"}` (docs/capturejs.md §4).
  public static func deviceInfo(guid: String, _ info: DeviceInfo) -> JSON {
    .object(["guid": .string(guid), "name": .string(info.name), "type": .int(info.type.rawValue)])
  }

  /// DecodedData `{"id","name","data"[,"tagId"]}`: `name` and `data` always (CaptureJS reads their
  /// lengths), the bytes as numbers 0-255, the NFC tag id as upper-case hex (docs/capturejs.md §4).
  public static func decodedData(_ data: DecodedData) -> JSON {
    var members: [String: JSON] = [
      "id": .int(data.dataSource.rawValue), "name": .string(data.dataSource.name),
      "data": .array(data.bytes.map { .int($0) }),
    ]
    if let tag = data.tagID, !tag.isEmpty { members["tagId"] = .string(hexUpper(tag)) }
    return .object(members)
  }

  /// A device event's message, or nil for what the protocol has no event for (bytes that were not a
  /// barcode: the SDK cannot hand such bytes over). Arrivals and removals are built by the caller,
  /// which knows the GUID.
  public static func deviceEvent(handle: UInt32, _ payload: Event.Payload) -> JSON? {
    switch payload {
    case .decodedData(let data): return message(handle: handle, id: .decodedData, value: decodedData(data))
    case .power(let state): return message(handle: handle, id: .power, value: .int(state.rawValue))
    case .buttons(let state): return message(handle: handle, id: .buttons, value: .int(state.rawValue))
    case .batteryLevel(let level):
      return message(handle: handle, id: .batteryLevel, value: .int(level.packed))
    // The code in `value`: CaptureJS forces `result` to 0 for a numeric value (docs/capturejs.md §4).
    case .error(let error): return message(handle: handle, id: .error, value: .int(error.code.rawValue))
    case .deviceArrival, .deviceRemoval, .undecodedData: return nil
    }
  }

  /// The tag id's (and a GUID's) hex: the contract's, so the CaptureJS wire and `--json` agree.
  static func hexUpper(_ bytes: [UInt8]) -> String { Render.hex(bytes) }
}

extension EventID {
  /// The event data type on the wire (docs/capture-sdk.md §4.2). DeviceDiscovered travels as an
  /// Object, as CaptureJS 2.0 builds it (docs/capturejs.md §4); the others as their declared type.
  var wireType: EventDataType {
    self == .deviceDiscovered ? .object : dataType
  }
}
