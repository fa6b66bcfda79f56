// BoundedInput: the reader of every path a user or an attacker controls — bounded, never waiting on
// a FIFO's open, ending a silent writer at its deadline or its cancellation.

import Dispatch
import TestSupport
import Testing

@testable import CaptureCore

#if canImport(Glibc)
  import Glibc
#endif

@Suite("BoundedInput")
struct BoundedInputTests {
  static func write(_ path: String, _ bytes: [UInt8]) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    close(fd)
  }

  @Test("a regular file: read(upTo:) gives a header, readToEnd the rest; exactly the bound is accepted")
  func regularFile() throws {
    let temporary = TemporaryDirectory()
    let path = temporary.path + "/f"
    Self.write(path, Array(0..<100))
    let input = try BoundedInput(path: FilePath(path), accepting: .regularFiles)
    #expect(input.regularFileSize == 100)
    #expect(try input.read(upTo: 8) == Array(0..<8))
    #expect(try input.readToEnd(limit: 92) == Array(8..<100))
    #expect(try BoundedInput.contents(of: FilePath(path), accepting: .regularFiles, limit: 100).count == 100)
  }

  @Test("a regular file over the bound is refused from its size; /dev/zero after the bound plus one byte")
  func bounds() throws {
    let temporary = TemporaryDirectory()
    let path = temporary.path + "/f"
    Self.write(path, [UInt8](repeating: 7, count: 101))
    #expect(throws: InputError.tooLarge(limit: 100)) {
      try BoundedInput.contents(of: FilePath(path), accepting: .regularFiles, limit: 100)
    }
    #expect(throws: InputError.tooLarge(limit: 1 << 20)) {
      try BoundedInput.contents(of: "/dev/zero", accepting: .regularFilesAndStreams, limit: 1 << 20)
    }
  }

  @Test("kinds: a FIFO or device where a regular file is wanted is refused, a directory always")
  func kinds() throws {
    let temporary = TemporaryDirectory()
    let directory = temporary.path
    #expect(mkfifo(directory + "/p", 0o600) == 0)
    #expect(throws: InputError.notRegular(kind: "a FIFO or pipe")) {
      try BoundedInput(path: FilePath(directory + "/p"), accepting: .regularFiles)
    }
    #expect(throws: InputError.notRegular(kind: "a character device")) {
      try BoundedInput(path: "/dev/null", accepting: .regularFiles)
    }
    #expect(throws: InputError.system(Errno(EISDIR))) {
      try BoundedInput(path: FilePath(directory), accepting: .regularFilesAndStreams)
    }
    #expect(throws: InputError.system(Errno(ENOENT))) {
      try BoundedInput(path: FilePath(directory + "/missing"), accepting: .regularFiles)
    }
  }

  @Test("a FIFO without a writer opens at once and ends at its deadline")
  func fifoDeadline() throws {
    let temporary = TemporaryDirectory()
    let path = temporary.path + "/p"
    #expect(mkfifo(path, 0o600) == 0)
    let start = ContinuousClock.now
    #expect(throws: InputError.timedOut) {
      try BoundedInput.contents(
        of: FilePath(path), accepting: .regularFilesAndStreams, limit: 100, wait: .within(.milliseconds(200)))
    }
    let elapsed = ContinuousClock.now - start
    #expect(elapsed >= .milliseconds(200) && elapsed < .seconds(2))
  }

  @Test("a silent writer's FIFO ends when the Cancellation fires from another thread")
  func fifoCancellation() throws {
    let temporary = TemporaryDirectory()
    let path = temporary.path + "/p"
    #expect(mkfifo(path, 0o600) == 0)
    let writer = open(path, O_RDWR | O_NONBLOCK)
    defer { close(writer) }
    let cancellation = Cancellation()
    DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { cancellation.cancel() }
    #expect(throws: InputError.cancelled) {
      try BoundedInput.contents(
        of: FilePath(path), accepting: .regularFilesAndStreams, limit: 100,
        wait: BoundedInput.Wait(cancellation: cancellation))
    }
  }

  @Test("the async form: data written later arrives; task cancellation ends a silent wait")
  func asyncContents() async throws {
    let temporary = TemporaryDirectory()
    let path = temporary.path + "/p"
    #expect(mkfifo(path, 0o600) == 0)
    // open(O_WRONLY) waits for the reader to open the FIFO: on a thread of its own, which needs no
    // pool thread to start either.
    startThread {
      usleep(100_000)
      let fd = open(path, O_WRONLY)
      _ = [UInt8]("hello".utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
      close(fd)
    }
    // The writer comes 100 ms later; the timeout is only a safety net for a loaded machine.
    let bytes = try await BoundedInput.contents(
      of: FilePath(path), accepting: .regularFilesAndStreams, limit: 100, timeout: .seconds(30))
    #expect(bytes == Array("hello".utf8))

    let task = Task {
      try await BoundedInput.contents(of: FilePath(path), accepting: .regularFilesAndStreams, limit: 100)
    }
    // Cancelled while it waits, not before it opened the FIFO: a writer's non-blocking open succeeds
    // only once a reader has it open (ENXIO before). That writer stays silent, so the read still waits.
    let writer = Number(-1)
    let opened = await eventually(until: .now + .seconds(120)) {
      let fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
      writer.value.store(Int(fd), ordering: .releasing)
      return fd >= 0
    }
    defer { close(Int32(writer.value.load(ordering: .acquiring))) }
    try #require(opened, "the read never opened the FIFO")
    task.cancel()
    await #expect(throws: InputError.cancelled) { try await task.value }
  }

  @Test("CaptureError mapping: a deadline is 42, a bound or a kind UNABLEREADFILE, a directory 64")
  func mapping() {
    #expect(CaptureError(InputError.timedOut, "x", other: .unableReadFile).code == .requestTimedOut)
    #expect(CaptureError(InputError.cancelled, "x", other: .unableReadFile).code == .cancel)
    #expect(
      CaptureError(InputError.tooLarge(limit: 8 << 20), "x", other: .unableReadFile).message
        == "x: larger than 8 MiB, the most it may hold")
    #expect(
      CaptureError(InputError.notRegular(kind: "a FIFO or pipe"), "x", other: .unableReadFile).code
        == .unableReadFile)
    #expect(
      CaptureError(InputError.system(Errno(EISDIR)), "x", other: .unableReadFile).code == .fileAccessDenied)
    #expect(
      CaptureError(InputError.system(Errno(ENAMETOOLONG)), "x", other: .unableReadFile).code == .fileNotFound)
  }
}
