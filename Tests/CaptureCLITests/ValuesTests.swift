import CaptureContract
import Testing

@testable import CaptureCLI
@testable import CaptureCore

@Suite("Typed option values")
struct ValuesTests {
  static let durations: [(String, Duration)] = [
    ("500ms", .milliseconds(500)),
    ("10s", .seconds(10)),
    ("2m", .seconds(120)),
    ("1h", .seconds(3600)),
    ("1.5s", .milliseconds(1500)),
    ("0.25m", .seconds(15)),
    ("3", .seconds(3)),
    ("0", .zero),
    ("0ms", .zero),
    // Rounded to the millisecond, halves away from zero.
    ("2.5ms", .milliseconds(3)),
  ]

  @Test("durations", arguments: durations)
  func duration(_ text: String, _ expected: Duration) throws {
    #expect(try Values.duration(text, option: "--timeout", command: "listen") == expected)
  }

  static let badDurations = [
    "", "x", "-1s", "5x", "s", "ms", "1.2.3s", "1e3", " 5s", "5s ", "5 s", "+5s", "1,5s", "½s",
  ]

  @Test("bad durations name the option and the text", arguments: badDurations)
  func badDuration(_ text: String) {
    #expect(
      throws: UsageError(
        message: "--timeout: '\(text)' is not a duration (e.g. 500ms, 10s, 2m)", command: "listen")
    ) { try Values.duration(text, option: "--timeout", command: "listen") }
  }

  @Test("a duration longer than a year is refused")
  func tooLong() {
    #expect(throws: UsageError(message: "--timeout: '8761h' is longer than a year", command: nil)) {
      try Values.duration("8761h", option: "--timeout", command: nil)
    }
    #expect((try? Values.duration("8760h", option: "--timeout", command: nil)) == .seconds(8760 * 3600))
  }

  @Test("counts")
  func counts() throws {
    #expect(try Values.count("1", option: "--count", command: "listen") == 1)
    #expect(try Values.count("250", option: "--count", command: "listen") == 250)
    for bad in ["0", "-1", "x", "", "1.5", "1e2", " 1"] {
      #expect(
        throws: UsageError(message: "--count: '\(bad)' is not a positive whole number", command: "listen")
      ) {
        try Values.count(bad, option: "--count", command: "listen")
      }
    }
  }

  @Test("event lists")
  func events() throws {
    #expect(try Values.events("decodedData", command: "listen") == [.decodedData])
    #expect(
      try Values.events("deviceArrival,deviceRemoval,decodedData", command: "listen")
        == [.deviceArrival, .deviceRemoval, .decodedData])
    #expect(throws: UsageError(message: "--events needs at least one event kind", command: "listen")) {
      try Values.events(",", command: "listen")
    }
    #expect(throws: UsageError.self) { try Values.events("decodedData,nope", command: "listen") }
  }

  @Test("frame sources keep command-line order; stdin once; camera alone")
  func frameSources() throws {
    let parsed = try ArgumentParser.parse(["listen", "--image", "a.png", "--dir", "d", "--image", "-"])
    let sources = try Values.frameSources(parsed)
    #expect(sources.count == 3)
    if sources.count == 3 {
      #expect({ if case .image("a.png") = sources[0] { true } else { false } }())
      #expect({ if case .directory("d") = sources[1] { true } else { false } }())
      #expect({ if case .standardInput = sources[2] { true } else { false } }())
    }
    #expect(throws: UsageError(message: "--image - can be given once", command: "listen")) {
      try Values.frameSources(try ArgumentParser.parse(["listen", "--image", "-", "--image", "-"]))
    }
    #expect(
      throws: UsageError(message: "--camera cannot be combined with --image or --dir", command: "listen")
    ) {
      try Values.frameSources(
        try ArgumentParser.parse(["listen", "--camera", "/dev/video0", "--image", "x"]))
    }
    #expect(throws: UsageError(message: "--camera needs a device path like /dev/video0", command: "listen")) {
      try Values.frameSources(try ArgumentParser.parse(["listen", "--camera", "video0"]))
    }
    #expect(throws: UsageError(message: "--image needs a file name", command: "listen")) {
      try Values.frameSources(try ArgumentParser.parse(["listen", "--image="]))
    }
  }
}

@Suite("Device selectors")
struct DeviceSelectorTests {
  static let good: [(String, DeviceSelector)] = [
    ("socketcam", .socketCam),
    ("SocketCam", .socketCam),
    ("SOCKETCAM", .socketCam),
    ("AA:BB:CC:DD:EE:FF", .bluetooth("AA:BB:CC:DD:EE:FF")),
    ("aa:bb:cc:dd:ee:ff", .bluetooth("AA:BB:CC:DD:EE:FF")),
    ("aA-0b-C1-d2-E3-f4", .bluetooth("AA:0B:C1:D2:E3:F4")),
    ("00-11-22-33-44-55", .bluetooth("00:11:22:33:44:55")),
    ("tcp://dataman.local", .tcp(host: "dataman.local", port: 23)),
    ("tcp://10.0.0.5:4000", .tcp(host: "10.0.0.5", port: 4000)),
    ("TCP://10.0.0.5/", .tcp(host: "10.0.0.5", port: 23)),
    ("tcp://[::1]:23", .tcp(host: "::1", port: 23)),
    ("tcp://[fe80::1]", .tcp(host: "fe80::1", port: 23)),
    ("tcp://host:65535", .tcp(host: "host", port: 65535)),
    ("serial:/dev/ttyACM0", .serial(path: "/dev/ttyACM0", parameters: [:])),
    ("serial:/dev/ttyACM0?baud=9600", .serial(path: "/dev/ttyACM0", parameters: ["baud": "9600"])),
    (
      "serial:/dev/ttyUSB1?baud=115200&parity=even&databits=7",
      .serial(path: "/dev/ttyUSB1", parameters: ["baud": "115200", "parity": "even", "databits": "7"])
    ),
    ("hid:/dev/input/event3", .hid(path: "/dev/input/event3")),
    ("hid:auto", .hid(path: "auto")),
    ("Dock 4", .name("Dock 4")),
    ("S740 [front desk]", .name("S740 [front desk]")),
  ]

  @Test("good selectors", arguments: good)
  func goodSelector(_ text: String, _ expected: DeviceSelector) throws {
    #expect(try DeviceSelector.parse(text) == expected)
  }

  @Test("descriptions are normalised selectors")
  func descriptions() throws {
    #expect(try DeviceSelector.parse("aa-bb-cc-dd-ee-ff").description == "AA:BB:CC:DD:EE:FF")
    #expect(try DeviceSelector.parse("tcp://10.0.0.5").description == "tcp://10.0.0.5:23")
    #expect(try DeviceSelector.parse("tcp://[::1]:4000").description == "tcp://[::1]:4000")
    #expect(
      try DeviceSelector.parse("serial:/dev/ttyS0?parity=odd&baud=9600").description
        == "serial:/dev/ttyS0?baud=9600&parity=odd")
    #expect(try DeviceSelector.parse("SocketCam").description == "socketcam")
  }

  static let bad: [(String, String)] = [
    ("", "empty device selector"),
    ("tcp://", "'tcp://': missing host in tcp://HOST[:PORT]"),
    ("tcp://:23", "'tcp://:23': missing host in tcp://HOST[:PORT]"),
    ("tcp://host:0", "'tcp://host:0': port must be 1-65535"),
    ("tcp://host:65536", "'tcp://host:65536': port must be 1-65535"),
    ("tcp://host:abc", "'tcp://host:abc': port must be 1-65535"),
    ("tcp://host:", "'tcp://host:': port must be 1-65535"),
    ("tcp://host/path", "'tcp://host/path': a tcp:// selector has no path"),
    ("tcp://[::1", "'tcp://[::1': unclosed ["),
    ("tcp://[::1]x", "'tcp://[::1]x': expected tcp://HOST[:PORT]"),
    ("serial:relative", "'serial:relative': expected serial:/dev/PATH"),
    ("serial:", "'serial:': expected serial:/dev/PATH"),
    (
      "serial:/dev/ttyACM0?speed=9600",
      "'serial:/dev/ttyACM0?speed=9600': unknown serial parameter 'speed=9600' (use baud, databits, framing, parity, protocol, stopbits)"
    ),
    ("serial:/dev/ttyACM0?baud=fast", "'serial:/dev/ttyACM0?baud=fast': baud must be a positive number"),
    ("serial:/dev/ttyACM0?baud=0", "'serial:/dev/ttyACM0?baud=0': baud must be a positive number"),
    ("hid:event3", "'hid:event3': expected hid:/dev/input/eventN or hid:auto"),
    ("hid:", "'hid:': expected hid:/dev/input/eventN or hid:auto"),
    ("ftp://host", "'ftp://host': unknown device scheme; use tcp://, serial: or hid:"),
    ("AA:BB:CC:DD:EE:F", "'AA:BB:CC:DD:EE:F' is not a Bluetooth address (AA:BB:CC:DD:EE:FF)"),
    ("AA:BB:CC:DD:EE:FFF", "'AA:BB:CC:DD:EE:FFF' is not a Bluetooth address (AA:BB:CC:DD:EE:FF)"),
    // Address-shaped but five or seven bytes: a typo, not a name.
    ("AA:BB:CC:DD:EE", "'AA:BB:CC:DD:EE' is not a Bluetooth address (AA:BB:CC:DD:EE:FF)"),
    ("AA:BB:CC:DD:EE:FF:00", "'AA:BB:CC:DD:EE:FF:00' is not a Bluetooth address (AA:BB:CC:DD:EE:FF)"),
  ]

  @Test("bad selectors are INVALIDPARAMETER with a message naming the text", arguments: bad)
  func badSelector(_ text: String, _ message: String) {
    #expect(throws: CaptureError(.invalidParameter, message)) { try DeviceSelector.parse(text) }
  }

  @Test("an IPv6 address needs its brackets: tcp://::1 is not host \":\" on port 1")
  func unbracketedIPv6() {
    let error = #expect(throws: CaptureError.self) { try DeviceSelector.parse("tcp://::1") }
    #expect(error?.code == .invalidParameter)
  }

  @Test("the CLI wraps a bad selector as a usage error of the command")
  func usageError() {
    #expect(throws: UsageError(message: "'tcp://': missing host in tcp://HOST[:PORT]", command: "get")) {
      try Values.device("tcp://", command: "get")
    }
  }

  @Test("manager is a DEVICE for get and set; any other command refuses it as a usage error")
  func managerOnlyForGetAndSet() throws {
    #expect(try Values.device("manager", command: "get") == .deviceManager)
    #expect(try Values.device("Manager", command: "set") == .deviceManager)
    for command in ["connect", "remove", "trigger", "listen", "partnership"] {
      #expect(
        throws: UsageError(
          message:
            "'manager' is the device manager; only get and set take it (e.g. capture get manager favorite)",
          command: command)
      ) { try Values.device("manager", command: command) }
    }
  }
}

@Suite("Exit status")
struct ExitStatusTests {
  static let cases: [(Int32, Int32)] = [
    (0, 0), (1, 0), (5, 0), (8, 0), (-15, 15), (-17, 17), (-18, 18), (-32, 32), (-34, 34), (-42, 42),
    (-63, 63),
    (-64, 64), (-85, 85), (-99, 99),
  ]

  @Test("0 for success and warnings, |code| for errors", arguments: cases)
  func status(_ code: Int32, _ expected: Int32) {
    #expect(ExitStatus.of(ResultCode(code)) == expected)
  }

  @Test("named codes")
  func named() {
    #expect(ExitStatus.of(.noError) == 0)
    #expect(ExitStatus.of(.notSupported) == 15)
    #expect(ExitStatus.of(.notFound) == 17)
    #expect(ExitStatus.of(.invalidParameter) == 18)
    #expect(ExitStatus.of(.requestTimedOut) == 42)
    #expect(ExitStatus.of(.bluetoothPermissionMissing) == 99)
  }

  @Test("the documented table is derived from the codes")
  func table() {
    let rows = ExitStatus.table
    #expect(rows.first?.status == 0)
    #expect(rows.contains { $0.status == 15 && $0.name == "ESKT_NOTSUPPORTED" })
    #expect(rows.contains { $0.status == 18 && $0.name == "ESKT_INVALIDPARAMETER" })
    #expect(rows.contains { $0.status == 42 && $0.name == "ESKT_REQUESTTIMEDOUT" })
    #expect(rows.contains { $0.status == 85 && $0.name == "ESKT_INVALIDFORMAT" })
    #expect(rows.contains { $0.status == 86 && $0.name == "ESKT_INVALIDVERSION" })
    #expect(rows.allSatisfy { $0.status == ExitStatus.of(ResultCode.named($0.name) ?? .noError) })
  }
}

@Suite("Plain values are what set takes back")
struct PlainValueTests {
  @Test("a named number prints as its name alone; --json keeps the number and valueName")
  func namedNumbers() {
    #expect(Render.plainValue(.socketCamStatus, .byte(0)) == "enable")
    #expect(Render.plainValue(.socketCamStatus, .byte(1)) == "disable")
    #expect(Render.plainValue(.deviceType, .ulong(5)) == "SocketCamC820")
    #expect(Render.plainValue(.batteryLevelDevice, .ulong(1_677_740_288)) == "73%")
    #expect(Render.plainValue(.powerStateDevice, .ulong(2)) == PowerState.from(ulong: 2).cliName)
    #expect(Render.plainValue(.notificationsDevice, .ulong(0)) == "none")
    #expect(
      Render.plainValue(.notificationsDevice, .ulong(0x21)) == "trigger-button-press,battery-level-change")
    #expect(Render.plainValue(.localDecodeActionDevice, .byte(5)) == "beep,rumble")
    #expect(Render.plainValue(.standConfigDevice, .ulong(2)) == "stand-mode")
    #expect(
      Render.property(.socketCamStatus, .byte(0)).serialized
        == #"{"id":-2147352569,"name":"socket-cam-status","type":"Byte","value":0,"valueName":"enable"}"#)
  }

  @Test("a writable value whose name would not parse back to it prints as the number")
  func lossyNamesPrintNumbers() {
    // Bit 0x40 has no name: "battery-level-change" alone would drop it.
    #expect(Render.plainValue(.notificationsDevice, .ulong(0x60)) == "96")
    // A byte no SocketCamStatus case has.
    #expect(Render.plainValue(.socketCamStatus, .byte(9)) == "9")
    #expect(Render.plainValue(.dataFormatDevice, .byte(3)) == "3")
  }

  @Test("bytes, addresses, strings, versions and data sources")
  func otherTypes() {
    #expect(
      Render.plainValue(.bluetoothAddressDevice, .array([0x00, 0x11, 0x22, 0x7E, 0xF6, 0x19]))
        == "00:11:22:7E:F6:19")
    #expect(Render.plainValue(.deviceSpecific, .array([0x01, 0x02, 0xFF])) == "01 02 FF")
    #expect(Render.plainValue(.friendlyNameDevice, .string("Dock \"4\"")) == "Dock \"4\"")
    #expect(
      Render.plainValue(.versionDevice, .version(VersionValue(major: 1, middle: 50, minor: 2, build: 7)))
        == "1.50.2.7")
    #expect(
      Render.plainValue(.dataSourceDevice, .dataSource(DataSourceValue(id: .qrCode, status: .enable)))
        == "enable")
    #expect(Render.plainValue(.applyConfigDevice, .none) == "")
  }

  /// Every readable and writable property of a numeric type, every value in a range covering every
  /// named one: whatever `set` can write as a number, `get` prints in a form `set` parses back to it.
  @Test("for every writable numeric property, set parses what get prints back to the same value")
  func everyNamedValueRoundTrips() {
    var checked = 0
    for property in PropertyID.known where property.isWritable && property.isReadable {
      let values: [(PropertyValue, String)]
      switch property.setType {
      case .byte?: values = (0...255).map { (.byte(UInt8($0)), "\($0)") }
      case .ulong?: values = ((0...300).map { UInt32($0) } + [UInt32.max]).map { (.ulong($0), "\($0)") }
      default: continue
      }
      for (value, number) in values {
        // A number set refuses (outside the property's enum) is not a value set could have written.
        guard (try? PropertyValueCodec.parse(property, [number])) == value else { continue }
        let text = Render.plainValue(property, value)
        #expect(
          (try? PropertyValueCodec.parse(property, [text])) == value, "\(property.cliName) \(value) → \(text)"
        )
        checked += 1
      }
    }
    #expect(checked > 1000)
  }
}

@Suite("Data-source groups and pairs")
struct DataSourceGroupTests {
  @Test("1d and 2d are disjoint symbologies; nfc is the tag types; all is every real source")
  func membership() {
    let oneD = DataSource.known.filter(DataSourceGroup.oneD.contains)
    let twoD = DataSource.known.filter(DataSourceGroup.twoD.contains)
    #expect(Set(oneD).isDisjoint(with: twoD))
    #expect(oneD.allSatisfy(\.isSymbology) && twoD.allSatisfy(\.isSymbology))
    #expect(DataSource.known.filter(DataSourceGroup.nfc.contains) == DataSource.tagTypes)
    #expect(
      DataSource.known.filter(DataSourceGroup.all.contains) == DataSource.symbologies + DataSource.tagTypes)
    #expect(!DataSourceGroup.all.contains(.notSpecified) && !DataSourceGroup.all.contains(.lastSymbologyID))
    #expect(oneD.contains(.ean13) && oneD.contains(.code128) && oneD.contains(.gs1Databar))
    #expect(twoD.contains(.qrCode) && twoD.contains(.pdf417) && twoD.contains(.dataMatrix))
    // Neither 1D nor 2D: the postal codes and Digimarc (all only).
    let neither = DataSource.symbologies.filter { !oneD.contains($0) && !twoD.contains($0) }
    #expect(
      neither == [
        .australiaPost, .britishPost, .canadaPost, .dutchPost, .japanPost, .planet, .postnet,
        .uspsIntelligentMail, .digimarc, .koreaPost,
      ])
  }

  @Test("members are the supported ones, in id order, each once")
  func members() {
    #expect(DataSourceGroup.twoD.members(of: [.qrCode, .ean13, .aztec, .qrCode]) == [.aztec, .qrCode])
    #expect(DataSourceGroup.nfc.members(of: [.qrCode]) == [])
    #expect(DataSourceSelector.parse("qr-code")?.expand([]) == [.qrCode])
    #expect(DataSourceSelector.parse("ALL") == .group(.all))
    #expect(DataSourceSelector.parse("2D") == .group(.twoD))
    #expect(DataSourceSelector.parse("nope") == nil)
  }

  @Test("no data source name, alias or group is spelled like a property, so pairs end at a property name")
  func noNameIsAProperty() {
    var words = DataSource.known.map(\.cliName) + DataSourceGroup.allCases.map(\.rawValue)
    words += DataSource.aliases.keys
    for word in words { #expect(!PropertyArguments.isProperty(word), "\(word)") }
    #expect(PropertyArguments.isProperty("friendly-name") && PropertyArguments.isProperty("dmcc:SYMBOL.QR"))
    #expect(!PropertyArguments.isProperty("38"))
  }
}
