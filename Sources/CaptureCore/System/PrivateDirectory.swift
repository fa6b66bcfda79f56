#if canImport(Glibc)
  import Glibc
#endif

/// A directory capture keeps its own files in (the state directory `$XDG_STATE_HOME/capture`, the
/// spool's `spool/` and `spool/HOST/`), opened once and used through its descriptor.
///
/// - The directory itself is opened with O_NOFOLLOW | O_DIRECTORY, and every file in it with openat(2)
///   and O_NOFOLLOW | O_CLOEXEC: a symbolic link put in place of a file or of the directory is refused
///   (ELOOP), never followed, so a capture running as root never writes through a link into a file
///   the link's maker chose (/etc/passwd). Renames, links and unlinks are relative to the same
///   descriptor, so a directory renamed or replaced by a path trick after the check is not the one
///   used.
/// - Only a directory the user running capture owns and no one else can write is used: one another
///   user owns is refused (ESKT_FILEACCESSDENIED), since its owner could replace any file in it at
///   any time; one writable by group or others (a `chmod 777`, or created under a lax umask) is capture's
///   own, so it is set back to 0700 and `warn` says so.
public final class PrivateDirectory: Sendable {
  /// The directory's descriptor (O_RDONLY | O_DIRECTORY | O_CLOEXEC), closed on deinit.
  public let fd: Int32
  /// The path it was opened by, for messages.
  public let path: FilePath

  private init(fd: Int32, path: FilePath) {
    self.fd = fd
    self.path = path
  }

  deinit { close(fd) }

  /// Opens `path` (with `create`, making it and any missing parent, each 0700), or nil when it does
  /// not exist and `create` is false.
  public static func open(
    _ path: FilePath, create: Bool, warn: @Sendable (String) -> Void = { _ in }
  ) throws(CaptureError) -> PrivateDirectory? {
    if create {
      var prefix = FilePath(bytes: path.isAbsolute ? [] : [UInt8(ascii: ".")])
      for component in path.bytes.split(separator: UInt8(ascii: "/")) {
        prefix = FilePath(bytes: prefix.bytes + [UInt8(ascii: "/")] + component)
        if prefix.mkdir(0o700) != 0 && errno != EEXIST {
          throw CaptureError(
            Errno.current, "cannot create directory \(prefix)", other: .unableCreateDirectory)
        }
      }
    }
    let fd = path.open(O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
    guard fd >= 0 else {
      let failure = Errno.current
      if failure.code == ENOENT && !create { return nil }
      throw refusal(failure, path)
    }
    return try checked(fd: fd, path: path, warn: warn)
  }

  /// The directory `name` in this one (made 0700 with `create`), or nil when it does not exist and
  /// `create` is false.
  public func subdirectory(
    _ name: String, create: Bool, warn: @Sendable (String) -> Void = { _ in }
  ) throws(CaptureError) -> PrivateDirectory? {
    let path = self.path + "/\(name)"
    if create && mkdirat(fd, name, 0o700) != 0 && errno != EEXIST {
      throw CaptureError(Errno.current, "cannot create directory \(path)", other: .unableCreateDirectory)
    }
    let child = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
    guard child >= 0 else {
      let failure = Errno.current
      if failure.code == ENOENT && !create { return nil }
      throw Self.refusal(failure, path)
    }
    return try Self.checked(fd: child, path: path, warn: warn)
  }

  /// A directory that cannot be opened: a symbolic link (ELOOP, or ENOTDIR for O_DIRECTORY with
  /// O_NOFOLLOW on a link) or a file (ENOTDIR) in its place is named as such.
  private static func refusal(_ failure: Errno, _ path: FilePath) -> CaptureError {
    var info = stat()
    let isLink = path.withCString { lstat($0, &info) } == 0 && info.st_mode & S_IFMT == S_IFLNK
    if failure.code == ELOOP || isLink {
      return CaptureError(
        .fileAccessDenied,
        "\(path) is a symbolic link: capture keeps its files only in a directory of its own")
    }
    if failure.code == ENOTDIR { return CaptureError(.fileAccessDenied, "\(path) is not a directory") }
    return CaptureError(failure, "cannot open directory \(path)", other: .unableOpenFile)
  }

  private static func checked(fd: Int32, path: FilePath, warn: @Sendable (String) -> Void)
    throws(CaptureError)
    -> PrivateDirectory
  {
    var info = stat()
    guard fstat(fd, &info) == 0 else {
      let failure = Errno.current
      close(fd)
      throw CaptureError(failure, "cannot open directory \(path)", other: .unableOpenFile)
    }
    let user = geteuid()
    guard info.st_uid == user else {
      close(fd)
      throw CaptureError(
        .fileAccessDenied,
        "\(path) belongs to uid \(info.st_uid), not to uid \(user) running capture: refusing to use it (its owner could replace the files in it)"
      )
    }
    let mode = info.st_mode & 0o7777
    if mode & 0o022 != 0 {
      guard fchmod(fd, 0o700) == 0 else {
        let failure = Errno.current
        close(fd)
        throw CaptureError(
          .fileAccessDenied,
          "\(path) is writable by other users (mode \(String(mode, radix: 8))) and could not be set to 0700: \(failure.message)"
        )
      }
      warn("\(path) was writable by other users (mode \(String(mode, radix: 8))); set it to 0700")
    }
    return PrivateDirectory(fd: fd, path: path)
  }

  /// `name` in this directory, for messages.
  public func path(_ name: String) -> FilePath { path + "/\(name)" }

  /// openat(2) of `name` with O_NOFOLLOW | O_CLOEXEC added: -1 and errno (ELOOP for a symbolic link)
  /// on failure.
  public func openFile(_ name: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
    openat(fd, name, flags | O_NOFOLLOW | O_CLOEXEC, mode)
  }

  public func unlink(_ name: String) -> Int32 { unlinkat(fd, name, 0) }

  public func rename(_ name: String, to other: String) -> Int32 { renameat(fd, name, fd, other) }

  /// link(2) of `name` to `other` (linkat without AT_SYMLINK_FOLLOW: a symbolic link is linked as
  /// itself, never its target).
  public func link(_ name: String, to other: String) -> Int32 { linkat(fd, name, fd, other, 0) }

  /// Whether `name` exists (as anything, a dangling link too).
  public func exists(_ name: String) -> Bool {
    var info = stat()
    return fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0
  }

  /// lstat of `name`: nil when it does not exist.
  public func status(_ name: String) -> stat? {
    var info = stat()
    return fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 ? info : nil
  }

  /// The names in the directory (not `.` and `..`), as bytes.
  public func names() throws(Errno) -> [[UInt8]] {
    let copy = dup(fd)
    guard copy >= 0 else { throw .current }
    guard let dir = fdopendir(copy) else {
      let failure = Errno.current
      close(copy)
      throw failure
    }
    defer { closedir(dir) }
    // fdopendir shares the offset of the descriptor it was given: start from the beginning.
    rewinddir(dir)
    var found: [[UInt8]] = []
    while let entry = readdir(dir) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
      if name == [UInt8(ascii: ".")] || name == [UInt8(ascii: "."), UInt8(ascii: ".")] { continue }
      found.append(name)
    }
    return found
  }

  /// fsync(2) of the directory: names created, renamed or removed in it survive a power cut.
  public func sync() { _ = fsync(fd) }

  /// The whole of `name`, at most `limit` bytes, or nil when there is no such file. Only a regular
  /// file is read (BoundedInput): a FIFO, a device, a socket or a symbolic link in its place is
  /// refused at once, and a larger file is refused from its size before a byte is read.
  public func read(_ name: String, limit: Int) throws(InputError) -> [UInt8]? {
    do {
      return try BoundedInput(directory: fd, name: name, accepting: .regularFiles).readToEnd(limit: limit)
    } catch .system(let errno) where errno.code == ENOENT {
      return nil
    }
  }

  /// Replaces `name` atomically: a temporary file beside it (`NAME.tmp.PID`, created exclusively and
  /// without following a link), written, fsynced with `sync`, renamed over `name`, and the directory
  /// fsynced with `sync`. A kill at any instant leaves the old or the new file. Without `sync` only
  /// the rename is atomic: after a power cut the file may be empty, so callers that cannot lose the
  /// contents sync.
  /// `temporary`: the temporary file's name when one writer at a time is sure (the spool, under its
  /// flock), so a killed writer's file is reused rather than left behind.
  public func replace(
    _ name: String, with bytes: [UInt8], mode: mode_t, sync: Bool = true, temporary: String? = nil
  ) throws(Errno) {
    let temporary = temporary ?? "\(name).tmp.\(getpid())"
    var fd = openFile(temporary, O_WRONLY | O_CREAT | O_EXCL, mode)
    if fd < 0 && errno == EEXIST {
      // Left by a process of this pid that was killed mid-write (pids are reused): never opened
      // through, only removed.
      _ = unlink(temporary)
      fd = openFile(temporary, O_WRONLY | O_CREAT | O_EXCL, mode)
    }
    guard fd >= 0 else { throw .current }
    do throws(Errno) {
      // withUnsafeBytes rethrows untyped errors: carry the Errno out in a Result.
      try bytes.withUnsafeBytes { raw in Result { () throws(Errno) in try SystemFile.writeAll(fd: fd, raw) } }
        .get()
      if sync { guard fsync(fd) == 0 else { throw Errno.current } }
    } catch {
      close(fd)
      _ = unlink(temporary)
      throw error
    }
    close(fd)
    guard rename(temporary, to: name) == 0 else {
      let failure = Errno.current
      _ = unlink(temporary)
      throw failure
    }
    if sync { self.sync() }
  }
}
