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

  /// Waits until another process has the slave open (capture opened it and, in the same breath, set
  /// raw mode). Bytes written before would meet the tty's cooked defaults: 0x03 is VINTR and CR becomes
  /// LF, so the frame would be damaged before capture could read it.
  func waitUntilOpened(seconds: Double = 15) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    let mine = String(getpid())
    while Date() < deadline {
      let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
      for pid in processes where pid != mine && pid.allSatisfy(\.isNumber) {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        for fd in fds
        where (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"))
          == slavePath
        {
          // open() and tcsetattr() are consecutive calls; give the second one a moment.
          try? await Task.sleep(for: .milliseconds(200))
          return true
        }
      }
      try? await Task.sleep(for: .milliseconds(50))
    }
    return false
  }
}
