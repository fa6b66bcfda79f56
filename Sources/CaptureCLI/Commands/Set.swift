import CaptureContract
import CaptureCore

#if canImport(Glibc)
  import Glibc
#endif

enum SetCommand {
  struct Assignment: Sendable {
    var property: PropertyID
    var value: PropertyValue
    var label: String
    /// A device-native parameter (`dmcc:PARAM.NAME`), written with `Device.setRaw`.
    var raw: String? = nil
    /// `data-source` NAME|GROUP STATUS pairs beyond a single named source, applied in order once the
    /// device is open (`resolvingDataSources`); `value` is unused then.
    var dataSourcePairs: [(DataSourceSelector, DataSourceStatus)] = []
  }

  struct Options: Sendable {
    var selector: DeviceSelector
    var assignments: [Assignment] = []
    var profilePath: FilePath?
    var dryRun: Bool

    init(_ parsed: ParsedArguments) throws(UsageError) {
      guard let first = parsed.operands.first else { throw parsed.usage("missing DEVICE") }
      selector = try Values.device(first, command: parsed.commandName)
      profilePath = parsed.path("from")
      dryRun = parsed.flag("dry-run")
      let words = Array(parsed.operands.dropFirst())
      if profilePath != nil {
        if let extra = words.first {
          throw parsed.usage("--from applies a whole profile; unexpected '\(extra)'")
        }
        return
      }
      if dryRun { throw parsed.usage("--dry-run works with --from FILE") }
      guard !words.isEmpty else { throw parsed.usage("missing PROPERTY VALUE (or --from FILE)") }
      var i = 0
      while i < words.count {
        if GetCommand.isRaw(words[i]) {
          guard i + 1 < words.count else { throw parsed.usage("\(words[i]) needs a value") }
          assignments.append(
            Assignment(
              property: PropertyID(0), value: .string(words[i + 1]), label: "\(words[i]) \(words[i + 1])",
              raw: words[i]))
          i += 2
          continue
        }
        let property = try PropertyArguments.property(words[i], parsed)
        if property == .dataSourceDevice && property.isWritable {
          let (assignment, next) = try Self.dataSources(words, from: i + 1, parsed)
          assignments.append(assignment)
          i = next
          continue
        }
        let arity = PropertyValueCodec.setArity(property)
        // An action (abort, reset) takes no value: a word after it that names no property is a value
        // given by mistake, not a second property.
        if arity == 0, i + 1 < words.count, !PropertyArguments.isProperty(words[i + 1]) {
          throw parsed.usage("\(property.cliName) takes no value; unexpected '\(words[i + 1])'")
        }
        guard i + arity < words.count + (arity == 0 ? 1 : 0) else {
          throw parsed.usage(
            "\(property.cliName) needs \(arity == 2 ? "a data source and enable or disable" : "a value")")
        }
        let args = Array(words[(i + 1)..<min(words.count, i + 1 + arity)])
        assignments.append(try Self.assignment(property, args, parsed))
        i += 1 + arity
      }
      if selector == .deviceManager { try normaliseFavorites(parsed) }
    }

    /// A bad favourite is a usage error caught before anything is written (names, socketcam, an empty
    /// item between ';'); a good one is stored, and echoed with --json, in its normalised form.
    mutating func normaliseFavorites(_ parsed: ParsedArguments) throws(UsageError) {
      for index in assignments.indices where assignments[index].property == .favorite {
        guard case .string(let text) = assignments[index].value else { continue }
        do {
          assignments[index].value = .string(try Favorites(parsing: text).value)
        } catch {
          throw parsed.usage(error.message)
        }
      }
    }

    /// `data-source` NAME STATUS [NAME STATUS ...], NAME a data source or a group (`all`, `1d`, `2d`,
    /// `nfc`). The pairs run until a word that names a property. One named source is an ordinary
    /// assignment; groups or several pairs are resolved against the device's data sources at run time.
    /// Every name and status is checked here, so a typo is a usage error before anything is written.
    static func dataSources(_ words: [String], from start: Int, _ parsed: ParsedArguments) throws(UsageError)
      -> (Assignment, next: Int)
    {
      var pairs: [(DataSourceSelector, DataSourceStatus)] = []
      var labels: [String] = []
      var i = start
      repeat {
        guard i + 1 < words.count else {
          throw parsed.usage("data-source needs a data source and enable or disable")
        }
        guard let selector = DataSourceSelector.parse(words[i]) else {
          throw parsed.usage("unknown data source '\(words[i])'")
        }
        guard let status = DataSourceStatus.parse(words[i + 1]), status == .enable || status == .disable
        else {
          throw parsed.usage("data source status must be enable or disable, not '\(words[i + 1])'")
        }
        pairs.append((selector, status))
        labels.append(words[i])
        i += 2
      } while i < words.count && !PropertyArguments.isProperty(words[i])
      if pairs.count == 1, case .source(let source) = pairs[0].0 {
        return (
          Assignment(
            property: .dataSourceDevice,
            value: .dataSource(DataSourceValue(id: source, status: pairs[0].1, flags: .status)),
            label: "data-source \(labels[0])"), i
        )
      }
      return (
        Assignment(
          property: .dataSourceDevice, value: .none, label: "data-source " + labels.joined(separator: " "),
          dataSourcePairs: pairs), i
      )
    }

    static func assignment(_ p: PropertyID, _ args: [String], _ parsed: ParsedArguments) throws(UsageError)
      -> Assignment
    {
      guard p.isWritable else {
        throw parsed.usage("\(p.cliName) is read-only")
      }
      do {
        let value = try PropertyValueCodec.parse(p, args)
        try PropertyRules.check(p, value)
        return Assignment(
          property: p, value: value, label: ([p.cliName] + args.prefix(1)).joined(separator: " "))
      } catch {
        throw parsed.usage(error.message)
      }
    }
  }

  static func run(_ options: Options, _ context: Context) async throws(CaptureError) -> CommandOutcome {
    if let path = options.profilePath {
      return try await ProfileApplier.run(path: path, dryRun: options.dryRun, options.selector, context)
    }
    let device = try await context.open(options.selector, wantsEvents: false)
    var firstError: CaptureError?
    let assignments: [Assignment]
    do {
      assignments = try resolvingDataSources(options.assignments, device)
    } catch {
      await device.close()
      throw error
    }
    for assignment in assignments {
      do {
        if let raw = assignment.raw {
          try await device.setRaw(raw, assignment.value.stringValue ?? "")
        } else {
          try await device.set(assignment.property, assignment.value)
        }
        context.output.info("set \(assignment.label)")
      } catch {
        firstError = firstError ?? error
        context.output.error(error)
      }
    }
    await device.close()
    if context.output.isJSON && firstError == nil {
      var info = device.info
      for case (.friendlyNameDevice, .string(let name)) in assignments.map({ ($0.property, $0.value) }
      ) {
        info.name = name
      }
      context.output.json(
        .object([
          "device": Render.device(info),
          "properties": .array(
            assignments.map {
              GetCommand.Request(property: $0.property, argument: .none, label: $0.label, raw: $0.raw).json(
                $0.value)
            }),
        ]))
    }
    return .status(firstError?.code ?? .noError)
  }
}

extension SetCommand {
  /// Each data-source assignment with pairs replaced by one write per data source, in the order the
  /// sources are first named, each with the status of the last pair that names it ("all disable
  /// qr-code enable" disables every supported source but QR Code, which is written once, enabled).
  /// A group touches only the sources the device lists; a named source is written whether listed or
  /// not, so the device answers for it.
  static func resolvingDataSources(_ assignments: [Assignment], _ device: any Device) throws(CaptureError)
    -> [Assignment]
  {
    var resolved: [Assignment] = []
    for assignment in assignments {
      guard !assignment.dataSourcePairs.isEmpty else {
        resolved.append(assignment)
        continue
      }
      let capabilities = device.capabilities
      guard capabilities.canWrite(.dataSourceDevice) else { throw device.unsupported(.dataSourceDevice) }
      var writes: [(source: DataSource, status: DataSourceStatus)] = []
      var index: [DataSource: Int] = [:]
      for (selector, status) in assignment.dataSourcePairs {
        let sources = selector.expand(capabilities.dataSources)
        if case .group(let group) = selector, sources.isEmpty {
          throw .notSupported("\(device.info.name) has no data source in group \(group.rawValue)")
        }
        for source in sources {
          if let at = index[source] {
            writes[at].status = status
          } else {
            index[source] = writes.count
            writes.append((source, status))
          }
        }
      }
      for (source, status) in writes {
        resolved.append(
          Assignment(
            property: .dataSourceDevice,
            value: .dataSource(DataSourceValue(id: source, status: status, flags: .status)),
            label: "data-source \(source.cliName)"))
      }
    }
    return resolved
  }
}
