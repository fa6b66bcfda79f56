// contrib/capture-listen-mqtt.service: the systemd user unit that runs listen for a fleet (--mqtt),
// installed by `make install-service` (docs/fleet.md).
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite("contrib/capture-listen-mqtt.service") struct FleetUnitTests {
  static let name = "capture-listen-mqtt.service"

  @Test(
    "the unit runs listen with --mqtt, its password from a file, and does not restart on what restarting cannot fix"
  )
  func keys() throws {
    let unit = ServiceUnitTests.keys(
      try String(contentsOfFile: DocsTests.repositoryRoot + "/contrib/" + Self.name, encoding: .utf8))
    let exec = try #require(unit["Service"]?["ExecStart"]?.first)
    #expect(exec.hasPrefix("/usr/local/bin/capture listen "))
    #expect(exec.contains("--mqtt ${CAPTURE_MQTT_URL}"))
    // The password never on the command line: a file under the user's configuration.
    #expect(exec.contains("--mqtt-password-file %E/capture/mqtt-password"))
    #expect(unit["Service"]?["RestartPreventExitStatus"] == ["18 25 37"])
    #expect(unit["Service"]?["UMask"] == ["0077"])
    #expect(unit["Install"]?["WantedBy"] == ["default.target"])
  }

  @Test(
    "make install-service installs it for PREFIX/bin/capture; systemd-analyze verify --user accepts it; make uninstall removes it",
    .enabled(if: Runner.which("systemd-analyze") != nil, "systemd-analyze is not installed")
  )
  func installAndVerify() async throws {
    let sandbox = try Sandbox()
    let (prefix, paths) = try await UnitInstall.install(sandbox, [Self.name])
    let installed = ServiceUnitTests.keys(String(decoding: try sandbox.read(paths[0]), as: UTF8.self))
    #expect(installed["Service"]?["ExecStart"]?.first?.hasPrefix("\(prefix)/bin/capture listen ") == true)
    try await UnitInstall.verify(
      sandbox, prefix: prefix, paths, analyze: try #require(Runner.which("systemd-analyze")))
    try await UnitInstall.uninstall(sandbox, prefix: prefix, paths)
  }
}
