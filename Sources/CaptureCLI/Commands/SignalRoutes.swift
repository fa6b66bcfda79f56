import CaptureCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// What SIGINT, SIGTERM and SIGHUP mean now, and the command's handlers for them: the state behind
/// `Interruption`, which owns the process's one instance and does what `route` decides (calls a
/// handler, raises a signal with its default action). One lock holds the mode, the handlers and the
/// signals held for a handler still to come, so the relay thread (started first thing in main) and
/// the command that installs a handler later never see one without the other: a handler written
/// after the relay started and read by it without the lock (a data race, once) cannot come back
/// unnoticed (SignalRoutesTests).
final class SignalRoutes: Sendable {
  /// What the process does with the signals now.
  enum Mode {
    /// Held until the command is known.
    case undecided
    /// A command with its own handling: `interrupted` is its status when a signal ends it before (or
    /// without) its handler; `serviceHangUp`: SIGHUP is held until `watchHangUp`.
    case claimed(interrupted: ResultCode, serviceHangUp: Bool)
    /// Default actions (SIG_DFL) restored.
    case defaults
  }

  /// What the relay does with one signal.
  enum Action {
    case none, callInterrupt(@Sendable () -> Void), callHangUp(@Sendable () -> Void), raiseDefault
  }

  private struct State {
    var mode = Mode.undecided
    /// The command's handlers: SIGINT/SIGTERM (`watch`) and SIGHUP (`watchHangUp`).
    var handler: (@Sendable () -> Void)?
    var hangUpHandler: (@Sendable () -> Void)?
    /// A SIGINT/SIGTERM that no handler has taken yet (its number), and a held SIGHUP.
    var pendingInterrupt: Int32 = 0
    var pendingHangUp = false
  }
  private let lock = Mutex(State())

  /// What `signalNumber` means now; a signal no handler can take yet is held.
  func route(_ signalNumber: Int32) -> Action {
    lock.withLock { s -> Action in
      if signalNumber == SIGHUP {
        if case .claimed(_, let service) = s.mode {
          if let hangUpHandler = s.hangUpHandler { return .callHangUp(hangUpHandler) }
          guard service else { return .raiseDefault }
          // Delivered by watchHangUp: one between the service's first read and its handler is not lost.
          s.pendingHangUp = true
          return .none
        }
        if case .defaults = s.mode { return .raiseDefault }
        s.pendingHangUp = true
        return .none
      }
      switch s.mode {
      case .defaults: return .raiseDefault
      case .claimed where s.handler != nil:
        s.pendingInterrupt = 0
        return .callInterrupt(s.handler!)
      case .claimed, .undecided:
        if s.pendingInterrupt == 0 { s.pendingInterrupt = signalNumber }
        return .none
      }
    }
  }

  func claim(interrupted: ResultCode, serviceHangUp: Bool) {
    lock.withLock { $0.mode = .claimed(interrupted: interrupted, serviceHangUp: serviceHangUp) }
  }

  /// Default actions from now on; returns the signals held until now, to be raised.
  func useDefaults() -> [Int32] {
    lock.withLock { s -> [Int32] in
      s.mode = .defaults
      s.handler = nil
      s.hangUpHandler = nil
      var pending: [Int32] = []
      if s.pendingHangUp { pending.append(SIGHUP) }
      if s.pendingInterrupt != 0 { pending.append(s.pendingInterrupt) }
      s.pendingHangUp = false
      s.pendingInterrupt = 0
      return pending
    }
  }

  /// The mode and the SIGINT/SIGTERM held (0 for none), for the exit status.
  var settlement: (mode: Mode, pending: Int32) { lock.withLock { s in (s.mode, s.pendingInterrupt) } }

  /// A SIGHUP is held for a handler still to come.
  var isHoldingHangUp: Bool { lock.withLock { $0.pendingHangUp } }

  /// SIGHUP → `onHangUp` from now on, installed and the held SIGHUP taken in one step; true when one
  /// was held (the caller delivers it).
  func watchHangUp(_ onHangUp: @escaping @Sendable () -> Void) -> Bool {
    lock.withLock { s -> Bool in
      s.hangUpHandler = onHangUp
      defer { s.pendingHangUp = false }
      return s.pendingHangUp
    }
  }

  /// SIGINT/SIGTERM → `onSignal` (and SIGHUP → `onHangUp`, when given) from now on, in one step; true
  /// when a SIGINT/SIGTERM was held (the caller delivers it).
  func watch(_ onSignal: @escaping @Sendable () -> Void, onHangUp: (@Sendable () -> Void)?) -> Bool {
    lock.withLock { s -> Bool in
      if case .claimed = s.mode {} else { s.mode = .claimed(interrupted: .noError, serviceHangUp: false) }
      s.handler = onSignal
      if let onHangUp { s.hangUpHandler = onHangUp }
      defer { s.pendingInterrupt = 0 }
      return s.pendingInterrupt != 0
    }
  }
}
