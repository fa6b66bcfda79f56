#if canImport(Glibc)
  import Glibc
#endif

/// A file name as the kernel takes it: bytes, not text. A Linux path may hold any byte but NUL, and
/// one that is not UTF-8 is still a valid name; a Swift `String` made from it replaces the bad bytes
/// with U+FFFD, and opening that string opens a different file. Paths from argv and the environment are
/// carried as these bytes to the open(2) that uses them; only messages show them as text, escaped
/// (`description`).
public struct FilePath: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
  /// The name's bytes, without a terminating NUL.
  public var bytes: [UInt8]

  public init(bytes: some Sequence<UInt8>) { self.bytes = Array(bytes) }
  public init(_ string: String) { bytes = Array(string.utf8) }
  public init(stringLiteral value: String) { self.init(value) }

  /// The bytes of a C string (argv, getenv).
  public init(cString: UnsafePointer<CChar>) {
    bytes = Array(UnsafeBufferPointer(start: cString, count: strlen(cString))).map { UInt8(bitPattern: $0) }
  }

  /// The name as text when it is valid UTF-8 (nil otherwise: it has no exact `String`).
  public var string: String? { String(validating: bytes, as: UTF8.self) }

  /// The name for a message: UTF-8 as it is, every other byte and every control character `\xHH`
  /// (`DecodedData.plainEscaped`), so a message never carries a raw line break or a lossy U+FFFD.
  public var description: String { DecodedData.plainEscaped(bytes) }

  public var isEmpty: Bool { bytes.isEmpty }
  public var isAbsolute: Bool { bytes.first == UInt8(ascii: "/") }

  /// Runs `body` with the NUL-terminated name for a system call.
  public func withCString<T>(_ body: (UnsafePointer<CChar>) throws -> T) rethrows -> T {
    try (bytes.map { CChar(bitPattern: $0) } + [0]).withUnsafeBufferPointer { try body($0.baseAddress!) }
  }

  public static func + (path: FilePath, suffix: String) -> FilePath {
    FilePath(bytes: path.bytes + Array(suffix.utf8))
  }
}

// The system calls a `FilePath` is opened with, each passing the exact bytes.
extension FilePath {
  public func open(_ flags: Int32, _ mode: mode_t = 0) -> Int32 {
    withCString { Glibc.open($0, flags, mode) }
  }
  public func unlink() -> Int32 { withCString { Glibc.unlink($0) } }
  public func rename(to other: FilePath) -> Int32 {
    withCString { from in other.withCString { Glibc.rename(from, $0) } }
  }
  public func link(to other: FilePath) -> Int32 {
    withCString { from in other.withCString { Glibc.link(from, $0) } }
  }
  public func mkdir(_ mode: mode_t) -> Int32 { withCString { Glibc.mkdir($0, mode) } }
  public func opendir() -> OpaquePointer? { withCString { Glibc.opendir($0) } }
}

extension SystemFile {
  /// The contents of `path`, or nil when it does not exist.
  public static func read(path: FilePath) throws(Errno) -> [UInt8]? {
    let fd = path.open(O_RDONLY | O_CLOEXEC)
    if fd < 0 {
      if errno == ENOENT { return nil }
      throw .current
    }
    defer { close(fd) }
    return try readAll(fd: fd)
  }

  /// Replaces `path` atomically: a temp file beside it, fsync, rename, fsync of the directory, so a
  /// kill at any instant leaves either the old or the new file.
  public static func replace(path: FilePath, directory: FilePath, with bytes: [UInt8], mode: mode_t)
    throws(Errno)
  {
    let temp = path + ".tmp.\(getpid())"
    let fd = temp.open(O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
    guard fd >= 0 else { throw .current }
    do throws(Errno) {
      // withUnsafeBytes rethrows untyped errors: carry the Errno out in a Result.
      try bytes.withUnsafeBytes { raw in Result { () throws(Errno) in try writeAll(fd: fd, raw) } }.get()
      guard fsync(fd) == 0 else { throw Errno.current }
    } catch {
      close(fd)
      _ = temp.unlink()
      throw error
    }
    close(fd)
    guard temp.rename(to: path) == 0 else {
      let failure = Errno.current
      _ = temp.unlink()
      throw failure
    }
    let dirFD = directory.open(O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if dirFD >= 0 {
      fsync(dirFD)
      close(dirFD)
    }
  }
}
