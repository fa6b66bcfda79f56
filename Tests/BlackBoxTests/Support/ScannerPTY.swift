// A pseudo-terminal playing a serial scanner: capture opens the slave side as it would /dev/rfcommN
// (SerialTests) or remembers it with connect (StateTests).

import Foundation
import Simulators

#if canImport(Glibc)
  import Glibc
#endif

/// The master side of a pty (Simulators' FreePTY: a number no other process holds or names).
final class ScannerPTY: @unchecked Sendable {
  let master: Int32
  let slavePath: String

  init() throws {
    (master, slavePath) = try FreePTY.open()
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
  func waitUntilOpened(seconds: Double = 120) async -> Bool {
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
