/// One SocketCam frame source from the command line (docs/architecture.md §1 SOURCE).
/// Images and directories are file names as bytes (`FilePath`): a name that is not UTF-8 is opened as
/// it was typed.
public enum FrameSourceItem: Sendable, Hashable {
  case image(FilePath)
  case standardInput
  /// `--dir DIR` for `listen` and `trigger`: the images in DIR when the read starts, once each, in name
  /// order; then the source is exhausted.
  case directory(FilePath)
  /// `--camera DEV`, with `--camera-format FOURCC` when one was given (one of `cameraFormats`).
  case camera(FilePath, format: String? = nil)
  /// `serve --dir DIR`: an endless source, like a camera. Every image file that appears in DIR while a
  /// scan reads is decoded once, in arrival order: one closed after writing (inotify IN_CLOSE_WRITE,
  /// so a file written in place is read once it is complete) or renamed into DIR (IN_MOVED_TO). Files
  /// already there when the scan starts are not read; dot files are skipped silently and non-images
  /// with a warning, as for `--dir`; a file seen again unchanged (renamed inside DIR, or closed again
  /// without a write) is not read twice.
  case watchedDirectory(FilePath)
}

extension FrameSourceItem {
  /// The pixel formats SocketCam turns into gray, by their V4L2 fourcc (videodev2.h), cheapest first
  /// within each group: what `--camera-format` takes. The camera driver reads the same list
  /// (V4L2Camera.PixelFormat; DecodersTests checks they agree).
  public static let cameraFormats = [
    "GREY", "NV12", "NV21", "NV16", "NV61", "YU12", "YV12", "422P", "NM12", "NM21", "NM16", "NM61", "YM12",
    "YM21", "YM16", "YM61", "YUYV", "YVYU", "UYVY", "VYUY", "RGB3", "BGR3", "MJPG",
  ]

  /// A source that never runs out by itself (a camera, a watched directory): a scan of it ends at its
  /// first read (start), a stop, or the device's close.
  public var isEndless: Bool {
    switch self {
    case .camera, .watchedDirectory: true
    case .image, .standardInput, .directory: false
    }
  }

  /// The SOURCE of a service (`capture serve`): the command line's `--dir DIR` read as a directory to
  /// watch for new images (`.watchedDirectory`), every other source as it is. Use it on what the
  /// command line parsed (`Values.frameSources`).
  public static func watching(_ sources: [FrameSourceItem]) -> [FrameSourceItem] {
    sources.map { item in
      if case .directory(let path) = item { return .watchedDirectory(path) }
      return item
    }
  }
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
  /// SocketCam in a service (the engine's `setSocketCamStatus`): a TriggerDevice start, continuous
  /// or until-read returns once the scan is reading (for a watched directory: once the watch is
  /// armed, so a file closed after the reply is read) and the scan goes on in the background, as the
  /// SDK's SocketCam view does; a stop ends it and returns once it has ended. A scan that ends, its
  /// source exhausted or failed, leaves the device open for the next trigger. False (listen,
  /// trigger): the trigger returns when the scan ends, and a finite source or a continuous scan that
  /// ended closes the device.
  public var scansInBackground: Bool = false

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
