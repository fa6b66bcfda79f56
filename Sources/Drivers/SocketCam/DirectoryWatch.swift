import CaptureCore
import Decoders
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// inotify(7) on the watched directories of one scan (`FrameSourceItem.watchedDirectory`). A file is
/// taken when a writer closes it (IN_CLOSE_WRITE: complete, however long the write took) or when it is
/// renamed into the directory (IN_MOVED_TO: the write-then-rename pattern); IN_CREATE is not watched,
/// so a file being written is never read half-written. The directory's own removal, move or unmount
/// (IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT, then IN_IGNORED) ends the watch of it.
final class DirectoryWatch: Sendable {
  /// IN_EXCL_UNLINK: no events for a file unlinked while it is still open elsewhere. IN_ONLYDIR: a path
  /// that is not a directory fails with ENOTDIR instead of watching a file.
  static let mask =
    UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF) | UInt32(IN_ONLYDIR)
    | UInt32(IN_EXCL_UNLINK)
  /// The size of one read: the kernel queues events (fs.inotify.max_queued_events, 16384 by default)
  /// and a read returns as many whole events as fit.
  static let readSize = 64 * 1024

  let fd: Int32
  /// Watch descriptor → the directory it names.
  let directories: [Int32: FilePath]

  private init(fd: Int32, directories: [Int32: FilePath]) {
    self.fd = fd
    self.directories = directories
  }

  deinit { close(fd) }

  /// One descriptor watching every directory: a failure to watch any of them is the scan's error
  /// (FILENOTFOUND for a missing directory, UNABLEREADFILE otherwise, naming it).
  static func arm(_ paths: [FilePath]) -> Result<DirectoryWatch, CaptureError> {
    // IN_NONBLOCK and IN_CLOEXEC are O_NONBLOCK and O_CLOEXEC (inotify_init1(2)).
    let fd = inotify_init1(O_NONBLOCK | O_CLOEXEC)
    guard fd >= 0 else {
      let failure = Errno.current
      let hint = failure.code == EMFILE ? " (fs.inotify.max_user_instances reached)" : ""
      return .failure(CaptureError(failure, "cannot watch for new images\(hint)", other: .unableReadFile))
    }
    var directories: [Int32: FilePath] = [:]
    for path in paths {
      let wd = path.withCString { inotify_add_watch(fd, $0, mask) }
      guard wd >= 0 else {
        let failure = Errno.current
        close(fd)
        let hint = failure.code == ENOSPC ? " (fs.inotify.max_user_watches reached)" : ""
        return .failure(
          CaptureError(failure, "cannot watch directory '\(path)'\(hint)", other: .unableReadFile))
      }
      directories[wd] = path
    }
    return .success(DirectoryWatch(fd: fd, directories: directories))
  }

  enum Change: Equatable {
    /// A file closed after writing, or renamed in: its name inside the directory.
    case arrived(wd: Int32, name: [UInt8])
    /// The directory itself is gone (removed, moved, unmounted) or its watch was dropped.
    case gone(wd: Int32)
    /// The kernel's queue overflowed (IN_Q_OVERFLOW): events were lost.
    case overflow
  }

  /// Waits until events are queued (true) or `stop` is cancelled (false), in poll(2) on the inotify
  /// descriptor and the cancellation's pipe; without a pipe the flag is looked at each second.
  func wait(_ stop: Cancellation) -> Result<Bool, CaptureError> {
    var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
    if stop.fd >= 0 { fds.append(pollfd(fd: stop.fd, events: Int16(POLLIN), revents: 0)) }
    let timeout: Int32 = stop.fd >= 0 ? -1 : 1000
    while !stop.isCancelled {
      let ready = poll(&fds, nfds_t(fds.count), timeout)
      if ready < 0 {
        if errno == EINTR { continue }
        return .failure(CaptureError(Errno.current, "cannot wait for new images", other: .unableReadFile))
      }
      if stop.isCancelled { return .success(false) }
      if fds[0].revents != 0 { return .success(true) }
    }
    return .success(false)
  }

  /// The events queued now, in the kernel's order (empty when none). Every length is checked against
  /// what the read returned: a short or odd buffer ends the parse, never a trap.
  func read(into buffer: inout [UInt8]) -> Result<[Change], CaptureError> {
    if buffer.count != Self.readSize { buffer = [UInt8](repeating: 0, count: Self.readSize) }
    let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
    if count < 0 {
      if errno == EAGAIN || errno == EINTR { return .success([]) }
      return .failure(CaptureError(Errno.current, "cannot read the directory watch", other: .unableReadFile))
    }
    return .success(Self.parse(buffer[..<count]))
  }

  /// struct inotify_event: wd (int32), mask, cookie, len (uint32 each), then `len` bytes of name,
  /// NUL-padded.
  static func parse(_ bytes: ArraySlice<UInt8>) -> [Change] {
    let header = 16
    var changes: [Change] = []
    bytes.withUnsafeBytes { raw in
      var offset = 0
      while raw.count - offset >= header {
        let wd = raw.loadUnaligned(fromByteOffset: offset, as: Int32.self)
        let mask = raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
        let length = Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
        guard length <= raw.count - offset - header else { break }
        let name = Array(raw[(offset + header)..<(offset + header + length)].prefix { $0 != 0 })
        offset += header + length
        if mask & UInt32(IN_Q_OVERFLOW) != 0 {
          changes.append(.overflow)
        } else if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED) != 0 {
          changes.append(.gone(wd: wd))
        } else if mask & UInt32(IN_CLOSE_WRITE | IN_MOVED_TO) != 0, !name.isEmpty {
          changes.append(.arrived(wd: wd, name: name))
        }
      }
    }
    return changes
  }
}

/// The files a watch has decoded, by identity (device, inode, size, modification time): a file renamed
/// after it was read (a non-dot temporary name renamed to its final one) or closed again without a
/// write is the same file and is not read twice; one rewritten has a new modification time and is.
/// Bounded: the oldest identities are forgotten first.
struct SeenFiles {
  struct Identity: Hashable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var seconds: Int
    var nanoseconds: Int
  }

  static let limit = 4096
  private var set: Set<Identity> = []
  private var order: [Identity] = []
  private var head = 0

  /// True when `identity` was not seen before (it is remembered now).
  mutating func insert(_ identity: Identity) -> Bool {
    guard set.insert(identity).inserted else { return false }
    order.append(identity)
    if set.count > Self.limit {
      set.remove(order[head])
      head += 1
      if head * 2 > order.count {
        order.removeFirst(head)
        head = 0
      }
    }
    return true
  }
}

/// Events of a scan leave through here: once the scan is cancelled (a stop, the device's close), no
/// event is emitted any more, even by a decode that was inside a C library at the time.
final class EmitGate: Sendable {
  private let isOpen = Mutex(true)

  func pass(_ body: () -> Void) {
    isOpen.withLock { open in if open { body() } }
  }

  func close() { isOpen.withLock { $0 = false } }
}

/// A flag a closure can set (a decoded code in the finite part of a watch scan).
final class Flag: Sendable {
  private let value = Atomic(false)
  func set() { value.store(true, ordering: .releasing) }
  var isSet: Bool { value.load(ordering: .acquiring) }
}

extension FramePass {
  var watchedDirectories: [FilePath] {
    sources.compactMap { if case .watchedDirectory(let path) = $0 { path } else { nil } }
  }

  /// A scan with watched directories. The watch is armed first, then `ready` is called (a file closed
  /// after that is read), then the other sources (images, `--dir` listings) are decoded once as in
  /// any pass, and then each new file in the order the kernel reports them, one at a time, on a
  /// `ReaderThread` (the wait is a poll(2) that must not hold a thread of the cooperative pool).
  /// It ends at the first decoded code when `untilFirstRead`, when every watched directory is gone,
  /// or on cancellation, which returns at once (a decode already inside a C library finishes on its
  /// thread and its result is dropped).
  func runWatching(ready: @escaping @Sendable () -> Void) async {
    let watch: DirectoryWatch
    switch DirectoryWatch.arm(watchedDirectories) {
    case .failure(let error):
      emit(Event(time: .now(), device: device, payload: .error(error)))
      ready()
      return
    case .success(let armed):
      watch = armed
    }
    ready()
    let finite = sources.filter { !$0.isEndless }
    if !finite.isEmpty {
      let read = Flag()
      let once = FramePass(
        sources: finite, formats: formats, addOns: addOns, device: device, warn: warn, untilFirstRead: false,
        emit: { [emit] event in
          if case .decodedData = event.payload { read.set() }
          emit(event)
        })
      await once.run()
      if Task.isCancelled || (untilFirstRead && read.isSet) { return }
    }
    let stop = Cancellation()
    let gate = EmitGate()
    let waiter = Mutex<CheckedContinuation<Void, Never>?>(nil)
    let thread = ReaderThread(name: "watch")
    await withTaskCancellationHandler {
      await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        waiter.withLock { $0 = done }
        do throws(Errno) {
          try thread.start {
            self.watchLoop(watch, stop: stop, gate: gate)
            waiter.withLock { $0.take() }?.resume()
          }
        } catch {
          emitNoThread(error, for: "the watch")
          waiter.withLock { $0.take() }?.resume()
        }
        // Cancelled before the continuation was stored: the handler found nothing to resume.
        if stop.isCancelled { waiter.withLock { $0.take() }?.resume() }
      }
    } onCancel: {
      gate.close()
      stop.cancel()
      waiter.withLock { $0.take() }?.resume()
    }
  }

  private func watchLoop(_ watch: DirectoryWatch, stop: Cancellation, gate: EmitGate) {
    let reader = BarcodeReader(formats: formats, addOns: addOns)
    var live = watch.directories
    var seen = SeenFiles()
    var buffer: [UInt8] = []
    func fail(_ error: CaptureError) {
      gate.pass { emit(Event(time: .now(), device: device, payload: .error(error))) }
    }
    while !stop.isCancelled {
      switch watch.wait(stop) {
      case .failure(let error): return fail(error)
      case .success(false): return
      case .success(true): break
      }
      let changes: [DirectoryWatch.Change]
      switch watch.read(into: &buffer) {
      case .failure(let error): return fail(error)
      case .success(let read): changes = read
      }
      for change in changes {
        if stop.isCancelled { return }
        switch change {
        case .overflow:
          let names = live.values.map { "'\($0)'" }.sorted().joined(separator: ", ")
          gate.pass {
            warn(
              "the watch of \(names) missed events (the inotify queue overflowed, see fs.inotify.max_queued_events); files written meanwhile were not read"
            )
          }
        case .gone(let wd):
          guard let path = live.removeValue(forKey: wd) else { continue }
          fail(
            CaptureError(
              .fileNotFound,
              "watched directory '\(path)' is gone (removed, moved or unmounted); it is no longer read"))
          if live.isEmpty { return }
        case .arrived(let wd, let name):
          // Dot files are skipped as --dir skips them: a writer's hidden temporary, renamed when done.
          guard let directory = live[wd], name.first != UInt8(ascii: ".") else { continue }
          let base =
            directory.bytes.last == UInt8(ascii: "/")
            ? directory.bytes : directory.bytes + [UInt8(ascii: "/")]
          let path = FilePath(bytes: base + name)
          guard let outcome = Self.arrival(path, reader, stop, &seen) else { continue }
          if stop.isCancelled { return }
          gate.pass { report(outcome) }
          if untilFirstRead, case .symbols(let symbols, _, _) = outcome, !symbols.isEmpty { return }
        }
      }
    }
  }

  /// What one arrival gives, or nil when there is nothing to say: an empty file (created by `touch` or
  /// a writer that closed before writing: it is read when it is closed again with content), one
  /// already read unchanged, or one gone before it could be read (removed, or renamed: its rename is
  /// an arrival of its own). What is not a regular file is reported as `--dir` reports it.
  static func arrival(
    _ path: FilePath, _ reader: BarcodeReader, _ stop: Cancellation, _ seen: inout SeenFiles
  ) -> Outcome? {
    var info = stat()
    let failed = path.withCString { stat($0, &info) == 0 ? 0 : errno }
    // Gone already: removed, or renamed (its IN_MOVED_TO follows and is read then).
    if failed == ENOENT { return nil }
    guard failed == 0, info.st_mode & S_IFMT == S_IFREG else {
      switch classify(path) {
      case .warning(let text): return .warning(text)
      case .failure(let error): return .failure(error)
      case .file, .standardInput: return decode(.file(path, listed: true), reader, stop)  // regular by now
      }
    }
    if info.st_size == 0 { return nil }
    let identity = SeenFiles.Identity(
      device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
      seconds: info.st_mtim.tv_sec, nanoseconds: info.st_mtim.tv_nsec)
    guard seen.insert(identity) else { return nil }
    let outcome = decode(.file(path, listed: true), reader, stop)
    if case .failure(let error) = outcome, error.code == .fileNotFound { return nil }
    return outcome
  }
}
