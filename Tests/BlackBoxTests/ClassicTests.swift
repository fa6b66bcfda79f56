// Bluetooth Classic through the built binary on a machine without AF_BLUETOOTH (docs/bluez-testing.md:
// socket(AF_BLUETOOTH) fails with EAFNOSUPPORT here and in CI). Every path below ends in a clear exit
// 32; the RFCOMM, SDP and HCI paths themselves are covered through the seam in Tests/ClassicTests.

import Testing

@Suite("Bluetooth Classic without Bluetooth in the kernel")
struct ClassicBlackBoxTests {
  static let noBluetooth = "capture: ESKT_NOTAVAILABLE (-32): no Bluetooth in this kernel/adapter: "

  @Test("connect ADDRESS --classic: exit 32, one line saying there is no Bluetooth, nothing remembered")
  func connectClassic() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture("connect", "AA:BB:CC:DD:EE:FF", "--classic")
    #expect(outcome.status == 32, "\(outcome)")
    #expect(outcome.errLines.count == 1, "\(outcome)")
    #expect(outcome.errLines.first?.hasPrefix(Self.noBluetooth) == true, "\(outcome)")
    #expect(outcome.stdout.isEmpty)
    #expect(!sandbox.exists(sandbox.statePath))
  }

  @Test("connect --show-pairing-code without bluetoothd and without HCI: exit 32")
  func pairingCodeUnavailable() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture("connect", "--show-pairing-code")
    #expect(outcome.status == 32, "\(outcome)")
    #expect(outcome.errLines.count == 1, "\(outcome)")
    #expect(outcome.errLines.first?.hasPrefix(Self.noBluetooth) == true, "\(outcome)")
    let json = try await sandbox.capture("--json", "connect", "AA:BB:CC:DD:EE:FF", "--show-pairing-code")
    #expect(json.status == 32, "\(json)")
    #expect(Shape.jsonLines(json).first?["error"]?["code"]?.int == -32, "\(json)")
  }

  @Test("listen --accept and discover --classic: exit 32 with the reason")
  func acceptAndInquiry() async throws {
    let sandbox = try Sandbox()
    for arguments in [
      ["listen", "--accept"], ["listen", "--accept", "--channel", "5"], ["discover", "--classic"],
    ] {
      let outcome = try await sandbox.capture(arguments)
      #expect(outcome.status == 32, "\(arguments): \(outcome)")
      #expect(outcome.errLines.first?.hasPrefix(Self.noBluetooth) == true, "\(arguments): \(outcome)")
    }
  }

  @Test("bad Classic options are usage errors (18)")
  func usage() async throws {
    let sandbox = try Sandbox()
    for arguments in [
      ["listen", "--channel", "3"], ["listen", "--accept", "--channel", "31"],
      ["listen", "--accept", "--channel", "0"],
      ["connect", "--show-pairing-code", "--classic"], ["connect", "--classic"],
      ["connect", "socketcam", "--classic"],
    ] {
      let outcome = try await sandbox.capture(arguments)
      #expect(outcome.status == 18, "\(arguments): \(outcome)")
    }
  }

  @Test(
    "a device remembered as classic: friendly-name asks HCI without bluetoothd (exit 32 naming Bluetooth); listen opens RFCOMM"
  )
  func rememberedClassic() async throws {
    let sandbox = try Sandbox()
    _ = try sandbox.write(
      "state/capture/devices.json",
      #"{"schemaVersion":1,"devices":[{"id":"AA:BB:CC:DD:EE:01","alias":"dock","name":"Socket 7Xi [DDEE01]","type":0,"transport":"classic"}],"socketCam":{"status":0,"dataSources":{}}}"#
    )
    let outcome = try await sandbox.capture("get", "dock", "friendly-name")
    #expect(outcome.status == 32, "\(outcome)")
    #expect(
      outcome.errLines == [
        Self.noBluetooth + "reading the remote name (HCI): Address family not supported by protocol"
      ])
    let address = try await sandbox.capture("get", "dock", "bluetooth-address")
    #expect(address.status == 0, "the address needs no link: \(address)")
    // Plain get prints an address the way set and every selector take it (AA:BB:CC:DD:EE:FF).
    #expect(address.outLines == ["AA:BB:CC:DD:EE:01"])
    let listen = try await sandbox.capture("listen", "dock")
    #expect(listen.status == 32, "\(listen)")
    #expect(
      listen.errLines == [
        Self.noBluetooth
          + "the kernel has no Bluetooth support (socket(AF_BLUETOOTH): Address family not supported by protocol); Bluetooth Classic and every adapter need it; fix: sudo modprobe bluetooth (capture doctor checks the host)"
      ])
  }

  @Test("a remembered classic device is removed without bluetoothd (forgetting it is the removal)")
  func removeClassic() async throws {
    let sandbox = try Sandbox()
    _ = try sandbox.write(
      "state/capture/devices.json",
      #"{"schemaVersion":1,"devices":[{"id":"AA:BB:CC:DD:EE:01","alias":"dock","name":"Socket 7Xi [DDEE01]","type":0,"transport":"classic"}],"socketCam":{"status":0,"dataSources":{}}}"#
    )
    let outcome = try await sandbox.capture("remove", "dock")
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.outLines == ["AA:BB:CC:DD:EE:01\tSocket 7Xi [DDEE01]\tNone\tremoved"])
    let again = try await sandbox.capture("remove", "AA:BB:CC:DD:EE:01")
    #expect(again.status == 32, "not remembered any more, and no bluetoothd to ask: \(again)")
  }

  @Test("an address unknown to a missing bluetoothd: both reasons on one line")
  func bothReasons() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.capture("listen", "AA:BB:CC:DD:EE:FF")
    #expect(outcome.status == 32, "\(outcome)")
    #expect(outcome.errLines.count == 1, "\(outcome)")
    #expect(outcome.errLines.first?.contains("cannot reach the system bus") == true)
    // Each way's cause as capture doctor names it, with its fix.
    #expect(outcome.errLines.first?.contains("; fix: sudo systemctl start dbus; Bluetooth Classic: ") == true)
    #expect(
      outcome.errLines.first?.hasSuffix(
        "Bluetooth Classic: the kernel has no Bluetooth support (socket(AF_BLUETOOTH): Address family not supported by protocol); Bluetooth Classic and every adapter need it; fix: sudo modprobe bluetooth (capture doctor checks the host)"
      ) == true, "\(outcome)")
  }
}
