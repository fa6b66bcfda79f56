import CaptureCore
import DBus

/// The one place D-Bus and BlueZ errors become SKT result codes (bluer's single conversion point).
/// Names and messages are bluetoothd 5.66's (bluez-testing.md "Errors").
public enum BlueZErrorMap {
  public static func captureError(_ error: DBusError, _ context: String) -> CaptureError {
    let detail = error.message.isEmpty ? error.name : "\(error.message) (\(error.name))"
    let message = "\(context): \(detail)"
    switch error.name {
    case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
      return CaptureError(
        .notAvailable, "\(context): bluetoothd is not running (no org.bluez on the system bus)")
    case "org.freedesktop.DBus.Error.AccessDenied", BlueZName.Error.notAuthorized:
      return CaptureError(.bluetoothPermissionMissing, "\(message); is this user allowed to use Bluetooth?")
    case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout",
      BlueZName.Error.authenticationTimeout:
      return CaptureError(.requestTimedOut, message)
    case "org.freedesktop.DBus.Error.Disconnected", "org.freedesktop.DBus.Error.NoServer",
      "org.freedesktop.DBus.Error.FileNotFound":
      return CaptureError(.notAvailable, "\(context): the system bus is not available (\(error.message))")
    case "org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.DBus.Error.UnknownMethod",
      "org.freedesktop.DBus.Error.UnknownInterface", BlueZName.Error.doesNotExist:
      return CaptureError(.notFound, message)
    case "org.freedesktop.DBus.Error.InvalidSignature", "org.freedesktop.DBus.Error.InvalidArgs":
      return CaptureError(
        .communicationError, "\(context): unexpected reply from bluetoothd (\(error.message))")
    case BlueZName.Error.notReady:
      return CaptureError(.notAvailable, "\(context): the adapter is not ready (powered off?)")
    case BlueZName.Error.inProgress:
      return CaptureError(.pendingOperationNotCompleted, message)
    case BlueZName.Error.notPermitted, BlueZName.Error.authenticationFailed,
      BlueZName.Error.authenticationRejected,
      BlueZName.Error.authenticationCanceled, BlueZName.Error.rejected:
      return CaptureError(.commandDenied, message)
    case BlueZName.Error.notSupported:
      return CaptureError(.notSupported, message)
    case BlueZName.Error.invalidArguments:
      return CaptureError(.invalidParameter, message)
    case BlueZName.Error.failed where error.message == "Not connected":
      return CaptureError(.deviceNotOpen, message)
    case BlueZName.Error.failed where error.message.hasPrefix("le-connection-abort"),
      BlueZName.Error.connectionAttemptFailed:
      // bluetoothd gives this when an LE connection attempt ends without the device answering.
      return CaptureError(.requestTimedOut, "\(context): the device did not answer (out of range or off?)")
    default:
      // Anything else from a GATT operation is a GATT failure; elsewhere a communication error.
      return CaptureError(context.hasPrefix("GATT") ? .bleGatt : .communicationError, message)
    }
  }
}
