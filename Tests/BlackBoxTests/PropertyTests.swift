// get and set on SocketCam: values, persistence across processes, profiles (set --from).

import Testing

@Suite("get, set and profiles")
struct PropertyTests {
  @Test("get prints one value per property; several print label<TAB>value")
  func getValues() async throws {
    let sandbox = try Sandbox()
    let cases: [([String], String)] = [
      // device-type in plain: the SDK type name (a script compares it, nothing parses the number).
      (["device-type"], "SocketCamC820"),
      (["friendly-name"], "SocketCam C820"),
      (["data-source", "qr-code"], "enable"),
      (["data-source", "QRCode"], "enable"),
      (["data-source", "38"], "enable"),
      (["socket-cam-status"], "enable"),
      // Bookland EAN is off by default so a book's EAN-13 reads as EAN-13.
      (["data-source", "bookland-ean"], "disable"),
    ]
    for (words, value) in cases {
      let outcome = try await sandbox.capture(["get", "socketcam"] + words)
      #expect(outcome.status == 0, "\(words): \(outcome)")
      #expect(outcome.outLines == [value], "\(words)")
      #expect(outcome.stderr.isEmpty)
    }
    let version = try await sandbox.capture("get", "socketcam", "version")
    #expect(version.status == 0)
    #expect(
      (try? Regex(#"\d+\.\d+\.\d+\.\d+"#).wholeMatch(in: version.outLines.first ?? "")) != nil, "\(version)")

    let several = try await sandbox.capture(
      "get", "socketcam", "friendly-name", "device-type", "data-source", "ean13")
    #expect(several.status == 0)
    #expect(
      several.outLines == [
        "friendly-name\tSocketCam C820", "device-type\tSocketCamC820", "data-source ean13\tenable",
      ])
    #expect(!sandbox.exists(sandbox.stateDirectory), "reading must not write state")
  }

  @Test("--json get is one document")
  func getJSON() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture(
      "--json", "get", "socketcam", "device-type", "data-source", "qr-code")
    #expect(outcome.status == 0)
    #expect(
      outcome.outLines == [
        #"{"device":{"id":"socketcam","name":"SocketCam C820","type":5,"typeName":"SocketCamC820"},"properties":[{"id":65538,"name":"device-type","type":"Ulong","value":5,"valueName":"SocketCamC820"},{"id":7798788,"name":"data-source","type":"DataSource","value":{"flags":1,"id":38,"name":"QR Code","status":1,"statusName":"enable"}}]}"#
      ])
  }

  @Test("a property SocketCam lacks exits 15, and with other properties the rest are still printed")
  func unsupportedAmongOthers() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture("get", "socketcam", "friendly-name", "battery-level")
    #expect(outcome.status == 15, "\(outcome)")
    #expect(outcome.outLines == ["friendly-name\tSocketCam C820"])
    #expect(
      outcome.errLines == [
        "capture: ESKT_NOTSUPPORTED (-15): SocketCam C820 does not support battery-level (0x0001010B)"
      ])
  }

  @Test("disabling QR Code makes a QR image exit 17, in a later process; enabling brings it back")
  func dataSourceSteersDecoding() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let set = try await sandbox.capture("set", "socketcam", "data-source", "qr-code", "disable")
    #expect(set.status == 0, "\(set)")
    #expect(set.stdout.isEmpty)
    #expect(set.stderr.isEmpty)
    #expect(try await sandbox.capture("get", "socketcam", "data-source", "qr-code").outLines == ["disable"])
    #expect(try await sandbox.capture("get", "socketcam", "data-source", "38").outLines == ["disable"])

    let blocked = try await sandbox.capture("trigger", "socketcam", "start", "--image", images.qr.path)
    Shape.expectFailure(
      blocked, status: 17, name: "ESKT_NOTFOUND", message: "no barcode found in '\(images.qr.path)'")
    // Other symbologies are untouched.
    let other = try await sandbox.capture("trigger", "socketcam", "start", "--image", images.ean13.path)
    #expect(other.outLines == [images.ean13.text])

    #expect(try await sandbox.capture("set", "socketcam", "data-source", "QRCode", "enable").status == 0)
    let back = try await sandbox.capture("trigger", "socketcam", "start", "--image", images.qr.path)
    #expect(back.status == 0)
    #expect(back.outLines == [images.qr.text])
  }

  @Test("set data-source ean13 disable persists and steers decoding")
  func ean13Disable() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    #expect(try await sandbox.capture("set", "socketcam", "data-source", "ean13", "disable").status == 0)
    #expect(try await sandbox.capture("get", "socketcam", "data-source", "EAN_13").outLines == ["disable"])
    let outcome = try await sandbox.capture("trigger", "socketcam", "start", "--image", images.ean13.path)
    #expect(outcome.status == 17, "\(outcome)")
    #expect(outcome.stdout.isEmpty)
  }

  @Test("friendly-name round trip; a 40-byte name is rejected with 18 and nothing changes")
  func friendlyName() async throws {
    let sandbox = try Sandbox()
    #expect(try await sandbox.capture("set", "socketcam", "friendly-name", "Dock 4").status == 0)
    #expect(try await sandbox.capture("get", "socketcam", "friendly-name").outLines == ["Dock 4"])
    // Events carry the new name.
    let images = try await Images.get()
    let event = Shape.jsonLines(
      try await sandbox.capture("--json", "trigger", "socketcam", "start", "--image", images.qr.path))
    #expect(event.first?["device"]?["name"] == .string("Dock 4"))

    // 31 UTF-8 bytes is the limit: "é" is two bytes.
    let thirtyOne = String(repeating: "é", count: 15) + "x"
    #expect(try await sandbox.capture("set", "socketcam", "friendly-name", thirtyOne).status == 0)
    #expect(try await sandbox.capture("get", "socketcam", "friendly-name").outLines == [thirtyOne])

    let before = try sandbox.read(sandbox.statePath)
    for name in [String(repeating: "n", count: 40), String(repeating: "é", count: 16), ""] {
      let outcome = try await sandbox.capture("set", "socketcam", "friendly-name", name)
      #expect(outcome.status == 18, "\(name.utf8.count) bytes: \(outcome)")
      #expect(
        outcome.errLines.first == Shape.invalidParameterPrefix + "friendly-name must be 1 to 31 UTF-8 bytes")
      #expect(outcome.stdout.isEmpty)
      #expect(try sandbox.read(sandbox.statePath) == before)
    }
    #expect(try await sandbox.capture("get", "socketcam", "friendly-name").outLines == [thirtyOne])
  }

  @Test("--json get socketcam --all is one document whose properties include device-type 5")
  func getAll() async throws {
    let sandbox = try Sandbox()
    for arguments in [["--json", "get", "socketcam", "--all"], ["get", "socketcam", "--all", "--json"]] {
      let outcome = try await sandbox.capture(arguments)
      #expect(outcome.status == 0, "\(outcome)")
      #expect(outcome.outLines.count == 1)
      let documents = Shape.jsonLines(outcome)
      let document = try #require(documents.first)
      #expect(document.keys == ["device", "properties"])
      #expect(document["device"] == Shape.socketCamDevice)
      let properties = document["properties"]?.array ?? []
      let deviceType = properties.first { $0["name"] == .string("device-type") }
      #expect(
        deviceType
          == .object([
            ("id", .number("65538")), ("name", .string("device-type")), ("type", .string("Ulong")),
            ("value", .number("5")), ("valueName", .string("SocketCamC820")),
          ]))
      #expect(
        properties.contains {
          $0["name"] == .string("friendly-name") && $0["value"] == .string("SocketCam C820")
        })
      let qr = properties.first {
        $0["name"] == .string("data-source") && $0["value"]?["id"] == .number("38")
      }
      #expect(qr?["value"]?["status"] == .number("1"))
      #expect(properties.allSatisfy { $0["name"]?.string != "battery-level" })
    }
    let plain = try await sandbox.capture("get", "socketcam", "--all")
    #expect(plain.status == 0)
    #expect(plain.outLines.contains("device-type\tSocketCamC820"))
    #expect(plain.outLines.contains("data-source qr-code\tenable"))
  }

  @Test("get --list lists properties with id and access; for socketcam only its own")
  func getList() async throws {
    let sandbox = try Sandbox()
    let all = try await sandbox.capture("get", "--list")
    #expect(all.status == 0)
    #expect(all.outLines.contains { $0.hasPrefix("battery-level ") && $0.contains("0x0001010B  r-") })
    let socketcam = try await sandbox.capture("get", "socketcam", "--list")
    #expect(socketcam.status == 0)
    #expect(!socketcam.out.contains("battery-level"))
    #expect(socketcam.outLines.contains { $0.hasPrefix("friendly-name ") && $0.contains("  rw  ") })
    let json = try await sandbox.capture("--json", "get", "--list")
    #expect(json.outLines.count == 1)
    #expect(Shape.jsonLines(json).first?["properties"]?.array?.isEmpty == false)
  }

  @Test(
    "a profile from get --all applies with every row unchanged; --dry-run reports a change and writes nothing"
  )
  func profileRoundTrip() async throws {
    let sandbox = try Sandbox()
    let saved = try await sandbox.capture("--json", "get", "socketcam", "--all")
    #expect(saved.status == 0)
    let profile = try sandbox.write("profile.json", saved.stdout)

    let apply = try await sandbox.capture("set", "socketcam", "--from", profile)
    #expect(apply.status == 0, "\(apply)")
    #expect(!apply.outLines.isEmpty)
    for line in apply.outLines { #expect(line.hasSuffix("\tunchanged"), "\(line)") }
    #expect(apply.outLines.contains("friendly-name\tunchanged"))
    #expect(apply.outLines.contains("data-source qr-code\tunchanged"))
    #expect(apply.outLines.contains("socket-cam-status\tunchanged"))
    // Read-only facts are not rows to apply.
    #expect(!apply.outLines.contains { $0.hasPrefix("device-type") || $0.hasPrefix("version") })
    #expect(!sandbox.exists(sandbox.statePath), "an idempotent apply writes nothing")
    // And again: the same answer (idempotent).
    #expect(try await sandbox.capture("set", "socketcam", "--from", profile).outLines == apply.outLines)

    #expect(try await sandbox.capture("set", "socketcam", "data-source", "ean13", "disable").status == 0)
    let state = try sandbox.read(sandbox.statePath)
    let dry = try await sandbox.capture("set", "socketcam", "--from", profile, "--dry-run")
    #expect(dry.status == 0, "\(dry)")
    let expectedDry = apply.outLines.map {
      $0 == "data-source ean13\tunchanged" ? "data-source ean13\twould change" : $0
    }
    #expect(dry.outLines == expectedDry)
    #expect(try sandbox.read(sandbox.statePath) == state, "--dry-run must write nothing")
    #expect(try await sandbox.capture("get", "socketcam", "data-source", "ean13").outLines == ["disable"])

    let jsonDry = try await sandbox.capture("--json", "set", "socketcam", "--from", profile, "--dry-run")
    let document = try #require(Shape.jsonLines(jsonDry).first)
    #expect(document.keys == ["device", "dryRun", "results"])
    #expect(document["dryRun"] == .bool(true))
    #expect(
      document["results"]?.array?.first { $0["property"] == .string("data-source ean13") }
        == .object([("property", .string("data-source ean13")), ("status", .string("would change"))]))

    let real = try await sandbox.capture("set", "socketcam", "--from", profile)
    #expect(real.status == 0)
    #expect(
      real.outLines
        == apply.outLines.map { $0 == "data-source ean13\tunchanged" ? "data-source ean13\tchanged" : $0 })
    #expect(try await sandbox.capture("get", "socketcam", "data-source", "ean13").outLines == ["enable"])
  }

  @Test("set --from - reads the profile from stdin")
  func profileFromStdin() async throws {
    let sandbox = try Sandbox()
    let profile = #"{"properties":[{"name":"friendly-name","value":"From stdin"}]}"#
    let outcome = try await sandbox.capture(["set", "socketcam", "--from", "-"], stdin: Array(profile.utf8))
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.outLines == ["friendly-name\tchanged"])
    #expect(try await sandbox.capture("get", "socketcam", "friendly-name").outLines == ["From stdin"])
  }

  @Test(
    "a profile with unknown properties and wrong value types exits 18 listing every problem; nothing written")
  func badProfile() async throws {
    let sandbox = try Sandbox()
    let profile = try sandbox.write(
      "bad.json",
      #"""
      {"properties":[
        {"name":"friendly-name","value":"Would be fine"},
        {"name":"no-such-property","value":1},
        {"name":"friendly-name","value":12},
        {"id":7798788,"name":"data-source","value":{"id":38,"status":"on"}},
        {"name":"data-source","value":{"id":19,"status":0}}
      ]}
      """#)
    let message =
      "profile '\(profile)' rejected: entry 2: unknown property 'no-such-property'; entry 3 (friendly-name): value of the wrong type or out of range for String; entry 4 (data-source): data source qr-code needs \"status\" 0 (disable) or 1 (enable)"
    let outcome = try await sandbox.capture("set", "socketcam", "--from", profile)
    #expect(outcome.status == 18, "\(outcome)")
    #expect(outcome.errLines.first == Shape.invalidParameterPrefix + message, "\(outcome)")
    #expect(outcome.stdout.isEmpty)
    #expect(!sandbox.exists(sandbox.statePath), "nothing may be written from a bad profile")
    let json = try await sandbox.capture("--json", "set", "socketcam", "--from", profile)
    #expect(json.status == 18)
    Shape.expectErrorObject(json, code: -18, name: "ESKT_INVALIDPARAMETER", message: message)
    #expect(try await sandbox.capture("get", "socketcam", "friendly-name").outLines == ["SocketCam C820"])
  }

  @Test("a profile that is not JSON exits 85; a missing one 63")
  func unreadableProfile() async throws {
    let sandbox = try Sandbox()
    let garbage = try sandbox.write("garbage.json", "{ not json")
    Shape.expectFailure(
      try await sandbox.capture("set", "socketcam", "--from", garbage), status: 85,
      name: "ESKT_INVALIDFORMAT",
      message: "profile '\(garbage)' is not valid JSON")
    let missing = sandbox.path("nope.json")
    Shape.expectFailure(
      try await sandbox.capture("set", "socketcam", "--from", missing), status: 63, name: "ESKT_FILENOTFOUND",
      message: "cannot open profile '\(missing)': No such file or directory")
    #expect(!sandbox.exists(sandbox.statePath))
  }

  @Test("set with --json prints the written properties")
  func setJSON() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture("--json", "set", "socketcam", "data-source", "pdf417", "disable")
    #expect(outcome.status == 0)
    let document = try #require(Shape.jsonLines(outcome).first)
    #expect(
      document["properties"]
        == .array([
          .object([
            ("id", .number("7798788")), ("name", .string("data-source")), ("type", .string("DataSource")),
            (
              "value",
              .object([
                ("flags", .number("1")), ("id", .number("33")), ("name", .string("PDF 417")),
                ("status", .number("0")),
                ("statusName", .string("disable")),
              ])
            ),
          ])
        ]))
  }

  @Test("a friendly name with a newline or tab cannot break the line-oriented list output")
  func controlCharactersInName() async throws {
    let sandbox = try Sandbox()
    for name in ["line1\nline2", "tab\there", "cr\rname"] {
      let set = try await sandbox.capture("set", "socketcam", "friendly-name", name)
      // Either the name is refused as a usage error, or plain output keeps one device per line and four
      // tab-separated columns.
      if set.status == 0 {
        let list = try await sandbox.capture("list")
        #expect(list.outLines.count == 1, "\(name.debugDescription): \(list)")
        #expect(
          list.outLines.first?.split(separator: "\t", omittingEmptySubsequences: false).count == 4, "\(list)")
        #expect(!list.out.dropLast().contains("\r"), "\(list)")
        let get = try await sandbox.capture("get", "socketcam", "friendly-name")
        #expect(get.outLines.count == 1, "\(name.debugDescription): \(get)")
      } else {
        #expect(set.status == 18, "\(set)")
      }
    }
  }

  @Test("get data-source without a name lists every source SocketCam has, as get --all reads them")
  func dataSourceListing() async throws {
    let sandbox = try Sandbox()
    let all = try await sandbox.capture("get", "socketcam", "--all")
    let expected = all.outLines.filter { $0.hasPrefix("data-source ") }.map {
      String($0.dropFirst("data-source ".count)).replacingOccurrences(of: "\t", with: " ")
    }
    let listing = try await sandbox.capture("get", "socketcam", "data-source")
    #expect(listing.status == 0, "\(listing)")
    #expect(listing.stderr.isEmpty)
    #expect(listing.outLines == expected)
    #expect(listing.outLines.first == "aztec enable")
    #expect(listing.outLines.contains("bookland-ean disable"))

    // JSON: the objects `get socketcam data-source NAME --json` gives, one per source, in the same order.
    let json = try #require(
      Shape.jsonLines(try await sandbox.capture("--json", "get", "socketcam", "data-source")).first)
    #expect(json["device"] == Shape.socketCamDevice)
    let objects = json["properties"]?.array ?? []
    #expect(objects.count == expected.count)
    for (object, line) in zip(objects, expected) {
      let name = String(line.split(separator: " ")[0])
      let one = try #require(
        Shape.jsonLines(try await sandbox.capture("--json", "get", "socketcam", "data-source", name)).first)
      #expect(one["properties"]?.array == [object], "\(name)")
    }

    // A group lists its members only; before another property, data-source lists them all.
    let twoD = try await sandbox.capture("get", "socketcam", "data-source", "2d")
    #expect(
      twoD.outLines == [
        "aztec enable", "data-matrix enable", "ean-ucc-composite-ab disable", "maxicode enable",
        "pdf417 enable",
        "pdf417-micro enable", "qr-code enable", "micro-qr-code enable", "rmqr-code enable",
      ])
    let mixed = try await sandbox.capture("get", "socketcam", "data-source", "friendly-name")
    #expect(
      mixed.outLines == all.outLines.filter { $0.hasPrefix("data-source ") } + [
        "friendly-name\tSocketCam C820"
      ])
    let nfc = try await sandbox.capture("get", "socketcam", "data-source", "nfc")
    Shape.expectFailure(
      nfc, status: 15, name: "ESKT_NOTSUPPORTED",
      message: "SocketCam C820 has no data source in group nfc (name one: get DEVICE data-source NAME)")
  }

  @Test("set data-source all disable qr-code enable: only QR Code decodes, each source written once")
  func onlyQR() async throws {
    let images = try await Images.get()
    let sandbox = try Sandbox()
    let set = try await sandbox.capture(
      "--json", "set", "socketcam", "data-source", "all", "disable", "qr-code", "enable")
    #expect(set.status == 0, "\(set)")
    let written = try #require(Shape.jsonLines(set).first)["properties"]?.array ?? []
    let listing = try await sandbox.capture("get", "socketcam", "data-source")
    #expect(written.count == listing.outLines.count, "every supported source once")
    #expect(listing.outLines.filter { $0.hasSuffix(" enable") } == ["qr-code enable"])
    #expect(written.filter { $0["value"]?["statusName"] == .string("enable") }.count == 1)

    let qr = try await sandbox.capture("trigger", "socketcam", "start", "--image", images.qr.path)
    #expect(qr.outLines == [images.qr.text], "\(qr)")
    let ean = try await sandbox.capture("trigger", "socketcam", "start", "--image", images.ean13.path)
    #expect(ean.status == 17, "\(ean)")

    // A group touches only its members: 1d back on, 2d (QR Code included) untouched.
    #expect(try await sandbox.capture("set", "socketcam", "data-source", "1D", "enable").status == 0)
    let after = try await sandbox.capture("get", "socketcam", "data-source")
    #expect(after.outLines.contains("ean13 enable"))
    #expect(after.outLines.contains("qr-code enable"))
    #expect(after.outLines.contains("aztec disable"))
    #expect(
      try await sandbox.capture("trigger", "socketcam", "start", "--image", images.ean13.path).status == 0)
  }

  @Test("a bad word anywhere in data-source pairs, or a group the device lacks, writes nothing")
  func dataSourcePairsCheckedFirst() async throws {
    let sandbox = try Sandbox()
    let typo = try await sandbox.capture(
      "set", "socketcam", "data-source", "all", "disable", "qr-cod", "enable")
    #expect(typo.status == 18, "\(typo)")
    let status = try await sandbox.capture(
      "set", "socketcam", "data-source", "all", "disable", "qr-code", "on!")
    #expect(status.status == 18, "\(status)")
    let nfc = try await sandbox.capture("set", "socketcam", "data-source", "2d", "disable", "nfc", "enable")
    Shape.expectFailure(
      nfc, status: 15, name: "ESKT_NOTSUPPORTED", message: "SocketCam C820 has no data source in group nfc")
    #expect(!sandbox.exists(sandbox.statePath), "nothing may be written")
    // Pairs end at the next property name.
    let then = try await sandbox.capture(
      "set", "socketcam", "data-source", "aztec", "disable", "38", "off", "friendly-name", "After")
    #expect(then.status == 0, "\(then)")
    #expect(
      try await sandbox.capture(
        "get", "socketcam", "data-source", "aztec", "data-source", "qr-code", "friendly-name"
      ).outLines
        == ["data-source aztec\tdisable", "data-source qr-code\tdisable", "friendly-name\tAfter"])
  }
}
