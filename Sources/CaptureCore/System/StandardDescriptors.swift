#if canImport(Glibc)
  import Glibc
#endif

/// What a command-line process sets up before it opens anything.
public enum StandardDescriptors {
  /// Makes sure descriptors 0, 1 and 2 are open, as daemons do: a program started with one closed
  /// (`<&-`, `>&-`) would otherwise get it back from its first open(2), pipe(2) or epoll_create(2),
  /// and then read an image from an epoll descriptor or write results into a state file. Each closed
  /// one is opened on /dev/null read-only: reading it is an immediate end of file, and writing it
  /// fails with EBADF exactly as the closed descriptor would, so a closed stdout is still a failed
  /// write (exit 33), never output silently thrown away. Call it first, before anything opens a
  /// descriptor; it is idempotent.
  public static func reserve() {
    for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) < 0 && errno == EBADF {
      // open(2) returns the lowest free descriptor, which is this one: 0–2 are opened in order, so
      // every lower one is already taken when this runs.
      let opened = open("/dev/null", O_RDONLY)
      if opened >= 0 && opened != fd {
        // Only when something below was opened meanwhile (another thread): place it where it belongs.
        _ = dup2(opened, fd)
        close(opened)
      }
    }
  }

  /// A write to a pipe whose reader has gone must fail with EPIPE, not kill the process by SIGPIPE
  /// (exit 141, and the command's own status lost): every writer handles EPIPE itself (the output
  /// writer ends output quietly). Children get the default action back before exec (Confirmation).
  public static func ignoreBrokenPipes() {
    signal(SIGPIPE, SIG_IGN)
  }
}
