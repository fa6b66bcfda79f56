import CaptureContract
import CaptureCore

/// What the command line adds to the published shapes of CaptureContract's `Render` (events, devices,
/// errors): the plain text of events and values, and `get`'s property objects.
extension Render {
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
    case .error(let e): return "\(who): \(e)"
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
