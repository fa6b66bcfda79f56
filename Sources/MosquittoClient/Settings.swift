import CMosquitto

#if canImport(Glibc)
  import Glibc
#endif

/// Checks made before any connection, and the words of the transport's messages. No message names the
/// password (only that one was refused).
enum Settings {
  /// MQTT 3.1.1 specification §2.2.3: the Remaining Length field holds at most 268,435,455 bytes.
  static let maximumPayload = 268_435_455

  /// "HOST:PORT" ("[::1]:PORT" for an IPv6 address).
  static func brokerName(_ endpoint: MQTTEndpoint) -> String {
    endpoint.host.contains(":") ? "[\(endpoint.host)]:\(endpoint.port)" : "\(endpoint.host):\(endpoint.port)"
  }

  static func check(_ endpoint: MQTTEndpoint, will: MQTTMessage?) throws(MQTTError) {
    let host = endpoint.host
    if host.isEmpty || host.utf8.count > 253
      || host.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F || $0 == "/" })
    {
      throw .invalidConfiguration("the MQTT broker host \"\(host)\" is not a host name or address")
    }
    if endpoint.port == 0 { throw .invalidConfiguration("the MQTT broker port must be 1 to 65535, not 0") }
    // MQTT 3.1.1 specification §1.5.3: strings are UTF-8 without U+0000, at most 65,535 bytes.
    func mqttString(_ value: String, _ what: String) throws(MQTTError) {
      if value.utf8.count > 65535 || value.utf8.contains(0) {
        throw .invalidConfiguration("the MQTT \(what) must be at most 65535 bytes of UTF-8 without NUL")
      }
    }
    if endpoint.clientID.isEmpty { throw .invalidConfiguration("the MQTT client id is empty") }
    try mqttString(endpoint.clientID, "client id")
    if let username = endpoint.username { try mqttString(username, "user name") }
    if let password = endpoint.password {
      if endpoint.username == nil {
        // MQTT 3.1.1 specification §3.1.2.9: a password without a user name is a protocol violation.
        throw .invalidConfiguration("an MQTT password needs a user name (mqtt://USER@HOST/…)")
      }
      if password.utf8.count > 65535 || password.utf8.contains(0) {
        throw .invalidConfiguration("the MQTT password must be at most 65535 bytes without NUL")
      }
    }
    // libmosquitto refuses a keep-alive under 5 s; MQTT 3.1.1 specification §3.1.2.10 allows at most 65535.
    if !(5...65535).contains(endpoint.keepAlive) {
      throw .invalidConfiguration(
        "the MQTT keep-alive must be 5 to 65535 seconds, not \(endpoint.keepAlive)")
    }
    if let tls = endpoint.tls {
      if (tls.certFile == nil) != (tls.keyFile == nil) {
        throw .invalidConfiguration("an MQTT client certificate needs its key, and a key its certificate")
      }
      if let ca = tls.caFile { try readable(ca, "CA file") }
      if let cert = tls.certFile { try readable(cert, "client certificate") }
      if let key = tls.keyFile { try readable(key, "client key") }
    }
    if let will {
      if !(0...2).contains(will.qos) {
        throw .invalidConfiguration("the MQTT Last Will's QoS must be 0, 1 or 2, not \(will.qos)")
      }
      if will.topic.isEmpty || will.topic.contains("+") || will.topic.contains("#") {
        throw .invalidConfiguration(
          "the MQTT Last Will topic \"\(will.topic)\" is not a topic one can publish to")
      }
      try mqttString(will.topic, "Last Will topic")
      if will.payload.count > 65535 {
        throw .invalidConfiguration("the MQTT Last Will must be at most 65535 bytes")
      }
    }
  }

  /// libmosquitto only learns at connection time that a file cannot be read; say so now, naming it.
  private static func readable(_ path: String, _ what: String) throws(MQTTError) {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else {
      throw .invalidConfiguration("cannot read the MQTT \(what) \(path): \(String(cString: strerror(errno)))")
    }
    close(fd)
  }

  /// A CONNACK return code other than 0 (MQTT 3.1.1 specification §3.2.2.3), as the caller sees it.
  /// Code 3 (server unavailable) is worth retrying; the others are not, with the same settings.
  static func refusal(_ code: Int32, broker: String, username: String?) -> MQTTError {
    switch code {
    case 4, 5:
      let user = username.map { " for user \"\($0)\"" } ?? " (no user name was given)"
      let why = code == 4 ? "bad user name or password" : "not authorized"
      return .notAuthorized(
        "the MQTT broker \(broker) refused the user name or password\(user) (CONNACK \(code): \(why))")
    case 3:
      return .unreachable("the MQTT broker \(broker) is unavailable (CONNACK 3)")
    case 1:
      return .refused("the MQTT broker \(broker) does not accept MQTT 3.1.1 (CONNACK 1)")
    case 2:
      return .refused("the MQTT broker \(broker) rejected the client id (CONNACK 2)")
    default:
      return .refused("the MQTT broker \(broker) refused the connection (CONNACK \(code))")
    }
  }

  /// libmosquitto's words for one of its result codes, without the final period.
  static func text(_ rc: Int32) -> String {
    var words = String(cString: mosquitto_strerror(rc))
    if words.hasSuffix(".") { words.removeLast() }
    return words
  }
}
