/// `capture doctor`: what stands between a user and their scanner on this host — the system bus,
/// bluetoothd, the adapters and rfkill, permission to talk to org.bluez, the kernel's Bluetooth
/// support, access to input, serial and video device nodes, the state file, the decoders. Core
/// declares it; the Drivers target implements it with the same probes the drivers use, so the cause
/// `doctor` names is the cause a failing command names (docs/architecture.md §2: the front ends only
/// see CaptureCore's protocols).
public protocol HostDiagnostics: Sendable {
  /// Every check, in the published order (`HostCheck.Kind`); never throws: a check that cannot be
  /// made is itself a row saying why.
  func diagnose(_ request: DiagnosisRequest) async -> [HostCheck]
}

/// What `doctor` was asked to look at.
public struct DiagnosisRequest: Sendable {
  /// `--adapter`: the adapter the user means; nil is the default the commands use (hci0).
  public var adapter: String?
  /// The state file `doctor` inspects (read only: a corrupt one is reported, never moved aside); the
  /// device nodes its remembered `serial:` and `hid:` devices name are checked besides those found
  /// under /dev.
  public var state: StateStore

  public init(adapter: String?, state: StateStore) {
    self.adapter = adapter
    self.state = state
  }
}

/// One row of `doctor`: a check, what it found, and the command that fixes it.
public struct HostCheck: Sendable, Equatable {
  /// The checks, in the order `doctor` reports them. The raw values are the published `check` names
  /// of `doctor --json` and the plain output: never rename one.
  public enum Kind: String, Sendable, CaseIterable {
    case systemBus = "system-bus"
    case bluetoothd
    case adapter
    case bluezPermission = "bluez-permission"
    case kernelBluetooth = "kernel-bluetooth"
    case input
    case serial
    case video
    case stateFile = "state-file"
    case zbar
    case zxing
  }

  public enum Status: String, Sendable, CaseIterable {
    case ok, warning, failure
  }

  public var kind: Kind
  /// What the row is about when a check has several rows: an adapter (`hci0`), a device node
  /// (`/dev/ttyUSB0`), the state file's path; nil for a check of the host as a whole.
  public var subject: String?
  public var status: Status
  /// One line for a person: what was found.
  public var message: String
  /// The command that fixes it (`rfkill unblock bluetooth`, `sudo usermod -aG dialout "$USER"`), nil
  /// when there is nothing to run (ok rows; a hardware switch).
  public var fix: String?
  /// The SKT result a failure (or warning) stands for: what a command failing for this cause exits
  /// with (NOTAVAILABLE for a missing bus, bluetoothd, adapter or kernel support; FILEACCESSDENIED for
  /// a node or file; BLUETOOTHPERMISSIONMISSING for org.bluez; docs/capture-sdk.md §1). nil for ok.
  public var code: ResultCode?

  public init(
    _ kind: Kind, subject: String? = nil, status: Status, message: String, fix: String? = nil,
    code: ResultCode? = nil
  ) {
    self.kind = kind
    self.subject = subject
    self.status = status
    self.message = message
    self.fix = fix
    self.code = code
  }
}
