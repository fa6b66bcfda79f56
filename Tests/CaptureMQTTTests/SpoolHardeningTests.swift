import CaptureCore
import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

@testable import CaptureMQTT

// The spool against a hostile or failing disk (docs/fleet.md §4): links and other users' directories,
// side files that are FIFOs, devices or huge, forged sequence numbers, a full file system.

/// Collects the warnings a spool or service gives.
final class Warnings: Sendable {
  private let lines = Mutex<[String]>([])
  var all: [String] { lines.withLock { $0 } }
  var sink: @Sendable (String) -> Void { { [self] line in lines.withLock { $0.append(line) } } }
  func count(_ fragment: String) -> Int { all.filter { $0.contains(fragment) }.count }
}

/// Runs `body` on a thread of its own and waits for it at most `seconds`: a call that blocks for
/// ever (open(2) of a FIFO) fails the test instead of hanging it. `release` runs when the deadline
/// passed, to unblock the thread (open the FIFO's other end).
func finishes(within seconds: Int, _ body: @escaping @Sendable () -> Void, release: () -> Void = {}) -> Bool {
  let done = Mutex(false)
  _ = try? ReaderThread(name: "test-finishes").start {
    body()
    done.withLock { $0 = true }
  }
  let deadline = ContinuousClock.now + .seconds(seconds)
  while !done.withLock({ $0 }) {
    if ContinuousClock.now >= deadline {
      release()
      return false
    }
    usleep(5_000)
  }
  return true
}

func writeFile(_ path: String, _ bytes: [UInt8]) {
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
  _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
  close(fd)
}

func readFile(_ path: String) -> [UInt8] {
  guard let bytes = try? SystemFile.read(path: FilePath(path)) else { return [] }
  return bytes
}

/// A spool under `dir` holding `count` durable records, closed again.
func spoolWith(_ count: Int, in dir: TemporaryDirectory, acknowledged: Bool = false) throws {
  let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 1000)
  var seqs: [UInt64] = []
  for i in 0..<count {
    seqs.append(try #require(try spool.append(topic: "t", payload: payload("c\(i)"))).seq)
  }
  try spool.flush()
  if acknowledged { for seq in seqs { spool.acknowledge(seq) } }
  try spool.shutDown()
}

@Suite struct SpoolLinkAndOwnerTests {
  @Test func aSegmentReplacedByASymlinkIsRefusedAndItsTargetLeftAlone() throws {
    let dir = TemporaryDirectory()
    try spoolWith(2, in: dir)
    // Another file stands for /etc/passwd: a link in place of the segment must never lead to it.
    let target = dir.path + "/passwd"
    let precious = Array("root:x:0:0:root:/root:/bin/bash\n".utf8)
    writeFile(target, precious)
    let segment = dir.path + "/spool/h1/0000000000000000.seg"
    unlink(segment)
    #expect(symlink(target, segment) == 0)
    do {
      _ = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100)
      Issue.record("a spool whose segment is a symbolic link was opened")
    } catch {
      #expect(error.code == .unableReadFile)
      #expect(error.message.contains("symbolic link"), "\(error.message)")
    }
    #expect(readFile(target) == precious, "the link's target was changed")
  }

  @Test func theAckedTemporaryAsASymlinkIsNotWrittenThrough() throws {
    let dir = TemporaryDirectory()
    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100)
    let record = try #require(try spool.append(topic: "t", payload: payload("x")))
    try spool.flush()
    let target = dir.path + "/passwd"
    let precious = Array("root:x:0:0:root:/root:/bin/bash\n".utf8)
    writeFile(target, precious)
    #expect(symlink(target, dir.path + "/spool/h1/acked.tmp") == 0)
    spool.acknowledge(record.seq)
    try spool.saveAcknowledgements()
    #expect(readFile(target) == precious, "the link's target was changed")
    #expect(String(decoding: readFile(dir.path + "/spool/h1/acked"), as: UTF8.self).contains("\"floor\":1"))
  }

  @Test func aSpoolDirectoryOthersCanWriteIsMadePrivateAndSaid() throws {
    let dir = TemporaryDirectory()
    try spoolWith(1, in: dir)
    #expect(chmod(dir.path + "/spool/h1", 0o777) == 0)
    #expect(chmod(dir.path + "/spool", 0o775) == 0)
    let warnings = Warnings()
    _ = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100, warn: warnings.sink)
    #expect(dir.mode("spool/h1") == 0o700 && dir.mode("spool") == 0o700)
    #expect(
      warnings.count("spool/h1 was writable by other users (mode 777); set it to 0700") == 1,
      "\(warnings.all)")
    #expect(
      warnings.count("/spool was writable by other users (mode 775); set it to 0700") == 1, "\(warnings.all)")
  }

  @Test(.enabled(if: geteuid() == 0, "chown(2) to another user needs root"))
  func aSpoolDirectoryAnotherUserOwnsIsRefused() throws {
    let dir = TemporaryDirectory()
    try spoolWith(1, in: dir)
    #expect(chown(dir.path + "/spool/h1", 65534, 65534) == 0)
    do {
      _ = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100)
      Issue.record("a spool directory of uid 65534 was used by uid 0")
    } catch {
      #expect(error.code == .fileAccessDenied)
      #expect(error.message.contains("belongs to uid 65534, not to uid 0"), "\(error.message)")
    }
  }

  @Test func theSpoolDirectoryAsASymlinkIsRefused() throws {
    let dir = TemporaryDirectory()
    try spoolWith(1, in: dir)
    #expect(rename(dir.path + "/spool/h1", dir.path + "/elsewhere") == 0)
    #expect(symlink(dir.path + "/elsewhere", dir.path + "/spool/h1") == 0)
    #expect(throws: CaptureError.self) {
      try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100)
    }
  }
}

@Suite struct SpoolSideFileTests {
  @Test func ackedAsAFIFOIsRefusedAtOnce() throws {
    let dir = TemporaryDirectory()
    try spoolWith(1, in: dir)
    let acked = dir.path + "/spool/h1/acked"
    unlink(acked)
    #expect(mkfifo(acked, 0o600) == 0)
    let result = Mutex<CaptureError?>(nil)
    let path = dir.filePath
    let finished = finishes(
      within: 20,
      {
        do throws(CaptureError) { _ = try SpoolFiles(stateDirectory: path, hostID: "h1", maximum: 100) } catch
        {
          result.withLock { $0 = error }
        }
      },
      release: {
        let fd = open(acked, O_WRONLY | O_NONBLOCK)
        if fd >= 0 { close(fd) }
      })
    #expect(finished, "opening a spool whose acked is a FIFO hung")
    let error = try #require(result.withLock { $0 })
    #expect(error.code == .unableReadFile && error.message.contains("a FIFO"), "\(error.message)")
  }

  @Test func aHugeAckedIsRefusedFromItsSize() throws {
    let dir = TemporaryDirectory()
    try spoolWith(1, in: dir)
    // Sparse: 64 MiB on paper, nothing on disk.
    let fd = open(dir.path + "/spool/h1/acked", O_WRONLY | O_TRUNC)
    #expect(ftruncate(fd, 64 << 20) == 0)
    close(fd)
    do {
      _ = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100)
      Issue.record("a 64 MiB acked was read")
    } catch {
      #expect(
        error.code == .unableReadFile && error.message.contains("larger than 2 MiB"), "\(error.message)")
    }
  }

  @Test func ackedAsALinkToDevZeroIsRefused() throws {
    let dir = TemporaryDirectory()
    try spoolWith(1, in: dir)
    let acked = dir.path + "/spool/h1/acked"
    unlink(acked)
    #expect(symlink("/dev/zero", acked) == 0)
    let result = Mutex<CaptureError?>(nil)
    let path = dir.filePath
    #expect(
      finishes(within: 20) {
        do throws(CaptureError) { _ = try SpoolFiles(stateDirectory: path, hostID: "h1", maximum: 100) } catch
        {
          result.withLock { $0 = error }
        }
      }, "opening a spool whose acked links to /dev/zero did not end")
    let error = try #require(result.withLock { $0 })
    #expect(error.message.contains("symbolic link"), "\(error.message)")
  }

  @Test func repliesAsAFIFODoesNotHangAndIsSaid() throws {
    let dir = TemporaryDirectory()
    let replies = dir.path + "/replies.json"
    #expect(mkfifo(replies, 0o600) == 0)
    let rig = CommandRig()
    let finished = finishes(
      within: 20,
      { _ = rig.service(path: FilePath(replies)) },
      release: {
        let fd = open(replies, O_WRONLY | O_NONBLOCK)
        if fd >= 0 { close(fd) }
      })
    #expect(finished, "a command service whose replies.json is a FIFO hung")
    #expect(
      rig.warnings.withLock { $0 }.contains { $0.contains("replies.json") && $0.contains("a FIFO") },
      "\(rig.warnings.withLock { $0 })")
  }

  @Test func aHugeRepliesFileIsRefusedFromItsSize() throws {
    let dir = TemporaryDirectory()
    let replies = dir.path + "/replies.json"
    let fd = open(replies, O_WRONLY | O_CREAT, 0o600)
    #expect(ftruncate(fd, 1 << 30) == 0)
    close(fd)
    let rig = CommandRig()
    _ = rig.service(path: FilePath(replies))
    #expect(
      rig.warnings.withLock { $0 }.contains { $0.contains("larger than 16 MiB") },
      "\(rig.warnings.withLock { $0 })")
  }
}

@Suite struct SpoolForgedSequenceTests {
  @Test func aSegmentNamedBeyondAnySequenceIsSkippedAndSaid() throws {
    let dir = TemporaryDirectory()
    try spoolWith(2, in: dir)
    writeFile(dir.path + "/spool/h1/7fffffffffffffff.seg", [])
    let warnings = Warnings()
    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100, warn: warnings.sink)
    #expect(warnings.count("7fffffffffffffff.seg skipped") == 1, "\(warnings.all)")
    #expect(try spool.unacknowledged(from: 0, limit: 10).map(\.seq) == [0, 1])
    #expect(try spool.append(topic: "t", payload: payload("next"))?.seq == 2)
    try spool.shutDown()
  }

  @Test func ackedWithTheLargestNextIsIgnoredAndSaid() throws {
    let dir = TemporaryDirectory()
    try spoolWith(2, in: dir)
    writeFile(
      dir.path + "/spool/h1/acked", Array(#"{"acked":[],"floor":0,"next":9223372036854775807}"#.utf8))
    let warnings = Warnings()
    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100, warn: warnings.sink)
    #expect(warnings.count("impossible sequence numbers") == 1, "\(warnings.all)")
    #expect(try spool.append(topic: "t", payload: payload("next"))?.seq == 2)
    try spool.shutDown()
  }

  @Test func aRecordWhoseSeqIsTheLargestIsSkippedNotTrappedOn() throws {
    let dir = TemporaryDirectory()
    try FileManagerless.makeSpool(dir)
    let record = SpoolFiles.encode(
      SpoolRecord(seq: UInt64(Int64.max), eventID: "h1-x-max", topic: "t", payload: Array("{}".utf8)))
    writeFile(dir.path + "/spool/h1/0000000000000000.seg", record)
    let warnings = Warnings()
    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100, warn: warnings.sink)
    #expect(warnings.count("does not belong in this segment") == 1, "\(warnings.all)")
    #expect(spool.unacknowledgedCount == 0)
    #expect(try spool.append(topic: "t", payload: payload("next"))?.seq == 0)
    try spool.shutDown()
  }

  @Test func aNextFarAheadOfUnacknowledgedRecordsIsAnErrorNotAHang() throws {
    let dir = TemporaryDirectory()
    try spoolWith(2, in: dir)
    writeFile(dir.path + "/spool/h1/acked", Array(#"{"acked":[],"floor":0,"next":4611686018427387904}"#.utf8))
    do {
      _ = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100)
      Issue.record("a spool 2^62 seqs wide was opened")
    } catch {
      #expect(error.code == .invalidFormat && error.message.contains("is damaged"), "\(error.message)")
    }
  }

  @Test func aSpoolAtTheLastSequenceNumberRefusesEventsWithAMessage() throws {
    let dir = TemporaryDirectory()
    try spoolWith(1, in: dir, acknowledged: true)
    writeFile(dir.path + "/spool/h1/acked", Array(#"{"acked":[],"floor":1,"next":4611686018427387904}"#.utf8))
    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100)
    do {
      _ = try spool.append(topic: "t", payload: payload("x"))
      Issue.record("an event was given a seq past 2^62")
    } catch {
      #expect(
        error.code == .unableWriteFile && error.message.contains("move the directory aside"),
        "\(error.message)")
    }
    try spool.shutDown()
  }

  @Test func aNextFarAheadOfAcknowledgedRecordsIsWhereTheOrderGoesOn() throws {
    let dir = TemporaryDirectory()
    try spoolWith(2, in: dir, acknowledged: true)
    writeFile(dir.path + "/spool/h1/acked", Array(#"{"acked":[],"floor":2,"next":1099511627776}"#.utf8))
    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100)
    #expect(spool.unacknowledgedCount == 0)
    #expect(try spool.append(topic: "t", payload: payload("next"))?.seq == 1 << 40)
    try spool.shutDown()
  }
}

/// Makes the spool's directories as capture would (0700), without a spool in them.
enum FileManagerless {
  static func makeSpool(_ dir: TemporaryDirectory) throws {
    _ = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 1)
  }
}

/// A tmpfs of `size` bytes mounted on a fresh directory (root only: mount(2) needs CAP_SYS_ADMIN),
/// unmounted when released. The disk-full tests make their full disk this way rather than fill a
/// shared one.
final class TinyFilesystem {
  let directory = TemporaryDirectory()
  var filePath: FilePath { directory.filePath }
  var path: String { directory.path }

  init(size: Int) throws {
    guard mount("tmpfs", directory.path, "tmpfs", 0, "size=\(size),mode=0700") == 0 else {
      throw CaptureError(Errno.current, "cannot mount a tmpfs on \(directory.path)", other: .unableOpenFile)
    }
  }

  deinit { _ = umount2(directory.path, Int32(MNT_DETACH)) }

  /// Whether this process may mount one (tried once).
  static let available: Bool = {
    guard geteuid() == 0, let trial = try? TinyFilesystem(size: 64 << 10) else { return false }
    _ = trial
    return true
  }()
}

@Suite(.serialized) struct SpoolFullDiskTests {
  /// Appends records of 8 KiB to `spool` until a flush fails, then of 1 KiB until one fails too: no
  /// page of the tmpfs is left free (a 1 KiB record needs at most one). Their seqs and the failure.
  static func fill(_ spool: SpoolFiles) throws -> (seqs: [UInt64], failure: CaptureError) {
    var seqs: [UInt64] = []
    var failure: CaptureError?
    for size in [8 << 10, 1 << 10] {
      let text = String(repeating: "z", count: size)
      failure = nil
      for _ in 0..<1000 {
        let record = try #require(try spool.append(topic: "t", payload: payload(text)))
        do throws(CaptureError) {
          try spool.flush()
          seqs.append(record.seq)
        } catch {
          failure = error
          break
        }
      }
    }
    guard let failure else { throw CaptureError(.unableWriteFile, "a 256 KiB tmpfs took 9 MiB") }
    return (seqs, failure)
  }

  @Test(.enabled(if: TinyFilesystem.available, "needs root to mount a tmpfs of 256 KiB"))
  func aFullDiskTakesCodesAgainOnceTheBrokerAcknowledgedEverything() throws {
    let disk = try TinyFilesystem(size: 256 << 10)
    let spool = try SpoolFiles(stateDirectory: disk.filePath, hostID: "h1", maximum: 100_000)
    let (seqs, failure) = try Self.fill(spool)
    #expect(failure.message.contains("No space left on device"), "\(failure.message)")
    #expect(!seqs.isEmpty)
    // The failed record was rolled back: what waits is exactly what was written.
    #expect(try spool.unacknowledged(from: 0, limit: 1000).map(\.seq) == seqs)
    // The broker acknowledges everything; the next code needs room and gets it, although no closed
    // segment could go (there is only the one being written).
    for seq in seqs { #expect(spool.acknowledge(seq)) }
    let next = try #require(
      try spool.append(topic: "t", payload: payload(String(repeating: "a", count: 2 << 10))))
    try spool.flush()
    #expect(next.seq == seqs.last! + 1, "a seq was used twice or skipped")
    #expect(try spool.unacknowledged(from: 0, limit: 10).map(\.seq) == [next.seq])
    #expect(spool.reclaimedSegments == 1)
    try spool.saveAcknowledgements()
  }

  @Test(.enabled(if: TinyFilesystem.available, "needs root to mount a tmpfs of 256 KiB"))
  func theAckedMarkerIsSavedOnAFullDiskAndARestartTakesCodes() async throws {
    let disk = try TinyFilesystem(size: 256 << 10)
    var last: UInt64 = 0
    do {
      let spool = try SpoolFiles(stateDirectory: disk.filePath, hostID: "h1", maximum: 100_000)
      let (seqs, _) = try Self.fill(spool)
      for seq in seqs { spool.acknowledge(seq) }
      // The marker's temporary file finds no room: the acknowledged segment gives way first. Its
      // pages come back once no descriptor holds it, and a child another test of this process is
      // spawning holds a copy until its exec (seen once in a loaded full run): until then the save
      // fails with the disk-full error, never another, and nothing else may stop it.
      var failures: [CaptureError] = []
      let saved = await eventually {
        do throws(CaptureError) {
          try spool.saveAcknowledgements()
          return true
        } catch {
          failures.append(error)
          return false
        }
      }
      #expect(saved, "\(failures.last.map(String.init(describing:)) ?? "")")
      #expect(failures.allSatisfy { $0.message.contains("No space left on device") }, "\(failures)")
      try spool.shutDown()
      last = seqs.last!
    }
    let spool = try SpoolFiles(stateDirectory: disk.filePath, hostID: "h1", maximum: 100_000)
    #expect(spool.unacknowledgedCount == 0)
    let next = try #require(
      try spool.append(topic: "t", payload: payload(String(repeating: "r", count: 2 << 10))))
    try spool.flush()
    #expect(next.seq == last + 1)
  }

  @Test(.enabled(if: TinyFilesystem.available, "needs root to mount a tmpfs of 256 KiB"))
  func aMarkerThatCannotBeWrittenForWantOfRoomSaysTheDiskIsFull() throws {
    let disk = try TinyFilesystem(size: 256 << 10)
    let spool = try SpoolFiles(stateDirectory: disk.filePath, hostID: "h1", maximum: 100_000)
    let (seqs, _) = try Self.fill(spool)
    for seq in seqs { spool.acknowledge(seq) }
    // Every segment held open here, as a child being spawned holds its copy of capture's descriptors
    // until exec: deleting the acknowledged one frees no page, and there is no marker yet to rewrite
    // in place. Before the fix the error was the marker's absence ("acked: No such file or
    // directory"), which names nothing the user can act on.
    let directory = disk.path + "/spool/h1"
    let held = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".seg") }
      .map { open(directory + "/" + $0, O_RDONLY | O_CLOEXEC) }
    #expect(!held.isEmpty && held.allSatisfy { $0 >= 0 })
    do throws(CaptureError) {
      try spool.saveAcknowledgements()
      Issue.record("the marker was saved with no page free")
    } catch {
      #expect(error.message.contains("No space left on device"), "\(error)")
      #expect(error.message.contains("/acked"), "\(error)")
    }
    // Once the pages are back, the next save writes it.
    for fd in held where fd >= 0 { close(fd) }
    try spool.saveAcknowledgements()
    #expect(FileManager.default.fileExists(atPath: directory + "/acked"))
    try spool.shutDown()
  }

  @Test(.enabled(if: TinyFilesystem.available, "needs root to mount a tmpfs of 256 KiB"))
  func aFullDiskIsSaidOnceAndCodesAreTakenAgainAfterThePubacks() async throws {
    let disk = try TinyFilesystem(size: 256 << 10)
    let spool = try SpoolFiles(stateDirectory: disk.filePath, hostID: "h1", maximum: 100_000)
    let link = RecordingLink()
    link.setUp(false)
    let warnings = Warnings()
    let publisher = Publisher(spool: spool, link: link, warn: warnings.sink)
    try publisher.start()
    let big = String(repeating: "q", count: 8 << 10)
    var spooled = 0
    var refused: [CaptureError] = []
    while refused.count < 5 {
      switch await publisher.append(
        topic: "t", waitUntilDurable: true, payload: { id in Array("\(id) \(big)".utf8) })
      {
      case .spooled: spooled += 1
      case .refused(let error): refused.append(error)
      case .queued: Issue.record("queued while waiting until durable")
      }
      #expect(spooled < 1000, "a 256 KiB tmpfs took 8 MiB")
      if spooled >= 1000 { return }
    }
    #expect(
      refused.allSatisfy { $0.message.contains("No space left on device") }, "\(refused.map(\.message))")
    #expect(warnings.count("No space left on device") == 1, "one warning per outage: \(warnings.all)")
    // The broker comes and acknowledges everything.
    link.setUp(true)
    publisher.linkConnected()
    #expect(await eventually { link.events.count == spooled })
    for sent in link.events { publisher.acknowledged(sent.mid) }
    #expect(await eventually { publisher.outstanding == 0 })
    // The next code finds room once the acknowledged segment's pages are free. A child another test
    // is spawning at that moment holds a copy of this process's descriptors from its fork until its
    // exec closes them (O_CLOEXEC), so the deleted segment's pages may come back a moment later: a
    // refused code is said and the next one tried, within a deadline.
    var after = await publisher.append(topic: "t", waitUntilDurable: true) { id in
      Array("\(id) \(big)".utf8)
    }
    let deadline = ContinuousClock.now + .seconds(120)
    while case .refused = after, ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(50))
      after = await publisher.append(topic: "t", waitUntilDurable: true) { id in Array("\(id) \(big)".utf8) }
    }
    guard case .spooled = after else {
      Issue.record("a code after every record was acknowledged: \(after)")
      return
    }
    #expect(warnings.count("No space left on device") == 1, "\(warnings.all)")
    #expect(warnings.count("is written again") == 1, "\(warnings.all)")
    await publisher.stop()
  }
}
