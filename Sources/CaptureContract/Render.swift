import CaptureCore

/// The published shapes (docs/architecture.md §1 "Output"): the JSON of an event, a device and an
/// error, as `--json` prints them, the MQTT front end publishes them (docs/fleet.md) and a remote
/// command's reply carries them. Keys are camelCase and never renamed. One place below the front ends,
/// so every front end renders the same bytes without borrowing another's code.
public enum Render {
  /// `model` only when the device reports one: optional keys are left out, never null (as `tagId`,
  /// `points`, `origin` and `valueName` are).
  public static func device(_ info: DeviceInfo) -> JSON {
    var members: [String: JSON] = [
      "id": .string(info.id), "name": .string(info.name), "type": .int(info.type.rawValue),
      "typeName": .string(info.type.typeName),
    ]
    if let model = info.model { members["model"] = .string(model) }
    return .object(members)
  }

  public static func dataSource(_ source: DataSource) -> JSON {
    .object(["id": .int(source.rawValue), "name": .string(source.name)])
  }

  public static func event(_ event: Event) -> JSON {
    var members: [String: JSON] = [
      "event": .string(event.kind.rawValue), "time": .string(event.time.iso8601),
      "device": device(event.device),
    ]
    switch event.payload {
    case .deviceArrival, .deviceRemoval: break
    case .decodedData(let data):
      members["dataSource"] = dataSource(data.dataSource)
      members["text"] = .string(data.text)
      members["bytes"] = .string(Base64.encode(data.bytes))
      if let tag = data.tagID { members["tagId"] = .string(hex(tag)) }
      if let points = data.points {
        members["points"] = .array(points.map { .object(["x": .int($0.x), "y": .int($0.y)]) })
      }
      if let origin = data.origin { members["origin"] = .string(origin) }
    case .undecodedData(let noise):
      // `bytes` as decodedData carries them; at most UndecodedData.maximumBytes per event.
      members["bytes"] = .string(Base64.encode(noise.bytes))
      if let origin = noise.origin { members["origin"] = .string(origin) }
    case .batteryLevel(let level):
      members["percent"] = .int(level.percent)
      members["current"] = .int(level.current)
      members["minimum"] = .int(level.minimum)
      members["maximum"] = .int(level.maximum)
      // The SDK's packed ulong (docs/capture-sdk.md §7.3), as power and buttons carry their raw value.
      members["value"] = .int(level.packed)
    case .power(let state):
      members["state"] = .string(state.cliName)
      members["value"] = .int(state.rawValue)
    case .buttons(let buttons):
      members["buttons"] = .array(buttons.names.map { .string($0) })
      members["value"] = .int(buttons.rawValue)
    case .error(let error):
      members["error"] = errorObject(error)
    }
    return .object(members)
  }

  /// `event(_:).serialized`, byte for byte, written straight into bytes for the events a listen stream
  /// carries by the million (decoded data, arrival, removal): no dictionaries to build, hash and sort
  /// per event. The keys below are in the code-point order `JSON.write` sorts them into; other events
  /// take the general path. OutputTests hold the two paths to the same bytes.
  public static func eventLine(_ event: Event) -> String {
    let data: DecodedData?
    switch event.payload {
    case .decodedData(let d): data = d
    case .deviceArrival, .deviceRemoval: data = nil
    default: return Render.event(event).serialized
    }
    var out: [UInt8] = []
    out.reserveCapacity(320)
    func key(_ name: StaticString) {
      out.append(UInt8(ascii: "\""))
      out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
      out += "\":".utf8
    }
    func string(_ text: String) { JSON.writeString(text, to: &out) }
    func number(_ value: some BinaryInteger) { out += String(Int64(value)).utf8 }
    let comma = UInt8(ascii: ",")
    out.append(UInt8(ascii: "{"))
    if let data {
      key("bytes")
      string(Base64.encode(data.bytes))
      out.append(comma)
      key("dataSource")
      out.append(UInt8(ascii: "{"))
      key("id")
      number(data.dataSource.rawValue)
      out.append(comma)
      key("name")
      string(data.dataSource.name)
      out.append(UInt8(ascii: "}"))
      out.append(comma)
    }
    key("device")
    out.append(UInt8(ascii: "{"))
    key("id")
    string(event.device.id)
    out.append(comma)
    if let model = event.device.model {
      key("model")
      string(model)
      out.append(comma)
    }
    key("name")
    string(event.device.name)
    out.append(comma)
    key("type")
    number(event.device.type.rawValue)
    out.append(comma)
    key("typeName")
    string(event.device.type.typeName)
    out.append(UInt8(ascii: "}"))
    out.append(comma)
    key("event")
    string(event.kind.rawValue)
    if let data {
      if let origin = data.origin {
        out.append(comma)
        key("origin")
        string(origin)
      }
      if let points = data.points {
        out.append(comma)
        key("points")
        out.append(UInt8(ascii: "["))
        for (i, point) in points.enumerated() {
          if i > 0 { out.append(comma) }
          out += "{\"x\":".utf8
          number(point.x)
          out += ",\"y\":".utf8
          number(point.y)
          out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
      }
      if let tag = data.tagID {
        out.append(comma)
        key("tagId")
        string(hex(tag))
      }
      out.append(comma)
      key("text")
      string(data.text)
    }
    out.append(comma)
    key("time")
    string(event.time.iso8601)
    out.append(UInt8(ascii: "}"))
    return String(decoding: out, as: UTF8.self)
  }

  /// The one JSON form of an error, `{"code":…,"name":…,"message":…}`: the value of the `error` key in
  /// the bare error document, an error event, get's partial document and a remote command's reply.
  public static func errorObject(_ error: CaptureError) -> JSON {
    .object([
      "code": .int(error.code.rawValue), "name": .string(error.code.name), "message": .string(error.message),
    ])
  }

  /// `{"error":{...}}`, the document a failed command writes with --json (and a failed remote command
  /// replies with).
  public static func errorDocument(_ error: CaptureError) -> JSON { .object(["error": errorObject(error)]) }

  /// One byte as two upper-case hex digits.
  public static func hexByte(_ b: UInt8) -> String {
    let digits = Array("0123456789ABCDEF")
    return String([digits[Int(b >> 4)], digits[Int(b & 15)]])
  }

  /// Bytes as upper-case hex, no separator: an NFC tag id (`tagId`, here and on the CaptureJS wire).
  public static func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789ABCDEF".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count * 2)
    for b in bytes {
      out.append(digits[Int(b >> 4)])
      out.append(digits[Int(b & 0xF)])
    }
    return String(decoding: out, as: UTF8.self)
  }
}
