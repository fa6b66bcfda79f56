import BlueZ
import CaptureCore

#if canImport(Glibc)
  import Glibc
#endif

/// A device seen during discovery.
public struct DiscoveredDevice: Sendable {
  public var address: String
  public var addressType: String
  public var name: String?
  public var rssi: Int16?
  public var uuids: [String]
  public var family: BLEFamily
  public var isSocketMobile: Bool
  /// The 24-bit Class of Device from Device1.Class, which bluetoothd sets only for BR/EDR devices
  /// (doc/org.bluez.Device.rst); nil for LE devices.
  public var classOfDevice: UInt32?
  /// BR/EDR devices: how a Socket Mobile Classic scanner was recognised (nil: not recognised).
  public var classicRecognition: ClassicDiscovery.Recognition?
  public var isBREDR: Bool { classOfDevice != nil }
  /// The SDK type guessed from the advertisement (the first half for an S370). A Classic scanner's
  /// model is not known before SPP (docs/device-protocols.md §5.3): None, as `ClassicSPPScanner` reports it.
  public var type: DeviceType {
    if isBREDR { return .none }
    return isSocketMobile ? family.deviceTypes[0] : .bleUnknown
  }
}

extension DiscoveredDevice {
  /// A device an HCI inquiry found (`discover --classic` without bluetoothd): reported with the same
  /// keys as one bluetoothd shows; an inquiry gives no RSSI here and no advertised UUIDs.
  public init(inquiry found: ClassicDiscovery.Found) {
    self.init(
      address: found.addressText, addressType: "bredr", name: found.name, rssi: nil, uuids: [],
      family: .generic, isSocketMobile: found.isSocketMobile, classOfDevice: found.classOfDevice,
      classicRecognition: found.recognition)
  }
}

/// The result of `connect`: what arrived.
public struct ConnectedDevice: Sendable {
  public var address: String
  public var name: String
  public var family: BLEFamily
  public var isPaired: Bool
  public var arrivals: [DeviceInfo] {
    family.deviceTypes.map { DeviceInfo(id: address, name: name, type: $0) }
  }
}

/// Device-manager operations over BlueZ: discovery, connect, remove, partnership.
public enum BLEManager {
  /// Runs a discovery session for `timeout`, calling `found` once per device as it appears.
  /// Returns how many were reported.
  public static func discover(
    adapter: String?, transport: String, all: Bool, namePattern: String?, timeout: Duration,
    found: @escaping @Sendable (DiscoveredDevice) -> Void
  ) async throws(CaptureError) -> Int {
    let client = try await BlueZClient.connect(adapter: adapter)
    defer { client.close() }
    let events = try await client.events()
    let objects = try await client.objects()
    _ = try client.adapter(in: objects)
    var filter = DiscoveryFilter(transport: transport, duplicateData: false)
    // bluetoothd matches a UUIDs filter against the advertised (LE) or EIR (BR/EDR) service list, and a
    // Classic scanner recognised by its name may list none of them in its EIR: only an LE-only
    // discovery lets bluetoothd filter by UUID; otherwise the client side below decides.
    if !all && transport == "le" { filter.uuids = GattUUID.socketMobileAdvertised }
    try await client.setDiscoveryFilter(filter)
    try await client.startDiscovery()

    let adapterPath = client.adapterPath
    var known: [String: DeviceProperties] = [:]
    for device in objects.devices(on: adapterPath) { known[device.path] = device }
    let consumer = Task { [known] () -> Int in
      var known = known
      var reported = Set<String>()
      func consider(_ device: DeviceProperties) {
        guard device.adapter == adapterPath, !reported.contains(device.address) else { return }
        let uuids = Set(device.uuids)
        let classOfDevice = device.classOfDevice
        let classic =
          classOfDevice == nil ? nil : ClassicDiscovery.recognize(name: device.name, uuids: device.uuids)
        let isSocket = BLEFamily.isSocketMobile(uuids: uuids, name: device.name) || classic != nil
        guard all || isSocket else { return }
        if let pattern = namePattern, fnmatch(pattern, device.name ?? device.alias, 0) != 0 { return }
        reported.insert(device.address)
        found(
          DiscoveredDevice(
            address: device.address, addressType: device.addressType, name: device.name, rssi: device.rssi,
            uuids: device.uuids.sorted(), family: BLEFamily.identify(uuids: uuids, name: device.name),
            isSocketMobile: isSocket, classOfDevice: classOfDevice, classicRecognition: classic))
      }
      // A device bluetoothd heard moments ago still carries an RSSI (it is invalidated when a
      // discovery stops): it is in range now, so it is reported at once.
      for device in known.values.sorted(by: { $0.path < $1.path }) where device.rssi != nil {
        consider(device)
      }
      // A new device arrives as InterfacesAdded; one bluetoothd already knew is announced by its RSSI
      // changing once it is heard again (docs/bluez-testing.md, "Discovery").
      for await event in events {
        switch event {
        case .interfacesAdded(let path, _, let device?):
          known[path] = device
          consider(device)
        case .deviceChanged(let path, let change):
          guard let device = known[path]?.applying(change) else { continue }
          known[path] = device
        case .advertised(let path, _):
          if let device = known[path] { consider(device) }
        default:
          continue
        }
      }
      return reported.count
    }
    try? await Task.sleep(for: timeout)
    consumer.cancel()
    let count = await consumer.value
    try? await client.stopDiscovery()
    return count
  }

  /// Finds a device bluetoothd knows, running a discovery on `transport` ("le" or "bredr") for up to
  /// `within` if it does not know it yet. Not found in time: `expiry` (NOTFOUND unless the caller
  /// says otherwise).
  static func locate(
    _ client: BlueZClient, _ address: String, within: Duration, transport: String = "le",
    expiry: ResultCode = .notFound
  ) async throws(CaptureError) -> DeviceProperties {
    // Its own stream, subscribed before reading: cancelling a task that iterates an AsyncStream
    // finishes the stream, so streams are never shared between waits.
    let events = try await client.events()
    let objects = try await client.objects()
    _ = try client.adapter(in: objects)
    if let device = objects.device(address: address, on: client.adapterPath) { return device }
    try await client.setDiscoveryFilter(DiscoveryFilter(transport: transport))
    try await client.startDiscovery()
    let adapterPath = client.adapterPath
    let finder = Task { () -> DeviceProperties? in
      for await event in events {
        if case .interfacesAdded(_, _, let device?) = event, device.address == address.uppercased(),
          device.adapter == adapterPath
        {
          return device
        }
      }
      return nil
    }
    let timer = Task {
      try? await Task.sleep(for: within)
      finder.cancel()
    }
    let found = await finder.value
    timer.cancel()
    try? await client.stopDiscovery()
    guard let found else {
      throw CaptureError(
        expiry,
        "no Bluetooth device \(address) was found on \(client.adapterName)"
          + (expiry == .requestTimedOut ? " within the --timeout" : ""))
    }
    return found
  }

  /// Connects, waits for the GATT services, pairs when the profile needs bonding (the D600's
  /// pairing-required variant) or when asked, and marks the device trusted so it may reconnect.
  public static func connect(address: String, adapter: String?, pair: Bool, timeout: Duration?)
    async throws(CaptureError) -> ConnectedDevice
  {
    let client = try await BlueZClient.connect(adapter: adapter)
    defer { client.close() }
    let budget = timeout ?? BLEDevice.connectTimeout
    // A device bluetoothd does not know yet is looked for 10 s, or for the user's --timeout when one
    // is given ("give up after DUR", capture-connect(1)): a slow host or a slowly advertising reader
    // is found when asked to wait longer. Not found is ESKT_NOTFOUND either way.
    var device = try await locate(client, address, within: timeout ?? .seconds(10))
    if !device.isConnected || !device.servicesResolved {
      try await BLELink.connectAndResolve(client, device.path, timeout: budget)
    }
    var objects = try await client.objects()
    device = objects.device(address: address, on: client.adapterPath) ?? device
    let family = BLEFamily.identify(
      uuids: objects.serviceUUIDs(of: device.path).union(device.uuids), name: device.name)
    try await pairAndTrust(client, device, pair: family.needsBonding || pair, timeout: budget)
    objects = try await client.objects()
    device = objects.device(address: address, on: client.adapterPath) ?? device
    return ConnectedDevice(
      address: device.address, name: device.alias, family: family, isPaired: device.isPaired)
  }

  /// Pairs (when `pair` and not paired yet) with capture's NoInputNoOutput agent, and marks the
  /// device trusted so it may reconnect (docs/bluez-testing.md: "Trusted" is not "paired"). LE and BR/EDR
  /// alike: bluetoothd picks the transport for Pair.
  static func pairAndTrust(_ client: BlueZClient, _ device: DeviceProperties, pair: Bool, timeout: Duration)
    async throws(CaptureError)
  {
    if pair && !device.isPaired {
      try await client.registerAgent()
      try await client.pair(device.path, timeout: timeout)
    }
    if !device.isTrusted { try await client.setTrusted(device.path, true) }
  }

  /// Disconnects and makes bluetoothd forget the device (pairing and GATT cache go with it).
  /// Returns the device's name, or nil when bluetoothd did not know it.
  public static func remove(address: String, adapter: String?) async throws(CaptureError) -> (
    name: String, family: BLEFamily
  )? {
    let client = try await BlueZClient.connect(adapter: adapter)
    defer { client.close() }
    let objects = try await client.objects()
    _ = try client.adapter(in: objects)
    guard let device = objects.device(address: address, on: client.adapterPath) else { return nil }
    let family = BLEFamily.identify(
      uuids: objects.serviceUUIDs(of: device.path).union(device.uuids), name: device.name)
    if device.isConnected { try? await client.disconnect(device.path) }
    try await client.removeDevice(device.path)
    return (device.alias, family)
  }

  public struct Partnership: Sendable {
    public var address: String
    public var name: String
    public var family: BLEFamily
    public var isPaired: Bool
    public var isBonded: Bool
    public var isTrusted: Bool
    public var isConnected: Bool
    /// "pairing-required", "no-pairing" or "unknown": the D600 UUID variant (docs/device-protocols.md §2.1)
    /// or the SpringCore bound/open service.
    public var variant: String
  }

  public static func partnership(address: String, adapter: String?) async throws(CaptureError) -> Partnership
  {
    let client = try await BlueZClient.connect(adapter: adapter)
    defer { client.close() }
    let objects = try await client.objects()
    _ = try client.adapter(in: objects)
    guard let device = objects.device(address: address, on: client.adapterPath) else {
      throw CaptureError(.notFound, "\(address) is not known to bluetoothd on \(client.adapterName)")
    }
    let uuids = objects.serviceUUIDs(of: device.path).union(device.uuids)
    let family = BLEFamily.identify(uuids: uuids, name: device.name)
    let variant: String
    if family == .d600 || uuids.contains(GattUUID.directServiceBound)
      || uuids.contains(GattUUID.s370ServiceBound)
      || uuids.contains(GattUUID.s320ServiceBound)
    {
      variant = "pairing-required"
    } else if family == .d600NoPairing || family == .s550 || family == .s370 || family == .s320 {
      variant = "no-pairing"
    } else {
      variant = "unknown"
    }
    return Partnership(
      address: device.address, name: device.alias, family: family, isPaired: device.isPaired,
      isBonded: device.isBonded, isTrusted: device.isTrusted, isConnected: device.isConnected,
      variant: variant)
  }

  /// Devices bluetoothd has connected right now (any capture process, or another program), for `list`.
  public static func connected(adapter: String?) async throws(CaptureError) -> [ConnectedDevice] {
    let client = try await BlueZClient.connect(adapter: adapter)
    defer { client.close() }
    let objects = try await client.objects()
    return objects.devices(on: client.adapterPath).filter(\.isConnected).map { device in
      let family = BLEFamily.identify(
        uuids: objects.serviceUUIDs(of: device.path).union(device.uuids), name: device.name)
      return ConnectedDevice(
        address: device.address, name: device.alias, family: family, isPaired: device.isPaired)
    }
  }
}
