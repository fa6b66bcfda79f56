import CaptureCore

/// The published shapes (docs/architecture.md §1 "Output"). Keys are camelCase and never renamed.
enum Render {
  /// `model` only when the device reports one: optional keys are left out, never null (as `tagId`,
  /// `points`, `origin` and `valueName` are).
  static func device(_ info: DeviceInfo) -> JSON {
    var members: [String: JSON] = [
      "id": .string(info.id), "name": .string(info.name), "type": .int(info.type.rawValue),
      "typeName": .string(info.type.typeName),
    ]
    if let model = info.model { members["model"] = .string(model) }
    return .object(members)
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
  /// in plain mode, so `capture listen | while read code` sees nothing else). The text is escaped as
  /// `DecodedData.plainLine` says, so one code is always exactly one line.
  static func plain(_ event: Event) -> String? {
    if case .decodedData(let data) = event.payload { return data.plainLine }
    return nil
  }

  static func describe(_ event: Event) -> String {
    let who = "\(event.device.name) (\(event.device.id))"
    switch event.payload {
    case .deviceArrival: return "\(who) arrived"
    case .deviceRemoval: return "\(who) removed"
    case .decodedData(let d): return "\(who) decoded \(d.dataSource.name)"
    case .undecodedData(let noise): return noiseNote(noise, from: event.device)
    case .batteryLevel(let l): return "\(who) battery \(l.percent)%"
    case .power(let p): return "\(who) power \(p.cliName)"
    case .buttons(let b): return "\(who) buttons \(b.names.joined(separator: ","))"
    case .error(let e): return "\(who): \(e.code.name) (\(e.code.rawValue)): \(e.message)"
    }
  }

  /// How many leading bytes of line noise the stderr note shows: with the count and the path, the line
  /// stays near 150 characters however long the run (the event itself carries every byte).
  static let noisePreviewBytes = 24

  /// The one stderr line for an undecodedData event: the byte count and the first bytes in hex.
  static func noiseNote(_ noise: UndecodedData, from device: DeviceInfo) -> String {
    let shown = noise.bytes.prefix(noisePreviewBytes).map(hexByte).joined(separator: " ")
    let more = noise.bytes.count > noisePreviewBytes ? " …" : ""
    return
      "\(noise.bytes.count) byte(s) from \(noise.origin ?? device.id) were not a barcode: \(shown)\(more)"
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

  /// device-type: the SDK number and its `valueName` as for any property, and the device's own
  /// `model` when it reports one (left out otherwise, as in the `device` object).
  static func deviceType(_ v: PropertyValue, _ device: DeviceInfo) -> JSON {
    guard case .object(var members) = property(.deviceType, v) else { return property(.deviceType, v) }
    if let model = device.model { members["model"] = .string(model) }
    return .object(members)
  }

  /// Plain device-type: the SDK type name when the SDK's table has the type, else the model the device
  /// reports (a DataMan's DM8072, not `0 (None)`); a number the table lacks and no model says what it is.
  static func plainDeviceType(_ v: PropertyValue, _ device: DeviceInfo) -> String {
    guard case .ulong(let raw) = v else { return plainValue(.deviceType, v) }
    let type = DeviceType(raw)
    // BtUnknown and BleUnknown are the SDK's words for "a type this SDK does not know" (docs/capture-sdk.md
    // §5.2): the device's own model says more.
    let isPlaceholder = type == .none || type == .btUnknown || type == .bleUnknown || type.sdkName == nil
    if let model = device.model, isPlaceholder { return model }
    return type.sdkName ?? plainValue(.deviceType, v)
  }

  /// The plain text of a value: what a script needs and, for a writable property, what `set` accepts
  /// back, so `capture set D P "$(capture get D P)"` changes nothing (the rule is in `get`'s help):
  /// - a number the SDK names (an enum, a flag set, battery-level's packed ulong) prints as its name
  ///   alone (`enable`, `73%`); a writable property's name is printed only when `set` parses it back to
  ///   the same number, else the number is;
  /// - a data source prints its status (`enable`, `disable`);
  /// - bytes print as hex pairs (`01 02 FF`), a Bluetooth address as `AA:BB:CC:DD:EE:FF`;
  /// - a string as it is, a version as `1.2.3.4` plus its build date when it has one.
  static func plainValue(_ id: PropertyID, _ v: PropertyValue) -> String {
    switch v {
    case .none: return ""
    case .byte(let b): return namedNumber(id, v) ?? String(b)
    case .ulong(let u): return namedNumber(id, v) ?? String(u)
    case .array(let a):
      return a.map(hexByte).joined(separator: id == .bluetoothAddressDevice && a.count == 6 ? ":" : " ")
    case .string(let s): return s
    case .version(let ver): return ver.description
    case .dataSource(let d): return d.status.name
    }
  }

  /// The SDK's name for a number, when it is the better plain text (see `plainValue`).
  static func namedNumber(_ id: PropertyID, _ v: PropertyValue) -> String? {
    guard let name = PropertyValueCodec.valueName(id, v) else { return nil }
    guard id.isWritable else { return name }
    return (try? PropertyValueCodec.parse(id, [name])) == v ? name : nil
  }
}
