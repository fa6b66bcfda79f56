import CaptureCore
import DBus
import Synchronization

/// What `capture doctor` learns from the system bus and bluetoothd, as facts: the Drivers judge them
/// (Drivers/Host), so the rows and the causes a failing command names come from one place. Read only:
/// nothing is set, nothing is started (a method call to org.bluez never activates bluetoothd here,
/// since NameHasOwner is asked first).
public struct BlueZHostFacts: Sendable, Equatable {
  /// The system bus connection (connect, authenticate, Hello).
  public enum Bus: Sendable, Equatable {
    case reachable(address: String)
    /// No socket, no daemon, a refused connect: D-Bus error name and message.
    case unreachable(address: String, name: String, message: String)
    /// The bus refused this user (org.freedesktop.DBus.Error.AccessDenied at authentication or Hello).
    case refused(address: String, message: String)
    /// No answer within the bound (or the caller gave up: --timeout).
    case timedOut(address: String)
  }

  /// org.bluez on the bus (NameHasOwner, then GetConnectionUnixProcessID).
  public enum Daemon: Sendable, Equatable {
    case notChecked
    /// Owned; the pid when the bus daemon told it.
    case running(pid: UInt32?)
    case absent
    /// The question could not be asked: a D-Bus error name and message.
    case failed(name: String, message: String)
  }

  /// ObjectManager.GetManagedObjects on org.bluez: the adapters, or why it was refused.
  public enum Objects: Sendable, Equatable {
    case notChecked
    case answered([Adapter])
    /// org.freedesktop.DBus.Error.AccessDenied: the bus policy denies this user org.bluez.
    case denied(message: String)
    case failed(name: String, message: String)
  }

  /// One org.bluez.Adapter1 (doc/org.bluez.Adapter.rst).
  public struct Adapter: Sendable, Equatable {
    /// `hci0`, the last element of its object path.
    public var name: String
    public var address: String
    public var powered: Bool
    /// Adapter1.PowerState (BlueZ ≥ 5.64): "on", "off", "off-enabling", "on-disabling" or
    /// "off-blocked" (rfkill); nil from an older bluetoothd.
    public var powerState: String?

    public init(name: String, address: String, powered: Bool, powerState: String?) {
      self.name = name
      self.address = address
      self.powered = powered
      self.powerState = powerState
    }
  }

  public var bus: Bus
  public var daemon: Daemon
  public var objects: Objects

  public init(bus: Bus, daemon: Daemon = .notChecked, objects: Objects = .notChecked) {
    self.bus = bus
    self.daemon = daemon
    self.objects = objects
  }
}

public enum BlueZHostProbe {
  /// Asks the system bus and bluetoothd what `doctor` reports, each call bounded by `timeout`; a
  /// cancelled task (the command's --timeout) ends every wait at once.
  public static func probe(timeout: Duration) async -> BlueZHostFacts {
    let address = DBusConnection.systemBusAddress
    let connected = await connectBounded(timeout: timeout)
    let bus: DBusConnection
    switch connected {
    case nil: return BlueZHostFacts(bus: .timedOut(address: address))
    case .failure(let error) where error.name == BlueZName.BusError.accessDenied:
      return BlueZHostFacts(bus: .refused(address: address, message: error.message))
    case .failure(let error) where error.isNoReply || error.name == BlueZName.BusError.timeout:
      return BlueZHostFacts(bus: .timedOut(address: address))
    case .failure(let error):
      return BlueZHostFacts(bus: .unreachable(address: address, name: error.name, message: error.message))
    case .success(let connection): bus = connection
    }
    defer { bus.close() }
    var facts = BlueZHostFacts(bus: .reachable(address: address))
    do {
      guard try await bus.nameHasOwner(BlueZName.service, timeout: timeout) else {
        facts.daemon = .absent
        return facts
      }
    } catch {
      facts.daemon = .failed(name: error.name, message: error.message)
      return facts
    }
    // The pid is for the report only: a bus that will not tell it still has bluetoothd running.
    facts.daemon = .running(pid: try? await bus.connectionUnixProcessID(BlueZName.service, timeout: timeout))
    do {
      let objects = BlueZObjects(
        try await bus.getManagedObjects(destination: BlueZName.service, path: "/", timeout: timeout))
      facts.objects = .answered(
        objects.adapters().map { adapter in
          BlueZHostFacts.Adapter(
            name: adapter.name, address: adapter.address, powered: adapter.isPowered,
            powerState: adapter.properties[BlueZName.Property.powerState]?.stringValue)
        })
    } catch  where error.name == BlueZName.BusError.accessDenied {
      facts.objects = .denied(message: error.message)
    } catch {
      facts.objects = .failed(name: error.name, message: error.message)
    }
    return facts
  }

  /// Connecting authenticates and sends Hello, which blocks (libdbus) and may wait for its own reply
  /// timeout on a bus that hangs: on the blocking executor, and raced against `timeout` and the task's
  /// cancellation so `doctor` never waits longer than asked. nil when the time ran out; a connection
  /// that arrives later is closed.
  static func connectBounded(timeout: Duration) async -> Result<DBusConnection, DBusError>? {
    let race = Race<Result<DBusConnection, DBusError>>()
    return await withTaskCancellationHandler {
      await withCheckedContinuation {
        (continuation: CheckedContinuation<Result<DBusConnection, DBusError>?, Never>) in
        race.start(continuation)
        Task {
          let result: Result<DBusConnection, DBusError>
          do throws(DBusError) {
            result = .success(
              try await BlockingExecutor.shared.run { (_) throws(DBusError) in try DBusConnection.system() })
          } catch {
            result = .failure(error)
          }
          if !race.finish(result), case .success(let late) = result { late.close() }
        }
        Task {
          try? await Task.sleep(for: timeout)
          _ = race.finish(nil)
        }
      }
    } onCancel: {
      _ = race.finish(nil)
    }
  }
}

/// The first of several outcomes resumes the continuation; later ones are refused (and the caller
/// cleans up what they carried).
final class Race<T: Sendable>: Sendable {
  private struct State {
    var continuation: CheckedContinuation<T?, Never>?
    var finished = false
  }
  private let state = Mutex(State())

  func start(_ continuation: CheckedContinuation<T?, Never>) {
    let early = state.withLock { state -> Bool in
      if state.finished { return true }
      state.continuation = continuation
      return false
    }
    // Cancelled before the continuation existed.
    if early { continuation.resume(returning: nil) }
  }

  /// True for the one outcome that was delivered.
  func finish(_ value: T?) -> Bool {
    let continuation = state.withLock { state -> CheckedContinuation<T?, Never>?? in
      if state.finished { return nil }
      state.finished = true
      defer { state.continuation = nil }
      return .some(state.continuation)
    }
    guard let continuation else { return false }
    continuation?.resume(returning: value)
    return true
  }
}
