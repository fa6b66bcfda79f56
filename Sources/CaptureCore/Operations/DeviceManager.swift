/// The device manager's operations (the SDK's DeviceManager role, docs/capture-sdk.md §7.16) over a
/// `DeviceSystem` and the state file: what turns a device into a remembered one and back, its
/// partnership, and a profile applied to it. One implementation for every front end: the engine owns
/// one (`CaptureEngine.devices`, for the service and the favourites scout), and the command line's
/// one-shot commands (`capture connect`, `remove`, `partnership`, `set --from`), which run without an
/// engine, make their own over the same system and store.
///
/// It never prints: each operation returns what happened, and the front end renders it.
public struct DeviceManager: Sendable {
  let system: any DeviceSystem
  let store: StateStore
  /// `--adapter`: the Bluetooth adapter every operation uses.
  public var adapter: String?
  /// How long a connect or an open may take (`--timeout`); nil for each driver's default.
  public var timeout: Duration?
  /// A driver's diagnostics while a device is open (a reconnect, a stale entry).
  public var warn: @Sendable (String) -> Void

  public init(
    system: any DeviceSystem, store: StateStore, adapter: String? = nil, timeout: Duration? = nil,
    warn: @escaping @Sendable (String) -> Void = { _ in }
  ) {
    self.system = system
    self.store = store
    self.adapter = adapter
    self.timeout = timeout
    self.warn = warn
  }

  /// The SDK's device manager handle over this state (`get`/`set manager favorite`).
  public var handle: DeviceManagerHandle { DeviceManagerHandle(store: store) }

  // MARK: connect and remember

  /// Connects a BLE device the way `capture connect` does (pairing when its profile needs a bond, or
  /// when `pair`; trusted so it may reconnect) and remembers it under its address. `keepingAlias`: an
  /// automatic connect (a favourite, a web app's ConnectDiscoveredDevice) keeps the alias the user gave
  /// it before. An alias another device holds is ESKT_ALIASTAKEN and nothing is remembered.
  public func connectAndRemember(
    address: String, pair: Bool = false, alias: String? = nil, keepingAlias: Bool = false
  ) async throws(CaptureError) -> BluetoothDeviceInfo {
    let connected = try await system.connect(address: address, adapter: adapter, pair: pair, timeout: timeout)
    try await store.asyncRemember(
      RememberedDevice(bluetooth: connected, alias: alias), keepingAlias: keepingAlias)
    return connected
  }

  // MARK: forget and remove

  /// Drops the entry with this id from the state file; returns it, or nil when none was remembered.
  @discardableResult
  public func forget(_ id: String) async throws(CaptureError) -> RememberedDevice? {
    try await store.asyncUpdate { (state: inout StateFile) throws(CaptureError) -> RememberedDevice? in
      let entry = state.devices.first { $0.id == id }
      state.devices.removeAll { $0.id == id }
      return entry
    }
  }

  /// Forgets `id` and takes it off the Favorite list (`capture set manager favorite`): the device
  /// leaves both lists the engine connects from (docs/engine.md), so the service's RemoveDevice and
  /// DisconnectDiscoveredDevice undo what ConnectDiscoveredDevice or a Favorite did and `capture get
  /// manager favorite` agrees. A Favorite of `*` stays: it asks for every Socket Mobile device in
  /// range, a removed one too. True when it was remembered or listed.
  public func forgetAndUnlist(_ id: String) async throws(CaptureError) -> Bool {
    try await store.asyncUpdate { (state: inout StateFile) throws(CaptureError) -> Bool in
      let before = state.devices.count
      state.devices.removeAll { $0.id == id }
      var listed = false
      if case .devices(var ids)? = try? Favorites(parsing: state.favorite), let index = ids.firstIndex(of: id)
      {
        ids.remove(at: index)
        // The last one gone is "" (no favourites), the string of `.off`.
        state.favorite = Favorites.devices(ids).value
        listed = true
      }
      return state.devices.count != before || listed
    }
  }

  /// Adds `address` to the Favorite list, the SDK 1.x form of "the devices this manager connects"
  /// (docs/capture-sdk.md §7.16): Companion 2.0 replaced Favorite with AddDevice /
  /// ConnectDiscoveredDevice / RemoveDevice, and both ways share this state. `*` already names it; a
  /// setting the engine cannot parse is left as it is.
  public func addFavorite(_ address: String) async throws(CaptureError) {
    try await store.asyncUpdate { (state: inout StateFile) throws(CaptureError) in
      guard let favorites = try? Favorites(parsing: state.favorite) else { return }
      switch favorites {
      case .anySocketMobile: return
      case .off: state.favorite = Favorites.devices([address]).value
      case .devices(let ids):
        if !ids.contains(address) { state.favorite = Favorites.devices(ids + [address]).value }
      }
    }
  }

  /// Disconnects a Bluetooth device and makes bluetoothd forget it; nil when bluetoothd did not know it.
  public func unpair(address: String) async throws(CaptureError) -> BluetoothDeviceInfo? {
    try await system.remove(address: address, adapter: adapter)
  }

  /// What `remove` took away: the departures to report, one per device type it arrived as.
  public struct Removal: Sendable, Equatable {
    public var removals: [DeviceInfo]
  }

  /// `capture remove`: a Bluetooth device is disconnected, unpaired and forgotten; a TCP or serial
  /// device, which has nothing to unpair, is forgotten. A Classic scanner used over RFCOMM may be
  /// unknown to (or without) bluetoothd: forgetting it is then the whole removal. A device neither
  /// bluetoothd nor the state file knows is ESKT_NOTFOUND. Other selectors are the caller's to refuse.
  public func remove(_ selector: DeviceSelector) async throws(CaptureError) -> Removal {
    switch selector {
    case .bluetooth(let address):
      let isClassic = try store.load().devices.contains {
        $0.id == address && $0.transport == RememberedDevice.classicTransport
      }
      let removed: BluetoothDeviceInfo?
      do throws(CaptureError) {
        removed = try await unpair(address: address)
      } catch  where isClassic && error.code == .notAvailable {
        removed = nil
      }
      let remembered = try await forget(address)
      guard removed != nil || remembered != nil else {
        throw CaptureError(.notFound, "\(address) is neither known to bluetoothd nor remembered")
      }
      let name = removed?.name ?? remembered?.name ?? address
      let types = removed?.deviceTypes ?? [DeviceType(remembered?.type ?? 0)]
      return Removal(removals: types.map { DeviceInfo(id: address, name: name, type: $0) })
    default:
      let id = selector.description
      guard let remembered = try await forget(id) else {
        throw CaptureError(.notFound, "\(id) is not remembered")
      }
      return Removal(removals: [DeviceInfo(id: id, name: remembered.name, type: DeviceType(remembered.type))])
    }
  }

  // MARK: partnership

  /// `partnership set`: connected with pairing, so the bond exists.
  public func pair(address: String) async throws(CaptureError) {
    _ = try await system.connect(address: address, adapter: adapter, pair: true, timeout: timeout)
  }

  /// The bond and trust bluetoothd holds for a device, and its profile variant.
  public func partnership(address: String) async throws(CaptureError) -> PartnershipInfo {
    try await system.partnership(address: address, adapter: adapter)
  }

  /// `partnership reset`: the device deletes its bonds (DeletePairingBondingDevice, on a D600 the
  /// config command 0F FE DA FA ED, docs/device-protocols.md §2.6), then the host forgets its side, so
  /// neither keeps a stale key. A device without that command is ESKT_NOTSUPPORTED and nothing is
  /// removed: other models have no public command for it.
  public func resetPartnership(address: String) async throws(CaptureError) {
    let device = try await open(.bluetooth(address))
    do throws(CaptureError) {
      try await deleteBonds(device)
    } catch {
      await device.close()
      throw error
    }
    await device.close()
    _ = try await unpair(address: address)
  }

  /// The same reset on a device someone already holds open (the service's
  /// ResetSinglePartnershipDevice on a device handle): the bonds deleted, then the host's side
  /// forgotten; the device stays open to its holder until its link drops.
  public func resetPartnership(of device: any Device) async throws(CaptureError) {
    guard case .bluetooth(let address)? = try? DeviceSelector.parse(device.info.id) else {
      throw CaptureError.notSupported(
        "\(device.info.name) is not a Bluetooth device: it has no partnership to reset")
    }
    try await deleteBonds(device)
    _ = try await unpair(address: address)
  }

  private func deleteBonds(_ device: any Device) async throws(CaptureError) {
    guard device.capabilities.canWrite(PropertyID.deletePairingBondingDevice) else {
      throw CaptureError.notSupported(
        "no public command resets the partnership of a \(device.info.type.typeName); remove it instead")
    }
    try await device.set(PropertyID.deletePairingBondingDevice, .byte(DeletePairing.all.rawValue))
  }

  /// Opens one device with this manager's adapter, timeout and diagnostics.
  public func open(_ selector: DeviceSelector, wantsEvents: Bool = true) async throws(CaptureError)
    -> any Device
  {
    var request = OpenRequest(selector: selector, adapter: adapter, warn: warn)
    request.wantsEvents = wantsEvents
    request.timeout = timeout
    return try await system.open(request, state: store)
  }

  // MARK: discovery

  /// A BLE or BR/EDR discovery session (`DeviceManagement.discover`) on this manager's adapter.
  public func discover(
    transport: String, all: Bool, namePattern: String? = nil, window: Duration,
    found: @escaping @Sendable (DiscoveredDeviceInfo) -> Void
  ) async throws(CaptureError) -> Int {
    let request = DiscoveryRequest(
      adapter: adapter, transport: transport, all: all, namePattern: namePattern, timeout: window)
    return try await system.discover(request, found: found)
  }

  /// Is bluetoothd on the system bus?
  public func bluetoothdReachable() async -> Bool { await system.bluetoothdReachable(adapter: adapter) }

  /// The state file as it is now.
  public func state() throws(CaptureError) -> StateFile { try store.load() }
}
