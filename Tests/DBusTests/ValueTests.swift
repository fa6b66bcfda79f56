import Testing

@testable import DBus

@Suite struct ValueTests {
  @Test func signatures() {
    #expect(DBusValue.byte(1).signature == "y")
    #expect(DBusValue.boolean(true).signature == "b")
    #expect(DBusValue.int16(1).signature == "n")
    #expect(DBusValue.uint16(1).signature == "q")
    #expect(DBusValue.int32(1).signature == "i")
    #expect(DBusValue.uint32(1).signature == "u")
    #expect(DBusValue.int64(1).signature == "x")
    #expect(DBusValue.uint64(1).signature == "t")
    #expect(DBusValue.double(1).signature == "d")
    #expect(DBusValue.string("").signature == "s")
    #expect(DBusValue.objectPath("/").signature == "o")
    #expect(DBusValue.signature("").signature == "g")
    #expect(DBusValue.unixFD(0).signature == "h")
    #expect(DBusValue.variant(.int32(1)).signature == "v")
    #expect(DBusValue.bytes([]).signature == "ay")
    #expect(DBusValue.strings([]).signature == "as")
    #expect(DBusValue.stringDict([:]).signature == "a{sv}")
    #expect(DBusValue.structure([.int32(1), .string("a")]).signature == "(is)")
    #expect(
      DBusValue.array(elementSignature: "{oa{sa{sv}}}", []).signature == "a{oa{sa{sv}}}")
  }

  @Test func stringDictSortsKeysAndWrapsValues() {
    let dict = DBusValue.stringDict(["b": .int32(2), "a": .string("x")])
    #expect(
      dict
        == .array(
          elementSignature: "{sv}",
          [.dictEntry(.string("a"), .variant(.string("x"))), .dictEntry(.string("b"), .variant(.int32(2)))]))
    #expect(dict.stringDictValue == ["a": .string("x"), "b": .int32(2)])
  }

  @Test func typedAccessors() {
    #expect(DBusValue.byte(7).byteValue == 7)
    #expect(DBusValue.byte(7).int32Value == nil)
    #expect(DBusValue.boolean(true).boolValue == true)
    #expect(DBusValue.int16(-3).int16Value == -3)
    #expect(DBusValue.uint16(3).uint16Value == 3)
    #expect(DBusValue.int32(-4).int32Value == -4)
    #expect(DBusValue.uint32(4).uint32Value == 4)
    #expect(DBusValue.int64(-5).int64Value == -5)
    #expect(DBusValue.uint64(5).uint64Value == 5)
    #expect(DBusValue.double(0.5).doubleValue == 0.5)
    #expect(DBusValue.string("s").stringValue == "s")
    #expect(DBusValue.objectPath("/a").stringValue == nil)
    #expect(DBusValue.objectPath("/a").objectPathValue == "/a")
    #expect(DBusValue.signature("a{sv}").signatureValue == "a{sv}")
    #expect(DBusValue.bytes([1, 2, 255]).bytesValue == [1, 2, 255])
    #expect(DBusValue.strings(["a"]).bytesValue == nil)
    #expect(DBusValue.strings(["a", "b"]).stringsValue == ["a", "b"])
    #expect(DBusValue.objectPaths(["/a"]).objectPathsValue == ["/a"])
    #expect(DBusValue.strings(["a"]).arrayValue == [.string("a")])
    #expect(DBusValue.variant(.variant(.int32(1))).variantValue == .variant(.int32(1)))
    #expect(DBusValue.variant(.variant(.int32(1))).unwrapped == .int32(1))
    #expect(DBusValue.int32(1).variantValue == nil)
    #expect(DBusValue.int32(1).unwrapped == .int32(1))
    #expect(DBusValue.structure([.int32(1)]).structureValue == [.int32(1)])
    // a{s*} other than a{sv}: values returned as they are.
    let stringToInt = DBusValue.array(elementSignature: "{si}", [.dictEntry(.string("k"), .int32(9))])
    #expect(stringToInt.stringDictValue == ["k": .int32(9)])
    #expect(DBusValue.array(elementSignature: "{ii}", []).stringDictValue == nil)
    #expect(DBusValue.strings([]).stringDictValue == nil)
  }

  @Test func matchRuleText() {
    #expect(MatchRule().text == "type='signal'")
    let rule = MatchRule(
      sender: "org.bluez", interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
      path: "/org/bluez/hci0", arg0: "org.bluez.Device1")
    #expect(
      rule.text
        == "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.Properties',"
        + "member='PropertiesChanged',path='/org/bluez/hci0',arg0='org.bluez.Device1'")
    #expect(MatchRule(pathNamespace: "/org/bluez").text == "type='signal',path_namespace='/org/bluez'")
    // The spec's quoting: an apostrophe leaves the quotes, is escaped, and the quotes reopen; a
    // backslash inside quotes stands for itself; a comma inside quotes is literal.
    #expect(MatchRule(arg0: "O'Brien").text == #"type='signal',arg0='O'\''Brien'"#)
    #expect(MatchRule(arg0: "'").text == #"type='signal',arg0=''\'''"#)
    #expect(MatchRule(arg0: #"a\b,c"#).text == #"type='signal',arg0='a\b,c'"#)
  }

  @Test func matchRuleLocalMatching() {
    let rule = MatchRule(interface: "i.f", member: "M", pathNamespace: "/a", arg0: "x")
    func matches(_ path: String, _ member: String = "M", _ arg: String? = "x") -> Bool {
      rule.matches(
        type: "signal", sender: ":1.1", path: path, interface: "i.f", member: member, arg0: { arg })
    }
    #expect(matches("/a"))
    #expect(matches("/a/b/c"))
    #expect(!matches("/ab"))
    #expect(!matches("/a", "N"))
    #expect(!matches("/a", "M", "y"))
    #expect(!matches("/a", "M", nil))
    #expect(
      MatchRule(sender: ":1.5").matches(
        type: "signal", sender: ":1.6", path: "/", interface: "a.b", member: "M", arg0: { nil }) == false)
    // A well-known sender is resolved by the bus only.
    #expect(
      MatchRule(sender: "org.bluez").matches(
        type: "signal", sender: ":1.6", path: "/", interface: "a.b", member: "M", arg0: { nil }))
    #expect(
      MatchRule(pathNamespace: "/").matches(
        type: "signal", sender: nil, path: "/x", interface: "a.b", member: "M", arg0: { nil }))
  }

  @Test func timeoutMilliseconds() {
    #expect(DBusConnection.milliseconds(.seconds(25)) == 25_000)
    #expect(DBusConnection.milliseconds(.milliseconds(1)) == 1)
    #expect(DBusConnection.milliseconds(.microseconds(1)) == 1)
    #expect(DBusConnection.milliseconds(.zero) == 0)
    #expect(DBusConnection.milliseconds(.seconds(-1)) == 0)
    #expect(DBusConnection.milliseconds(.seconds(Int64.max)) == Int32.max)
    #expect(DBusConnection.milliseconds(.seconds(3_000_000)) == Int32.max)
  }

  @Test func validationRefusesInvalidValues() {
    func refused(_ body: [DBusValue]) -> String? {
      dbusError { try Marshalling.validate(body: body) }?.name
    }
    let invalidArgs = DBusError.Name.invalidArgs
    #expect(refused([.objectPath("no/slash")]) == invalidArgs)
    #expect(refused([.objectPath("/trailing/")]) == invalidArgs)
    #expect(refused([.objectPath("/a//b")]) == invalidArgs)
    #expect(refused([.signature("a{")]) == invalidArgs)
    #expect(refused([.signature("(")]) == invalidArgs)
    #expect(refused([.string("nul\0inside")]) == invalidArgs)
    #expect(refused([.array(elementSignature: "i", [.string("x")])]) == invalidArgs)
    #expect(refused([.array(elementSignature: "", [])]) == invalidArgs)
    #expect(refused([.array(elementSignature: "ii", [])]) == invalidArgs)
    #expect(refused([.dictEntry(.string("k"), .int32(1))]) == invalidArgs)
    #expect(refused([.array(elementSignature: "{vi}", [])]) == invalidArgs)
    #expect(refused([.variant(.dictEntry(.string("k"), .int32(1)))]) == invalidArgs)
    #expect(refused([.structure([])]) == invalidArgs)
    #expect(refused([.unixFD(-1)]) == invalidArgs)
    var deep = DBusValue.int32(1)
    for _ in 0..<70 { deep = .variant(deep) }
    #expect(refused([deep]) == invalidArgs)
    let longBody = Array(repeating: DBusValue.int32(1), count: 256)
    #expect(refused(longBody) == invalidArgs)
    #expect(refused([.signature(""), .signature("a{sv}ii"), .objectPath("/"), .string("é✓")]) == nil)
    #expect(
      refused([.array(elementSignature: "{sv}", [.dictEntry(.string("k"), .variant(.int32(1)))])]) == nil)
  }

  @Test func conformance() {
    #expect(Marshalling.conforms(.int32(1), to: "i"))
    #expect(!Marshalling.conforms(.int32(1), to: "u"))
    #expect(!Marshalling.conforms(.int32(1), to: "ii"))
    #expect(Marshalling.conforms(.dictEntry(.string("k"), .variant(.bytes([]))), to: "{sv}"))
    #expect(!Marshalling.conforms(.dictEntry(.string("k"), .int32(1)), to: "{sv}"))
    #expect(Marshalling.conforms(.structure([.int32(1), .strings([])]), to: "(ias)"))
    #expect(!Marshalling.conforms(.structure([.int32(1)]), to: "(ias)"))
    #expect(!Marshalling.conforms(.structure([.int32(1), .strings([]), .byte(0)]), to: "(ias)"))
    #expect(Marshalling.conforms(.array(elementSignature: "a{sv}", []), to: "aa{sv}"))
    #expect(!Marshalling.conforms(.array(elementSignature: "a{sv}", []), to: "aa{si}"))
    #expect(!Marshalling.conforms(.array(elementSignature: "a{sv}", []), to: "aa"))
  }
}
