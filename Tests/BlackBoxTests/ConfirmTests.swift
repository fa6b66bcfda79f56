// listen --confirm: the host acknowledges each code (the SDK's App confirmation mode).

import Foundation
import Testing

@Suite("listen --confirm")
struct ConfirmTests {
  @Test("plain output passes only the codes the command confirms; the command sees the data and the event")
  func gatesPlainOutput() async throws {
    let sandbox = try Sandbox()
    let images = try Images.get()
    let dir = try sandbox.makeDirectory("in")
    try sandbox.copy(images.qr.path, to: "in/a.png")
    try sandbox.copy(images.code128.path, to: "in/b.png")
    // Confirm only the QR payload; the command's own output must not reach stdout.
    let command = "grep -qx '\(images.qr.text)' && echo noise && test -n \"$CAPTURE_EVENT\""
    let outcome = try await sandbox.capture(["listen", "--dir", dir, "--confirm", command])
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.outLines == [images.qr.text])
    #expect(outcome.err.contains("noise"))
  }

  @Test("JSON events carry confirmation good/bad and confirmed false on SocketCam, which cannot be told")
  func jsonVerdicts() async throws {
    let sandbox = try Sandbox()
    let images = try Images.get()
    let dir = try sandbox.makeDirectory("in")
    try sandbox.copy(images.qr.path, to: "in/a.png")
    try sandbox.copy(images.code128.path, to: "in/b.png")
    let outcome = try await sandbox.capture([
      "--json", "listen", "--dir", dir, "--confirm", "grep -qx '\(images.qr.text)'",
    ])
    #expect(outcome.status == 0, "\(outcome)")
    let decoded = Shape.jsonLines(outcome).filter { $0["event"]?.string == "decodedData" }
    #expect(decoded.count == 2)
    #expect(decoded.map { $0["confirmation"]?.string } == ["good", "bad"])
    #expect(decoded.allSatisfy { $0["confirmed"] == .bool(false) })
  }

  @Test("a command that hangs past --confirm-timeout is killed and the code is bad")
  func timeout() async throws {
    let sandbox = try Sandbox()
    let images = try Images.get()
    let outcome = try await sandbox.capture([
      "--json", "listen", "--image", images.qr.path, "--confirm", "sleep 30", "--confirm-timeout", "300ms",
    ])
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.elapsed < 10)
    let decoded = Shape.jsonLines(outcome).filter { $0["event"]?.string == "decodedData" }
    #expect(decoded.first?["confirmation"]?.string == "bad")
  }

  @Test("--confirm-timeout without --confirm is a usage error")
  func usage() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture(["listen", "--image", "x.png", "--confirm-timeout", "1s"])
    #expect(outcome.status == 18)
  }
}
