/// An open device that takes the host's verdict on a code it read: DataConfirmationDevice, good
/// (0x15) or bad (0x2A) with the device's own LED, beep and rumble (docs/capture-sdk.md §7.4). The one
/// way every front end tells a device its verdict (listen's `--confirm`, the fleet's
/// `--confirm-delivery`).
public struct DataConfirmationTarget: Sendable {
  public let device: any Device

  /// Nil when the device cannot take a verdict (it does not write DataConfirmationDevice).
  public init?(_ device: any Device) {
    guard device.capabilities.canWrite(.dataConfirmationDevice) else { return nil }
    self.device = device
  }

  /// Tells the device the verdict on the code it read.
  public func tell(good: Bool) async throws(CaptureError) {
    try await device.set(
      .dataConfirmationDevice, .ulong((good ? DataConfirmation.good : DataConfirmation.bad).packed))
  }
}

extension CaptureEngine {
  /// The open device with this id, when it takes a verdict on its codes.
  public func dataConfirmationTarget(id: String) -> DataConfirmationTarget? {
    device(id: id).flatMap(DataConfirmationTarget.init)
  }
}
