import TestSupport
import Testing

@testable import CaptureCore

#if canImport(Glibc)
  import Glibc
#endif

private func writeFile(_ path: String, _ text: String) {
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
  _ = text.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
  close(fd)
}

private func readFile(_ path: String) -> String? {
  guard let f = fopen(path, "r") else { return nil }
  defer { fclose(f) }
  var out = ""
  var buffer = [CChar](repeating: 0, count: 4096)
  while fgets(&buffer, 4096, f) != nil {
    out += String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
  return out
}

/// The `devices.json.corrupt-*` names in the store's directory, sorted.
private func corruptCopies(_ store: StateStore) -> [String] {
  guard let dir = opendir(store.directory) else { return [] }
  defer { closedir(dir) }
  var names: [String] = []
  while let entry = readdir(dir) {
    let name = withUnsafeBytes(of: entry.pointee.d_name) {
      String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
    }
    if name.hasPrefix("devices.json.corrupt-") { names.append(name) }
  }
  return names.sorted()
}

@Suite("State store")
struct StateStoreTests {
  @Test("a missing state file is the empty state")
  func missingFileIsEmpty() throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore("capture")
    let state = try store.load()
    #expect(state == StateFile())
    #expect(state.schemaVersion == 1)
  }

  @Test("update writes atomically with mode 0600 and a second load sees it")
  func updateRoundTrip() throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore("nested/capture")
    try store.update { (s: inout StateFile) throws(CaptureError) in
      s.socketCam.dataSources["38"] = 0
      s.socketCam.friendlyName = "Dock 4"
    }
    let again = try StateStore(directory: store.directory).load()
    #expect(again.socketCam.dataSources["38"] == 0)
    #expect(again.socketCam.friendlyName == "Dock 4")
    var info = stat()
    #expect(stat(store.path, &info) == 0)
    #expect(info.st_mode & 0o777 == 0o600)
    #expect(access(store.path + ".tmp.\(getpid())", F_OK) != 0)
  }

  @Test(
    "a corrupt or truncated state file is ESKT_INVALIDFORMAT naming both paths, moved aside byte for byte; the next load is empty",
    arguments: [
      "{not json", "", #"{"schemaVersion":1,"devices":[{"id":"A"#, "[1,2]", #"{"devices":[]}"#,
      #"{"schemaVersion":1,"devices":[{"id":"A","name":"n","type":"x","transport":"t"}]}"#,
    ])
  func corruptFileMovedAside(text: String) throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore()
    writeFile(store.path, text)
    do {
      _ = try store.load()
      Issue.record("expected an error")
    } catch {
      #expect(error.code == .invalidFormat)
      let copies = corruptCopies(store)
      #expect(copies.count == 1)
      let aside = store.directory + "/" + (copies.first ?? "?")
      #expect(error.message.hasPrefix("state file \(store.path) "), "\(error.message)")
      #expect(
        error.message.hasSuffix("; moved it to \(aside), the next command starts from an empty state"),
        "\(error.message)")
      #expect(readFile(aside) == text)
    }
    #expect(access(store.path, F_OK) != 0)
    #expect(try store.load() == StateFile())
  }

  @Test("update on a corrupt file moves it aside, throws 85 and writes nothing in its place")
  func corruptFileUpdate() throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore()
    writeFile(store.path, "{not json")
    let error = #expect(throws: CaptureError.self) {
      try store.update { (s: inout StateFile) throws(CaptureError) in s.favorite = "*" }
    }
    #expect(error?.code == .invalidFormat)
    #expect(access(store.path, F_OK) != 0)
    #expect(corruptCopies(store).map { readFile(store.directory + "/" + $0) } == ["{not json"])
    try store.update { (s: inout StateFile) throws(CaptureError) in s.favorite = "*" }
    #expect(try store.load().favorite == "*")
  }

  @Test("a corrupt copy never overwrites another: the same second gets .1, then .2")
  func quarantineNamesAreUnique() throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore()
    let time = Timestamp(milliseconds: 1_796_046_634_007)
    let base = store.path + ".corrupt-20261130T135034.007Z"
    #expect(StateStore.fileStamp(time) == "20261130T135034.007Z")
    writeFile(base, "first")
    writeFile(store.path, "second")
    #expect(try store.quarantine(at: time) == base + ".1")
    writeFile(store.path, "third")
    #expect(try store.quarantine(at: time) == base + ".2")
    #expect(readFile(base) == "first")
    #expect(readFile(base + ".1") == "second")
    #expect(readFile(base + ".2") == "third")
    #expect(access(store.path, F_OK) != 0)
  }

  @Test("a newer schema is never replaced by an update and nothing is moved aside")
  func futureVersionUntouched() throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore()
    let newer = #"{"schemaVersion": 2, "favorite": "*"}"#
    writeFile(store.path, newer)
    do {
      try store.update { (s: inout StateFile) throws(CaptureError) in s.favorite = "" }
      Issue.record("expected an error")
    } catch {
      #expect(error.code == .invalidVersion)
    }
    #expect(readFile(store.path) == newer)
    #expect(corruptCopies(store).isEmpty)
  }

  @Test("a temp file a killed writer left is never read as the state, and the next update removes it")
  func staleTemporary() throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore()
    try store.update { (s: inout StateFile) throws(CaptureError) in s.favorite = "*" }
    writeFile(store.path + ".tmp.999999", #"{"schemaVersion":1,"favorite":"AA:BB"#)
    #expect(try store.load().favorite == "*")
    try store.update { (s: inout StateFile) throws(CaptureError) in s.favorite = "" }
    #expect(access(store.path + ".tmp.999999", F_OK) != 0)
    #expect(try store.load().favorite == "")
  }
  @Test("a state file from a newer capture is ESKT_INVALIDVERSION")
  func futureVersion() throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore()
    writeFile(store.path, #"{"schemaVersion": 9, "devices": []}"#)
    do {
      _ = try store.load()
      Issue.record("expected an error")
    } catch {
      #expect(error.code == .invalidVersion)
    }
  }
}

@Suite("Events and decoded data")
struct EventTests {
  @Test(
    "timestamps print as ISO 8601 UTC with milliseconds",
    arguments: [
      (Int64(0), "1970-01-01T00:00:00.000Z"),
      (Int64(951_782_400_123), "2000-02-29T00:00:00.123Z"),
      (Int64(1_796_046_634_007), "2026-11-30T13:50:34.007Z"),
      (Int64(-1), "1969-12-31T23:59:59.999Z"),
    ])
  func iso8601(ms: Int64, text: String) {
    #expect(Timestamp(milliseconds: ms).iso8601 == text)
  }

  @Test("decoded text keeps valid UTF-8 and writes each invalid byte as \\xHH")
  func escapedText() {
    #expect(DecodedData.escapedText(Array("Grüße 東京".utf8)) == "Grüße 東京")
    #expect(DecodedData.escapedText([0x41, 0xFF, 0x42]) == "A\\xFFB")
    #expect(DecodedData.escapedText([0x00, 0xC3]) == "\u{0}\\xC3")
    #expect(DecodedData.escapedText([0xED, 0xA0, 0x80]) == "\\xED\\xA0\\x80")
  }

  @Test("event kinds parse by published name, case and separators ignored")
  func eventKinds() {
    #expect(EventKind.parse("decodedData") == .decodedData)
    #expect(EventKind.parse("decoded-data") == .decodedData)
    #expect(EventKind.parse("DEVICEARRIVAL") == .deviceArrival)
    #expect(EventKind.parse("nope") == nil)
    #expect(EventKind.decodedData.sdkID.rawValue == 5)
  }
}

@Suite("Favourites and the device manager")
struct FavoritesTests {
  @Test(
    "favourite strings parse and normalise as the SDK defines them",
    arguments: [
      ("", ""), ("  ", ""), ("*", "*"), (" * ", "*"),
      ("aa-bb-cc-dd-ee-ff", "AA:BB:CC:DD:EE:FF"),
      ("AA:BB:CC:DD:EE:FF;tcp://10.0.0.5", "AA:BB:CC:DD:EE:FF;tcp://10.0.0.5:23"),
      ("tcp://10.0.0.5:23; aa:bb:cc:dd:ee:ff ;tcp://10.0.0.5", "tcp://10.0.0.5:23;AA:BB:CC:DD:EE:FF"),
      (
        "serial:/dev/ttyUSB0?baud=9600;hid:/dev/input/event3",
        "serial:/dev/ttyUSB0?baud=9600;hid:/dev/input/event3"
      ),
    ])
  func parses(text: String, value: String) throws {
    #expect(try Favorites(parsing: text).value == value)
  }

  @Test("the three kinds of setting")
  func kinds() throws {
    #expect(try Favorites(parsing: "") == .off)
    #expect(try Favorites(parsing: "*") == .anySocketMobile)
    #expect(try Favorites(parsing: "11:22:33:44:55:66") == .devices(["11:22:33:44:55:66"]))
  }

  @Test(
    "names, socketcam, manager, empty items and a '*' in a list are ESKT_INVALIDPARAMETER",
    arguments: [
      ("front", "favorite 'front': expected a Bluetooth address or a tcp://, serial: or hid: device"),
      ("socketcam", "favorite 'socketcam': expected a Bluetooth address or a tcp://, serial: or hid: device"),
      ("manager", "favorite 'manager': expected a Bluetooth address or a tcp://, serial: or hid: device"),
      ("AA:BB:CC:DD:EE:FF;;tcp://h", "favorite 'AA:BB:CC:DD:EE:FF;;tcp://h': empty identifier between ';'"),
      (";AA:BB:CC:DD:EE:FF", "favorite ';AA:BB:CC:DD:EE:FF': empty identifier between ';'"),
      ("AA:BB:CC:DD:EE:FF;*", "favorite 'AA:BB:CC:DD:EE:FF;*': '*' stands alone (any Socket Mobile device)"),
    ])
  func rejects(text: String, message: String) {
    do {
      _ = try Favorites(parsing: text)
      Issue.record("expected an error for '\(text)'")
    } catch {
      #expect(error.code == .invalidParameter)
      #expect(error.message == message)
    }
  }

  @Test("manager selects the device manager, in any case")
  func managerSelector() throws {
    #expect(try DeviceSelector.parse("manager") == .deviceManager)
    #expect(try DeviceSelector.parse("MANAGER") == .deviceManager)
    #expect(DeviceSelector.deviceManager.description == "manager")
  }

  @Test("the device manager keeps Favorite in the state file; anything else is NOTSUPPORTED")
  func deviceManagerHandle() async throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore("capture")
    let manager = DeviceManagerHandle(store: store)
    #expect(manager.info == DeviceInfo(id: "manager", name: "Device Manager", type: .deviceManagerBle))
    #expect(try await manager.get(.favorite, argument: .none) == .string(""))
    try await manager.set(.favorite, .string("aa-bb-cc-dd-ee-ff"))
    #expect(try store.load().favorite == "AA:BB:CC:DD:EE:FF")
    #expect(try await manager.get(.favorite, argument: .none) == .string("AA:BB:CC:DD:EE:FF"))
    for property in [PropertyID.startDiscovery, .friendlyNameDevice, .socketCamStatus] {
      do {
        _ = try await manager.get(property, argument: .none)
        Issue.record("expected NOTSUPPORTED for \(property)")
      } catch {
        #expect(error.code == .notSupported)
        #expect(error.message == "Device Manager does not support \(property.cliName) (\(property.hex))")
      }
    }
    do {
      try await manager.set(.favorite, .string("front"))
      Issue.record("expected an error")
    } catch {
      #expect(error.code == .invalidParameter)
    }
    #expect(try store.load().favorite == "AA:BB:CC:DD:EE:FF")
  }
}
