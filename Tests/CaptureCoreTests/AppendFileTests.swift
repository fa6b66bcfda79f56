// AppendFile: listen --output's log file — appends with O_APPEND, follows its path across rotation,
// reports every failure with the SKT code the errno maps to.

import TestSupport
import Testing

@testable import CaptureCore

#if canImport(Glibc)
  import Glibc
#endif

private func contents(_ path: String) -> String? {
  (try? SystemFile.read(path: path)).flatMap { $0 }.map { String(decoding: $0, as: UTF8.self) }
}

private func line(_ text: String) -> [UInt8] { Array((text + "\n").utf8) }

@Suite("AppendFile (listen --output)")
struct AppendFileTests {
  @Test("creates the file 0600, appends to what is there, never truncates")
  func createsAndAppends() throws {
    let temporary = TemporaryDirectory()
    let path = temporary.path + "/events.log"
    try AppendFile(path: FilePath(path)).append(line("one"))
    var info = stat()
    #expect(stat(path, &info) == 0)
    #expect(info.st_mode & 0o777 == 0o600)
    let again = try AppendFile(path: FilePath(path))
    try again.append(line("two"))
    try again.append(line("three"))
    #expect(contents(path) == "one\ntwo\nthree\n")
  }

  @Test("an existing file keeps its own mode")
  func keepsExistingMode() throws {
    let temporary = TemporaryDirectory()
    let path = temporary.path + "/events.log"
    let fd = open(path, O_WRONLY | O_CREAT, 0o644)
    fchmod(fd, 0o644)
    close(fd)
    try AppendFile(path: FilePath(path)).append(line("x"))
    var info = stat()
    #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o644)
  }

  @Test("renamed away (logrotate nocreate): the next line creates a new file at the path")
  func followsRename() throws {
    let temporary = TemporaryDirectory()
    let dir = temporary.path
    let file = try AppendFile(path: FilePath(dir + "/events.log"))
    try file.append(line("1"))
    try file.append(line("2"))
    #expect(rename(dir + "/events.log", dir + "/events.log.1") == 0)
    try file.append(line("3"))
    #expect(contents(dir + "/events.log.1") == "1\n2\n")
    #expect(contents(dir + "/events.log") == "3\n")
  }

  @Test("renamed and replaced (logrotate create): the next line goes to the new file")
  func followsReplacement() throws {
    let temporary = TemporaryDirectory()
    let dir = temporary.path
    let file = try AppendFile(path: FilePath(dir + "/events.log"))
    try file.append(line("1"))
    #expect(rename(dir + "/events.log", dir + "/events.log.1") == 0)
    let fd = open(dir + "/events.log", O_WRONLY | O_CREAT | O_EXCL, 0o640)
    #expect(fd >= 0)
    close(fd)
    try file.append(line("2"))
    #expect(contents(dir + "/events.log.1") == "1\n")
    #expect(contents(dir + "/events.log") == "2\n")
  }

  @Test("removed: the next line creates the file again")
  func followsRemoval() throws {
    let temporary = TemporaryDirectory()
    let dir = temporary.path
    let file = try AppendFile(path: FilePath(dir + "/events.log"))
    try file.append(line("1"))
    #expect(unlink(dir + "/events.log") == 0)
    try file.append(line("2"))
    #expect(contents(dir + "/events.log") == "2\n")
  }

  @Test("copytruncate: after the file is cut to 0 the next line starts at offset 0, no NUL hole")
  func copyTruncate() throws {
    let temporary = TemporaryDirectory()
    let path = temporary.path + "/events.log"
    let file = try AppendFile(path: FilePath(path))
    try file.append(line("before one"))
    try file.append(line("before two"))
    #expect(truncate(path, 0) == 0)
    try file.append(line("after"))
    #expect(contents(path) == "after\n")
  }

  @Test("a missing directory is FILENOTFOUND (-63), with the path and the reason")
  func missingDirectory() throws {
    let temporary = TemporaryDirectory()
    let path = temporary.path + "/no/such/dir/events.log"
    #expect(throws: CaptureError(.fileNotFound, "cannot open \(path): No such file or directory")) {
      try AppendFile(path: FilePath(path))
    }
  }

  @Test("a place where no file may be created is FILEACCESSDENIED (-64)")
  func accessDenied() throws {
    // sysfs refuses to create files even for root, so this holds for every user.
    #expect(throws: CaptureError(.fileAccessDenied, "cannot open /sys/capture-events.log: Permission denied"))
    {
      try AppendFile(path: FilePath("/sys/capture-events.log"))
    }
  }

  @Test("a full disk is UNABLEWRITEFILE (-33), reported on the write, never dropped")
  func fullDisk() throws {
    // /dev/full: every write fails with ENOSPC.
    let file = try AppendFile(path: FilePath("/dev/full"))
    #expect(throws: CaptureError(.unableWriteFile, "cannot write /dev/full: No space left on device")) {
      try file.append(line("lost"))
    }
  }

  @Test("the directory itself removed after the start: the reopen fails with FILENOTFOUND")
  func directoryGone() throws {
    let temporary = TemporaryDirectory()
    let dir = temporary.path + "/logs"
    #expect(mkdir(dir, 0o700) == 0)
    let file = try AppendFile(path: FilePath(dir + "/events.log"))
    try file.append(line("1"))
    #expect(unlink(dir + "/events.log") == 0 && rmdir(dir) == 0)
    #expect(
      throws: CaptureError(
        .fileNotFound, "cannot reopen \(dir)/events.log after rotation: No such file or directory")
    ) {
      try file.append(line("2"))
    }
  }
}
