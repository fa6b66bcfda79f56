import CaptureCore
import Glibc
import TestSupport
import Testing

@testable import CaptureMQTT

@Suite struct BrokerURLTests {
  @Test func plainURLWithUserPortAndPrefix() throws {
    let url = try BrokerURL.parse("mqtt://shop7@broker.example:1884/acme/stores")
    #expect(
      url
        == BrokerURL(tls: false, username: "shop7", host: "broker.example", port: 1884, prefix: "acme/stores")
    )
  }

  @Test func defaultPortsPerScheme() throws {
    #expect(try BrokerURL.parse("mqtt://b/p").port == 1883)
    #expect(try BrokerURL.parse("mqtts://b/p").port == 8883)
    #expect(try BrokerURL.parse("mqtts://b/p").tls)
  }

  @Test func ipv6LiteralAndTrailingSlash() throws {
    let url = try BrokerURL.parse("mqtt://[::1]:2000/fleet/")
    #expect(url.host == "::1" && url.port == 2000 && url.prefix == "fleet")
  }

  @Test func passwordInURLIsRefusedPointingAtThePasswordFile() {
    #expect(throws: CaptureError.self) { try BrokerURL.parse("mqtt://u:secret@b/p") }
    do {
      _ = try BrokerURL.parse("mqtt://u:secret@b/p")
    } catch {
      #expect(error.code == .invalidParameter)
      #expect(error.message.contains("--mqtt-password-file"))
      #expect(!error.message.contains("secret"))
    }
  }

  @Test(arguments: [
    "http://b/p", "mqtt://b", "mqtt://b/", "mqtt:///p", "mqtt://b:0/p", "mqtt://b:70000/p", "mqtt://b:x/p",
    "mqtt://b/a/+/c", "mqtt://b/a/#", "mqtt://b/$SYS", "mqtt://b/a//c", "mqtt://@b/p",
  ])
  func refusedURLs(_ text: String) {
    #expect(throws: CaptureError.self) { try BrokerURL.parse(text) }
  }

  /// What the transport would refuse only when it connects (exit 24) is a usage error here (exit 18).
  @Test(arguments: [
    "mqtt://broker /acme", "mqtt://broker\t/acme", "mqtt:// broker/acme", "mqtt://bro ker:1883/acme",
    "mqtt://broker\u{7F}/acme", "mqtt://[::1 ]/acme", "mqtt://[broker]/acme", "mqtt://a%00b@broker/acme",
    "mqtt://" + String(repeating: "h", count: 254) + "/acme",
    "mqtt://broker/" + String(repeating: "p", count: Topics.maximumPrefixLength + 1),
    "mqtt://broker/" + String(repeating: "level/", count: 20_000) + "x",
    "mqtt://broker/acme\u{01}", "mqtt://broker/ac\nme", "mqtt://broker/acme\u{85}",
    "mqtt://" + String(repeating: "u", count: 65536) + "@broker/acme",
  ])
  func urlProblemsTheTransportWouldFindAreUsageErrors(_ text: String) {
    do {
      _ = try BrokerURL.parse(text)
      Issue.record("accepted \(text.prefix(80))")
    } catch {
      #expect(error.code == .invalidParameter, "\(error.message)")
      #expect(error.message.hasPrefix("--mqtt: "))
      #expect(error.message.utf8.count < 400, "one line that does not repeat a huge URL")
    }
  }

  @Test func hostsAndPrefixesAtTheBoundsAreTaken() throws {
    #expect(try BrokerURL.parse("mqtt://broker-1.example_lan:1884/acme").host == "broker-1.example_lan")
    #expect(try BrokerURL.parse("mqtt://10.0.0.5/acme").host == "10.0.0.5")
    #expect(try BrokerURL.parse("mqtt://[fe80::1%eth0]:1883/acme").host == "fe80::1%eth0")
    let longest = String(repeating: "h", count: BrokerURL.maximumHostLength)
    #expect(try BrokerURL.parse("mqtt://\(longest)/acme").host == longest)
    let prefix = String(repeating: "p", count: Topics.maximumPrefixLength)
    #expect(try BrokerURL.parse("mqtt://b/\(prefix)").prefix == prefix)
    #expect(try BrokerURL.parse("mqtt://b/caf\u{E9}/ligne").prefix == "caf\u{E9}/ligne")
  }

  @Test func settingsChecksBetweenOptions() throws {
    let plain = try BrokerURL.parse("mqtt://b/p")
    #expect(throws: CaptureError.self) {
      try FleetSettings(url: plain, hostID: "h", caFile: "/ca").validate()
    }
    #expect(throws: CaptureError.self) {
      try FleetSettings(url: plain, hostID: "h", password: "x").validate()
    }
    let tls = try BrokerURL.parse("mqtts://u@b/p")
    #expect(throws: CaptureError.self) { try FleetSettings(url: tls, hostID: "h", certFile: "/c").validate() }
    try FleetSettings(url: tls, hostID: "h", caFile: "/ca", certFile: "/c", keyFile: "/k", password: "x")
      .validate()
    let settings = FleetSettings(url: tls, hostID: "till-3", password: "x")
    #expect(settings.clientID == "capture-till-3")
    #expect(
      settings.endpoint.port == 8883 && settings.endpoint.username == "u" && settings.endpoint.tls != nil)
  }
}

@Suite struct HostIdentityTests {
  @Test func explicitNameIsCheckedTopicSafe() throws {
    #expect(try HostIdentity.resolve("till-3.shop_7") == "till-3.shop_7")
    for bad in ["", "a/b", "a+b", "a#b", "a b", "..", String(repeating: "x", count: 65)] {
      #expect(throws: CaptureError.self) { try HostIdentity.resolve(bad) }
    }
  }

  @Test func machineIDIsTrimmed() throws {
    let temporary = TemporaryDirectory()
    let path = temporary.file("machine-id")
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    _ = "0123456789abcdef0123456789abcdef\n".withCString { write(fd, $0, 33) }
    close(fd)
    #expect(
      try HostIdentity.resolve(nil, machineIDPath: FilePath(path)) == "0123456789abcdef0123456789abcdef")
  }

  @Test func missingMachineIDSaysToNameTheHost() {
    do {
      _ = try HostIdentity.resolve(nil, machineIDPath: "/nonexistent/machine-id")
      Issue.record("no error")
    } catch {
      #expect(error.code == .fileNotFound)
      #expect(error.message.contains("--mqtt-host-id"))
    }
  }
}

@Suite struct PasswordFileTests {
  @Test func firstLineIsThePasswordAndAReadableFileWarns() throws {
    let temporary = TemporaryDirectory()
    let path = temporary.file("password")
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    _ = "s3cret\r\nsecond line\n".withCString { write(fd, $0, 20) }
    close(fd)
    let private_ = try PasswordFile.read(path)
    #expect(private_.password == "s3cret" && private_.warning == nil)
    chmod(path, 0o644)
    let readable = try PasswordFile.read(path)
    #expect(readable.password == "s3cret")
    #expect(readable.warning?.contains("mode 644") == true)
  }

  @Test func emptyOrMissingFileIsAnError() {
    #expect(throws: CaptureError.self) { try PasswordFile.read("/nonexistent/password") }
  }
}

@Suite struct TopicTests {
  @Test func layout() {
    let t = Topics(prefix: "acme/shops", host: "till-3")
    #expect(t.status == "acme/shops/till-3/status")
    #expect(t.devices == "acme/shops/till-3/devices")
    #expect(t.commands == "acme/shops/till-3/commands")
    #expect(t.reply(id: "r/1") == "acme/shops/till-3/replies/r%2F1")
    #expect(
      t.event(device: "00:11:22:33:44:55", kind: "decodedData")
        == "acme/shops/till-3/events/00:11:22:33:44:55/decodedData")
  }

  @Test func deviceEscaping() {
    #expect(Topics.escape("/dev/ttyACM0") == "%2Fdev%2FttyACM0")
    #expect(Topics.escape("a+b#c%d") == "a%2Bb%23c%25d")
    #expect(Topics.escape("socketcam") == "socketcam")
    #expect(Topics.escape("100%/+#") == "100%25%2F%2B%23")
    for text in ["/dev/ttyACM0", "a+b#c%d", "%2F", "héllo/wörld"] {
      #expect(Topics.unescape(Topics.escape(text)) == text)
      #expect(
        !Topics.escape(text).contains("/") && !Topics.escape(text).contains("+")
          && !Topics.escape(text).contains("#"))
    }
  }
}
