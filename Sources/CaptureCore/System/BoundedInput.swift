import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A wake-up for a blocked read: a pipe whose read end becomes readable once and stays so (the byte
/// is never read). `cancel()` is one write(2), so it may be called from any thread, a task
/// cancellation handler or a signal handler's relay; every `BoundedInput` waiting with it returns
/// `.cancelled` from its poll(2) at once.
public final class Cancellation: Sendable {
  /// Readable once cancelled; -1 when no pipe could be made (then the flag is looked at each second).
  public let fd: Int32
  private let writeFD: Int32
  private let fired = Atomic(false)

  public init() {
    var fds: [Int32] = [-1, -1]
    if pipe(&fds) == 0 {
      for end in fds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
      _ = fcntl(fds[1], F_SETFL, O_NONBLOCK)
    }
    fd = fds[0]
    writeFD = fds[1]
  }

  deinit {
    if fd >= 0 { close(fd) }
    if writeFD >= 0 { close(writeFD) }
  }

  public var isCancelled: Bool { fired.load(ordering: .acquiring) }

  public func cancel() {
    guard !fired.exchange(true, ordering: .acquiringAndReleasing) else { return }
    if writeFD >= 0 {
      var one: UInt8 = 1
      _ = write(writeFD, &one, 1)
    }
  }
}

/// Why an input could not be read. Converted once to CaptureError by `CaptureError(_:_:missing:other:)`.
public enum InputError: Error, Sendable, Equatable {
  /// open(2), fstat(2) or read(2) failed.
  case system(Errno)
  /// The input is not a regular file (`kind` says what it is: "a FIFO", "a directory", ...) and its
  /// contract takes regular files only.
  case notRegular(kind: String)
  /// More than `limit` bytes: the input's own bound (a state file, a profile, an image header).
  case tooLarge(limit: Int)
  /// The deadline passed while waiting for data (a FIFO whose writer is silent).
  case timedOut
  /// The `Cancellation` fired (a signal, a cancelled task).
  case cancelled
}

extension CaptureError {
  /// The one mapping from an input failure to an SKT code: errno as for any file work, a deadline
  /// REQUESTTIMEDOUT (-42), a cancellation CANCEL, a refused kind or an exceeded bound `other`
  /// (UNABLEREADFILE for most inputs).
  public init(
    _ error: InputError, _ context: String, missing: ResultCode = .fileNotFound, other: ResultCode
  ) {
    switch error {
    case .system(let errno): self.init(errno, context, missing: missing, other: other)
    case .notRegular(let kind): self.init(other, "\(context): it is \(kind), not a regular file")
    case .tooLarge(let limit):
      self.init(other, "\(context): larger than \(ByteCount(limit)), the most it may hold")
    case .timedOut: self.init(.requestTimedOut, "\(context): no data before the --timeout ran out")
    case .cancelled: self.init(.cancel, "\(context): cancelled")
    }
  }
}

/// "4 MiB", "512 bytes": a bound as a person reads it.
struct ByteCount: CustomStringConvertible {
  let value: Int
  init(_ value: Int) { self.value = value }
  var description: String {
    if value >= 1 << 20 && value % (1 << 20) == 0 { return "\(value >> 20) MiB" }
    if value >= 1 << 10 && value % (1 << 10) == 0 { return "\(value >> 10) KiB" }
    return "\(value) bytes"
  }
}

/// One input read with a bound, a deadline and a cancellation: the reader every path the user or an
/// attacker controls goes through (state file, `set --from`, images).
///
/// - Opened with O_NONBLOCK, so opening a FIFO never waits for a writer (open(2): a read-only
///   non-blocking open of a FIFO succeeds at once), and O_CLOEXEC, so a `--confirm` child does not
///   inherit it. O_NOCTTY: a terminal named as input never becomes our controlling terminal.
/// - What kinds of file are accepted is the caller's contract (`Accepting`): a state file is a regular
///   file only; a profile or an image may come from a pipe (`<(…)`, a FIFO).
/// - Every wait is a poll(2) on the descriptor and on the `Cancellation`'s eventfd, bounded by the
///   deadline, so a silent writer ends in `.timedOut` and a signal in `.cancelled` within the same
///   poll, not after the next byte arrives.
/// - Every read is bounded: `readToEnd(limit:)` stops at `limit + 1` bytes, so /dev/zero or a 1 GB
///   file costs at most the bound, and `read(upTo:)` lets a format decide its bound from a header
///   before reading the rest.
///
/// Not Sendable: one thread reads it. The blocking waits are meant for a thread of their own or a
/// caller that may block (a decoder thread); async code uses `BoundedInput.contents(...)`, which runs
/// the read off the cooperative pool and turns task cancellation into a `Cancellation`.
public final class BoundedInput {
  /// Which kinds of file an input's contract takes.
  public enum Accepting: Sendable {
    /// Regular files only (a state file): anything else is `.notRegular` before a byte is read.
    case regularFiles
    /// Regular files, FIFOs, pipes, sockets and character devices (a profile, an image); never a
    /// directory. Streams are waited on with poll(2).
    case regularFilesAndStreams
  }

  /// When to give up waiting, and what else may end a wait. A regular file never waits, so neither
  /// applies to it beyond the checks between chunks.
  public struct Wait: Sendable {
    public var deadline: ContinuousClock.Instant?
    public var cancellation: Cancellation?
    public init(deadline: ContinuousClock.Instant? = nil, cancellation: Cancellation? = nil) {
      self.deadline = deadline
      self.cancellation = cancellation
    }
    /// Wait for ever (until a signal's default action ends the process).
    public static let unbounded = Wait()
    /// `timeout` from now (nil: no deadline).
    public static func within(_ timeout: Duration?, cancellation: Cancellation? = nil) -> Wait {
      Wait(deadline: timeout.map { ContinuousClock.now.advanced(by: $0) }, cancellation: cancellation)
    }
  }

  public let fd: Int32
  private let ownsDescriptor: Bool
  /// Set for a regular file: its size at open (it may still grow; the bound holds regardless).
  public let regularFileSize: Int?
  public let wait: Wait
  private var atEnd = false
  private var scratch: [UInt8] = []
  /// Bytes read so far (by every call): what is left of a regular file is its size less this.
  public private(set) var consumed = 0

  /// Opens `path` for reading, without waiting for a FIFO's writer.
  public convenience init(path: FilePath, accepting: Accepting, wait: Wait = .unbounded) throws(InputError) {
    let fd: Int32
    do {
      fd = try Errno.retryingInterrupts { path.open(O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY) }
    } catch {
      throw .system(error)
    }
    try self.init(taking: fd, accepting: accepting, wait: wait)
  }

  /// Opens `name` in the directory `directory` (a descriptor) without following a symbolic link: a
  /// link in its place is `.notRegular(kind: "a symbolic link")`, never the file it points to
  /// (openat(2) O_NOFOLLOW fails with ELOOP on a link as the last component).
  public convenience init(directory: Int32, name: String, accepting: Accepting, wait: Wait = .unbounded)
    throws(InputError)
  {
    let fd: Int32
    do {
      fd = try Errno.retryingInterrupts {
        openat(directory, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW)
      }
    } catch {
      if error.code == ELOOP { throw .notRegular(kind: Self.describe(S_IFLNK)) }
      throw .system(error)
    }
    try self.init(taking: fd, accepting: accepting, wait: wait)
  }

  /// Owns `fd`, just opened: closed here when its kind is not accepted, else on deinit.
  private init(taking fd: Int32, accepting: Accepting, wait: Wait) throws(InputError) {
    do {
      regularFileSize = try Self.check(fd, accepting)
    } catch {
      close(fd)
      throw error
    }
    self.fd = fd
    ownsDescriptor = true
    self.wait = wait
  }

  /// Reads from an inherited descriptor (standard input). Its flags are left as they are (the file
  /// description is shared with the parent, a terminal or a pipe), so every read waits in poll(2)
  /// first and then finds data ready.
  public init(descriptor: Int32, accepting: Accepting = .regularFilesAndStreams, wait: Wait = .unbounded)
    throws(InputError)
  {
    regularFileSize = try Self.check(descriptor, accepting)
    fd = descriptor
    ownsDescriptor = false
    self.wait = wait
  }

  deinit { if ownsDescriptor { close(fd) } }

  /// The size of a regular file, nil for a stream; throws when the kind is not accepted.
  private static func check(_ fd: Int32, _ accepting: Accepting) throws(InputError) -> Int? {
    var info = stat()
    guard fstat(fd, &info) == 0 else { throw .system(.current) }
    switch info.st_mode & S_IFMT {
    case S_IFREG: return Int(info.st_size)
    case S_IFDIR: throw .system(Errno(EISDIR))
    case let kind:
      guard accepting == .regularFilesAndStreams else { throw .notRegular(kind: describe(kind)) }
      return nil
    }
  }

  static func describe(_ kind: mode_t) -> String {
    switch kind {
    case S_IFIFO: "a FIFO or pipe"
    case S_IFCHR: "a character device"
    case S_IFBLK: "a block device"
    case S_IFSOCK: "a socket"
    case S_IFLNK: "a symbolic link"
    default: "not a file"
    }
  }

  /// Up to `count` bytes: fewer only at end of file. Waits (bounded by `wait`) while a stream has
  /// nothing yet.
  public func read(upTo count: Int) throws(InputError) -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(min(count, 1 << 16))
    while bytes.count < count, !atEnd {
      try append(into: &bytes, atMost: count - bytes.count)
    }
    return bytes
  }

  /// Everything up to end of file (from where earlier reads stopped), or `.tooLarge` as soon as more
  /// than `limit` bytes arrived (one byte past the bound is read to tell "exactly the bound" from
  /// "more").
  public func readToEnd(limit: Int) throws(InputError) -> [UInt8] {
    var bytes: [UInt8] = []
    if let size = regularFileSize {
      // A regular file says its size up front: refuse it before reading any of it.
      let left = max(0, size - consumed)
      guard left <= limit else { throw .tooLarge(limit: limit) }
      bytes.reserveCapacity(left)
    }
    let cap = limit < Int.max ? limit + 1 : limit
    while !atEnd {
      try append(into: &bytes, atMost: cap - bytes.count)
      if bytes.count > limit { throw .tooLarge(limit: limit) }
    }
    return bytes
  }

  /// One read(2) of at most `count` bytes (at most 64 KiB), after waiting for data when needed.
  private func append(into bytes: inout [UInt8], atMost count: Int) throws(InputError) {
    let chunk = min(count, 1 << 16)
    guard chunk > 0 else { return }
    while true {
      if wait.cancellation?.isCancelled == true { throw .cancelled }
      if regularFileSize == nil { try waitForData() }
      // One scratch buffer per input, copied out with one memcpy per read: growing `bytes` by a
      // chunk of zeros and trimming it cost a loop per byte in a debug build (seconds for 16 MiB).
      if scratch.count < chunk { scratch = [UInt8](repeating: 0, count: 1 << 16) }
      let n = scratch.withUnsafeMutableBytes { raw in Glibc.read(fd, raw.baseAddress!, chunk) }
      let failure = errno
      if n > 0 {
        bytes.append(contentsOf: scratch[0..<n])
        consumed += n
        return
      }
      if n == 0 {
        atEnd = true
        return
      }
      switch failure {
      case EINTR, EAGAIN: continue
      default: throw .system(Errno(failure))
      }
    }
  }

  /// poll(2) until the descriptor is readable (data, or end of file: POLLHUP), the deadline passes or
  /// the cancellation fires. A FIFO with no writer yet reports neither POLLIN nor POLLHUP on Linux
  /// (pipe_poll reports a hang-up only once a writer has come and gone), so it is waited on like a
  /// silent writer.
  private func waitForData() throws(InputError) {
    while true {
      var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
      if let cancel = wait.cancellation, cancel.fd >= 0 {
        fds.append(pollfd(fd: cancel.fd, events: Int16(POLLIN), revents: 0))
      }
      let timeout = try millisecondsLeft()
      let ready = poll(&fds, nfds_t(fds.count), timeout)
      if ready < 0 {
        if errno == EINTR { continue }
        throw .system(.current)
      }
      if wait.cancellation?.isCancelled == true { throw .cancelled }
      if fds[0].revents != 0 { return }
    }
  }

  /// The poll timeout: -1 without a deadline, else what is left (at least 0), `.timedOut` once past.
  /// Capped at a second without a cancellation fd, so the flag is still looked at now and then.
  private func millisecondsLeft() throws(InputError) -> Int32 {
    let capped: Int32 = (wait.cancellation.map { $0.fd < 0 } ?? false) ? 1000 : -1
    guard let deadline = wait.deadline else { return capped }
    let left = ContinuousClock.now.duration(to: deadline)
    if left <= .zero { throw .timedOut }
    let (seconds, attoseconds) = left.components
    let milliseconds = min(Int64(Int32.max), seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
    return capped < 0 ? Int32(milliseconds) : min(capped, Int32(milliseconds))
  }
}

extension BoundedInput {
  /// The whole of `path` (or standard input for "-" when `dashIsStandardInput`), at most `limit`
  /// bytes, read on the blocking executor so the cooperative pool never waits on a FIFO. Cancelling the
  /// calling task (a --timeout's deadline task, SIGINT relayed as cancellation) ends the read with
  /// `.cancelled`; `timeout` ends it with `.timedOut`.
  public static func contents(
    of path: FilePath, dashIsStandardInput: Bool = false, accepting: Accepting, limit: Int,
    timeout: Duration? = nil
  ) async throws(InputError) -> [UInt8] {
    let cancellation = Cancellation()
    let wait = Wait.within(timeout, cancellation: cancellation)
    // On the blocking executor, not a Dispatch global queue: on Linux those queues are the
    // cooperative pool's own threads, so a FIFO's wait there would hold one of them.
    let result: Result<[UInt8], InputError> = await withTaskCancellationHandler {
      await BlockingExecutor.shared.run { _ in
        Result { () throws(InputError) -> [UInt8] in
          let input =
            dashIsStandardInput && path == "-"
            ? try BoundedInput(descriptor: 0, accepting: accepting, wait: wait)
            : try BoundedInput(path: path, accepting: accepting, wait: wait)
          return try input.readToEnd(limit: limit)
        }
      }
    } onCancel: {
      cancellation.cancel()
    }
    return try result.get()
  }

  /// The synchronous form, for a caller that may block (it waits on this thread): a regular-file-only
  /// input never waits, so the state file is read this way.
  public static func contents(
    of path: FilePath, accepting: Accepting, limit: Int, wait: Wait = .unbounded
  ) throws(InputError) -> [UInt8] {
    try BoundedInput(path: path, accepting: accepting, wait: wait).readToEnd(limit: limit)
  }
}
