import CaptureCore

#if canImport(Glibc)
  import Glibc
#endif

/// The system calls an evdev reader makes, behind one seam (docs/architecture.md §5.2): EVIOCGRAB,
/// EVIOCGNAME and EVIOCGID need a real input device, which tests and this machine do not have, so
/// tests substitute a fake that hands out a FIFO or socketpair descriptor and answers the ioctls.
public protocol EvdevSystem: Sendable {
  /// open(2) with O_RDONLY | O_NONBLOCK | O_CLOEXEC.
  func open(_ path: String) throws(Errno) -> Int32
  /// read(2) once; 0 is end of file.
  func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int
  /// poll(2) for POLLIN on one descriptor; returns revents (0 when the timeout ran out).
  func poll(_ fd: Int32, timeoutMilliseconds: Int32) throws(Errno) -> Int16
  /// ioctl(2) with a pointer-sized argument; returns its non-negative result.
  func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer?) throws(Errno) -> Int32
  func close(_ fd: Int32)
  /// The paths of /dev/input/event*, sorted by event number.
  func inputDevicePaths() -> [String]
  /// Whether `path` is a FIFO or a socket: a stream of scripted input_event records standing in for a
  /// scanner (tests, replays), which cannot be grabbed.
  func isStream(_ path: String) -> Bool
}

/// evdev ioctl numbers, computed as linux/input.h defines them with the _IOC macros of
/// asm-generic/ioctl.h: direction in bits 30-31 (1 write, 2 read), size in bits 16-29, type 'E' (0x45)
/// in bits 8-15, number in bits 0-7.
public enum EvdevRequest {
  static func ioc(direction: UInt, number: UInt, size: UInt) -> UInt {
    direction << 30 | size << 16 | 0x45 << 8 | number
  }
  /// EVIOCGRAB = _IOW('E', 0x90, int): a non-zero argument grabs the device for this descriptor only.
  public static let grab = ioc(direction: 1, number: 0x90, size: 4)
  /// EVIOCGID = _IOR('E', 0x02, struct input_id): four __u16, bustype, vendor, product, version.
  public static let id = ioc(direction: 2, number: 0x02, size: 8)
  /// EVIOCGNAME(len) = _IOC(_IOC_READ, 'E', 0x06, len): the device name, NUL-terminated.
  public static func name(length: Int) -> UInt { ioc(direction: 2, number: 0x06, size: UInt(length)) }
}

/// The real system calls.
public struct LinuxEvdevSystem: EvdevSystem {
  public init() {}

  public func open(_ path: String) throws(Errno) -> Int32 {
    try Errno.retryingInterrupts { Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) }
  }

  public func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
    try Errno.retryingInterrupts { Glibc.read(fd, buffer.baseAddress, buffer.count) }
  }

  public func poll(_ fd: Int32, timeoutMilliseconds: Int32) throws(Errno) -> Int16 {
    var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    let ready = try Errno.retryingInterrupts { Glibc.poll(&pfd, 1, timeoutMilliseconds) }
    return ready == 0 ? 0 : pfd.revents
  }

  public func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer?) throws(Errno) -> Int32
  {
    try Errno.retryingInterrupts {
      if let argument { Glibc.ioctl(fd, request, argument) } else { Glibc.ioctl(fd, request) }
    }
  }

  public func close(_ fd: Int32) { _ = Glibc.close(fd) }

  public func inputDevicePaths() -> [String] {
    guard let dir = opendir("/dev/input") else { return [] }
    defer { closedir(dir) }
    var numbers: [Int] = []
    while let entry = readdir(dir) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
      }
      if name.hasPrefix("event"), let n = Int(name.dropFirst(5)) { numbers.append(n) }
    }
    return numbers.sorted().map { "/dev/input/event\($0)" }
  }

  public func isStream(_ path: String) -> Bool {
    var st = stat()
    guard stat(path, &st) == 0 else { return false }
    return st.st_mode & S_IFMT == S_IFIFO || st.st_mode & S_IFMT == S_IFSOCK
  }
}

/// What `EVIOCGNAME` and `EVIOCGID` say about an input device.
public struct EvdevIdentity: Sendable, Equatable {
  public var path: String
  public var name: String
  public var vendorID: UInt16
  public var productID: UInt16

  public init(path: String, name: String, vendorID: UInt16, productID: UInt16) {
    self.path = path
    self.name = name
    self.vendorID = vendorID
    self.productID = productID
  }

  /// Names barcode scanners announce themselves with (USB product strings of the common vendors);
  /// a keyboard-wedge scanner is otherwise indistinguishable from a keyboard.
  public static let scannerWords = [
    "socket", "honeywell", "zebra", "symbol", "datalogic", "newland", "scanner", "barcode",
  ]

  /// The input devices in /dev/input (for `list --hid` and `hid:auto`), and the paths that could not be
  /// opened or identified (without membership of the 'input' group, usually all of them).
  public static func scan(system: any EvdevSystem = LinuxEvdevSystem()) -> (
    devices: [EvdevIdentity], unreadable: [String]
  ) {
    var devices: [EvdevIdentity] = []
    var unreadable: [String] = []
    for path in system.inputDevicePaths() {
      if let identity = EvdevSource.identify(path: path, system: system) {
        devices.append(identity)
      } else {
        unreadable.append(path)
      }
    }
    return (devices, unreadable)
  }

  public var isScanner: Bool {
    let lower = name.lowercased()
    return Self.scannerWords.contains { lower.contains($0) }
  }
}

/// An open evdev node (or a FIFO standing in for one), grabbed so that scans do not also reach the
/// focused window. Owns its descriptor and nothing else; not thread-safe: one reader owns it.
final class EvdevSource {
  enum ReadResult: Equatable {
    case events([InputEvent])
    /// Nothing arrived within the poll timeout.
    case idle
    /// The device is gone: ENODEV/EIO from read (the kernel's answer once an input device is
    /// unregistered), HUP/ERR from poll, or end of file (a FIFO whose writer closed).
    case unplugged
  }

  let path: String
  private let system: any EvdevSystem
  private var fd: Int32
  /// Bytes of a record cut short by a read (only a FIFO does this: evdev returns whole records).
  private var partial: [UInt8] = []
  private var buffer = [UInt8](repeating: 0, count: InputEvent.size * 64)

  init(path: String, system: any EvdevSystem, warn: (String) -> Void) throws(CaptureError) {
    self.path = path
    self.system = system
    do throws(Errno) {
      fd = try system.open(path)
    } catch {
      throw Self.captureError(error, path: path)
    }
    do throws(Errno) {
      _ = try system.ioctl(fd, EvdevRequest.grab, UnsafeMutableRawPointer(bitPattern: 1))
    } catch {
      // ENOTTY (EINVAL on some kernels) is how a FIFO or socket answers an ioctl: accepted so scripted
      // key events can stand in for a scanner, but only for those — a device node or regular file that
      // refuses EVIOCGRAB is not an input device at all.
      if (error.code == ENOTTY || error.code == EINVAL) && system.isStream(path) {
        warn("\(path) is not an evdev node: no grab possible, reading its key events as they come")
      } else {
        system.close(fd)
        if error.code == ENOTTY || error.code == EINVAL {
          throw CaptureError(.communicationError, "\(path) is not an input event device")
        }
        throw Self.captureError(error, path: path)
      }
    }
  }

  deinit { if fd >= 0 { system.close(fd) } }

  /// Closing the descriptor also releases the grab (EVIOCGRAB is per open file).
  func close() {
    if fd >= 0 { system.close(fd) }
    fd = -1
  }

  /// Waits up to `timeoutMilliseconds` for events; the short timeout keeps the reader loop responsive
  /// to close() (the cancellable-read pattern of SystemFile.readAll).
  func read(timeoutMilliseconds: Int32) throws(CaptureError) -> ReadResult {
    guard fd >= 0 else { return .unplugged }
    var revents: Int16 = 0
    let n: Int
    do throws(Errno) {
      revents = try system.poll(fd, timeoutMilliseconds: timeoutMilliseconds)
      if revents == 0 { return .idle }
      // Data first: records queued before a hangup are still delivered.
      // withUnsafeMutableBytes rethrows untyped errors: carry the Errno out in a Result.
      let system = self.system
      let fd = self.fd
      n = try buffer.withUnsafeMutableBytes { raw in
        Result { () throws(Errno) in try system.read(fd, into: raw) }
      }.get()
    } catch {
      switch error.code {
      case EAGAIN:
        return revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 ? .unplugged : .idle
      case ENODEV, EIO, ENXIO:
        return .unplugged
      default:
        throw Self.captureError(error, path: path)
      }
    }
    if n == 0 { return .unplugged }
    partial += buffer[0..<n]
    let whole = partial.count / InputEvent.size * InputEvent.size
    var events: [InputEvent] = []
    events.reserveCapacity(whole / InputEvent.size)
    partial.withUnsafeBytes { raw in
      for offset in stride(from: 0, to: whole, by: InputEvent.size) {
        events.append(InputEvent(raw, at: offset))
      }
    }
    partial.removeFirst(whole)
    return events.isEmpty ? .idle : .events(events)
  }

  /// Name and vendor/product of an input device, or nil when it cannot be opened or is not one.
  static func identify(path: String, system: any EvdevSystem) -> EvdevIdentity? {
    guard let fd = try? system.open(path) else { return nil }
    defer { system.close(fd) }
    var name = [UInt8](repeating: 0, count: 256)
    let nameLength = name.withUnsafeMutableBytes { raw in
      try? system.ioctl(fd, EvdevRequest.name(length: raw.count), raw.baseAddress)
    }
    guard nameLength != nil else { return nil }
    var id = [UInt16](repeating: 0, count: 4)
    _ = id.withUnsafeMutableBytes { raw in try? system.ioctl(fd, EvdevRequest.id, raw.baseAddress) }
    return EvdevIdentity(
      path: path, name: String(decoding: name.prefix { $0 != 0 }, as: UTF8.self), vendorID: id[1],
      productID: id[2])
  }

  /// Every input device the system shows, identified (unreadable ones are left out).
  static func identifyAll(system: any EvdevSystem) -> [EvdevIdentity] {
    EvdevIdentity.scan(system: system).devices
  }

  /// The one errno → SKT mapping for evdev devices.
  static func captureError(_ error: Errno, path: String) -> CaptureError {
    switch error.code {
    case ENOENT, ENOTDIR: CaptureError(.fileNotFound, "input device \(path) not found")
    case EACCES, EPERM:
      HostExplanation.nodeDenied(path, kind: .input, context: "input device \(path)")
        ?? CaptureError(
          .fileAccessDenied,
          "input device \(path): permission denied (add yourself to the 'input' group, or a udev rule granting access)"
        )
    case EBUSY: CaptureError(.notAvailable, "input device \(path) is grabbed by another program")
    default: CaptureError(.communicationError, "input device \(path): \(error.message)")
    }
  }
}
