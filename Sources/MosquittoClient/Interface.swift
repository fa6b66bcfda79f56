/// The MQTT transport of `capture --mqtt`, as the fleet front end sees it. The implementation
/// (`MQTTConnection`, over Debian's libmosquitto) speaks MQTT 3.1.1 / 5; nothing in the project encodes
/// MQTT by hand. Every delegate callback runs on the connection's own network thread (libmosquitto's
/// loop thread) and must return quickly: a table update, a `Task` started, a condition signalled.

/// Where and how to connect.
public struct MQTTEndpoint: Sendable, Equatable {
  public var host: String
  /// 1883 for mqtt://, 8883 for mqtts:// unless the URL names one.
  public var port: UInt16
  /// TLS (mqtts://): the CA file to verify the broker with, and a client certificate and key if any.
  public var tls: TLS?
  public var username: String?
  /// Read from --mqtt-password-file by the caller; never from a command line or a URL.
  public var password: String?
  /// The MQTT client id (stable per host: the host identity).
  public var clientID: String
  /// Seconds between keep-alive pings.
  public var keepAlive: Int

  public struct TLS: Sendable, Equatable {
    public var caFile: String?
    public var certFile: String?
    public var keyFile: String?
    public init(caFile: String?, certFile: String?, keyFile: String?) {
      self.caFile = caFile
      self.certFile = certFile
      self.keyFile = keyFile
    }
  }

  public init(
    host: String, port: UInt16, tls: TLS? = nil, username: String? = nil, password: String? = nil,
    clientID: String, keepAlive: Int = 30
  ) {
    self.host = host
    self.port = port
    self.tls = tls
    self.username = username
    self.password = password
    self.clientID = clientID
    self.keepAlive = keepAlive
  }
}

/// One message to publish (or the Last Will).
public struct MQTTMessage: Sendable, Equatable {
  public var topic: String
  public var payload: [UInt8]
  public var qos: Int
  public var retain: Bool
  public init(topic: String, payload: [UInt8], qos: Int, retain: Bool) {
    self.topic = topic
    self.payload = payload
    self.qos = qos
    self.retain = retain
  }
}

/// Why a connection attempt failed or the connection ended. `refused` cases are the broker's CONNACK
/// answer: retrying with the same settings cannot help, so the caller reports them and stops.
public enum MQTTError: Error, Sendable, Equatable, CustomStringConvertible {
  /// CONNACK: bad user name or password / not authorized.
  case notAuthorized(String)
  /// CONNACK: protocol version, identifier rejected, or another refusal.
  case refused(String)
  /// TLS: the CA, certificate or key cannot be used, or the broker's certificate does not verify.
  case tls(String)
  /// The broker cannot be reached (connection refused, no route, name not found): retried.
  case unreachable(String)
  /// A settings problem found before connecting (a file that cannot be read, a bad host).
  case invalidConfiguration(String)
  /// libmosquitto failed in another way.
  case library(String)

  public var description: String {
    switch self {
    case .notAuthorized(let m), .refused(let m), .tls(let m), .unreachable(let m),
      .invalidConfiguration(let m), .library(let m):
      m
    }
  }
}

/// The fleet front end's side of the transport.
public protocol MQTTConnectionDelegate: AnyObject, Sendable {
  /// CONNACK accepted (first connection or a reconnection). Publish retained state and subscribe here.
  func connected()
  /// The connection ended or an attempt failed; `willRetry` false for refusals retrying cannot fix.
  func disconnected(_ error: MQTTError?, willRetry: Bool)
  /// The broker acknowledged the QoS 1 publish `messageID` returned by `publish` (PUBACK).
  func acknowledged(_ messageID: Int32)
  /// A message on a subscribed topic.
  func received(_ message: MQTTMessage)
}
