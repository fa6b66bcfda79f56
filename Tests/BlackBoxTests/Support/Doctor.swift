// `capture doctor`'s rows as a test expects them: the row type, its --json and plain renderings, and the
// facts of this host a row depends on (AF_BLUETOOTH, the device nodes under /dev, the decoders'
// versions), found by the test itself rather than written down for one machine.

import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// One `doctor` row.
struct DoctorRow: Equatable, CustomStringConvertible {
  var check: String
  var subject: String?
  var status: String
  var message: String
  var fix: String?
  /// The SKT code, negative as in --json (-32); nil on ok rows.
  var code: Int?

  /// `STATUS CHECK[ SUBJECT]: MESSAGE[; fix: FIX]`, the plain line on a pipe.
  var plain: String {
    "\(status) \(check)\(subject.map { " " + $0 } ?? ""): \(message)\(fix.map { "; fix: " + $0 } ?? "")"
  }

  /// `CHECK[ SUBJECT]: MESSAGE`: how the stderr line names the first failure.
  var named: String { "\(check)\(subject.map { " " + $0 } ?? ""): \(message)" }

  /// The --json object: every key present, sorted.
  var json: JSONValue {
    .object([
      ("check", .string(check)), ("code", code.map { .number(String($0)) } ?? .null),
      ("fix", fix.map { .string($0) } ?? .null), ("message", .string(message)), ("status", .string(status)),
      ("subject", subject.map { .string($0) } ?? .null),
    ])
  }

  var description: String { plain + (code.map { " [\($0)]" } ?? "") }

  static func ok(_ check: String, _ message: String, subject: String? = nil) -> DoctorRow {
    DoctorRow(check: check, subject: subject, status: "ok", message: message, fix: nil, code: nil)
  }

  /// A row read back from --json, its keys and value types checked exactly.
  static func parse(_ value: JSONValue, sourceLocation: SourceLocation = #_sourceLocation) -> DoctorRow? {
    #expect(
      value.keys == ["check", "code", "fix", "message", "status", "subject"], "row keys: \(value)",
      sourceLocation: sourceLocation)
    func optionalString(_ key: String) -> String?? {
      switch value[key] {
      case .null: .some(nil)
      case .string(let s): .some(s)
      default: nil
      }
    }
    guard let check = value["check"]?.string, let status = value["status"]?.string,
      let message = value["message"]?.string, let subject = optionalString("subject"),
      let fix = optionalString("fix")
    else {
      Issue.record("row has a key of the wrong type: \(value)", sourceLocation: sourceLocation)
      return nil
    }
    let code: Int?
    switch value["code"] {
    case .null: code = nil
    case .number(let n):
      guard let int = Int(n) else {
        Issue.record("code is not an integer: \(value)", sourceLocation: sourceLocation)
        return nil
      }
      code = int
    default:
      Issue.record("code is neither a number nor null: \(value)", sourceLocation: sourceLocation)
      return nil
    }
    #expect(
      ["ok", "warning", "failure"].contains(status), "status: \(status)", sourceLocation: sourceLocation)
    #expect(!message.isEmpty, "empty message: \(value)", sourceLocation: sourceLocation)
    return DoctorRow(check: check, subject: subject, status: status, message: message, fix: fix, code: code)
  }
}

/// What a test expects of one row: every field exact, except a message the contract does not spell out,
/// which is then only required to contain some words (and to be non-empty).
struct ExpectedRow: CustomStringConvertible {
  var row: DoctorRow
  /// nil: `row.message` exactly; otherwise words the message must contain.
  var messageContains: [String]?
  /// A check this one could not be made without: the message is "not checked: " + that row's message.
  var notCheckedOf: String?

  init(_ row: DoctorRow) {
    self.row = row
    messageContains = nil
  }

  /// A row that cannot be checked because `earlier` failed: a failure with that row's code (or `code`),
  /// message "not checked: <its message>", no fix.
  static func notChecked(_ check: String, after earlier: String, code: Int, subject: String? = nil)
    -> ExpectedRow
  {
    var expected = ExpectedRow(
      DoctorRow(check: check, subject: subject, status: "failure", message: "", fix: nil, code: code))
    expected.notCheckedOf = earlier
    return expected
  }

  /// The expectation with a "not checked" message filled in from the rows doctor printed.
  func resolved(_ rows: [DoctorRow]) -> ExpectedRow {
    guard let earlier = notCheckedOf, let message = rows.first(where: { $0.check == earlier })?.message else {
      return self
    }
    var copy = self
    copy.row.message = "not checked: " + message
    copy.notCheckedOf = nil
    return copy
  }

  init(
    _ check: String, subject: String? = nil, status: String, containing words: [String], fix: String?,
    code: Int?
  ) {
    row = DoctorRow(check: check, subject: subject, status: status, message: "", fix: fix, code: code)
    messageContains = words
  }

  func matches(_ actual: DoctorRow) -> Bool {
    guard
      actual.check == row.check && actual.subject == row.subject && actual.status == row.status
        && actual.fix == row.fix && actual.code == row.code
    else { return false }
    guard let words = messageContains else { return actual.message == row.message }
    return !actual.message.isEmpty && words.allSatisfy { actual.message.contains($0) }
  }

  var description: String {
    guard let words = messageContains else { return row.description }
    return "\(row.status) \(row.check)\(row.subject.map { " " + $0 } ?? ""): <containing \(words)>"
      + "\(row.fix.map { "; fix: " + $0 } ?? "") [\(row.code.map(String.init) ?? "nil")]"
  }
}

/// The report order of the checks (HostCheck.Kind's raw values).
let doctorCheckOrder = [
  "system-bus", "bluetoothd", "adapter", "bluez-permission", "kernel-bluetooth", "input", "serial", "video",
  "state-file", "zbar", "zxing",
]

/// What `doctor` printed, read back.
struct DoctorReport {
  var outcome: Outcome
  var rows: [DoctorRow]
  var document: JSONValue?

  /// Parses `--json` output: exactly one document with the four top-level keys.
  static func json(_ outcome: Outcome, sourceLocation: SourceLocation = #_sourceLocation) -> DoctorReport {
    #expect(
      outcome.outLines.count == 1, "one JSON document on stdout: \(outcome)", sourceLocation: sourceLocation)
    guard let line = outcome.outLines.first, let document = try? parseJSON(line) else {
      Issue.record("stdout is not a JSON document: \(outcome)", sourceLocation: sourceLocation)
      return DoctorReport(outcome: outcome, rows: [], document: nil)
    }
    #expect(document.keysAreSorted, "keys sorted: \(line)", sourceLocation: sourceLocation)
    #expect(
      document.keys == ["checks", "error", "failures", "warnings"], "top-level keys: \(line)",
      sourceLocation: sourceLocation)
    let rows = (document["checks"]?.array ?? []).compactMap {
      DoctorRow.parse($0, sourceLocation: sourceLocation)
    }
    #expect(document["checks"]?.array != nil, "checks is an array: \(line)", sourceLocation: sourceLocation)
    return DoctorReport(outcome: outcome, rows: rows, document: document)
  }

  func rows(_ check: String) -> [DoctorRow] { rows.filter { $0.check == check } }
}

enum DoctorExpect {
  /// `text` without what dbus-daemon's AccessDenied detail says of one connection (its unique name and
  /// pid), which differs between two runs of the same command; everything else is compared as is.
  static func stable(_ text: String) -> String {
    var result = text
    if let sender = try? Regex(#"sender=":\d+\.\d+""#) {
      result = result.replacing(sender, with: #"sender=":*""#)
    }
    if let pid = try? Regex(#"pid=\d+"#) { result = result.replacing(pid, with: "pid=*") }
    return result
  }

  static func stable(_ lines: [String]) -> [String] { lines.map { stable($0) } }

  /// The stderr message of a failed doctor: `doctor: N check(s) failed; the first: CHECK[ SUBJECT]: MESSAGE`.
  /// Decision where the contract shows only the plural: one failure reads "1 check failed".
  static func errorMessage(_ rows: [DoctorRow]) -> String? {
    let failures = rows.filter { $0.status == "failure" }
    guard let first = failures.first else { return nil }
    let count = failures.count == 1 ? "1 check failed" : "\(failures.count) checks failed"
    return "doctor: \(count); the first: \(first.named)"
  }

  static let codeNames: [Int: String] = [
    32: "ESKT_NOTAVAILABLE", 64: "ESKT_FILEACCESSDENIED", 85: "ESKT_INVALIDFORMAT", 86: "ESKT_INVALIDVERSION",
    99: "ESKT_BLUETOOTHPERMISSIONMISSING",
  ]

  /// Exit status |code| of the first failure row (0 when none) and exactly one stderr line naming it (none
  /// when nothing failed); for --json also the document's error, failures and warnings.
  static func exitAndError(
    _ outcome: Outcome, rows: [DoctorRow], document: JSONValue?, sourceLocation: SourceLocation
  ) {
    let failures = rows.filter { $0.status == "failure" }
    let firstCode = failures.first?.code.map { abs($0) } ?? 0
    #expect(outcome.status == Int32(firstCode), "exit: \(outcome)", sourceLocation: sourceLocation)
    var error = JSONValue.null
    if let message = errorMessage(rows), let code = failures.first?.code {
      let name = codeNames[abs(code)] ?? "?"
      #expect(
        stable(outcome.errLines) == [stable("capture: \(name) (\(code)): \(message)")], "stderr: \(outcome)",
        sourceLocation: sourceLocation)
      error = .object([
        ("code", .number(String(code))), ("message", .string(message)), ("name", .string(name)),
      ])
    } else {
      #expect(outcome.stderr.isEmpty, "stderr: \(outcome)", sourceLocation: sourceLocation)
    }
    if let document {
      #expect(document["error"] == error, "error: \(document)", sourceLocation: sourceLocation)
      #expect(
        document["failures"] == .number(String(failures.count)), "failures: \(document)",
        sourceLocation: sourceLocation)
      #expect(
        document["warnings"] == .number(String(rows.filter { $0.status == "warning" }.count)),
        "warnings: \(document)", sourceLocation: sourceLocation)
    }
  }

  /// Checks `doctor --json` against the expected rows (in order, every field), then the plain and the -q
  /// runs against the rows --json gave: one line per row (-q: warnings and failures only), the same exit
  /// status and stderr line. Returns the rows.
  @discardableResult
  static func verify(
    json: Outcome, plain: Outcome? = nil, quiet: Outcome? = nil, expected: [ExpectedRow],
    sourceLocation: SourceLocation = #_sourceLocation
  ) -> [DoctorRow] {
    let report = DoctorReport.json(json, sourceLocation: sourceLocation)
    let rows = report.rows
    let expected = expected.map { $0.resolved(rows) }
    #expect(
      rows.count == expected.count && zip(expected, rows).allSatisfy { $0.matches($1) },
      "rows:\n\(rows.map(\.description).joined(separator: "\n"))\nexpected:\n\(expected.map(\.description).joined(separator: "\n"))",
      sourceLocation: sourceLocation)
    exitAndError(json, rows: rows, document: report.document, sourceLocation: sourceLocation)
    if let plain {
      #expect(
        stable(plain.outLines) == stable(rows.map(\.plain)), "plain: \(plain)", sourceLocation: sourceLocation
      )
      exitAndError(plain, rows: rows, document: nil, sourceLocation: sourceLocation)
    }
    if let quiet {
      #expect(
        stable(quiet.outLines) == stable(rows.filter { $0.status != "ok" }.map(\.plain)), "-q: \(quiet)",
        sourceLocation: sourceLocation)
      exitAndError(quiet, rows: rows, document: nil, sourceLocation: sourceLocation)
    }
    return rows
  }
}

/// The facts of this host that rows depend on.
enum HostFacts {
  static let afBluetooth: Int32 = 31
  static let btprotoHCI: Int32 = 1

  /// errno of socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI), 0 when it succeeded.
  static let bluetoothSocketErrno: Int32 = {
    let fd = socket(afBluetooth, Int32(SOCK_RAW.rawValue), btprotoHCI)
    if fd >= 0 {
      close(fd)
      return 0
    }
    return errno
  }()

  static var kernelLacksBluetooth: Bool { bluetoothSocketErrno == EAFNOSUPPORT }

  static let kernelMessageNoSupport =
    "the kernel has no Bluetooth support (socket(AF_BLUETOOTH): Address family not supported by protocol); Bluetooth Classic and every adapter need it"

  static func kernelRow() -> ExpectedRow {
    switch bluetoothSocketErrno {
    case 0: ExpectedRow(.ok("kernel-bluetooth", "AF_BLUETOOTH sockets available"))
    case EAFNOSUPPORT:
      ExpectedRow(
        DoctorRow(
          check: "kernel-bluetooth", subject: nil, status: "failure", message: kernelMessageNoSupport,
          fix: "sudo modprobe bluetooth", code: -32))
    default:
      ExpectedRow("kernel-bluetooth", status: "failure", containing: ["AF_BLUETOOTH"], fix: nil, code: -99)
    }
  }

  /// Paths matching a shell glob, sorted.
  static func glob(_ pattern: String) -> [String] {
    var result = glob_t()
    defer { globfree(&result) }
    guard Glibc.glob(pattern, 0, nil, &result) == 0 else { return [] }
    return (0..<Int(result.gl_pathc)).compactMap { i in result.gl_pathv[i].map { String(cString: $0) } }
      .sorted()
  }

  static func nodeGroup(_ path: String) -> String? {
    var info = stat()
    guard stat(path, &info) == 0, let group = getgrgid(info.st_gid) else { return nil }
    return String(cString: group.pointee.gr_name)
  }

  /// The fix doctor gives for a node the test's unprivileged user (no supplementary groups) may not
  /// open: joining its group when the mode lets the group in; opening the mode to the group (and
  /// joining it) when it does not; giving a node of group root the kind's usual group.
  static func deniedFix(_ path: String, needsWrite: Bool, defaultGroup: String) -> String {
    var info = stat()
    let quoted = "'" + path.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    let bits = needsWrite ? "rw" : "r"
    guard stat(path, &info) == 0 else { return "?" }
    let groupBits = (info.st_mode >> 3) & 7
    let grants = needsWrite ? groupBits & 6 == 6 : groupBits & 4 != 0
    let group = nodeGroup(path) ?? String(info.st_gid)
    if info.st_gid == 0 {
      return
        "sudo chgrp \(defaultGroup) \(quoted) && sudo chmod g+\(bits) \(quoted) && sudo usermod -aG \(defaultGroup) \"$USER\""
    }
    if !grants { return "sudo chmod g+\(bits) \(quoted) && sudo usermod -aG \(group) \"$USER\"" }
    return "sudo usermod -aG \(group) \"$USER\""
  }

  /// Whether a process with this uid/gid and no supplementary groups may open `path` with `mode` (R_OK,
  /// R_OK|W_OK); for ourselves (uid nil) access(2) decides, as for doctor run by this test process.
  static func permitted(_ path: String, mode: Int32, uid: uid_t?, gid: gid_t) -> Bool {
    guard let uid else { return access(path, mode) == 0 }
    var info = stat()
    guard stat(path, &info) == 0 else { return false }
    if uid == 0 { return true }
    let bits: mode_t
    if info.st_uid == uid {
      bits = (info.st_mode >> 6) & 7
    } else if info.st_gid == gid {
      bits = (info.st_mode >> 3) & 7
    } else {
      bits = info.st_mode & 7
    }
    let need: mode_t = (mode & R_OK != 0 ? 4 : 0) | (mode & W_OK != 0 ? 2 : 0)
    return bits & need == need
  }

  /// The rows of a node check: one failure per node not permitted, else one ok row summarising.
  static func nodeRows(
    check: String, nodes: [String], mode: Int32, uid: uid_t?, gid: gid_t, okMany: (Int) -> String,
    none: String,
    defaultGroup: String
  ) -> [ExpectedRow] {
    let denied = nodes.filter { !permitted($0, mode: mode, uid: uid, gid: gid) }
    if denied.isEmpty {
      return [ExpectedRow(.ok(check, nodes.isEmpty ? none : okMany(nodes.count)))]
    }
    return denied.map { path in
      ExpectedRow(
        check, subject: path, status: "failure", containing: [],
        fix: deniedFix(path, needsWrite: mode & W_OK != 0, defaultGroup: defaultGroup), code: -64)
    }
  }

  /// input, serial and video rows for doctor run as `uid` (nil: this process) with these remembered nodes.
  static func nodeRows(
    uid: uid_t? = nil, gid: gid_t = 0, rememberedHID: [String] = [], rememberedSerial: [String] = []
  )
    -> [ExpectedRow]
  {
    let input = Array(Set(glob("/dev/input/event*") + rememberedHID)).sorted()
    let serial = Array(
      Set(glob("/dev/ttyUSB*") + glob("/dev/ttyACM*") + glob("/dev/rfcomm*") + rememberedSerial)
    ).sorted()
    let video = glob("/dev/video*")
    return nodeRows(
      check: "input", nodes: input, mode: R_OK, uid: uid, gid: gid,
      okMany: { $0 == 1 ? "1 input device readable" : "\($0) input devices readable" },
      none: "no input devices (/dev/input/event*)", defaultGroup: "input")
      + nodeRows(
        check: "serial", nodes: serial, mode: R_OK | W_OK, uid: uid, gid: gid,
        okMany: { $0 == 1 ? "1 serial device readable" : "\($0) serial devices readable" },
        none: "no serial devices", defaultGroup: "dialout")
      + nodeRows(
        check: "video", nodes: video, mode: R_OK, uid: uid, gid: gid,
        okMany: { _ in videoMessage(video) }, none: "no cameras (/dev/video*)", defaultGroup: "video")
  }

  /// What doctor says of readable video nodes: the capture nodes among them (asked here with
  /// VIDIOC_QUERYCAP, independently of capture) counted and named, the others counted.
  static func videoMessage(_ nodes: [String]) -> String {
    var cameras: [String] = []
    for path in nodes {
      guard let (isCamera, card) = queryCapture(path), isCamera else { continue }
      cameras.append(card.isEmpty ? path : "\(path) (\(card))")
    }
    let others = nodes.count - cameras.count
    if cameras.isEmpty {
      return
        "no cameras (/dev/video*: \(others) video node\(others == 1 ? "" : "s"), none a video capture device)"
    }
    let count = cameras.count == 1 ? "1 camera" : "\(cameras.count) cameras"
    let rest =
      others == 0
      ? ""
      : others == 1 ? "; 1 other video node is not a camera" : "; \(others) other video nodes are not cameras"
    return "\(count) readable: \(cameras.joined(separator: ", "))\(rest)"
  }

  /// VIDIOC_QUERYCAP (_IOR('V', 0, struct v4l2_capability), 104 bytes: driver[16], card[32],
  /// bus_info[32], version, capabilities, device_caps, reserved[3]); a capture node has
  /// V4L2_CAP_VIDEO_CAPTURE (0x1) or _MPLANE (0x1000) in the node's caps (device_caps when
  /// V4L2_CAP_DEVICE_CAPS, 0x80000000, is set).
  static func queryCapture(_ path: String) -> (Bool, String)? {
    let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var raw = [UInt8](repeating: 0, count: 104)
    guard raw.withUnsafeMutableBytes({ Glibc.ioctl(fd, UInt(0x8068_5600), $0.baseAddress!) }) == 0 else {
      return nil
    }
    func word(_ at: Int) -> UInt32 { raw[at..<at + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) } }
    let caps = word(84) & 0x8000_0000 != 0 ? word(88) : word(84)
    let card = String(decoding: raw[16..<48].prefix { $0 != 0 }, as: UTF8.self)
    return (caps & 0x1001 != 0, card)
  }

  /// "ZBar X.Y.Z" from the library's zbar_version, as the binary sees it at run time.
  static let zbarVersion: String? = {
    typealias Version =
      @convention(c) (
        UnsafeMutablePointer<UInt32>?, UnsafeMutablePointer<UInt32>?, UnsafeMutablePointer<UInt32>?
      ) -> Int32
    guard let library = dlopen("libzbar.so.0", RTLD_NOW), let symbol = dlsym(library, "zbar_version") else {
      return nil
    }
    var major: UInt32 = 0
    var minor: UInt32 = 0
    var patch: UInt32 = 0
    _ = unsafeBitCast(symbol, to: Version.self)(&major, &minor, &patch)
    return "ZBar \(major).\(minor).\(patch)"
  }()

  /// "zxing-cpp X.Y.Z": the release deps/zxing-cpp.lock pins, which `make deps` builds and links in.
  static let zxingVersion: String? = {
    let lock = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .appendingPathComponent("../../../deps/zxing-cpp.lock").standardized.path
    guard let text = try? String(contentsOfFile: lock, encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") {
      let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "=" })
      if words.count == 2 && words[0] == "ZXING_CPP_VERSION" { return "zxing-cpp \(words[1])" }
    }
    return nil
  }()

  static func decoderRows() -> [ExpectedRow] {
    [
      ExpectedRow(.ok("zbar", zbarVersion ?? "ZBar ?")),
      ExpectedRow(.ok("zxing", zxingVersion ?? "zxing-cpp ?")),
    ]
  }

  /// The executable doctor names for a bluetoothd that is not bluetoothd: readlink /proc/PID/exe when the
  /// user may read it (the test process: yes), else argv[0] of /proc/PID/cmdline.
  static func executable(pid: Int32, readableLink: Bool) -> String? {
    if readableLink {
      return try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
    }
    guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return nil }
    return String(decoding: data.prefix { $0 != 0 }, as: UTF8.self)
  }
}

/// Running the binary as an unprivileged user (nobody, 65534) with setpriv(1).
enum Unprivileged {
  static let uid: uid_t = 65534
  static let gid: gid_t = 65534
  static let setpriv = "/usr/bin/setpriv"

  /// Root (to change user) with setpriv installed and a user 65534.
  static var available: Bool { geteuid() == 0 && access(setpriv, X_OK) == 0 && getpwuid(uid) != nil }

  static var userName: String { getpwuid(uid).map { String(cString: $0.pointee.pw_name) } ?? "65534" }

  /// A user the group database lists as a member of a group other than its own primary one: (user's uid,
  /// its primary gid, that group's name and gid). A process of that user started without supplementary
  /// groups is what a login session begun before `usermod -aG` looks like.
  static let listedMember: (uid: uid_t, gid: gid_t, group: String, groupID: gid_t)? = {
    guard let text = try? String(contentsOfFile: "/etc/group", encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") {
      let fields = line.split(separator: ":", omittingEmptySubsequences: false)
      guard fields.count == 4, let groupID = gid_t(fields[2]) else { continue }
      for member in fields[3].split(separator: ",") {
        guard let user = getpwnam(String(member)), user.pointee.pw_uid != 0, user.pointee.pw_gid != groupID
        else {
          continue
        }
        return (user.pointee.pw_uid, user.pointee.pw_gid, String(fields[0]), groupID)
      }
    }
    return nil
  }()

  /// Hands the sandbox (state directory included) to the user, so what doctor finds there is readable by it.
  static func give(_ sandbox: Sandbox, uid: uid_t = uid, gid: gid_t = gid) throws {
    try FileManager.default.createDirectory(atPath: sandbox.stateDirectory, withIntermediateDirectories: true)
    try FileManager.default.createDirectory(atPath: sandbox.root + "/home", withIntermediateDirectories: true)
    var paths = [sandbox.root]
    if let walker = FileManager.default.enumerator(atPath: sandbox.root) {
      for case let name as String in walker { paths.append(sandbox.root + "/" + name) }
    }
    for path in paths where lchown(path, uid, gid) != 0 {
      throw HarnessError(description: "chown \(path): \(String(cString: strerror(errno)))")
    }
  }

  /// `setpriv --reuid=UID --regid=GID --clear-groups -- capture ARGS` in the sandbox (nobody by default).
  static func capture(
    _ sandbox: Sandbox, _ arguments: [String], uid: uid_t = uid, gid: gid_t = gid, timeLimit: Double = 120
  ) async throws -> Outcome {
    let outcome = try await Runner.run(
      setpriv,
      ["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--", try Product.path()] + arguments,
      environment: sandbox.environment, directory: sandbox.root, timeLimit: timeLimit)
    if outcome.timedOut {
      Issue.record("capture \(arguments.joined(separator: " ")) (as \(uid)) was killed after \(timeLimit) s")
    }
    return outcome
  }
}
