// SPP parser throughput: compiled by bench/spp.sh with swiftc -O together with
// Sources/Drivers/Serial/SPPFrameParser.swift (import-free). Reads the capture file given as the first
// argument into memory, then times SPPFrameParser(framing: .auto) over it in 4096-byte reads.
import Glibc

func now() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_MONOTONIC, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

@main struct SPPBench {
  static func main() {
    let args = CommandLine.arguments
    guard args.count >= 2, let file = fopen(args[1], "rb") else {
      print("usage: spp-bench CAPTURE [RUNS]")
      exit(2)
    }
    let runs = args.count >= 3 ? Int(args[2]) ?? 3 : 3
    var data: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while true {
      let n = fread(&buffer, 1, buffer.count, file)
      if n <= 0 { break }
      data += buffer[0..<n]
    }
    fclose(file)
    var best = Double.infinity
    var codes = 0
    var malformed = 0
    for _ in 0..<runs {
      codes = 0
      malformed = 0
      let start = now()
      var parser = SPPFrameParser(framing: .auto)
      var i = 0
      while i < data.count {
        let end = min(i + 4096, data.count)
        for event in parser.feed(data[i..<end]) {
          if case .code = event { codes += 1 } else { malformed += 1 }
        }
        i = end
      }
      for event in parser.finish() {
        if case .code = event { codes += 1 } else { malformed += 1 }
      }
      best = min(best, now() - start)
    }
    let mb = Double(data.count) / 1e6
    print("parser: \(data.count) bytes, \(codes) codes, \(malformed) malformed events, best of \(runs): "
      + "\(best) s = \(mb / best) MB/s")
  }
}
