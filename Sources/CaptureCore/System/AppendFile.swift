import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A log file that lines are appended to, one write(2) each, and that follows its path across log
/// rotation (`listen --output FILE`).
///
/// - O_APPEND: every write lands at the end of the file as it is at that moment, so two writers never
///   overwrite each other and a `copytruncate` rotation (the file cut to 0 in place) makes the next
///   line start at offset 0 instead of leaving a hole of NUL bytes up to our old offset (open(2)).
/// - Before each write the path's (st_dev, st_ino) is compared with the descriptor's: when the file
///   was renamed away or removed (logrotate's `create` and `nocreate` modes) the path is opened again,
///   so new lines go to the file the path names now and none goes on into the rotated copy.
/// - O_CLOEXEC: a `--confirm` command spawned while we hold the file must not inherit it.
///
/// The path is bytes (`FilePath`): a name that is not UTF-8 is created as it was typed.
public final class AppendFile: Sendable {
  public let path: FilePath
  /// Permissions for a file this class creates (umask applies); an existing file keeps its own.
  public let mode: mode_t

  private struct Open {
    var fd: Int32
    var device: UInt64
    var inode: UInt64
  }
  /// The descriptor and the identity of the file it refers to (fstat at open; it never changes).
  private let state: Mutex<Open>

  /// Opens (creating when missing) `path` for appending. A missing directory, an over-long path or a
  /// FIFO nobody reads is FILENOTFOUND (-63), a refused path or a directory FILEACCESSDENIED (-64),
  /// anything else UNABLEWRITEFILE (-33).
  public init(path: FilePath, mode: mode_t = 0o600) throws(CaptureError) {
    self.path = path
    self.mode = mode
    state = Mutex(try Self.open(path, mode: mode, context: "cannot open \(path)"))
  }

  deinit {
    state.withLock { _ = close($0.fd) }
  }

  /// Appends `bytes` (a whole line) with one write(2); a short write is completed with more writes
  /// (only a full disk or a signal cuts one short), and a failure is reported, never dropped.
  public func append(_ bytes: [UInt8]) throws(CaptureError) {
    try state.withLock { (open: inout Open) throws(CaptureError) in
      if Self.wasRotated(path, from: open) {
        let fresh = try Self.open(path, mode: mode, context: "cannot reopen \(path) after rotation")
        close(open.fd)
        open = fresh
      }
      let fd = open.fd
      do throws(Errno) {
        try bytes.withUnsafeBytes { raw in Result { () throws(Errno) in try SystemFile.writeAll(fd: fd, raw) }
        }
        .get()
      } catch {
        throw CaptureError(error, "cannot write \(path)", other: .unableWriteFile)
      }
    }
  }

  /// True when `path` no longer names the file `open` refers to: it is gone (renamed or removed) or
  /// another file took its place. A stat that fails otherwise (EACCES on a directory on the way) tells
  /// nothing, so the current file is kept.
  private static func wasRotated(_ path: FilePath, from open: Open) -> Bool {
    var info = stat()
    let failure = path.withCString { stat($0, &info) == 0 ? 0 : errno }
    if failure != 0 { return failure == ENOENT || failure == ENOTDIR }
    return UInt64(info.st_dev) != open.device || UInt64(info.st_ino) != open.inode
  }

  private static func open(_ path: FilePath, mode: mode_t, context: String) throws(CaptureError) -> Open {
    let fd: Int32
    do throws(Errno) {
      // O_NONBLOCK for the open only: a FIFO that no process reads fails with ENXIO (open(2)) instead
      // of waiting for a reader past --timeout and signals; it is cleared at once so the writes block
      // and complete as on any file.
      fd = try Errno.retryingInterrupts {
        path.open(O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, mode)
      }
    } catch {
      throw CaptureError(
        error, error.code == ENXIO ? "\(context): no process is reading it" : context, other: .unableWriteFile
      )
    }
    let flags = fcntl(fd, F_GETFL)
    if flags >= 0 { _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) }
    var info = stat()
    guard fstat(fd, &info) == 0 else {
      let failure = Errno.current
      close(fd)
      throw CaptureError(failure, context, other: .unableWriteFile)
    }
    return Open(fd: fd, device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
  }
}
