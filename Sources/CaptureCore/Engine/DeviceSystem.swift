/// The device manager's half of the driver layer: everything a front end asks of Bluetooth and the
/// input subsystem that is not one open device (docs/capture-sdk.md §7.16, the SDK's DeviceManager:
/// discovery, connect and remove, partnership). Core declares it; the Drivers target implements it over
/// BlueZ, libbluetooth and evdev; the front ends (the command line, `serve`, MQTT commands) only ever
/// see this protocol, so the package graph keeps them off the drivers (docs/architecture.md §2).
public protocol DeviceManagement: Sendable {
  /// A discovery session through bluetoothd for `request.timeout`, calling `found` once per device as
  /// it appears; returns how many were reported.
  func discover(_ request: DiscoveryRequest, found: @escaping @Sendable (DiscoveredDeviceInfo) -> Void)
    async throws(CaptureError) -> Int
  /// Is bluetoothd on the system bus? (BlueZ is preferred whenever it is.)
  func bluetoothdReachable(adapter: String?) async -> Bool
  /// `discover --classic` without bluetoothd: an HCI inquiry of about `seconds`, with names; Socket
  /// Mobile devices only unless `all`. `note` hears why a device was left unrecognised.
  func inquire(adapter: String?, seconds: Double, all: Bool, note: (String) -> Void)
    async throws(CaptureError)
    -> [DiscoveredDeviceInfo]
  /// Connects a BLE device, waits for its GATT services, pairs when its profile needs a bond (or when
  /// `pair`), and marks it trusted so it may reconnect (BlueZ doc/org.bluez.Device1.rst "Trusted").
  func connect(address: String, adapter: String?, pair: Bool, timeout: Duration?)
    async throws(CaptureError) -> BluetoothDeviceInfo
  /// Bluetooth Classic pairing through bluetoothd (BR/EDR discovery when it does not know the address
  /// yet), then Trusted; returns the name bluetoothd has for it.
  func pairClassic(address: String, adapter: String?, timeout: Duration?) async throws(CaptureError) -> String
  /// Opens a Classic scanner in SPP acceptor mode over RFCOMM (SDP finds the channel), reads what it
  /// is, and closes it again: what `connect --classic` remembers (docs/device-protocols.md §5.2).
  func probeClassic(address: String, request: OpenRequest, name: String?)
    async throws(CaptureError) -> ClassicProbe
  /// Disconnects and makes bluetoothd forget the device; nil when bluetoothd did not know it.
  func remove(address: String, adapter: String?) async throws(CaptureError) -> BluetoothDeviceInfo?
  /// The bond and trust bluetoothd holds for a device, and its profile variant.
  func partnership(address: String, adapter: String?) async throws(CaptureError) -> PartnershipInfo
  /// Devices bluetoothd has connected right now (any process).
  func connected(adapter: String?) async throws(CaptureError) -> [BluetoothDeviceInfo]
  /// `listen --accept`: waits on an RFCOMM server channel for a scanner in SPP initiator mode, which
  /// connects to this host after scanning the pairing barcode (docs/device-protocols.md §5.2).
  func accept(channel: Int, request: OpenRequest) async throws(CaptureError) -> any Device
  /// The SPP initiator command barcodes for this host's adapter address.
  func pairingBarcodes(adapter: String?) async throws(CaptureError) -> PairingBarcodes
  /// The input devices in /dev/input, and the paths that could not be opened or identified.
  func inputDevices() -> (devices: [InputDeviceInfo], unreadable: [String])
  /// The V4L2 video capture nodes among /dev/video* (`list --cameras`), and the nodes that could not
  /// be opened to ask.
  func cameras() -> (cameras: [CameraInfo], unreadable: [String])
}

/// Everything a front end needs from the drivers: opening a device by selector, device management, and
/// the host checks of `capture doctor`.
public protocol DeviceSystem: DeviceOpener, DeviceManagement, HostDiagnostics {}

/// One discovery session.
public struct DiscoveryRequest: Sendable, Equatable {
  public var adapter: String?
  /// bluetoothd's discovery filter Transport: "le", "bredr" or "auto" (BlueZ doc/org.bluez.Adapter1.rst
  /// SetDiscoveryFilter).
  public var transport: String
  /// Every device, not only Socket Mobile ones.
  public var all: Bool
  /// An fnmatch(3) pattern the device's name must match.
  public var namePattern: String?
  public var timeout: Duration

  public init(adapter: String?, transport: String, all: Bool, namePattern: String?, timeout: Duration) {
    self.adapter = adapter
    self.transport = transport
    self.all = all
    self.namePattern = namePattern
    self.timeout = timeout
  }
}

/// A device discovery found (the SDK's DeviceDiscovered event, docs/capture-sdk.md §4).
public struct DiscoveredDeviceInfo: Sendable, Equatable {
  public var address: String
  /// "public", "random" (LE) or "bredr".
  public var addressType: String
  public var name: String?
  public var rssi: Int16?
  public var uuids: [String]
  public var isSocketMobile: Bool
  /// The SDK type guessed from the advertisement; None for a Classic scanner, whose model is not
  /// known before SPP (docs/device-protocols.md §5.3).
  public var type: DeviceType
  /// The 24-bit Class of Device of a BR/EDR device (Device1.Class or the inquiry's); nil for LE.
  public var classOfDevice: UInt32?
  /// BR/EDR: how a Socket Mobile Classic scanner was recognised ("name" or "serviceClass"), the
  /// `recognizedBy` value of `discover --json`; nil when it was not.
  public var recognizedBy: String?

  public init(
    address: String, addressType: String, name: String?, rssi: Int16?, uuids: [String], isSocketMobile: Bool,
    type: DeviceType, classOfDevice: UInt32? = nil, recognizedBy: String? = nil
  ) {
    self.address = address
    self.addressType = addressType
    self.name = name
    self.rssi = rssi
    self.uuids = uuids
    self.isSocketMobile = isSocketMobile
    self.type = type
    self.classOfDevice = classOfDevice
    self.recognizedBy = recognizedBy
  }
}

/// A Bluetooth device as bluetoothd knows it: what `connect` connected, `list` sees connected, or
/// `remove` removed.
public struct BluetoothDeviceInfo: Sendable, Equatable {
  public var address: String
  /// Device1.Alias: the user's alias, else the remote name.
  public var name: String
  /// The SDK device types it arrives as: an S370 arrives twice, its barcode half and its NFC half
  /// (docs/capture-sdk.md §5.2). Never empty.
  public var deviceTypes: [DeviceType]
  public var isPaired: Bool

  public init(address: String, name: String, deviceTypes: [DeviceType], isPaired: Bool) {
    precondition(!deviceTypes.isEmpty, "a device arrives as at least one type")
    self.address = address
    self.name = name
    self.deviceTypes = deviceTypes
    self.isPaired = isPaired
  }

  /// Its arrivals, one per device type.
  public var arrivals: [DeviceInfo] { deviceTypes.map { DeviceInfo(id: address, name: name, type: $0) } }
}

/// What probing a Classic scanner found.
public struct ClassicProbe: Sendable, Equatable {
  public var info: DeviceInfo
  /// The RFCOMM channel SDP found, remembered so later opens skip the lookup.
  public var channel: UInt8?

  public init(info: DeviceInfo, channel: UInt8?) {
    self.info = info
    self.channel = channel
  }
}

/// `partnership status`.
public struct PartnershipInfo: Sendable, Equatable {
  public var device: BluetoothDeviceInfo
  public var isBonded: Bool
  public var isTrusted: Bool
  public var isConnected: Bool
  /// "pairing-required", "no-pairing" or "unknown" (docs/device-protocols.md §2.1).
  public var variant: String

  public init(
    device: BluetoothDeviceInfo, isBonded: Bool, isTrusted: Bool, isConnected: Bool, variant: String
  ) {
    self.device = device
    self.isBonded = isBonded
    self.isTrusted = isTrusted
    self.isConnected = isConnected
    self.variant = variant
  }
}

/// The command barcodes that make a Classic scanner connect to this host (docs/device-protocols.md
/// §5.2).
public struct PairingBarcodes: Sendable, Equatable {
  /// This host's adapter address, `AA:BB:CC:DD:EE:FF`.
  public var host: String
  /// For 1D scanners (Code 128).
  public var linear: String
  /// For 2D scanners (DataMatrix or QR).
  public var twoDimensional: String

  public init(host: String, linear: String, twoDimensional: String) {
    self.host = host
    self.linear = linear
    self.twoDimensional = twoDimensional
  }
}

/// An input device (a keyboard-wedge scanner candidate), from EVIOCGNAME and EVIOCGID.
public struct InputDeviceInfo: Sendable, Equatable {
  public var path: String
  public var name: String
  public var vendorID: UInt16
  public var productID: UInt16
  public var isScanner: Bool

  public init(path: String, name: String, vendorID: UInt16, productID: UInt16, isScanner: Bool) {
    self.path = path
    self.name = name
    self.vendorID = vendorID
    self.productID = productID
    self.isScanner = isScanner
  }
}

/// A camera SocketCam can read (`--camera`): a V4L2 node that captures video, by VIDIOC_QUERYCAP.
public struct CameraInfo: Sendable, Equatable {
  public var path: String
  /// The driver's name ("uvcvideo", "vivid").
  public var driver: String
  /// The device's name as its driver gives it.
  public var card: String
  /// The fourccs it offers, in the driver's order; those in FrameSourceItem.cameraFormats are the
  /// ones SocketCam reads.
  public var formats: [String]

  public init(path: String, driver: String, card: String, formats: [String]) {
    self.path = path
    self.driver = driver
    self.card = card
    self.formats = formats
  }
}

/// The layouts a keyboard-wedge scanner may type for (`--keymap`, `hid:PATH?keymap=`). Scanners send
/// key positions, not characters, so the host must know the layout the scanner assumed; the hid driver
/// holds a table for each of these.
public enum KeyboardLayout: String, Sendable, CaseIterable {
  case us, de, fr, uk
}

extension RememberedDevice {
  /// The transport a Bluetooth Classic scanner used over RFCOMM is remembered with.
  public static let classicTransport = "classic"
  /// The transport a BLE device is remembered with.
  public static let bluetoothLETransport = "ble"
}

extension CaptureError {
  /// A selector whose transport this build has no driver for: ESKT_NOTSUPPORTED naming the transport,
  /// never a silent success.
  public static func transportMissing(_ selector: DeviceSelector) -> CaptureError {
    .notSupported(
      "\(selector): the \(selector.transportName) transport is not available in this build of capture")
  }
}
