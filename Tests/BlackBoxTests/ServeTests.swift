// capture serve as a user runs it: the port is bound before any device is opened, and the systemd
// units contrib/capture-serve.socket and .service are installed by `make install-service` and pass
// systemd's own verifier.

import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite("capture serve: binding and systemd units")
struct ServeTests {
  /// A listening TCP socket on 127.0.0.1 at a port the kernel picks: (descriptor, port).
  static func occupy() throws -> (Int32, UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    try #require(fd >= 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    try #require(bound == 0 && listen(fd, 4) == 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return (fd, UInt16(bigEndian: address.sin_port))
  }

  @Test(
    "a port already in use: one error line and exit 25 (ESKT_ALREADYEXISTING), before the DEVICE is opened")
  func busyPort() async throws {
    let sandbox = try Sandbox()
    let (fd, port) = try Self.occupy()
    defer { close(fd) }
    // The DEVICE does not exist: opening it would fail with its own code (63), so 25 proves the
    // bind came first.
    let outcome = try await sandbox.capture(
      "serve", "--listen", "127.0.0.1:\(port)", "serial:/dev/capture-no-such-tty")
    #expect(outcome.status == 25)
    #expect(
      String(decoding: outcome.stderr, as: UTF8.self)
        == "capture: ESKT_ALREADYEXISTING (-25): cannot listen on 127.0.0.1:\(port): address already in use (another program listens there)\n"
    )
    #expect(outcome.stdout.isEmpty)
  }

  @Test("--listen and --allow-origin are checked before anything starts: usage errors, exit 18")
  func usage() async throws {
    let sandbox = try Sandbox()
    for arguments in [
      ["serve", "--listen", "18481"], ["serve", "--listen", "127.0.0.1:99999"],
      ["serve", "--allow-origin", "shop.example"], ["serve", "--allow-origin", "https://shop.example/path"],
    ] {
      let outcome = try await sandbox.capture(arguments)
      #expect(outcome.status == 18, "\(arguments)")
      #expect(
        String(decoding: outcome.stderr, as: UTF8.self).hasPrefix("capture: ESKT_INVALIDPARAMETER (-18): --"))
    }
  }

  static func units(_ prefix: String) -> [String] {
    ["capture-serve.socket", "capture-serve.service"].map { prefix + "/lib/systemd/user/" + $0 }
  }

  @Test("the socket listens on 127.0.0.1:18481 for capture-serve.service, which runs capture serve")
  func keys() throws {
    let root = DocsTests.repositoryRoot + "/contrib/"
    let socket = ServiceUnitTests.keys(
      try String(contentsOfFile: root + "capture-serve.socket", encoding: .utf8))
    #expect(socket["Socket"]?["ListenStream"] == ["127.0.0.1:18481"])
    #expect(socket["Socket"]?["Service"] == ["capture-serve.service"])
    #expect(socket["Install"]?["WantedBy"] == ["sockets.target"])
    let service = ServiceUnitTests.keys(
      try String(contentsOfFile: root + "capture-serve.service", encoding: .utf8))
    #expect(service["Service"]?["ExecStart"] == ["/usr/local/bin/capture serve --listen 127.0.0.1:18481"])
    #expect(service["Service"]?["ExecReload"] == ["/bin/kill -HUP $MAINPID"])
    #expect(service["Service"]?["RestartPreventExitStatus"] == ["18 25"])
    #expect(service["Unit"]?["Requires"] == ["capture-serve.socket"])
  }

  @Test(
    "make install-service installs both units for PREFIX/bin/capture; systemd-analyze verify --user accepts them; make uninstall removes them",
    .enabled(if: Runner.which("systemd-analyze") != nil, "systemd-analyze is not installed")
  )
  func installAndVerify() async throws {
    let sandbox = try Sandbox()
    let prefix = sandbox.path("prefix")
    let make = try await Runner.run(
      "/usr/bin/make",
      ["-C", DocsTests.repositoryRoot, "--no-print-directory", "install-service", "PREFIX=\(prefix)"],
      environment: sandbox.environment)
    #expect(make.status == 0, "\(make)")
    for unit in Self.units(prefix) {
      var info = stat()
      #expect(stat(unit, &info) == 0 && info.st_mode & 0o777 == 0o644, "\(unit)")
    }
    let service = String(decoding: try sandbox.read(Self.units(prefix)[1]), as: UTF8.self)
    #expect(
      ServiceUnitTests.keys(service)["Service"]?["ExecStart"] == [
        "\(prefix)/bin/capture serve --listen 127.0.0.1:18481"
      ])

    _ = try sandbox.makeDirectory("prefix/bin")
    #expect(symlink(try Product.path(), prefix + "/bin/capture") == 0)
    let analyze = try #require(Runner.which("systemd-analyze"))
    let runtime = try sandbox.makeDirectory("runtime")
    chmod(runtime, 0o700)
    var environment = sandbox.environment
    environment["XDG_RUNTIME_DIR"] = runtime
    let verify = try await Runner.run(
      analyze, ["verify", "--user", "--man=no"] + Self.units(prefix), environment: environment)
    #expect(verify.status == 0, "\(verify)")
    #expect(verify.stdout.isEmpty && verify.stderr.isEmpty, "\(verify)")

    let uninstall = try await Runner.run(
      "/usr/bin/make",
      ["-C", DocsTests.repositoryRoot, "--no-print-directory", "uninstall", "PREFIX=\(prefix)"],
      environment: sandbox.environment)
    #expect(uninstall.status == 0, "\(uninstall)")
    for unit in Self.units(prefix) { #expect(!sandbox.exists(unit)) }
  }
}
