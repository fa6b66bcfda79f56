import CaptureCore
import Testing

@testable import CaptureCLI

#if canImport(Glibc)
  import Glibc
#endif

/// `discover` reports a device with the same keys whichever way it was found; the HCI inquiry path
/// (no bluetoothd) cannot run on a kernel without AF_BLUETOOTH, so its rendering is checked here.
@Suite("discover: one event shape for every path")
struct DiscoverReportTests {
  /// Runs `body` with an Output whose stdout is a pipe, and returns what it wrote.
  static func captured(json: Bool, _ body: (Output) -> Void) throws -> String {
    var fds: [Int32] = [0, 0]
    try #require(pipe(&fds) == 0)
    let output = Output(
      mode: json ? .json : .plain, quiet: true, verbose: false, stdoutFD: fds[1], stderrFD: fds[1])
    body(output)
    close(fds[1])
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      let n = read(fds[0], &buffer, buffer.count)
      if n <= 0 { break }
      bytes += buffer[0..<n]
    }
    close(fds[0])
    return String(decoding: bytes, as: UTF8.self)
  }

  /// What the drivers report for a Classic scanner an HCI inquiry found: no RSSI, no UUIDs, BR/EDR.
  static let scanner = DiscoveredDeviceInfo(
    address: "00:06:66:0A:1B:2C", addressType: "bredr", name: nil, rssi: nil, uuids: [], isSocketMobile: true,
    type: .none, classOfDevice: 0x000540, recognizedBy: "serviceClass")

  @Test("an HCI inquiry result carries the BlueZ path's keys: rssi null, uuids empty, bredr, recognizedBy")
  func inquiryJSON() throws {
    let text = try Self.captured(json: true) {
      DiscoverCommand.report(Self.scanner, $0)
    }
    let line = text.split(separator: "\n").map(String.init)
    try #require(line.count == 1)
    let l = line[0]
    for fragment in [
      #""address":"00:06:66:0A:1B:2C""#, #""addressType":"bredr""#, #""classOfDevice":1344"#,
      #""device":{"id":"00:06:66:0A:1B:2C","name":"00:06:66:0A:1B:2C","type":0,"typeName":"None"}"#,
      #""event":"deviceDiscovered""#, #""recognizedBy":"serviceClass""#, #""rssi":null"#,
      #""socketMobile":true"#, #""uuids":[]"#,
    ] {
      #expect(l.contains(fragment), "\(fragment) in \(l)")
    }
    #expect(l.hasPrefix(#"{"address":"#))
  }

  @Test("plain: address, name, type name and an empty RSSI column, tab separated")
  func inquiryPlain() throws {
    var named = Self.scanner
    named.name = "Socket 7Xi [0A1B2C]"
    let text = try Self.captured(json: false) { DiscoverCommand.report(named, $0) }
    #expect(text == "00:06:66:0A:1B:2C\tSocket 7Xi [0A1B2C]\tNone\t\n")
  }
}
