import CaptureContract
import CaptureCore

enum GetCommand {
  /// One property to read, with the argument its get needs.
  struct Request: Sendable {
    var property: PropertyID
    var argument: PropertyValue
    var label: String
    /// A device-native parameter (`dmcc:PARAM.NAME`), read with `Device.getRaw` instead of a property.
    var raw: String? = nil
    /// `data-source` without a name (`all`) or with a group name: every data source of the group the
    /// device supports, expanded once the device is open (`expandingGroups`).
    var group: DataSourceGroup? = nil
    /// One data source of an expanded group: the device not supporting it leaves it out of the list.
    var isListed = false

    /// The JSON member of `properties`: raw parameters carry their own name and are always a String.
    func json(_ value: PropertyValue, device: DeviceInfo? = nil) -> JSON {
      if raw == nil && property == .deviceType, let device { return Render.deviceType(value, device) }
      guard let raw else { return Render.property(property, value) }
      return .object([
        "name": .string(raw), "type": .string("String"), "value": .string(value.stringValue ?? ""),
      ])
    }

    func plain(_ value: PropertyValue, device: DeviceInfo) -> String {
      if raw == nil && property == .deviceType { return Render.plainDeviceType(value, device) }
      return raw == nil ? Render.plainValue(property, value) : value.stringValue ?? ""
    }
  }

  /// `dmcc:NAME` (a native DMCC parameter, docs/architecture.md §1 PROPERTY).
  static func isRaw(_ word: String) -> Bool { word.lowercased().hasPrefix("dmcc:") }

  struct Options: Sendable {
    var selector: DeviceSelector?
    var requests: [Request] = []
    var all: Bool
    var list: Bool

    init(_ parsed: ParsedArguments) throws(UsageError) {
      all = parsed.flag("all")
      list = parsed.flag("list")
      if list {
        if all { throw parsed.usage("--list and --all cannot be combined") }
        try parsed.requireOperands(0...1, "DEVICE")
        selector = try parsed.operands.first.map { (t: String) throws(UsageError) in
          try Values.device(t, command: parsed.commandName)
        }
        return
      }
      guard let first = parsed.operands.first else { throw parsed.usage("missing DEVICE") }
      selector = try Values.device(first, command: parsed.commandName)
      let words = Array(parsed.operands.dropFirst())
      if all {
        if let extra = words.first { throw parsed.usage("--all reads every property; unexpected '\(extra)'") }
        return
      }
      guard !words.isEmpty else { throw parsed.usage("missing PROPERTY (or --all, --list)") }
      requests = try Self.requests(words, parsed)
    }

    static func requests(_ words: [String], _ parsed: ParsedArguments) throws(UsageError) -> [Request] {
      var requests: [Request] = []
      var i = 0
      while i < words.count {
        if GetCommand.isRaw(words[i]) {
          requests.append(Request(property: PropertyID(0), argument: .none, label: words[i], raw: words[i]))
          i += 1
          continue
        }
        let property = try PropertyArguments.property(words[i], parsed)
        // An id no table knows goes to the device, which is the judge (it answers NOTSUPPORTED);
        // only a known property is refused here for its access.
        guard property.isReadable || !PropertyID.known.contains(property) else {
          throw parsed.usage("\(property.cliName) cannot be read (it is write-only)")
        }
        // `data-source` last or before another property lists every source; before a group, its members.
        let next = i + 1 < words.count && !PropertyArguments.isProperty(words[i + 1]) ? words[i + 1] : nil
        if property == .dataSourceDevice, let group = next.map(DataSourceGroup.parse) ?? .all {
          requests.append(
            Request(
              property: property, argument: .none,
              label: ([property.cliName] + [next].compactMap { $0 })
                .joined(separator: " "), group: group))
          i += next == nil ? 1 : 2
          continue
        }
        let arity = PropertyValueCodec.getArity(property)
        guard i + arity < words.count || arity == 0 else {
          throw parsed.usage(
            "\(property.cliName) needs \(property == .dataSourceDevice ? "a data source" : "an argument")")
        }
        let args = Array(words[(i + 1)..<(i + 1 + arity)])
        do {
          let argument = try PropertyValueCodec.getArgument(property, args)
          let label = ([property.cliName] + args).joined(separator: " ")
          requests.append(Request(property: property, argument: argument, label: label))
        } catch {
          throw parsed.usage(error.message)
        }
        i += 1 + arity
      }
      return requests
    }
  }

  static func run(_ options: Options, _ context: Context) async throws(CaptureError) -> CommandOutcome {
    if options.list { return .status(try await listProperties(options, context)) }
    let device = try await context.open(options.selector!, wantsEvents: false)
    defer { Task { await device.close() } }
    let requests = options.all ? allRequests(device) : expandingGroups(options.requests, device)

    var results: [(Request, PropertyValue)] = []
    var errors: [CaptureError] = []
    // --all: what this device does not support is left out of the profile, with one note for them all.
    var leftOut: [String] = []
    for request in requests {
      do throws(CaptureError) {
        if let group = request.group { throw unlisted(device, group) }
        if let raw = request.raw {
          results.append((request, .string(try await device.getRaw(raw))))
        } else {
          results.append((request, try await device.get(request.property, argument: request.argument)))
        }
      } catch {
        if (options.all || request.isListed) && error.code == .notSupported {
          // A group's member the device lacks is simply not listed; --all says once what it left out.
          if options.all { leftOut.append(request.label) }
          continue
        }
        errors.append(error)
      }
    }
    await device.close()

    let output = context.output
    if !leftOut.isEmpty {
      output.warn(
        "\(device.info.name) does not support \(leftOut.joined(separator: ", ")): left out of --all")
    }
    let firstError = errors.first
    if output.isJSON, results.isEmpty, firstError != nil {
      // Nothing was read: the contract's bare error object (CaptureCLI.run writes it), not an empty
      // document.
      return .failures(errors, documented: false)
    }
    let plain: ResultDocument.Plain
    if options.requests.count == 1 && options.requests[0].group != nil {
      // One `name status` line per source: the words `set DEVICE data-source` takes back as pairs.
      plain = .table(
        results.compactMap { request, value in
          value.dataSourceValue.map { [$0.id.cliName, request.plain(value, device: device.info)] }
        }, separator: " ")
    } else if requests.count == 1 && !options.all && options.requests[0].group == nil {
      plain = .lines(
        results.first.map { request, value in [request.plain(value, device: device.info)] } ?? [])
    } else {
      plain = .table(
        results.map { request, value in [request.label, request.plain(value, device: device.info)] },
        separator: "\t")
    }
    var document: [String: JSON] = [
      "device": Render.device(device.info),
      "properties": .array(results.map { $0.0.json($0.1, device: device.info) }),
    ]
    if let firstError { document["error"] = Render.errorObject(firstError) }
    output.document(ResultDocument(json: .object(document), plain: plain))
    // Each failed property's line on stderr, by CaptureCLI.run; the document above carries the first.
    return .failures(errors, documented: true)
  }

  /// The requests with each data-source group replaced by one request per member the device supports,
  /// in SDK id order. A device that cannot read data sources, or does not list them, keeps the group
  /// request, which then fails with the reason (`unlisted`).
  static func expandingGroups(_ requests: [Request], _ device: any Device) -> [Request] {
    let capabilities = device.capabilities
    var expanded: [Request] = []
    for request in requests {
      guard let group = request.group, capabilities.canRead(.dataSourceDevice),
        case let members = group.members(of: capabilities.dataSources), !members.isEmpty
      else {
        expanded.append(request)
        continue
      }
      for source in members {
        expanded.append(
          Request(
            property: .dataSourceDevice,
            argument: .dataSource(DataSourceValue(id: source, status: .defaultStatus)),
            label: "data-source \(source.cliName)", isListed: true))
      }
    }
    return expanded
  }

  /// Why a data-source group could not be listed on this device.
  static func unlisted(_ device: any Device, _ group: DataSourceGroup) -> CaptureError {
    guard device.capabilities.canRead(.dataSourceDevice) else { return device.unsupported(.dataSourceDevice) }
    return .notSupported(
      "\(device.info.name) has no data source in group \(group.rawValue) (name one: get DEVICE data-source NAME)"
    )
  }

  /// Every readable property that needs no argument, plus data-source for each data source the
  /// device declares: the provisioning profile `set --from` reads back.
  static func allRequests(_ device: any Device) -> [Request] {
    var requests: [Request] = []
    for property in device.capabilities.readable {
      // Notifications on the devices that have them today (BLE battery) is a GATT notify session that
      // lasts as long as the process holding it (bluetoothd drops a client's sessions when its bus
      // connection closes), so its value describes whichever `listen` runs, not the device: a profile
      // that carried it would not apply idempotently.
      if property == .notificationsDevice { continue }
      if property == .dataSourceDevice {
        for source in device.capabilities.dataSources {
          requests.append(
            Request(
              property: property, argument: .dataSource(DataSourceValue(id: source, status: .defaultStatus)),
              label: "data-source \(source.cliName)"))
        }
      } else if PropertyValueCodec.getArity(property) == 0 {
        requests.append(Request(property: property, argument: .none, label: property.cliName))
      }
    }
    return requests
  }

  static func listProperties(_ options: Options, _ context: Context) async throws(CaptureError) -> ResultCode
  {
    var properties = PropertyID.known.filter { !$0.isDeprecated }
    var readable = Set(properties.filter(\.isReadable))
    var writable = Set(properties.filter(\.isWritable))
    var device: DeviceInfo?
    if let selector = options.selector {
      // Capabilities only: no event stream, so a Classic scanner needs no RFCOMM link and a BLE device
      // no notify session.
      let opened = try await context.open(selector, wantsEvents: false)
      let caps = opened.capabilities
      device = opened.info
      await opened.close()
      readable = Set(caps.readable)
      writable = Set(caps.writable)
      properties = properties.filter { readable.contains($0) || writable.contains($0) }
    }
    let output = context.output
    var document: [String: JSON] = [
      "properties": .array(
        properties.map { p in
          .object([
            "name": .string(p.cliName), "id": .int(p.rawValue), "hex": .string(p.hex),
            "scope": .string(p.scope.rawValue), "getType": .string(p.getType?.name ?? "Unknown"),
            "setType": .string(p.setType?.name ?? "Unknown"), "readable": .bool(readable.contains(p)),
            "writable": .bool(writable.contains(p)),
          ])
        })
    ]
    if let device { document["device"] = Render.device(device) }
    let width = (properties.map { $0.cliName.count }.max() ?? 0) + 2
    output.document(
      ResultDocument(
        json: .object(document),
        plain: .lines(
          properties.map { p in
            let access = (readable.contains(p) ? "r" : "-") + (writable.contains(p) ? "w" : "-")
            return p.cliName + String(repeating: " ", count: width - p.cliName.count)
              + "\(p.hex)  \(access)  "
              + "\(p.scope.rawValue)"
          })))
    return .noError
  }
}

enum PropertyArguments {
  /// Whether a word names a property or a native parameter rather than a value: it ends a run of
  /// data-source words (`get D data-source friendly-name`, `set D data-source all disable qr enable
  /// trigger start`). Numbers are values there (`data-source 38 enable`); no data source or group is
  /// spelled like a property (ValuesTests checks it).
  static func isProperty(_ word: String) -> Bool {
    GetCommand.isRaw(word) || !PropertyID.named(word).isEmpty
  }

  /// A property name or id, with "did you mean" for a near miss.
  static func property(_ word: String, _ parsed: ParsedArguments) throws(UsageError) -> PropertyID {
    if let property = PropertyID.parse(word, preferring: .device) { return property }
    var message = "unknown property '\(word)'"
    let names = PropertyID.known.filter { !$0.isDeprecated }.map(\.cliName)
    if let near = ArgumentParser.closest(to: word.lowercased(), in: names) {
      message += "; did you mean '\(near)'?"
    }
    throw parsed.usage(message + " (capture get --list shows them)")
  }
}

extension JSON {
  subscript(key: String) -> JSON? {
    if case .object(let members) = self { return members[key] }
    return nil
  }
}
