import CaptureCore

#if canImport(Glibc)
  import Glibc
#endif

/// A fresh directory for one test: made by mkdtemp(3) (so mode 0700 and a name no other test shares)
/// under $TMPDIR, else /tmp, and removed with everything in it when the last reference goes.
public final class TemporaryDirectory: Sendable {
  public let path: String

  /// `prefix` names the directory's owner in a listing of /tmp (`capture-PREFIX.XXXXXX`).
  public init(_ prefix: String = "tests") {
    let parent = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    var template = Array("\(parent)/capture-\(prefix).XXXXXX".utf8CString)
    let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    // A test without its directory cannot run at all: stop with the reason rather than limp on.
    guard let made else { fatalError("mkdtemp in \(parent): \(String(cString: strerror(errno)))") }
    path = String(cString: made)
  }

  public var filePath: FilePath { FilePath(path) }

  /// `path/name`.
  public func file(_ name: String) -> String { path + "/" + name }

  /// A state store in this directory, or in `subdirectory` of it (which the store creates when it
  /// first writes: a test of that creation passes one).
  public func stateStore(_ subdirectory: String? = nil) -> StateStore {
    StateStore(directory: subdirectory.map(file) ?? path)
  }

  // Removed without system(3): a fork while another test holds a spool's flock would hold the lock
  // for the child's lifetime and fail that test's reopen (CaptureMQTTTests).
  deinit { Self.remove(path) }

  /// Removes `path` and everything under it; symbolic links are removed, never followed (d_type).
  public static func remove(_ path: String) {
    if let dir = opendir(path) {
      while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) {
          String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name == "." || name == ".." { continue }
        let child = path + "/" + name
        if entry.pointee.d_type == UInt8(DT_DIR) { remove(child) } else { unlink(child) }
      }
      closedir(dir)
    }
    rmdir(path)
  }
}
