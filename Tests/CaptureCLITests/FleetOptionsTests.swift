import CaptureCore
import CaptureMQTT
import Testing

@testable import CaptureCLI

/// listen's and serve's --mqtt options, read as usage (exit 18 on every refusal).
@Suite struct FleetOptionsTests {
  /// The fleet front end as the composition root registers it (Sources/capture/main.swift).
  static let frontEnds = FrontEnds(fleet: { options throws(CaptureError) in try FleetOptions(options) })

  /// listen's options, and the fleet front end's reading of its --mqtt options.
  struct Listen {
    var options: ListenCommand.Options
    var fleet: FleetOptions? { options.fleet as? FleetOptions }
    var selectors: [DeviceSelector] { options.selectors }
  }

  static func listen(_ words: [String]) throws -> Listen {
    Listen(options: try ListenCommand.Options(try ArgumentParser.parse(["listen"] + words), frontEnds))
  }

  @Test func noMqttNoFleet() throws {
    #expect(try Self.listen(["socketcam", "--dir", "/tmp"]).fleet == nil)
  }

  @Test func everyOptionRead() throws {
    let options = try Self.listen([
      "--mqtt", "mqtts://till-3@broker.example:9883/acme/shops", "--mqtt-ca", "/ca.pem", "--mqtt-cert",
      "/c.pem",
      "--mqtt-key", "/k.pem", "--mqtt-password-file", "/pw", "--mqtt-host-id", "till-3", "--mqtt-spool-max",
      "500",
      "--confirm-delivery", "broker", "--mqtt-commands",
    ])
    let fleet = try #require(options.fleet)
    #expect(
      fleet.url
        == BrokerURL(tls: true, username: "till-3", host: "broker.example", port: 9883, prefix: "acme/shops"))
    #expect(fleet.caFile == "/ca.pem" && fleet.certFile == "/c.pem" && fleet.keyFile == "/k.pem")
    #expect(fleet.passwordFile == "/pw" && fleet.hostID == "till-3" && fleet.spoolMax == 500)
    #expect(fleet.confirmDelivery == .broker && fleet.commands == .standard)
    #expect(options.selectors.isEmpty)
  }

  @Test func theCommandDeadlineIsAnOptionWithADefault() throws {
    let given = try Self.listen(["--mqtt", "mqtt://b/p", "--mqtt-commands", "--mqtt-command-timeout", "1.5s"])
    #expect(given.fleet?.commandTimeout == .milliseconds(1500))
    let standard = try Self.listen(["--mqtt", "mqtt://b/p", "--mqtt-commands"])
    #expect(standard.fleet?.commandTimeout == .seconds(60))
  }

  @Test func commandsAllTakesTheWordAllFromTheOperands() throws {
    let options = try Self.listen([
      "--mqtt", "mqtt://b/p", "--mqtt-commands", "all", "socketcam", "--dir", "/tmp",
    ])
    #expect(options.fleet?.commands == .all)
    #expect(options.selectors == [.socketCam])
    #expect(try Self.listen(["--mqtt", "mqtt://b/p"]).fleet?.spoolMax == FleetSettings.defaultSpoolMax)
  }

  @Test(arguments: [
    ["--mqtt", "mqtt://u:secret@b/p"],
    ["--mqtt", "ftp://b/p"],
    ["--mqtt-host-id", "h"],
    ["--confirm-delivery", "spool"],
    ["--mqtt-commands"],
    ["--mqtt", "mqtt://b/p", "--mqtt-ca", "/ca"],
    ["--mqtt", "mqtts://b/p", "--mqtt-cert", "/c"],
    ["--mqtt", "mqtt://b/p", "--mqtt-password-file", "/pw"],
    ["--mqtt", "mqtt://b/p", "--mqtt-host-id", "a/b"],
    ["--mqtt", "mqtt://b/p", "--mqtt-spool-max", "0"],
    ["--mqtt", "mqtt://b/p", "--confirm-delivery", "never"],
    ["--mqtt", "mqtt://b/p", "--confirm-delivery", "spool", "--confirm", "true"],
    ["--mqtt", "mqtt://b/p", "--confirm-delivery", "spool", "--confirm-stdin"],
    ["--mqtt", "mqtt://b /p"],
    ["--mqtt", "mqtt://b/" + String(repeating: "x", count: 70000)],
    ["--mqtt", "mqtt://b/p", "--mqtt-command-timeout", "10s"],
    ["--mqtt-command-timeout", "10s", "--mqtt-commands"],
    ["--mqtt", "mqtt://b/p", "--mqtt-commands", "--mqtt-command-timeout", "0"],
    ["--mqtt", "mqtt://b/p", "--mqtt-commands", "--mqtt-command-timeout", "soon"],
  ])
  func refusedAsUsage(_ words: [String]) {
    #expect(throws: UsageError.self) { try Self.listen(words) }
  }

  @Test func passwordInTheURLNamesThePasswordFileOption() {
    do {
      _ = try Self.listen(["--mqtt", "mqtt://u:secret@b/p"])
      Issue.record("accepted")
    } catch let error as UsageError {
      #expect(error.message.contains("--mqtt-password-file"))
      #expect(error.command == "listen")
    } catch {
      Issue.record("not a usage error: \(error)")
    }
  }
}
