/// The engine's fourth job: the favourites scout. BLE discovery runs while it can help (favourites
/// `*`, or a supervised BLE device not open yet: bluetoothd may not know it until it is discovered); a
/// supervised device seen there is retried at once, and a favourite not remembered yet is connected
/// the way `capture connect` does (`DeviceManager.connectAndRemember`) and supervised. The scout and
/// its connects are `EngineTasks.spawnUntilStop` jobs: `stop()` cancels them.
extension CaptureEngine {
  /// Discovery runs while it can help: favourites are `*`, or a BLE device to supervise is not open
  /// (bluetoothd may not know it until it is discovered).
  private var needsDiscovery: Bool {
    state.withLock { s in
      if s.isStopped { return false }
      if s.favorites == .anySocketMobile { return true }
      return s.bluetoothLE.contains { key in
        guard let supervisor = s.supervisors[key] else { return false }
        return !supervisor.isOpen && !supervisor.hasGivenUp
      }
    }
  }

  func scoutLoop() async {
    var delays = configuration.backoff.delays()
    var inOutage = false
    while !Task.isCancelled {
      guard needsDiscovery else {
        try? await Task.sleep(for: configuration.idleCheck)
        continue
      }
      do {
        // Every device, not only those advertising a Socket Mobile service: an S721 advertises none,
        // and a favourite list may name any device. `found` picks.
        let request = DiscoveryRequest(
          adapter: configuration.adapter, transport: "le", all: true, namePattern: nil,
          timeout: configuration.discoveryWindow)
        _ = try await system.discover(request) { [self] device in found(device) }
        inOutage = false
        delays.reset()
      } catch {
        if !inOutage {
          inOutage = true
          configuration.warn(
            "cannot discover Bluetooth devices (\(error.message)); trying again in the background")
        }
        try? await Task.sleep(for: delays.next())
      }
    }
  }

  private enum Step {
    case nothing
    case retry(DeviceSupervisor)
    case connect
  }

  /// A device discovery saw: a supervised one that is not open tries again now; a favourite that is
  /// not remembered yet is connected and remembered.
  private func found(_ device: DiscoveredDeviceInfo) {
    let address = device.address
    let step = state.withLock { s -> Step in
      guard !s.isStopped else { return .nothing }
      let supervisor = s.supervisors[address]
      if let supervisor, supervisor.isOpen || supervisor.hasGivenUp { return .nothing }
      var isFavorite = false
      switch s.favorites {
      case .anySocketMobile: isFavorite = device.isSocketMobile
      case .devices(let ids): isFavorite = ids.contains(address)
      case .off: break
      }
      if s.remembered.contains(address) || !isFavorite {
        return supervisor.map { .retry($0) } ?? .nothing
      }
      guard s.connecting.insert(address).inserted else { return .nothing }
      return .connect
    }
    switch step {
    case .nothing: return
    case .retry(let supervisor): supervisor.retryNow()
    case .connect: tasks.spawnUntilStop { await self.autoConnect(address) }
    }
  }

  /// Connects a favourite the way `capture connect` does (pairing when its profile needs a bond,
  /// trusting it so it may reconnect), remembers it, and supervises it.
  private func autoConnect(_ address: String) async {
    do throws(CaptureError) {
      let connected = try await devices.connectAndRemember(address: address, keepingAlias: true)
      let item = WantedDevice(
        key: address, selector: .bluetooth(address),
        info: DeviceInfo(id: address, name: connected.name, type: connected.deviceTypes[0]),
        isBluetoothLE: true)
      let started = state.withLock { s -> (existing: DeviceSupervisor?, new: DeviceSupervisor?) in
        s.connecting.remove(address)
        s.failedConnects.remove(address)
        s.remembered.insert(address)
        guard !s.isStopped else { return (nil, nil) }
        if let running = s.supervisors[address], !running.hasGivenUp { return (running, nil) }
        return (nil, makeSupervisor(item, &s))
      }
      started.existing?.retryNow()
      started.new?.start()
    } catch {
      // A connect the engine's stop cut short is not a failure worth a warning.
      let first = state.withLock { s -> Bool in
        s.connecting.remove(address)
        return !s.isStopped && s.failedConnects.insert(address).inserted
      }
      if first {
        configuration.warn(
          "cannot connect favorite \(address): \(error.message); trying again when it is seen")
      }
    }
  }
}
