import CaptureCore
import Synchronization

/// `listen` and `serve`: the engine run with front ends (docs/engine.md §1). The one place that orders
/// start-up (front ends prepared, devices opened, front ends started, signals watched, the engine
/// started), turns SIGINT/SIGTERM and SIGHUP into a stop and a reload, stops everything in reverse, and
/// makes the command's outcome from the front ends' failures.
struct EngineRun {
  let engine: CaptureEngine
  /// In the order they are prepared and started; stopped in the reverse order.
  let frontEnds: [any FrontEnd]
  /// The engine serves the state file (listen without DEVICE, serve): SIGHUP re-reads it.
  let serving: Bool
  /// serve: an empty state file is served too (its clients add devices at run time).
  let servesEmpty: Bool
  /// Where a front end's error event goes (`FrontEndHost.report`).
  let report: @Sendable (Event) -> Void

  /// Runs until the engine has finished. `open`: the command's own devices, opened after the front
  /// ends are prepared (a port in use fails before any device is touched); `running`: what the
  /// command does while the engine runs (listen's SocketCam scans); `outcome`: the command's own
  /// status once no front end failed, told whether a signal ended the run.
  func run(
    open: () async throws(CaptureError) -> [any Device],
    running: ([any Device]) async -> Void = { _ in },
    outcome: (_ interrupted: Bool) -> CommandOutcome
  ) async throws(CaptureError) -> CommandOutcome {
    // SIGINT/SIGTERM end the run with 0 from the first instant (one before the handler below is
    // delivered to it); SIGHUP is held until the service has read the state file (watchHangUp), or
    // keeps its default action for a listen to DEVICEs.
    Interruption.claim(interrupted: .noError, serviceHangUp: serving)
    var prepared: [any FrontEnd] = []
    func stopPrepared() async {
      for frontEnd in prepared.reversed() { await frontEnd.stop() }
    }
    func close(_ devices: [any Device]) async {
      for device in devices { await device.close() }
    }
    do throws(CaptureError) {
      for frontEnd in frontEnds {
        try await frontEnd.prepare(engine)
        prepared.append(frontEnd)
      }
    } catch {
      await stopPrepared()
      throw error
    }
    let devices: [any Device]
    do throws(CaptureError) { devices = try await open() } catch {
      await stopPrepared()
      throw error
    }
    let engine = self.engine
    let frontEnds = self.frontEnds
    let stopEarly: @Sendable (Bool) -> Void = { interrupted in
      for frontEnd in frontEnds { frontEnd.stopping(interrupted: interrupted) }
      Task { await engine.stop() }
    }
    let host = FrontEndHost(
      finish: { Task { await engine.stop() } }, abort: { stopEarly(false) }, report: report)
    do throws(CaptureError) {
      for frontEnd in frontEnds { try await frontEnd.start(engine, host: host) }
    } catch {
      await close(devices)
      await stopPrepared()
      throw error
    }
    let interrupted = Atomic<Bool>(false)
    Interruption.watch {
      interrupted.store(true, ordering: .relaxed)
      stopEarly(true)
    }
    if serving {
      do throws(CaptureError) { try engine.startService(evenIfEmpty: servesEmpty) } catch {
        await close(devices)
        await stopPrepared()
        throw error
      }
      // Only a service has a state file to re-read, and only once it has read it (a SIGHUP before is
      // held and delivered here).
      Interruption.watchHangUp { engine.reload() }
    }
    engine.attach(devices)
    do throws(CaptureError) {
      for frontEnd in frontEnds { try frontEnd.engineStarted() }
    } catch {
      await engine.stop()
      await stopPrepared()
      throw error
    }
    await running(devices)
    await engine.wait()
    await stopPrepared()
    if let failure = frontEnds.lazy.compactMap(\.failure).first { return .failure(failure) }
    return outcome(interrupted.load(ordering: .relaxed))
  }
}
