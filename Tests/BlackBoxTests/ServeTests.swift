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

  /// One HTTP/1.1 POST of `body` to 127.0.0.1:`port` on a blocking socket of the caller's thread;
  /// the whole response (the server closes after it: `Connection: close`).
  static func post(port: UInt16, _ body: String) -> String? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = port.bigEndian
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard connected == 0 else { return nil }
    let request = Array(
      ("POST /Capture/v1/api HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\n"
        + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body).utf8)
    guard write(fd, request, request.count) == request.count else { return nil }
    var response: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let n = read(fd, &buffer, buffer.count)
      if n <= 0 { break }
      response += buffer[0..<n]
    }
    return String(decoding: response, as: UTF8.self)
  }

  @Test(
    "socket activation: capture serve takes the socket systemd passes (LISTEN_FDS), says so, answers on it, and exits 0 on SIGTERM",
    .enabled(if: Runner.which("systemd-socket-activate") != nil, "systemd-socket-activate is not installed")
  )
  func socketActivation() async throws {
    let sandbox = try Sandbox()
    let activate = try #require(Runner.which("systemd-socket-activate"))
    let errPath = sandbox.path("err-serve")
    var pid: pid_t = 0
    var port: UInt16 = 0
    var reply: String?
    // A free port is taken and given back for systemd-socket-activate to bind; another process (a
    // parallel test, a CI run beside this one) may take it in between, and systemd-socket-activate
    // then exits with "Address already in use". That race is the test's, not capture's: try again
    // with another port (at most 5 times).
    for _ in 0..<5 {
      let (probe, free) = try Self.occupy()
      close(probe)
      port = free
      var actions = posix_spawn_file_actions_t()
      posix_spawn_file_actions_init(&actions)
      defer { posix_spawn_file_actions_destroy(&actions) }
      posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
      posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
      posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
      // systemd-socket-activate binds, sets LISTEN_FDS and LISTEN_PID and execs capture in the same
      // process, so `pid` is capture's.
      let spawned = Runner.spawn(
        &pid, activate,
        [
          "-l", "127.0.0.1:\(port)", "-E", "XDG_STATE_HOME=\(sandbox.stateHome)", try Product.path(), "serve",
          "--listen", "127.0.0.1:\(port)",
        ],
        environment: sandbox.environment, actions: &actions)
      try #require(spawned == 0)
      // systemd-socket-activate execs capture on the first connection; until it listens, connect is
      // refused and tried again. It ending first is the lost race.
      let asked = port
      var exited = false
      await waitUntil(
        "an answer on 127.0.0.1:\(port), or systemd-socket-activate ending", every: .milliseconds(50)
      ) {
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid {
          exited = true
          return true
        }
        reply = await onOwnThread {
          Self.post(
            port: asked,
            #"{"jsonrpc":"2.0","id":0,"method":"openclient","params":{"appId":"a","developerId":"b","appKey":"c"}}"#
          )
        }
        return reply != nil
      }
      let said = String(decoding: (try? sandbox.read(errPath)) ?? [], as: UTF8.self)
      if exited && said.contains("Address already in use") { continue }
      try #require(!exited, "systemd-socket-activate ended: \(said)")
      break
    }
    var stderr = ""
    await waitUntil("capture saying it serves") {
      stderr = String(decoding: (try? sandbox.read(errPath)) ?? [], as: UTF8.self)
      return stderr.contains("capture: serving CaptureJS")
    }
    kill(pid, SIGTERM)
    let child = pid
    let ended = await onOwnThread { Runner.reap(child, deadline: Runner.monotonicSeconds() + 10) }
    #expect(reply?.hasPrefix("HTTP/1.1 200") == true, "\(reply ?? "no reply")")
    #expect(reply?.contains(#"{"id":0,"jsonrpc":"2.0","result":{"handle":"#) == true, "\(reply ?? "")")
    #expect(
      stderr.contains(
        "capture: serving CaptureJS on http://127.0.0.1:\(port) (JSON-RPC POST /Capture/v1/api, WebSocket ws://127.0.0.1:\(port)/Capture/v1/api; listening socket from systemd)\n"
      ), "\(stderr)")
    #expect(ended.status == 0 && ended.signal == nil && !ended.killed)
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
    let (prefix, paths) = try await UnitInstall.install(
      sandbox, ["capture-serve.socket", "capture-serve.service"])
    let service = String(decoding: try sandbox.read(paths[1]), as: UTF8.self)
    #expect(
      ServiceUnitTests.keys(service)["Service"]?["ExecStart"] == [
        "\(prefix)/bin/capture serve --listen 127.0.0.1:18481"
      ])
    try await UnitInstall.verify(
      sandbox, prefix: prefix, paths, analyze: try #require(Runner.which("systemd-analyze")))
    try await UnitInstall.uninstall(sandbox, prefix: prefix, paths)
  }
}
