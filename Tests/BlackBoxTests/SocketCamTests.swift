// SocketCam end to end: `trigger socketcam start` on images made with qrencode and zint.

import Foundation
import Testing

@Suite("SocketCam trigger on images")
struct SocketCamTests {
  static let symbologies: [String] = ["qr", "code128", "ean13", "dataMatrix", "pdf417"]

  static func sample(_ name: String, _ images: Images) -> Sample {
    switch name {
    case "qr": images.qr
    case "code128": images.code128
    case "ean13": images.ean13
    case "dataMatrix": images.dataMatrix
    case "pdf417": images.pdf417
    default: images.binaryQR
    }
  }

  @Test("each symbology decodes to its text, data source and bytes", arguments: symbologies)
  func decodes(_ name: String) async throws {
    let images = try await Images.get()
    let sample = Self.sample(name, images)
    let sandbox = try Sandbox()

    let plain = try await sandbox.capture("trigger", "socketcam", "start", "--image", sample.path)
    #expect(plain.status == 0, "\(plain)")
    #expect(plain.out == sample.text + "\n")
    #expect(plain.stderr.isEmpty, "\(plain)")

    let json = try await sandbox.capture("--json", "trigger", "socketcam", "start", "--image", sample.path)
    #expect(json.status == 0, "\(json)")
    let events = Shape.jsonLines(json)
    #expect(events.count == 1, "\(json)")
    Shape.expectDecoded(
      events.first, text: sample.text, source: sample.source, base64: sample.base64, origin: sample.path)
    // bytes is the base64 of exactly the data.
    #expect(
      events.first?["bytes"]?.string.flatMap { Data(base64Encoded: $0) }.map { [UInt8]($0) } == sample.bytes)
  }

  /// Tests/Fixtures/README.md says how the image was drawn (zint 2.11 cannot).
  @Test("a DX film edge code reads as capture's DX Film Edge data source (513) and can be turned off")
  func dxFilmEdge() async throws {
    let image = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .appendingPathComponent("../Fixtures/dx-film-edge-77-2-3A.png").standardized.path
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture("--json", "trigger", "socketcam", "start", "--image", image)
    #expect(outcome.status == 0, "\(outcome)")
    let events = Shape.jsonLines(outcome)
    #expect(events.count == 1, "\(outcome)")
    #expect(events.first?["text"]?.string == "77-2/3A")
    #expect(events.first?["dataSource"]?["id"]?.int == 513)
    #expect(events.first?["dataSource"]?["name"]?.string == "DX Film Edge")
    let off = try await sandbox.capture("set", "socketcam", "data-source", "dx-film-edge", "disable")
    #expect(off.status == 0, "\(off)")
    let none = try await sandbox.capture("trigger", "socketcam", "start", "--image", image)
    #expect(none.status == 17, "\(none)")
  }

  @Test("QR Code corner points are the symbol's corners, clockwise from top-left")
  func qrPoints() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture(
      "--json", "trigger", "socketcam", "start", "--image", images.qr.path)
    // qrencode's defaults: 3 pixels a module, a 4-module margin; "Hello QR" is a version 1 (21×21) symbol.
    let corners = [(12, 12), (75, 12), (75, 75), (12, 75)].map { x, y in
      JSONValue.object([("x", .number(String(x))), ("y", .number(String(y)))])
    }
    #expect(Shape.jsonLines(outcome).first?["points"] == .array(corners))
  }

  @Test("a batch prints every code, text alone per line, in command-line order")
  func batchPlain() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let all = [images.ean13, images.qr, images.pdf417, images.code128, images.dataMatrix, images.qrSecond]
    let outcome = try await sandbox.capture(
      ["trigger", "socketcam", "start"] + all.flatMap { ["--image", $0.path] })
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.outLines == all.map(\.text))
    #expect(outcome.stderr.isEmpty)

    let json = try await sandbox.capture(
      ["--json", "trigger", "socketcam", "start"] + all.flatMap { ["--image", $0.path] })
    let events = Shape.jsonLines(json)
    #expect(events.count == all.count)
    for (event, sample) in zip(events, all) {
      Shape.expectDecoded(
        event, text: sample.text, source: sample.source, base64: sample.base64, origin: sample.path)
    }
  }

  @Test("relative paths are reported as given")
  func relativeOrigin() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    try sandbox.copy(images.qr.path, to: "in/label.png")
    let outcome = try await sandbox.capture(
      "--json", "trigger", "socketcam", "start", "--image", "in/label.png")
    #expect(outcome.status == 0)
    Shape.expectDecoded(
      Shape.jsonLines(outcome).first, text: images.qr.text, source: images.qr.source,
      base64: images.qr.base64,
      origin: "in/label.png")
  }

  @Test("a missing file in a batch: the good file's code is still printed, exit 63 naming the file")
  func batchWithMissingFile() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let missing = sandbox.path("missing.png")
    let message = "cannot open '\(missing)': No such file or directory"
    for order in [[missing, images.qr.path], [images.qr.path, missing]] {
      let outcome = try await sandbox.capture(
        ["trigger", "socketcam", "start"] + order.flatMap { ["--image", $0] })
      #expect(outcome.status == 63, "\(outcome)")
      #expect(outcome.outLines == [images.qr.text])
      #expect(outcome.errLines == ["capture: ESKT_FILENOTFOUND (-63): \(message)"])
    }
    let json = try await sandbox.capture(
      "--json", "trigger", "socketcam", "start", "--image", images.qr.path, "--image", missing)
    #expect(json.status == 63)
    let lines = Shape.jsonLines(json)
    #expect(lines.count == 2)
    Shape.expectDecoded(
      lines.first, text: images.qr.text, source: images.qr.source, base64: images.qr.base64,
      origin: images.qr.path)
    #expect(
      lines.last
        == .object([
          (
            "error",
            .object([
              ("code", .number("-63")), ("message", .string(message)), ("name", .string("ESKT_FILENOTFOUND")),
            ])
          )
        ]))
  }

  @Test("the first error decides the exit status; later files are still decoded")
  func firstErrorWins() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let truncated = try sandbox.write("truncated.png", Array(try sandbox.read(images.qr.path).prefix(100)))
    let missing = sandbox.path("missing.png")
    let outcome = try await sandbox.capture(
      "trigger", "socketcam", "start", "--image", truncated, "--image", missing, "--image", images.ean13.path)
    #expect(outcome.status == 34, "\(outcome)")
    #expect(outcome.outLines == [images.ean13.text])
    #expect(outcome.errLines.count == 2)
    #expect(
      outcome.errLines.first?.hasPrefix("capture: ESKT_UNABLEREADFILE (-34): cannot decode '\(truncated)': ")
        == true)
    #expect(
      outcome.errLines.last
        == "capture: ESKT_FILENOTFOUND (-63): cannot open '\(missing)': No such file or directory")
  }

  @Test("a truncated PNG exits 34 naming the file")
  func truncatedPNG() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let truncated = try sandbox.write("truncated.png", Array(try sandbox.read(images.qr.path).prefix(100)))
    let outcome = try await sandbox.capture("trigger", "socketcam", "start", "--image", truncated)
    #expect(outcome.status == 34, "\(outcome)")
    #expect(outcome.stdout.isEmpty)
    #expect(outcome.errLines.count == 1)
    #expect(
      outcome.err.hasPrefix("capture: ESKT_UNABLEREADFILE (-34): cannot decode '\(truncated)': "),
      "\(outcome)")
  }

  @Test("an empty file exits 34")
  func emptyFile() async throws {
    let sandbox = try Sandbox()
    let empty = try sandbox.write("empty.png", [])
    Shape.expectFailure(
      try await sandbox.capture("trigger", "socketcam", "start", "--image", empty), status: 34,
      name: "ESKT_UNABLEREADFILE", message: "cannot decode '\(empty)': empty file")
  }

  @Test("a file that is not an image exits 34")
  func notAnImage() async throws {
    let sandbox = try Sandbox()
    let text = try sandbox.write("notes.png", "just some text\n")
    let outcome = try await sandbox.capture("trigger", "socketcam", "start", "--image", text)
    #expect(outcome.status == 34, "\(outcome)")
    #expect(outcome.stdout.isEmpty)
    #expect(
      outcome.err.hasPrefix("capture: ESKT_UNABLEREADFILE (-34): cannot decode '\(text)': "), "\(outcome)")
  }

  @Test("an unreadable file exits 64", .enabled(if: getuid() != 0, "root reads every file"))
  func accessDenied() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let locked = try sandbox.copy(images.qr.path, to: "locked.png")
    chmod(locked, 0)
    let outcome = try await sandbox.capture("trigger", "socketcam", "start", "--image", locked)
    #expect(outcome.status == 64, "\(outcome)")
  }

  @Test("an image without a barcode exits 17")
  func blankImage() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    Shape.expectFailure(
      try await sandbox.capture("trigger", "socketcam", "start", "--image", images.blank), status: 17,
      name: "ESKT_NOTFOUND", message: "no barcode found in '\(images.blank)'")
    let json = try await sandbox.capture("--json", "trigger", "socketcam", "start", "--image", images.blank)
    #expect(json.status == 17)
    Shape.expectErrorObject(
      json, code: -17, name: "ESKT_NOTFOUND", message: "no barcode found in '\(images.blank)'")
  }

  @Test("--dir decodes in name order and skips a non-image with a warning")
  func directoryWithNonImage() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    try sandbox.copy(images.ean13.path, to: "scans/b.png")
    try sandbox.copy(images.qr.path, to: "scans/a.png")
    try sandbox.copy(images.code128.path, to: "scans/c.png")
    try sandbox.write("scans/readme.txt", "not an image\n")
    try sandbox.write("scans/.hidden", "dot files are skipped silently\n")
    let outcome = try await sandbox.capture("trigger", "socketcam", "start", "--dir", "scans")
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.outLines == [images.qr.text, images.ean13.text, images.code128.text])
    #expect(outcome.errLines == ["capture: skipping 'scans/readme.txt': not a PNG, JPEG or PNM image"])
    // -q keeps warnings off stderr.
    let quiet = try await sandbox.capture("-q", "trigger", "socketcam", "start", "--dir", "scans")
    #expect(quiet.status == 0)
    #expect(quiet.outLines == [images.qr.text, images.ean13.text, images.code128.text])
    #expect(quiet.stderr.isEmpty)
  }

  @Test("--dir does not recurse: a subdirectory is skipped with a warning")
  func subdirectory() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    try sandbox.copy(images.qr.path, to: "top/a.png")
    try sandbox.copy(images.ean13.path, to: "top/sub/b.png")
    let outcome = try await sandbox.capture("trigger", "socketcam", "start", "--dir", "top/")
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.outLines == [images.qr.text])
    #expect(outcome.errLines == ["capture: skipping directory 'top/sub' (--dir does not recurse)"])
  }

  @Test("a missing --dir exits 63")
  func missingDirectory() async throws {
    let sandbox = try Sandbox()
    Shape.expectFailure(
      try await sandbox.capture("trigger", "socketcam", "start", "--dir", "nowhere"), status: 63,
      name: "ESKT_FILENOTFOUND", message: "cannot open directory 'nowhere': No such file or directory")
  }

  @Test("--image - reads the image from standard input")
  func standardInput() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let bytes = try sandbox.read(images.pdf417.path)
    let plain = try await sandbox.capture(["trigger", "socketcam", "start", "--image", "-"], stdin: bytes)
    #expect(plain.status == 0, "\(plain)")
    #expect(plain.out == images.pdf417.text + "\n")
    let json = try await sandbox.capture(
      ["--json", "trigger", "socketcam", "start", "--image", "-"], stdin: bytes)
    Shape.expectDecoded(
      Shape.jsonLines(json).first, text: images.pdf417.text, source: images.pdf417.source,
      base64: images.pdf417.base64, origin: "-")
    // Nothing on stdin is an unreadable image, named as standard input.
    Shape.expectFailure(
      try await sandbox.capture("trigger", "socketcam", "start", "--image", "-"), status: 34,
      name: "ESKT_UNABLEREADFILE", message: "cannot decode standard input: empty file")
  }

  @Test("a binary QR payload: base64 bytes are byte-exact, text escapes the invalid bytes")
  func binaryPayload() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture(
      "--json", "trigger", "socketcam", "start", "--image", images.binaryQR.path)
    #expect(outcome.status == 0, "\(outcome)")
    let event = Shape.jsonLines(outcome).first
    Shape.expectDecoded(
      event, text: images.binaryQR.text, source: images.binaryQR.source, base64: images.binaryQR.base64,
      origin: images.binaryQR.path)
    let decoded = event?["bytes"]?.string.flatMap { Data(base64Encoded: $0) }.map { [UInt8]($0) }
    #expect(decoded == Images.binaryPayload)
    // The control characters travel escaped in the JSON text, never raw.
    #expect(outcome.out.contains(#""text":"\u0000\\xFF\u0001\\x80binary\\xFE\n\u007f""#), "\(outcome.out)")
  }

  @Test("--camera on a device that does not exist exits 32")
  func missingCamera() async throws {
    let sandbox = try Sandbox()
    let message = "camera /dev/video99 is not available: /dev/video99: No such file or directory"
    Shape.expectFailure(
      try await sandbox.capture("trigger", "socketcam", "start", "--camera", "/dev/video99"), status: 32,
      name: "ESKT_NOTAVAILABLE", message: message)
    let json = try await sandbox.capture(
      "--json", "trigger", "socketcam", "start", "--camera", "/dev/video99")
    #expect(json.status == 32, "\(json)")
    Shape.expectErrorObject(json, code: -32, name: "ESKT_NOTAVAILABLE", message: message)
  }

  @Test("listen --camera on a device that does not exist exits 32 (and does not hang)")
  func listenMissingCamera() async throws {
    let sandbox = try Sandbox()
    let message = "camera /dev/video99 is not available: /dev/video99: No such file or directory"
    let outcome = try await sandbox.capture(["listen", "--camera", "/dev/video99"], timeLimit: 120)
    #expect(outcome.status == 32, "\(outcome)")
    #expect(outcome.errLines == ["capture: ESKT_NOTAVAILABLE (-32): \(message)"])
    #expect(outcome.stdout.isEmpty)
  }

  static let cameraFormats =
    "GREY, NV12, NV21, NV16, NV61, YU12, YV12, 422P, NM12, NM21, NM16, NM61, YM12, YM21, YM16, YM61, YUYV, YVYU, UYVY, VYUY, RGB3, BGR3, MJPG"

  @Test("--camera-format: an unknown fourcc, or one without --camera, is a one-line usage error (18)")
  func cameraFormatUsageErrors() async throws {
    let sandbox = try Sandbox()
    Shape.expectUsageError(
      try await sandbox.capture(
        "trigger", "socketcam", "start", "--camera", "/dev/video0", "--camera-format", "H264"),
      command: "trigger",
      message: "--camera-format: unknown pixel format 'H264'; use one of \(Self.cameraFormats)")
    // Whatever was typed stays on one line.
    Shape.expectUsageError(
      try await sandbox.capture(["listen", "--camera", "/dev/video0", "--camera-format", "GR\nEY"]),
      command: "listen",
      message: "--camera-format: unknown pixel format 'GR?EY'; use one of \(Self.cameraFormats)")
    Shape.expectUsageError(
      try await sandbox.capture(
        "trigger", "socketcam", "start", "--image", "x.png", "--camera-format", "GREY"),
      command: "trigger", message: "--camera-format works with --camera")
  }

  @Test(
    "--camera-format with a node that is no V4L2 device: 32, the node named, whatever the case of the fourcc")
  func cameraFormatOnANonCamera() async throws {
    let sandbox = try Sandbox()
    Shape.expectFailure(
      try await sandbox.capture(
        "trigger", "socketcam", "start", "--camera", "/dev/null", "--camera-format", "nv12"),
      status: 32, name: "ESKT_NOTAVAILABLE",
      message: "camera /dev/null cannot be used: /dev/null: not a V4L2 device")
    let outcome = try await sandbox.capture(
      ["listen", "--camera", "/dev/null", "--camera-format", "MJPG"], timeLimit: 120)
    #expect(outcome.status == 32, "\(outcome)")
    #expect(
      outcome.errLines == [
        "capture: ESKT_NOTAVAILABLE (-32): camera /dev/null cannot be used: /dev/null: not a V4L2 device"
      ], "\(outcome)")
  }

  @Test("list --cameras: a JSON cameras array of capture nodes (empty without /dev/video*), exit 0")
  func listCameras() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture(["--json", "list", "--cameras"])
    #expect(outcome.status == 0, "\(outcome)")
    let documents = Shape.jsonLines(outcome)
    #expect(documents.count == 1, "\(outcome)")
    let cameras = documents.first?["cameras"]?.array
    #expect(cameras != nil, "\(outcome)")
    let nodes =
      (try? FileManager.default.contentsOfDirectory(atPath: "/dev"))?.filter { $0.hasPrefix("video") } ?? []
    if nodes.isEmpty {
      #expect(cameras?.isEmpty == true)
      let plain = try await sandbox.capture(["list", "--cameras"])
      #expect(plain.status == 0 && plain.stdout.isEmpty && plain.stderr.isEmpty, "\(plain)")
    }
    for camera in cameras ?? [] {
      #expect(camera.keys == ["card", "driver", "formats", "path"], "\(camera)")
      #expect(camera["path"]?.string?.hasPrefix("/dev/video") == true)
    }
    Shape.expectUsageError(
      try await sandbox.capture(["list", "--cameras", "--hid"]), command: "list",
      message: "--hid and --cameras cannot be combined")
  }

  @Test("two codes in one image: one decodedData each")
  func twoCodesInOneImage() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let plain = try await sandbox.capture("trigger", "socketcam", "start", "--image", images.twoCodes)
    #expect(plain.status == 0, "\(plain)")
    #expect(plain.outLines.sorted() == ["Left code", "Right code"])
    let json = try await sandbox.capture(
      "--json", "trigger", "socketcam", "start", "--image", images.twoCodes)
    let events = Shape.jsonLines(json)
    #expect(events.count == 2)
    for event in events {
      let text = event["text"]?.string ?? "?"
      Shape.expectDecoded(
        event, text: text, source: (38, "QR Code"), base64: Data(text.utf8).base64EncodedString(),
        origin: images.twoCodes)
    }
    #expect(Set(events.compactMap { $0["text"]?.string }) == ["Left code", "Right code"])
  }

  @Test("PNM images: binary PPM in colour and plain-text PGM")
  func pnm() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture(
      "trigger", "socketcam", "start", "--image", images.ppm, "--image", images.plainPGM)
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.outLines == ["Colour PPM", "Plain PGM"])
  }

  @Test(
    "formats SocketCam does not read (GIF, BMP, SVG) exit 34 naming the file",
    arguments: ["gif", "bmp", "svg"])
  func unsupportedFormat(_ suffix: String) async throws {
    let zint = try #require(Runner.which("zint"), "zint is not installed")
    let sandbox = try Sandbox()
    let file = sandbox.path("label.\(suffix)")
    let made = try await Runner.run(
      zint, ["-b", "58", "-d", "hello", "-o", file], environment: ["PATH": "/usr/bin:/bin"])
    #expect(made.status == 0, "\(made)")
    let outcome = try await sandbox.capture("trigger", "socketcam", "start", "--image", file)
    #expect(outcome.status == 34, "\(outcome)")
    #expect(outcome.stdout.isEmpty)
    #expect(outcome.errLines.count == 1)
    #expect(
      outcome.err.hasPrefix(
        "capture: ESKT_UNABLEREADFILE (-34): cannot decode '\(file)': not a PNG, JPEG or PNM image"),
      "\(outcome)")
  }

  @Test("trigger --timeout gives up on a source that never ends: exit 42 on time")
  func triggerTimeout() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture(
      ["trigger", "socketcam", "start", "--image", "-", "--timeout", "1s"], timeLimit: 120,
      interaction: Interaction(holdStdinOpen: true))
    Shape.expectFailure(
      outcome, status: 42, name: "ESKT_REQUESTTIMEDOUT", message: "no code was read within 1s")
    #expect(outcome.elapsed < 60, "a 1 s timeout took \(outcome.elapsed) s")
  }

  @Test("trigger continuous and start --wait read a finite source like start")
  func continuousAndWait() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let continuous = try await sandbox.capture(
      "trigger", "socketcam", "continuous", "--image", images.qr.path, "--image", images.code128.path)
    #expect(continuous.status == 0, "\(continuous)")
    #expect(continuous.outLines == [images.qr.text, images.code128.text])
    let wait = try await sandbox.capture(
      "trigger", "socketcam", "start", "--wait", "--image", images.pdf417.path)
    #expect(wait.status == 0, "\(wait)")
    #expect(wait.outLines == [images.pdf417.text])
  }

  @Test("trigger stop has nothing to stop and succeeds quietly")
  func stop() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture("trigger", "socketcam", "stop")
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.stdout.isEmpty)
    #expect(outcome.stderr.isEmpty)
  }
}
