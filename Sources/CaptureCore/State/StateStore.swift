import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// A device `capture connect` remembered. Keyed by Bluetooth address or transport URI, never by the
/// SDK's per-connection GUID (docs/architecture.md §2 State).
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

/// SocketCam's persisted settings: a set survives the process (the state file, docs/architecture.md §2
/// State).
public struct SocketCamSettings: Codable, Sendable, Hashable {
  /// SocketCamStatus value: 0 enable, 1 disable (docs/capture-sdk.md §7.13, inverted on purpose).
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
/// The directory is a `PrivateDirectory`: opened without following a link, used only when the user
/// running capture owns it and no one else can write it, and every file in it opened with
/// O_NOFOLLOW relative to it.
public struct StateStore: Sendable {
  /// The state directory's bytes: `$XDG_STATE_HOME` need not be UTF-8, and every open uses these.
  /// Empty when the environment names none (`unavailable` says why).
  public let location: FilePath
  /// Why there is no state directory (HOME unset, empty or relative, and no absolute
  /// XDG_STATE_HOME): every use of the state fails with it.
  public let unavailable: CaptureError?
  /// Told when the directory had to be made private again (it was writable by others).
  public let warn: @Sendable (String) -> Void
  /// The directory and the state file as text, for messages (escaped where not UTF-8).
  public var directory: String { location.string ?? location.description }
  public var path: String { file.string ?? file.description }
  var file: FilePath { location + "/\(Self.fileName)" }
  var lockPath: String { (location + "/\(Self.lockName)").description }
  static let fileName = "devices.json"
  static let lockName = "devices.lock"

  public init(directory: String, warn: @escaping @Sendable (String) -> Void = { _ in }) {
    self.init(location: FilePath(directory), warn: warn)
  }
  public init(location: FilePath, warn: @escaping @Sendable (String) -> Void = { _ in }) {
    self.location = location
    self.unavailable = nil
    self.warn = warn
  }
  init(unavailable: CaptureError) {
    location = FilePath(bytes: [])
    self.unavailable = unavailable
    warn = { _ in }
  }

  /// The default location from the environment (XDG Base Directory specification): an absolute
  /// `$XDG_STATE_HOME` (a relative one is ignored, as the specification says), else
  /// `$HOME/.local/state`. Without a usable HOME there is no default (the specification defines it
  /// only relative to HOME): the state is unavailable, ESKT_FILENOTFOUND (63) when a command uses it,
  /// never a directory at the root of the file system.
  public static func fromEnvironment(warn: @escaping @Sendable (String) -> Void = { _ in }) -> StateStore {
    // Bytes, not String(cString:): a directory name that is not UTF-8 must not become U+FFFD.
    if let value: UnsafeMutablePointer<CChar> = getenv("XDG_STATE_HOME") {
      let xdg = FilePath(cString: value)
      if xdg.isAbsolute { return StateStore(location: xdg + "/capture", warn: warn) }
    }
    guard let value: UnsafeMutablePointer<CChar> = getenv("HOME"), FilePath(cString: value).isAbsolute else {
      return StateStore(
        unavailable: CaptureError(
          .fileNotFound,
          "no state directory: HOME is not set (or not an absolute path) and XDG_STATE_HOME is not an absolute path; set either"
        ))
    }
    return StateStore(location: FilePath(cString: value) + "/.local/state/capture", warn: warn)
  }

  /// The state directory's path, or the reason there is none.
  public func resolvedLocation() throws(CaptureError) -> FilePath {
    if let unavailable { throw unavailable }
    return location
  }

  /// The state directory, opened and checked (`PrivateDirectory`); with `create` made (0700) when
  /// missing, else nil when missing.
  func openDirectory(create: Bool) throws(CaptureError) -> PrivateDirectory? {
    try PrivateDirectory.open(try resolvedLocation(), create: create, warn: warn)
  }

  /// Reads the state; a missing file is the empty state. A newer-schema file (86) or an unreadable one
  /// (64) is an error naming the file and is left untouched. A corrupt or truncated one (85) is moved
  /// aside under the lock (see `quarantine`), so the next command starts from an empty state and the
  /// bytes are kept for the user to look at.
  public func load() throws(CaptureError) -> StateFile {
    guard let directory = try openDirectory(create: false), let bytes = try readBytes(directory) else {
      return StateFile()
    }
    do throws(CaptureError) {
      return try decode(bytes)
    } catch  where error.code == .invalidFormat {
      // Seen without the lock: look again holding it, since another process may have moved the file
      // aside (or replaced it) in between.
      let lockFD: Int32
      do { lockFD = try acquireLock(directory) } catch let failure {
        throw CaptureError(
          .invalidFormat, "\(error.message); it could not be moved aside: \(failure.message)")
      }
      defer { close(lockFD) }
      return try loadLocked(directory)
    }
  }

  /// Locks, re-reads, applies `change`, and writes the result atomically.
  public func update<T>(_ change: (inout StateFile) throws(CaptureError) -> T) throws(CaptureError) -> T {
    let directory = try makeDirectory()
    return try locked(directory) { () throws(CaptureError) -> T in
      var state = try loadLocked(directory)
      let result = try change(&state)
      removeStaleTemporaries(directory)
      try write(state, directory)
      return result
    }
  }

  /// Runs `body` holding the exclusive `flock` on the lock file: every write and every move-aside of
  /// this state directory is serialised by it. flock locks belong to the open file description, so
  /// `body` must not call `locked` again (a second open would wait for itself).
  func locked<T>(_ directory: PrivateDirectory, _ body: () throws(CaptureError) -> T) throws(CaptureError)
    -> T
  {
    let lockFD = try acquireLock(directory)
    defer { close(lockFD) }
    return try body()
  }

  /// Opens the lock file and takes the exclusive lock; closing the returned descriptor releases it.
  func acquireLock(_ directory: PrivateDirectory) throws(CaptureError) -> Int32 {
    let lockFD = directory.openFile(Self.lockName, O_RDWR | O_CREAT, 0o600)
    guard lockFD >= 0 else {
      throw CaptureError(Errno.current, "cannot open lock file \(lockPath)", other: .unableWriteFile)
    }
    do {
      _ = try Errno.retryingInterrupts { flock(lockFD, LOCK_EX) }
    } catch {
      close(lockFD)
      throw CaptureError(error, "cannot lock \(lockPath)", other: .unableWriteFile)
    }
    return lockFD
  }

  /// `load` for a caller holding the lock: a corrupt file is moved aside here, and the error says where.
  func loadLocked(_ directory: PrivateDirectory) throws(CaptureError) -> StateFile {
    guard let bytes = try readBytes(directory) else { return StateFile() }
    do throws(CaptureError) {
      return try decode(bytes)
    } catch  where error.code == .invalidFormat {
      let aside: String
      do throws(CaptureError) { aside = try quarantine(directory) } catch let failure {
        throw CaptureError(
          .invalidFormat, "\(error.message); it could not be moved aside: \(failure.message)")
      }
      throw CaptureError(
        .invalidFormat, "\(error.message); moved it to \(aside), the next command starts from an empty state")
    }
  }

  /// The most a state file may hold. Each remembered device is a few hundred bytes, so this is tens
  /// of thousands of devices; a larger file is not one capture wrote, and it is refused from its size
  /// (fstat) before a byte of it is read.
  public static let maximumSize = 8 << 20

  /// The state file's bytes, nil when there is none. Only a regular file is a state file: a FIFO,
  /// a device (a link to /dev/zero) or a socket put in its place is refused at once (UNABLEREADFILE,
  /// left as it is), so no command and no SIGHUP reload ever waits on one (BoundedInput).
  func readBytes(_ directory: PrivateDirectory) throws(CaptureError) -> [UInt8]? {
    do {
      return try directory.read(Self.fileName, limit: Self.maximumSize)
    } catch {
      throw CaptureError(error, "cannot read \(path)", other: .unableReadFile)
    }
  }

  /// Moves the state file to `devices.json.corrupt-<UTC time>` (`.1`, `.2`, … when that name is taken)
  /// and returns the new path. link(2) refuses an existing name (EEXIST), so nothing is ever overwritten;
  /// the unlink that follows only drops the old name, and a kill between the two leaves both names on
  /// the same bytes. Called with the lock held.
  func quarantine(at time: Timestamp = .now()) throws(CaptureError) -> String {
    guard let directory = try openDirectory(create: false) else {
      throw CaptureError(.fileNotFound, "cannot move \(path) aside: there is no \(self.directory)")
    }
    return try quarantine(directory, at: time)
  }

  func quarantine(_ directory: PrivateDirectory, at time: Timestamp = .now()) throws(CaptureError) -> String {
    let base = "\(Self.fileName).corrupt-\(Self.fileStamp(time))"
    for attempt in 0..<1000 {
      let candidate = attempt == 0 ? base : base + ".\(attempt)"
      if directory.link(Self.fileName, to: candidate) == 0 {
        guard directory.unlink(Self.fileName) == 0 || errno == ENOENT else {
          throw CaptureError(Errno.current, "cannot remove \(path)", other: .unableWriteFile)
        }
        directory.sync()
        return directory.path(candidate).description
      }
      switch errno {
      case EEXIST: continue
      case EPERM, ENOTSUP, EXDEV, EMLINK:
        // A file system without hard links: under the lock no capture creates names here, so
        // checking first and renaming cannot race with another capture.
        if directory.exists(candidate) { continue }
        guard directory.rename(Self.fileName, to: candidate) == 0 else {
          throw CaptureError(Errno.current, "cannot rename \(path)", other: .unableWriteFile)
        }
        directory.sync()
        return directory.path(candidate).description
      default:
        throw CaptureError(Errno.current, "cannot move \(path) aside", other: .unableWriteFile)
      }
    }
    throw CaptureError(
      .unableWriteFile, "cannot move \(path) aside: every name \(directory.path(base)).N is taken")
  }

  /// ISO 8601 basic form in UTC, `20261130T135034.123Z`: sorts by time and has no ':' (which some
  /// tools and file systems treat specially).
  static func fileStamp(_ time: Timestamp) -> String { time.iso8601.filter { $0 != "-" && $0 != ":" } }

  /// A writer killed between creating its temp file and renaming it leaves `devices.json.tmp.PID`.
  /// Nothing ever reads one as the state; holding the lock, no writer is using one, so they go.
  func removeStaleTemporaries(_ directory: PrivateDirectory) {
    guard let names = try? directory.names() else { return }
    let prefix = Array("\(Self.fileName).tmp.".utf8)
    for name in names where name.starts(with: prefix) {
      let cName = name.map { CChar(bitPattern: $0) } + [0]
      _ = unlinkat(directory.fd, cName, 0)
    }
  }

  /// Remembers `device`, replacing any entry with its id (one entry per device, docs/architecture.md §2
  /// State). `keepingAlias`: a device remembered without an alias keeps the one it had (an automatic
  /// reconnect must not drop the user's name for it).
  public func remember(_ device: RememberedDevice, keepingAlias: Bool = false) throws(CaptureError) {
    try update { (state: inout StateFile) throws(CaptureError) in
      var device = device
      // A new alias must name one device; one kept from before is not checked again, so a state
      // written before this rule still reconnects.
      if let alias = device.alias, let reason = state.aliasConflict(alias, for: device.id) {
        throw .aliasTaken(reason)
      }
      if keepingAlias && device.alias == nil {
        device.alias = state.devices.first { $0.id == device.id }?.alias
      }
      state.devices.removeAll { $0.id == device.id }
      state.devices.append(device)
    }
  }

  /// `update` for an async caller: the write takes the `flock` (which waits as long as another
  /// process holds it) and fsyncs, so it runs on `BlockingExecutor`, never on a thread of the
  /// cooperative pool (docs/architecture.md §2). The engine, the device manager and the front ends
  /// write the state this way.
  public func asyncUpdate<T: Sendable>(
    _ change: @escaping @Sendable (inout StateFile) throws(CaptureError) -> T
  ) async throws(CaptureError) -> T {
    try await BlockingExecutor.shared.run { (_) throws(CaptureError) -> T in try self.update(change) }
  }

  /// `remember` for an async caller, on `BlockingExecutor` (see `asyncUpdate`).
  public func asyncRemember(_ device: RememberedDevice, keepingAlias: Bool = false) async throws(CaptureError)
  {
    try await BlockingExecutor.shared.run { (_) throws(CaptureError) in
      try self.remember(device, keepingAlias: keepingAlias)
    }
  }

  func decode(_ bytes: [UInt8]) throws(CaptureError) -> StateFile {
    struct VersionProbe: Decodable { var schemaVersion: Int? }
    let data = Data(bytes)
    let probe: VersionProbe
    do { probe = try JSONDecoder().decode(VersionProbe.self, from: data) } catch {
      throw CaptureError(
        .invalidFormat,
        bytes.isEmpty
          ? "state file \(path) is empty (truncated)"
          : "state file \(path) is corrupt (not a complete JSON object)")
    }
    guard let version = probe.schemaVersion else {
      throw CaptureError(.invalidFormat, "state file \(path) has no schemaVersion")
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
      throw CaptureError(.invalidFormat, "state file \(path) is corrupt (\(Self.describe(context)))")
    } catch let DecodingError.keyNotFound(key, context) {
      throw CaptureError(
        .invalidFormat,
        "state file \(path) is corrupt (\(Self.location(context) ?? "the top level") lacks \"\(key.stringValue)\")"
      )
    } catch {
      throw CaptureError(.invalidFormat, "state file \(path) is corrupt")
    }
  }

  /// "devices[0].type has the wrong type", from a decoding error's path.
  static func describe(_ context: DecodingError.Context) -> String {
    location(context).map { "\($0) has the wrong type" } ?? "wrong structure"
  }

  /// "devices[0].type", the decoding error's path; nil at the top level.
  static func location(_ context: DecodingError.Context) -> String? {
    var path = ""
    for key in context.codingPath {
      if let i = key.intValue {
        path += "[\(i)]"
      } else {
        path += (path.isEmpty ? "" : ".") + key.stringValue
      }
    }
    return path.isEmpty ? nil : path
  }

  func write(_ state: StateFile, _ directory: PrivateDirectory) throws(CaptureError) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
    let data: Data
    do { data = try encoder.encode(state) } catch {
      throw CaptureError(.unableWriteFile, "cannot encode state: \(error)")
    }
    do {
      try directory.replace(Self.fileName, with: Array(data), mode: 0o600)
    } catch {
      throw CaptureError(error, "cannot write \(path)", other: .unableWriteFile)
    }
  }

  /// The state directory, made (0700, with every missing parent) when missing.
  func makeDirectory() throws(CaptureError) -> PrivateDirectory {
    guard let directory = try openDirectory(create: true) else {
      throw CaptureError(.unableCreateDirectory, "cannot create directory \(location)")
    }
    return directory
  }
}

/// What `capture doctor` finds of the state file: read only, never moved aside or created.
public struct StateInspection: Sendable {
  /// The file's path, for messages and the `doctor` row's subject.
  public var path: String
  /// The file's permission bits (stat(2) st_mode & 0o7777); nil when there is no file.
  public var mode: UInt32?
  /// The state (nil: no state file yet), or why it cannot be used: FILEACCESSDENIED (unreadable),
  /// INVALIDFORMAT (corrupt or truncated), INVALIDVERSION (newer schema), UNABLEREADFILE (not a
  /// regular file, too large).
  public var result: Result<StateFile?, CaptureError>

  public init(path: String, mode: UInt32?, result: Result<StateFile?, CaptureError>) {
    self.path = path
    self.mode = mode
    self.result = result
  }
}

extension StateStore {
  /// Reads and validates the state file without the lock and without moving a corrupt one aside
  /// (`load` quarantines it; `doctor` only reports what it finds).
  public func inspect() -> StateInspection {
    var mode: UInt32? = nil
    let result: Result<StateFile?, CaptureError>
    do throws(CaptureError) {
      if let directory = try openDirectory(create: false),
        let info = directory.status(Self.fileName)
      {
        mode = UInt32(info.st_mode) & 0o7777
      }
      if let directory = try openDirectory(create: false), let bytes = try readBytes(directory) {
        result = .success(try decode(bytes))
      } else {
        result = .success(nil)
      }
    } catch {
      result = .failure(error)
    }
    return StateInspection(path: path, mode: mode, result: result)
  }
}
