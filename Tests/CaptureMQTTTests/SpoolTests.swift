import CaptureCore
import Glibc
import TestSupport
import Testing

@testable import CaptureMQTT

extension TemporaryDirectory {
  func files(_ sub: String) -> [String] {
    guard let dir = opendir(path + "/" + sub) else { return [] }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) {
        String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
      }
      if name != "." && name != ".." { names.append(name) }
    }
    return names.sorted()
  }

  func size(_ sub: String) -> Int {
    var info = stat()
    return stat(path + "/" + sub, &info) == 0 ? Int(info.st_size) : -1
  }

  func mode(_ sub: String) -> mode_t {
    var info = stat()
    return stat(path + "/" + sub, &info) == 0 ? info.st_mode & 0o777 : 0
  }
}

func payload(_ text: String) -> (String) -> [UInt8] {
  { id in Array("{\"id\":\"\(id)\",\"t\":\"\(text)\"}".utf8) }
}

@Suite struct SpoolFilesTests {
  @Test func appendFlushAcknowledgeInOrder() throws {
    let dir = TemporaryDirectory()
    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100)
    var records: [SpoolRecord] = []
    for i in 0..<5 {
      records.append(try #require(try spool.append(topic: "t/\(i)", payload: payload("c\(i)"))))
    }
    #expect(records.map(\.seq) == [0, 1, 2, 3, 4])
    // Not durable yet: nothing to publish before the fsync.
    #expect(try spool.unacknowledged(from: 0, limit: 10).isEmpty)
    try spool.flush()
    #expect(spool.fsyncCount == 1)
    #expect(try spool.unacknowledged(from: 0, limit: 10) == records)
    #expect(spool.acknowledge(1))
    #expect(!spool.acknowledge(1))
    #expect(spool.floor == 0)
    #expect(spool.acknowledge(0))
    #expect(spool.floor == 2)
    #expect(try spool.unacknowledged(from: 0, limit: 10).map(\.seq) == [2, 3, 4])
    #expect(try spool.unacknowledged(from: 4, limit: 10).map(\.seq) == [4])
    #expect(spool.unacknowledgedCount == 3)
    #expect(records[3].eventID.hasPrefix("h1-") && records[3].eventID.hasSuffix("-3"))
  }

  @Test func filesArePrivate() throws {
    let dir = TemporaryDirectory()
    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100)
    _ = try spool.append(topic: "t", payload: payload("x"))
    try spool.shutDown()
    #expect(dir.mode("spool") == 0o700 && dir.mode("spool/h1") == 0o700)
    #expect(dir.mode("spool/h1/0000000000000000.seg") == 0o600)
    #expect(dir.mode("spool/h1/acked") == 0o600)
  }

  @Test func oneFsyncForABurst() throws {
    let dir = TemporaryDirectory()
    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 10_000)
    for i in 0..<1000 { _ = try spool.append(topic: "t", payload: payload("c\(i)")) }
    try spool.flush()
    #expect(spool.fsyncCount == 1)
    try spool.flush()
    #expect(spool.fsyncCount == 1, "nothing new, no fsync")
  }

  @Test func eventIDsAndUnacknowledgedRecordsSurviveAReopen() throws {
    let dir = TemporaryDirectory()
    var before: [SpoolRecord] = []
    do {
      let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100)
      for i in 0..<4 {
        before.append(try #require(try spool.append(topic: "t/\(i)", payload: payload("c\(i)"))))
      }
      try spool.flush()
      spool.acknowledge(0)
      spool.acknowledge(2)
      try spool.saveAcknowledgements()
    }
    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100)
    #expect(try spool.unacknowledged(from: 0, limit: 10) == [before[1], before[3]])
    #expect(spool.unacknowledgedCount == 2)
    // New records continue the order, with ids of their own.
    let next = try #require(try spool.append(topic: "t/4", payload: payload("c4")))
    #expect(next.seq == 4)
    #expect(!before.map(\.eventID).contains(next.eventID))
  }

  @Test func aTornLastRecordIsCutNotMisread() throws {
    let dir = TemporaryDirectory()
    var kept: [SpoolRecord] = []
    do {
      let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100)
      for i in 0..<3 { kept.append(try #require(try spool.append(topic: "t", payload: payload("c\(i)")))) }
      try spool.flush()
    }
    let segment = dir.path + "/spool/h1/0000000000000000.seg"
    let whole = dir.size("spool/h1/0000000000000000.seg")
    // A kill -9 mid-write: half of a fourth record.
    let torn = SpoolFiles.encode(
      SpoolRecord(seq: 3, eventID: "h1-x-3", topic: "t", payload: Array("{\"t\":\"c3\"}".utf8)))
    let fd = open(segment, O_WRONLY | O_APPEND)
    _ = torn.prefix(torn.count / 2).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    #expect(dir.size("spool/h1/0000000000000000.seg") == whole + torn.count / 2)

    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100)
    #expect(spool.cutOnOpen == 1)
    #expect(dir.size("spool/h1/0000000000000000.seg") == whole)
    #expect(try spool.unacknowledged(from: 0, limit: 10) == kept)
    let next = try #require(try spool.append(topic: "t", payload: payload("c3")))
    try spool.flush()
    #expect(next.seq == 3)
    #expect(try spool.unacknowledged(from: 0, limit: 10).map(\.seq) == [0, 1, 2, 3])
  }

  @Test func aDamagedRecordFailsItsChecksum() throws {
    let dir = TemporaryDirectory()
    do {
      let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100)
      for i in 0..<3 { _ = try spool.append(topic: "t", payload: payload("c\(i)")) }
      try spool.flush()
    }
    // One flipped byte in the last record's payload.
    let segment = dir.path + "/spool/h1/0000000000000000.seg"
    let size = dir.size("spool/h1/0000000000000000.seg")
    let fd = open(segment, O_RDWR)
    var byte: UInt8 = 0
    _ = pread(fd, &byte, 1, off_t(size - 3))
    byte ^= 0xFF
    _ = pwrite(fd, &byte, 1, off_t(size - 3))
    close(fd)
    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100)
    #expect(try spool.unacknowledged(from: 0, limit: 10).map(\.seq) == [0, 1])
  }

  @Test func aFullSpoolRefusesNewAndKeepsOld() throws {
    let dir = TemporaryDirectory()
    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 3)
    for i in 0..<3 { #expect(try spool.append(topic: "t", payload: payload("c\(i)")) != nil) }
    #expect(try spool.append(topic: "t", payload: payload("c3")) == nil)
    try spool.flush()
    #expect(try spool.unacknowledged(from: 0, limit: 10).map(\.seq) == [0, 1, 2])
    spool.acknowledge(0)
    #expect(try spool.append(topic: "t", payload: payload("c4"))?.seq == 3)
  }

  @Test func acknowledgedSegmentsAreDeleted() throws {
    let dir = TemporaryDirectory()
    let big = String(repeating: "x", count: 64 << 10)
    do {
      let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100_000)
      var seqs: [UInt64] = []
      for _ in 0..<80 { seqs.append(try #require(try spool.append(topic: "t", payload: payload(big))).seq) }
      try spool.flush()
      let segments = dir.files("spool/h1").filter { $0.hasSuffix(".seg") }
      // 4 MiB segments: 80 records of 64 KiB fill one and start a second.
      #expect(segments.count == 2)
      for seq in seqs { spool.acknowledge(seq) }
      try spool.saveAcknowledgements()
      #expect(dir.files("spool/h1").filter { $0.hasSuffix(".seg") } == [segments[1]])
      try spool.shutDown()
    }
    // Reopened: nothing waits, and the order goes on where it was (a seq is never reused).
    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100_000)
    #expect(spool.unacknowledgedCount == 0)
    #expect(try spool.append(topic: "t", payload: payload("next"))?.seq == 80)
  }

  @Test func recordsAcrossSegmentsReadBackAfterAReopen() throws {
    let dir = TemporaryDirectory()
    let big = String(repeating: "y", count: 64 << 10)
    var written: [SpoolRecord] = []
    do {
      let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100_000)
      for i in 0..<80 {
        written.append(try #require(try spool.append(topic: "t/\(i)", payload: payload(big))))
      }
      try spool.flush()
      spool.acknowledge(0)
      try spool.shutDown()
    }
    #expect(dir.files("spool/h1").filter { $0.hasSuffix(".seg") }.count == 2)
    let spool = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 100_000)
    let back = try spool.unacknowledged(from: 0, limit: 1000)
    #expect(back == Array(written[1...]))
  }

  @Test func aSecondOpenOfTheSameSpoolIsRefused() throws {
    let dir = TemporaryDirectory()
    let first = try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 10)
    #expect(throws: CaptureError.self) {
      try SpoolFiles(stateDirectory: dir.filePath, hostID: "h1", maximum: 10)
    }
    _ = first
  }
}

/// The record checksum and header: the eight-bytes-a-step CRC-32 is the one the spool always used, and the header
/// written without a dictionary is the bytes JSON.write makes of the same object.
@Suite struct SpoolRecordBytesTests {
  @Test("CRC-32 is the ISO-HDLC check value: \"123456789\" → CBF43926, empty → 0, a slice as its array")
  func crcCheckValue() {
    #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
    #expect(CRC32.checksum([UInt8]()) == 0)
    let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    #expect(CRC32.checksum(bytes[100..<900]) == CRC32.checksum(Array(bytes[100..<900])))
    // Every byte value once (the value zlib.crc32 gives in Python for bytes(range(256))).
    #expect(CRC32.checksum((0...255).map { UInt8($0) }) == 0x2905_8C73)
  }

  @Test("the record header is JSON.write's object {eventId, seq, topic}, escapes included")
  func headerIsTheJSONObject() {
    for (eventID, topic, seq) in [
      ("h1-x-0", "acme/h1/events/socketcam/decodedData", UInt64(0)),
      ("h\"\\-é-\u{2028}", "a/serial:%2Fdev%2Fpts%2F3?framing=line/\u{1}", UInt64(1) << 61),
    ] {
      let bytes = SpoolFiles.encode(
        SpoolRecord(seq: seq, eventID: eventID, topic: topic, payload: Array("{}".utf8)))
      let body = Array(bytes[SpoolFrame.headerSize...])
      let header = JSON.object([
        "eventId": .string(eventID), "seq": .number(Int64(seq)), "topic": .string(topic),
      ]).serialized
      #expect(body == Array((header + "\n{}").utf8))
    }
  }
}
