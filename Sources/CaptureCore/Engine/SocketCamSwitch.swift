import Synchronization

/// The engine's third job: SocketCam in a service (`capture serve --camera`/`--dir`). SocketCamStatus
/// is the persisted setting; Enable opens SocketCam with the service's SOURCE and attaches it, Disable
/// closes it. Changes run one at a time, in the order asked (`socketCamStep`).
extension CaptureEngine {
  /// SocketCamStatus as a service reports it (the capture-level property, docs/capture-sdk.md §7.13):
  /// NotSupported (2) when the service has no SOURCE (`Configuration.socketCamSources` is empty),
  /// otherwise the persisted setting, the one `capture set socketcam socket-cam-status` writes:
  /// Enable (0) or Disable (1) (any other stored byte reads as Disable, as SocketCam itself reads it).
  public func socketCamStatus() throws(CaptureError) -> SocketCamStatus {
    guard !configuration.socketCamSources.isEmpty else { return .notSupported }
    return try store.load().socketCam.status == SocketCamStatus.enable.rawValue ? .enable : .disable
  }

  /// Sets SocketCamStatus for a front end (a CaptureJS app's setproperty on its client handle): the
  /// setting is persisted (the same one as `capture set socketcam socket-cam-status`), then Enable
  /// opens SocketCam with the service's SOURCE and attaches it (its DeviceArrival reaches every
  /// subscriber, and `openDevices` lists it), Disable closes it (its DeviceRemoval). Returns once the
  /// device is open, or closed with its last event handed to the subscribers; setting what already
  /// holds changes nothing. Changes run one at a time, in the order they were asked.
  ///
  /// The SocketCam opened here scans in the background (`OpenRequest.scansInBackground`): a
  /// TriggerDevice start returns once the scan reads and its codes arrive as events.
  ///
  /// Errors: NotSupported (2) as a value is ESKT_INVALIDPARAMETER (-18; it is a status to read, not to
  /// set). Enable without a SOURCE is ESKT_NOTSUPPORTED (-15) and persists nothing (`socketCamStatus`
  /// answers NotSupported there); Disable without one is persisted, with nothing to close. A state
  /// file that cannot be written is its error; a stopped engine is ESKT_NOTAVAILABLE for Enable.
  public func setSocketCamStatus(_ status: SocketCamStatus) async throws(CaptureError) {
    let enable: Bool
    switch status {
    case .notSupported:
      throw .invalidParameter("socket-cam-status is set to enable (0) or disable (1), not not-supported (2)")
    case .enable:
      guard !configuration.socketCamSources.isEmpty else {
        throw .notSupported(
          "SocketCam has no frame source here: start the service with --camera /dev/videoN or --dir DIR")
      }
      enable = true
    case .disable:
      enable = false
    }
    try await store.asyncUpdate { (state: inout StateFile) throws(CaptureError) in
      state.socketCam.status = status.rawValue
    }
    try await socketCamStep(.set(enable)).get()
  }

  /// Returns once every SocketCam change asked so far (by `startService`, `reload`,
  /// `setSocketCamStatus`) has been carried out.
  public func socketCamSettled() async {
    let last = state.withLock { $0.socketCamSteps }
    await last?.wait()
  }

  enum SocketCamWish: Sendable {
    /// Open or close as the state file says (the service starting, SIGHUP).
    case fromStateFile
    case set(Bool)
  }

  /// The persisted setting, followed in the background; a failure is a warning (`context` says when).
  func followSocketCamSetting(_ context: String) {
    tasks.spawn { [self] in
      if case .failure(let error) = await socketCamStep(.fromStateFile) {
        configuration.warn("SocketCam (\(context)): \(error.message)")
      }
    }
  }

  /// Queues one change behind the ones already asked for and waits for its result. The change runs
  /// as a job of the engine's (`EngineTasks`), not on the caller's task: a caller that goes away (a
  /// web app's request cancelled) does not cut a SocketCam open or close in half.
  func socketCamStep(_ wish: SocketCamWish) async -> Result<Void, CaptureError> {
    let outcome = Mutex<Result<Void, CaptureError>>(.success(()))
    let done = Latch()
    let previous = state.withLock { s -> Latch? in
      defer { s.socketCamSteps = done }
      return s.socketCamSteps
    }
    tasks.spawn { [self] in
      await previous?.wait()
      let result = await self.applySocketCam(wish)
      outcome.withLock { $0 = result }
      done.open()
    }
    await done.wait()
    return outcome.withLock { $0 }
  }

  func applySocketCam(_ wish: SocketCamWish) async -> Result<Void, CaptureError> {
    let enable: Bool
    switch wish {
    case .set(let wanted): enable = wanted
    case .fromStateFile:
      do { enable = try socketCamStatus() == .enable } catch { return .failure(error) }
    }
    let current = state.withLock { s in s.socketCam.map { ($0.device, $0.ended) } }
    guard enable else {
      guard let (device, ended) = current else { return .success(()) }
      await device.close()
      await ended.wait()
      return .success(())
    }
    guard current == nil else { return .success(()) }
    guard !isStopped else { return .failure(CaptureError(.notAvailable, "the service is stopping")) }
    var request = OpenRequest(
      selector: .socketCam, frameSources: configuration.socketCamSources, adapter: configuration.adapter,
      warn: configuration.warn)
    request.scansInBackground = true
    let device: any Device
    do { device = try await system.open(request, state: store) } catch { return .failure(error) }
    let ended = Latch()
    let key = state.withLock { s -> Int? in
      guard !s.isStopped else { return nil }
      s.nextAttached += 1
      let key = s.nextAttached
      s.attached[key] = device
      s.socketCam = (key, device, ended)
      forward(
        device.events, in: &s,
        ended: { s in
          s.attached[key] = nil
          if s.socketCam?.key == key { s.socketCam = nil }
        }, then: { ended.open() })
      return key
    }
    guard key != nil else {
      await device.close()
      return .failure(CaptureError(.notAvailable, "the service is stopping"))
    }
    return .success(())
  }
}
