import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// A device `capture connect` remembered. Keyed by Bluetooth address or transport URI, never by the
/// SDK's per-connection GUID (ARCHITECTURE.md §2 State).
public struct RememberedDevice: Codable, Sendable, Hashable {
  public var id: String
  public var alias: String?
  public var name: String
  public var type: UInt32
  public var transport: String
  public var lastSeen: String?
  /// Bluetooth Classic: the RFCOMM channel SDP found at connect, so later opens skip the SDP lookup.
  public var channel: UInt8?

  public init(
    id: String, alias: String?, name: String, type: UInt32, transport: String, lastSeen: String?,
    channel: UInt8? = nil
  ) {
    self.id = id
    self.alias = alias
    self.name = name
    self.type = type
    self.transport = transport
    self.lastSeen = lastSeen
    self.channel = channel
  }
}

/// SocketCam's persisted settings: a set survives the process (issue: "the set persists in the state file").
public struct SocketCamSettings: Codable, Sendable, Hashable {
  /// SocketCamStatus value: 0 enable, 1 disable (capture-sdk.md §7.13, inverted on purpose).
  public var status: UInt8 = 0
  public var friendlyName: String? = nil
  /// Data source id (decimal string) → DataSourceStatus raw value; absent means the default.
  public var dataSources: [String: Int8] = [:]
  public init() {}

  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    status = try c.decodeIfPresent(UInt8.self, forKey: .status) ?? 0
    friendlyName = try c.decodeIfPresent(String.self, forKey: .friendlyName)
    dataSources = try c.decodeIfPresent([String: Int8].self, forKey: .dataSources) ?? [:]
  }
}

public struct StateFile: Codable, Sendable, Hashable {
  public static let currentSchemaVersion = 1
  public var schemaVersion: Int = StateFile.currentSchemaVersion
  public var devices: [RememberedDevice] = []
  public var socketCam = SocketCamSettings()
  /// The device manager's Favorite string (see `Favorites`); "" = auto-connect off.
  public var favorite: String = ""
  public init() {}

  /// Absent sections are empty: a file written by hand as `{"schemaVersion":1}` is valid.
  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    schemaVersion = try c.decode(Int.self, forKey: .schemaVersion)
    devices = try c.decodeIfPresent([RememberedDevice].self, forKey: .devices) ?? []
    socketCam = try c.decodeIfPresent(SocketCamSettings.self, forKey: .socketCam) ?? SocketCamSettings()
    favorite = try c.decodeIfPresent(String.self, forKey: .favorite) ?? ""
  }
}

/// `$XDG_STATE_HOME/capture/devices.json` (default `~/.local/state/capture`): written atomically
/// (temp file, fsync, rename, fsync of the directory) under an advisory `flock` on a lock file, so two
/// `capture` processes never interleave and a kill at any instant leaves either the old or the new file.
public struct StateStore: Sendable {
  public let directory: String
  public var path: String { directory + "/devices.json" }
  var lockPath: String { directory + "/devices.lock" }

  public init(directory: String) { self.directory = directory }

  /// The default location from the environment (XDG Base Directory specification).
  public static func fromEnvironment() -> StateStore {
    if let xdg = getenv("XDG_STATE_HOME").map({ String(cString: $0) }), xdg.hasPrefix("/") {
      return StateStore(directory: xdg + "/capture")
    }
    let home = getenv("HOME").map { String(cString: $0) } ?? "/"
    return StateStore(directory: home + "/.local/state/capture")
  }

  /// Reads the state; a missing file is the empty state. A corrupt or newer-schema file is an error
  /// naming the file, and is left untouched.
  public func load() throws(CaptureError) -> StateFile {
    let bytes: [UInt8]?
    do { bytes = try SystemFile.read(path: path) } catch {
      throw CaptureError(error, "cannot read \(path)", other: .unableReadFile)
    }
    guard let bytes else { return StateFile() }
    return try decode(bytes)
  }

  /// Locks, re-reads, applies `change`, and writes the result atomically.
  public func update<T>(_ change: (inout StateFile) throws(CaptureError) -> T) throws(CaptureError) -> T {
    try makeDirectory()
    let lockFD = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard lockFD >= 0 else {
      throw CaptureError(Errno.current, "cannot open lock file \(lockPath)", other: .unableWriteFile)
    }
    defer { close(lockFD) }
    while flock(lockFD, LOCK_EX) != 0 {
      guard errno == EINTR else {
        throw CaptureError(Errno.current, "cannot lock \(lockPath)", other: .unableWriteFile)
      }
    }
    var state = try load()
    let result = try change(&state)
    try write(state)
    return result
  }

  func decode(_ bytes: [UInt8]) throws(CaptureError) -> StateFile {
    struct VersionProbe: Decodable { var schemaVersion: Int? }
    let data = Data(bytes)
    let probe: VersionProbe
    do { probe = try JSONDecoder().decode(VersionProbe.self, from: data) } catch {
      throw CaptureError(
        .invalidFormat, "state file \(path) is corrupt (not a JSON object); fix or move it away")
    }
    guard let version = probe.schemaVersion else {
      throw CaptureError(.invalidFormat, "state file \(path) has no schemaVersion; fix or move it away")
    }
    guard version <= StateFile.currentSchemaVersion else {
      throw CaptureError(
        .invalidVersion,
        "state file \(path) has schema version \(version), newer than this capture (\(StateFile.currentSchemaVersion))"
      )
    }
    do { return try JSONDecoder().decode(StateFile.self, from: data) } catch let DecodingError.typeMismatch(
      _, context)
    {
      throw CaptureError(
        .invalidFormat, "state file \(path) is corrupt (\(Self.describe(context))); fix or move it away")
    } catch let DecodingError.keyNotFound(key, context) {
      throw CaptureError(
        .invalidFormat,
        "state file \(path) is corrupt (\(Self.describe(context)) lacks \"\(key.stringValue)\"); fix or move it away"
      )
    } catch {
      throw CaptureError(.invalidFormat, "state file \(path) is corrupt; fix or move it away")
    }
  }

  /// "devices[0].type has the wrong type", from a decoding error's path.
  static func describe(_ context: DecodingError.Context) -> String {
    var path = ""
    for key in context.codingPath {
      if let i = key.intValue {
        path += "[\(i)]"
      } else {
        path += (path.isEmpty ? "" : ".") + key.stringValue
      }
    }
    return path.isEmpty ? "wrong structure" : "\(path) has the wrong type"
  }

  func write(_ state: StateFile) throws(CaptureError) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
    let data: Data
    do { data = try encoder.encode(state) } catch {
      throw CaptureError(.unableWriteFile, "cannot encode state: \(error)")
    }
    do {
      try SystemFile.replace(path: path, directory: directory, with: Array(data), mode: 0o600)
    } catch {
      throw CaptureError(error, "cannot write \(path)", other: .unableWriteFile)
    }
  }

  func makeDirectory() throws(CaptureError) {
    var prefix = ""
    for component in directory.split(separator: "/") {
      prefix += "/" + component
      if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
        throw CaptureError(Errno.current, "cannot create directory \(prefix)", other: .unableCreateDirectory)
      }
    }
  }
}
