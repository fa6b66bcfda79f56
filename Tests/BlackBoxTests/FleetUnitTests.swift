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
    let prefix = sandbox.path("prefix")
    let unit = prefix + "/lib/systemd/user/" + Self.name
    let make = try await Runner.run(
      "/usr/bin/make",
      ["-C", DocsTests.repositoryRoot, "--no-print-directory", "install-service", "PREFIX=\(prefix)"],
      environment: sandbox.environment)
    #expect(make.status == 0, "\(make)")
    var info = stat()
    #expect(stat(unit, &info) == 0 && info.st_mode & 0o777 == 0o644, "\(unit)")
    let installed = ServiceUnitTests.keys(String(decoding: try sandbox.read(unit), as: UTF8.self))
    #expect(installed["Service"]?["ExecStart"]?.first?.hasPrefix("\(prefix)/bin/capture listen ") == true)

    _ = try sandbox.makeDirectory("prefix/bin")
    #expect(symlink(try Product.path(), prefix + "/bin/capture") == 0)
    let analyze = try #require(Runner.which("systemd-analyze"))
    let runtime = try sandbox.makeDirectory("runtime")
    chmod(runtime, 0o700)
    var environment = sandbox.environment
    environment["XDG_RUNTIME_DIR"] = runtime
    let verify = try await Runner.run(
      analyze, ["verify", "--user", "--man=no", unit], environment: environment)
    #expect(verify.status == 0, "\(verify)")
    #expect(verify.stdout.isEmpty && verify.stderr.isEmpty, "\(verify)")

    let uninstall = try await Runner.run(
      "/usr/bin/make",
      ["-C", DocsTests.repositoryRoot, "--no-print-directory", "uninstall", "PREFIX=\(prefix)"],
      environment: sandbox.environment)
    #expect(uninstall.status == 0, "\(uninstall)")
    #expect(!sandbox.exists(unit))
  }
}
