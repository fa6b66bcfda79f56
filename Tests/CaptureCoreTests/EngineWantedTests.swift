import Testing

@testable import CaptureCore

@Suite("engine service mode: what the state file asks for")
struct EngineWantedTests {
  static func file(_ devices: [RememberedDevice], favorite: String = "") -> StateFile {
    var file = StateFile()
    file.devices = devices
    file.favorite = favorite
    return file
  }

  static func remembered(_ id: String, transport: String) -> RememberedDevice {
    RememberedDevice(id: id, alias: nil, name: "n", type: 0, transport: transport, lastSeen: nil)
  }

  @Test("remembered devices then favourites, each once, keyed as selectors print; Classic is not BLE")
  func wantedSet() throws {
    let file = Self.file(
      [
        Self.remembered("00:11:22:7E:F6:19", transport: "ble"),
        Self.remembered("00:11:22:00:00:0C", transport: "classic"),
        Self.remembered("serial:/dev/ttyACM0?baud=9600", transport: "serial"),
      ], favorite: "00-11-22-7e-f6-19;tcp://10.0.0.5;00:11:22:33:44:55")
    let favorites = try Favorites(parsing: file.favorite)
    let (wanted, problems) = CaptureEngine.wanted(file, favorites: favorites)
    #expect(problems.isEmpty)
    #expect(
      wanted.map(\.key) == [
        "00:11:22:7E:F6:19", "00:11:22:00:00:0C", "serial:/dev/ttyACM0?baud=9600", "tcp://10.0.0.5:23",
        "00:11:22:33:44:55",
      ])
    #expect(wanted.map(\.isBluetoothLE) == [true, false, false, false, true])
  }

  @Test("an id that names no device is a problem (85) naming it; the others are still wanted")
  func unusableIDs() {
    let file = Self.file([
      Self.remembered("socketcam", transport: "socketcam"), Self.remembered("dock", transport: "ble"),
      Self.remembered("tcp://", transport: "tcp"), Self.remembered("hid:auto", transport: "hid"),
    ])
    let (wanted, problems) = CaptureEngine.wanted(file, favorites: .off)
    #expect(wanted.map(\.key) == ["hid:auto"])
    let errors = problems.compactMap { event -> CaptureError? in
      if case .error(let error) = event.payload { error } else { nil }
    }
    #expect(errors.map(\.code) == [.invalidFormat, .invalidFormat, .invalidFormat])
    #expect(problems.map(\.device.id) == ["socketcam", "dock", "tcp://"])
    #expect(errors.allSatisfy { $0.message.hasSuffix("; skipped until the state file is re-read (SIGHUP)") })
  }
}
