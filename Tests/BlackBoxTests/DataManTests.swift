// Black-box tests of `capture` against a loopback Cognex DataMan (issue 4, deliverables 5 and 6).
// The simulator below is an identical copy of Tests/DataManTests/DMCCSimulator.swift: this target
// only depends on the capture executable and may add no other file.

import Foundation
import Simulators
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite("DataMan over DMCC/TCP (capture)")
struct DataManBlackBoxTests {
  func device(_ simulator: DMCCSimulator) -> String { "tcp://127.0.0.1:\(simulator.port)" }

  @Test("get friendly-name prints DEVICE.NAME exactly; set then get; dmcc:DEVICE.TYPE")
  func getAndSet() async throws {
    let simulator = try DMCCSimulator()
    defer { simulator.stop() }
    let sandbox = try Sandbox()
    let name = try await sandbox.capture("get", device(simulator), "friendly-name")
    #expect(name.status == 0, "\(name)")
    #expect(name.out == "Line 3 reader\n")

    let set = try await sandbox.capture("set", device(simulator), "friendly-name", "Dock \"B\" | 2")
    #expect(set.status == 0, "\(set)")
    #expect(simulator.parameter("DEVICE.NAME") == "Dock \"B\" | 2")
    let again = try await sandbox.capture("get", device(simulator), "friendly-name")
    #expect(again.out == "Dock \"B\" | 2\n", "\(again)")

    let model = try await sandbox.capture("get", device(simulator), "dmcc:DEVICE.TYPE")
    #expect(model.status == 0, "\(model)")
    #expect(model.out == "DM8050\n")

    let json = try await sandbox.capture("--json", "get", device(simulator), "dmcc:DEVICE.TYPE", "version")
    #expect(json.status == 0, "\(json)")
    let document = try parseJSON(json.out.trimmingCharacters(in: .newlines))
    let first = document["properties"]?[0]
    #expect(first?["name"]?.string == "dmcc:DEVICE.TYPE")
    #expect(first?["type"]?.string == "String")
    #expect(first?["value"]?.string == "DM8050")
    #expect(document["device"]?["type"]?.int == 0)

    let raw = try await sandbox.capture("set", device(simulator), "dmcc:SYMBOL.C39", "ON")
    #expect(raw.status == 0, "\(raw)")
    #expect(simulator.parameter("SYMBOL.C39") == "ON")
  }

  @Test("--json trigger start --wait: one decodedData with the configured text")
  func trigger() async throws {
    let simulator = try DMCCSimulator(readText: "LOT-4711/Ä")
    defer { simulator.stop() }
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture("--json", "trigger", device(simulator), "start", "--wait")
    #expect(outcome.status == 0, "\(outcome)")
    let decoded = Shape.jsonLines(outcome).filter { $0["event"]?.string == "decodedData" }
    #expect(decoded.count == 1, "\(outcome)")
    #expect(decoded.first?["text"]?.string == "LOT-4711/Ä")
    #expect(decoded.first?["bytes"]?.string == Data("LOT-4711/Ä".utf8).base64EncodedString())
  }

  @Test("faults: silent reader → 42 within --timeout 1s; refused → 32; bad checksum → 36; unknown → 18")
  func faults() async throws {
    let sandbox = try Sandbox()
    let silent = try DMCCSimulator(fault: .neverAnswer)
    defer { silent.stop() }
    let timedOut = try await sandbox.capture("--timeout", "1s", "get", device(silent), "friendly-name")
    #expect(timedOut.status == 42, "\(timedOut)")
    #expect(timedOut.elapsed < 15, "\(timedOut)")

    let refused = try DMCCSimulator()
    let port = refused.port
    refused.stop()
    try await Task.sleep(for: .milliseconds(150))
    refused.closeListener()
    let notThere = try await sandbox.capture("get", "tcp://127.0.0.1:\(port)", "friendly-name")
    #expect(notThere.status == 32, "\(notThere)")
    #expect(notThere.err.contains("127.0.0.1:\(port)"), "\(notThere)")

    let corrupt = try DMCCSimulator(fault: .corruptChecksum)
    defer { corrupt.stop() }
    let checksum = try await sandbox.capture("get", device(corrupt), "friendly-name")
    #expect(checksum.status == 36, "\(checksum)")

    let simulator = try DMCCSimulator()
    defer { simulator.stop() }
    let unknown = try await sandbox.capture("set", device(simulator), "dmcc:NO.SUCH", "1")
    #expect(unknown.status == 18, "\(unknown)")
    #expect(unknown.err.hasPrefix("capture: ESKT_INVALIDPARAMETER (-18): "), "\(unknown)")
  }
}
