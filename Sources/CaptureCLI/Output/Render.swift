import CaptureCore

/// The published shapes (ARCHITECTURE.md §1 "Output"). Keys are camelCase and never renamed.
enum Render {
  static func device(_ info: DeviceInfo) -> JSON {
    .object([
      "id": .string(info.id), "name": .string(info.name), "type": .int(info.type.rawValue),
      "typeName": .string(info.type.typeName),
    ])
  }

  static func error(_ error: CaptureError) -> JSON { Output.errorDocument(error) }

  static func dataSource(_ source: DataSource) -> JSON {
    .object(["id": .int(source.rawValue), "name": .string(source.name)])
  }

  static func event(_ event: Event) -> JSON {
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
      if let tag = data.tagID { members["tagId"] = .string(tag.map(hexByte).joined()) }
      if let points = data.points {
        members["points"] = .array(points.map { .object(["x": .int($0.x), "y": .int($0.y)]) })
      }
      if let origin = data.origin { members["origin"] = .string(origin) }
    case .batteryLevel(let level):
      members["percent"] = .int(level.percent)
      members["current"] = .int(level.current)
      members["minimum"] = .int(level.minimum)
      members["maximum"] = .int(level.maximum)
      // The SDK's packed ulong (capture-sdk.md §7.3), as power and buttons carry their raw value.
      members["value"] = .int(level.packed)
    case .power(let state):
      members["state"] = .string(state.cliName)
      members["value"] = .int(state.rawValue)
    case .buttons(let buttons):
      members["buttons"] = .array(buttons.names.map { .string($0) })
      members["value"] = .int(buttons.rawValue)
    case .error(let error):
      members["error"] = Output.errorObject(error)
    }
    return .object(members)
  }

  /// `event(_:).serialized`, byte for byte, written straight into bytes for the events a listen stream
  /// carries by the million (decoded data, arrival, removal): no dictionaries to build, hash and sort
  /// per event. The keys below are in the code-point order `JSON.write` sorts them into; other events
  /// take the general path. OutputTests hold the two paths to the same bytes.
  static func eventLine(_ event: Event) -> String {
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
        string(tag.map(hexByte).joined())
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

  /// Plain text of an event for stdout, or nil when it belongs on stderr (only decoded data is a result
  /// in plain mode, so `capture listen | while read code` sees nothing else).
  static func plain(_ event: Event) -> String? {
    if case .decodedData(let data) = event.payload { return data.text }
    return nil
  }

  static func describe(_ event: Event) -> String {
    let who = "\(event.device.name) (\(event.device.id))"
    switch event.payload {
    case .deviceArrival: return "\(who) arrived"
    case .deviceRemoval: return "\(who) removed"
    case .decodedData(let d): return "\(who) decoded \(d.dataSource.name)"
    case .batteryLevel(let l): return "\(who) battery \(l.percent)%"
    case .power(let p): return "\(who) power \(p.cliName)"
    case .buttons(let b): return "\(who) buttons \(b.names.joined(separator: ","))"
    case .error(let e): return "\(who): \(e.code.name) (\(e.code.rawValue)): \(e.message)"
    }
  }

  static func hexByte(_ b: UInt8) -> String {
    let digits = Array("0123456789ABCDEF")
    return String([digits[Int(b >> 4)], digits[Int(b & 15)]])
  }

  // MARK: properties

  static func value(_ value: PropertyValue) -> JSON {
    switch value {
    case .none: .null
    case .byte(let b): .int(b)
    case .ulong(let u): .int(u)
    case .array(let a): .array(a.map { .int($0) })
    case .string(let s): .string(s)
    case .version(let v):
      .object([
        "major": .int(v.major), "middle": .int(v.middle), "minor": .int(v.minor), "build": .int(v.build),
        "year": .int(v.year), "month": .int(v.month), "day": .int(v.day), "hour": .int(v.hour),
        "minute": .int(v.minute),
      ])
    case .dataSource(let d):
      .object([
        "id": .int(d.id.rawValue), "name": .string(d.id.name), "status": .int(d.status.rawValue),
        "statusName": .string(d.status.name), "flags": .int(d.flags.rawValue),
      ])
    }
  }

  static func property(_ id: PropertyID, _ v: PropertyValue) -> JSON {
    var members: [String: JSON] = [
      "id": .int(id.rawValue), "name": .string(id.cliName), "type": .string(v.type.name), "value": value(v),
    ]
    if let name = PropertyValueCodec.valueName(id, v) { members["valueName"] = .string(name) }
    return .object(members)
  }

  static func plainValue(_ id: PropertyID, _ v: PropertyValue) -> String {
    let text: String
    switch v {
    case .none: text = ""
    case .byte(let b): text = String(b)
    case .ulong(let u): text = String(u)
    case .array(let a): text = a.map(hexByte).joined(separator: " ")
    case .string(let s): text = s
    case .version(let ver): text = ver.description
    case .dataSource(let d): return d.status.name
    }
    if let name = PropertyValueCodec.valueName(id, v) { return "\(text) (\(name))" }
    return text
  }
}
