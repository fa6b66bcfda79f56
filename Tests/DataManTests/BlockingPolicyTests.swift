import CaptureCore
import Simulators
import Synchronization
import Testing

@testable import Drivers

#if canImport(Glibc)
  import Glibc
#endif

/// A loopback TCP listener that never accepts and never answers. With room in its backlog the kernel
/// completes every TCP handshake, and an open then waits for a DMCC reply that never comes; with the
/// backlog full (0, after one connection) it drops SYNs, and an open waits in connect.
final class SilentListener: Sendable {
  let fd: Int32
  let port: UInt16

  init(backlog: Int32) throws {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
    guard listener >= 0 else { throw Errno.current }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var size = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, size) == 0 && getsockname(listener, $0, &size) == 0
      }
    }
    guard bound, listen(listener, backlog) == 0 else {
      let error = Errno.current
      close(listener)
      throw error
    }
    fd = listener
    port = UInt16(bigEndian: address.sin_port)
  }

  deinit { close(fd) }
}

/// A link that records, for each send, whether it ran on a BlockingExecutor thread.
final class WhereLink: DMCCLink {
  let inner: TCPConnection
  let sends = Mutex<[Bool]>([])
  init(_ inner: TCPConnection) { self.inner = inner }
  var endpoint: String { inner.endpoint }
  func send(_ bytes: [UInt8]) throws(CaptureError) {
    sends.withLock { $0.append(BlockingExecutor.isWorkerThread) }
    try inner.send(bytes)
  }
  func receive(timeoutMilliseconds: Int32) throws(CaptureError) -> TCPConnection.Received {
    try inner.receive(timeoutMilliseconds: timeoutMilliseconds)
  }
  func shutdown() { inner.shutdown() }
  func close() { inner.close() }
}

/// What happened, in order, across tasks.
final class Order: Sendable {
  let events = Mutex<[String]>([])
}

@Suite("DataMan: blocking work stays off the cooperative pool")
struct BlockingPolicyTests {
  static let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))

  /// Deterministic, not timed: every open waits in the handshake on a peer that only a task on the
  /// cooperative pool makes hang up. Had the opens waited on the pool (as wide as the core count), that
  /// task could not run before they ended at their timeout, the safety net (60 s, which a healthy run
  /// never nears, however loaded the machine): the opens would end REQUESTTIMEDOUT, before the hang-up.
  @Test(
    "more readers opening against a silent peer than there are cores: a concurrent task still runs at once")
  func silentPeersLeaveThePoolFree() async throws {
    // Room for every reader: the kernel completes each TCP handshake, and each open waits for a DMCC
    // reply that never comes.
    let peer = try SilentListener(backlog: 64)
    let readers = Self.cores + 4
    let timeout: Duration = .seconds(60)
    let deadline = ContinuousClock.now + timeout
    let order = Order()
    let codes = try await withThrowingTaskGroup(of: ResultCode?.self) { group in
      for _ in 0..<readers {
        group.addTask {
          var request = OpenRequest(selector: .tcp(host: "127.0.0.1", port: peer.port))
          request.timeout = timeout
          defer { order.events.withLock { $0.append("open returned") } }
          do throws(CaptureError) {
            _ = try await DataManReader.open(host: "127.0.0.1", port: peer.port, request: request)
            return nil
          } catch {
            return error.code
          }
        }
      }
      // Take every connection as it completes; this suspends between tries, so it needs a free pool
      // thread while the opens wait.
      _ = fcntl(peer.fd, F_SETFL, fcntl(peer.fd, F_GETFL) | O_NONBLOCK)
      var accepted: [Int32] = []
      while accepted.count < readers && ContinuousClock.now < deadline {
        let fd = accept(peer.fd, nil, nil)
        if fd >= 0 { accepted.append(fd) } else { try await Task.sleep(for: .milliseconds(10)) }
      }
      #expect(accepted.count == readers, "only \(accepted.count) of \(readers) opens connected")
      // A fresh pool task hangs up on every open while all of them wait in the handshake.
      let connections = accepted
      await Task.detached {
        order.events.withLock { $0.append("peer hung up") }
        for fd in connections { close(fd) }
      }.value
      var codes: [ResultCode?] = []
      for try await code in group { codes.append(code) }
      return codes
    }
    #expect(order.events.withLock { $0.first } == "peer hung up", "an open returned before the pool task ran")
    // The hang-up, not the timeout, ended every open: a closed connection (38).
    #expect(codes == Array(repeating: .communicationError, count: readers))
  }

  @Test("the DMCC handshake runs on the blocking executor: every send of it is on a worker thread")
  func handshakeOnTheExecutor() async throws {
    let simulator = try DMCCSimulator()
    defer { simulator.stop() }
    let link = WhereLink(
      try TCPConnection.connect(host: "127.0.0.1", port: simulator.port, timeout: .seconds(3)))
    let reader = try await DataManReader.open(
      link, id: "tcp://127.0.0.1:\(simulator.port)", timeout: .seconds(5))
    // SET COM.DMCC-RESPONSE, GET DEVICE.TYPE, GET DEVICE.NAME.
    #expect(link.sends.withLock { $0 } == [true, true, true])
    await reader.close()
  }

  @Test("a send the reader never takes fails after TCPConnection.sendStall instead of waiting forever")
  func stalledSend() throws {
    let peer = try SilentListener(backlog: 64)
    let connection = try TCPConnection.connect(host: "127.0.0.1", port: peer.port, timeout: .seconds(3))
    // Far more than loopback's socket buffers hold (a few MiB each way); nobody reads it.
    let flood = [UInt8](repeating: 0x41, count: 64 << 20)
    let start = ContinuousClock.now
    do throws(CaptureError) {
      try connection.send(flood)
      Issue.record("64 MiB went into a socket nobody reads")
    } catch {
      #expect(error.code == .communicationError)
      #expect(error.message.contains("does not take what is sent"))
    }
    #expect(ContinuousClock.now - start < TCPConnection.sendStall + .seconds(3))
  }

  @Test("cancelling an open that waits in connect ends it promptly with CANCEL")
  func cancelledConnect() async throws {
    let peer = try SilentListener(backlog: 0)
    // Fill the backlog so the connect below gets no SYN-ACK.
    let fillers = (0..<3).map { _ in socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue), 0)
    }
    defer { for fd in fillers { close(fd) } }
    for fd in fillers {
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_addr.s_addr = inet_addr("127.0.0.1")
      address.sin_port = peer.port.bigEndian
      _ = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
      }
    }
    try await Task.sleep(for: .milliseconds(100))
    let task = Task { () -> ResultCode? in
      var request = OpenRequest(selector: .tcp(host: "127.0.0.1", port: peer.port))
      request.timeout = .seconds(60)
      do throws(CaptureError) {
        _ = try await DataManReader.open(host: "127.0.0.1", port: peer.port, request: request)
        return nil
      } catch {
        return error.code
      }
    }
    try await Task.sleep(for: .milliseconds(300))
    let cancelled = ContinuousClock.now
    task.cancel()
    // CANCEL, not REQUESTTIMEDOUT: the cancellation ended the wait, not the 60 s timeout. The bound is
    // a safety net far under that timeout (the connect wait looks at the cancellation every poll
    // slice; the open then resumes on a pool that other suites may keep busy for a few seconds).
    #expect(await task.value == .cancel)
    #expect(ContinuousClock.now - cancelled < .seconds(20))
  }
}
