import Synchronization
import TestSupport
import Testing

@testable import CaptureCore

/// A device whose stream opens with its arrival, carries what it is fed, and ends with a removal on
/// close() (or when the script says it is done, as a finite source does); it counts the events the
/// engine has taken.
private func fedDevice(_ id: String) -> FakeDevice {
  var behaviour = FakeDevice.Behaviour()
  behaviour.triggerFailure = .notSupported("fed")
  return FakeDevice(DeviceInfo(id: id, name: "Fed \(id)", type: .none), behaviour: behaviour, counted: true)
}

/// Everything one subscriber was given, as "device-id text" (decoded) or "device-id kind" lines.
private func collect(_ subscription: EngineSubscription) -> Task<[String], Never> {
  Task {
    var seen: [String] = []
    for await event in subscription.events {
      if case .decodedData(let data) = event.payload {
        seen.append("\(event.device.id) \(data.text)")
      } else {
        seen.append("\(event.device.id) \(event.kind.rawValue)")
      }
    }
    return seen
  }
}

private func expected(_ id: String, _ texts: [String], removal: Bool = true) -> [String] {
  ["\(id) deviceArrival"] + texts.map { "\(id) \($0)" } + (removal ? ["\(id) deviceRemoval"] : [])
}

private let noState = StateStore(directory: "/nonexistent/capture-engine-tests")

@Suite("Engine fan-out: every subscriber its own bounded queue", .timeLimit(.minutes(10)))
struct EngineFanOutTests {
  @Test(
    "two devices, four subscribers: a network client that never reads is dropped with its reason; the back-pressure stream (reading late) and the two that keep up get every event exactly once, in order per device"
  )
  func slowDroppedOthersExactlyOnce() async throws {
    let texts = (0..<5_000).map { "code-\($0)" }
    let first = fedDevice("serial:/dev/ttyA")
    let second = fedDevice("serial:/dev/ttyB")
    let engine = CaptureEngine(system: FakeDeviceSystem(), store: noState)
    let stdout = engine.subscribe("stdout", policy: .backPressure)
    let quick = engine.subscribe("client 1", policy: .dropWhenBehind(limit: 20_000))
    let quicker = engine.subscribe("client 3", policy: .dropWhenBehind(limit: 20_000))
    let stalled = engine.subscribe("client 2", policy: .dropWhenBehind(limit: 8))
    // More than the back-pressure queue holds (2,048), fed before anyone reads: the stdout subscriber
    // starts reading only once its queue is full, so the devices wait for it meanwhile, and once the
    // stalled client has been dropped.
    first.feed(texts)
    second.feed(texts)
    let quickSeen = collect(quick)
    let quickerSeen = collect(quicker)
    engine.attach([first, second])
    let behind = await eventually(until: .now + .seconds(120)) {
      stdout.backlog == EventQueue.defaultLimit && stalled.dropReason != nil
    }
    #expect(behind, "stdout's backlog \(stdout.backlog), client 2 dropped: \(stalled.dropReason != nil)")
    let stdoutSeen = collect(stdout)
    // The stalled client: once dropped its stream ends after the 8 events it was holding.
    let reason = try #require(stalled.dropReason)
    #expect(reason.code == .queueReseted)
    #expect(
      reason.message
        == "client 2 fell 8 events behind; dropped so the devices and the other subscribers go on")
    #expect(!engine.subscribers.contains { $0 === stalled })
    var held = 0
    for await _ in stalled.events { held += 1 }
    #expect(held == 8)

    await first.close()
    await second.close()
    await engine.wait()
    for seen in [await stdoutSeen.value, await quickSeen.value, await quickerSeen.value] {
      #expect(seen.count == 2 * (texts.count + 2))
      #expect(seen.filter { $0.hasPrefix("serial:/dev/ttyA ") } == expected("serial:/dev/ttyA", texts))
      #expect(seen.filter { $0.hasPrefix("serial:/dev/ttyB ") } == expected("serial:/dev/ttyB", texts))
    }
    #expect(stdout.dropReason == nil && quick.dropReason == nil && quicker.dropReason == nil)
  }

  @Test("a client that never reads does not hold the devices back: the one that keeps up gets all 20,000")
  func droppedNeverStalls() async throws {
    let texts = (0..<20_000).map { "\($0)" }
    let device = fedDevice("tcp://reader:23")
    let engine = CaptureEngine(system: FakeDeviceSystem(), store: noState)
    let stalled = engine.subscribe("client 7", policy: .dropWhenBehind(limit: 100))
    let reader = engine.subscribe("client 8", policy: .dropWhenBehind(limit: 100_000))
    let seen = collect(reader)
    device.feed(texts)
    engine.attach([device])
    await device.close()
    await engine.wait()
    #expect(await seen.value == expected("tcp://reader:23", texts))
    #expect(stalled.dropReason?.code == .queueReseted)
    #expect(reader.dropReason == nil)
  }

  @Test("back-pressure bounds the stream subscriber's queue at its limit while it does not read")
  func backPressureBounded() async throws {
    let device = fedDevice("serial:/dev/ttyC")
    let engine = CaptureEngine(system: FakeDeviceSystem(), store: noState)
    let stdout = engine.subscribe("stdout", policy: .backPressure)
    device.feed((0..<(3 * EventQueue.defaultLimit)).map { "\($0)" })
    engine.attach([device])
    // The device's task has taken the event after the queue's last one and holds it while it waits for
    // room: past the point where it would have queued it.
    let holding = await eventually(until: .now + .seconds(120)) {
      device.taken == EventQueue.defaultLimit + 1
    }
    #expect(holding, "the engine took \(device.taken) events, not a full queue's and one more")
    #expect(stdout.backlog == EventQueue.defaultLimit)
    let seen = collect(stdout)
    await device.close()
    await engine.wait()
    #expect(await seen.value.count == 3 * EventQueue.defaultLimit + 2)
  }

  @Test(
    "outside service mode the engine finishes when its last device's stream ends; a late subscriber ends at once"
  )
  func finishesWithLastDevice() async throws {
    let a = fedDevice("serial:/dev/ttyD")
    let b = fedDevice("serial:/dev/ttyE")
    let engine = CaptureEngine(system: FakeDeviceSystem(), store: noState)
    let stdout = engine.subscribe("stdout", policy: .backPressure)
    let seen = collect(stdout)
    a.feed(["one"])
    engine.attach([a, b])
    await a.close()
    // The first device's stream has ended; the engine holds the second only, and has not finished.
    let one = await eventually(until: .now + .seconds(120)) { engine.openDevices.count <= 1 }
    try #require(one, "the engine still holds the first device after its stream ended")
    #expect(engine.openDevices.map(\.info.id) == ["serial:/dev/ttyE"])
    await b.close()
    await engine.wait()
    let lines = await seen.value
    #expect(lines.filter { $0.hasPrefix("serial:/dev/ttyD ") } == expected("serial:/dev/ttyD", ["one"]))
    #expect(lines.filter { $0.hasPrefix("serial:/dev/ttyE ") } == expected("serial:/dev/ttyE", []))
    let late = engine.subscribe("late", policy: .backPressure)
    var count = 0
    for await _ in late.events { count += 1 }
    #expect(count == 0)
  }

  @Test("stop() closes every device (their removals still reach the subscribers), then the streams end")
  func stopClosesAll() async throws {
    let device = fedDevice("serial:/dev/ttyF")
    let engine = CaptureEngine(system: FakeDeviceSystem(), store: noState)
    let stdout = engine.subscribe("stdout", policy: .backPressure)
    let seen = collect(stdout)
    engine.attach([device])
    device.feed(["a", "b"])
    await engine.stop()
    await engine.wait()
    #expect(await seen.value == expected("serial:/dev/ttyF", ["a", "b"]))
    #expect(engine.isStopped)
  }

  @Test("a cancelled subscriber stops receiving; the others go on")
  func cancelledSubscriber() async throws {
    let device = fedDevice("serial:/dev/ttyG")
    let engine = CaptureEngine(system: FakeDeviceSystem(), store: noState)
    let leaving = engine.subscribe("client 1", policy: .dropWhenBehind(limit: 1_000))
    let staying = engine.subscribe("client 2", policy: .dropWhenBehind(limit: 1_000))
    let seen = collect(staying)
    leaving.cancel()
    #expect(engine.subscribers.map(\.name) == ["client 2"])
    engine.attach([device])
    device.feed(["x"])
    await device.close()
    await engine.wait()
    #expect(await seen.value == expected("serial:/dev/ttyG", ["x"]))
    var after = 0
    for await _ in leaving.events { after += 1 }
    #expect(after == 0)
    #expect(leaving.dropReason == nil)
  }

  @Test(
    "service mode: a remembered device is supervised and its events fan out; reload stops one no longer remembered"
  )
  func serviceAndReload() async throws {
    let temporary = TemporaryDirectory()
    let store = temporary.stateStore()
    let id = "serial:/dev/ttyH"
    try store.remember(
      RememberedDevice(id: id, alias: nil, name: "Till", type: 0, transport: "serial", lastSeen: nil))
    let device = fedDevice(id)
    let engine = CaptureEngine(
      system: FakeDeviceSystem(devices: [id: device]), store: store,
      configuration: .init(backoff: Backoff(initial: .milliseconds(5), maximum: .milliseconds(20))))
    let stdout = engine.subscribe("stdout", policy: .backPressure)
    let client = engine.subscribe("client 1", policy: .dropWhenBehind(limit: 100))
    let stdoutSeen = collect(stdout)
    let clientSeen = collect(client)
    try engine.startService()
    let opened = await eventually(until: .now + .seconds(120)) { engine.device(id: id) != nil }
    try #require(opened, "the service never opened the remembered device")
    device.feed(["EQ1"])
    try store.update { (state: inout StateFile) throws(CaptureError) in state.devices = [] }
    engine.reload()
    let closed = await eventually(until: .now + .seconds(120)) { engine.openDevices.isEmpty }
    try #require(closed, "reload did not stop the device no longer remembered")
    // The service keeps running with nothing to listen to until it is stopped.
    #expect(!engine.isStopped)
    await engine.stop()
    await engine.wait()
    #expect(await stdoutSeen.value == expected(id, ["EQ1"]))
    #expect(await clientSeen.value == expected(id, ["EQ1"]))
  }
}

@Suite("Engine lanes: a back-pressure subscriber on the devices' own lanes", .timeLimit(.minutes(10)))
struct EngineLaneTests {
  @Test(
    "a lane handler waiting on device A's code does not hold device B: B's codes all arrive meanwhile, A's follow in order once it returns"
  )
  func laneHoldsOnlyItsDevice() async throws {
    let a = fedDevice("serial:/dev/ttyLA")
    let b = fedDevice("serial:/dev/ttyLB")
    let engine = CaptureEngine(system: FakeDeviceSystem(), store: noState)
    let gate = Latch()
    let seen = Mutex<[String]>([])
    _ = engine.subscribe("stdout") { event in
      guard case .decodedData(let data) = event.payload else { return }
      if data.text == "A-hold" { await gate.wait() }
      seen.withLock { $0.append("\(event.device.id) \(data.text)") }
    }
    a.feed(["A-hold", "A-1", "A-2"])
    b.feed((0..<500).map { "B-\($0)" })
    engine.attach([a, b])
    let allOfB = await eventually(until: .now + .seconds(120)) { seen.withLock { $0.count } >= 500 }
    #expect(allOfB, "only \(seen.withLock { $0.count }) codes arrived while A's handler waited")
    // Everything of B, nothing of A while A's handler waits.
    #expect(seen.withLock { $0 } == (0..<500).map { "serial:/dev/ttyLB B-\($0)" })
    gate.open()
    await a.close()
    await b.close()
    await engine.wait()
    let lines = seen.withLock { $0 }
    #expect(lines.count == 503)
    #expect(
      lines.filter { $0.hasPrefix("serial:/dev/ttyLA ") }
        == ["A-hold", "A-1", "A-2"].map { "serial:/dev/ttyLA \($0)" })
  }

  @Test(
    "with a lane subscriber that never returns, a network client that keeps up gets every event and one that never reads is dropped with its reason"
  )
  func laneStallsDevicesNotClients() async throws {
    let device = fedDevice("tcp://reader:24")
    let engine = CaptureEngine(system: FakeDeviceSystem(), store: noState)
    let gate = Latch()
    let lane = Mutex(0)
    _ = engine.subscribe("stdout") { event in
      lane.withLock { $0 += 1 }
      if case .deviceRemoval = event.payload { return }
      await gate.wait()
    }
    let stalled = engine.subscribe("client 4", policy: .dropWhenBehind(limit: 1))
    let reader = engine.subscribe("client 5", policy: .dropWhenBehind(limit: 100))
    device.feed(["one", "two", "three"])
    engine.attach([device])
    // The lane holds the device at its first event (the arrival): the clients have that one only,
    // and nobody is dropped for the lane's pace. Once the handler is in its wait, the device's task
    // has offered the arrival to every client, and takes its next event only when the handler
    // returns.
    let holding = await eventually(until: .now + .seconds(120)) { lane.withLock { $0 } >= 1 }
    #expect(holding, "the lane handler was never called")
    #expect(lane.withLock { $0 } == 1)
    #expect(reader.backlog == 1)
    #expect(stalled.backlog == 1 && stalled.dropReason == nil)
    let seen = collect(reader)
    gate.open()
    await device.close()
    await engine.wait()
    #expect(await seen.value == expected("tcp://reader:24", ["one", "two", "three"]))
    #expect(lane.withLock { $0 } == 5)
    #expect(stalled.dropReason?.code == .queueReseted)
    #expect(reader.dropReason == nil)
  }

  @Test("a cancelled lane subscriber is not called again; the engine's own events reach a lane subscriber")
  func laneCancelAndEngineEvents() async throws {
    let device = fedDevice("serial:/dev/ttyLC")
    let engine = CaptureEngine(system: FakeDeviceSystem(), store: noState)
    let calls = Mutex(0)
    let leaving = engine.subscribe("gone") { _ in calls.withLock { $0 += 1 } }
    leaving.cancel()
    let seen = Mutex<[String]>([])
    _ = engine.subscribe("stdout") { event in seen.withLock { $0.append(event.kind.rawValue) } }
    let info = DeviceInfo(id: "x", name: "x", type: .none)
    engine.publishNow([CaptureEngine.problem(info, "one"), CaptureEngine.problem(info, "two")])
    engine.attach([device])
    await device.close()
    await engine.wait()
    #expect(calls.withLock { $0 } == 0)
    let kinds = seen.withLock { $0 }
    #expect(kinds.filter { $0 == "error" }.count == 2)
    #expect(kinds.filter { $0 != "error" } == ["deviceArrival", "deviceRemoval"])
  }
}
