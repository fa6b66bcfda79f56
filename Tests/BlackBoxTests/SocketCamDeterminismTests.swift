import Foundation
import Testing

/// An image gives the same codes however SocketCam gets it: alone, in a batch of repeated --image,
/// from --dir, or on standard input. The set holds codes photographed the way users do (turned, in
/// perspective, blurred, noisy, compressed), an add-on and an ECI payload, so ZBar's QR reader, whose
/// random state once carried from one image to the next, and both decoders' merging are exercised.
@Suite(.enabled(if: Runner.which("convert") != nil, "ImageMagick's convert is not installed"))
struct SocketCamDeterminismTests {
  /// (origin, data source id, base64 bytes, text) of every decodedData line.
  typealias Code = [String]

  static func codes(_ outcome: Outcome, origin: String? = nil) -> [Code] {
    Shape.jsonLines(outcome).compactMap { line in
      guard line["event"]?.string == "decodedData" else { return nil }
      return [
        origin ?? line["origin"]?.string ?? "?", String(line["dataSource"]?["id"]?.int ?? -1),
        line["bytes"]?.string ?? "", line["text"]?.string ?? "",
      ]
    }
  }

  func makeImages(_ sandbox: Sandbox) async throws -> [String] {
    let tools = ["PATH": "/usr/bin:/bin"]
    func tool(_ name: String, _ arguments: [String]) async throws {
      let outcome = try await Runner.run(
        try #require(Runner.which(name)), arguments, environment: tools, directory: sandbox.root)
      try #require(outcome.status == 0, "\(name) \(arguments): \(outcome)")
    }
    try FileManager.default.createDirectory(atPath: sandbox.path("set"), withIntermediateDirectories: true)
    var names: [String] = []
    for i in 0..<10 {
      let clean = "clean\(i).png"
      try await tool("qrencode", ["-s", "3", "-o", clean, "https://example.com/item/\(i)/\(i * 7919)"])
      let name = "set/qr\(i).\(i % 3 == 0 ? "jpg" : "png")"
      // Turned, in perspective, blurred, noisy and (every third) JPEG-compressed.
      try await tool(
        "convert",
        [
          clean, "-background", "white", "-virtual-pixel", "white", "-distort", "Perspective",
          "0,0 \(i % 7),\(i % 5) 100,0 \(94 - i % 6),\(i % 9) 0,100 \(i % 4),\(96 - i % 7) 100,100 \(95 + i % 3),\(92 + i % 5)",
          "-rotate", "\(i * 37 % 360)", "-blur", "0x0.\(i % 9)", "-attenuate", "0.\(i % 5 + 2)", "+noise",
          "Gaussian", "-resize", "\(60 + i * 4)%", "-quality", "45", name,
        ])
      names.append(name)
    }
    try await tool("zint", ["-b", "13", "-d", "9781234567897+12345", "-o", "set/book.png"])
    try await tool("zint", ["-b", "58", "--eci=3", "-d", "Grüße", "--scale=3", "-o", "set/eci.png"])
    try await tool("zint", ["-b", "71", "--quietzones", "--scale=4", "-d", "matrix", "-o", "set/dm.png"])
    names += ["set/book.png", "set/dm.png", "set/eci.png"]
    return names.sorted()
  }

  @Test("alone, as a batch, from --dir and from stdin: the same codes per image, in order")
  func sameCodesEveryWay() async throws {
    let sandbox = try Sandbox()
    let names = try await makeImages(sandbox)
    // Add-ons are off by default (docs/capture-sdk.md §6.4); the set's book carries one, read as well.
    #expect(try await sandbox.capture("set", "socketcam", "data-source", "ean-add-on", "enable").status == 0)
    var alone: [Code] = []
    var fromStdin: [Code] = []
    for name in names {
      alone += Self.codes(try await sandbox.capture(["--json", "listen", "socketcam", "--image", name]))
      let bytes = try sandbox.read(sandbox.path(name))
      fromStdin += Self.codes(
        try await sandbox.capture(["--json", "listen", "socketcam", "--image", "-"], stdin: bytes),
        origin: name)
    }
    let batch = Self.codes(
      try await sandbox.capture(["--json", "listen", "socketcam"] + names.flatMap { ["--image", $0] }))
    let directory = Self.codes(try await sandbox.capture(["--json", "listen", "socketcam", "--dir", "set"]))
      .map { code in ["set/" + code[0].split(separator: "/").last!] + code.dropFirst() }
    // The set is not trivial: most photographed codes and every clean one decode.
    #expect(Set(alone.map { $0[0] }).count >= 10, "\(alone)")
    #expect(
      alone.contains([
        "set/book.png", "19", Data("978123456789712345".utf8).base64EncodedString(), "978123456789712345",
      ]))
    #expect(alone.contains { $0[0] == "set/eci.png" && $0[3] == "Grüße" })
    #expect(batch == alone)
    #expect(directory == alone)
    #expect(fromStdin == alone)
  }
}
