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
    "make install-service puts the unit in PREFIX/lib/systemd/user for PREFIX/bin/capture; systemd-analyze verify --user accepts it; make uninstall removes it"
  )
  func installAndVerify() async throws {
    let sandbox = try Sandbox()
    let prefix = sandbox.path("prefix")
    let make = try await Runner.run(
      "/usr/bin/make",
      ["-C", DocsTests.repositoryRoot, "--no-print-directory", "install-service", "PREFIX=\(prefix)"],
      environment: sandbox.environment)
    #expect(make.status == 0, "\(make)")
    let installed = prefix + "/lib/systemd/user/capture-listen.service"
    var info = stat()
    #expect(stat(installed, &info) == 0 && info.st_mode & 0o777 == 0o644)
    let text = String(decoding: try sandbox.read(installed), as: UTF8.self)
    #expect(
      Self.keys(text)["Service"]?["ExecStart"] == [
        "\(prefix)/bin/capture listen --json --output %S/capture/events.jsonl"
      ])

    // The verifier checks ExecStart's program exists: give it the capture under test.
    _ = try sandbox.makeDirectory("prefix/bin")
    #expect(symlink(try Product.path(), prefix + "/bin/capture") == 0)
    if let analyze = Runner.which("systemd-analyze") {
      // A user manager needs XDG_RUNTIME_DIR; --man=no: the man page is checked by DocsTests, not
      // installed here.
      let runtime = try sandbox.makeDirectory("runtime")
      chmod(runtime, 0o700)
      var environment = sandbox.environment
      environment["XDG_RUNTIME_DIR"] = runtime
      let verify = try await Runner.run(
        analyze, ["verify", "--user", "--man=no", installed], environment: environment)
      #expect(verify.status == 0, "\(verify)")
      // Unknown keys and bad values are only warnings: any output is a finding.
      #expect(verify.stdout.isEmpty && verify.stderr.isEmpty, "\(verify)")
    }

    let uninstall = try await Runner.run(
      "/usr/bin/make",
      ["-C", DocsTests.repositoryRoot, "--no-print-directory", "uninstall", "PREFIX=\(prefix)"],
      environment: sandbox.environment)
    #expect(uninstall.status == 0, "\(uninstall)")
    #expect(!sandbox.exists(installed))
  }
}
