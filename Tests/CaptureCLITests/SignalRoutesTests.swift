import CaptureCore
import Synchronization
import Testing

@testable import CaptureCLI

#if canImport(Glibc)
  import Glibc
#endif

/// The hang-up race: `hangUpHandler` was once written after the relay thread that reads it had
/// started, outside its lock. These tests route SIGHUP on a thread of their own (as the relay does)
/// while the command installs its handler, on a `SignalRoutes` of their own (the process's signal
/// state and real signals are left alone), and check what every interleaving must give.
@Suite("SignalRoutes")
struct SignalRoutesTests {
  /// Every SIGHUP the relay routed in one round, and what became of the one held for the handler.
  private final class Round: Sendable {
    let routes = SignalRoutes()
    let actions = Mutex<[String]>([])
    let calls = Atomic<Int>(0)
    let stale = Atomic<Int>(0)
  }

  private static func kind(_ action: SignalRoutes.Action) -> String {
    switch action {
    case .none: "held"
    case .callHangUp: "handler"
    case .callInterrupt: "interrupt"
    case .raiseDefault: "default"
    }
  }

  @Test(
    "a SIGHUP routed the instant a service installs its handler is held and delivered by the install or handled by that handler: never lost, never the default action"
  )
  func hangUpAtTheInstantOfTheWatch() async throws {
    for _ in 0..<200 {
      let round = Round()
      round.routes.claim(interrupted: .noError, serviceHangUp: true)
      let installed = Atomic<Bool>(false)
      let relayed = Atomic<Int>(0)
      let relay = ReaderThread(name: "test-relay")
      // Routes SIGHUP until it has seen the installed handler take some; every action is recorded.
      try relay.start {
        var afterInstall = 0
        while afterInstall < 3 {
          let wasInstalled = installed.load(ordering: .acquiring)
          let action = round.routes.route(SIGHUP)
          round.actions.withLock { $0.append(Self.kind(action)) }
          if case .callHangUp(let call) = action { call() }
          relayed.add(1, ordering: .releasing)
          if wasInstalled { afterInstall += 1 }
        }
      }
      // The install lands while the relay is routing: at least one SIGHUP came before it.
      while relayed.load(ordering: .acquiring) == 0 { await Task.yield() }
      let handler: @Sendable () -> Void = { round.calls.add(1, ordering: .relaxed) }
      let held = round.routes.watchHangUp(handler)
      if held { handler() }  // as Interruption.watchHangUp delivers it
      installed.store(true, ordering: .releasing)
      await relay.join()

      let actions = round.actions.withLock { $0 }
      // Never the default action (a service is not killed by SIGHUP) and never an interrupt.
      #expect(actions.allSatisfy { $0 == "held" || $0 == "handler" }, "\(actions)")
      // Held ones all came before the install, and the install delivered them: none is lost.
      let firstHandled = actions.firstIndex(of: "handler") ?? actions.count
      #expect(
        !actions[firstHandled...].contains("held"),
        "a SIGHUP held after the handler was installed: \(actions)")
      #expect(held == actions.contains("held"), "held \(held), routed \(actions)")
      #expect(!round.routes.isHoldingHangUp)
      // Every routed SIGHUP reached the one handler installed: the held ones once, through the install.
      let handled = actions.filter { $0 == "handler" }.count
      let calls = round.calls.load(ordering: .relaxed)
      #expect(calls == handled + (held ? 1 : 0))
    }
  }

  @Test("a later install replaces the handler: a SIGHUP after it never reaches the earlier one")
  func aLaterInstallReplacesTheHandler() {
    let round = Round()
    round.routes.claim(interrupted: .noError, serviceHangUp: true)
    #expect(round.routes.watchHangUp { round.stale.add(1, ordering: .relaxed) } == false)
    #expect(round.routes.watchHangUp { round.calls.add(1, ordering: .relaxed) } == false)
    guard case .callHangUp(let call) = round.routes.route(SIGHUP) else {
      Issue.record("SIGHUP with a handler installed was not handled")
      return
    }
    call()
    let (calls, stale) = (round.calls.load(ordering: .relaxed), round.stale.load(ordering: .relaxed))
    #expect(calls == 1)
    #expect(stale == 0)
  }

  @Test("listen to devices: SIGHUP keeps its default action until a handler is installed with the watch")
  func listenWithoutAServiceHandler() {
    let routes = SignalRoutes()
    routes.claim(interrupted: .noError, serviceHangUp: false)
    #expect(Self.kind(routes.route(SIGHUP)) == "default")
    #expect(routes.watch({}, onHangUp: {}) == false)
    #expect(Self.kind(routes.route(SIGHUP)) == "handler")
  }
}
