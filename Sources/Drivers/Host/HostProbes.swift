import CaptureCore
import Decoders

#if canImport(Glibc)
  import Glibc
#endif

/// The file-system half of `doctor`'s probes: sysfs rfkill switches, /proc, device nodes, the group
/// database, and `bluetoothd --version`. Every call here blocks (briefly, but a /proc or sysfs read is
/// still a system call that can wait), so the probes run on the blocking executor, never on the
/// cooperative pool. Every read is bounded; nothing is opened but small sysfs and /proc files (device
/// nodes are only stat'ed and access-checked: opening a serial port raises DTR).
struct HostProbes: Sendable {
  /// Where /sys, /proc and /dev are (tests point them into a directory of their own).
  var sysRoot = "/sys"
  var procRoot = "/proc"
  var devRoot = "/dev"

  /// The most of any sysfs or /proc file read, and of `bluetoothd --version`'s output.
  static let readLimit = 4096

  // MARK: rfkill

  /// /sys/class/bluetooth/hciN/rfkill*/{soft,hard} (Linux Documentation/ABI/stable/sysfs-class-rfkill:
  /// 1 = blocked); nil when the adapter shows no rfkill switch.
  func rfkill(_ adapter: String) -> RfkillState? {
    guard adapter.allSatisfy({ $0.isLetter || $0.isNumber }) else { return nil }
    let directory = "\(sysRoot)/class/bluetooth/\(adapter)"
    guard let entry = Self.names(in: directory).first(where: { $0.hasPrefix("rfkill") }) else { return nil }
    let soft = Self.readSmall("\(directory)/\(entry)/soft")
    let hard = Self.readSmall("\(directory)/\(entry)/hard")
    guard soft != nil || hard != nil else { return nil }
    return RfkillState(soft: Self.isOne(soft), hard: Self.isOne(hard))
  }

  static func isOne(_ bytes: [UInt8]?) -> Bool {
    guard let bytes else { return false }
    return String(decoding: bytes, as: UTF8.self).trimmingWhitespace == "1"
  }

  // MARK: bluetoothd

  /// The daemon behind org.bluez: its executable (readlink /proc/PID/exe, or argv[0] of
  /// /proc/PID/cmdline when that link is not readable by this user, proc(5)) and, only when its
  /// basename is `bluetoothd`, the version its own `--version` prints.
  func daemonIdentity(pid: UInt32?, timeout: Duration, cancellation: BlockingExecutor.Cancellation)
    -> DaemonIdentity
  {
    guard let pid else { return DaemonIdentity() }
    let executable = readLink("\(procRoot)/\(pid)/exe") ?? commandName(pid: pid)
    guard let executable, executable.hasPrefix("/"), Self.basename(executable) == "bluetoothd" else {
      return DaemonIdentity(executable: executable, version: nil)
    }
    let output = Self.run(executable, ["--version"], timeout: timeout, cancellation: cancellation)
    return DaemonIdentity(executable: executable, version: output.flatMap(Self.version(from:)))
  }

  /// The first line of `bluetoothd --version` when it is a version ("5.66"); nil otherwise.
  static func version(from output: [UInt8]) -> String? {
    let line = String(decoding: output.prefix { $0 != 0x0A }, as: UTF8.self).trimmingWhitespace
    guard !line.isEmpty, line.count <= 32, line.allSatisfy({ $0.isNumber || $0 == "." }),
      line.first?.isNumber == true
    else { return nil }
    return line
  }

  static func basename(_ path: String) -> String {
    path.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? path
  }

  func readLink(_ path: String) -> String? {
    var buffer = [CChar](repeating: 0, count: Self.readLimit)
    let n = readlink(path, &buffer, buffer.count)
    guard n > 0, n < buffer.count else { return nil }
    return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// argv[0] from /proc/PID/cmdline (NUL-separated).
  func commandName(pid: UInt32) -> String? {
    guard let bytes = Self.readSmall("\(procRoot)/\(pid)/cmdline") else { return nil }
    let first = bytes.prefix { $0 != 0 }
    return first.isEmpty ? nil : String(decoding: first, as: UTF8.self)
  }

  /// Runs `path` with `arguments` (no shell, no PATH search, stdin and stderr /dev/null) and returns
  /// at most `readLimit` bytes of its stdout; nil when it could not be started, ran past `timeout` or
  /// the job was cancelled (it is killed then). Blocks the calling thread: the blocking executor's.
  static func run(
    _ path: String, _ arguments: [String], timeout: Duration, cancellation: BlockingExecutor.Cancellation
  ) -> [UInt8]? {
    var fds: [Int32] = [-1, -1]
    // A socket pair for SOCK_CLOEXEC from the call that makes it (Glibc's module has no pipe2): no
    // other child started meanwhile inherits it; ours gets its end through dup2.
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
      return nil
    }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    // LC_ALL=C: the version line in the one language it is parsed in.
    guard
      case .success(let pid) = ChildProcess.spawn(
        path, arguments, environment: ["LC_ALL=C"], actions: &actions)
    else {
      close(fds[1])
      close(fds[0])
      return nil
    }
    close(fds[1])
    defer { close(fds[0]) }
    let output = readBounded(fds[0], timeout: timeout, cancellation: cancellation)
    var status: Int32 = 0
    if waitpid(pid, &status, WNOHANG) != pid {
      // Still running after its output ended, the time ran out or the job was cancelled.
      if output == nil || waitAfterEOF(pid) == false {
        kill(-pid, SIGKILL)
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return nil
      }
    }
    return output
  }

  /// Gives a child that closed its stdout a moment (up to 100 ms) to exit; false when it did not.
  static func waitAfterEOF(_ pid: pid_t) -> Bool {
    var status: Int32 = 0
    for _ in 0..<10 {
      if waitpid(pid, &status, WNOHANG) == pid { return true }
      usleep(10_000)
    }
    return false
  }

  /// Reads `fd` to end of file in poll(2) slices of at most 50 ms, so the deadline and the cancellation
  /// are looked at between waits; nil when either came first. At most `readLimit` bytes are kept.
  static func readBounded(_ fd: Int32, timeout: Duration, cancellation: BlockingExecutor.Cancellation)
    -> [UInt8]?
  {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    var output: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 1024)
    while true {
      if cancellation.isCancelled || clock.now >= deadline { return nil }
      var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      let ready = poll(&pfd, 1, 50)
      if ready < 0 {
        if errno == EINTR { continue }
        return nil
      }
      if ready == 0 { continue }
      let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if n < 0 {
        if errno == EINTR || errno == EAGAIN { continue }
        return nil
      }
      if n == 0 { return output }
      if output.count < readLimit { output += buffer[0..<min(n, readLimit - output.count)] }
    }
  }

  // MARK: device nodes

  /// The nodes `doctor` looks at under /dev for a check: /dev/input/event*; /dev/ttyUSB*, ttyACM*,
  /// rfcomm*; /dev/video*. /dev/ttyS* only when remembered: every PC has serial nodes nobody may open.
  func nodePaths(_ kind: HostCheck.Kind) -> [String] {
    switch kind {
    case .input:
      return Self.numbered(in: "\(devRoot)/input", prefixes: ["event"])
    case .serial:
      return Self.numbered(in: devRoot, prefixes: ["ttyUSB", "ttyACM", "rfcomm"])
    case .video:
      return Self.numbered(in: devRoot, prefixes: ["video"])
    default:
      return []
    }
  }

  /// What a video node is (VIDIOC_QUERYCAP on a read-only descriptor); nil when it could not be asked.
  func video(_ path: String) -> VideoIdentity? {
    guard case .success(let node) = V4L2Camera.describe(path: path) else { return nil }
    return VideoIdentity(isCamera: node.isCapture, card: node.card)
  }

  /// `directory/PREFIXn` names, in prefix order and then numerically.
  static func numbered(in directory: String, prefixes: [String]) -> [String] {
    let names = names(in: directory)
    return prefixes.flatMap { prefix in
      names.compactMap { name -> (Int, String)? in
        guard name.hasPrefix(prefix), let n = Int(name.dropFirst(prefix.count)), n >= 0 else { return nil }
        return (n, "\(directory)/\(name)")
      }.sorted { $0.0 < $1.0 }.map(\.1)
    }
  }

  /// stat(2) and faccessat(2) with AT_EACCESS (the effective ids, as open(2) checks them); nil when the
  /// node does not exist (a remembered device that is unplugged).
  func access(_ path: String, needsWrite: Bool) -> NodeAccess? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    let mode = needsWrite ? R_OK | W_OK : R_OK
    let accessible = faccessat(AT_FDCWD, path, mode, AT_EACCESS) == 0
    let gid = info.st_gid
    let group = Self.group(gid)
    return NodeAccess(
      path: path, needsWrite: needsWrite, accessible: accessible, mode: UInt32(info.st_mode), gid: gid,
      groupName: group?.name, processHasGroup: Self.processHasGroup(gid),
      userListedInGroup: Self.userListed(in: gid, members: group?.members ?? []))
  }

  static func processHasGroup(_ gid: gid_t) -> Bool {
    if getegid() == gid { return true }
    let count = getgroups(0, nil)
    guard count > 0 else { return false }
    var groups = [gid_t](repeating: 0, count: Int(count))
    let n = getgroups(count, &groups)
    return n > 0 && groups.prefix(Int(n)).contains(gid)
  }

  /// The group's name and members from the group database (getgrgid_r, bounded buffer).
  static func group(_ gid: gid_t) -> (name: String, members: [String])? {
    var entry = Glibc.group()
    var result: UnsafeMutablePointer<Glibc.group>? = nil
    var buffer = [CChar](repeating: 0, count: 1 << 16)
    guard getgrgid_r(gid, &entry, &buffer, buffer.count, &result) == 0, result != nil,
      let namePointer = entry.gr_name
    else { return nil }
    var members: [String] = []
    if var member = entry.gr_mem {
      while let name = member.pointee, members.count < 4096 {
        members.append(String(cString: name))
        member += 1
      }
    }
    return (String(cString: namePointer), members)
  }

  /// This user (by effective uid) is listed in the group database as a member of `gid`, or has it as
  /// primary group (passwd).
  static func userListed(in gid: gid_t, members: [String]) -> Bool {
    var entry = passwd()
    var result: UnsafeMutablePointer<passwd>? = nil
    var buffer = [CChar](repeating: 0, count: 1 << 16)
    guard getpwuid_r(geteuid(), &entry, &buffer, buffer.count, &result) == 0, result != nil,
      let namePointer = entry.pw_name
    else { return false }
    return entry.pw_gid == gid || members.contains(String(cString: namePointer))
  }

  // MARK: small files

  static func names(in directory: String) -> [String] {
    guard let dir = opendir(directory) else { return [] }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir), names.count < 100_000 {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
      }
      if name != "." && name != ".." { names.append(name) }
    }
    return names
  }

  /// At most `readLimit` bytes of a sysfs or /proc file; nil when it cannot be read. O_NONBLOCK: a
  /// FIFO in a test's tree is never waited on.
  static func readSmall(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: readLimit)
    while bytes.count < readLimit {
      let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, readLimit - bytes.count) }
      if n < 0 && errno == EINTR { continue }
      if n <= 0 { break }
      bytes += buffer[0..<n]
    }
    return bytes
  }
}

/// Why this user may not use the state file, as stat(2) and access(2) see it: what `doctor` names
/// instead of one fix for every FILEACCESSDENIED.
enum StateAccess: Sendable, Equatable {
  /// A directory stands where the file should be.
  case directoryInTheWay
  /// A directory on the way this user may not search (`path`, its mode and owner).
  case closedDirectory(path: String, mode: UInt32, owner: uid_t, ownedByUser: Bool)
  /// The file is another user's, and its mode does not let this one read and write it.
  case otherOwner(mode: UInt32, owner: uid_t)
  /// The file is this user's, but its mode does not let them read and write it.
  case ownMode(mode: UInt32)
  /// None of these: the error's own words are all there is.
  case unknown

  /// Looks at `path` and every directory above it, without opening anything.
  static func probe(_ path: String) -> StateAccess {
    let user = geteuid()
    // Every directory from the root down to the file's: the first one this user may not search is
    // where the path ends for them (path_resolution(7)), whatever the file's own mode.
    let components = path.split(separator: "/", omittingEmptySubsequences: true)
    var directory = path.hasPrefix("/") ? "" : "."
    for component in components.dropLast() {
      directory += "/" + component
      var info = stat()
      guard stat(directory, &info) == 0 else { break }
      if (info.st_mode & S_IFMT) == S_IFDIR && Glibc.access(directory, X_OK) != 0 && errno == EACCES {
        return .closedDirectory(
          path: directory, mode: UInt32(info.st_mode) & 0o7777, owner: info.st_uid,
          ownedByUser: info.st_uid == user)
      }
    }
    var info = stat()
    guard stat(path, &info) == 0 else { return .unknown }
    if (info.st_mode & S_IFMT) == S_IFDIR { return .directoryInTheWay }
    let mode = UInt32(info.st_mode) & 0o7777
    if info.st_uid != user { return .otherOwner(mode: mode, owner: info.st_uid) }
    if Glibc.access(path, R_OK | W_OK) != 0 { return .ownMode(mode: mode) }
    return .unknown
  }
}

extension String {
  var trimmingWhitespace: String {
    var scalars = Substring(self)
    while let c = scalars.first, c.isWhitespace { scalars.removeFirst() }
    while let c = scalars.last, c.isWhitespace { scalars.removeLast() }
    return String(scalars)
  }
}
