import CaptureCore
import Synchronization

/// A device double for the layers above the drivers: events the test scripts, a property table `get`
/// and `set` work on, every call recorded, and the close a driver does. What differs between tests is
/// in `Behaviour`; a test that needs a device to do something else keeps a small device of its own.
public final class FakeDevice: Device, Sendable {
  /// How the event stream starts.
  public enum Start: Sendable {
    /// With the device's arrival, as a driver's does.
    case arrival
    /// Empty and open: the test sends what it wants.
    case silent
    /// Already finished: a device nobody listens to (property and close tests).
    case finished
  }

  /// Where `capabilities` comes from.
  public enum CapabilityTable: Sendable {
    case fixed(Capabilities)
    /// Readable: the keys of the property table as it is now; writable: those and `alsoWritable`.
    case fromValues(alsoWritable: [PropertyID], triggers: Set<Trigger>, events: Set<EventKind>)
  }

  /// Which writes `set` takes.
  public enum Writes: Sendable {
    /// A property the table holds (it takes the value); anything else is unsupported.
    case table
    /// A property `capabilities` lists writable (the table takes the value, or `readsBack`'s).
    case capabilities
  }

  public struct Behaviour: Sendable {
    public var writes: Writes = .table
    /// Writes taken and not stored (a command such as DataConfirmationDevice), whatever `writes` says.
    public var acceptsWithoutStoring: Set<PropertyID> = []
    /// After a write, the property reads back this value: a device that ignored the write.
    public var readsBack: [PropertyID: PropertyValue] = [:]
    /// Every `get` fails with this (a device that does not answer).
    public var getFailure: CaptureError? = nil
    /// `get DataSourceDevice` answers the asked source as enabled.
    public var echoesDataSources = false
    /// Every `trigger` fails with this; nil takes every trigger.
    public var triggerFailure: CaptureError? = nil
    /// `close()` reports the removal before finishing the stream, as drivers do.
    public var removalOnClose = true

    public init() {}
  }

  /// One call the device was given, in order.
  public enum Call: Sendable, Equatable {
    case get(PropertyID, argument: PropertyValue)
    /// `accepted`: the write was taken (false: it was refused as unsupported).
    case set(PropertyID, PropertyValue, accepted: Bool)
    case trigger(Trigger)
    case keepNotifications(Notifications)
    case close
  }

  public let info: DeviceInfo
  public let events: AsyncStream<Event>
  private let continuation: AsyncStream<Event>.Continuation
  private let counted: CountedEvents?
  private let table: CapabilityTable
  private let behaviour: Behaviour
  /// The property table: `get` answers from it, `set` writes it; a test may change it at any time.
  public let values: Mutex<[PropertyID: PropertyValue]>
  private let log = Mutex<[Call]>([])

  /// `counted`: the stream handed out counts what its consumer took (`taken`).
  public init(
    _ info: DeviceInfo, capabilities: CapabilityTable, values: [PropertyID: PropertyValue] = [:],
    start: Start = .arrival, behaviour: Behaviour = Behaviour(), counted: Bool = false
  ) {
    self.info = info
    table = capabilities
    self.behaviour = behaviour
    self.values = Mutex(values)
    let source: AsyncStream<Event>
    (source, continuation) = AsyncStream.makeStream(of: Event.self)
    if counted {
      let counter = CountedEvents(source)
      self.counted = counter
      events = counter.stream
    } else {
      self.counted = nil
      events = source
    }
    switch start {
    case .arrival: send(.deviceArrival)
    case .silent: break
    case .finished: continuation.finish()
    }
  }

  /// A device that declares `capabilities` as given.
  public convenience init(
    _ info: DeviceInfo,
    capabilities: Capabilities = Capabilities(readable: [], writable: [], triggers: [], events: []),
    values: [PropertyID: PropertyValue] = [:], start: Start = .arrival, behaviour: Behaviour = Behaviour(),
    counted: Bool = false
  ) {
    self.init(
      info, capabilities: .fixed(capabilities), values: values, start: start, behaviour: behaviour,
      counted: counted)
  }

  public var capabilities: Capabilities {
    switch table {
    case .fixed(let capabilities): return capabilities
    case .fromValues(let alsoWritable, let triggers, let events):
      let ids = Array(values.withLock { $0.keys })
      return Capabilities(readable: ids, writable: ids + alsoWritable, triggers: triggers, events: events)
    }
  }

  /// Every call so far, in order.
  public var calls: [Call] { log.withLock { $0 } }

  /// The property calls and triggers as lines, refused writes included: "get NAME ARGUMENT",
  /// "set NAME VALUE", "trigger NAME".
  public var lines: [String] {
    calls.compactMap { call in
      switch call {
      case .get(let property, let argument): "get \(property.cliName) \(argument)"
      case .set(let property, let value, _): "set \(property.cliName) \(value)"
      case .trigger(let action): "trigger \(action.cliName)"
      case .keepNotifications, .close: nil
      }
    }
  }

  /// The writes taken, "set NAME VALUE", and "close", in order.
  public var writesAndClose: [String] {
    calls.compactMap { call in
      switch call {
      case .set(let property, let value, accepted: true): "set \(property.cliName) \(value)"
      case .close: "close"
      default: nil
      }
    }
  }

  /// Has `close()` been called?
  public var closed: Bool { calls.contains(.close) }

  /// Events the consumer has taken from the stream so far (a device made `counted`; else 0).
  public var taken: Int { counted?.taken ?? 0 }

  public func send(_ payload: Event.Payload) {
    continuation.yield(Event(time: .now(), device: info, payload: payload))
  }

  /// A decoded code, as a scanner reports one.
  public func code(_ text: String, source: DataSource = DataSource(19), tag: [UInt8]? = nil) {
    send(.decodedData(DecodedData(dataSource: source, bytes: Array(text.utf8), tagID: tag)))
  }

  /// Decoded codes from no particular source, in order.
  public func feed(_ texts: [String]) {
    for text in texts { code(text, source: .notSpecified) }
  }

  /// The link dropped: its removal, and the stream stays open (a supervised device comes back).
  public func leave() { send(.deviceRemoval) }

  /// Back under a new connection.
  public func comeBack() { send(.deviceArrival) }

  private func record(_ call: Call) { log.withLock { $0.append(call) } }

  public func get(_ property: PropertyID, argument: PropertyValue) async throws(CaptureError) -> PropertyValue
  {
    record(.get(property, argument: argument))
    if let failure = behaviour.getFailure { throw failure }
    if behaviour.echoesDataSources, property == .dataSourceDevice, case .dataSource(let asked) = argument {
      return .dataSource(DataSourceValue(id: asked.id, status: .enable))
    }
    guard let value = values.withLock({ $0[property] }) else { throw unsupported(property) }
    return value
  }

  public func set(_ property: PropertyID, _ value: PropertyValue) async throws(CaptureError) {
    let accepted: Bool
    if behaviour.acceptsWithoutStoring.contains(property) {
      accepted = true
    } else {
      let stored = behaviour.readsBack[property] ?? value
      let writable = behaviour.writes == .capabilities ? capabilities.canWrite(property) : true
      accepted =
        writable
        && values.withLock { table -> Bool in
          guard behaviour.writes == .capabilities || table[property] != nil else { return false }
          table[property] = stored
          return true
        }
    }
    record(.set(property, value, accepted: accepted))
    if !accepted { throw unsupported(property) }
  }

  public func trigger(_ action: Trigger) async throws(CaptureError) {
    record(.trigger(action))
    if let failure = behaviour.triggerFailure { throw failure }
  }

  public func keepNotifications(_ bits: Notifications) async {
    record(.keepNotifications(bits))
  }

  public func close() async {
    record(.close)
    if behaviour.removalOnClose { send(.deviceRemoval) }
    continuation.finish()
  }
}
