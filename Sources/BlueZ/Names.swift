// Every BlueZ D-Bus name in one place (bluer's rule): interfaces, members, properties, option keys and
// errors. BlueZ 5.66, doc/org.bluez.*.rst. What a particular device's GATT profile is (its UUIDs) is
// device knowledge and lives with the drivers, not here.
public enum BlueZName {
  public static let service = "org.bluez"
  public static let root = "/org/bluez"
  public static let adapter = "org.bluez.Adapter1"
  public static let device = "org.bluez.Device1"
  public static let gattService = "org.bluez.GattService1"
  public static let gattCharacteristic = "org.bluez.GattCharacteristic1"
  public static let gattDescriptor = "org.bluez.GattDescriptor1"
  public static let battery = "org.bluez.Battery1"
  public static let agentManager = "org.bluez.AgentManager1"
  public static let agent = "org.bluez.Agent1"
  public static let objectManager = "org.freedesktop.DBus.ObjectManager"
  public static let properties = "org.freedesktop.DBus.Properties"
  public static let dbus = "org.freedesktop.DBus"

  /// Signals this client subscribes to (D-Bus specification, "Standard Interfaces").
  public enum Signal {
    public static let interfacesAdded = "InterfacesAdded"
    public static let interfacesRemoved = "InterfacesRemoved"
    public static let propertiesChanged = "PropertiesChanged"
    public static let nameOwnerChanged = "NameOwnerChanged"
  }

  /// Methods called on bluetoothd's interfaces (doc/org.bluez.Adapter.rst, Device.rst,
  /// GattCharacteristic.rst, AgentManager.rst) and those of our exported Agent1 (doc/org.bluez.Agent.rst).
  public enum Method {
    public static let setDiscoveryFilter = "SetDiscoveryFilter"
    public static let startDiscovery = "StartDiscovery"
    public static let stopDiscovery = "StopDiscovery"
    public static let removeDevice = "RemoveDevice"
    public static let connect = "Connect"
    public static let disconnect = "Disconnect"
    public static let pair = "Pair"
    public static let readValue = "ReadValue"
    public static let writeValue = "WriteValue"
    public static let startNotify = "StartNotify"
    public static let stopNotify = "StopNotify"
    public static let registerAgent = "RegisterAgent"
    public static let requestDefaultAgent = "RequestDefaultAgent"
    /// Agent1 methods that need no input from a user: answered with success by a NoInputNoOutput agent.
    public static let agentNoInput: Set<String> = [
      "Release", "Cancel", "RequestConfirmation", "RequestAuthorization", "AuthorizeService",
      "DisplayPasskey",
      "DisplayPinCode",
    ]
  }

  /// Property names, per interface.
  public enum Property {
    // Adapter1
    public static let powered = "Powered"
    /// "on", "off", "off-enabling", "on-disabling" or "off-blocked" (rfkill), BlueZ ≥ 5.64.
    public static let powerState = "PowerState"
    public static let discovering = "Discovering"
    // Adapter1 and Device1
    public static let address = "Address"
    // Device1
    public static let addressType = "AddressType"
    public static let name = "Name"
    public static let alias = "Alias"
    public static let adapter = "Adapter"
    public static let rssi = "RSSI"
    public static let txPower = "TxPower"
    public static let manufacturerData = "ManufacturerData"
    public static let serviceData = "ServiceData"
    public static let advertisingFlags = "AdvertisingFlags"
    public static let advertisingData = "AdvertisingData"
    public static let connected = "Connected"
    public static let paired = "Paired"
    public static let bonded = "Bonded"
    public static let trusted = "Trusted"
    public static let deviceClass = "Class"
    public static let servicesResolved = "ServicesResolved"
    public static let uuids = "UUIDs"
    // GattService1 and GattCharacteristic1
    public static let uuid = "UUID"
    // GattCharacteristic1
    public static let service = "Service"
    public static let flags = "Flags"
    public static let value = "Value"
    public static let notifying = "Notifying"
    // Battery1
    public static let percentage = "Percentage"

    /// Device1 properties bluetoothd sets from an advertisement (or inquiry result) it has just heard
    /// (doc/org.bluez.Device.rst): a change to any of them means the device is in range now.
    public static let advertised: Set<String> = [
      rssi, txPower, manufacturerData, serviceData, advertisingFlags, advertisingData,
    ]
  }

  /// SetDiscoveryFilter keys (doc/org.bluez.Adapter.rst).
  public enum DiscoveryFilterKey {
    public static let uuids = "UUIDs"
    public static let rssi = "RSSI"
    public static let transport = "Transport"
    public static let duplicateData = "DuplicateData"
    public static let pattern = "Pattern"
  }

  /// WriteValue option keys and write types (doc/org.bluez.GattCharacteristic.rst).
  public enum WriteOption {
    public static let type = "type"
    public static let request = "request"
    public static let command = "command"
    public static let reliable = "reliable"
  }

  /// The IO capability of capture's agent (doc/org.bluez.AgentManager.rst, RegisterAgent).
  public static let noInputNoOutput = "NoInputNoOutput"

  /// Error names bluetoothd replies with (doc/org.bluez.*.rst "Possible errors").
  public enum Error {
    public static let failed = "org.bluez.Error.Failed"
    public static let inProgress = "org.bluez.Error.InProgress"
    public static let notReady = "org.bluez.Error.NotReady"
    public static let notPermitted = "org.bluez.Error.NotPermitted"
    public static let notSupported = "org.bluez.Error.NotSupported"
    public static let notAuthorized = "org.bluez.Error.NotAuthorized"
    public static let invalidArguments = "org.bluez.Error.InvalidArguments"
    public static let doesNotExist = "org.bluez.Error.DoesNotExist"
    public static let alreadyExists = "org.bluez.Error.AlreadyExists"
    public static let authenticationFailed = "org.bluez.Error.AuthenticationFailed"
    public static let authenticationRejected = "org.bluez.Error.AuthenticationRejected"
    public static let authenticationCanceled = "org.bluez.Error.AuthenticationCanceled"
    public static let authenticationTimeout = "org.bluez.Error.AuthenticationTimeout"
    public static let connectionAttemptFailed = "org.bluez.Error.ConnectionAttemptFailed"
    public static let rejected = "org.bluez.Error.Rejected"
    public static let canceled = "org.bluez.Error.Canceled"
    /// The Failed message StartNotify gives a client that already holds a session.
    public static let alreadyNotifyingMessage = "Already notifying"
    /// The Failed message of a GATT call on a link that is down.
    public static let notConnectedMessage = "Not connected"
    /// The prefix of the Failed message of an LE connection attempt the device did not answer.
    public static let leConnectionAbortPrefix = "le-connection-abort"
    /// The Failed message of a Connect while the kernel is already connecting the device:
    /// strerror(EALREADY), which bluetoothd passes on (seen from bluetoothd 5.66 when its own
    /// background connection of a bonded LE device was under way).
    public static let alreadyInProgressMessage = "Operation already in progress"
  }

  /// D-Bus daemon errors the client maps (D-Bus specification, "Message Bus Messages").
  public enum BusError {
    public static let serviceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown"
    public static let nameHasNoOwner = "org.freedesktop.DBus.Error.NameHasNoOwner"
    public static let accessDenied = "org.freedesktop.DBus.Error.AccessDenied"
    public static let noReply = "org.freedesktop.DBus.Error.NoReply"
    public static let timeout = "org.freedesktop.DBus.Error.Timeout"
    public static let disconnected = "org.freedesktop.DBus.Error.Disconnected"
    public static let noServer = "org.freedesktop.DBus.Error.NoServer"
    public static let fileNotFound = "org.freedesktop.DBus.Error.FileNotFound"
    public static let unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
    public static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
    public static let unknownInterface = "org.freedesktop.DBus.Error.UnknownInterface"
    public static let invalidSignature = "org.freedesktop.DBus.Error.InvalidSignature"
    public static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
  }
}

/// The 128-bit form of a 16-bit Bluetooth SIG UUID (Core Specification Vol 3 Part B §2.5.1), lower
/// case as BlueZ writes UUIDs.
public func bluetoothBaseUUID(_ short: UInt16) -> String {
  let hex = String(short, radix: 16)
  return "0000" + String(repeating: "0", count: 4 - hex.count) + hex + "-0000-1000-8000-00805f9b34fb"
}
