/// A profile: properties to hold on a device (`capture set DEVICE --from FILE`). Reading the file is
/// the front end's; checking it against the device, writing only what differs and reading each write
/// back is here, so applying a profile is idempotent by construction whoever asks for it.
public struct ProfileEntry: Sendable, Equatable {
  public var property: PropertyID
  public var value: PropertyValue
  /// How the entry is named in the results (`friendly-name`, `data-source qr-code`).
  public var label: String

  public init(property: PropertyID, value: PropertyValue, label: String) {
    self.property = property
    self.value = value
    self.label = label
  }
}

/// What became of one entry.
public struct ProfileResult: Sendable, Equatable {
  public enum Status: Sendable, Equatable {
    /// The device already held the value.
    case unchanged
    /// `dryRun`: the value differs and would be written.
    case wouldChange
    /// Written and read back equal.
    case changed
    /// The write failed, or it read back a different value (`error` says which).
    case failed
  }

  public var label: String
  public var status: Status
  public var error: CaptureError?

  public init(label: String, status: Status, error: CaptureError? = nil) {
    self.label = label
    self.status = status
    self.error = error
  }
}

extension DeviceManager {
  /// One validation, then the writes. Every entry is checked against the device (the device can
  /// write it, its current value reads) for `dryRun` and a real run alike; any problem rejects the
  /// whole profile with nothing written (its message names `profile` and every problem). Only then are
  /// the entries that differ written, in `writeOrder`, each read back to verify. The device is the
  /// caller's: it is neither opened nor closed here.
  public static func apply(
    _ entries: [ProfileEntry], to device: any Device, dryRun: Bool, profile: String
  ) async throws(CaptureError) -> [ProfileResult] {
    var current: [(entry: ProfileEntry, argument: PropertyValue, differs: Bool)] = []
    var problems: [CaptureError] = []
    for (index, entry) in entries.enumerated() {
      let argument: PropertyValue
      if case .dataSource(let d) = entry.value {
        argument = .dataSource(DataSourceValue(id: d.id, status: .defaultStatus))
      } else {
        argument = .none
      }
      do throws(CaptureError) {
        guard device.capabilities.canWrite(entry.property) else { throw device.unsupported(entry.property) }
        let value = try await device.get(entry.property, argument: argument)
        current.append((entry, argument, !same(value, entry.value)))
      } catch {
        problems.append(CaptureError(error.code, "entry \(index + 1) (\(entry.label)): \(error.message)"))
      }
    }
    if let first = problems.first {
      throw CaptureError(
        first.code,
        "profile '\(profile)' rejected, nothing written: " + problems.map(\.message).joined(separator: "; "))
    }

    var results: [ProfileResult] = []
    for (entry, argument, differs) in current.sorted(by: {
      writeOrder($0.entry.property) < writeOrder($1.entry.property)
    }) {
      guard differs else {
        results.append(ProfileResult(label: entry.label, status: .unchanged))
        continue
      }
      if dryRun {
        results.append(ProfileResult(label: entry.label, status: .wouldChange))
        continue
      }
      do throws(CaptureError) {
        try await device.set(entry.property, entry.value)
        let after = try await device.get(entry.property, argument: argument)
        guard same(after, entry.value) else {
          throw CaptureError(.invalidValue, "\(entry.label) reads back a different value after the write")
        }
        results.append(ProfileResult(label: entry.label, status: .changed))
      } catch {
        results.append(ProfileResult(label: entry.label, status: .failed, error: error))
      }
    }
    return results
  }

  /// Settings that can drop the link go last.
  static func writeOrder(_ p: PropertyID) -> Int {
    switch p {
    case .securityModeDevice, .profileConfigDevice, .startUpRoleSPPDevice: 2
    case .socketCamStatus: 1
    default: 0
    }
  }

  /// A data source is the same when its id and status are: the device may report other fields.
  static func same(_ a: PropertyValue, _ b: PropertyValue) -> Bool {
    if case .dataSource(let x) = a, case .dataSource(let y) = b {
      return x.id == y.id && x.status == y.status
    }
    return a == b
  }
}
