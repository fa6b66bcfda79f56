#if canImport(Glibc)
  import Glibc
#endif

/// Starting a child process the one way capture does (a `--confirm` command, `bluetoothd --version`
/// for `doctor`): posix_spawn with the caller's file actions, a clean signal state and a process
/// group of its own.
public enum ChildProcess {
  /// Spawns `path` with `arguments` (argv[0] is `path`) and `environment` ("KEY=VALUE"); `actions`
  /// sets up the child's descriptors. The child gets no blocked signals and SIGPIPE, SIGINT and
  /// SIGTERM at their defaults, since children of Swift threads inherit a blocked mask and capture
  /// ignores SIGPIPE (docs/swift-on-linux.md); and a process group of its own, so a child that runs
  /// out of time is killed with everything it started (`kill(-pid, …)`). Returns the pid, or the
  /// errno posix_spawn gave.
  public static func spawn(
    _ path: String, _ arguments: [String], environment: [String],
    actions: inout posix_spawn_file_actions_t
  ) -> Result<pid_t, Errno> {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for s in [SIGPIPE, SIGINT, SIGTERM] { sigaddset(&defaults, s) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setpgroup(&attributes, 0)
    posix_spawnattr_setflags(
      &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))
    let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
    let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
    defer {
      for p in argv { free(p) }
      for p in envp { free(p) }
    }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
    return spawned == 0 ? .success(pid) : .failure(Errno(spawned))
  }
}
