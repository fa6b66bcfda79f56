// SocketCam end to end on what zxing-cpp 3 reads and Debian's 1.4.0 did not, and the add-on setting.

import Foundation
import Testing

@Suite("SocketCam: zxing-cpp 3's symbologies and EAN add-ons", .enabled(if: Runner.which("zint") != nil))
struct SocketCamSymbologyTests {
  /// Draws `data` as zint symbology `type` into the sandbox; returns its path.
  func zint(_ sandbox: Sandbox, _ name: String, _ type: String, _ data: String, _ extra: [String] = [])
    async throws -> String
  {
    let outcome = try await Runner.run(
      try #require(Runner.which("zint")), ["-b", type, "--quietzones", "-d", data, "-o", name] + extra,
      environment: ["PATH": "/usr/bin:/bin"], directory: sandbox.root)
    try #require(outcome.status == 0, "zint \(type): \(outcome)")
    return sandbox.path(name)
  }

  /// (data source id, name, text) of each decodedData line.
  func reads(_ outcome: Outcome) -> [[String]] {
    Shape.jsonLines(outcome).compactMap { line in
      guard line["event"]?.string == "decodedData" else { return nil }
      return [
        String(line["dataSource"]?["id"]?.int ?? -1), line["dataSource"]?["name"]?.string ?? "",
        line["text"]?.string ?? "",
      ]
    }
  }

  // zint 2.11 (Debian 12) draws no DX film edge: SocketCamTests reads a fixture (Tests/Fixtures/README.md).
  @Test(
    "each symbology zxing-cpp 3 added reaches the output with its data source",
    arguments: [
      ("RMQR", "RMQR 12345", ["--scale=4"], "512", "rMQR Code"),
      ("MICROPDF417", "MICRO PDF 417", ["--scale=3"], "34", "PDF 417 Micro"),
      ("DBAR_LTD", "0950110153001", ["--scale=3"], "25", "GS1 DataBar Limited"),
      ("TELEPEN", "TELEPEN-42", ["--scale=3"], "40", "Telepen"),
    ])
  func newSymbology(_ type: String, _ data: String, _ extra: [String], _ id: String, _ name: String)
    async throws
  {
    let sandbox = try Sandbox()
    let image = try await zint(sandbox, "code.png", type, data, extra)
    let outcome = try await sandbox.capture("--json", "trigger", "socketcam", "start", "--image", image)
    #expect(outcome.status == 0, "\(outcome)")
    let expected = type == "DBAR_LTD" ? "0109501101530010" : data
    #expect(reads(outcome) == [[id, name, expected]], "\(outcome)")
    // Each is selectable like any other data source.
    let off = try await sandbox.capture("set", "socketcam", "data-source", id, "disable")
    #expect(off.status == 0, "\(off)")
    let none = try await sandbox.capture("trigger", "socketcam", "start", "--image", image)
    #expect(none.status == 17, "\(none)")
  }

  @Test("get socketcam data-source all lists capture's own data sources; add-ons are off by default")
  func ownDataSources() async throws {
    let sandbox = try Sandbox()
    let all = try await sandbox.capture("get", "socketcam", "data-source", "all")
    #expect(all.status == 0, "\(all)")
    for line in [
      "rmqr-code enable", "dx-film-edge enable", "ean-add-on disable", "telepen enable",
      "pdf417-micro enable",
      "gs1-databar-limited enable",
    ] {
      #expect(all.outLines.contains(line), "\(line) in \(all.outLines)")
    }
    // By name, by id, and in the groups: rMQR is 2D, DX film edge and the add-on switch 1D.
    #expect(try await sandbox.capture("get", "socketcam", "data-source", "rmqr-code").outLines == ["enable"])
    #expect(try await sandbox.capture("get", "socketcam", "data-source", "514").outLines == ["disable"])
    #expect(
      try await sandbox.capture("get", "socketcam", "data-source", "2d").outLines.contains("rmqr-code enable")
    )
    let oneD = try await sandbox.capture("get", "socketcam", "data-source", "1d").outLines
    #expect(oneD.contains("dx-film-edge enable") && oneD.contains("ean-add-on disable"), "\(oneD)")
  }

  @Test("an EAN-5 add-on is reported only once the ean-add-on data source is enabled")
  func addOnSetting() async throws {
    let sandbox = try Sandbox()
    let image = try await zint(sandbox, "book.png", "EANX", "9781234567897+12345")
    let plain = try await sandbox.capture("trigger", "socketcam", "start", "--image", image)
    #expect(plain.outLines == ["9781234567897"], "\(plain)")
    let on = try await sandbox.capture("set", "socketcam", "data-source", "ean-add-on", "enable")
    #expect(on.status == 0, "\(on)")
    let withAddOn = try await sandbox.capture("trigger", "socketcam", "start", "--image", image)
    #expect(withAddOn.outLines == ["978123456789712345"], "\(withAddOn)")
  }
}
