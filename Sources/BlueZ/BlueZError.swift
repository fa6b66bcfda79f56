import CaptureCore
import DBus

/// The one place D-Bus and BlueZ errors become SKT result codes (bluer's single conversion point).
/// Names and messages are bluetoothd 5.66's (docs/bluez-testing.md, "Errors").
public enum BlueZErrorMap {
  public static func captureError(_ error: DBusError, _ context: String) -> CaptureError {
    let detail = error.message.isEmpty ? error.name : "\(error.message) (\(error.name))"
    let message = "\(context): \(detail)"
    switch error.name {
    case BlueZName.BusError.serviceUnknown, BlueZName.BusError.nameHasNoOwner:
      return CaptureError(
        .notAvailable, "\(context): bluetoothd is not running (no org.bluez on the system bus)")
    case BlueZName.BusError.accessDenied, BlueZName.Error.notAuthorized:
      return CaptureError(.bluetoothPermissionMissing, "\(message); is this user allowed to use Bluetooth?")
    case BlueZName.BusError.noReply, BlueZName.BusError.timeout,
      BlueZName.Error.authenticationTimeout:
      return CaptureError(.requestTimedOut, message)
    case BlueZName.BusError.disconnected, BlueZName.BusError.noServer,
      BlueZName.BusError.fileNotFound:
      return CaptureError(.notAvailable, "\(context): the system bus is not available (\(error.message))")
    case BlueZName.BusError.unknownObject, BlueZName.BusError.unknownMethod,
      BlueZName.BusError.unknownInterface, BlueZName.Error.doesNotExist:
      return CaptureError(.notFound, message)
    case BlueZName.BusError.invalidSignature, BlueZName.BusError.invalidArgs:
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
    case BlueZName.Error.failed where error.message == BlueZName.Error.notConnectedMessage:
      return CaptureError(.deviceNotOpen, message)
    case BlueZName.Error.failed where error.message.hasPrefix(BlueZName.Error.leConnectionAbortPrefix),
      BlueZName.Error.connectionAttemptFailed:
      // bluetoothd gives this when an LE connection attempt ends without the device answering.
      return CaptureError(.requestTimedOut, "\(context): the device did not answer (out of range or off?)")
    default:
      // Anything else from a GATT operation is a GATT failure; elsewhere a communication error.
      return CaptureError(context.hasPrefix("GATT") ? .bleGatt : .communicationError, message)
    }
  }
}
