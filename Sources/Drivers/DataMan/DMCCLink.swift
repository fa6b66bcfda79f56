import CaptureCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// What DMCC is carried over: a TCP connection (port 23) or a serial line — RS-232 or the USB COM port
/// of a DataMan (docs/device-protocols.md §7 "Transports"). The DataMan driver talks to this only.
protocol DMCCLink: AnyObject, Sendable {
  /// host:port or the tty path, for messages.
  var endpoint: String { get }
  func send(_ bytes: [UInt8]) throws(CaptureError)
  func receive(timeoutMilliseconds: Int32) throws(CaptureError) -> TCPConnection.Received
  /// Wakes a blocked receive (it then sees `.closed`).
  func shutdown()
  func close()
}

extension TCPConnection: DMCCLink {}

/// DMCC on a serial port (`serial:/dev/ttyUSB0?protocol=dmcc&baud=115200`).
final class SerialDMCCLink: DMCCLink {
  let endpoint: String
  /// SerialPort is not Sendable: one lock serialises every use of it.
  private let port: Mutex<SerialPort?>

  init(path: String, parameters: [String: String]) throws(CaptureError) {
    var settings = parameters
    settings["protocol"] = nil
    settings["framing"] = nil
    let serial = try SerialPort(path: path, settings: try SerialSettings(parameters: settings))
    endpoint = path
    port = Mutex(serial)
  }

  func send(_ bytes: [UInt8]) throws(CaptureError) {
    let result: Result<Void, CaptureError> = port.withLock { port in
      guard let port else { return .failure(CaptureError(.communicationError, "\(endpoint): closed")) }
      do throws(CaptureError) { try port.write(bytes) } catch { return .failure(error) }
      return .success(())
    }
    try result.get()
  }

  func receive(timeoutMilliseconds: Int32) throws(CaptureError) -> TCPConnection.Received {
    // A short slice under the lock, so a concurrent send waits at most that long.
    let result: Result<TCPConnection.Received, CaptureError> = port.withLock { port in
      guard let port else { return .success(.closed) }
      do throws(CaptureError) {
        switch try port.read(timeoutMilliseconds: min(timeoutMilliseconds, 20)) {
        case .data(let bytes): return .success(.data(bytes))
        case .idle: return .success(.idle)
        case .unplugged: return .success(.closed)
        }
      } catch { return .failure(error) }
    }
    return try result.get()
  }

  func shutdown() { close() }

  func close() {
    port.withLock { port in
      port?.close()
      port = nil
    }
  }
}
