import BlueZ
import CaptureCore

/// A command that failed for a host reason names the cause `capture doctor` would find, in its one
/// error line: the same probes and the same `HostCause` text as the doctor's rows, asked only when a
/// Bluetooth operation has already failed with NOTAVAILABLE or BLUETOOTHPERMISSIONMISSING (BlueZ's
/// "the adapter is not ready" does not say whether it is off or blocked: the probe finds out which).
enum HostExplanation {
  /// Which way the failed operation went.
  enum Route: Sendable {
    /// Through bluetoothd (BLE, pairing, discovery with bluetoothd).
    case blueZ
    /// Bluetooth Classic through the kernel's sockets (RFCOMM, HCI inquiry).
    case classic
    /// bluetoothd first, then Classic without it: both causes count.
    case either
  }

  static func explain(
    _ error: CaptureError, adapter: String?, route: Route, doctor: HostDoctor = HostDoctor()
  ) async -> CaptureError {
    if error.code == .communicationError, route != .blueZ, !error.message.hasSuffix(HostCause.pointer) {
      return await explainClassicLink(error, adapter: adapter, doctor: doctor)
    }
    guard error.code == .notAvailable || error.code == .bluetoothPermissionMissing,
      !error.message.hasSuffix(HostCause.pointer)
    else { return error }
    if route == .classic {
      let kernel = await doctor.kernelRow()
      if kernel.status == .failure { return cause(kernel).explaining(error) }
    }
    // The drivers use hci0 when no --adapter names one (BlueZClient).
    let rows = await doctor.bluetoothRows(selected: adapter ?? BlueZClient.defaultAdapter)
    if let row = firstCause(rows, code: error.code) {
      var causes = [(cause(row), row.subject)]
      if route == .either, row.kind == .systemBus || row.kind == .bluetoothd {
        let kernel = await doctor.kernelRow()
        if kernel.status == .failure { causes.append((cause(kernel), "Bluetooth Classic")) }
      }
      return explaining(error, causes)
    }
    if route == .either {
      let kernel = await doctor.kernelRow()
      if kernel.status == .failure { return cause(kernel).explaining(error) }
    }
    return error
  }

  /// A Classic link that failed (SDP or RFCOMM connect: EHOSTUNREACH, ENETDOWN) over an adapter that is
  /// powered off or blocked by rfkill failed because of the adapter, not the scanner: the kernel answers
  /// "No route to host" for a down controller. Then it is NOTAVAILABLE with the adapter's cause, as
  /// doctor reports it; a usable adapter (or one bluetoothd cannot tell about) leaves the error as it is.
  static func explainClassicLink(_ error: CaptureError, adapter: String?, doctor: HostDoctor) async
    -> CaptureError
  {
    let rows = await doctor.bluetoothRows(selected: adapter ?? BlueZClient.defaultAdapter)
    guard
      let row = rows.first(where: {
        $0.kind == .adapter && $0.status == .failure && !$0.message.hasPrefix(HostCause.notCheckedPrefix)
      })
    else { return error }
    return explaining(CaptureError(.notAvailable, error.message), [(cause(row), row.subject)])
  }

  /// The first failure that is a cause (not a "not checked" row), preferring one with the error's own
  /// code (a permission error is explained by a permission row).
  static func firstCause(_ rows: [HostCheck], code: ResultCode) -> HostCheck? {
    let causes = rows.filter { $0.status == .failure && !$0.message.hasPrefix(HostCause.notCheckedPrefix) }
    return causes.first { $0.code == code } ?? causes.first
  }

  static func cause(_ row: HostCheck) -> HostCause {
    HostCause(message: row.message, fix: row.fix, code: row.code ?? .notAvailable)
  }

  /// The error's code and what it was doing, then each cause (`subject: message; fix: …`), then the
  /// pointer to doctor. What it was doing is the error's text up to its first ": " ("starting
  /// discovery", "cannot reach the system bus, so no Bluetooth"): the cause replaces the detail after
  /// it, which only said less (libdbus's text, "the adapter is not ready (powered off?)"). A message
  /// without a context ("bluetoothd is not running (…)") is all detail: "no Bluetooth" leads instead.
  static func explaining(_ error: CaptureError, _ causes: [(HostCause, String?)]) -> CaptureError {
    let lead = lead(of: error)
    // "Bluetooth adapter hci0: hci0: …" says the adapter once.
    let text = causes.map { cause, subject in
      guard let subject, !lead.hasSuffix(" " + subject) else { return cause.explanation }
      return "\(subject): \(cause.explanation)"
    }
    return CaptureError(
      error.code, "\(lead): \(text.joined(separator: "; ")) \(HostCause.pointer)")
  }

  static func lead(of error: CaptureError) -> String {
    let text = Array(error.message.utf8)
    if let colon = text.indices.dropLast().first(where: {
      text[$0] == UInt8(ascii: ":") && text[$0 + 1] == 0x20
    }) {
      return String(decoding: text[..<colon], as: UTF8.self)
    }
    return error.code == .bluetoothPermissionMissing ? "Bluetooth is not permitted" : "no Bluetooth"
  }

  /// A device node open refused (EACCES/EPERM): `context: <doctor's row message>; fix: … (capture
  /// doctor checks the host)` when the node's permissions explain it; nil when they do not (the
  /// caller keeps its own message).
  static func nodeDenied(_ path: String, kind: HostCheck.Kind, context: String) -> CaptureError? {
    guard let node = HostProbes().access(path, needsWrite: kind == .serial), !node.accessible else {
      return nil
    }
    let cause = HostCause.nodeDenied(node, usualGroup: HostChecks.usualGroup(kind))
    return CaptureError(cause.code, "\(context): \(cause.explanation) \(HostCause.pointer)")
  }
}
