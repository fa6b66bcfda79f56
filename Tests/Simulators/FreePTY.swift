// Pseudo-terminals for the tests that play a serial scanner (BlackBoxTests' ScannerPTY,
// SerialTests' PseudoTerminal): the master side, on a number no other process can get in the way of.

import Foundation

#if canImport(Glibc)
  import Glibc
#endif

public struct FreePTYError: Error, CustomStringConvertible {
  public let description: String
}

/// posix_openpt and friends are declared by glibc only under _XOPEN_SOURCE, which Swift's Glibc
/// module does not set, so they are looked up at run time.
public enum FreePTY {
  typealias OpenPT = @convention(c) (Int32) -> Int32
  typealias OnMaster = @convention(c) (Int32) -> Int32
  typealias NameOf = @convention(c) (Int32, UnsafeMutablePointer<CChar>, Int) -> Int32

  private static func function<F>(_ name: String, _ type: F.Type) throws -> F {
    guard let address = dlsym(nil, name) else { throw FreePTYError(description: "no \(name) in libc") }
    return unsafeBitCast(address, to: type)
  }

  /// The master of a pty whose number no other process holds or names, and its slave's path. The
  /// kernel hands out the lowest free number, and a capture another test (or an earlier, killed run)
  /// started for a pty now closed keeps reopening its path: it would open a new pty that gets the
  /// number and read the bytes written to it. Numbers found taken are held until a free one is found,
  /// so the kernel does not hand them back, then released.
  public static func open() throws -> (master: Int32, slavePath: String) {
    var taken: [Int32] = []
    defer { for fd in taken { close(fd) } }
    for _ in 0..<64 {
      let (fd, path) = try openMaster()
      if !othersHoldOrName(path) { return (fd, path) }
      taken.append(fd)
    }
    throw FreePTYError(description: "no pseudo-terminal free of other processes in 64 tries")
  }

  private static func openMaster() throws -> (Int32, String) {
    let openpt = try function("posix_openpt", OpenPT.self)
    let grant = try function("grantpt", OnMaster.self)
    let unlock = try function("unlockpt", OnMaster.self)
    let name = try function("ptsname_r", NameOf.self)
    let master = openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)
    guard master >= 0 else {
      throw FreePTYError(description: "posix_openpt: \(String(cString: strerror(errno)))")
    }
    var buffer = [CChar](repeating: 0, count: 128)
    guard grant(master) == 0, unlock(master) == 0, name(master, &buffer, buffer.count) == 0 else {
      let reason = String(cString: strerror(errno))
      close(master)
      throw FreePTYError(description: "grantpt/unlockpt/ptsname_r: \(reason)")
    }
    return (master, String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
  }

  /// True when a process other than this one has `path` open, or names it in its command line as a
  /// whole argument or a selector's path (/dev/pts/1, not /dev/pts/12).
  static func othersHoldOrName(_ path: String) -> Bool {
    let me = String(getpid())
    let fm = FileManager.default
    let name = Array(path.utf8)
    let digits = UInt8(ascii: "0")...UInt8(ascii: "9")
    for pid in (try? fm.contentsOfDirectory(atPath: "/proc")) ?? []
    where pid.allSatisfy(\.isNumber) && pid != me {
      if let fds = try? fm.contentsOfDirectory(atPath: "/proc/\(pid)/fd"),
        fds.contains(where: { (try? fm.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) == path })
      {
        return true
      }
      guard let cmdline = fm.contents(atPath: "/proc/\(pid)/cmdline") else { continue }
      let bytes = Array(cmdline)
      var start = 0
      while let range = bytes[start...].firstRange(of: name) {
        if range.upperBound == bytes.count || !digits.contains(bytes[range.upperBound]) { return true }
        start = range.upperBound
      }
    }
    return false
  }
}
