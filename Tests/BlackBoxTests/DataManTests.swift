// Black-box tests of `capture` against a loopback Cognex DataMan.
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

  /// A loopback TCP socket bound to a free port and never listening: a connection to it is refused.
  static func boundNotListening() throws -> (Int32, UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    try #require(fd >= 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
    try #require(bound == 0)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return (fd, UInt16(bigEndian: address.sin_port))
  }

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
    #expect(timedOut.elapsed < 60, "\(timedOut)")

    // A port that refuses: bound (so nothing else takes it meanwhile) but not listening. No simulator
    // stopped and closed under its accept thread, so nothing to wait for.
    let (refused, port) = try Self.boundNotListening()
    defer { close(refused) }
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

  @Test("a reader outside the SDK's type table: get device-type prints its DEVICE.TYPE; JSON adds model")
  func deviceTypeIsTheModel() async throws {
    let simulator = try DMCCSimulator()
    defer { simulator.stop() }
    simulator.define("DEVICE.TYPE", "DM8072")
    let sandbox = try Sandbox()
    let plain = try await sandbox.capture("get", device(simulator), "device-type")
    #expect(plain.status == 0, "\(plain)")
    #expect(plain.out == "DM8072\n", "\(plain)")
    #expect(plain.err.isEmpty, "\(plain)")

    let json = try await sandbox.capture("--json", "get", device(simulator), "device-type")
    #expect(json.status == 0, "\(json)")
    let document = try parseJSON(json.out.trimmingCharacters(in: .newlines))
    // The SDK number and its name stay; the model is beside them, and in the device object.
    #expect(
      document["properties"]?[0]
        == .object([
          ("id", .number("65538")), ("model", .string("DM8072")), ("name", .string("device-type")),
          ("type", .string("Ulong")), ("value", .number("0")), ("valueName", .string("None")),
        ]))
    #expect(document["device"]?["model"]?.string == "DM8072")
    #expect(document["device"]?["typeName"]?.string == "None")
  }

  @Test("every listen event's device object carries the reader's model")
  func eventsCarryTheModel() async throws {
    let simulator = try DMCCSimulator(readText: "LOT-1")
    defer { simulator.stop() }
    simulator.define("DEVICE.TYPE", "DM8072")
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture("--json", "trigger", device(simulator), "start", "--wait")
    #expect(outcome.status == 0, "\(outcome)")
    let decoded = Shape.jsonLines(outcome).filter { $0["event"]?.string == "decodedData" }
    #expect(decoded.count == 1, "\(outcome)")
    #expect(
      decoded.first?["device"]
        == .object([
          ("id", .string(device(simulator))), ("model", .string("DM8072")),
          ("name", .string("Line 3 reader")),
          ("type", .number("0")), ("typeName", .string("None")),
        ]), "\(outcome)")
  }

  @Test("get --all on a reader without two symbology switches (DMCC 101): left out, one note, exit 0")
  func allLeavesOutWhatTheReaderLacks() async throws {
    let simulator = try DMCCSimulator()
    defer { simulator.stop() }
    simulator.forget("SYMBOL.CODABAR")
    simulator.forget("SYMBOL.C93")
    let sandbox = try Sandbox()
    let plain = try await sandbox.capture("get", device(simulator), "--all")
    #expect(plain.status == 0, "\(plain)")
    #expect(
      plain.errLines == [
        "capture: Line 3 reader does not support data-source codabar, data-source code93: left out of --all"
      ], "\(plain)")
    #expect(!plain.out.contains("codabar") && !plain.out.contains("code93"), "\(plain)")
    #expect(plain.outLines.contains("data-source qr-code\tenable"), "\(plain)")
    #expect(plain.outLines.contains("data-source code39\tdisable"), "\(plain)")

    let json = try await sandbox.capture("--json", "get", device(simulator), "--all")
    #expect(json.status == 0, "\(json)")
    #expect(json.errLines.count == 1, "\(json)")
    let document = try parseJSON(json.out.trimmingCharacters(in: .newlines))
    #expect(document["error"] == nil, "\(json)")
    let sources = (document["properties"]?.array ?? []).compactMap { $0["value"]?["name"]?.string }
    #expect(sources.contains("QR Code") && !sources.contains("Codabar") && !sources.contains("Code 93"))
    // The profile applies back to the same reader: nothing it lacks is in it.
    let profile = try sandbox.write("reader.json", json.out)
    let applied = try await sandbox.capture("set", device(simulator), "--from", profile)
    #expect(applied.status == 0, "\(applied)")

    // Asked for by name, the lacking switch is NOTSUPPORTED (15), not a usage error.
    let one = try await sandbox.capture("get", device(simulator), "data-source", "codabar")
    #expect(one.status == 15, "\(one)")
    #expect(
      one.errLines == [
        "capture: ESKT_NOTSUPPORTED (-15): Line 3 reader has no Codabar: it does not know SYMBOL.CODABAR (DMCC status 101)"
      ], "\(one)")
  }
}
