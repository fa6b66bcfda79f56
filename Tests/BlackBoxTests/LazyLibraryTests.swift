// Libraries loaded on demand (docs/architecture.md §2, "Libraries loaded on demand"): what a command maps
// is read from the dynamic loader's own report (ld.so(8), LD_DEBUG=files: one "file=SONAME [0];  needed
// by" or "dynamically loaded by" line per shared object it maps), so the test sees what the process did.

import Foundation
import Testing

@Suite("Libraries loaded on demand")
struct LazyLibraryTests {
  /// The on-demand libraries and what they bring along (docs/architecture.md §2).
  static let onDemand = [
    "libzbar.so.0", "libdbus-1.so.3", "libsystemd.so.0", "libX11.so.6", "libv4l2.so.0", "libwebsockets.so.17",
    "libssl.so.3", "libcrypto.so.3", "libmosquitto.so.1", "libbluetooth.so.3",
  ]

  /// The sonames the loader mapped, from LD_DEBUG=files lines on stderr.
  static func mapped(_ outcome: Outcome) -> Set<String> {
    var names = Set<String>()
    for line in outcome.err.split(separator: "\n") {
      guard let start = line.range(of: "file="), line.contains("[0];") else { continue }
      let rest = line[start.upperBound...]
      if let end = rest.firstIndex(of: " ") { names.insert(String(rest[..<end])) }
    }
    return names
  }

  static func sandbox() throws -> Sandbox {
    let sandbox = try Sandbox()
    sandbox.extraEnvironment["LD_DEBUG"] = "files"
    return sandbox
  }

  @Test("an image zxing-cpp reads maps none of them")
  func imageReadByZXing() async throws {
    let images = try await Images.get()
    let sandbox = try Self.sandbox()
    let outcome = try await sandbox.capture("trigger", "socketcam", "start", "--image", images.qr.path)
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.out == images.qr.text + "\n")
    let mapped = Self.mapped(outcome)
    // The report is there (the loader maps libc for every process): a missing report is not a pass.
    #expect(mapped.contains("libc.so.6"), "\(outcome)")
    #expect(mapped.isDisjoint(with: Self.onDemand), "mapped: \(mapped.sorted())")
  }

  @Test("--version and a SocketCam property map none of them")
  func oneShotCommands() async throws {
    let sandbox = try Self.sandbox()
    for arguments in [["--version"], ["get", "socketcam", "data-source", "qr-code"]] {
      let outcome = try await sandbox.capture(arguments)
      #expect(outcome.status == 0, "\(outcome)")
      let mapped = Self.mapped(outcome)
      #expect(mapped.contains("libc.so.6"), "\(outcome)")
      #expect(mapped.isDisjoint(with: Self.onDemand), "\(arguments): mapped \(mapped.sorted())")
    }
  }

  @Test("ZBar is loaded when zxing-cpp reads nothing, and doctor loads it")
  func zbarOnDemand() async throws {
    let images = try await Images.get()
    let sandbox = try Self.sandbox()
    let blank = try await sandbox.capture("trigger", "socketcam", "start", "--image", images.blank)
    #expect(blank.status == 17, "\(blank)")
    #expect(blank.err.contains("file=libzbar.so.0 [0];  dynamically loaded by"), "\(blank)")
    let doctor = try await sandbox.capture("--json", "doctor")
    #expect(doctor.err.contains("file=libzbar.so.0 [0];  dynamically loaded by"), "\(doctor)")
    #expect(doctor.err.contains("file=libdbus-1.so.3 [0];  dynamically loaded by"), "\(doctor)")
  }

  /// A library that is there but cannot be loaded: an empty file of its soname first in
  /// LD_LIBRARY_PATH, which dlopen(3) tries before the system's and refuses ("file too short").
  @Test("a ZBar that cannot be loaded is reported in the loader's words, and the image's result stands")
  func zbarUnloadable() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let directory = sandbox.path("broken-libs")
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    try sandbox.write("broken-libs/libzbar.so.0", [])
    sandbox.extraEnvironment["LD_LIBRARY_PATH"] = directory
    let words = "ZBar cannot be loaded: \(directory)/libzbar.so.0: file too short"

    // zxing-cpp reads the QR code: ZBar is never needed, nothing to report.
    let read = try await sandbox.capture("trigger", "socketcam", "start", "--image", images.qr.path)
    #expect(read.status == 0, "\(read)")
    #expect(read.out == images.qr.text + "\n")
    #expect(read.stderr.isEmpty, "\(read)")

    // Nothing read: the problem is said, then the image's own result (no barcode, 17).
    let blank = try await sandbox.capture("trigger", "socketcam", "start", "--image", images.blank)
    #expect(blank.status == 17, "\(blank)")
    #expect(
      blank.err
        == "capture: '\(images.blank)': \(words)\ncapture: ESKT_NOTFOUND (-17): no barcode found in '\(images.blank)'\n"
    )

    // The zbar row fails with the same words; the command's exit is the first failing row's (the
    // sandbox has no system bus, so that is system-bus's -32 whatever ZBar does).
    let doctor = try await sandbox.capture("--json", "doctor")
    let checks = try parseJSON(doctor.out)["checks"]?.array ?? []
    let rows = checks.compactMap { DoctorRow.parse($0) }.filter { $0.check == "zbar" }
    #expect(
      rows
        == [
          DoctorRow(
            check: "zbar", subject: nil, status: "failure", message: words,
            fix: "sudo apt-get install libzbar0",
            code: -32)
        ], "\(doctor)")
  }
}
