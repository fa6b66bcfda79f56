// contrib/capture-listen.service: the systemd user unit that runs listen as a service, installed by
// `make install-service` (part of `make install`) and checked with systemd's own verifier.

import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite("systemd user unit")
struct ServiceUnitTests {
  static let unit = DocsTests.repositoryRoot + "/contrib/capture-listen.service"

  /// The unit's `Key=value` lines by section (comments and blank lines left out).
  static func keys(_ text: String) -> [String: [String: [String]]] {
    var sections: [String: [String: [String]]] = [:]
    var section = ""
    for raw in text.split(separator: "\n") {
      let line = raw.trimmingCharacters(in: .whitespaces)
      if line.isEmpty || line.hasPrefix("#") { continue }
      if line.hasPrefix("[") && line.hasSuffix("]") {
        section = String(line.dropFirst().dropLast())
        continue
      }
      guard let equals = line.firstIndex(of: "=") else { continue }
      sections[section, default: [:]][String(line[..<equals]), default: []].append(
        String(line[line.index(after: equals)...]))
    }
    return sections
  }

  @Test("the unit runs listen --json --output under %S, restarts on failure, reloads with SIGHUP")
  func keysAreThere() throws {
    let text = try String(contentsOfFile: Self.unit, encoding: .utf8)
    let unit = Self.keys(text)
    #expect(Set(unit.keys) == ["Unit", "Service", "Install"])
    let service = unit["Service"] ?? [:]
    #expect(service["ExecStart"] == ["/usr/local/bin/capture listen --json --output %S/capture/events.jsonl"])
    #expect(service["ExecReload"] == ["/bin/kill -HUP $MAINPID"])
    #expect(service["Restart"] == ["on-failure"])
    #expect(service["RestartSec"] == ["5s"])
    #expect(service["RestartPreventExitStatus"] == ["18"])
    #expect(service["StateDirectory"] == ["capture"])
    #expect(service["NoNewPrivileges"] == ["yes"])
    #expect(unit["Install"]?["WantedBy"] == ["default.target"])
  }

  @Test(
    "make install-service puts the unit in PREFIX/lib/systemd/user for PREFIX/bin/capture; systemd-analyze verify --user accepts it; make uninstall removes it",
    .enabled(if: Runner.which("systemd-analyze") != nil, "systemd-analyze is not installed")
  )
  func installAndVerify() async throws {
    let sandbox = try Sandbox()
    let (prefix, paths) = try await UnitInstall.install(sandbox, ["capture-listen.service"])
    let text = String(decoding: try sandbox.read(paths[0]), as: UTF8.self)
    #expect(
      Self.keys(text)["Service"]?["ExecStart"] == [
        "\(prefix)/bin/capture listen --json --output %S/capture/events.jsonl"
      ])
    try await UnitInstall.verify(
      sandbox, prefix: prefix, paths, analyze: try #require(Runner.which("systemd-analyze")))
    try await UnitInstall.uninstall(sandbox, prefix: prefix, paths)
  }
}
