// Barcode images made at test time with qrencode and zint (started with posix_spawn like capture
// itself), once per test process, in a directory every test reads from and none writes to.

import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A generated image and what decoding it must give.
struct Sample: Sendable {
  var path: String
  var text: String
  var bytes: [UInt8]
  var base64: String
  var sourceID: Int
  var sourceName: String
  var source: (id: Int, name: String) { (sourceID, sourceName) }
}

struct Images: Sendable {
  let directory: String
  let qr: Sample
  let qrSecond: Sample
  let code128: Sample
  let ean13: Sample
  let dataMatrix: Sample
  let pdf417: Sample
  /// QR Code in byte mode holding bytes that are not UTF-8 (0x00, 0xFF, ...).
  let binaryQR: Sample
  /// A white PGM with nothing to find.
  let blank: String
  /// One binary PGM holding two QR Codes side by side: "Left code" and "Right code".
  let twoCodes: String
  /// A QR Code as a binary PPM (P6), dark blue on light yellow: "Colour PPM".
  let ppm: String
  /// A QR Code as a plain-text PGM (P2): "Plain PGM".
  let plainPGM: String

  static let binaryPayload: [UInt8] = [0x00, 0xFF, 0x01, 0x80] + Array("binary".utf8) + [0xFE, 0x0A, 0x7F]

  /// Generated on first use, on a thread of its own: the tools' runs block, and a lazy global made
  /// synchronously would also hold every other test asking for it on its pool thread meanwhile. A
  /// missing tool becomes a failure of every test that needs images.
  private static let shared = Task<Result<Images, HarnessError>, Never> {
    await onOwnThread {
      do { return .success(try make()) } catch let error as HarnessError { return .failure(error) } catch {
        return .failure(HarnessError(description: "\(error)"))
      }
    }
  }

  static func get() async throws -> Images { try await shared.value.get() }

  private static let removeAtExit: Void = {
    atexit {
      if let directory = Images.createdDirectory { try? FileManager.default.removeItem(atPath: directory) }
    }
  }()
  nonisolated(unsafe) private static var createdDirectory: String?

  private static func make() throws -> Images {
    guard let qrencode = Runner.which("qrencode") else {
      throw HarnessError(description: "qrencode is not installed (apt-get install qrencode)")
    }
    guard let zint = Runner.which("zint") else {
      throw HarnessError(description: "zint is not installed (apt-get install zint)")
    }
    var template = Array("/tmp/capture-images.XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw HarnessError(description: "mkdtemp failed") }
    let dir = String(cString: made)
    createdDirectory = dir
    _ = removeAtExit

    func tool(_ path: String, _ arguments: [String], stdin: [UInt8] = []) throws {
      let outcome = try Runner.runBlocking(
        path, arguments, environment: ["PATH": "/usr/bin:/bin"], stdin: stdin, directory: nil, timeLimit: 120)
      guard outcome.status == 0 else {
        throw HarnessError(description: "\(path) \(arguments.joined(separator: " ")) failed: \(outcome)")
      }
    }
    /// The modules of a QR Code, from qrencode's text output (two characters a module, no margin).
    func modules(_ text: String) throws -> [[Bool]] {
      let outcome = try Runner.runBlocking(
        qrencode, ["-t", "ASCII", "-m", "0", "-o", "-", text], environment: ["PATH": "/usr/bin:/bin"],
        stdin: [],
        directory: nil, timeLimit: 120)
      guard outcome.status == 0 else {
        throw HarnessError(description: "qrencode -t ASCII failed: \(outcome)")
      }
      return outcome.outLines.filter { !$0.isEmpty }.map { line in
        stride(from: 0, to: line.count, by: 2).map { line[line.index(line.startIndex, offsetBy: $0)] == "#" }
      }
    }
    /// Symbols placed left to right on a white page with a 4-module quiet zone, `scale` pixels a module.
    func page(_ symbols: [[[Bool]]], scale: Int = 4) -> (width: Int, height: Int, dark: (Int, Int) -> Bool) {
      let quiet = 4
      let height = (symbols.map(\.count).max() ?? 0) + 2 * quiet
      let width = symbols.reduce(quiet) { $0 + $1.count + quiet }
      var grid = [[Bool]](repeating: [Bool](repeating: false, count: width), count: height)
      var x0 = quiet
      for symbol in symbols {
        for (y, row) in symbol.enumerated() {
          for (x, dark) in row.enumerated() { grid[quiet + y][x0 + x] = dark }
        }
        x0 += symbol.count + quiet
      }
      return (width * scale, height * scale, { x, y in grid[y / scale][x / scale] })
    }
    func save(_ path: String, _ bytes: [UInt8]) throws {
      guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
        throw HarnessError(description: "cannot write \(path)")
      }
    }

    func sample(_ name: String, _ text: String, _ id: Int, _ sourceName: String, base64: String) -> Sample {
      Sample(
        path: "\(dir)/\(name)", text: text, bytes: Array(text.utf8), base64: base64, sourceID: id,
        sourceName: sourceName)
    }

    let qr = sample("qr.png", "Hello QR", 38, "QR Code", base64: "SGVsbG8gUVI=")
    try tool(qrencode, ["-o", qr.path, qr.text])
    let qrSecond = sample("qr-second.png", "Second code", 38, "QR Code", base64: "U2Vjb25kIGNvZGU=")
    try tool(qrencode, ["-o", qrSecond.path, qrSecond.text])
    let code128 = sample("code128.png", "CODE128-TEST", 15, "Code 128", base64: "Q09ERTEyOC1URVNU")
    try tool(zint, ["-b", "20", "-d", code128.text, "-o", code128.path])
    // zint checks the 13th digit: 590123412345 has check digit 7.
    let ean13 = sample("ean13.png", "5901234123457", 19, "EAN 13", base64: "NTkwMTIzNDEyMzQ1Nw==")
    try tool(zint, ["-b", "13", "-d", ean13.text, "-o", ean13.path])
    // ISO/IEC 16022 asks for a one-module quiet zone, which zint leaves out unless told.
    let dataMatrix = sample(
      "datamatrix.png", "DM payload 42", 16, "Data Matrix", base64: "RE0gcGF5bG9hZCA0Mg==")
    try tool(
      zint,
      ["-b", "71", "--scale=2", "--whitesp=2", "--vwhitesp=2", "-d", dataMatrix.text, "-o", dataMatrix.path])
    let pdf417 = sample("pdf417.png", "PDF417 sample text", 33, "PDF 417", base64: "UERGNDE3IHNhbXBsZSB0ZXh0")
    try tool(zint, ["-b", "55", "-d", pdf417.text, "-o", pdf417.path])

    let binaryQR = Sample(
      path: "\(dir)/binary-qr.png", text: "\u{0}\\xFF\u{1}\\x80binary\\xFE\n\u{7F}", bytes: binaryPayload,
      base64: "AP8BgGJpbmFyef4Kfw==", sourceID: 38, sourceName: "QR Code")
    // -8: byte mode, data from stdin (a NUL cannot be an argument).
    try tool(qrencode, ["-8", "-o", binaryQR.path], stdin: binaryPayload)

    let blank = "\(dir)/blank.pgm"
    let pgm = Array("P5\n64 64\n255\n".utf8) + [UInt8](repeating: 0xFF, count: 64 * 64)
    guard FileManager.default.createFile(atPath: blank, contents: Data(pgm)) else {
      throw HarnessError(description: "cannot write \(blank)")
    }

    let two = page([try modules("Left code"), try modules("Right code")])
    var pgm5 = Array("P5\n# two codes\n\(two.width) \(two.height)\n255\n".utf8)
    for y in 0..<two.height { for x in 0..<two.width { pgm5.append(two.dark(x, y) ? 0 : 255) } }
    let twoCodes = "\(dir)/two-codes.pgm"
    try save(twoCodes, pgm5)

    let colour = page([try modules("Colour PPM")])
    var ppm6 = Array("P6\n\(colour.width) \(colour.height)\n255\n".utf8)
    for y in 0..<colour.height {
      for x in 0..<colour.width { ppm6 += colour.dark(x, y) ? [0x10, 0x20, 0x80] : [0xFF, 0xF8, 0xC0] }
    }
    let ppm = "\(dir)/colour.ppm"
    try save(ppm, ppm6)

    let plain = page([try modules("Plain PGM")], scale: 3)
    var pgm2 = "P2\n\(plain.width) \(plain.height)\n15\n"
    for y in 0..<plain.height {
      pgm2 += (0..<plain.width).map { plain.dark($0, y) ? "0" : "15" }.joined(separator: " ") + "\n"
    }
    let plainPGM = "\(dir)/plain.pgm"
    try save(plainPGM, Array(pgm2.utf8))

    return Images(
      directory: dir, qr: qr, qrSecond: qrSecond, code128: code128, ean13: ean13, dataMatrix: dataMatrix,
      pdf417: pdf417, binaryQR: binaryQR, blank: blank, twoCodes: twoCodes, ppm: ppm, plainPGM: plainPGM)
  }
}
