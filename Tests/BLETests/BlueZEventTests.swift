import DBus
import Foundation
import Synchronization
import Testing

@testable import BlueZ

private let device = "/org/bluez/hci0/dev_00_11_22_7E_F6_19"
private let characteristic = device + "/service0010/char0011"

private func signal(_ path: String, _ interface: String, _ member: String, _ body: [DBusValue]) -> DBusSignal
{
  DBusSignal(sender: ":1.7", path: path, interface: interface, member: member, body: body)
}

private func changed(_ path: String, _ interface: String, _ props: [String: DBusValue], _ gone: [String] = [])
  -> DBusSignal
{
  signal(
    path, BlueZName.properties, BlueZName.Signal.propertiesChanged,
    [.string(interface), .stringDict(props), .strings(gone)])
}

@Suite("BlueZ events: typed, in bus order")
struct BlueZEventTests {
  @Test(
    "a Device1 change gives deviceChanged first, then connected, servicesResolved and advertised in order")
  func deviceChange() {
    let events = BlueZEvent.decode(
      changed(
        device, BlueZName.device,
        ["Connected": .boolean(false), "ServicesResolved": .boolean(false), "RSSI": .int16(-61)]))
    #expect(events.count == 4)
    guard case .deviceChanged(device, let change) = events.first else {
      Issue.record("first event is \(String(describing: events.first))")
      return
    }
    #expect(change.connected == false)
    #expect(change.rssi == -61)
    #expect(
      Array(events.dropFirst()) == [
        .connected(path: device, false), .servicesResolved(path: device, false),
        .advertised(path: device, rssi: -61),
      ])
  }

  @Test("an invalidated RSSI is no advertisement; ManufacturerData alone is one, without an RSSI")
  func advertisement() {
    let invalidated = BlueZEvent.decode(changed(device, BlueZName.device, [:], ["RSSI"]))
    #expect(invalidated.count == 1)
    let mfr = BlueZEvent.decode(
      changed(device, BlueZName.device, ["ManufacturerData": .stringDict([:])]))
    #expect(mfr.last == .advertised(path: device, rssi: nil))
  }

  @Test("characteristic Value and Notifying, Battery1 Percentage, Adapter1 Discovering are typed")
  func otherInterfaces() {
    #expect(
      BlueZEvent.decode(
        changed(
          characteristic, BlueZName.gattCharacteristic,
          ["Value": .bytes([0x02, 0x00]), "Notifying": .boolean(true)]))
        == [
          .characteristicValue(path: characteristic, bytes: [0x02, 0x00]),
          .characteristicNotifying(path: characteristic, true),
        ])
    #expect(
      BlueZEvent.decode(changed(device, BlueZName.battery, ["Percentage": .byte(73)]))
        == [.batteryPercentage(path: device, 73)])
    #expect(
      BlueZEvent.decode(changed("/org/bluez/hci0", BlueZName.adapter, ["Discovering": .boolean(true)]))
        == [.adapterChanged(path: "/org/bluez/hci0", powered: nil, discovering: true)])
    // A property nobody reads: no event.
    #expect(BlueZEvent.decode(changed("/org/bluez/hci0", BlueZName.adapter, ["Alias": .string("x")])).isEmpty)
  }

  @Test("InterfacesAdded carries the device's properties; InterfacesRemoved the interface names")
  func objectManager() {
    let added = BlueZEvent.decode(
      signal(
        device, BlueZName.objectManager, BlueZName.Signal.interfacesAdded,
        [
          .objectPath(device),
          .array(
            elementSignature: "{sa{sv}}",
            [
              .dictEntry(.string(BlueZName.device), .stringDict(["Address": .string("00:11:22:7E:F6:19")])),
              .dictEntry(.string(BlueZName.battery), .stringDict(["Percentage": .byte(50)])),
            ]),
        ]))
    guard case .interfacesAdded(device, let interfaces, let props?) = added.first else {
      Issue.record("not a device's InterfacesAdded: \(added)")
      return
    }
    #expect(interfaces == [BlueZName.device, BlueZName.battery])
    #expect(props.address == "00:11:22:7E:F6:19")
    #expect(props.hasBattery)
    #expect(
      BlueZEvent.decode(
        signal(
          device, BlueZName.objectManager, BlueZName.Signal.interfacesRemoved,
          [.objectPath(device), .strings([BlueZName.device])]))
        == [.interfacesRemoved(path: device, interfaces: [BlueZName.device])])
  }

  @Test("NameOwnerChanged of org.bluez says whether bluetoothd runs; malformed bodies give nothing")
  func ownerAndMalformed() {
    let gone = signal(
      "/org/freedesktop/DBus", BlueZName.dbus, BlueZName.Signal.nameOwnerChanged,
      [.string(BlueZName.service), .string(":1.7"), .string("")])
    #expect(BlueZEvent.decode(gone) == [.bluetoothdOwnerChanged(running: false)])
    let back = signal(
      "/org/freedesktop/DBus", BlueZName.dbus, BlueZName.Signal.nameOwnerChanged,
      [.string(BlueZName.service), .string(""), .string(":1.9")])
    #expect(BlueZEvent.decode(back) == [.bluetoothdOwnerChanged(running: true)])
    #expect(
      BlueZEvent.decode(signal(device, BlueZName.properties, BlueZName.Signal.propertiesChanged, [])).isEmpty)
    #expect(
      BlueZEvent.decode(
        signal(device, BlueZName.objectManager, BlueZName.Signal.interfacesAdded, [.string("not a path")])
      ).isEmpty)
  }

  @Test(
    "events() keeps the bus's order across InterfacesAdded, PropertiesChanged, InterfacesRemoved and NameOwnerChanged",
    .enabled(
      if: FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-daemon"), "needs /usr/bin/dbus-daemon"))
  func busOrder() async throws {
    let bus = try PrivateBus()
    defer { bus.stop() }
    let fake = try DBusConnection(address: bus.address)
    #expect(try await fake.requestName(BlueZName.service))
    let client = BlueZClient(bus: try DBusConnection(address: bus.address), adapterName: "hci0")
    defer { client.close() }
    let events = try await client.events()
    // Rounds of the four kinds interleaved: with one stream per signal kind read by separate tasks
    // the kinds drift apart; one subscription keeps the sequence.
    let rounds = 40
    var expected: [BlueZEvent] = []
    for i in 0..<rounds {
      let path = "\(device)_\(i)"
      try fake.emitSignal(
        path: path, interface: BlueZName.objectManager, member: BlueZName.Signal.interfacesAdded,
        [
          .objectPath(path),
          .array(
            elementSignature: "{sa{sv}}", [.dictEntry(.string(BlueZName.gattService), .stringDict([:]))]),
        ])
      expected.append(.interfacesAdded(path: path, interfaces: [BlueZName.gattService], device: nil))
      try fake.emitSignal(
        path: path, interface: BlueZName.properties, member: BlueZName.Signal.propertiesChanged,
        [.string(BlueZName.gattCharacteristic), .stringDict(["Value": .bytes([UInt8(i)])]), .strings([])])
      expected.append(.characteristicValue(path: path, bytes: [UInt8(i)]))
      try fake.emitSignal(
        path: path, interface: BlueZName.objectManager, member: BlueZName.Signal.interfacesRemoved,
        [.objectPath(path), .strings([BlueZName.gattService])])
      expected.append(.interfacesRemoved(path: path, interfaces: [BlueZName.gattService]))
    }
    // bluetoothd leaves: NameOwnerChanged comes from the bus after everything it sent.
    try await fake.flush()
    fake.close()
    expected.append(.bluetoothdOwnerChanged(running: false))
    // Closing the client's connection finishes the stream: a lost event cannot hang the test.
    let watchdog = Task {
      guard (try? await Task.sleep(for: .seconds(15))) != nil else { return }
      client.close()
    }
    defer { watchdog.cancel() }
    var received: [BlueZEvent] = []
    for await event in events {
      received.append(event)
      if received.count == expected.count { break }
    }
    #expect(received == expected)
  }
}

/// A private dbus-daemon (the BlueZ rig's bus configuration, Tests/Rigs/bus.conf) on a socket of its
/// own, stopped with SIGKILL.
private final class PrivateBus: Sendable {
  let address: String
  let directory: String
  let process: Process

  init() throws {
    directory = NSTemporaryDirectory() + "bluez-events-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    address = "unix:path=\(directory)/bus"
    process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
    process.arguments = [
      "--config-file=\(root.path)/Tests/Rigs/bus.conf", "--address=\(address)", "--nofork",
      "--print-address=1",
    ]
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    try process.run()
    // The address line is printed once the bus listens.
    var line = Data()
    while !line.contains(UInt8(ascii: "\n")) {
      let chunk = out.fileHandleForReading.availableData
      if chunk.isEmpty { break }
      line.append(chunk)
    }
    guard String(decoding: line, as: UTF8.self).hasPrefix("unix:") else {
      process.terminate()
      throw CocoaError(.fileReadUnknown)
    }
  }

  func stop() {
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
    try? FileManager.default.removeItem(atPath: directory)
  }
}
