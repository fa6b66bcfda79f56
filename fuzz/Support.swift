// Shared by the fuzz harnesses (compiled with each of them and the codec sources by fuzz/run.sh).

/// The fuzz input as bytes.
func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
  guard let data, size > 0 else { return [] }
  return Array(UnsafeBufferPointer(start: data, count: size))
}

/// Splits bytes into notifications by a length-prefix scheme: a length byte, then that many bytes (fewer
/// when the input ends first). A length byte of 0 gives an empty notification.
func fuzzNotifications(_ bytes: ArraySlice<UInt8>) -> [[UInt8]] {
  var notifications: [[UInt8]] = []
  var index = bytes.startIndex
  while index < bytes.endIndex {
    let length = Int(bytes[index])
    index += 1
    let end = min(index + length, bytes.endIndex)
    notifications.append(Array(bytes[index..<end]))
    index = end
  }
  return notifications
}

/// Stops the fuzzer with a message when an invariant does not hold (libFuzzer reports the trap).
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
  if !condition { fatalError("invariant: " + message()) }
}
