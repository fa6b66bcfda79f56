/// The `%XX` escape of docs/fleet.md §1 undone: a topic level (a device id, a reply id) as the MQTT
/// front end writes it, and the broker URL's user name. Shared by the fleet front end, which escapes,
/// and the command line's `fleet watch`, which prints what hosts published.
public enum PercentEscape {
  /// Every `%XX` (two hex digits) decoded, anything else kept as written.
  public static func unescape(_ text: String) -> String {
    var out: [UInt8] = []
    var bytes = Array(text.utf8)[...]
    while let byte = bytes.popFirst() {
      if byte == UInt8(ascii: "%"), bytes.count >= 2,
        let value = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16)
      {
        out.append(value)
        bytes = bytes.dropFirst(2)
      } else {
        out.append(byte)
      }
    }
    return String(decoding: out, as: UTF8.self)
  }
}
