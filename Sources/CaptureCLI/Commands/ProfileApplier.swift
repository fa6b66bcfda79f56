import CaptureContract
import CaptureCore
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// `set DEVICE --from FILE`: read the device first, write only what differs, read back to verify,
/// and report each property as unchanged, changed or failed. Idempotent by construction.
enum ProfileApplier {
  typealias Entry = ProfileEntry

  /// Every entry is checked before the device is opened (its property, its value's type and range,
  /// the rules of `PropertyRules`); CaptureCore's `DeviceManager.apply` then checks each against the
  /// device, writes what differs and reads it back. This renders the results.
  static func run(path: FilePath, dryRun: Bool, _ selector: DeviceSelector, _ context: Context)
    async throws(CaptureError)
    -> CommandOutcome
  {
    let bytes: [UInt8]
    if path == "-", let given = context.standardInput {
      bytes = given
    } else {
      bytes = try await readProfile(path, timeout: context.globals.timeout)
    }
    let entries = try parse(bytes, path: path)
    let device = try await context.open(selector, wantsEvents: false)
    let results: [ProfileResult]
    do throws(CaptureError) {
      results = try await DeviceManager.apply(entries, to: device, dryRun: dryRun, profile: "\(path)")
    } catch {
      await device.close()
      throw error
    }
    await device.close()

    let errors = results.compactMap(\.error)
    let output = context.output
    var document: [String: JSON] = [
      "device": Render.device(device.info), "dryRun": .bool(dryRun),
      "results": .array(
        results.map { row in
          var m: [String: JSON] = ["property": .string(row.label), "status": .string(word(row.status))]
          if let e = row.error { m["error"] = Render.errorObject(e) }
          return .object(m)
        }),
    ]
    // The first failed write is also the document's top-level error, as get's is.
    if let first = errors.first { document["error"] = Render.errorObject(first) }
    output.document(
      ResultDocument(
        json: .object(document),
        plain: .table(
          results.map { row in [row.label, word(row.status)] + (row.error.map { ["\($0)"] } ?? []) },
          separator: "\t")))
    return .failures(errors, documented: true)
  }

  /// The published word for a result's status (the `status` key of `set --from --json`).
  static func word(_ status: ProfileResult.Status) -> String {
    switch status {
    case .unchanged: "unchanged"
    case .wouldChange: "would change"
    case .changed: "changed"
    case .failed: "failed"
    }
  }

  /// The most a profile may hold: `get --all` writes a few kilobytes, so this leaves room for any
  /// hand-written one while /dev/zero or a huge file is refused after this many bytes.
  static let maximumProfileSize = 1 << 20

  /// The profile's bytes: a file, a FIFO or `<(…)`, or standard input for "-". A writer that never
  /// writes ends at --timeout (42) or a signal, never a hang (BoundedInput).
  static func readProfile(_ path: FilePath, timeout: Duration? = nil) async throws(CaptureError) -> [UInt8] {
    do {
      return try await BoundedInput.contents(
        of: path, dashIsStandardInput: true, accepting: .regularFilesAndStreams, limit: maximumProfileSize,
        timeout: timeout)
    } catch {
      throw CaptureError(error, "cannot open profile '\(path)'", other: .unableReadFile)
    }
  }

  /// Validates the whole profile first and lists every problem, so nothing is written from a bad file.
  static func parse(_ bytes: [UInt8], path: FilePath) throws(CaptureError) -> [Entry] {
    let document: ProfileJSON
    do { document = try JSONDecoder().decode(ProfileJSON.self, from: Data(bytes)) } catch {
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
      if case .fraction(let id)? = item["id"] {
        problems.append("entry \(index + 1): property id \(id) is out of range (a 32-bit whole number)")
        continue
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
      switch value(json, for: property).flatMap(rules(property)) {
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

  /// The model's rules for a parsed value (a friendly name's length and characters, ...).
  static func rules(_ p: PropertyID) -> (PropertyValue) -> Result<PropertyValue, Problem> {
    { value in
      do throws(CaptureError) {
        try PropertyRules.check(p, value)
        return .success(value)
      } catch {
        return .failure(Problem(message: error.message))
      }
    }
  }

  static func value(_ json: ProfileJSON, for p: PropertyID) -> Result<PropertyValue, Problem> {
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
      if case .fraction(let id)? = json["id"] {
        return .failure(Problem(message: "data source id \(id) is out of range (a whole number)"))
      }
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
    case (.byte?, .fraction(let number)), (.ulong?, .fraction(let number)):
      return .failure(
        Problem(
          message:
            "value \(number) is out of range for \(p.setType?.name ?? "this property") (a whole number)"))
    default:
      return .failure(
        Problem(message: "value of the wrong type or out of range for \(p.setType?.name ?? "this property")"))
    }
  }
}

/// A profile document as read: JSON whose numbers are whole numbers (`number`) or not (`fraction`,
/// any number with a fraction or exponent, or beyond 64 bits), so `1.5` or `1e300` is a value out of
/// range for its property rather than a file that is "not valid JSON".
enum ProfileJSON: Decodable, Sendable {
  case null
  case bool(Bool)
  case number(Int64)
  case fraction(Double)
  case string(String)
  case array([ProfileJSON])
  case object([String: ProfileJSON])

  init(from decoder: any Decoder) throws {
    let c = try decoder.singleValueContainer()
    if c.decodeNil() {
      self = .null
    } else if let b = try? c.decode(Bool.self) {
      self = .bool(b)
    } else if let i = try? c.decode(Int64.self) {
      self = .number(i)
    } else if let d = try? c.decode(Double.self) {
      self = .fraction(d)
    } else if let s = try? c.decode(String.self) {
      self = .string(s)
    } else if let a = try? c.decode([ProfileJSON].self) {
      self = .array(a)
    } else {
      self = .object(try c.decode([String: ProfileJSON].self))
    }
  }

  subscript(key: String) -> ProfileJSON? {
    if case .object(let members) = self { members[key] } else { nil }
  }
}
