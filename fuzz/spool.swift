// The MQTT spool's record framing (Sources/CaptureMQTT/SpoolFrame.swift, docs/fleet.md §4): what
// recovery makes of any bytes in a segment file.
//
// Input: one option byte, then the bytes of a segment. Option bit 0 picks the body cap: clear, the
// spool's own (1 MiB); set, a small cap of (option >> 1) + 1 bytes, so the cap's edge is reached.

/// Recovery's test of a body (SpoolFiles parses the JSON header before the newline; here any body
/// with a newline passes, so every framing path is reached).
private func acceptable(_ body: ArraySlice<UInt8>) -> Bool { body.contains(UInt8(ascii: "\n")) }

/// Offsets to try in a record of `count` bytes: all of them for a small record, else the 8-byte
/// frame header, 48 spread over the body and the last 8 (a long record costs a CRC per offset).
private func offsets(_ count: Int) -> [Int] {
  if count <= 64 { return Array(0..<count) }
  return Array(0..<8) + Array(stride(from: 8, to: count - 8, by: max(1, (count - 16) / 48)))
    + Array((count - 8)..<count)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func spoolFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let input = fuzzInput(data, size)
  guard let options = input.first else { return 0 }
  let segment = Array(input.dropFirst())
  let limit = options & 1 == 0 ? 1 << 20 : Int(options >> 1) + 1

  // 1. Any bytes: decoding at any offset (outside the bytes too) never traps, and what decodes lies
  // inside the bytes with its body under the cap.
  for offset in [-1, Int.min, Int.max, segment.count, segment.count + 1] + offsets(segment.count) {
    if let (body, total) = SpoolFrame.decode(segment, at: offset, limit: limit) {
      require(offset >= 0 && body.lowerBound == offset + 8 && body.upperBound == offset + total, "body range")
      require(body.upperBound <= segment.count && body.count <= limit, "a record beyond the bytes or the cap")
    }
  }

  // 2. Recovery's scan keeps whole records only: contiguous from 0, each decoding at its offset and
  // re-encoding to exactly its bytes; the kept prefix scans again to itself (cutting is idempotent).
  let (records, end) = SpoolFrame.scan(segment, limit: limit, accept: acceptable)
  var expected = 0
  for record in records {
    require(record.offset == expected, "records are not contiguous from the start")
    guard let (body, total) = SpoolFrame.decode(segment, at: record.offset, limit: limit) else {
      require(false, "a kept record does not decode")
      return 0
    }
    require(total == record.length && acceptable(segment[body]), "a kept record is not the one decoded")
    require(
      SpoolFrame.encode(body: Array(segment[body]))
        == Array(segment[record.offset..<(record.offset + total)]),
      "a kept record does not re-encode to its bytes")
    expected += total
  }
  require(end == expected && end <= segment.count, "the end is not after the last whole record")
  let kept = Array(segment[..<end])
  let again = SpoolFrame.scan(kept, limit: limit, accept: acceptable)
  require(
    again.records.count == records.count && again.end == kept.count, "the cut segment does not scan whole")

  // 3. Round trip: a body from the input, appended after the kept records, decodes to itself there
  // and the scan finds one more record.
  let body = Array(segment.prefix(limit - 1)) + [UInt8(ascii: "\n")]
  let record = SpoolFrame.encode(body: body)
  let appended = kept + record
  guard let (decoded, total) = SpoolFrame.decode(appended, at: kept.count, limit: limit) else {
    require(false, "an encoded record does not decode")
    return 0
  }
  require(Array(appended[decoded]) == body && total == record.count, "the round trip changed the record")
  let grown = SpoolFrame.scan(appended, limit: limit, accept: acceptable)
  require(
    grown.records.count == records.count + 1 && grown.end == appended.count,
    "the appended record is not found")

  // 4. A record cut anywhere (a torn write, then nothing or the zeros a power cut leaves) or with any
  // one byte changed never decodes at its offset: not as itself, not as another record.
  // At offset 0 of the record alone: decoding reads nothing before its offset (the appended case
  // above checked an offset inside a segment).
  for cut in offsets(record.count) {
    let torn = Array(record[..<cut])
    require(SpoolFrame.decode(torn, at: 0, limit: limit) == nil, "a record cut at \(cut) decodes")
    // Zeros where the rest was: eight zero bytes are a valid frame of an empty body (the CRC-32 of
    // nothing is 0), which is why recovery also wants a header line; no body recovery accepts
    // decodes here.
    let zeroed = torn + [UInt8](repeating: 0, count: record.count - cut + 8)
    if let (found, _) = SpoolFrame.decode(zeroed, at: 0, limit: limit) {
      require(
        !acceptable(zeroed[found]),
        "a record cut at \(cut) and zero-filled decodes (\(found.count) body bytes)")
    }
  }
  var damaged = record
  for index in offsets(record.count) {
    // A nonzero mask from the input: one to eight bits of one byte (a burst CRC-32 always detects).
    let mask = (UInt8(truncatingIfNeeded: index &* 31) ^ options) | 1
    damaged[index] ^= mask
    require(
      SpoolFrame.decode(damaged, at: 0, limit: limit) == nil, "a record with byte \(index) changed decodes")
    damaged[index] ^= mask
  }
  return 0
}
