import CaptureCore
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// One spooled event: what is published, and under which id (docs/fleet.md §4).
public struct SpoolRecord: Sendable, Equatable {
  /// The spool's order: publishing follows it, and it never goes back (not even across restarts).
  public var seq: UInt64
  /// `HOST-EPOCH-SEQ`: stored with the record, so a republish after a restart carries the same id.
  public var eventID: String
  public var topic: String
  public var payload: [UInt8]
}

/// The spool on disk: append-only segment files of length-prefixed records and a small file of what the
/// broker acknowledged (docs/fleet.md §4). Synchronous and owned by one thread (the publisher's): every
/// call (opening too) may block in write(2), fsync(2) or read(2), so none may run on the cooperative
/// pool.
///
/// A record is `u32 length | u32 CRC-32 | body` (little-endian, `SpoolFrame`), the body
/// `{"eventId":…,"seq":…,"topic":…}\n` and the payload bytes. On opening, each segment is read through;
/// the first record that does not fit in the file or fails its CRC (the torn tail a `kill -9` or a
/// power cut leaves mid-write) is cut off with everything after it, never misread.
///
/// Every file is opened relative to the spool directory's descriptor with O_NOFOLLOW
/// (`PrivateDirectory`), and the directories are used only when this user owns them and no one else
/// can write them: a link planted in place of a segment is refused, never written through. Every
/// number read from disk is checked before any arithmetic: a sequence number above `seqLimit` is
/// skipped (a segment, a record) or ignored (the `acked` file) with a warning, never trapped on.
public final class SpoolFiles {
  /// A segment is closed and a new one started past this size; a fully acknowledged closed segment is
  /// deleted.
  public static let segmentLimit = 4 << 20
  /// The largest record body accepted back from disk (an event payload is far smaller: decoded data is
  /// bounded by its device, undecoded data by UndecodedData.maximumBytes).
  public static let recordLimit = 1 << 20
  /// The highest sequence number the spool reaches: 2^62, more than a million events a second for
  /// 100,000 years. A larger one read from disk (a segment named `7fffffffffffffff.seg`, an `acked`
  /// with `"next": 9223372036854775807`) was not written by capture; below it, `seq + 1`, a
  /// difference of two seqs and its conversion to Int (and to the JSON's Int64) cannot overflow.
  public static let seqLimit: UInt64 = 1 << 62
  /// The widest gap between two sequence numbers recovery bridges with acknowledged placeholders (24
  /// bytes each: 24 MiB). Gaps come only from records made and rolled back or from a saved `next`
  /// ahead of the records; a wider one in front of an unacknowledged record is damage, refused.
  static let gapLimit: UInt64 = 1 << 20
  /// The most `acked` may hold: 65,536 listed seqs of at most 20 digits and their commas.
  static let ackedLimit = 2 << 20

  public let directory: FilePath
  public let hostID: String
  /// New records are refused while this many are unacknowledged.
  public let maximum: Int
  /// fsync(2) calls on segment data so far (group commit: one per `flush`, whatever it wrote).
  public private(set) var fsyncCount = 0
  /// Records cut off as torn when the spool was opened.
  public private(set) var cutOnOpen = 0
  /// Segments deleted to make room after a write found the disk full (tests).
  public private(set) var reclaimedSegments = 0

  private let files: PrivateDirectory
  private let epoch: String
  private var lockFD: Int32
  private var nextSeq: UInt64
  /// The unacknowledged records from `baseSeq` on, contiguous by seq (acknowledged ones above the
  /// first unacknowledged one stay, marked, until the floor passes them).
  private var entries: [Entry] = []
  private var head = 0
  private var baseSeq: UInt64
  private var unackedCount = 0
  /// Segments by first seq, ascending; the last is the one appended to.
  private var segments: [UInt64] = []
  private var currentFD: Int32 = -1
  private var currentSize = 0
  /// The current segment's size when its last record was made durable: a failed write or fsync cuts
  /// it back to this.
  private var durableSize = 0
  /// Bytes written to the current segment since its last fsync.
  private var currentSynced = true
  /// Bytes appended since the last flush (written at flush, one write(2)).
  private var pending: [UInt8] = []
  /// Recently appended records, so publishing them reads nothing back from disk.
  private var cache: [UInt64: SpoolRecord] = [:]
  private var cacheBytes = 0
  private var readFD: (segment: UInt64, fd: Int32)?
  private var acksDirty = false
  private let warn: @Sendable (String) -> Void

  /// One record's place: 24 bytes per unacknowledged event (its segment is found from its seq, the
  /// segments being named by their first seq), so a spool of 100,000 holds 2.4 MB of index in memory.
  private struct Entry {
    var seq: UInt64
    var offset: UInt32
    var length: UInt32
    var acked: Bool
    var durable: Bool
  }

  /// The spool of `hostID` under `stateDirectory` (`$XDG_STATE_HOME/capture`): `spool/HOSTID/`, 0700,
  /// files 0600, held with an exclusive flock so a second capture on the same host id fails at once.
  /// Each of the three directories is checked (`PrivateDirectory`): another user's is refused, one
  /// others can write is set back to 0700 with a warning.
  public convenience init(
    stateDirectory: FilePath, hostID: String, maximum: Int,
    warn: @escaping @Sendable (String) -> Void = { _ in }
  ) throws(CaptureError) {
    guard let state = try PrivateDirectory.open(stateDirectory, create: true, warn: warn),
      let spool = try state.subdirectory("spool", create: true, warn: warn),
      let host = try spool.subdirectory(hostID, create: true, warn: warn)
    else { throw CaptureError(.unableCreateDirectory, "cannot create the spool under \(stateDirectory)") }
    try self.init(files: host, hostID: hostID, maximum: maximum, warn: warn)
  }

  /// The spool in `directory` itself (made 0700 when missing).
  public convenience init(
    directory: FilePath, hostID: String, maximum: Int, warn: @escaping @Sendable (String) -> Void = { _ in }
  ) throws(CaptureError) {
    guard let files = try PrivateDirectory.open(directory, create: true, warn: warn) else {
      throw CaptureError(.unableCreateDirectory, "cannot create the spool \(directory)")
    }
    try self.init(files: files, hostID: hostID, maximum: maximum, warn: warn)
  }

  init(
    files: PrivateDirectory, hostID: String, maximum: Int, warn: @escaping @Sendable (String) -> Void
  ) throws(CaptureError) {
    self.files = files
    self.directory = files.path
    self.hostID = hostID
    self.maximum = maximum
    self.warn = warn
    let lock = files.openFile("lock", O_RDWR | O_CREAT, 0o600)
    guard lock >= 0 else {
      throw CaptureError(Errno.current, "cannot open the spool \(directory)", other: .unableOpenFile)
    }
    // A few tries over 200 ms: a capture that is just exiting (a restart), or a child being spawned
    // by this process (it holds a copy of the descriptor until its exec), lets go of it at once.
    var locked = false
    for attempt in 0..<20 {
      if flock(lock, LOCK_EX | LOCK_NB) == 0 {
        locked = true
        break
      }
      if attempt < 19 { usleep(10_000) }
    }
    guard locked else {
      close(lock)
      throw CaptureError(
        .alreadyExisting, "the spool \(directory) is in use by another capture with host id \(hostID)")
    }
    lockFD = lock
    // A fresh epoch per opening: new records never share an id with earlier ones even if seq were
    // ever reused; republished records keep the id stored with them.
    let random = UInt32.random(in: 0..<(36 * 36 * 36))
    epoch = String(UInt64(Timestamp.now().milliseconds), radix: 36) + String(random, radix: 36)
    nextSeq = 0
    baseSeq = 0
    do throws(CaptureError) {
      try recover()
    } catch {
      if currentFD >= 0 { close(currentFD) }
      close(lock)
      throw error
    }
    // Acknowledged closed segments go before anything else needs space (a restart on a full disk).
    _ = deleteAcknowledgedSegments()
  }

  deinit { release() }

  /// Closes every descriptor, the lock's last: the host id's spool is free for the next opener.
  private func release() {
    if currentFD >= 0 { close(currentFD) }
    currentFD = -1
    if let readFD { close(readFD.fd) }
    readFD = nil
    if lockFD >= 0 { close(lockFD) }
    lockFD = -1
  }

  /// Records waiting for a PUBACK (the bound counts these).
  public var unacknowledgedCount: Int { unackedCount }
  /// The first unacknowledged seq (or the next seq when none).
  public var floor: UInt64 { head < entries.count ? entries[head].seq : nextSeq }
  public var isFull: Bool { unackedCount >= maximum }

  /// Appends a record (buffered: durable after the next `flush`). `payload` builds the published bytes
  /// from the event id. Nil when the spool is full: nothing spooled is ever dropped for a new record.
  /// When a new segment has to start, what the current one holds is flushed first, so a failure there
  /// throws (and rolls back the records not yet durable, as `flush` does).
  public func append(topic: String, payload: (String) -> [UInt8]) throws(CaptureError) -> SpoolRecord? {
    if isFull { return nil }
    guard nextSeq < Self.seqLimit else {
      // Only a forged `next` or segment name gets here (2^62 events take 100,000 years at a million a
      // second): each event is refused with this, never a trap.
      throw CaptureError(
        .unableWriteFile,
        "the spool \(directory) has used every sequence number (2^62); move the directory aside to start a new spool"
      )
    }
    let seq = nextSeq
    let eventID = "\(hostID)-\(epoch)-\(seq)"
    let record = SpoolRecord(seq: seq, eventID: eventID, topic: topic, payload: payload(eventID))
    let bytes = Self.encode(record)
    guard bytes.count - SpoolFrame.headerSize <= Self.recordLimit else {
      // Recovery would take a longer record for damage and cut it with everything after it.
      throw CaptureError(
        .unableWriteFile, "an event of \(bytes.count) bytes is larger than a spool record may be (1 MiB)")
    }
    if currentFD < 0
      || (currentSize + pending.count > 0 && currentSize + pending.count + bytes.count > Self.segmentLimit)
    {
      // The segment's records are made durable before the next segment begins, so every record not
      // yet durable is in `pending`, bound for the current segment: a failed write rolls back exactly
      // those.
      try flush()
      try startSegment(at: seq)
    }
    if entries.isEmpty || head == entries.count {
      entries.removeAll(keepingCapacity: true)
      head = 0
      baseSeq = seq
    }
    entries.append(
      Entry(
        seq: seq, offset: UInt32(currentSize + pending.count), length: UInt32(bytes.count), acked: false,
        durable: false))
    pending += bytes
    nextSeq += 1
    unackedCount += 1
    remember(record)
    return record
  }

  /// Writes what was appended since the last flush with one write(2) and makes it durable with one
  /// fsync(2): a burst of appends costs one fsync.
  ///
  /// When the disk is full (ENOSPC, EDQUOT), room is made from what the broker acknowledged
  /// (`reclaim`: that needs no room itself) and the write tried once more. A write or fsync that still
  /// fails rolls back every record not yet durable (the segment is cut back to its durable length,
  /// the records leave the index and their seqs are used again), so the spool goes on working: the
  /// next flush tries again, and nothing refused is published later.
  public func flush() throws(CaptureError) {
    do throws(Errno) {
      if !pending.isEmpty {
        do throws(Errno) {
          try writePending()
        } catch  where Self.isDiskFull(error) {
          guard reclaim() else { throw error }
          try writePending()
        }
      }
      if !currentSynced {
        guard fsync(currentFD) == 0 else { throw Errno.current }
        fsyncCount += 1
        currentSynced = true
      }
    } catch {
      rollBack()
      throw CaptureError(error, "cannot write the spool \(directory)", other: .unableWriteFile)
    }
    durableSize = currentSize
    var i = entries.count - 1
    while i >= head, !entries[i].durable {
      entries[i].durable = true
      i -= 1
    }
  }

  /// Whether record `seq` was appended and made durable (false for one a failed flush rolled back).
  /// Meant for the records of the batch just flushed.
  public func isDurable(_ seq: UInt64) -> Bool {
    guard seq < nextSeq else { return false }
    guard seq >= baseSeq else { return true }
    let index = Int(seq - baseSeq)
    return index < entries.count && entries[index].durable && entries[index].length > 0
  }

  /// The broker has the record `seq`; it leaves the spool (its segment is deleted once every record in
  /// it is acknowledged and a newer segment is being written). False when it was not waiting.
  @discardableResult
  public func acknowledge(_ seq: UInt64) -> Bool {
    guard seq >= baseSeq, seq < nextSeq else { return false }
    let index = Int(seq - baseSeq)
    guard index >= head, index < entries.count, !entries[index].acked else { return false }
    entries[index].acked = true
    unackedCount -= 1
    cache.removeValue(forKey: seq).map { cacheBytes -= $0.payload.count + $0.topic.utf8.count }
    while head < entries.count, entries[head].acked { head += 1 }
    if head > 4096 && head * 2 > entries.count {
      entries.removeFirst(head)
      baseSeq += UInt64(head)
      head = 0
    }
    acksDirty = true
    return true
  }

  public func isAcknowledged(_ seq: UInt64) -> Bool {
    if seq < floor { return true }
    guard seq < nextSeq, seq >= baseSeq else { return false }
    let index = Int(seq - baseSeq)
    return index < entries.count && entries[index].acked
  }

  /// Up to `limit` durable, unacknowledged records with seq ≥ `from`, in order.
  public func unacknowledged(from: UInt64, limit: Int) throws(CaptureError) -> [SpoolRecord] {
    var out: [SpoolRecord] = []
    var index = max(head, from >= baseSeq ? Int(min(from - baseSeq, UInt64(entries.count))) : 0)
    while index < entries.count, out.count < limit {
      let entry = entries[index]
      index += 1
      guard entry.durable else { break }
      if entry.acked { continue }
      out.append(try record(entry))
    }
    return out
  }

  /// Deletes fully acknowledged closed segments, then saves what was acknowledged (`acked`: the floor,
  /// the next seq and the acknowledged seqs above the floor), replaced atomically (rename), fsynced
  /// with `sync` (when capture stops).
  ///
  /// Deleting first needs no room and frees it, and is safe without the marker: a deleted segment
  /// held only records below the floor, and recovery, not finding them, has nothing of theirs to
  /// publish (it bridges their seqs as acknowledged), while the segment being written is never
  /// deleted here, so the next seq is never lost with them. A marker older than the deletions (a crash
  /// in between, a marker that could not be written) only publishes again records acknowledged since
  /// it was written, which consumers drop by eventId. A deleted segment is thus never mistaken for an
  /// unacknowledged one, and the marker never needs a new file to let the spool shrink.
  ///
  /// On a full disk the marker's temporary file may find no room: when every record is acknowledged,
  /// the current segment gives way too (`reclaim`) and the marker is written once more.
  public func saveAcknowledgements(sync: Bool = false) throws(CaptureError) {
    let deleted = deleteAcknowledgedSegments()
    guard acksDirty || deleted || sync else { return }
    var above: [UInt64] = []
    var i = head
    while i < entries.count, above.count < 65_536 {
      if entries[i].acked { above.append(entries[i].seq) }
      i += 1
    }
    // Every seq is at most seqLimit (2^62): the conversions to the JSON's Int64 cannot trap.
    let document = JSON.object([
      "floor": .number(Int64(floor)), "next": .number(Int64(nextSeq)),
      "acked": .array(above.map { .number(Int64($0)) }),
    ])
    let bytes = Array(document.serialized.utf8)
    do throws(Errno) {
      do throws(Errno) {
        try files.replace("acked", with: bytes, mode: 0o600, sync: sync, temporary: "acked.tmp")
      } catch  where Self.isDiskFull(error) {
        if pending.isEmpty, reclaim() {
          do throws(Errno) {
            try files.replace("acked", with: bytes, mode: 0o600, sync: sync, temporary: "acked.tmp")
            acksDirty = false
            return
          } catch  where Self.isDiskFull(error) {}
        }
        // Still no page for a temporary file: the marker is rewritten in place, in the pages it
        // already has. A crash mid-write leaves a marker that does not parse, which recovery ignores
        // with a warning and publishes everything again (consumers drop repeats by eventId): never a
        // lost record. With no marker yet there are no pages to reuse: the disk is full, and that is
        // the error (the acknowledgements stay unsaved and the next save tries again). The pages of
        // a segment just deleted can still be held for a moment: a child this process is spawning
        // has a copy of the descriptor table until its exec(2) closes the O_CLOEXEC ones.
        try overwriteMarker(bytes, sync: sync, diskFull: error)
      }
    } catch {
      throw CaptureError(error, "cannot write \(files.path("acked"))", other: .unableWriteFile)
    }
    acksDirty = false
  }

  /// `acked` rewritten in its own pages (no new file): the bytes at offset 0, then the file cut to
  /// their length.
  private func overwriteMarker(_ bytes: [UInt8], sync: Bool, diskFull: Errno) throws(Errno) {
    let fd = files.openFile("acked", O_WRONLY)
    guard fd >= 0 else {
      let error = Errno.current
      throw error.code == ENOENT ? diskFull : error
    }
    defer { close(fd) }
    try bytes.withUnsafeBytes { raw in Result { () throws(Errno) in try SystemFile.writeAll(fd: fd, raw) } }
      .get()
    guard ftruncate(fd, off_t(bytes.count)) == 0 else { throw .current }
    if sync { guard fsync(fd) == 0 else { throw .current } }
  }

  // MARK: - Room on a full disk

  static func isDiskFull(_ error: Errno) -> Bool { error.code == ENOSPC || error.code == EDQUOT }

  /// Deletes the closed segments whose every record is acknowledged (the next segment starts at or
  /// below the floor). unlink(2) needs no room. True when one went.
  @discardableResult
  private func deleteAcknowledgedSegments() -> Bool {
    let floor = floor
    var count = 0
    while segments.count - count >= 2, segments[count + 1] <= floor { count += 1 }
    guard count > 0 else { return false }
    for first in segments.prefix(count) {
      if let r = readFD, r.segment == first {
        close(r.fd)
        readFD = nil
      }
      _ = files.unlink(Self.segmentName(first))
    }
    segments.removeFirst(count)
    files.sync()
    return true
  }

  /// Makes room on a full disk from what the broker acknowledged: the closed segments below the
  /// floor go, and when every record written to the current segment is acknowledged too, a new empty
  /// segment named by the first record not yet written takes over (an inode and a name, no data
  /// block; its name keeps the next seq should the `acked` marker be lost) and the old one goes. The
  /// new name is synced before the old one is removed, so a crash in between leaves both, never
  /// neither. True when a segment was deleted.
  private func reclaim() -> Bool {
    var freed = deleteAcknowledgedSegments()
    var firstPending = nextSeq
    var index = entries.count
    while index > head, !entries[index - 1].durable { index -= 1 }
    if index < entries.count { firstPending = entries[index].seq }
    if currentFD >= 0, currentSize > 0, currentSize == durableSize, floor >= firstPending,
      let old = segments.last, old < firstPending
    {
      let name = Self.segmentName(firstPending)
      let fd = files.openFile(name, O_WRONLY | O_CREAT | O_EXCL | O_APPEND, 0o600)
      if fd >= 0 {
        files.sync()
        // The pending records were placed after the old segment's bytes.
        let shift = UInt32(currentSize)
        for i in index..<entries.count { entries[i].offset -= shift }
        close(currentFD)
        if let r = readFD, r.segment == old {
          close(r.fd)
          readFD = nil
        }
        _ = files.unlink(Self.segmentName(old))
        files.sync()
        segments[segments.count - 1] = firstPending
        currentFD = fd
        currentSize = 0
        durableSize = 0
        currentSynced = true
        freed = true
      }
    }
    if freed { reclaimedSegments += 1 }
    return freed
  }

  private func writePending() throws(Errno) {
    let fd = currentFD
    let result = pending.withUnsafeBytes { raw in
      Result { () throws(Errno) in try SystemFile.writeAll(fd: fd, raw) }
    }
    if case .failure(let error) = result {
      // Part of it may be in the file: cut back to whole records (shrinking needs no room).
      _ = ftruncate(fd, off_t(currentSize))
      throw error
    }
    currentSize += pending.count
    pending.removeAll(keepingCapacity: true)
    currentSynced = false
  }

  /// Undoes every record not yet durable after a failed write or fsync: the current segment is cut
  /// back to its durable length (and that synced), and the records leave the index, their seqs to be
  /// used again by the next appends (they were never published: only durable records are). Should
  /// the cut itself fail, the records stay in the index as acknowledged placeholders instead, so a
  /// copy left on disk is never published and no seq is used twice.
  private func rollBack() {
    pending.removeAll(keepingCapacity: true)
    var cut = true
    if currentFD >= 0 && currentSize != durableSize {
      cut = ftruncate(currentFD, off_t(durableSize)) == 0 && fsync(currentFD) == 0
    }
    currentSize = durableSize
    currentSynced = true
    var index = entries.count
    while index > head, !entries[index - 1].durable { index -= 1 }
    guard index < entries.count else { return }
    for entry in entries[index...] {
      unackedCount -= 1
      cache.removeValue(forKey: entry.seq).map { cacheBytes -= $0.payload.count + $0.topic.utf8.count }
    }
    if cut {
      nextSeq = entries[index].seq
      entries.removeSubrange(index...)
      if entries.isEmpty { baseSeq = nextSeq }
    } else {
      for i in index..<entries.count {
        entries[i] = Entry(seq: entries[i].seq, offset: 0, length: 0, acked: true, durable: true)
      }
      acksDirty = true
    }
    while head < entries.count, entries[head].acked { head += 1 }
  }

  // MARK: - Recovery

  private struct AckFile: Decodable {
    var floor: UInt64
    var next: UInt64?
    var acked: [UInt64]
  }

  struct Header: Decodable {
    var eventId: String
    var seq: UInt64
    var topic: String
  }

  private func recover() throws(CaptureError) {
    var floor: UInt64 = 0
    var ackedAbove = Set<UInt64>()
    var savedNext: UInt64 = 0
    let ackedBytes: [UInt8]?
    do {
      ackedBytes = try files.read("acked", limit: Self.ackedLimit)
    } catch {
      throw CaptureError(error, "cannot read \(files.path("acked"))", other: .unableReadFile)
    }
    if let ackedBytes {
      if let file = try? JSONDecoder().decode(AckFile.self, from: Data(ackedBytes)),
        file.floor <= Self.seqLimit, file.next ?? 0 <= Self.seqLimit
      {
        floor = file.floor
        ackedAbove = Set(file.acked.filter { $0 > file.floor && $0 < Self.seqLimit })
        savedNext = max(file.next ?? 0, floor)
      } else {
        warn(
          "spool \(files.path("acked")) is damaged or holds impossible sequence numbers; ignored: every record in the spool is published again"
        )
      }
    }
    segments = try listSegments()
    var recovered: [Entry] = []
    for (i, first) in segments.enumerated() {
      let name = Self.segmentName(first)
      let bytes: [UInt8]
      do {
        bytes = try files.read(name, limit: Self.segmentLimit + Self.recordLimit + 8) ?? []
      } catch {
        throw CaptureError(error, "cannot read the spool segment \(files.path(name))", other: .unableReadFile)
      }
      var headers: [Header] = []
      let (records, end) = SpoolFrame.scan(bytes, limit: Self.recordLimit) { body in
        guard let header = Self.header(body) else { return false }
        headers.append(header)
        return true
      }
      if end < bytes.count {
        // A torn or damaged tail: cut it (and nothing before it), so the next append starts on a
        // record boundary. The descriptor is opened without following a link.
        cutOnOpen += 1
        warn(
          "spool \(files.path(name)): cut \(bytes.count - end) bytes of a torn record after \(records.count) records"
        )
        let fd = files.openFile(name, O_WRONLY)
        if fd >= 0 {
          _ = ftruncate(fd, off_t(end))
          _ = fsync(fd)
          close(fd)
        }
      }
      // A record belongs in the segment its seq names: from the segment's first seq up to the next
      // segment's (reading it back finds the segment from the seq).
      let upper = i + 1 < segments.count ? segments[i + 1] : Self.seqLimit
      for (header, record) in zip(headers, records) {
        guard header.seq >= first, header.seq < upper else {
          warn(
            "spool \(files.path(name)): record \(header.seq) does not belong in this segment (damaged or not capture's); skipped"
          )
          continue
        }
        recovered.append(
          Entry(
            seq: header.seq, offset: UInt32(record.offset), length: UInt32(record.length), acked: false,
            durable: true))
      }
      if i == segments.count - 1 {
        currentFD = files.openFile(name, O_WRONLY | O_APPEND)
        guard currentFD >= 0 else {
          throw CaptureError(Errno.current, "cannot open \(files.path(name))", other: .unableOpenFile)
        }
        currentSize = end
        durableSize = end
      }
    }
    // Seqs increase through the segments; anything out of order is damage, skipped with a warning.
    // Every seq here is at most seqLimit (segment names above it were skipped, records bounded by
    // their segment), so `last + 1` cannot overflow.
    var last: UInt64? = nil
    var unacknowledged = 0
    entries = []
    for entry in recovered {
      if let l = last {
        if entry.seq <= l {
          warn("spool \(directory): record \(entry.seq) out of order; skipped")
          continue
        }
        if entry.seq > l + 1 {
          try bridge(from: l + 1, to: entry.seq, unacknowledged: unacknowledged, record: entry.seq)
        }
      }
      var e = entry
      e.acked = entry.seq < floor || ackedAbove.contains(entry.seq)
      if !e.acked { unacknowledged += 1 }
      entries.append(e)
      last = entry.seq
    }
    nextSeq = max(savedNext, last.map { $0 + 1 } ?? 0, segments.last ?? 0)
    if let l = last, l + 1 < nextSeq {
      try bridge(from: l + 1, to: nextSeq, unacknowledged: unacknowledged, record: nil)
    }
    if unacknowledged == 0 { entries = [] }
    baseSeq = entries.first?.seq ?? nextSeq
    head = 0
    while head < entries.count, entries[head].acked { head += 1 }
    unackedCount = unacknowledged
  }

  /// Fills the seqs `from..<to` missing between recovered records (or before the next seq) with
  /// acknowledged placeholders, keeping the index contiguous. With nothing unacknowledged before the
  /// gap the index simply starts after it; a gap wider than `gapLimit` after an unacknowledged record
  /// is not one capture leaves, and is refused rather than bridged with millions of placeholders.
  private func bridge(from: UInt64, to: UInt64, unacknowledged: Int, record: UInt64?) throws(CaptureError) {
    if unacknowledged == 0 {
      entries.removeAll()
      return
    }
    guard to - from <= Self.gapLimit else {
      throw CaptureError(
        .invalidFormat,
        "the spool \(directory) is damaged: \(to - from) sequence numbers are missing before \(record.map { "record \($0)" } ?? "the next one") (more than any gap capture leaves); move the directory aside to start a new spool"
      )
    }
    for missing in from..<to {
      entries.append(Entry(seq: missing, offset: 0, length: 0, acked: true, durable: true))
    }
  }

  /// The segments by first seq: files named by 16 lowercase hex digits and `.seg`. A name at or above
  /// `seqLimit` (where no record can be) is not one capture makes: skipped with a warning, its file
  /// left as it is.
  private func listSegments() throws(CaptureError) -> [UInt64] {
    let names: [[UInt8]]
    do { names = try files.names() } catch {
      throw CaptureError(error, "cannot read the spool \(directory)", other: .unableReadFile)
    }
    var found: [UInt64] = []
    let suffix = Array(".seg".utf8)
    for name in names where name.count == 20 && name.suffix(4).elementsEqual(suffix) {
      let digits = name.prefix(16)
      guard
        digits.allSatisfy({
          ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
            || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "f"))
        }),
        let seq = UInt64(String(decoding: digits, as: UTF8.self), radix: 16)
      else { continue }
      guard seq < Self.seqLimit else {
        warn(
          "spool \(directory): segment \(String(decoding: name, as: UTF8.self)) skipped: its sequence number is beyond any capture reaches (damaged or not capture's)"
        )
        continue
      }
      found.append(seq)
    }
    return found.sorted()
  }

  // MARK: - Records

  static func encode(_ record: SpoolRecord) -> [UInt8] {
    var body: [UInt8] = []
    body.reserveCapacity(record.payload.count + record.topic.utf8.count + 64)
    // The header object {"eventId","seq","topic"} written in its keys' sorted order, as JSON.write
    // would write it, without a dictionary per event. seq < seqLimit (append checks): no trap.
    body += #"{"eventId":"#.utf8
    JSON.writeString(record.eventID, to: &body)
    body += #","seq":"#.utf8
    body += String(record.seq).utf8
    body += #","topic":"#.utf8
    JSON.writeString(record.topic, to: &body)
    body.append(UInt8(ascii: "}"))
    body.append(UInt8(ascii: "\n"))
    body += record.payload
    return SpoolFrame.encode(body: body)
  }

  /// The JSON header before the body's first newline, nil when there is none or it does not parse.
  static func header(_ body: ArraySlice<UInt8>) -> Header? {
    guard let newline = body.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
    return try? JSONDecoder().decode(Header.self, from: Data(body[..<newline]))
  }

  /// The header of the record at `offset` and its total length, or nil when it is torn or damaged.
  static func decodeHeader(_ bytes: [UInt8], at offset: Int) -> (Header, Int)? {
    decode(bytes, at: offset).map { ($0.0, $0.2) }
  }

  static func decode(_ bytes: [UInt8], at offset: Int) -> (Header, ArraySlice<UInt8>, Int)? {
    guard let (body, total) = SpoolFrame.decode(bytes, at: offset, limit: recordLimit),
      let header = header(bytes[body]), let newline = bytes[body].firstIndex(of: UInt8(ascii: "\n"))
    else { return nil }
    return (header, bytes[(newline + 1)..<body.upperBound], total)
  }

  /// The segment holding `seq`: the last one whose first seq is not above it.
  private func segment(of seq: UInt64) -> UInt64 {
    var low = 0
    var high = segments.count - 1
    while low < high {
      let mid = (low + high + 1) / 2
      if segments[mid] <= seq { low = mid } else { high = mid - 1 }
    }
    return segments.isEmpty ? 0 : segments[low]
  }

  private func record(_ entry: Entry) throws(CaptureError) -> SpoolRecord {
    if let cached = cache[entry.seq] { return cached }
    let segment = segment(of: entry.seq)
    let name = Self.segmentName(segment)
    let fd: Int32
    if let r = readFD, r.segment == segment {
      fd = r.fd
    } else {
      if let r = readFD { close(r.fd) }
      readFD = nil
      fd = files.openFile(name, O_RDONLY)
      guard fd >= 0 else {
        throw CaptureError(
          Errno.current, "cannot read the spool segment \(files.path(name))", other: .unableReadFile)
      }
      readFD = (segment, fd)
    }
    let length = Int(entry.length)
    var bytes = [UInt8](repeating: 0, count: length)
    let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, length, off_t(entry.offset)) }
    guard n == length, let (header, payload, _) = Self.decode(bytes, at: 0), header.seq == entry.seq else {
      throw CaptureError(
        .invalidChecksum, "spool segment \(files.path(name)): record \(entry.seq) unreadable")
    }
    return SpoolRecord(seq: header.seq, eventID: header.eventId, topic: header.topic, payload: Array(payload))
  }

  private func remember(_ record: SpoolRecord) {
    // At most 4096 records and 4 MiB in memory: while the broker is away the spool grows on disk, not
    // in memory.
    let size = record.payload.count + record.topic.utf8.count
    guard cache.count < 4096, cacheBytes + size <= 4 << 20 else { return }
    cache[record.seq] = record
    cacheBytes += size
  }

  /// Starts the segment `seq` (the current one's records are durable: `append` flushed them).
  private func startSegment(at seq: UInt64) throws(CaptureError) {
    let name = Self.segmentName(seq)
    let fd = files.openFile(name, O_WRONLY | O_CREAT | O_APPEND, 0o600)
    guard fd >= 0 else {
      throw CaptureError(Errno.current, "cannot create \(files.path(name))", other: .unableWriteFile)
    }
    // The new name must survive a crash too: the directory entry is synced once per segment.
    files.sync()
    if currentFD >= 0 { close(currentFD) }
    currentFD = fd
    currentSize = 0
    durableSize = 0
    currentSynced = true
    segments.append(seq)
  }

  static func segmentName(_ first: UInt64) -> String {
    let hex = String(first, radix: 16)
    return "\(String(repeating: "0", count: max(0, 16 - hex.count)))\(hex).seg"
  }

  /// Writes what is pending and the acknowledgements durably (before the publisher stops).
  /// Then lets go of the spool (its lock included) whether or not that succeeded: a stopped
  /// publisher's spool is free at once for the next opener (a restart), not only once the last
  /// reference to this object is gone, which the publisher's thread decides.
  public func shutDown() throws(CaptureError) {
    defer { release() }
    try flush()
    try saveAcknowledgements(sync: true)
  }
}
