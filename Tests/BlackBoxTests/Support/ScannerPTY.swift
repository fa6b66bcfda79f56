// A pseudo-terminal playing a serial scanner: capture opens the slave side as it would /dev/rfcommN
// (SerialTests) or remembers it with connect (StateTests).

import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The master side of a pty. posix_openpt and friends are declared by glibc only under _XOPEN_SOURCE,
/// which Swift's Glibc module does not set, so they are looked up at run time.
final class ScannerPTY: @unchecked Sendable {
  typealias OpenPT = @convention(c) (Int32) -> Int32
  typealias OnMaster = @convention(c) (Int32) -> Int32
  typealias NameOf = @convention(c) (Int32, UnsafeMutablePointer<CChar>, Int) -> Int32

  private static func function<F>(_ name: String, _ type: F.Type) throws -> F {
    guard let address = dlsym(nil, name) else { throw HarnessError(description: "no \(name) in libc") }
    return unsafeBitCast(address, to: type)
  }

  let master: Int32
  let slavePath: String

  init() throws {
    let openpt = try Self.function("posix_openpt", OpenPT.self)
    let grant = try Self.function("grantpt", OnMaster.self)
    let unlock = try Self.function("unlockpt", OnMaster.self)
    let name = try Self.function("ptsname_r", NameOf.self)
    master = openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)
    guard master >= 0 else { throw HarnessError(description: "posix_openpt: \(errno)") }
    var buffer = [CChar](repeating: 0, count: 128)
    guard grant(master) == 0, unlock(master) == 0, name(master, &buffer, buffer.count) == 0 else {
      close(master)
      throw HarnessError(description: "grantpt/unlockpt/ptsname_r: \(errno)")
    }
    slavePath = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  deinit { close(master) }

  func write(_ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
      let n = bytes[offset...].withUnsafeBytes { Glibc.write(master, $0.baseAddress, $0.count) }
      if n < 0 && errno == EINTR { continue }
      guard n > 0 else { return }
      offset += n
    }
  }

  /// Waits until another process has the slave open and has set raw mode on it (capture does both in
  /// one breath). Bytes written before would meet the tty's cooked defaults: 0x03 is VINTR and CR
  /// becomes LF, so the frame would be damaged before capture could read it. The slave's termios is
  /// read through the master (they share it), so the wait ends at the tcsetattr itself, not a guess of
  /// how long after the open it comes.
  func waitUntilOpened(seconds: Double = 30) async -> Bool {
    let deadline = Runner.monotonicSeconds() + seconds
    while Runner.monotonicSeconds() < deadline {
      if isRaw { return true }
      try? await Task.sleep(for: .milliseconds(20))
    }
    return false
  }

  /// cfmakeraw's marks: no line editing, no signal characters, no CR-to-NL translation. A fresh pty
  /// has all three on.
  private var isRaw: Bool {
    var tio = termios()
    guard tcgetattr(master, &tio) == 0 else { return false }
    return tio.c_lflag & tcflag_t(ICANON | ISIG) == 0 && tio.c_iflag & tcflag_t(ICRNL) == 0
  }
}
