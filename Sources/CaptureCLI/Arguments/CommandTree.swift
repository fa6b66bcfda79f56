// The command line contract (docs/architecture.md §1). Names here are published: never rename one.

import CaptureCore

enum CommandTree {
  static let programName = "capture"

  static let globalOptions: [OptionSpec] = [
    OptionSpec(long: "json", help: "Print JSON: one document per command, JSON Lines for streams."),
    OptionSpec(long: "quiet", short: "q", help: "Print only results and errors."),
    OptionSpec(long: "verbose", short: "v", help: "Also print progress and non-data events on stderr."),
    OptionSpec(
      long: "timeout", valueName: "DUR", kind: .duration,
      help:
        "Give up after DUR (e.g. 500ms, 10s, 2m); exit 42 when it runs out (discover searches for DUR and exits 0)."
    ),
    OptionSpec(
      long: "adapter", valueName: "hciN", kind: .adapter, help: "Use this Bluetooth adapter (default: hci0)."),
    OptionSpec(
      long: "no-color",
      help:
        "Never colour the capture: prefix of errors and warnings (a non-empty NO_COLOR does the same). Colour and aligned columns are only ever written to a terminal; pipes and files always get plain lines."
    ),
    OptionSpec(long: "help", short: "h", help: "Show help for capture or a command."),
    OptionSpec(long: "version", help: "Print the version of capture."),
  ]

  /// SocketCam frame sources (docs/architecture.md §1 SOURCE).
  static let sourceOptions: [OptionSpec] = [
    OptionSpec(
      long: "image", valueName: "FILE", kind: .file,
      help: "Decode this image (PNG, JPEG, PGM/PPM); repeatable; \"-\" reads one image from stdin.",
      isRepeatable: true),
    OptionSpec(
      long: "dir", valueName: "DIR", kind: .directory,
      help: "Decode every image in DIR in name order; other files are skipped with a warning.",
      isRepeatable: true),
    OptionSpec(
      long: "camera", valueName: "DEV", kind: .file,
      help:
        "Decode frames from a V4L2 camera, e.g. /dev/video0 (capture list --cameras names them). The pixel format is the cheapest to turn into gray that the camera offers (a luma plane, then packed YUV, then RGB, then MJPEG). A code in view is reported once, and again only after 3 decoded frames spanning 1 s went without it. A camera that is missing, not a video capture device, or busy (in use by another program) exits 32; one removed while listen reads it prints deviceRemoval, is waited for, and prints deviceArrival when it is back (trigger and serve: error 32, camera removed)."
    ),
    OptionSpec(
      long: "camera-format", valueName: "FOURCC", kind: .choice(FrameSourceItem.cameraFormats),
      help:
        "Use this pixel format of the --camera instead of the cheapest: its V4L2 fourcc, one of "
        + FrameSourceItem.cameraFormats.joined(separator: ", ")
        + ". An unknown one is a usage error (18); a camera that does not offer it exits 32 naming the formats it offers."
    ),
  ]

  static let timeoutOption = OptionSpec(
    long: "timeout", valueName: "DUR", kind: .duration, help: "Give up after DUR; exit 42 when it runs out.")

  /// Fleets (docs/fleet.md): every event to an MQTT broker through an on-disk spool, and remote
  /// commands; the same options on listen and serve.
  static let mqttOptions: [OptionSpec] = [
    OptionSpec(
      long: "mqtt", valueName: "URL",
      help:
        "Publish every event to the MQTT broker at URL, mqtt://[USER@]HOST[:PORT]/PREFIX or mqtts://... (TLS; ports 1883 and 8883 by default), on PREFIX/HOST/events/DEVICE/EVENT with QoS 1, through an on-disk spool (nothing is lost while the broker is away); a password in the URL is refused."
    ),
    OptionSpec(
      long: "mqtt-ca", valueName: "FILE", kind: .file,
      help: "With mqtts://: verify the broker with this CA certificate (PEM) instead of the system's."),
    OptionSpec(
      long: "mqtt-cert", valueName: "FILE", kind: .file,
      help: "With mqtts://: the client certificate (PEM) to present; with --mqtt-key."),
    OptionSpec(
      long: "mqtt-key", valueName: "FILE", kind: .file,
      help: "With mqtts://: the client certificate's key (PEM)."),
    OptionSpec(
      long: "mqtt-password-file", valueName: "FILE", kind: .file,
      help:
        "The broker password for the URL's USER: the first line of FILE (keep it mode 0600; a warning otherwise)."
    ),
    OptionSpec(
      long: "mqtt-host-id", valueName: "NAME",
      help:
        "This host's topic level and MQTT client id (letters, digits, -, _ and .); default the contents of /etc/machine-id."
    ),
    OptionSpec(
      long: "mqtt-spool-max", valueName: "N", kind: .count,
      help:
        "Keep at most N events waiting for the broker (default 100000); when full, new codes are refused (an error event, a bad beep) and nothing spooled is dropped."
    ),
    OptionSpec(
      long: "confirm-delivery", valueName: "WHEN", kind: .choice(["spool", "broker"]),
      help:
        "With --mqtt: give a scanner its good beep (data confirmation) only once its code is fsynced in the spool (spool) or acknowledged by the broker (broker), a bad one when it is refused."
    ),
    OptionSpec(
      long: "mqtt-commands",
      help:
        "Run requests from PREFIX/HOST/commands (list, get, set, trigger; --mqtt-commands all adds connect and remove) and reply on PREFIX/HOST/replies/ID."
    ),
    OptionSpec(
      long: "mqtt-command-timeout", valueName: "DUR", kind: .duration,
      help:
        "With --mqtt-commands: answer a remote command that has not ended DUR after its request arrived (default 60s) with ESKT_REQUESTTIMEDOUT (exit 42) and stop it. At most 4 run at once and 16 wait; a request past those is answered ESKT_PENDINGOPERATIONNOTCOMPLETED (exit 16) at once."
    ),
  ]

  /// What listen and serve both take, declared once, in this order after each one's own options: the
  /// keymap of hid: scanners, SocketCam's sources and the fleet's options (both run the same engine
  /// with the same devices; EngineRun).
  static let engineOptions: [OptionSpec] = [keymapOption] + sourceOptions + mqttOptions

  /// Keyboard-wedge scanners type key positions for the layout they were set up for.
  static let keymapOption = OptionSpec(
    long: "keymap", valueName: "LAYOUT", kind: .choice(["us", "de", "fr", "uk"]),
    help: "The keyboard layout hid: scanners type for: us (default), de, fr or uk.")

  static let deviceOperand = OperandSpec(
    name: "DEVICE", kind: .device,
    help:
      "socketcam, a Bluetooth address, a remembered device's id, alias or friendly name (looked up in that order), tcp://HOST[:PORT], serial:/dev/PATH[?baud=N] or hid:/dev/input/eventN[?keymap=de&timeout=100ms] (hid:auto finds a scanner)."
  )

  /// get and set also reach the device manager (docs/capture-sdk.md §2.2 scope DeviceManager), home of the
  /// Favorite setting (§7.16).
  static let propertyDeviceOperand = OperandSpec(
    name: "DEVICE", kind: .device,
    help: deviceOperand.help + " manager is the device manager (its favorite setting)."
  )

  static let discover = CommandSpec(
    name: "discover", abstract: "Discover nearby scanners and readers (a stream of devices found).",
    synopsis: ["[--le | --classic] [--name GLOB] [--timeout DUR] [--all]"],
    discussion:
      "Streams one deviceDiscovered event per device as it is found and a discoveryEnd event when the timeout (default 10s) runs out; a search that ran its whole window succeeded, so it exits 0, whether or not a device was found. Only Socket Mobile devices are shown unless --all is given. A Bluetooth Classic scanner is recognised by its name (Socket MODEL [xxxxxx]) or by the SDP service class A1220169-E854-473E-9CB5-873ACBDF1F13 (from bluetoothd, or an SDP search per device without it); its event says which in recognizedBy.",
    options: [
      OptionSpec(long: "le", help: "Bluetooth Low Energy devices only."),
      OptionSpec(long: "classic", help: "Bluetooth Classic devices only."),
      OptionSpec(
        long: "name", valueName: "GLOB", help: "Only devices whose name matches the shell pattern GLOB."),
      OptionSpec(
        long: "timeout", valueName: "DUR", kind: .duration,
        help:
          "Search for DUR (default 10s). The end of the search is its normal end: discoveryEnd, exit 0, whether or not a device was found."
      ),
      OptionSpec(long: "all", help: "Show every device found, not only Socket Mobile ones."),
    ],
    examples: [("capture discover --le --timeout 5s", "List BLE scanners found within five seconds.")])

  static let connect = CommandSpec(
    name: "connect", abstract: "Connect a device, remember it and print its arrival.",
    synopsis: ["DEVICE [--pair] [--alias NAME]"],
    discussion:
      "Connects DEVICE, pairs it when its profile needs bonding or when --pair is given, remembers it in the state file and prints a deviceArrival event. For socketcam, enables SocketCam. With --classic, a Bluetooth Classic scanner in SPP acceptor mode is connected over RFCOMM (its serial port channel found by SDP) and remembered as classic; with --classic --pair, bluetoothd first pairs and trusts it (running a BR/EDR discovery when it does not know the address), which needs bluetoothd. --show-pairing-code (no DEVICE needed) prints the SPP initiator command barcodes for this host's adapter; a scanner that reads one connects to this host, where listen --accept takes it.",
    operands: [deviceOperand],
    options: [
      OptionSpec(long: "pair", help: "Pair (bond) with the device before connecting."),
      OptionSpec(
        long: "alias", valueName: "NAME",
        help:
          "Remember the device under NAME. An alias names one device: one equal to another remembered device's id, alias or friendly name is refused (18)."
      ),
      OptionSpec(
        long: "classic",
        help:
          "Bluetooth Classic: connect over RFCOMM to a scanner in SPP acceptor mode (channel found by SDP)."),
      OptionSpec(
        long: "show-pairing-code",
        help:
          "Print the command barcode texts (1D and 2D) that make a Classic scanner connect to this host; then run listen --accept."
      ),
    ],
    examples: [
      ("capture connect socketcam", "Enable the built-in SocketCam scanner."),
      ("capture connect AA:BB:CC:DD:EE:FF --classic", "Connect a Classic scanner in SPP acceptor mode."),
      (
        "capture connect AA:BB:CC:DD:EE:FF --classic --pair",
        "Pair a Classic scanner through bluetoothd, then connect it."
      ),
    ])

  static let remove = CommandSpec(
    name: "remove", abstract: "Disconnect a device, unpair it and forget it.",
    synopsis: ["DEVICE"], operands: [deviceOperand],
    examples: [("capture remove AA:BB:CC:DD:EE:FF", "Forget a Bluetooth scanner.")])

  static let list = CommandSpec(
    // The synopsis stays bare: `usage: capture list` is published (scripts and tests match it); --hid
    // shows under OPTIONS.
    name: "list", abstract: "List remembered and connected devices.", synopsis: [""],
    discussion:
      "Prints one device per line: id, name, type name and state. SocketCam is always listed. A favorite setting (set manager favorite) is noted on stderr; with --json it is the favorite key beside devices (\"\" when off). With --hid, lists the input devices in /dev/input instead: path, vendor:product, name and whether the name looks like a barcode scanner (the ones hid:auto picks from). With --cameras, lists the cameras instead: each /dev/video* node that captures video (single- or multi-planar; a webcam's metadata node and an output node are not cameras) as path, driver, name and the pixel formats it offers, comma separated (--json: cameras, each with path, driver, card and formats); a node this user may not open is named in a warning.",
    options: [
      OptionSpec(long: "hid", help: "List input devices (keyboard-wedge scanner candidates) instead."),
      OptionSpec(
        long: "cameras", help: "List V4L2 cameras (what --camera takes) and their pixel formats instead."),
    ],
    examples: [
      ("capture --json list", "The device list as one JSON document."),
      ("capture list --hid", "Which /dev/input/eventN is the scanner?"),
      ("capture list --cameras", "Which /dev/videoN is a camera, and in which formats?"),
    ])

  static let trigger = CommandSpec(
    name: "trigger", abstract: "Start or stop a read, or enable or disable the trigger.",
    synopsis: ["DEVICE start|stop|continuous|enable|disable [--wait] [SOURCE]"],
    discussion:
      "For socketcam, start decodes every frame of SOURCE and prints every code found, one per line (JSON: one decodedData object per line). A code's plain line is its text with line feed, carriage return, tab and the backslash written \\n, \\r, \\t and \\\\, and any other control character or byte that is not UTF-8 as \\xHH, so one code is always exactly one line; --json keeps the exact text and bytes. It exits 17 when no code was found, 34 or 63 for an unreadable or missing image (naming the file) after going on with the rest of the batch.",
    operands: [
      deviceOperand,
      OperandSpec(
        name: "ACTION", kind: .choice(["start", "stop", "continuous", "enable", "disable"]),
        help: "start, stop, continuous, enable or disable."),
    ],
    options: [
      OptionSpec(long: "wait", help: "Wait for the read to finish (a decoded code or the timeout)."),
      timeoutOption,
      keymapOption,
    ] + sourceOptions,
    examples: [
      ("capture trigger socketcam start --image label.png", "Print every barcode in label.png."),
      ("capture --json trigger socketcam start --dir scans/", "Decode a directory of images as JSON Lines."),
    ])

  static let get = CommandSpec(
    name: "get", abstract: "Read device properties.",
    synopsis: ["DEVICE PROPERTY...", "DEVICE --all", "--list"],
    discussion:
      "PROPERTY is the CaptureSDK property in kebab-case without the Device suffix (friendly-name, battery-level, data-source, ...) or its numeric id (0x0001010B). data-source takes a data source next (qr-code, QRCode and 38 are one); without one, or with a group (all, 1d, 2d, nfc, see set), it lists every data source of the device (of the group) that it supports, one NAME STATUS line each in SDK id order (with --json, one data-source object each in properties). A property the device does not support exits 15; --all leaves such properties out of the profile, with one note on stderr naming them. Plain output is what a script needs and, for a property that can also be set, what set takes back: capture set DEVICE PROPERTY \"$(capture get DEVICE PROPERTY)\" is accepted and changes nothing. A value the SDK names prints as the name alone (enable, not 0 (enable); battery-level as 73%), a data source as enable or disable, a string as it is, bytes as hex pairs (01 02 FF), a Bluetooth address as AA:BB:CC:DD:EE:FF, a version as 1.2.3.4 and its build date, device-type as the SDK type name or, for a device outside the SDK's type table, its own model (a DataMan's DEVICE.TYPE such as DM8072, a keyboard wedge's input device name, a serial tty's USB product); --json keeps the SDK value and its valueName, and device-type adds model, as in every device object. Several properties print one PROPERTY<TAB>VALUE line each (aligned on a terminal). On a Cognex DataMan, dmcc:PARAM.NAME reads any DMCC parameter. DEVICE manager is the device manager: get manager favorite prints the auto-connect favourites (\"*\", identifiers separated by ;, or an empty line when off).",
    operands: [
      propertyDeviceOperand,
      OperandSpec(
        name: "PROPERTY", kind: .property, help: "Property name or id.", isOptional: true, isRepeating: true),
    ],
    options: [
      OptionSpec(
        long: "all", help: "Read every property the device supports (a provisioning profile with --json)."),
      OptionSpec(
        long: "list", help: "List the properties (of DEVICE, or all known ones) with id, types and access."),
    ],
    examples: [
      ("capture get socketcam friendly-name", "Print the friendly name."),
      ("capture get socketcam data-source qr-code", "Is QR Code decoding enabled?"),
      ("capture get socketcam data-source", "Every data source and its status."),
      ("capture --json get socketcam --all > profile.json", "Save a profile."),
      ("capture get manager favorite", "Which devices are connected automatically?"),
    ])

  static let set = CommandSpec(
    name: "set", abstract: "Write device properties.",
    synopsis: ["DEVICE PROPERTY VALUE...", "DEVICE --from FILE [--dry-run]"],
    discussion:
      "Values are typed by the property: numbers, names of enum values, strings, comma lists of flags. data-source takes NAME STATUS pairs up to the next property name, applied in order (the last pair naming a source wins; each source is written once): NAME is a data source or a group of those the device supports, STATUS enable or disable. The groups: all (every symbology and NFC tag type), 1d (linear: the EAN/UPC family, Bookland EAN, Code 11, 39, 93, 128, GS1-128, Codabar, the 2 of 5 codes, GS1 DataBar, ISBT 128, MSI, Plessey, Telepen, TLC 39), 2d (Aztec, Codablock, DataMatrix, Direct Part Marking, Dot Code, Han Xin, MaxiCode, PDF417, MicroPDF417, QR Code, Micro QR Code, GS1 composites), nfc (the NFC/RFID tag types); postal codes and Digimarc are in all only. An unknown name is a usage error before anything is written. On a Cognex DataMan, dmcc:PARAM.NAME VALUE sets any DMCC parameter. --from applies a profile written by `capture --json get DEVICE --all`, writing only the properties that differ. The whole profile is validated first, with --dry-run as without: each entry's property and value (a friendly-name is 1 to 31 UTF-8 bytes without control characters), then the device (it can write the property, the current value reads); any problem rejects the profile with nothing written. set manager favorite VALUE sets the device manager's auto-connect favourites (the CaptureSDK Favorite property): \"*\" connects any Socket Mobile device found, a list of Bluetooth addresses or tcp://, serial: or hid: devices separated by ; connects those, and \"\" turns auto-connect off; the setting is kept in the state file.",
    operands: [
      propertyDeviceOperand,
      OperandSpec(
        name: "PROPERTY VALUE", kind: .property, help: "Property and value pairs.", isOptional: true,
        isRepeating: true),
    ],
    options: [
      OptionSpec(
        long: "from", valueName: "FILE", kind: .file, help: "Apply the profile in FILE (\"-\" = stdin)."),
      OptionSpec(long: "dry-run", help: "With --from: show what would change and write nothing."),
    ],
    examples: [
      ("capture set socketcam data-source ean13 disable", "Stop SocketCam decoding EAN-13."),
      ("capture set socketcam data-source all disable qr-code enable", "Only QR Code, nothing else."),
      ("capture set socketcam friendly-name \"Dock 4\"", "Rename the device."),
      ("capture set manager favorite \"*\"", "Connect any Socket Mobile device found."),
      ("capture set manager favorite \"AA:BB:CC:DD:EE:FF;tcp://10.0.0.5\"", "Connect these two devices."),
    ])

  static let listen = CommandSpec(
    name: "listen", abstract: "Stream events: decoded data, arrivals, removals, battery.",
    synopsis: ["[DEVICE...] [--count N] [--timeout DUR] [--events LIST] [--confirm CMD] [SOURCE]"],
    discussion:
      "Prints each decoded barcode as its text alone on a line (JSON Lines with --json, flushed per event). A code's plain line is its text with line feed, carriage return, tab and the backslash written \\n, \\r, \\t and \\\\, and any other control character or byte that is not UTF-8 as \\xHH, so one code is always exactly one line; --json keeps the exact text and bytes. Stops after --count decoded codes, when --timeout runs out (exit 42), when a finite SOURCE is exhausted (exit 0, or 17 if it held no barcode), or on SIGINT/SIGTERM (exit 0 after flushing). Bytes a serial or Bluetooth SPP scanner sent that were not a barcode (line noise) are an undecodedData event (their bytes in base64, at most 4096 per event) and one stderr line with the byte count and the first bytes; they do not change the exit status. A SOURCE without DEVICE means socketcam. A --camera removed while it is read prints deviceRemoval, is looked for every 250 ms, and prints deviceArrival and goes on once it is back, as a serial or input device node is; one that cannot be opened at the start (missing, busy, no capture device: 32) ends listen. Without DEVICE, listen runs as a service over every remembered device and the favorites (set manager favorite): a device that is absent or cannot be opened is tried again in the background (0.25 s doubling to 5 s, one warning per outage) and arrives when it comes; one that can never open (a bad entry, permission denied) is reported once and skipped; favorite * connects and remembers any Socket Mobile device Bluetooth discovery finds; SIGHUP re-reads the state file, starting new devices and removing forgotten ones. The batteryLevel, power and buttons events need the device's notifications setting: listen reads it and sets it only when a wanted bit is off (BLE: battery notifications on 0x2A19, no write when another client already has them on). A device that cannot report an event kind asked for with --events gets a warning; when no device can report any of them, listen exits 15. With --output FILE the same lines are appended to FILE instead, one write per event, and FILE is opened again when it was renamed or removed (logrotate create or nocreate; copytruncate works too); a FILE that cannot be opened exits 63 or 64, and a failed write (a full disk) stops listen with exit 33. With --confirm-stdin capture is the host's co-process: each decoded code goes to stdout as one line (its plain line; its JSON event with --json) and capture reads one line back on stdin, good or bad (any case, spaces ignored). Anything else is bad with a warning, no answer within --confirm-timeout is bad, and the end of stdin makes that code and every later one bad. The next code waits for the verdict on the previous one. Nothing else goes to stdout then (with --json, apart from a final error object): the event stream, each code with its verdict (JSON: confirmation and confirmed; plain: good codes only), goes to --output FILE when one is given. Exit status: 0 after SIGINT/SIGTERM, whatever came before; otherwise the code of the first error any device reported or the stream met (a failed write, a device the service cannot open and gave up on while it went on listening to the others); otherwise 0 when --count was reached or a finite SOURCE ended (17 when it held no barcode), and 42 when --timeout ran out first. Serial line noise is reported but is not an error and does not change the status. With --mqtt URL (fleets) every event is also appended to a spool under the state directory ($XDG_STATE_HOME/capture/spool/HOST, fsynced in batches) and published to the broker with QoS 1, leaving the spool only on the broker's acknowledgement; after a broker outage, a lost network or a restart the spool is published again in order. Topics (never renamed): PREFIX/HOST/status, retained, {\"state\":\"online\",\"host\",\"version\",\"since\"} on connect and {\"state\":\"offline\"} as the Last Will and on a clean stop; PREFIX/HOST/devices, retained, {\"devices\":[...]} the devices open now; PREFIX/HOST/events/DEVICE/EVENT, the --json event object plus host and eventId (unique, the same on every republish: consumers deduplicate on it), DEVICE the device id with % / + # written %25 %2F %2B %23; with --mqtt-commands, requests {\"id\",\"argv\"} on PREFIX/HOST/commands and replies {\"id\",\"exit\",...} on PREFIX/HOST/replies/ID. HOST is --mqtt-host-id or /etc/machine-id. A broker that cannot be reached is retried forever (one warning per outage); one that refuses the user name or password ends the command with exit 37 (ESKT_COMMANDDENIED).",
    operands: [
      OperandSpec(
        name: "DEVICE", kind: .device, help: "Devices to listen to.", isOptional: true, isRepeating: true)
    ],
    options: [
      OptionSpec(long: "count", valueName: "N", kind: .count, help: "Stop after N decoded codes."),
      timeoutOption,
      OptionSpec(
        long: "events", valueName: "LIST", kind: .eventList,
        help:
          "Only these event kinds, comma separated (decodedData, undecodedData, deviceArrival, deviceRemoval, batteryLevel, power, buttons, error)."
      ),
      OptionSpec(
        long: "confirm", valueName: "CMD", kind: .command,
        help:
          "Run CMD for each decoded code (data on stdin, the event as JSON in CAPTURE_EVENT); exit 0 confirms it as good, anything else as bad; the device is told when it can be (data-confirmation); plain output passes good codes only."
      ),
      OptionSpec(
        long: "confirm-stdin",
        help:
          "Write each decoded code to stdout and read the host's verdict, a line good or bad, on stdin (a co-process); the device is told as with --confirm."
      ),
      OptionSpec(
        long: "confirm-timeout", valueName: "DUR", kind: .duration,
        help:
          "A --confirm command running longer than DUR (default 10s) is killed, and a --confirm-stdin answer not given within DUR is not waited for: the code is bad."
      ),
      OptionSpec(
        long: "output", valueName: "FILE", kind: .file,
        help:
          "Append the event stream to FILE instead of stdout (created 0600; reopened after log rotation; \"-\" = stdout)."
      ),
      OptionSpec(
        long: "accept",
        help:
          "Also wait for a Bluetooth Classic scanner in SPP initiator mode to connect to this host (see connect --show-pairing-code)."
      ),
      OptionSpec(
        long: "channel", valueName: "N", kind: .count,
        help: "With --accept: the RFCOMM channel (1-30, default 1)."),
    ] + engineOptions,
    examples: [
      ("capture listen socketcam --dir samples/", "Decode the sample images as a stream."),
      ("capture listen --json --count 1 --camera /dev/video0", "Wait for one code from a webcam."),
      ("capture listen --keymap de hid:auto", "Read a keyboard-wedge scanner set up for a German layout."),
      (
        "capture listen --json --output ~/.local/state/capture/events.jsonl",
        "Serve every remembered device, appending JSON Lines to a log."
      ),
      ("coproc capture listen --confirm-stdin hid:auto", "Check each code in the shell before accepting it."),
      (
        "capture listen --mqtt mqtts://till-3@broker.example/acme --mqtt-password-file ~/.config/capture/mqtt-password --mqtt-host-id till-3 --confirm-delivery spool",
        "Publish every scan of every remembered device to a fleet's broker; a scanner beeps good once its code is on disk."
      ),
    ])

  static let serve = CommandSpec(
    name: "serve", abstract: "Serve CaptureJS web apps: the Capture service on 127.0.0.1:18481.",
    synopsis: ["[DEVICE...] [--listen HOST:PORT] [--allow-origin ORIGIN]... [SOURCE] [--output FILE]"],
    discussion:
      "Runs the Capture service that Socket Mobile's CaptureJS web SDK talks to, so an unchanged CaptureJS page (a point-of-sale page, a kiosk) gets its devices and their codes on Linux: JSON-RPC 2.0 by HTTP POST on /Capture/v1/api and one WebSocket per client on / or /Capture/v1/api, methods openclient, opendevice, close, getproperty, setproperty and waitforcaptureevent (see docs/capturejs.md). Without DEVICE it serves every remembered device and the favorites exactly as listen without DEVICE does (supervised, retried in the background, favorite * connects any Socket Mobile device found); DEVICE operands add devices, opened before the service accepts connections (one that cannot be opened fails serve). A SOURCE (--camera /dev/videoN, --dir DIR, --image FILE) is what SocketCam reads when a web app enables it with SocketCamStatus (persisted as set socketcam socket-cam-status); TriggerDevice start and stop then scan as a camera scan does. With --camera the camera is opened at each start and closed when the read ends, so serve starts without it; a start whose camera cannot be opened fails with the camera's code and reason, which the app's call gets: -32 ESKT_NOTAVAILABLE when there is no such device, it is busy (in use by another program), or it is not a V4L2 capture device with a format the decoder reads (or the --camera-format one), -64 ESKT_FILEACCESSDENIED when this user may not open it, -38 ESKT_COMMUNICATIONERROR when its driver fails; no read is then pending, so the app's stop sends no -91 DecodedData. The port is bound before any device is opened, and one line on stderr says when connections are accepted. SIGHUP re-reads the state file; SIGINT or SIGTERM sends every WebSocket a close frame (1001) and exits 0. Under systemd socket activation (LISTEN_FDS, LISTEN_PID) the inherited socket is served instead of --listen (see contrib/capture-serve.socket). With --output FILE the event stream listen would print (plain lines, JSON Lines with --json) is appended to FILE as well, as listen --output does; stdout stays empty. Security, on by default: only loopback is listened on unless --listen names another address; a request whose Host is not a loopback name or address (localhost, 127.0.0.0/8, [::1]) with the served port, or the --listen host, is refused 403, which stops DNS rebinding; a browser Origin must be absent, a loopback origin (http or https on localhost, 127.x.x.x or [::1], any port) or one given with --allow-origin, else the preflight (Private Network Access included), the POST and the WebSocket upgrade are refused 403 and one stderr line (once per origin) names the origin and --allow-origin. Origin null is refused unless --allow-origin null names it: WARNING, null is what every sandboxed iframe, file:// page and data: URL of any website sends, so allowing it lets any website that embeds one use the scanners; --allow-origin * admits every scheme://host[:port] origin but never null or file://. A header the service cannot read whole gets 431, never a judgement without it; a request whose headers pass 8 KiB is closed unanswered. Allowed requests get Access-Control-Allow-Origin (the origin echoed), Vary: Origin, Access-Control-Allow-Methods: POST, OPTIONS, Access-Control-Allow-Headers: Content-Type, and Access-Control-Allow-Private-Network: true when the preflight asks for it. A request body or WebSocket message over 1 MiB is refused (413; the WebSocket is closed with 1009) and the service goes on. openclient needs appInfo: appId, developerId and appKey, three non-empty strings of at most 256 bytes each, else ESKT_INVALIDAPPINFO (-93); no signature can be checked (no verification key is public), so any three are accepted. Several clients: each openclient is a client with its own handle, a random number from 1 to 2^30-1, never reused while open; a device gets a new GUID on every connection. A client's events go to the first WebSocket that sends waitforcaptureevent for its handle, for the client's lifetime: another socket naming that handle, or a socket that already serves a client naming another, gets ESKT_INVALIDHANDLE (-11) and the first socket goes on. A WebSocket that has not sent waitforcaptureevent 10 s after it opened is closed with 1008. Clients are accounted 1 KiB each plus their appId and 256 bytes per open device handle, 16 MiB in all, and 4,096 at most: past either bound openclient frees the oldest client that never opened its WebSocket, or fails with ESKT_NOTAVAILABLE (-32), as opendevice does. 1,024 connections at most, 256 from one address: a new one closes the connection idle longest (between requests, or a WebSocket not serving a client) to take its place. Idle HTTP connections close after 10 s. A request with a body followed at once by another (HTTP pipelining, which no browser does) is refused 400 before it runs and the connection closes. With -v the HTTP library's own messages are shown as capture: serve: libwebsockets: lines. Every client gets every DeviceArrival and DeviceRemoval (on its client handle; right after waitforcaptureevent, DeviceManagerArrival when Bluetooth LE is there and the arrivals of the devices already connected); a device's DecodedData, Power, Buttons and BatteryLevel go to every client that opened that connection, on the handle opendevice gave it; an Error of a device the client has not opened goes on its client handle. A client whose WebSocket closes (the page closed or reloaded) loses its handles and nothing else; close of a client handle frees its device handles and closes its WebSocket normally (1000). A client that stops reading is dropped when the transport holds 8 MiB unsent for it: its WebSocket is closed with 1008 and the reason, its handles freed, and the devices and the other clients do not wait for it. When the service itself cannot keep up with the devices (a scanner flooding codes), the devices wait, as for listen: no reading client is dropped for the service's own pace. Every JSON-RPC reply is HTTP 200, errors included: -32700 the body is not JSON, -32600 not a request object, -32601 an unknown method; otherwise an SKT code: -11 ESKT_INVALIDHANDLE an unknown handle, -15 ESKT_NOTSUPPORTED a property the device or handle does not have, -17 ESKT_NOTFOUND opendevice of a GUID no connected device has, -18 ESKT_INVALIDPARAMETER bad params or a value of the wrong type, -31 ESKT_DEVICENOTOPEN a device handle whose device has left, -93 ESKT_INVALIDAPPINFO. Exit status: 0 after SIGINT/SIGTERM; 25 (ESKT_ALREADYEXISTING) when the --listen address is already in use, 64 when binding it is not permitted, 18 for an address that is not this machine's, each before any device is opened; a DEVICE that cannot be opened exits with its own code; 33 when a write of --output FILE fails. --mqtt and its options publish the events and take remote commands exactly as for listen (see capture listen --help).",
    operands: [
      OperandSpec(
        name: "DEVICE", kind: .device, help: "Devices to serve besides the remembered ones.",
        isOptional: true,
        isRepeating: true)
    ],
    options: [
      OptionSpec(
        long: "listen", valueName: "HOST:PORT",
        help:
          "Listen on HOST:PORT (default 127.0.0.1:18481, CaptureJS's default; HOST an IPv4 address or a name; port 0 picks a free one)."
      ),
      OptionSpec(
        long: "allow-origin", valueName: "ORIGIN",
        help:
          "Also accept web pages from ORIGIN (e.g. https://shop.example); repeatable; * accepts every scheme://host origin; null (sandboxed iframes and file:// pages of any website) only when written out.",
        isRepeatable: true),
      OptionSpec(
        long: "output", valueName: "FILE", kind: .file,
        help:
          "Append the event stream (as listen --output writes it) to FILE (created 0600; reopened after log rotation)."
      ),
    ] + engineOptions,
    examples: [
      ("capture serve", "Serve every remembered device to CaptureJS pages on this machine."),
      (
        "capture serve --allow-origin https://shop.example serial:/dev/ttyACM0",
        "Also serve a serial scanner, to pages of https://shop.example too."
      ),
      ("capture serve --camera /dev/video0", "Let web apps enable SocketCam on a webcam."),
      (
        "systemctl --user enable --now capture-serve.socket",
        "Start the service on the first request from a page."
      ),
    ])

  static let partnership = CommandSpec(
    name: "partnership", abstract: "Show, set or reset the Bluetooth partnership (bond) with a device.",
    synopsis: ["status|set|reset DEVICE [...]"],
    operands: [
      OperandSpec(name: "ACTION", kind: .choice(["status", "set", "reset"]), help: "status, set or reset."),
      deviceOperand,
    ],
    examples: [("capture partnership status AA:BB:CC:DD:EE:FF", "Is the scanner bonded to this host?")])

  /// `capture fleet` (docs/fleet.md §9): the controller of a fleet of `listen --mqtt` hosts, one more
  /// client of their broker.
  static let fleet = CommandSpec(
    name: "fleet", abstract: "See and provision every host of a fleet through its MQTT broker.",
    synopsis: [
      "hosts [--hosts GLOB] [--host ID]... --mqtt URL",
      "run [--hosts GLOB] [--host ID]... --mqtt URL -- COMMAND [ARGS...]",
      "watch [--hosts GLOB] [--host ID]... [--events LIST] [--count N] --mqtt URL",
      "apply PROFILE [--device SELECTOR] [--dry-run] [--wait DUR] [--hosts GLOB] [--host ID]... --mqtt URL",
      "status [--hosts GLOB] [--host ID]... --mqtt URL",
    ],
    discussion:
      "The other end of listen --mqtt and serve --mqtt: one more client of the broker (no server), with the same --mqtt URL, TLS and password-file options. hosts lists every host under PREFIX from the retained PREFIX/HOST/status and PREFIX/HOST/devices topics (host, online or offline, since when, its devices); the retained messages are read until a marker the controller publishes to itself comes back, bounded by --timeout (default 10s). run sends COMMAND ARGS (list, get, set, trigger; connect and remove where the host allows all) to every selected online host's PREFIX/HOST/commands with one fresh request id and prints each host's reply (HOST, exit status, the reply document; --json: one document {\"hosts\":[...],\"id\"}); a host offline or silent until --timeout is listed as such. Exit status: 0 when every selected host answered 0, else the first failing host's status in host order, else 42 when hosts did not answer. watch prints the events of the selected hosts as one stream (--json: the published event objects, with host and eventId, as JSON Lines; plain: HOST, DEVICE and the code's text or the event's name), each eventId once; --count N stops after N events (exit 0), --timeout ends it with 42. apply validates PROFILE (a file or - as set --from reads it) before anything is published, then publishes it retained as the desired state on PREFIX/HOST/desired of each selected host, with a fresh version; a host running with --mqtt-commands applies it when it connects and whenever it changes, writing only the properties that differ, and publishes the outcome retained on PREFIX/HOST/applied (a host without --mqtt-commands answers refused, 37). --device SELECTOR applies it to that device only (default: every device the host has open); --dry-run publishes nothing; --wait DUR waits for the applied reports of this version and prints them per host and device (changed, unchanged, failed). status shows the desired and applied versions per host. --hosts GLOB selects the known hosts whose id matches GLOB (fnmatch; a GLOB that matches none is exit 17, ESKT_NOTFOUND); --host ID (repeatable) names a host whether it is known or not. A broker that refuses the user or password exits 37, a TLS failure 24, a broker that cannot be reached within --timeout 42.",
    operands: [
      OperandSpec(
        name: "ACTION", kind: .choice(["hosts", "run", "watch", "apply", "status"]),
        help: "hosts, run, watch, apply or status."),
      OperandSpec(
        name: "ARGS", help: "run: the command and its arguments (after --); apply: the PROFILE.",
        isOptional: true, isRepeating: true),
    ],
    options: [
      OptionSpec(
        long: "hosts", valueName: "GLOB", help: "Only the known hosts whose id matches GLOB (*, ?, [...])."),
      OptionSpec(
        long: "host", valueName: "ID", help: "This host, known or not; repeatable.", isRepeatable: true),
      OptionSpec(
        long: "events", valueName: "LIST", kind: .eventList,
        help: "watch: only these events (comma-separated)."),
      OptionSpec(long: "count", valueName: "N", kind: .count, help: "watch: stop after N events."),
      OptionSpec(
        long: "device", valueName: "SELECTOR", kind: .device,
        help: "apply: the device of each host the profile is for (default: every device it has open)."),
      OptionSpec(long: "dry-run", help: "apply: check the profile and show the hosts; publish nothing."),
      OptionSpec(
        long: "wait", valueName: "DUR", kind: .duration,
        help: "apply: wait up to DUR for every selected host's applied report; exit 42 when one is missing."),
      OptionSpec(
        long: "mqtt", valueName: "URL",
        help:
          "The fleet's broker and topic prefix, mqtt://[USER@]HOST[:PORT]/PREFIX or mqtts://..., as the hosts' listen --mqtt; required."
      ),
    ] + mqttOptions.filter { ["mqtt-ca", "mqtt-cert", "mqtt-key", "mqtt-password-file"].contains($0.long) },
    examples: [
      ("capture fleet hosts --mqtt mqtt://broker.example/acme", "Every host and its scanners."),
      (
        "capture fleet run --hosts 'till-*' --mqtt mqtt://broker.example/acme -- get socketcam battery-level",
        "Ask every till for its battery level."
      ),
      (
        "capture fleet apply store.json --wait 30s --mqtt mqtt://broker.example/acme",
        "Provision every host, and wait for their reports."
      ),
    ])

  static let doctor = CommandSpec(
    // No operands: the bare synopsis, as list's.
    name: "doctor", abstract: "Check what stands between this host and its scanners, and say how to fix it.",
    synopsis: [""],
    discussion:
      "Prints one row per check, STATUS CHECK[ SUBJECT]: MESSAGE[; fix: COMMAND], in this order: system-bus (the D-Bus system bus is reachable), bluetoothd (org.bluez is running; its pid and version), adapter (one row per adapter: powered, rfkill soft or hard block, address; a failure for the one the commands use, --adapter or else hci0, a warning for any other), bluez-permission (this user may talk to org.bluez), kernel-bluetooth (AF_BLUETOOTH sockets exist), input (/dev/input/event*, keyboard-wedge scanners), serial (/dev/ttyUSB*, /dev/ttyACM*, /dev/rfcomm* and remembered serial: devices, read and write), video (/dev/video*) (for these three, one row per node this user may not open, or one ok row), state-file (readable, valid, mode 0600), zbar and zxing (the decoders' versions). STATUS is ok, warning or failure; a failure or warning names the command that fixes it (rfkill unblock bluetooth, sudo usermod -aG dialout \"$USER\", ...) when there is one. A check that depends on one that failed says \"not checked\". Read only: doctor never powers an adapter, never moves a corrupt state file aside, never opens a device node (only stat and access) and never starts bluetoothd. -q prints only warnings and failures; --json prints one document, {\"checks\":[{\"check\",\"code\",\"fix\",\"message\",\"status\",\"subject\"}...],\"error\",\"failures\",\"warnings\"}, with code, fix, subject and error null when there is none. Exit status: 0 when no check failed (warnings do not fail), otherwise the code of the first failure: 32 for a missing bus, bluetoothd, adapter or kernel support, 64 for a device node or state file this user may not use, 85 for a corrupt state file, 86 for one from a newer capture, 99 when the bus denies this user org.bluez; 42 for a check cut short by --timeout. Commands that fail for one of these reasons name the same cause and fix in their error.",
    examples: [
      ("capture doctor", "Check this host."),
      ("capture doctor -q", "Show only what is wrong."),
      ("capture --json doctor", "The checks as one JSON document."),
    ])

  /// Generates man pages and completions from this tree (make docs); not part of the user contract.
  static let generateDocs = CommandSpec(
    name: "__generate-docs", abstract: "Write man pages and shell completions.", synopsis: ["DIR"],
    operands: [
      OperandSpec(name: "DIR", kind: .directory, help: "Output directory (gets man/ and completions/).")
    ],
    isHidden: true)

  static let commands: [CommandSpec] = [
    discover, connect, remove, list, trigger, get, set, listen, serve, partnership, fleet, doctor,
    generateDocs,
  ]
  static var visibleCommands: [CommandSpec] { commands.filter { !$0.isHidden } }

  static func command(named name: String) -> CommandSpec? { commands.first { $0.name == name } }
}
