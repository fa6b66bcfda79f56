import BlueZ
import CaptureCore

/// `connect ADDR --classic --pair`: Bluetooth Classic pairing through bluetoothd, the same agent,
/// Pair and Trusted steps as BLE (`BLEManager.pairAndTrust`), found by a BR/EDR discovery. Pairing
/// needs bluetoothd (the kernel's HCI socket offers no pairing agent to an unprivileged program), so
/// without it the answer is NOTAVAILABLE saying so.
public enum ClassicPairing {
  /// How long a BR/EDR discovery looks for an unknown device without --timeout: a General Inquiry
  /// lasts 10.24 s (Core spec Vol 3 Part C 9.2.5, bluetoothd's default), plus room for a second one.
  public static let defaultDiscovery: Duration = .seconds(20)
  /// How long Pair may take without --timeout (bluetoothd's own pairing limit is about 60 s for a user
  /// to confirm; "just works" with a NoInputNoOutput agent needs a few seconds).
  public static let defaultPairTimeout: Duration = .seconds(30)

  /// What pairing left behind.
  public struct Paired: Sendable, Equatable {
    public var address: String
    /// Device1.Alias (the user's alias, else the remote name).
    public var name: String
  }

  /// Finds `address` on the adapter (a BR/EDR discovery if bluetoothd does not know it), pairs with
  /// the NoInputNoOutput agent (already paired counts as paired) and sets Trusted.
  /// `timeout`: the user's --timeout, bounding discovery (ran out → REQUESTTIMEDOUT) and Pair.
  public static func pair(address: String, adapter: String?, timeout: Duration?) async throws(CaptureError)
    -> Paired
  {
    let client: BlueZClient
    do throws(CaptureError) {
      client = try await BlueZClient.connect(adapter: adapter)
    } catch  where error.code == .notAvailable {
      throw CaptureError(
        .notAvailable,
        "--pair with --classic pairs through bluetoothd, which is not reachable: \(error.message)")
    }
    defer { client.close() }
    let device = try await BLEManager.locate(
      client, address, within: timeout ?? defaultDiscovery, transport: "bredr",
      expiry: timeout == nil ? .notFound : .requestTimedOut)
    try await BLEManager.pairAndTrust(client, device, pair: true, timeout: timeout ?? defaultPairTimeout)
    let after = try await client.objects().device(address: address, on: client.adapterPath) ?? device
    return Paired(address: after.address, name: after.alias)
  }
}
