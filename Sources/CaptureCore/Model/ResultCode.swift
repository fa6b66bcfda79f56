// SKT result codes (docs/capture-sdk.md §1). Success is `rawValue >= 0` (`SKTSUCCESS`); positive values are
// warnings, negative values errors. The numbers are the wire values of JSON-RPC error codes and event
// results.
public struct ResultCode: Hashable, Sendable, CustomStringConvertible {
  public let rawValue: Int32
  public init(_ rawValue: Int32) { self.rawValue = rawValue }

  public var isSuccess: Bool { rawValue >= 0 }
  /// A positive code: success, but with a warning (docs/capture-sdk.md §1).
  public var isWarning: Bool { rawValue > 0 }
  /// Whether any source defines this value (docs/capture-sdk.md §1 leaves gaps, e.g. -58, -65…-69).
  public var isKnown: Bool { ResultCode.table[rawValue] != nil }
  /// The C/JS/Dart name, e.g. `ESKT_NOTSUPPORTED`; `ESKT_UNKNOWN` for a value no source defines.
  public var name: String { ResultCode.table[rawValue]?.name ?? "ESKT_UNKNOWN" }
  public var meaning: String { ResultCode.table[rawValue]?.meaning ?? "unknown result code" }
  public var description: String { "\(name) (\(rawValue))" }

  /// Looks a code up by name: `ESKT_NOTSUPPORTED`, `NOTSUPPORTED` or the Swift-style `E_NOTSUPPORTED`
  /// (docs/capture-sdk.md §0 naming table), case-insensitive. Both names of -90 are accepted.
  public static func named(_ text: String) -> ResultCode? {
    var key = text.trimmingWhitespace().uppercased()
    if key.hasPrefix("SKTCAPTUREE_") { key = "ESKT_" + key.dropFirst("SKTCAPTUREE_".count) }
    if key.hasPrefix("E_") { key = "ESKT_" + key.dropFirst(2) }
    if !key.hasPrefix("ESKT_") { key = "ESKT_" + key }
    return all.first { $0.name == key }?.code
  }

  /// ESKT_LASSODISABLED (8): warning: Lasso feature switched off.
  public static let lassoDisabled = ResultCode(8)
  /// ESKT_DEPRECATED (7): warning: the call is deprecated.
  public static let deprecated = ResultCode(7)
  /// ESKT_NODATA (6): warning: nothing to return.
  public static let noData = ResultCode(6)
  /// ESKT_CREATED (5): warning: object was newly created.
  public static let created = ResultCode(5)
  /// ESKT_STILLPENDING (4): warning: operation still in progress.
  public static let stillPending = ResultCode(4)
  /// ESKT_PENDING (3): warning: operation queued/pending.
  public static let pending = ResultCode(3)
  /// ESKT_ALREADYDONE (2): warning: already done (e.g. open twice).
  public static let alreadyDone = ResultCode(2)
  /// ESKT_WAITTIMEOUT (1): warning: a wait expired without an event.
  public static let waitTimeout = ResultCode(1)
  /// ESKT_NOERROR (0): success.
  public static let noError = ResultCode(0)
  /// ESKT_TESTFAILED (-1): a self-test failed.
  public static let testFailed = ResultCode(-1)
  /// ESKT_NOTENOUGHMEMORY (-2): out of memory.
  public static let notEnoughMemory = ResultCode(-2)
  /// ESKT_UNABLECREATELOCK (-3): lock creation failed.
  public static let unableCreateLock = ResultCode(-3)
  /// ESKT_UNABLELOCK (-4): could not take a lock.
  public static let unableLock = ResultCode(-4)
  /// ESKT_UNABLEUNLOCK (-5): could not release a lock.
  public static let unableUnlock = ResultCode(-5)
  /// ESKT_LISTEMPTY (-6): list is empty, nothing to remove.
  public static let listEmpty = ResultCode(-6)
  /// ESKT_UNABLECREATEEVENT (-7): event object creation failed.
  public static let unableCreateEvent = ResultCode(-7)
  /// ESKT_UNABLESETEVENT (-8): could not signal an event.
  public static let unableSetEvent = ResultCode(-8)
  /// ESKT_UNABLERESETEVENT (-9): could not reset an event.
  public static let unableResetEvent = ResultCode(-9)
  /// ESKT_EVENTNOTCREATED (-10): event object does not exist.
  public static let eventNotCreated = ResultCode(-10)
  /// ESKT_INVALIDHANDLE (-11): bad client/device handle.
  public static let invalidHandle = ResultCode(-11)
  /// ESKT_UNABLECREATETHREAD (-12): thread creation failed.
  public static let unableCreateThread = ResultCode(-12)
  /// ESKT_THREADALREADYCREATED (-13): thread exists already.
  public static let threadAlreadyCreated = ResultCode(-13)
  /// ESKT_THREADSTILLRUNNING (-14): thread has not stopped.
  public static let threadStillRunning = ResultCode(-14)
  /// ESKT_NOTSUPPORTED (-15): operation/property not supported (by device or host).
  public static let notSupported = ResultCode(-15)
  /// ESKT_PENDINGOPERATIONNOTCOMPLETED (-16): a previous operation is still running.
  public static let pendingOperationNotCompleted = ResultCode(-16)
  /// ESKT_NOTFOUND (-17): item not found.
  public static let notFound = ResultCode(-17)
  /// ESKT_INVALIDPARAMETER (-18): bad argument.
  public static let invalidParameter = ResultCode(-18)
  /// ESKT_NOTINITIALIZED (-19): object used before being opened/initialised.
  public static let notInitialized = ResultCode(-19)
  /// ESKT_TIMEOUTOUTOFRANGE (-20): timeout argument out of range.
  public static let timeoutOutOfRange = ResultCode(-20)
  /// ESKT_UNABLEINITIALIZE (-21): initialisation failed.
  public static let unableInitialize = ResultCode(-21)
  /// ESKT_UNABLEDEINITIALIZE (-22): de-initialisation/close failed.
  public static let unableDeinitialize = ResultCode(-22)
  /// ESKT_UNKNOWNCONFIGURATION (-23): unknown configuration item.
  public static let unknownConfiguration = ResultCode(-23)
  /// ESKT_INVALIDCONFIGURATION (-24): configuration value invalid.
  public static let invalidConfiguration = ResultCode(-24)
  /// ESKT_ALREADYEXISTING (-25): item already exists.
  public static let alreadyExisting = ResultCode(-25)
  /// ESKT_BUFFERTOOSMALL (-26): caller buffer too small.
  public static let bufferTooSmall = ResultCode(-26)
  /// ESKT_UNABLEOPENDEVICE (-27): device open failed.
  public static let unableOpenDevice = ResultCode(-27)
  /// ESKT_UNABLECONFIGUREDEVICE (-28): device configuration failed.
  public static let unableConfigureDevice = ResultCode(-28)
  /// ESKT_UNABLECONVERTSTRING (-29): string conversion failed.
  public static let unableConvertString = ResultCode(-29)
  /// ESKT_UNABLECOPYSTRING (-30): string copy failed.
  public static let unableCopyString = ResultCode(-30)
  /// ESKT_DEVICENOTOPEN (-31): device is not open.
  public static let deviceNotOpen = ResultCode(-31)
  /// ESKT_NOTAVAILABLE (-32): item not available.
  public static let notAvailable = ResultCode(-32)
  /// ESKT_UNABLEWRITEFILE (-33): file write failed.
  public static let unableWriteFile = ResultCode(-33)
  /// ESKT_UNABLEREADFILE (-34): file read failed.
  public static let unableReadFile = ResultCode(-34)
  /// ESKT_WAITFAILED (-35): wait primitive failed.
  public static let waitFailed = ResultCode(-35)
  /// ESKT_INVALIDCHECKSUM (-36): checksum mismatch.
  public static let invalidChecksum = ResultCode(-36)
  /// ESKT_COMMANDDENIED (-37): device refused the command.
  public static let commandDenied = ResultCode(-37)
  /// ESKT_COMMUNICATIONERROR (-38): transport/communication failure.
  public static let communicationError = ResultCode(-38)
  /// ESKT_RECEIVEUNEXPECTEDCOMMAND (-39): unexpected command received.
  public static let receiveUnexpectedCommand = ResultCode(-39)
  /// ESKT_UNABLECREATEGUID (-40): GUID generation failed.
  public static let unableCreateGuid = ResultCode(-40)
  /// ESKT_INVALIDVALUE (-41): value invalid.
  public static let invalidValue = ResultCode(-41)
  /// ESKT_REQUESTTIMEDOUT (-42): request timed out (no reply).
  public static let requestTimedOut = ResultCode(-42)
  /// ESKT_INVALIDOPERATION (-43): operation not valid in this state.
  public static let invalidOperation = ResultCode(-43)
  /// ESKT_WRONGPROTOCOL (-44): wrong protocol.
  public static let wrongProtocol = ResultCode(-44)
  /// ESKT_QUEUERESETED (-45): queue was reset.
  public static let queueReseted = ResultCode(-45)
  /// ESKT_EXCEEDINGMTUSIZE (-46): payload larger than MTU.
  public static let exceedingMtuSize = ResultCode(-46)
  /// ESKT_NOTHINGTOLISTEN (-47): listener has nothing to listen on (e.g. COM port missing).
  public static let nothingToListen = ResultCode(-47)
  /// ESKT_OUTDATEDVERSION (-48): version outdated.
  public static let outdatedVersion = ResultCode(-48)
  /// ESKT_INVALIDXMLTAG (-49): bad XML tag.
  public static let invalidXmlTag = ResultCode(-49)
  /// ESKT_UNABLEREGISTERFORHIDCHANGES (-50): HID change registration failed.
  public static let unableRegisterForHidChanges = ResultCode(-50)
  /// ESKT_UNABLERETRIEVEMESSAGE (-51): could not retrieve message.
  public static let unableRetrieveMessage = ResultCode(-51)
  /// ESKT_SYNTAXERROR (-52): syntax error.
  public static let syntaxError = ResultCode(-52)
  /// ESKT_UNABLEOPENFILE (-53): file open failed.
  public static let unableOpenFile = ResultCode(-53)
  /// ESKT_UNABLERETRIEVEPATH (-54): path lookup failed.
  public static let unableRetrievePath = ResultCode(-54)
  /// ESKT_UNABLECREATEDIRECTORY (-55): directory creation failed.
  public static let unableCreateDirectory = ResultCode(-55)
  /// ESKT_UNABLEDELETEFILE (-56): file delete failed.
  public static let unableDeleteFile = ResultCode(-56)
  /// ESKT_UNABLEDELETEDIRECTORY (-57): directory delete failed.
  public static let unableDeleteDirectory = ResultCode(-57)
  /// ESKT_UNABLEREADMODEMSTATUS (-60): serial modem status read failed.
  public static let unableReadModemStatus = ResultCode(-60)
  /// ESKT_UNABLEGETCLASSDEVICES (-61): device-class enumeration failed.
  public static let unableGetClassDevices = ResultCode(-61)
  /// ESKT_UNABLEGETDEVICEINTERFACE (-62): device interface lookup failed.
  public static let unableGetDeviceInterface = ResultCode(-62)
  /// ESKT_FILENOTFOUND (-63): file/device not found.
  public static let fileNotFound = ResultCode(-63)
  /// ESKT_FILEACCESSDENIED (-64): file/device access denied.
  public static let fileAccessDenied = ResultCode(-64)
  /// ESKT_UNABLEREADHIDINFO (-70): HID info read failed.
  public static let unableReadHidInfo = ResultCode(-70)
  /// ESKT_CONFLICTPROFILE (-80): (deprecated) data-editing profile conflict.
  public static let conflictProfile = ResultCode(-80)
  /// ESKT_DELETECURRENTPROFILE (-81): (deprecated) cannot delete current profile.
  public static let deleteCurrentProfile = ResultCode(-81)
  /// ESKT_UNABLEINITIALIZEDATAEDITING (-82): (deprecated) data editing init failed.
  public static let unableInitializeDataEditing = ResultCode(-82)
  /// ESKT_UNKNOWNDATAEDITINGOPERATION (-83): (deprecated) unknown data editing op.
  public static let unknownDataEditingOperation = ResultCode(-83)
  /// ESKT_INCORRECTNUMBEROFPARAMETERS (-84): wrong parameter count.
  public static let incorrectNumberOfParameters = ResultCode(-84)
  /// ESKT_INVALIDFORMAT (-85): bad format (e.g. malformed JSON).
  public static let invalidFormat = ResultCode(-85)
  /// ESKT_INVALIDVERSION (-86): bad version.
  public static let invalidVersion = ResultCode(-86)
  /// ESKT_SERVICENOTCOMMUNICATING (-87): Capture service/Companion not responding.
  public static let serviceNotCommunicating = ResultCode(-87)
  /// ESKT_LASSOIDEXPIRED (-88): Lasso id expired.
  public static let lassoIdExpired = ResultCode(-88)
  /// ESKT_LASSOIDTNOTMATCHING (-89): Lasso id mismatch. The stray T is in the SDK's own name
  /// (docs/capture-sdk.md §1); the Swift name drops it.
  public static let lassoIdNotMatching = ResultCode(-89)
  /// ESKT_LASSOIDALREADYSET (-90): device already has a Lasso id.
  public static let lassoIdAlreadySet = ResultCode(-90)
  /// Same value as `lassoIdAlreadySet`: the 2023 JSON, JS 1.3.50 and the 2021 iOS header name it so
  /// (docs/capture-sdk.md §1). ESKT_OVERLAYVIEWNOTSET (-90): SocketCam overlay view not set (older name for
  /// -90).
  public static let overlayViewNotSet = ResultCode(-90)
  /// ESKT_CANCEL (-91): operation cancelled (also: SocketCam view closed without scan).
  public static let cancel = ResultCode(-91)
  /// ESKT_EXPIRED (-92): operation/licence expired.
  public static let expired = ResultCode(-92)
  /// ESKT_INVALIDAPPINFO (-93): AppInfo (appId/developerId/appKey) rejected - the "invalid app key" error.
  public static let invalidAppInfo = ResultCode(-93)
  /// ESKT_BLEGATT (-94): BLE GATT operation failed.
  public static let bleGatt = ResultCode(-94)
  /// ESKT_FAVORITENOTEMPTY (-95): auto-discovery (favorites) in progress.
  public static let favoriteNotEmpty = ResultCode(-95)
  /// ESKT_LOCATIONPERMISSIONMISSING (-96): host location permission missing.
  public static let locationPermissionMissing = ResultCode(-96)
  /// ESKT_UNABLETOCOMPLETEOPERATION (-97): operation could not be completed.
  public static let unableToCompleteOperation = ResultCode(-97)
  /// ESKT_LOCATIONSERVICEDISABLED (-98): host location service off.
  public static let locationServiceDisabled = ResultCode(-98)
  /// ESKT_BLUETOOTHPERMISSIONMISSING (-99): host Bluetooth permission missing.
  public static let bluetoothPermissionMissing = ResultCode(-99)

  /// Every row of docs/capture-sdk.md §1 in its order (descending value). -90 appears twice: the 2026 name
  /// ESKT_LASSOIDALREADYSET first (so `name` returns it), then the older ESKT_OVERLAYVIEWNOTSET.
  public static let all: [(code: ResultCode, name: String, meaning: String)] = [
    (.lassoDisabled, "ESKT_LASSODISABLED", "warning: Lasso feature switched off"),
    (.deprecated, "ESKT_DEPRECATED", "warning: the call is deprecated"),
    (.noData, "ESKT_NODATA", "warning: nothing to return"),
    (.created, "ESKT_CREATED", "warning: object was newly created"),
    (.stillPending, "ESKT_STILLPENDING", "warning: operation still in progress"),
    (.pending, "ESKT_PENDING", "warning: operation queued/pending"),
    (.alreadyDone, "ESKT_ALREADYDONE", "warning: already done (e.g. open twice)"),
    (.waitTimeout, "ESKT_WAITTIMEOUT", "warning: a wait expired without an event"),
    (.noError, "ESKT_NOERROR", "success"),
    (.testFailed, "ESKT_TESTFAILED", "a self-test failed"),
    (.notEnoughMemory, "ESKT_NOTENOUGHMEMORY", "out of memory"),
    (.unableCreateLock, "ESKT_UNABLECREATELOCK", "lock creation failed"),
    (.unableLock, "ESKT_UNABLELOCK", "could not take a lock"),
    (.unableUnlock, "ESKT_UNABLEUNLOCK", "could not release a lock"),
    (.listEmpty, "ESKT_LISTEMPTY", "list is empty, nothing to remove"),
    (.unableCreateEvent, "ESKT_UNABLECREATEEVENT", "event object creation failed"),
    (.unableSetEvent, "ESKT_UNABLESETEVENT", "could not signal an event"),
    (.unableResetEvent, "ESKT_UNABLERESETEVENT", "could not reset an event"),
    (.eventNotCreated, "ESKT_EVENTNOTCREATED", "event object does not exist"),
    (.invalidHandle, "ESKT_INVALIDHANDLE", "bad client/device handle"),
    (.unableCreateThread, "ESKT_UNABLECREATETHREAD", "thread creation failed"),
    (.threadAlreadyCreated, "ESKT_THREADALREADYCREATED", "thread exists already"),
    (.threadStillRunning, "ESKT_THREADSTILLRUNNING", "thread has not stopped"),
    (.notSupported, "ESKT_NOTSUPPORTED", "operation/property not supported (by device or host)"),
    (
      .pendingOperationNotCompleted, "ESKT_PENDINGOPERATIONNOTCOMPLETED",
      "a previous operation is still running"
    ),
    (.notFound, "ESKT_NOTFOUND", "item not found"),
    (.invalidParameter, "ESKT_INVALIDPARAMETER", "bad argument"),
    (.notInitialized, "ESKT_NOTINITIALIZED", "object used before being opened/initialised"),
    (.timeoutOutOfRange, "ESKT_TIMEOUTOUTOFRANGE", "timeout argument out of range"),
    (.unableInitialize, "ESKT_UNABLEINITIALIZE", "initialisation failed"),
    (.unableDeinitialize, "ESKT_UNABLEDEINITIALIZE", "de-initialisation/close failed"),
    (.unknownConfiguration, "ESKT_UNKNOWNCONFIGURATION", "unknown configuration item"),
    (.invalidConfiguration, "ESKT_INVALIDCONFIGURATION", "configuration value invalid"),
    (.alreadyExisting, "ESKT_ALREADYEXISTING", "item already exists"),
    (.bufferTooSmall, "ESKT_BUFFERTOOSMALL", "caller buffer too small"),
    (.unableOpenDevice, "ESKT_UNABLEOPENDEVICE", "device open failed"),
    (.unableConfigureDevice, "ESKT_UNABLECONFIGUREDEVICE", "device configuration failed"),
    (.unableConvertString, "ESKT_UNABLECONVERTSTRING", "string conversion failed"),
    (.unableCopyString, "ESKT_UNABLECOPYSTRING", "string copy failed"),
    (.deviceNotOpen, "ESKT_DEVICENOTOPEN", "device is not open"),
    (.notAvailable, "ESKT_NOTAVAILABLE", "item not available"),
    (.unableWriteFile, "ESKT_UNABLEWRITEFILE", "file write failed"),
    (.unableReadFile, "ESKT_UNABLEREADFILE", "file read failed"),
    (.waitFailed, "ESKT_WAITFAILED", "wait primitive failed"),
    (.invalidChecksum, "ESKT_INVALIDCHECKSUM", "checksum mismatch"),
    (.commandDenied, "ESKT_COMMANDDENIED", "device refused the command"),
    (.communicationError, "ESKT_COMMUNICATIONERROR", "transport/communication failure"),
    (.receiveUnexpectedCommand, "ESKT_RECEIVEUNEXPECTEDCOMMAND", "unexpected command received"),
    (.unableCreateGuid, "ESKT_UNABLECREATEGUID", "GUID generation failed"),
    (.invalidValue, "ESKT_INVALIDVALUE", "value invalid"),
    (.requestTimedOut, "ESKT_REQUESTTIMEDOUT", "request timed out (no reply)"),
    (.invalidOperation, "ESKT_INVALIDOPERATION", "operation not valid in this state"),
    (.wrongProtocol, "ESKT_WRONGPROTOCOL", "wrong protocol"),
    (.queueReseted, "ESKT_QUEUERESETED", "queue was reset"),
    (.exceedingMtuSize, "ESKT_EXCEEDINGMTUSIZE", "payload larger than MTU"),
    (.nothingToListen, "ESKT_NOTHINGTOLISTEN", "listener has nothing to listen on (e.g. COM port missing)"),
    (.outdatedVersion, "ESKT_OUTDATEDVERSION", "version outdated"),
    (.invalidXmlTag, "ESKT_INVALIDXMLTAG", "bad XML tag"),
    (.unableRegisterForHidChanges, "ESKT_UNABLEREGISTERFORHIDCHANGES", "HID change registration failed"),
    (.unableRetrieveMessage, "ESKT_UNABLERETRIEVEMESSAGE", "could not retrieve message"),
    (.syntaxError, "ESKT_SYNTAXERROR", "syntax error"),
    (.unableOpenFile, "ESKT_UNABLEOPENFILE", "file open failed"),
    (.unableRetrievePath, "ESKT_UNABLERETRIEVEPATH", "path lookup failed"),
    (.unableCreateDirectory, "ESKT_UNABLECREATEDIRECTORY", "directory creation failed"),
    (.unableDeleteFile, "ESKT_UNABLEDELETEFILE", "file delete failed"),
    (.unableDeleteDirectory, "ESKT_UNABLEDELETEDIRECTORY", "directory delete failed"),
    (.unableReadModemStatus, "ESKT_UNABLEREADMODEMSTATUS", "serial modem status read failed"),
    (.unableGetClassDevices, "ESKT_UNABLEGETCLASSDEVICES", "device-class enumeration failed"),
    (.unableGetDeviceInterface, "ESKT_UNABLEGETDEVICEINTERFACE", "device interface lookup failed"),
    (.fileNotFound, "ESKT_FILENOTFOUND", "file/device not found"),
    (.fileAccessDenied, "ESKT_FILEACCESSDENIED", "file/device access denied"),
    (.unableReadHidInfo, "ESKT_UNABLEREADHIDINFO", "HID info read failed"),
    (.conflictProfile, "ESKT_CONFLICTPROFILE", "(deprecated) data-editing profile conflict"),
    (.deleteCurrentProfile, "ESKT_DELETECURRENTPROFILE", "(deprecated) cannot delete current profile"),
    (
      .unableInitializeDataEditing, "ESKT_UNABLEINITIALIZEDATAEDITING",
      "(deprecated) data editing init failed"
    ),
    (
      .unknownDataEditingOperation, "ESKT_UNKNOWNDATAEDITINGOPERATION", "(deprecated) unknown data editing op"
    ),
    (.incorrectNumberOfParameters, "ESKT_INCORRECTNUMBEROFPARAMETERS", "wrong parameter count"),
    (.invalidFormat, "ESKT_INVALIDFORMAT", "bad format (e.g. malformed JSON)"),
    (.invalidVersion, "ESKT_INVALIDVERSION", "bad version"),
    (.serviceNotCommunicating, "ESKT_SERVICENOTCOMMUNICATING", "Capture service/Companion not responding"),
    (.lassoIdExpired, "ESKT_LASSOIDEXPIRED", "Lasso id expired"),
    (.lassoIdNotMatching, "ESKT_LASSOIDTNOTMATCHING", "Lasso id mismatch"),
    (.lassoIdAlreadySet, "ESKT_LASSOIDALREADYSET", "device already has a Lasso id"),
    (.overlayViewNotSet, "ESKT_OVERLAYVIEWNOTSET", "SocketCam overlay view not set (older name for -90)"),
    (.cancel, "ESKT_CANCEL", "operation cancelled (also: SocketCam view closed without scan)"),
    (.expired, "ESKT_EXPIRED", "operation/licence expired"),
    (
      .invalidAppInfo, "ESKT_INVALIDAPPINFO",
      "AppInfo (appId/developerId/appKey) rejected - the \"invalid app key\" error"
    ),
    (.bleGatt, "ESKT_BLEGATT", "BLE GATT operation failed"),
    (.favoriteNotEmpty, "ESKT_FAVORITENOTEMPTY", "auto-discovery (favorites) in progress"),
    (.locationPermissionMissing, "ESKT_LOCATIONPERMISSIONMISSING", "host location permission missing"),
    (.unableToCompleteOperation, "ESKT_UNABLETOCOMPLETEOPERATION", "operation could not be completed"),
    (.locationServiceDisabled, "ESKT_LOCATIONSERVICEDISABLED", "host location service off"),
    (.bluetoothPermissionMissing, "ESKT_BLUETOOTHPERMISSIONMISSING", "host Bluetooth permission missing"),
  ]

  static let table: [Int32: (name: String, meaning: String)] = {
    var t: [Int32: (name: String, meaning: String)] = [:]
    for entry in all where t[entry.code.rawValue] == nil {
      t[entry.code.rawValue] = (entry.name, entry.meaning)
    }
    return t
  }()
}
