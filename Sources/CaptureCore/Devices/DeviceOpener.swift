/// One SocketCam frame source from the command line (docs/architecture.md §1 SOURCE).
/// Images and directories are file names as bytes (`FilePath`): a name that is not UTF-8 is opened as
/// it was typed.
public enum FrameSourceItem: Sendable, Hashable {
  case image(FilePath)
  case standardInput
  case directory(FilePath)
  case camera(FilePath)
}

/// How a device is opened for one command.
public struct OpenRequest: Sendable {
  public var selector: DeviceSelector
  /// SocketCam only: where frames come from. Empty for commands that read no frames (get, set).
  public var frameSources: [FrameSourceItem]
  public var adapter: String?
  /// Warnings that are not errors (a skipped non-image in a directory). The core never prints; the
  /// command line decides where these go.
  public var warn: @Sendable (String) -> Void
  /// listen: keep the device across link loss and bluetoothd restarts, reconnecting when it returns
  /// (its events then include deviceRemoval and a later deviceArrival).
  public var reconnects: Bool = false
  /// The command reads events (listen, trigger): drivers arm notifications at open. get and set
  /// leave it false and stay cheap.
  public var wantsEvents: Bool = true
  /// How long opening may take (connecting a BLE device); nil for the driver's default.
  public var timeout: Duration? = nil
  /// Keyboard-wedge scanners: the layout the scanner types for (`--keymap`; us, de, fr, uk). A
  /// `hid:PATH?keymap=` query names one device and wins over it. nil means us.
  public var keymap: String? = nil

  public init(
    selector: DeviceSelector, frameSources: [FrameSourceItem] = [], adapter: String? = nil,
    warn: @escaping @Sendable (String) -> Void = { _ in }
  ) {
    self.selector = selector
    self.frameSources = frameSources
    self.adapter = adapter
    self.warn = warn
  }
}

/// Finds the driver for a selector and opens the device. The command line gets the real one from the
/// Drivers target; tests may pass another.
public protocol DeviceOpener: Sendable {
  func open(_ request: OpenRequest, state: StateStore) async throws(CaptureError) -> any Device
}
