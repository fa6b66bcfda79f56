import Synchronization
import TestSupport
import Testing

@testable import CaptureCore

#if canImport(Glibc)
  import Glibc
#endif

// The state directory as a PrivateDirectory (docs/architecture.md §2 State, CHANGELOG.md Security): no
// link is followed, and a directory other users can write or own is repaired or refused.

private func put(_ path: String, _ text: String) {
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
  _ = Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
  close(fd)
}

private func contents(_ path: String) -> String? {
  guard let bytes = try? SystemFile.read(path: FilePath(path)) else { return nil }
  return String(decoding: bytes, as: UTF8.self)
}

private func mode(_ path: String) -> mode_t {
  var info = stat()
  return stat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
}

@Suite struct StateDirectoryTests {
  @Test func aStateFileThatIsASymbolicLinkIsRefusedNotRead() throws {
    let temporary = TemporaryDirectory()
    let root = temporary.path
    let store = StateStore(directory: root + "/capture")
    try store.remember(
      RememberedDevice(
        id: "serial:/dev/ttyUSB0", alias: nil, name: "S", type: 0, transport: "serial", lastSeen: nil))
    let elsewhere = root + "/elsewhere.json"
    put(elsewhere, #"{"schemaVersion":1,"favorite":"*"}"#)
    unlink(store.path)
    #expect(symlink(elsewhere, store.path) == 0)
    do {
      _ = try store.load()
      Issue.record("a state file that is a symbolic link was read")
    } catch {
      #expect(error.code == .unableReadFile && error.message.contains("symbolic link"), "\(error.message)")
    }
  }

  @Test func theLockFileAsASymbolicLinkIsNotFollowed() throws {
    let temporary = TemporaryDirectory()
    let root = temporary.path
    let store = StateStore(directory: root + "/capture")
    #expect(mkdir(root + "/capture", 0o700) == 0)
    // A link to a file that does not exist yet: following it would create the file.
    let target = root + "/created-through-the-link"
    #expect(symlink(target, root + "/capture/devices.lock") == 0)
    #expect(throws: CaptureError.self) { try store.update { $0.favorite = "*" } }
    #expect(access(target, F_OK) != 0, "the lock's link was followed and its target created")
  }

  @Test func aStateDirectoryOthersCanWriteIsMadePrivateAndSaid() throws {
    let temporary = TemporaryDirectory()
    let root = temporary.path
    let said = Mutex<[String]>([])
    let store = StateStore(directory: root + "/capture", warn: { line in said.withLock { $0.append(line) } })
    try store.update { $0.favorite = "*" }
    #expect(chmod(root + "/capture", 0o777) == 0)
    #expect(try store.load().favorite == "*")
    #expect(mode(root + "/capture") == 0o700)
    #expect(
      said.withLock { $0 } == ["\(root)/capture was writable by other users (mode 777); set it to 0700"],
      "\(said.withLock { $0 })")
  }

  @Test(.enabled(if: geteuid() == 0, "chown(2) to another user needs root"))
  func aStateDirectoryAnotherUserOwnsIsRefused() throws {
    let temporary = TemporaryDirectory()
    let root = temporary.path
    let store = StateStore(directory: root + "/capture")
    try store.update { $0.favorite = "*" }
    #expect(chown(root + "/capture", 65534, 65534) == 0)
    for operation in [{ _ = try store.load() }, { try store.update { $0.favorite = "" } }]
      as [() throws -> Void]
    {
      do {
        try operation()
        Issue.record("a state directory of uid 65534 was used by uid 0")
      } catch let error as CaptureError {
        #expect(
          error.code == .fileAccessDenied && error.message.contains("belongs to uid 65534"),
          "\(error.message)")
      }
    }
    #expect(contents(root + "/capture/devices.json")?.contains("\"favorite\" : \"*\"") == true)
  }

  @Test func theStateDirectoryAsASymbolicLinkIsRefused() throws {
    let temporary = TemporaryDirectory()
    let root = temporary.path
    #expect(mkdir(root + "/real", 0o700) == 0)
    #expect(symlink(root + "/real", root + "/capture") == 0)
    let store = StateStore(directory: root + "/capture")
    do {
      try store.update { $0.favorite = "*" }
      Issue.record("a state directory that is a symbolic link was written")
    } catch {
      #expect(error.code == .fileAccessDenied && error.message.contains("symbolic link"), "\(error.message)")
    }
    #expect(access(root + "/real/devices.json", F_OK) != 0)
  }
}
