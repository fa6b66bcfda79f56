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
/// A record is `u32 length | u32 CRC-32 | body` (little-endian), the body
/// `{"eventId":…,"seq":…,"topic":…}\n` and the payload bytes. On opening, each segment is read through;
/// the first record that does not fit in the file or fails its CRC (the torn tail a `kill -9` or a
/// power cut leaves mid-write) is cut off with everything after it, never misread.
public final class SpoolFiles {
  /// A segment is closed and a new one started past this size; a fully acknowledged closed segment is
  /// deleted.
  public static let segmentLimit = 4 << 20
  /// The largest record body accepted back from disk (an event payload is far smaller: decoded data is
  /// bounded by its device, undecoded data by UndecodedData.maximumBytes).
  public static let recordLimit = 1 << 20

  public let directory: FilePath
  public let hostID: String
  /// New records are refused while this many are unacknowledged.
  public let maximum: Int
  /// fsync(2) calls on segment data so far (group commit: one per `flush`, whatever it wrote).
  public private(set) var fsyncCount = 0
  /// Records cut off as torn when the spool was opened.
  public private(set) var cutOnOpen = 0

  private let epoch: String
  private let lockFD: Int32
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
  /// Bytes appended since the last flush (written at flush, one write(2)).
  private var pending: [UInt8] = []
  /// Segments written since the last fsync (a roll mid-batch leaves the previous one unsynced).
  private var unsynced: [Int32] = []
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
  public convenience init(
    stateDirectory: FilePath, hostID: String, maximum: Int,
    warn: @escaping @Sendable (String) -> Void = { _ in }
  ) throws(CaptureError) {
    // Every missing level, 0700 (the XDG state directory itself may not exist yet).
    var prefix = FilePath(bytes: stateDirectory.isAbsolute ? [] : [UInt8(ascii: ".")])
    for component in stateDirectory.bytes.split(separator: UInt8(ascii: "/")) {
      prefix = FilePath(bytes: prefix.bytes + [UInt8(ascii: "/")] + component)
      try Self.makeDirectory(prefix)
    }
    try Self.makeDirectory(stateDirectory + "/spool")
    try self.init(
      directory: stateDirectory + "/spool/\(hostID)", hostID: hostID, maximum: maximum, warn: warn)
  }

  public init(
    directory: FilePath, hostID: String, maximum: Int, warn: @escaping @Sendable (String) -> Void = { _ in }
  ) throws(CaptureError) {
    self.directory = directory
    self.hostID = hostID
    self.maximum = maximum
    self.warn = warn
    try Self.makeDirectory(directory)
    let lock = (directory + "/lock").open(O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
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
      close(lock)
      throw error
    }
  }

  deinit {
    if currentFD >= 0 { close(currentFD) }
    if let readFD { close(readFD.fd) }
    close(lockFD)
  }

  /// Records waiting for a PUBACK (the bound counts these).
  public var unacknowledgedCount: Int { unackedCount }
  /// The first unacknowledged seq (or the next seq when none).
  public var floor: UInt64 { head < entries.count ? entries[head].seq : nextSeq }
  public var isFull: Bool { unackedCount >= maximum }

  /// Appends a record (buffered: durable after the next `flush`). `payload` builds the published bytes
  /// from the event id. Nil when the spool is full: nothing spooled is ever dropped for a new record.
  public func append(topic: String, payload: (String) -> [UInt8]) throws(CaptureError) -> SpoolRecord? {
    if isFull { return nil }
    let seq = nextSeq
    let record = SpoolRecord(
      seq: seq, eventID: "\(hostID)-\(epoch)-\(seq)", topic: topic,
      payload: payload("\(hostID)-\(epoch)-\(seq)"))
    let bytes = Self.encode(record)
    if currentFD < 0
      || (currentSize + pending.count > 0 && currentSize + pending.count + bytes.count > Self.segmentLimit)
    {
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
  /// fsync(2) per segment touched: a burst of appends costs one fsync.
  public func flush() throws(CaptureError) {
    if !pending.isEmpty {
      try write(pending)
      currentSize += pending.count
      pending.removeAll(keepingCapacity: true)
      if !unsynced.contains(currentFD) { unsynced.append(currentFD) }
    }
    for fd in unsynced {
      guard fsync(fd) == 0 else {
        throw CaptureError(Errno.current, "cannot fsync the spool \(directory)", other: .unableWriteFile)
      }
      fsyncCount += 1
      if fd != currentFD { close(fd) }
    }
    unsynced.removeAll()
    var i = entries.count - 1
    while i >= head, !entries[i].durable {
      entries[i].durable = true
      i -= 1
    }
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
    return entries[Int(seq - baseSeq)].acked
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

  /// Saves what was acknowledged (`acked`: the floor and the acknowledged seqs above it) and deletes
  /// fully acknowledged closed segments. The file is replaced atomically; it is fsynced only before a
  /// segment is deleted, since a lost update only republishes records (consumers deduplicate on
  /// eventId) while a deleted segment must never be mistaken for an unacknowledged one.
  public func saveAcknowledgements(sync: Bool = false) throws(CaptureError) {
    var deletable: [UInt64] = []
    let floor = floor
    for (i, first) in segments.enumerated() where i + 1 < segments.count {
      if segments[i + 1] <= floor { deletable.append(first) } else { break }
    }
    guard acksDirty || !deletable.isEmpty || sync else { return }
    var above: [UInt64] = []
    var i = head
    while i < entries.count, above.count < 65_536 {
      if entries[i].acked { above.append(entries[i].seq) }
      i += 1
    }
    let document = JSON.object([
      "floor": .number(Int64(floor)), "next": .number(Int64(nextSeq)),
      "acked": .array(above.map { .number(Int64($0)) }),
    ])
    let path = directory + "/acked"
    if sync || !deletable.isEmpty {
      do {
        try SystemFile.replace(
          path: path, directory: directory, with: Array(document.serialized.utf8), mode: 0o600)
      } catch {
        throw CaptureError(error, "cannot write \(path)", other: .unableWriteFile)
      }
    } else {
      let temporary = directory + "/acked.tmp"
      let fd = temporary.open(O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
      guard fd >= 0 else {
        throw CaptureError(Errno.current, "cannot write \(temporary)", other: .unableWriteFile)
      }
      let bytes = Array(document.serialized.utf8)
      let written = bytes.withUnsafeBytes { raw in
        Result { () throws(Errno) in try SystemFile.writeAll(fd: fd, raw) }
      }
      close(fd)
      if case .failure(let error) = written {
        throw CaptureError(error, "cannot write \(temporary)", other: .unableWriteFile)
      }
      guard temporary.rename(to: path) == 0 else {
        throw CaptureError(Errno.current, "cannot write \(path)", other: .unableWriteFile)
      }
    }
    acksDirty = false
    for first in deletable {
      if readFD?.segment == first, let fd = readFD?.fd {
        close(fd)
        readFD = nil
      }
      _ = segmentPath(first).unlink()
      segments.removeFirst()
    }
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
    if let bytes = try? SystemFile.read(path: directory + "/acked"),
      let file = try? JSONDecoder().decode(AckFile.self, from: Data(bytes))
    {
      floor = file.floor
      ackedAbove = Set(file.acked)
      nextSeq = max(file.next ?? 0, floor)
    }
    segments = try listSegments()
    var recovered: [Entry] = []
    for (i, first) in segments.enumerated() {
      let path = segmentPath(first)
      let bytes: [UInt8]
      do {
        bytes = try BoundedInput.contents(
          of: path, accepting: .regularFiles, limit: Self.segmentLimit + Self.recordLimit + 8)
      } catch {
        throw CaptureError(error, "cannot read the spool segment \(path)", other: .unableReadFile)
      }
      var offset = 0
      var records = 0
      while offset < bytes.count {
        guard let (header, total) = Self.decodeHeader(bytes, at: offset) else { break }
        recovered.append(
          Entry(seq: header.seq, offset: UInt32(offset), length: UInt32(total), acked: false, durable: true))
        offset += total
        records += 1
      }
      if offset < bytes.count {
        // A torn or damaged tail: cut it (and nothing before it), so the next append starts on a
        // record boundary.
        cutOnOpen += 1
        warn("spool \(path): cut \(bytes.count - offset) bytes of a torn record after \(records) records")
        let fd = path.open(O_WRONLY | O_CLOEXEC)
        if fd >= 0 {
          _ = ftruncate(fd, off_t(offset))
          _ = fsync(fd)
          close(fd)
        }
      }
      if i == segments.count - 1 {
        currentFD = path.open(O_WRONLY | O_APPEND | O_CLOEXEC)
        guard currentFD >= 0 else {
          throw CaptureError(Errno.current, "cannot open \(path)", other: .unableOpenFile)
        }
        currentSize = offset
      }
    }
    // Seqs increase through the segments; anything out of order is damage, skipped with a warning.
    var last: UInt64? = nil
    entries = []
    for entry in recovered {
      if let l = last, entry.seq != l + 1 {
        if entry.seq <= l {
          warn("spool \(directory): record \(entry.seq) out of order; skipped")
          continue
        }
        // A gap (acknowledged records of a deleted segment never precede live ones; a gap is only
        // possible at the floor): filled with acknowledged placeholders to keep seqs contiguous.
        for missing in (l + 1)..<entry.seq {
          entries.append(
            Entry(seq: missing, offset: 0, length: 0, acked: true, durable: true))
        }
      }
      var e = entry
      e.acked = entry.seq < floor || ackedAbove.contains(entry.seq)
      entries.append(e)
      last = entry.seq
    }
    if let first = entries.first?.seq { baseSeq = first } else { baseSeq = nextSeq }
    if let l = last { nextSeq = max(nextSeq, l + 1) }
    if let s = segments.last { nextSeq = max(nextSeq, s) }
    head = 0
    while head < entries.count, entries[head].acked { head += 1 }
    unackedCount = entries[head...].reduce(0) { $0 + ($1.acked ? 0 : 1) }
  }

  private func listSegments() throws(CaptureError) -> [UInt64] {
    guard let dir = directory.opendir() else {
      throw CaptureError(Errno.current, "cannot read the spool \(directory)", other: .unableReadFile)
    }
    defer { closedir(dir) }
    var found: [UInt64] = []
    while let entry = readdir(dir) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
      }
      guard name.hasSuffix(".seg"), name.count == 20, let seq = UInt64(name.prefix(16), radix: 16) else {
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
    JSON.object([
      "eventId": .string(record.eventID), "seq": .number(Int64(record.seq)), "topic": .string(record.topic),
    ]).write(to: &body)
    body.append(UInt8(ascii: "\n"))
    body += record.payload
    var out: [UInt8] = []
    out.reserveCapacity(body.count + 8)
    appendLE(UInt32(body.count), to: &out)
    appendLE(CRC32.checksum(body), to: &out)
    out += body
    return out
  }

  /// The header of the record at `offset` and its total length, or nil when it is torn or damaged.
  static func decodeHeader(_ bytes: [UInt8], at offset: Int) -> (Header, Int)? {
    decode(bytes, at: offset).map { ($0.0, $0.2) }
  }

  static func decode(_ bytes: [UInt8], at offset: Int) -> (Header, ArraySlice<UInt8>, Int)? {
    guard bytes.count - offset >= 8 else { return nil }
    let length = Int(readLE(bytes, offset))
    let crc = readLE(bytes, offset + 4)
    guard length <= recordLimit, bytes.count - offset - 8 >= length else { return nil }
    let body = bytes[(offset + 8)..<(offset + 8 + length)]
    guard CRC32.checksum(body) == crc, let newline = body.firstIndex(of: UInt8(ascii: "\n")),
      let header = try? JSONDecoder().decode(Header.self, from: Data(body[..<newline]))
    else { return nil }
    return (header, body[(newline + 1)...], 8 + length)
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
    let fd: Int32
    if let r = readFD, r.segment == segment {
      fd = r.fd
    } else {
      if let r = readFD { close(r.fd) }
      readFD = nil
      fd = segmentPath(segment).open(O_RDONLY | O_CLOEXEC)
      guard fd >= 0 else {
        throw CaptureError(
          Errno.current, "cannot read the spool segment \(segmentPath(segment))", other: .unableReadFile
        )
      }
      readFD = (segment, fd)
    }
    let length = Int(entry.length)
    var bytes = [UInt8](repeating: 0, count: length)
    let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, length, off_t(entry.offset)) }
    guard n == length, let (header, payload, _) = Self.decode(bytes, at: 0), header.seq == entry.seq else {
      throw CaptureError(
        .invalidChecksum, "spool segment \(segmentPath(segment)): record \(entry.seq) unreadable")
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

  private func startSegment(at seq: UInt64) throws(CaptureError) {
    if !pending.isEmpty {
      try write(pending)
      currentSize += pending.count
      pending.removeAll(keepingCapacity: true)
      if !unsynced.contains(currentFD) { unsynced.append(currentFD) }
    } else if currentFD >= 0 && !unsynced.contains(currentFD) {
      close(currentFD)
    }
    let path = segmentPath(seq)
    let fd = path.open(O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw CaptureError(Errno.current, "cannot create \(path)", other: .unableWriteFile) }
    // The new name must survive a crash too: the directory entry is synced once per segment.
    let dir = directory.open(O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if dir >= 0 {
      _ = fsync(dir)
      close(dir)
    }
    currentFD = fd
    currentSize = 0
    segments.append(seq)
  }

  private func write(_ bytes: [UInt8]) throws(CaptureError) {
    let fd = currentFD
    let result = bytes.withUnsafeBytes { raw in
      Result { () throws(Errno) in try SystemFile.writeAll(fd: fd, raw) }
    }
    if case .failure(let error) = result {
      throw CaptureError(error, "cannot write the spool \(directory)", other: .unableWriteFile)
    }
  }

  private func segmentPath(_ first: UInt64) -> FilePath {
    let hex = String(first, radix: 16)
    return directory + "/\(String(repeating: "0", count: max(0, 16 - hex.count)))\(hex).seg"
  }

  static func makeDirectory(_ path: FilePath) throws(CaptureError) {
    if path.mkdir(0o700) != 0 && errno != EEXIST {
      throw CaptureError(Errno.current, "cannot create directory \(path)", other: .unableCreateDirectory)
    }
  }

  private static func appendLE(_ value: UInt32, to out: inout [UInt8]) {
    for shift in stride(from: 0, to: 32, by: 8) {
      out.append(UInt8(truncatingIfNeeded: value >> UInt32(shift)))
    }
  }

  private static func readLE(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
    UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
      | UInt32(bytes[offset + 3]) << 24
  }

  /// Writes what is pending and the acknowledgements durably (before the publisher stops).
  public func shutDown() throws(CaptureError) {
    try flush()
    try saveAcknowledgements(sync: true)
  }
}

/// CRC-32 (ISO-HDLC, the polynomial of zlib and Ethernet, reflected 0xEDB88320): a torn or damaged
/// record fails it.
enum CRC32 {
  static let table: [UInt32] = (0..<256).map { n in
    var c = UInt32(n)
    for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
    return c
  }

  static func checksum(_ bytes: some Collection<UInt8>) -> UInt32 {
    var c: UInt32 = 0xFFFF_FFFF
    for byte in bytes { c = table[Int((c ^ UInt32(byte)) & 0xFF)] ^ (c >> 8) }
    return c ^ 0xFFFF_FFFF
  }
}
