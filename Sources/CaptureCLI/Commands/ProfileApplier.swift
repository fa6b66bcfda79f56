import CaptureCore
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// `set DEVICE --from FILE`: read the device first, write only what differs, read back to verify,
/// and report each property as unchanged, changed or failed. Idempotent by construction.
enum ProfileApplier {
  struct Entry {
    var property: PropertyID
    var value: PropertyValue
    var label: String
  }

  static func run(path: String, dryRun: Bool, _ selector: DeviceSelector, _ context: Context)
    async throws(CaptureError)
    -> ResultCode
  {
    let entries = try parse(try await readProfile(path, timeout: context.globals.timeout), path: path)
    let device = try await context.open(selector, wantsEvents: false)
    var rows: [(label: String, status: String, error: CaptureError?)] = []
    for entry in entries.sorted(by: { order($0.property) < order($1.property) }) {
      let argument: PropertyValue
      if case .dataSource(let d) = entry.value {
        argument = .dataSource(DataSourceValue(id: d.id, status: .defaultStatus))
      } else {
        argument = .none
      }
      do throws(CaptureError) {
        let current = try await device.get(entry.property, argument: argument)
        if same(current, entry.value) {
          rows.append((entry.label, "unchanged", nil))
          continue
        }
        if dryRun {
          rows.append((entry.label, "would change", nil))
          continue
        }
        try await device.set(entry.property, entry.value)
        let after = try await device.get(entry.property, argument: argument)
        guard same(after, entry.value) else {
          throw CaptureError(.invalidValue, "\(entry.label) reads back a different value after the write")
        }
        rows.append((entry.label, "changed", nil))
      } catch {
        rows.append((entry.label, "failed", error))
      }
    }
    await device.close()

    let output = context.output
    if output.isJSON {
      output.json(
        .object([
          "device": Render.device(device.info), "dryRun": .bool(dryRun),
          "results": .array(
            rows.map { row in
              var m: [String: JSON] = ["property": .string(row.label), "status": .string(row.status)]
              if let e = row.error { m["error"] = Render.error(e)["error"] }
              return .object(m)
            }),
        ]))
    } else {
      output.table(
        rows.map { row in
          [row.label, row.status]
            + (row.error.map { ["\($0.code.name) (\($0.code.rawValue)): \($0.message)"] } ?? [])
        })
    }
    if let failed = rows.first(where: { $0.error != nil })?.error { return failed.code }
    return .noError
  }

  /// Settings that can drop the link go last.
  static func order(_ p: PropertyID) -> Int {
    switch p {
    case .securityModeDevice, .profileConfigDevice, .startUpRoleSPPDevice: 2
    case .socketCamStatus: 1
    default: 0
    }
  }

  static func same(_ a: PropertyValue, _ b: PropertyValue) -> Bool {
    if case .dataSource(let x) = a, case .dataSource(let y) = b {
      return x.id == y.id && x.status == y.status
    }
    return a == b
  }

  /// The most a profile may hold: `get --all` writes a few kilobytes, so this leaves room for any
  /// hand-written one while /dev/zero or a huge file is refused after this many bytes.
  static let maximumProfileSize = 1 << 20

  /// The profile's bytes: a file, a FIFO or `<(…)`, or standard input for "-". A writer that never
  /// writes ends at --timeout (42) or a signal, never a hang (BoundedInput).
  static func readProfile(_ path: String, timeout: Duration? = nil) async throws(CaptureError) -> [UInt8] {
    do {
      return try await BoundedInput.contents(
        of: path, dashIsStandardInput: true, accepting: .regularFilesAndStreams, limit: maximumProfileSize,
        timeout: timeout)
    } catch {
      throw CaptureError(error, "cannot open profile '\(path)'", other: .unableReadFile)
    }
  }

  /// Validates the whole profile first and lists every problem, so nothing is written from a bad file.
  static func parse(_ bytes: [UInt8], path: String) throws(CaptureError) -> [Entry] {
    let document: JSON
    do { document = try JSONDecoder().decode(JSON.self, from: Data(bytes)) } catch {
      throw CaptureError(.invalidFormat, "profile '\(path)' is not valid JSON")
    }
    guard case .array(let items)? = document["properties"] else {
      throw CaptureError(
        .invalidFormat,
        "profile '\(path)' has no \"properties\" array (write one with capture --json get DEVICE --all)")
    }
    var entries: [Entry] = []
    var problems: [String] = []
    for (index, item) in items.enumerated() {
      let property: PropertyID?
      switch (item["id"], item["name"]) {
      case (.number(let id)?, _) where Int32(exactly: id) != nil: property = PropertyID(Int32(id))
      case (_, .string(let name)?): property = PropertyID.parse(name)
      default: property = nil
      }
      guard let property, PropertyID.known.contains(property) else {
        let given: String
        switch (item["id"], item["name"]) {
        case (.number(let id)?, _): given = " \(id)"
        case (_, .string(let name)?): given = " '\(name)'"
        default: given = " (no id or name)"
        }
        problems.append("entry \(index + 1): unknown property\(given)")
        continue
      }
      // Read-only facts (device-type, version) and actions (trigger, reset) are not applied.
      guard property.isWritable && property.isReadable else { continue }
      guard let json = item["value"] else {
        problems.append("entry \(index + 1) (\(property.cliName)): no value")
        continue
      }
      switch value(json, for: property) {
      case .success(let v):
        var label = property.cliName
        if case .dataSource(let d) = v { label += " \(d.id.cliName)" }
        entries.append(Entry(property: property, value: v, label: label))
      case .failure(let problem):
        problems.append("entry \(index + 1) (\(property.cliName)): \(problem.message)")
      }
    }
    guard problems.isEmpty else {
      throw CaptureError(.invalidParameter, "profile '\(path)' rejected: " + problems.joined(separator: "; "))
    }
    return entries
  }

  struct Problem: Error { var message: String }

  static func value(_ json: JSON, for p: PropertyID) -> Result<PropertyValue, Problem> {
    switch (p.setType, json) {
    case (.byte?, .number(let i)) where (0...255).contains(i): return .success(.byte(UInt8(i)))
    case (.ulong?, .number(let i)) where (0...Int64(UInt32.max)).contains(i):
      return .success(.ulong(UInt32(i)))
    case (.string?, .string(let s)): return .success(.string(s))
    case (.array?, .array(let a)):
      let bytes = a.compactMap { v -> UInt8? in
        if case .number(let i) = v, (0...255).contains(i) { UInt8(i) } else { nil }
      }
      return bytes.count == a.count
        ? .success(.array(bytes)) : .failure(Problem(message: "array values must be bytes 0-255"))
    case (.dataSource?, .object):
      guard case .number(let id)? = json["id"], let source = DataSource.parse(String(id)) else {
        return .failure(Problem(message: "data source value needs a known \"id\""))
      }
      guard case .number(let raw)? = json["status"],
        let status = DataSourceStatus(rawValue: Int8(clamping: raw)),
        status == .enable || status == .disable
      else {
        return .failure(
          Problem(message: "data source \(source.cliName) needs \"status\" 0 (disable) or 1 (enable)"))
      }
      return .success(.dataSource(DataSourceValue(id: source, status: status)))
    case (.none?, _): return .success(.none)
    default:
      return .failure(
        Problem(message: "value of the wrong type or out of range for \(p.setType?.name ?? "this property")"))
    }
  }
}
