import CaptureCore

#if canImport(Glibc)
  import Glibc
#endif

/// Line settings from the `serial:` selector (`baud`, `parity`, `databits`, `stopbits`).
public struct SerialSettings: Sendable, Equatable {
  public enum Parity: String, Sendable, CaseIterable { case none, even, odd }

  public var baud: Int = 9600
  public var parity: Parity = .none
  public var stopBits: Int = 1

  public init() {}

  /// termios speeds have fixed constants (termios(3)); any other rate cannot be set portably.
  static let speeds: [Int: speed_t] = [
    1200: speed_t(B1200), 2400: speed_t(B2400), 4800: speed_t(B4800), 9600: speed_t(B9600),
    19200: speed_t(B19200), 38400: speed_t(B38400), 57600: speed_t(B57600), 115200: speed_t(B115200),
    230400: speed_t(B230400), 460800: speed_t(B460800), 921600: speed_t(B921600),
  ]

  /// Reads the selector's query parameters; anything out of range is a usage error (18), found before
  /// the device is touched.
  public init(parameters: [String: String]) throws(CaptureError) {
    if let text = parameters["baud"] {
      guard let baud = Int(text), Self.speeds[baud] != nil else {
        let known = Self.speeds.keys.sorted().map(String.init).joined(separator: ", ")
        throw .invalidParameter("unsupported baud rate '\(text)' (use one of \(known))")
      }
      self.baud = baud
    }
    if let text = parameters["parity"] {
      guard let parity = Parity(rawValue: text.lowercased()) else {
        throw .invalidParameter("parity must be none, even or odd, not '\(text)'")
      }
      self.parity = parity
    }
    if let text = parameters["databits"], text != "8" {
      throw .invalidParameter("only 8 data bits are supported, not '\(text)'")
    }
    if let text = parameters["stopbits"] {
      guard let bits = Int(text), bits == 1 || bits == 2 else {
        throw .invalidParameter("stopbits must be 1 or 2, not '\(text)'")
      }
      self.stopBits = bits
    }
  }
}

/// An open tty in raw mode. Owns its descriptor and nothing else (docs/architecture.md §2 transports).
/// Not thread-safe: one reader owns it.
final class SerialPort {
  enum ReadResult: Equatable {
    case data([UInt8])
    /// Nothing arrived within the poll timeout.
    case idle
    /// The device is gone: HUP/ERR from poll, end of file, or EIO (a pty whose master closed, a USB
    /// adapter pulled out).
    case unplugged
  }

  let path: String
  private var fd: Int32

  /// Opens `path` without becoming its controlling terminal (O_NOCTTY) and without blocking on
  /// carrier detect (O_NONBLOCK), then sets raw 8-bit mode at the requested speed and parity.
  init(path: String, settings: SerialSettings) throws(CaptureError) {
    self.path = path
    do throws(Errno) {
      fd = try Errno.retryingInterrupts { open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC) }
    } catch {
      throw Self.captureError(error, path: path)
    }
    do throws(Errno) {
      try Self.configure(fd, settings)
    } catch {
      Glibc.close(fd)
      if error.code == ENOTTY {
        throw CaptureError(.communicationError, "\(path) is not a serial device (not a tty)")
      }
      throw Self.captureError(error, path: path)
    }
  }

  deinit { if fd >= 0 { Glibc.close(fd) } }

  func close() {
    if fd >= 0 { Glibc.close(fd) }
    fd = -1
  }

  static func configure(_ fd: Int32, _ settings: SerialSettings) throws(Errno) {
    var tio = termios()
    _ = try Errno.retryingInterrupts { tcgetattr(fd, &tio) }
    // cfmakeraw: no echo, no line editing, no CR/NL translation, 8 bits, so frame bytes (0x02, 0x03,
    // 0x0D) arrive exactly as sent.
    cfmakeraw(&tio)
    tio.c_cflag |= tcflag_t(CLOCAL | CREAD)
    tio.c_cflag &= ~tcflag_t(CSIZE | PARENB | PARODD | CSTOPB)
    tio.c_cflag |= tcflag_t(CS8)
    switch settings.parity {
    case .none: break
    case .even: tio.c_cflag |= tcflag_t(PARENB)
    case .odd: tio.c_cflag |= tcflag_t(PARENB | PARODD)
    }
    if settings.stopBits == 2 { tio.c_cflag |= tcflag_t(CSTOPB) }
    // VMIN 1, VTIME 0: with O_NONBLOCK a read with nothing queued fails with EAGAIN, so a read of 0
    // bytes means end of file (a hangup), never "no data yet" as it would with VMIN 0 (termios(3)).
    // poll(2) does the waiting.
    tio.c_cc.6 = 1  // VMIN
    tio.c_cc.5 = 0  // VTIME
    let speed = SerialSettings.speeds[settings.baud] ?? speed_t(B9600)
    _ = try Errno.retryingInterrupts { cfsetispeed(&tio, speed) }
    _ = try Errno.retryingInterrupts { cfsetospeed(&tio, speed) }
    _ = try Errno.retryingInterrupts { tcsetattr(fd, TCSANOW, &tio) }
  }

  /// Waits up to `timeoutMilliseconds` for bytes. A short timeout keeps the reader loop responsive to
  /// close() (the cancellable-read pattern of SystemFile.readAll).
  func read(timeoutMilliseconds: Int32) throws(CaptureError) -> ReadResult {
    guard fd >= 0 else { return .unplugged }
    var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    let ready: Int32
    do throws(Errno) {
      ready = try Errno.retryingInterrupts { poll(&pfd, 1, timeoutMilliseconds) }
    } catch {
      throw Self.captureError(error, path: path)
    }
    if ready == 0 { return .idle }
    // Data first: bytes queued before a hangup are still delivered.
    var buffer = [UInt8](repeating: 0, count: 4096)
    let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
    if n > 0 { return .data(Array(buffer[0..<n])) }
    if n == 0 { return .unplugged }
    switch errno {
    case EINTR, EAGAIN:
      return pfd.revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 ? .unplugged : .idle
    case EIO, ENXIO, ENODEV:
      return .unplugged
    default:
      throw Self.captureError(.current, path: path)
    }
  }

  /// Writes every byte (DMCC commands to a DataMan on a serial line), waiting in poll while the tty's
  /// output buffer is full; EINTR retried.
  func write(_ bytes: [UInt8]) throws(CaptureError) {
    guard fd >= 0 else { throw CaptureError(.communicationError, "serial device \(path) is closed") }
    var offset = 0
    while offset < bytes.count {
      let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
      if n < 0 {
        if errno == EINTR { continue }
        if errno == EAGAIN {
          var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
          _ = poll(&pfd, 1, 100)
          continue
        }
        throw Self.captureError(.current, path: path)
      }
      offset += n
    }
  }

  /// The one errno → SKT mapping for serial devices.
  static func captureError(_ error: Errno, path: String) -> CaptureError {
    switch error.code {
    case ENOENT, ENOTDIR: CaptureError(.fileNotFound, "serial device \(path) not found")
    case EACCES, EPERM:
      HostExplanation.nodeDenied(path, kind: .serial, context: "serial device \(path)")
        ?? CaptureError(.fileAccessDenied, "serial device \(path): permission denied")
    case EBUSY: CaptureError(.notAvailable, "serial device \(path) is busy (in use by another program)")
    default: CaptureError(.communicationError, "serial device \(path): \(error.message)")
    }
  }
}
