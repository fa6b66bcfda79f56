import CaptureContract
import CaptureCore
import Testing

@testable import CaptureCLI

/// The per-event rendering of `listen` was rewritten for speed without changing a byte of output.
@Suite("event lines")
struct EventLineTests {
  /// The scalar-by-scalar escaping JSON strings had before it moved to UTF-8 bytes: the reference.
  static func referenceEscaped(_ s: String) -> String {
    var out = "\""
    for scalar in s.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      case "\u{08}": out += "\\b"
      case "\u{0C}": out += "\\f"
      case _
      where scalar.value < 0x20 || scalar.value == 0x7F || scalar.value == 0x2028 || scalar.value == 0x2029:
        let hex = String(scalar.value, radix: 16, uppercase: false)
        out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out + "\""
  }

  static let awkward: [String] = [
    "", "plain", "quote \" backslash \\ slash /", "\n\r\t\u{08}\u{0C}\u{00}\u{01}\u{1F}\u{7F}",
    "line\u{2028}para\u{2029}end", "\u{2027}\u{202A}", "é ß 日本 🙂", "\u{E2}\u{80}",
    "mixed \u{1B}[0m é\u{2028}",
    String(repeating: "x", count: 5000) + "\"",
  ]

  @Test("JSON strings escape exactly as the scalar-by-scalar reference", arguments: awkward)
  func escaping(_ text: String) {
    #expect(JSON.string(text).serialized == Self.referenceEscaped(text))
  }

  @Test("every single scalar up to U+3000 escapes as the reference does")
  func everyScalar() {
    for value in UInt32(0)..<0x3000 {
      guard let scalar = Unicode.Scalar(value) else { continue }
      let text = "a" + String(Character(scalar)) + "b"
      #expect(JSON.string(text).serialized == Self.referenceEscaped(text), "U+\(String(value, radix: 16))")
    }
  }

  static let device = DeviceInfo(
    id: "serial:/dev/pts/3?framing=line", name: "Serial \"scanner\" é", type: .none)
  static let events: [Event] = {
    let time = Timestamp(milliseconds: 1_700_000_000_123)
    let datas = [
      DecodedData(dataSource: .notSpecified, bytes: Array("D1-42".utf8), origin: "/dev/pts/3"),
      DecodedData(
        dataSource: .qrCode, bytes: Array("Hi/\"".utf8), points: [.init(x: 1, y: 2), .init(x: -3, y: 4)]),
      DecodedData(
        dataSource: .code128, bytes: [0xFF, 0x41, 0x0A, 0xE2, 0x80, 0xA8], tagID: [0x04, 0xAB], origin: nil),
      DecodedData(dataSource: .ean13, bytes: [], tagID: [], points: [], origin: ""),
    ]
    var events = datas.map { Event(time: time, device: device, payload: .decodedData($0)) }
    events.append(Event(time: time, device: device, payload: .deviceArrival))
    events.append(Event(time: Timestamp(milliseconds: 0), device: device, payload: .deviceRemoval))
    events.append(
      Event(time: time, device: device, payload: .error(CaptureError(.invalidFormat, "bad\nbytes"))))
    events.append(Event(time: time, device: device, payload: .power(.unknown)))
    // A model, awkward on purpose: the fast path writes it between id and name, escaped the same way.
    for model in ["DM8072", "Socket \"S740\" é\u{2028}\n", ""] {
      var known = device
      known.model = model
      events += datas.map { Event(time: time, device: known, payload: .decodedData($0)) }
      events.append(Event(time: time, device: known, payload: .deviceArrival))
      events.append(Event(time: time, device: known, payload: .deviceRemoval))
    }
    events.append(
      Event(
        time: time, device: device,
        payload: .undecodedData(UndecodedData(bytes: [0x00, 0xFF, 0x0D], origin: "/dev/pts/3"))))
    return events
  }()

  @Test("the direct event line is the general rendering, byte for byte")
  func eventLine() {
    for event in Self.events {
      #expect(Render.eventLine(event) == Render.event(event).serialized)
    }
  }

  @Test("a decoded line from a serial scanner, in full")
  func serialLine() {
    #expect(
      Render.eventLine(Self.events[0])
        == #"{"bytes":"RDEtNDI=","dataSource":{"id":0,"name":"Not Specified"},"device":{"id":"serial:/dev/pts/3?framing=line","name":"Serial \"scanner\" é","type":0,"typeName":"None"},"event":"decodedData","origin":"/dev/pts/3","text":"D1-42","time":"2023-11-14T22:13:20.123Z"}"#
    )
  }

  @Test("a reader with a model: the device object carries it between id and name")
  func modelLine() {
    let reader = DeviceInfo(id: "tcp://127.0.0.1:23", name: "Line 3 reader", type: .none, model: "DM8072")
    let event = Event(time: Timestamp(milliseconds: 0), device: reader, payload: .deviceArrival)
    #expect(
      Render.eventLine(event)
        == #"{"device":{"id":"tcp://127.0.0.1:23","model":"DM8072","name":"Line 3 reader","type":0,"typeName":"None"},"event":"deviceArrival","time":"1970-01-01T00:00:00.000Z"}"#
    )
  }

  @Test("undecodedData: the bytes in base64, the origin, no text or dataSource")
  func undecodedLine() {
    let event = Event(
      time: Timestamp(milliseconds: 0), device: Self.device,
      payload: .undecodedData(UndecodedData(bytes: [0xDE, 0xAD, 0x00], origin: "/dev/pts/3")))
    #expect(
      Render.eventLine(event)
        == #"{"bytes":"3q0A","device":{"id":"serial:/dev/pts/3?framing=line","name":"Serial \"scanner\" é","type":0,"typeName":"None"},"event":"undecodedData","origin":"/dev/pts/3","time":"1970-01-01T00:00:00.000Z"}"#
    )
    #expect(
      Render.noiseNote(
        UndecodedData(bytes: Array(repeating: 0xAB, count: 4096), origin: nil), from: Self.device)
        == "4096 byte(s) from serial:/dev/pts/3?framing=line were not a barcode: "
        + Array(repeating: "AB", count: 24).joined(separator: " ") + " …")
  }

  @Test("UndecodedData carries at most 4096 bytes; chunks keeps every byte in order")
  func undecodedCap() {
    let bytes = (0..<9000).map { UInt8($0 % 251) }
    #expect(UndecodedData(bytes: bytes, origin: nil).bytes == Array(bytes.prefix(4096)))
    let pieces = UndecodedData.chunks(bytes, origin: "x")
    #expect(pieces.map(\.bytes.count) == [4096, 4096, 808])
    #expect(pieces.flatMap(\.bytes) == bytes)
    #expect(UndecodedData.chunks([], origin: nil).isEmpty)
  }
}
