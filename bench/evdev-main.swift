// Benchmark driver for bench/evdev.sh, compiled with -O together with
// Sources/Drivers/HID/KeyTranslator.swift (which imports nothing, so it builds alone).
//   evdev-bench generate FILE MILLIONS   write scripted input_event records (scanner bursts)
//   evdev-bench translate FILE [KEYMAP]  read FILE, translate every record, print a summary line

#if canImport(Glibc)
  import Glibc
#endif

/// EAN-13-like codes typed as a scanner types them: digits with Shift-less presses, the odd letter
/// with Shift, press and release each followed by EV_SYN, Enter at the end, 2 ms between events.
func generate(path: String, events target: Int) {
  guard let file = fopen(path, "wb") else {
    perror(path)
    exit(1)
  }
  defer { fclose(file) }
  var t: Int64 = 1_700_000_000_000_000
  var written = 0
  var chunk: [UInt8] = []
  chunk.reserveCapacity(1 << 20)
  var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
  func emit(_ code: UInt16, _ value: Int32, type: UInt16 = InputEvent.typeKey) {
    chunk += InputEvent(microseconds: t, type: type, code: code, value: value).bytes
    written += 1
    t += 2000
    if chunk.count >= 1 << 20 {
      _ = chunk.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
      chunk.removeAll(keepingCapacity: true)
    }
  }
  func tap(_ code: UInt16, shift: Bool) {
    if shift { emit(42, 1) }
    emit(code, 1)
    emit(0, 0, type: InputEvent.typeSync)
    emit(code, 0)
    emit(0, 0, type: InputEvent.typeSync)
    if shift { emit(42, 0) }
  }
  while written < target {
    for _ in 0..<13 {
      seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      let r = Int(seed >> 33)
      // KEY_1..KEY_0 are 2..11; every eighth key a shifted letter from KEY_Q..KEY_P (16..25).
      if r % 8 == 0 { tap(UInt16(16 + r % 10), shift: true) } else { tap(UInt16(2 + r % 10), shift: false) }
    }
    tap(28, shift: false)
    t += 300_000  // the next scan comes later
  }
  _ = chunk.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
}

func translate(path: String, keymap: Keymap) {
  guard let file = fopen(path, "rb") else {
    perror(path)
    exit(1)
  }
  defer { fclose(file) }
  var translator = KeyTranslator(keymap: keymap)
  var buffer = [UInt8](repeating: 0, count: InputEvent.size * 65536)
  var events = 0
  var codes = 0
  var characters = 0
  let start = ContinuousClock.now
  while true {
    let n = buffer.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
    if n < InputEvent.size { break }
    buffer.withUnsafeBytes { raw in
      for offset in stride(from: 0, to: n - n % InputEvent.size, by: InputEvent.size) {
        events += 1
        if let code = translator.feed(InputEvent(raw, at: offset)) {
          codes += 1
          characters += code.text.utf8.count
        }
      }
    }
  }
  if translator.flush() != nil { codes += 1 }
  let elapsed = ContinuousClock.now - start
  let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
  print("events=\(events) codes=\(codes) characters=\(characters) seconds=\(seconds)")
}

@main enum EvdevBench {
  static func main() {
    let arguments = CommandLine.arguments
    switch arguments.dropFirst().first {
    case "generate" where arguments.count == 4:
      generate(path: arguments[2], events: Int((Double(arguments[3]) ?? 1) * 1_000_000))
    case "translate" where arguments.count >= 3:
      translate(
        path: arguments[2], keymap: Keymap(rawValue: arguments.count > 3 ? arguments[3] : "us") ?? .us)
    default:
      fputs("usage: evdev-bench generate FILE MILLIONS | translate FILE [KEYMAP]\n", stderr)
      exit(18)
    }
  }
}
