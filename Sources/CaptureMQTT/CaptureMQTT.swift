import CaptureCore
import MosquittoClient

/// The fleet front end (`--mqtt` on listen and serve): every event spooled to disk, then published to an
/// MQTT broker, retained host status and devices, and remote commands (docs/fleet.md).
public enum CaptureMQTTInfo {
  /// MQTT's registered ports (IANA: 1883 mqtt, 8883 secure-mqtt).
  public static let defaultPort: UInt16 = 1883
  public static let defaultTLSPort: UInt16 = 8883
}
