import Foundation
import Testing

@testable import HTTPServer

@Suite struct DebugServe {
  @Test(.enabled(if: ProcessInfo.processInfo.environment["CWS_DEBUG_SERVE"] != nil))
  func serveForAWhile() async throws {
    let served = try Served(
      Recorder(
        echoText: true,
        refuse: { request in
          request.path == "/refuse" ? HTTPResponse(status: 403, contentType: "text/plain", body: Array("no\n".utf8)) : nil
        }))
    try "\(served.port)".write(toFile: "/tmp/cws-port", atomically: true, encoding: .utf8)
    try await Task.sleep(for: .seconds(Int(ProcessInfo.processInfo.environment["CWS_DEBUG_SERVE"]!) ?? 60))
    print(served.recorder.events)
    await served.stop()
  }
}
