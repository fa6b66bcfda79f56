#if canImport(Glibc)
  import Glibc
#endif

/// An errno value from a failed system call (the swift-system pattern: one typed error, EINTR retried
/// explicitly, descriptors closed with defer).
public struct Errno: Error, Sendable, Equatable {
  public let code: Int32
  public init(_ code: Int32) { self.code = code }
  public static var current: Errno { Errno(errno) }
  public var message: String { String(cString: strerror(code)) }
}

extension CaptureError {
  /// The one mapping from errno to SKT codes for file work: a path that names no usable file is
  /// `missing` (FILENOTFOUND unless the caller knows better: also a path too long or looping, and a
  /// FIFO nobody reads, ENXIO), a refused one FILEACCESSDENIED (also a directory where a file is
  /// wanted), anything else `other` (UNABLEREADFILE or UNABLEWRITEFILE: the file was there and the
  /// read or write itself failed).
  public init(_ error: Errno, _ context: String, missing: ResultCode = .fileNotFound, other: ResultCode) {
    let code: ResultCode
    switch error.code {
    case ENOENT, ENOTDIR, ENAMETOOLONG, ELOOP, ENXIO: code = missing
    case EISDIR: code = .fileAccessDenied
    case EACCES, EPERM, EROFS: code = .fileAccessDenied
    default: code = other
    }
    self.init(code, "\(context): \(error.message)")
  }
}

/// Whole-file reads and writes over file descriptors.
public enum SystemFile {
  /// Reads `fd` to end of file. With `cancellable`, waits in poll(2) with a short timeout so a Swift
  /// task cancellation (a --timeout, SIGINT) ends a read from a pipe that never closes.
  public static func readAll(fd: Int32, cancellable: Bool = false) throws(Errno) -> [UInt8] {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while true {
      if cancellable {
        if Task.isCancelled { throw Errno(ECANCELED) }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pfd, 1, 100)
        if ready < 0 && errno != EINTR { throw .current }
        if ready <= 0 { continue }
      }
      let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
      if n < 0 {
        if errno == EINTR || errno == EAGAIN { continue }
        throw .current
      }
      if n == 0 { return bytes }
      bytes += buffer[0..<n]
    }
  }

  /// The contents of `path`, or nil when it does not exist.
  public static func read(path: String) throws(Errno) -> [UInt8]? { try read(path: FilePath(path)) }

  /// Writes every byte, retrying short writes and EINTR.
  public static func writeAll(fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(Errno) {
    var offset = 0
    while offset < bytes.count {
      let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
      if n < 0 {
        if errno == EINTR { continue }
        throw .current
      }
      offset += n
    }
  }

  /// Replaces `path` atomically: a temp file beside it, fsync, rename, fsync of the directory, so a
  /// kill at any instant leaves either the old or the new file.
  public static func replace(path: String, directory: String, with bytes: [UInt8], mode: mode_t) throws(Errno)
  {
    try replace(path: FilePath(path), directory: FilePath(directory), with: bytes, mode: mode)
  }
}

extension Errno {
  /// Runs a system call that returns -1 and sets errno on failure, retrying EINTR (a signal arriving
  /// mid-call is not a failure; swift-system's `retryOnInterrupt`).
  public static func retryingInterrupts<T: BinaryInteger>(_ call: () -> T) throws(Errno) -> T {
    while true {
      let result = call()
      if result >= 0 { return result }
      if errno != EINTR { throw .current }
    }
  }
}
