import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The systemd user units of contrib/ as `make install-service` installs them into a sandbox PREFIX,
/// for the unit tests of listen, serve and the fleet.
enum UnitInstall {
  /// Runs `make install-service PREFIX=…` and returns the prefix and the installed path of each of
  /// `names` (under PREFIX/lib/systemd/user), each checked to be there with mode 0644.
  static func install(_ sandbox: Sandbox, _ names: [String]) async throws -> (prefix: String, paths: [String])
  {
    let prefix = sandbox.path("prefix")
    let make = try await Runner.run(
      "/usr/bin/make",
      ["-C", DocsTests.repositoryRoot, "--no-print-directory", "install-service", "PREFIX=\(prefix)"],
      environment: sandbox.environment)
    #expect(make.status == 0, "\(make)")
    let paths = names.map { prefix + "/lib/systemd/user/" + $0 }
    for path in paths {
      var info = stat()
      #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o644, "\(path)")
    }
    return (prefix, paths)
  }

  /// `systemd-analyze verify --user` of the installed units, PREFIX/bin/capture being the capture under
  /// test (the verifier checks that ExecStart's program exists). Any output is a finding: unknown keys
  /// and bad values are only warnings. --man=no: the man pages are checked by DocsTests, not installed.
  static func verify(_ sandbox: Sandbox, prefix: String, _ paths: [String], analyze: String) async throws {
    _ = try sandbox.makeDirectory("prefix/bin")
    #expect(symlink(try Product.path(), prefix + "/bin/capture") == 0)
    // A user manager needs XDG_RUNTIME_DIR.
    let runtime = try sandbox.makeDirectory("runtime")
    chmod(runtime, 0o700)
    var environment = sandbox.environment
    environment["XDG_RUNTIME_DIR"] = runtime
    let verify = try await Runner.run(
      analyze, ["verify", "--user", "--man=no"] + paths, environment: environment)
    #expect(verify.status == 0, "\(verify)")
    #expect(verify.stdout.isEmpty && verify.stderr.isEmpty, "\(verify)")
  }

  /// `make uninstall PREFIX=…` removes every one of `paths`.
  static func uninstall(_ sandbox: Sandbox, prefix: String, _ paths: [String]) async throws {
    let uninstall = try await Runner.run(
      "/usr/bin/make",
      ["-C", DocsTests.repositoryRoot, "--no-print-directory", "uninstall", "PREFIX=\(prefix)"],
      environment: sandbox.environment)
    #expect(uninstall.status == 0, "\(uninstall)")
    for path in paths { #expect(!sandbox.exists(path), "\(path)") }
  }
}
