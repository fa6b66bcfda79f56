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

@Suite("DataMan: blocking work stays off the cooperative pool")
struct BlockingPolicyTests {
  static let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))

  @Test(
    "more readers opening against a silent peer than there are cores: a concurrent task still runs at once")
  func silentPeersLeaveThePoolFree() async throws {
    // Room for every reader: each one waits in the handshake, deterministically REQUESTTIMEDOUT (a full
    // backlog may also answer with a reset, depending on the kernel's SYN-cookie settings).
    let peer = try SilentListener(backlog: 64)
    let readers = Self.cores + 4
    let timeout: Duration = .seconds(8)
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: ResultCode?.self) { group in
      for _ in 0..<readers {
        group.addTask {
          var request = OpenRequest(selector: .tcp(host: "127.0.0.1", port: peer.port))
          request.timeout = timeout
          do throws(CaptureError) {
            _ = try await DataManReader.open(host: "127.0.0.1", port: peer.port, request: request)
            return nil
          } catch {
            return error.code
          }
        }
      }
      // Every open is waiting in the handshake by now. Before the blocking executor each
      // held a pool thread for the whole timeout, and this task would have waited for one.
      // A pool whose threads the blocking work held would wake this task late, by seconds.
      let asleep = ContinuousClock.now
      try await Task.sleep(for: .milliseconds(500))
      // Generous: other suites in this process load the pool too; a blocked pool makes this 8 s and more.
      let late = ContinuousClock.now - asleep - .milliseconds(500)
      #expect(late < .seconds(5), "the sleeping task woke \(late) late")
      let probe = ContinuousClock.now
      await Task.detached { _ = 1 + 1 }.value
      let latency = ContinuousClock.now - probe
      #expect(latency < .seconds(5), "a pool task waited \(latency) behind \(readers) opens")
      var codes: [ResultCode?] = []
      for try await code in group { codes.append(code) }
      // A handshake nobody answered is REQUESTTIMEDOUT.
      #expect(codes == Array(repeating: .requestTimedOut, count: readers))
    }
    // They waited side by side, not one after the other.
    #expect(ContinuousClock.now - start < timeout * 2)
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
      request.timeout = .seconds(30)
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
    #expect(await task.value == .cancel)
    #expect(ContinuousClock.now - cancelled < .seconds(2))
  }
}
