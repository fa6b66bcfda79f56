"""`capture serve` against the request shapes of the SDK 2.0 clients (docs/capturejs.md §3.1): each
request is transliterated from Socket Mobile's Flutter CaptureSDK, capturesdk_flutter @ 2708b9e
(`lib/capture_helper.dart`, `lib/capture_helper_device.dart`), with the file:line it comes from, and
sent the way its HTTP transport sends every call (docs/capturejs.md §2: a decimal-string id, params
`{"handle":H,"guid":null,"property":{...}}`; the reply's `result.handle` must be H and a set's reply must
carry `property`). Our own code; no client code is copied. Run: CAPTURE_BIN=.build/debug/capture
python3 -m unittest discover -s Tests/Service -p test_serve_sdk2.py -v"""
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import *  # noqa: E402,F401,F403
import serve_harness as h  # noqa: E402


def setUpModule():
    if not os.access(h.capture_bin(), os.X_OK):
        raise unittest.SkipTest(f"*** SKIPPED: no capture binary at {h.capture_bin()} (set CAPTURE_BIN)")


# Ids and values from the SDK's generated tables (docs/capture-sdk.md §1, §2.2, §3, §4).
PROP_CONFIGURATION = -2141913085
PROP_SINGLE_PARTNERSHIP = -2147221214
PROP_RESET_SINGLE_PARTNERSHIP = 292
PROP_RESET_DEVICE = 1048832
ESKT_UNKNOWNCONFIGURATION, ESKT_INVALIDCONFIGURATION, ESKT_CANCEL = -23, -24, -91
TRIGGER_START, TRIGGER_STOP = 1, 2
EV_DEVICE_MANAGER_ARRIVAL = 11


class Flutter:
    """The calls of Flutter's CaptureHelper as its HttpTransport puts them on the wire: ids "2", "3", …
    (its counter starts at 1 and the WebSocket's waitforcaptureevent is "1"), `guid` null beside the
    property (docs/capturejs.md §1.4, §2)."""

    def __init__(self, service):
        self.service = service
        self.ids = itertools.count(2)

    def call(self, method, handle, prop):
        reply = self.service.call(method, {"handle": handle, "guid": None, "property": prop}, id=str(next(self.ids)))
        if "result" in reply:
            # What Flutter's transport checks before it hands the property to the helper.
            assert reply["result"].get("handle") == handle, reply
            assert isinstance(reply["result"].get("property"), dict), reply
        return reply

    def get(self, handle, prop_id, type=T_NONE, value=None):
        # _get's defaults: type None and {} (lib/capture_helper.dart:586, lib/capture_helper_device.dart:45-49).
        return self.call("getproperty", handle, {"id": prop_id, "type": type, "value": {} if value is None else value})

    def set(self, handle, prop_id, type, value):
        return self.call("setproperty", handle, {"id": prop_id, "type": type, "value": value})


class SocketCamClientTests(AsyncTestCase):
    """A service with SocketCam reading a watched directory (`serve --dir`)."""

    def setUp(self):
        self.images, self.service = self.socketcam_dir_service()
        self.flutter = Flutter(self.service)

    async def client(self):
        return await self.event_client(self.service, path="/", wait_id="1")

    async def socketcam(self, client):
        # setSocketCamEnabled(enabled: SocketCam.enable): a Byte set on the root client
        # (lib/capture_helper.dart:214-220).
        self.assertNotIn("error", self.flutter.set(client.handle, PROP_SOCKETCAM_STATUS, T_BYTE, 0))
        arrival = await client.arrival("SocketCam", timeout=15)
        return await client.opendevice(arrival["event"]["value"]["guid"])

    async def test_configuration_symbology_selector_is_accepted_and_read_back(self):
        client = await self.client()
        # setSocketCamSymbologySelectorDisabled(disabled: true) (lib/capture_helper.dart:230-238).
        reply = self.flutter.set(client.handle, PROP_CONFIGURATION, T_STRING, "SocketCamSymbologySelector=disabled")
        self.assertEqual(reply["result"]["property"],
                         {"id": PROP_CONFIGURATION, "type": T_STRING, "value": "SocketCamSymbologySelector=disabled"})
        got = self.flutter.get(client.handle, PROP_CONFIGURATION, T_STRING, "SocketCamSymbologySelector")
        self.assertEqual(got["result"]["property"]["value"], "SocketCamSymbologySelector=disabled")
        # ... and disabled: false (lib/capture_helper.dart:231-233).
        self.assertNotIn("error", self.flutter.set(client.handle, PROP_CONFIGURATION, T_STRING,
                                                   "SocketCamSymbologySelector=enabled"))
        got = self.flutter.get(client.handle, PROP_CONFIGURATION, T_STRING, "SocketCamSymbologySelector")
        self.assertEqual(got["result"]["property"]["value"], "SocketCamSymbologySelector=enabled")
        self.assertEqual(error_code(self.flutter.set(client.handle, PROP_CONFIGURATION, T_STRING, "Nope=1")),
                         ESKT_UNKNOWNCONFIGURATION)
        self.assertEqual(error_code(self.flutter.set(client.handle, PROP_CONFIGURATION, T_STRING,
                                                     "SocketCamSymbologySelector=maybe")), ESKT_INVALIDCONFIGURATION)

    async def test_a_stopped_read_without_a_code_sends_decoded_data_with_result_cancel(self):
        client = await self.client()
        device = await self.socketcam(client)

        def is_cancel(r):
            e = r["event"]
            return r["handle"] == device and e["id"] == EV_DECODED_DATA and e.get("result") == ESKT_CANCEL

        # setTrigger(Trigger.start) then setTrigger(Trigger.stop): Byte sets on the device
        # (lib/capture_helper_device.dart:136-138).
        mark = len(client.events())
        self.assertNotIn("error", self.flutter.set(device, PROP_TRIGGER, T_BYTE, TRIGGER_START))
        self.assertNotIn("error", self.flutter.set(device, PROP_TRIGGER, T_BYTE, TRIGGER_STOP))
        cancel = await client.wait(is_cancel, start=mark, timeout=15, what="DecodedData with result -91")
        # The helper takes it as SocketCam canceled by its result (lib/capture_helper.dart:484-493);
        # CaptureJS by id 0 and empty name and data as well (docs/capturejs.md §4).
        self.assertEqual(cancel["event"]["type"], EVT_DECODED_DATA)
        self.assertEqual(cancel["event"]["value"], {"id": 0, "name": "", "data": []})

        # A read a code ended: its stop sends no cancel; the next empty read's stop does, after the code.
        mark = len(client.events())
        self.assertNotIn("error", self.flutter.set(device, PROP_TRIGGER, T_BYTE, TRIGGER_START))
        drop_image(self.images, "a.png", "SDK2-QR")
        await client.decoded(device, "SDK2-QR", timeout=15, start=mark)
        self.assertNotIn("error", self.flutter.set(device, PROP_TRIGGER, T_BYTE, TRIGGER_STOP))
        self.assertNotIn("error", self.flutter.set(device, PROP_TRIGGER, T_BYTE, TRIGGER_START))
        self.assertNotIn("error", self.flutter.set(device, PROP_TRIGGER, T_BYTE, TRIGGER_STOP))
        await client.wait(is_cancel, start=mark, timeout=15, what="the second cancel")
        kinds = [("cancel" if is_cancel(r) else "code") for r in client.events()[mark:]
                 if r["handle"] == device and r["event"]["id"] == EV_DECODED_DATA]
        self.assertEqual(kinds, ["code", "cancel"])


class BluetoothLEClientTests(AsyncTestCase):
    """A D600 on the BlueZ model (Tests/Rigs): the device-lifecycle calls of CaptureHelperDevice."""

    async def test_reset_single_partnership_deletes_the_bonds_reset_device_and_single_partnership_are_not_supported(self):
        rig, service = self.bluez_d600()
        flutter = Flutter(service)
        client = await self.event_client(service, path="/", wait_id="1")
        arrival = await client.arrival("D600", timeout=20)
        device = await client.opendevice(arrival["event"]["value"]["guid"])
        self.assertTrue(rig.ctl("GetState", D600_PATH)["Bonded"])

        # setReset(): ResetDevice, type None with {} (lib/capture_helper_device.dart:258-263). The D600 has
        # no public command for it: the SDK's "not supported by this device".
        self.assertEqual(error_code(flutter.set(device, PROP_RESET_DEVICE, T_NONE, {})), ESKT_NOTSUPPORTED)
        # SinglePartnership on the root client: get type None with {} (its value layout is not public).
        self.assertEqual(error_code(flutter.get(client.handle, PROP_SINGLE_PARTNERSHIP)), ESKT_NOTSUPPORTED)

        # ResetSinglePartnershipDevice (292, set None, docs/capture-sdk.md §2.2), sent as setReset sends
        # its None: the D600 deletes its bonds and bluetoothd forgets it, as capture partnership reset.
        mark = len(client.events())
        reply = flutter.set(device, PROP_RESET_SINGLE_PARTNERSHIP, T_NONE, {})
        self.assertEqual(reply["result"]["property"], {"id": PROP_RESET_SINGLE_PARTNERSHIP, "type": T_NONE})
        # The D600 got its delete-bonds command (config 0F, magic FE DA FA ED, docs/device-protocols.md
        # §2.6) and answered success, as the rig logs it; bluetoothd's side is the removal below (the
        # engine then connects the remembered D600 again and bonds anew, so the rig's bond state cannot
        # be caught in between).
        line = f"{D600} config 0F fedafaed -> status 00"
        self.assertTrue(wait_for_line(os.path.join(rig.dir, "mock.log"), line), f"no '{line}' in the rig's log")
        removal = await client.wait(lambda r: r["event"]["id"] == EV_DEVICE_REMOVAL, start=mark, timeout=20,
                                    what="DeviceRemoval after the reset")
        self.assertEqual(removal["event"]["value"]["guid"], arrival["event"]["value"]["guid"])


PROP_FAVORITE = 328193
PROP_UNIQUE_DEVICE_IDENTIFIER = 5308930
PROP_CONNECT_DISCOVERED = 1376771
PROP_ADD_DEVICE = -2146303981
PROP_REMOVE_DEVICE = -2146107372
EV_DEVICE_DISCOVERED, EV_DISCOVERY_END = 13, 14
BLUETOOTH_LE = 1  # BluetoothDiscoveryMode (docs/capture-sdk.md §7.15)


class DeviceManagerClientTests(AsyncTestCase):
    """CaptureHelper's SDK 2.0 device calls and the deprecated Favorite on one state (docs/capturejs.md
    §3.2), against a D600 in range that this host does not know yet."""

    async def test_add_connect_and_remove_a_device_and_favorite_agrees(self):
        rig, service = self.bluez_d600(new_d600=True)
        flutter = Flutter(service)
        client = await self.event_client(service, path="/", wait_id="1")
        manager = await client.wait(lambda r: r["event"]["id"] == EV_DEVICE_MANAGER_ARRIVAL, what="DeviceManagerArrival")
        dm = await client.opendevice(manager["event"]["value"]["guid"])

        def favorite():
            got = subprocess.run([capture_bin(), "get", "manager", "favorite"], env=service.env, capture_output=True,
                                 text=True, timeout=20)
            self.assertEqual(got.returncode, 0, got)
            return got.stdout.strip()

        # addBluetoothDevice(mode: 1): AddDevice, a Byte on the root client (lib/capture_helper.dart:247-253).
        mark = len(client.events())
        self.assertNotIn("error", flutter.set(client.handle, PROP_ADD_DEVICE, T_BYTE, BLUETOOTH_LE))
        found = await client.wait(lambda r: r["event"]["id"] == EV_DEVICE_DISCOVERED and "7EF620" in json.dumps(r["event"]),
                                  start=mark, timeout=20, what="DeviceDiscovered of the new D600")
        self.assertEqual(found["handle"], client.handle)
        discovered = found["event"]["value"]
        await client.wait(lambda r: r["event"]["id"] == EV_DISCOVERY_END, start=mark, timeout=30, what="DiscoveryEnd")

        # connectDiscoveredDevice off Android: "identifierUuid;serviceUuid" to the device manager
        # (lib/capture_helper.dart:263-272).
        mark = len(client.events())
        value = f"{discovered['identifierUuid']};{discovered['serviceUuid']}"
        self.assertNotIn("error", flutter.set(dm, PROP_CONNECT_DISCOVERED, T_STRING, value))
        arrival = await client.arrival("7EF620", timeout=20, start=mark)
        self.assertEqual(favorite(), D600_NEW)
        got = flutter.get(dm, PROP_FAVORITE)["result"]["property"]
        self.assertEqual(got, {"id": PROP_FAVORITE, "type": T_STRING, "value": D600_NEW})

        # removeBleDevice on Android: getDeviceUniqueIdentifier(guid), a get with a String on the device
        # manager (lib/capture_helper.dart:310-315), then RemoveDevice with it on the root client
        # (lib/capture_helper.dart:292-298).
        guid = arrival["event"]["value"]["guid"]
        identifier = flutter.get(dm, PROP_UNIQUE_DEVICE_IDENTIFIER, T_STRING, guid)["result"]["property"]["value"]
        self.assertEqual(identifier, D600_NEW)
        mark = len(client.events())
        self.assertNotIn("error", flutter.set(client.handle, PROP_REMOVE_DEVICE, T_STRING, identifier))
        removal = await client.wait(lambda r: r["event"]["id"] == EV_DEVICE_REMOVAL, start=mark, timeout=20,
                                    what="DeviceRemoval of the removed D600")
        self.assertEqual(removal["event"]["value"]["guid"], guid)
        self.assertEqual(favorite(), "")
        # The SDK 1.x way on the same state: Favorite "*" (setFavoriteDevices, docs/capture-sdk.md §7.16).
        self.assertNotIn("error", flutter.set(dm, PROP_FAVORITE, T_STRING, "*"))
        self.assertEqual(favorite(), "*")


EV_POWER, EV_BUTTONS, EV_BATTERY_LEVEL = 6, 7, 8  # lib/classes/gen/event_ids.dart:32-42, all kUlong
EVENT_TYPE_ULONG = 2  # CaptureEventTypes.ulong (lib/classes/gen/event_ids.dart)


def packed_battery(percent):
    """The ScanAPI packing of a BLE battery percentage (docs/capture-sdk.md §7.3): maximum 100 in byte 3,
    minimum 0 in byte 2, the level in byte 1."""
    return 100 << 24 | percent << 8


class DeviceEventClientTests(AsyncTestCase):
    """Power, Buttons and BatteryLevel reach the handle the app opened (docs/capturejs.md §4): Flutter's
    `_handleEvent` looks the device up by the event's handle in the map its `_onDeviceArrivalEvent` fills
    with the handle `opendevice` returned, and hands `event.value as int` to `onBatteryLevel`
    (lib/capture_helper.dart:402-418 and its `_onDeviceArrivalEvent`); an event on any other handle is
    dropped there."""

    async def battery_event_reaches_the_opened_handle(self, params):
        rig, service = self.bluez_d600(params)
        client = await self.event_client(service, path="/", wait_id="1")
        # The helper opens every arriving device at once (_onDeviceArrivalEvent: openDevice(info.guid)).
        arrival = await client.arrival("D600", timeout=20)
        device = await client.opendevice(arrival["event"]["value"]["guid"])
        # The level first changes once the device is open; a change to the level it already has would
        # prove nothing, so two different levels, each waited for.
        for percent in (42, 17):
            mark = len(client.events())
            rig.ctl("SetBattery", D600_PATH, percent)
            event = await client.wait(
                lambda r: r["event"]["id"] == EV_BATTERY_LEVEL and r["event"].get("value") == packed_battery(percent),
                start=mark, timeout=20, what=f"BatteryLevel {percent}% on the device handle")
            self.assertEqual(event["handle"], device)
            self.assertEqual(event["event"], {"id": EV_BATTERY_LEVEL, "type": EVENT_TYPE_ULONG,
                                              "value": packed_battery(percent)})
            # What an app shows: (value & 0xff00) >> 8 (docs/capturejs.md §3).
            self.assertEqual((event["event"]["value"] & 0xFF00) >> 8, percent)
        battery = [r for r in client.events() if r["event"]["id"] == EV_BATTERY_LEVEL]
        # Only on the opened handle, never on the client's (the helper would drop it, and a client that
        # opened nothing gets no device events).
        self.assertEqual({r["handle"] for r in battery}, {device})
        # No BLE characteristic for power state or buttons is public: neither event is invented.
        self.assertFalse([r for r in client.events() if r["event"]["id"] in (EV_POWER, EV_BUTTONS)])

        # Out of range and back: a new arrival, a new GUID, the helper opens it again; the level reaches
        # the new handle (the battery source is armed again on the new link).
        mark = len(client.events())
        rig.ctl("SetInRange", D600_PATH, "false")
        await client.wait(lambda r: r["event"]["id"] == EV_DEVICE_REMOVAL, start=mark, timeout=20,
                          what="DeviceRemoval out of range")
        rig.ctl("SetInRange", D600_PATH, "true")
        arrival = await client.arrival("D600", timeout=40, start=mark)
        again = await client.opendevice(arrival["event"]["value"]["guid"])
        mark = len(client.events())
        rig.ctl("SetBattery", D600_PATH, 64)
        event = await client.wait(lambda r: r["event"]["id"] == EV_BATTERY_LEVEL, start=mark, timeout=20,
                                  what="BatteryLevel after the device came back")
        self.assertEqual((event["handle"], event["event"]["value"]), (again, packed_battery(64)))

    async def test_battery_level_from_bluetoothd_battery_plugin_reaches_the_opened_device_handle(self):
        # Debian's bluetoothd: its battery plugin keeps Battery1.Percentage current.
        await self.battery_event_reaches_the_opened_handle({})

    async def test_battery_level_from_gatt_notifications_reaches_the_opened_device_handle(self):
        # bluetoothd -P battery: 0x2A19 is GATT; the service holds a notify session on it.
        await self.battery_event_reaches_the_opened_handle({"BatteryPlugin": "false"})


ESKT_NOTAVAILABLE = -32


class SocketCamCameraTests(AsyncTestCase):
    """SocketCam with a camera (`serve --camera DEV`) as the SDKs drive it (docs/capturejs.md §3.1): the
    options, and a camera that is not there. This machine has no V4L2 device; a camera that streams is
    the VM tier's (vivid)."""

    def serve_refused(self, *args):
        """`capture serve ARGS`: refused before it listens, with one error line and the usage line."""
        got = subprocess.run([capture_bin(), "serve", "--listen", "127.0.0.1:0", *args], capture_output=True,
                             text=True, timeout=20, stdin=subprocess.DEVNULL,
                             env=dict(os.environ, XDG_STATE_HOME=self.state, NO_COLOR="1"))
        lines = got.stderr.splitlines()
        self.assertEqual(got.returncode, 18, got)  # ESKT_INVALIDPARAMETER, as every usage error
        self.assertEqual(len(lines), 2, got)
        self.assertTrue(lines[1].startswith("usage: capture serve "), got)
        self.assertNotIn("serving", got.stderr)
        return lines[0]

    def setUp(self):
        self.state = tempfile.mkdtemp(prefix="capture-serve-camera.")
        self.addCleanup(shutil.rmtree, self.state, True)

    def test_camera_options_are_refused_with_one_line_and_exit_18(self):
        self.assertEqual(self.serve_refused("--camera", "video0"),
                         "capture: ESKT_INVALIDPARAMETER (-18): --camera needs a device path like /dev/video0")
        self.assertEqual(self.serve_refused("--camera", "/dev/video0", "--dir", self.state),
                         "capture: ESKT_INVALIDPARAMETER (-18): --camera cannot be combined with --image or --dir")
        self.assertEqual(self.serve_refused("--camera", "/dev/video0", "--camera", "/dev/video1"),
                         "capture: ESKT_INVALIDPARAMETER (-18): --camera given more than once")
        self.assertEqual(self.serve_refused("--camera"),
                         "capture: ESKT_INVALIDPARAMETER (-18): --camera needs a value (DEV)")

    async def start_fails(self, camera, reason):
        """serve starts without its camera (it may be plugged in later); SocketCam is enabled and opened
        as Flutter's helper does it, and its trigger start fails with the camera's reason."""
        service = Service(extra=["--camera", camera], state=tempfile.mkdtemp(prefix="capture-serve-camera."))
        self.addCleanup(service.stop)
        flutter = Flutter(service)
        client = await self.event_client(service, path="/", wait_id="1")
        # setSocketCamEnabled(enabled: SocketCam.enable) (lib/capture_helper.dart:214-220), read back.
        self.assertNotIn("error", flutter.set(client.handle, PROP_SOCKETCAM_STATUS, T_BYTE, 0))
        got = flutter.get(client.handle, PROP_SOCKETCAM_STATUS)["result"]["property"]
        self.assertEqual(got, {"id": PROP_SOCKETCAM_STATUS, "type": T_BYTE, "value": 0})
        arrival = await client.arrival("SocketCam", timeout=15)
        device = await client.opendevice(arrival["event"]["value"]["guid"])
        mark = len(client.events())
        # setTrigger(Trigger.start), a Byte set on the device (lib/capture_helper_device.dart): the reply
        # is the error, with the camera and why, so the app's call throws with it.
        reply = flutter.set(device, PROP_TRIGGER, T_BYTE, TRIGGER_START)
        self.assertEqual(error_code(reply), ESKT_NOTAVAILABLE, reply)
        message = reply["error"]["message"]
        self.assertIn(f"camera {camera}", message)
        self.assertIn(reason, message)
        self.assertNotIn("\n", message)
        # No read started, so the stop that an app's cancel button sends succeeds and cancels nothing: no
        # −91 DecodedData. SocketCam disabled next: its removal comes after anything the stop sent.
        self.assertNotIn("error", flutter.set(device, PROP_TRIGGER, T_BYTE, TRIGGER_STOP))
        self.assertNotIn("error", flutter.set(client.handle, PROP_SOCKETCAM_STATUS, T_BYTE, 1))
        await client.wait(lambda r: r["event"]["id"] == EV_DEVICE_REMOVAL, start=mark, timeout=15,
                          what="SocketCam's removal")
        self.assertEqual([r["event"] for r in client.events()[mark:]
                          if r["event"]["id"] in (EV_DECODED_DATA, EV_ERROR)], [])
        # And the service said nothing on stderr but its serving line: the reason went to the app.
        self.assertEqual(len([line for line in service.stderr() if line.strip()]), 1, service.stderr())

    async def test_a_missing_camera_fails_trigger_start_with_its_reason(self):
        await self.start_fails(os.path.join(self.state, "video0"), "is not available")

    async def test_a_device_that_is_not_a_camera_fails_trigger_start_with_its_reason(self):
        await self.start_fails("/dev/null", "cannot be used")


# React Native: react-native-capture 1.5.134 (its package.json asks for socketmobile-capturejs ^1.3.50,
# which npm resolves to CaptureJS 1.4.3, the newest 1.x). On Android, CaptureRn.open hands no transport
# to CaptureJS (src/index.tsx:255, react-native-capture@2c16465), so every call is CaptureJS 1.4.3's own
# HttpTransport to 127.0.0.1:18481; on iOS the native bridge is the server (src/index.tsx:207), which
# `capture serve` does not replace. The shapes below are CaptureJS 1.4.3's Capture object
# (lib/captureJs-1.4.3.0.js, socketmobile-capturejs@68615bc; its Capture class starts at line 36)
# driven as Socket Mobile's React Native sample drives it (singleentry-rn@744c850: src/App.tsx,
# src/components/MainView.tsx) and as react-native-capture's CaptureHelper does
# (src/CaptureHelper.tsx, react-native-capture@cbf4f73).
RN_APP_INFO = {  # genAppInfo on Android: appIdAndroid/appKeyAndroid become appId/appKey (src/index.tsx:262-270)
    "appId": "android:com.example.servetests", "developerId": APP_INFO["developerId"], "appKey": APP_INFO["appKey"]}
TRIGGER_CONTINUOUS = 5  # Trigger.ContinuousScan, CaptureHelper.SocketCamTriggerOptions (src/CaptureHelper.tsx:20)
SOCKETCAM_ENABLE, SOCKETCAM_DISABLE = 0, 1  # SocketCam.Enable / .Disable (src/CaptureHelper.tsx:23-24)
PROP_DATA_SOURCE_DEVICE = 7798788
DATA_SOURCE_EAN13, DATA_SOURCE_FLAG_STATUS, DATA_SOURCE_ENABLE = 19, 1, 1
ESKT_UNABLEOPENDEVICE = -27


def captureJs_event(result):
    """What CaptureJS 1.4.3 hands the app's onCaptureEvent for one WebSocket result
    (unifyResultInEvents, lib/captureJs-1.4.3.0.js:175-199): the event with `result` from the event, else
    from an object value, else 0 (a value that is not an object sets it to 0); a DecodedData with id 0,
    an empty name and no data is -91 ESKT_CANCEL whatever it said."""
    event = dict(result["event"])
    value = event.get("value")
    if isinstance(value, dict):
        if "result" not in event:
            event["result"] = value.get("result", 0)
    else:
        event["result"] = 0
    if value and event["type"] == EVT_DECODED_DATA and value["id"] == 0 and not value["name"] and not value["data"]:
        event["result"] = ESKT_CANCEL
    return event


def array_to_string(data):
    """The sample's arrayToString: String.fromCharCode.apply(null, data) (src/App.tsx:53-55)."""
    return "".join(map(chr, data))


class ReactNative:
    """One root CaptureRn (a CaptureJS 1.4.3 Capture) and the device Captures opened from it."""

    def __init__(self, service):
        self.service = service
        # getJsonRpcId: one counter from 0 per root Capture, shared by the devices opened from it
        # (lib/captureJs-1.4.3.0.js:39 rpcId = 0, :208-213).
        self.ids = itertools.count(0)
        self.handle = None
        self.client = None

    def call(self, method, params):
        return self.service.call(method, params, id=next(self.ids))

    async def open(self, test):
        """capture.open(appInfo, onCaptureEvent) (src/App.tsx:341): openclient with the three appInfo
        strings (lib/captureJs-1.4.3.0.js:55-59), id 0; on its reply HttpTransport opens the WebSocket on
        /Capture/v1/api and sends waitforcaptureevent with id 1 and the new handle (HttpTransport.send,
        the `request.method === 'openclient'` branch; docs/capturejs.md §1.4)."""
        reply = self.call("openclient", RN_APP_INFO)
        self.handle = reply["result"]["handle"]  # open() takes any truthy result.handle (:65-67)
        self.client = await EventClient(self.service).open(handle=self.handle, wait_id=1)
        test.addAsyncCleanup(self.client.close)
        return self.client

    def opendevice(self, guid):
        """dev.openDevice(guid, capture) (src/App.tsx:299): {handle: root, guid} (:111-114)."""
        result = self.call("opendevice", {"handle": self.handle, "guid": guid})["result"]
        return result["handle"]

    def get(self, handle, prop_id, type=T_NONE, value=None):
        """getProperty(property): params {property, handle} (:136-137), no guid key."""
        return self.call("getproperty", {"property": {"id": prop_id, "type": type,
                                                      "value": {} if value is None else value}, "handle": handle})

    def set(self, handle, prop_id, type, value):
        """setProperty(property) (:155-156); a reply without `result` is rejected whole (:163-164)."""
        return self.call("setproperty", {"property": {"id": prop_id, "type": type, "value": value}, "handle": handle})

    def close(self, handle):
        """close(): {handle} (:83-85); the root's also ends the transport."""
        return self.call("close", {"handle": handle})


class ReactNativeSocketCamTests(AsyncTestCase):
    """SocketCam as the React Native sample and CaptureHelper drive it, against `serve --dir`."""

    async def test_socketcam_enable_trigger_cancel_codes_disable_and_close(self):
        images, service = self.socketcam_dir_service()
        rn = ReactNative(service)
        client = await rn.open(self)

        # getSocketCamEnabled: SocketCamStatus, None with {}, on the root Capture (src/CaptureHelper.tsx:36-42;
        # SocketCamViewContainer calls it at mount). Nothing persisted yet: Enable, the default of
        # `capture get socketcam socket-cam-status`.
        got = rn.get(rn.handle, PROP_SOCKETCAM_STATUS)
        self.assertEqual(got["result"], {"handle": rn.handle, "property": {"id": PROP_SOCKETCAM_STATUS, "type": T_BYTE,
                                                                           "value": SOCKETCAM_ENABLE}})
        # setSocketCamEnabled(Enable): a Byte set, then the same get again (src/CaptureHelper.tsx:64-76).
        reply = rn.set(rn.handle, PROP_SOCKETCAM_STATUS, T_BYTE, SOCKETCAM_ENABLE)
        self.assertEqual(reply["result"], {"handle": rn.handle, "property": {"id": PROP_SOCKETCAM_STATUS, "type": T_BYTE,
                                                                             "value": SOCKETCAM_ENABLE}})
        got = rn.get(rn.handle, PROP_SOCKETCAM_STATUS)
        self.assertEqual(got["result"]["property"]["value"], SOCKETCAM_ENABLE)

        # DeviceArrival → openDeviceHelper → openDevice(guid, capture) (src/App.tsx:151-153, 299).
        arrival = await client.arrival("SocketCam", timeout=15)
        self.assertEqual(captureJs_event(arrival)["result"], 0)
        device = rn.opendevice(arrival["event"]["value"]["guid"])

        # MainView's symbology calls (src/components/MainView.tsx:105-116 and 126-139): a DataSource get
        # with only {id: SymbologyEan13, flags: Status} — no name, no status — and a set adding status
        # Enable.
        got = rn.get(device, PROP_DATA_SOURCE_DEVICE, T_DATASOURCE,
                     {"id": DATA_SOURCE_EAN13, "flags": DATA_SOURCE_FLAG_STATUS})
        ean13 = {"id": PROP_DATA_SOURCE_DEVICE, "type": T_DATASOURCE,
                 "value": {"id": DATA_SOURCE_EAN13, "name": "EAN 13", "status": DATA_SOURCE_ENABLE,
                           "flags": DATA_SOURCE_FLAG_STATUS}}
        self.assertEqual(got["result"], {"handle": device, "property": ean13})
        reply = rn.set(device, PROP_DATA_SOURCE_DEVICE, T_DATASOURCE,
                       {"id": DATA_SOURCE_EAN13, "flags": DATA_SOURCE_FLAG_STATUS, "status": DATA_SOURCE_ENABLE})
        self.assertEqual(reply["result"], {"handle": device, "property": ean13})

        def decoded(start):
            return [captureJs_event(r) for r in client.events()[start:]
                    if r["handle"] == device and r["event"]["id"] == EV_DECODED_DATA]

        # SocketCamView mounts: setSocketCamTriggerProperty(device, Trigger.Start), a Byte on the device
        # (src/CaptureHelper.tsx:88-94). The user closes the view before a code: the app's stop (the
        # SDK's view sends it natively; here Trigger.Stop, 2) → DecodedData the sample takes as
        # ESKT_CANCEL (`e?.result === SktErrors.ESKT_CANCEL`, src/App.tsx:236).
        mark = len(client.events())
        reply = rn.set(device, PROP_TRIGGER, T_BYTE, TRIGGER_START)
        self.assertEqual(reply["result"], {"handle": device, "property": {"id": PROP_TRIGGER, "type": T_BYTE,
                                                                          "value": TRIGGER_START}})
        self.assertNotIn("error", rn.set(device, PROP_TRIGGER, T_BYTE, TRIGGER_STOP))
        await client.wait(lambda r: r["handle"] == device and r["event"]["id"] == EV_DECODED_DATA, start=mark,
                          timeout=15, what="the cancel")
        [cancel] = decoded(mark)
        self.assertEqual(cancel, {"id": EV_DECODED_DATA, "type": EVT_DECODED_DATA, "result": ESKT_CANCEL,
                                  "value": {"id": 0, "name": "", "data": []}})

        # Start again and a code: lastDecodedData = {data: arrayToString(e.value.data), length, name}
        # (src/App.tsx:247-251), with result 0 so it is shown, not taken for a cancel.
        mark = len(client.events())
        self.assertNotIn("error", rn.set(device, PROP_TRIGGER, T_BYTE, TRIGGER_START))
        drop_image(images, "a.png", "RN-QR-1")
        await client.decoded(device, "RN-QR-1", timeout=15, start=mark)
        [code] = decoded(mark)
        self.assertEqual(code["result"], 0)
        self.assertEqual((array_to_string(code["value"]["data"]), len(code["value"]["data"]), code["value"]["name"]),
                         ("RN-QR-1", 7, "QR Code"))

        # Trigger.ContinuousScan, the sample's other option (src/CaptureHelper.tsx:20): every code until
        # the view closes; its stop after codes sends no cancel.
        mark = len(client.events())
        self.assertNotIn("error", rn.set(device, PROP_TRIGGER, T_BYTE, TRIGGER_CONTINUOUS))
        drop_image(images, "b.png", "RN-QR-2")
        await client.decoded(device, "RN-QR-2", timeout=15, start=mark)
        drop_image(images, "c.png", "RN-QR-3")
        await client.decoded(device, "RN-QR-3", timeout=15, start=mark)
        self.assertNotIn("error", rn.set(device, PROP_TRIGGER, T_BYTE, TRIGGER_STOP))

        # setSocketCamEnabled(Disable) → DeviceRemoval → the sample closes the device (src/App.tsx:168-179);
        # it ignores -38 there (:206), which this service does not give: the close succeeds.
        removal_mark = len(client.events())
        self.assertNotIn("error", rn.set(rn.handle, PROP_SOCKETCAM_STATUS, T_BYTE, SOCKETCAM_DISABLE))
        removal = await client.wait(lambda r: r["event"]["id"] == EV_DEVICE_REMOVAL, start=removal_mark, timeout=15,
                                    what="SocketCam's removal")
        self.assertEqual((removal["handle"], removal["event"]["value"]["guid"]),
                         (rn.handle, arrival["event"]["value"]["guid"]))
        self.assertEqual([(e["result"], array_to_string(e["value"]["data"])) for e in decoded(mark)],
                         [(0, "RN-QR-2"), (0, "RN-QR-3")])
        closed = rn.close(device)
        self.assertEqual(closed["result"], {"handle": device})
        # The root's close ends the client: its handle, and its WebSocket closes normally.
        self.assertEqual(rn.close(rn.handle)["result"], {"handle": rn.handle})
        self.assertEqual(await client.wait_closed(), 1000)
        # Every request carried the next id of the one counter: 0 (openclient) … 14.
        self.assertEqual(next(rn.ids), 15)



BLUETOOTH_LOW_ENERGY = 1  # BluetoothDiscoveryMode.BluetoothLowEnergy (lib/captureJs-1.4.3.0.js)


class ReactNativeBluetoothLETests(AsyncTestCase):
    """The React Native sample's device flow on a D600 (the BlueZ rig): the device manager's Favorite,
    MainView's gets and sets, BatteryLevel and DecodedData, removal; and AddDevice / RemoveDevice with
    the types CaptureJS 1.4.3's property table gives them (the ids it added for BLE devices, its
    CHANGELOG 1.4.3; `CapturePropertyIds.AddDevice` "Device: False … Set Type: Byte", `RemoveDevice`
    "Device: False … Set Type: String", `UniqueDeviceIdentifier` "Get Type: String" in
    lib/captureJs-1.4.3.0.js), sent as an app sends any property through CaptureRn."""

    async def test_favorite_main_view_properties_events_add_and_remove_device(self):
        rig, service = self.bluez_d600(remembered=True)
        rn = ReactNative(service)
        client = await rn.open(self)

        # DeviceManagerArrival → openDeviceHelper(…, true) → getFavorite(dev): Favorite, None with {}
        # (src/App.tsx:255-257, 321, 358-366); an empty one → setFavorite: "*" as a String (:369-384).
        manager = await client.wait(lambda r: r["event"]["id"] == EV_DEVICE_MANAGER_ARRIVAL, what="DeviceManagerArrival")
        dm = rn.opendevice(manager["event"]["value"]["guid"])
        got = rn.get(dm, PROP_FAVORITE)
        self.assertEqual(got["result"], {"handle": dm, "property": {"id": PROP_FAVORITE, "type": T_STRING, "value": ""}})
        reply = rn.set(dm, PROP_FAVORITE, T_STRING, "*")
        self.assertEqual(reply["result"], {"handle": dm, "property": {"id": PROP_FAVORITE, "type": T_STRING, "value": "*"}})
        got = subprocess.run([capture_bin(), "get", "manager", "favorite"], env=service.env, capture_output=True,
                             text=True, timeout=20)
        self.assertEqual(got.stdout.strip(), "*", got)

        arrival = await client.arrival("D600", timeout=20)
        device = rn.opendevice(arrival["event"]["value"]["guid"])
        # MainView.getFriendlyName: None with {} (src/components/MainView.tsx:31-40).
        got = rn.get(device, PROP_FRIENDLY_NAME)
        self.assertEqual(got["result"], {"handle": device, "property": {"id": PROP_FRIENDLY_NAME, "type": T_STRING,
                                                                        "value": "Socket D600 [7EF619]"}})
        # getBatteryLevel: None with {} (:72-81); handleBatteryConversion takes (value & 0xff00) >> 8 on iOS
        # and for non-BLE devices, the value itself for a BLE device on Android (:91-102): this service
        # answers the packed form (docs/capturejs.md §3), so that last case shows the packed number.
        level = rn.get(device, PROP_BATTERY_LEVEL)["result"]["property"]
        self.assertEqual((level["id"], level["type"], (level["value"] & 0xFF00) >> 8), (PROP_BATTERY_LEVEL, T_ULONG, 90))
        # getSymbologyStatus and setSymbology (:105-116, 126-139): the D600 is an NFC reader without
        # barcode symbologies (docs/device-protocols.md §2), so its driver says "not supported" and the
        # sample shows "failed to get symbology: -15 : …" (the same shapes on SocketCam:
        # ReactNativeSocketCamTests).
        got = rn.get(device, PROP_DATA_SOURCE_DEVICE, T_DATASOURCE,
                     {"id": DATA_SOURCE_EAN13, "flags": DATA_SOURCE_FLAG_STATUS})
        self.assertEqual(got["error"], {"code": ESKT_NOTSUPPORTED,
                                        "message": "Socket D600 [7EF619] does not support data-source (0x00770004)"})
        reply = rn.set(device, PROP_DATA_SOURCE_DEVICE, T_DATASOURCE,
                       {"id": DATA_SOURCE_EAN13, "flags": DATA_SOURCE_FLAG_STATUS, "status": DATA_SOURCE_ENABLE})
        self.assertEqual(error_code(reply), ESKT_NOTSUPPORTED)
        # setFriendlyName: a String (:51-60).
        reply = rn.set(device, PROP_FRIENDLY_NAME, T_STRING, "Till 3")
        self.assertEqual(reply["result"], {"handle": device, "property": {"id": PROP_FRIENDLY_NAME, "type": T_STRING,
                                                                          "value": "Till 3"}})

        # BatteryLevel on the device handle: the sample shows `${e.value}%` (src/App.tsx:262-264), and
        # CaptureJS sets its result to 0 (a number value, lib/captureJs-1.4.3.0.js:190-192).
        mark = len(client.events())
        rig.ctl("SetBattery", D600_PATH, 42)
        battery = await client.wait(lambda r: r["event"]["id"] == EV_BATTERY_LEVEL, start=mark, timeout=20,
                                    what="BatteryLevel")
        self.assertEqual(battery["handle"], device)
        self.assertEqual(captureJs_event(battery), {"id": EV_BATTERY_LEVEL, "type": EVENT_TYPE_ULONG,
                                                    "value": packed_battery(42), "result": 0})
        # DecodedData: found by handle in the devices the sample opened, shown with arrayToString
        # (src/App.tsx:227-251).
        rig.ctl("ScanText", D600_PATH, "4F", "HELLO-RN")
        code = captureJs_event(await client.decoded(device, "HELLO-RN", timeout=15))
        self.assertEqual((code["result"], array_to_string(code["value"]["data"])), (0, "HELLO-RN"))

        # AddDevice, BluetoothLowEnergy, on the root handle: a discovery whose end comes on that handle.
        mark = len(client.events())
        reply = rn.set(rn.handle, PROP_ADD_DEVICE, T_BYTE, BLUETOOTH_LOW_ENERGY)
        self.assertEqual(reply["result"]["handle"], rn.handle, reply)
        end = await client.wait(lambda r: r["event"]["id"] == EV_DISCOVERY_END, start=mark, timeout=30,
                                what="DiscoveryEnd")
        self.assertEqual(end["handle"], rn.handle)
        # UniqueDeviceIdentifier of the D600 (a String get with its GUID, on the device manager), then
        # RemoveDevice with it on the root handle: DeviceRemoval, and the sample closes the device
        # (src/App.tsx:168-179).
        got = rn.get(dm, PROP_UNIQUE_DEVICE_IDENTIFIER, T_STRING, arrival["event"]["value"]["guid"])
        self.assertEqual(got["result"]["property"], {"id": PROP_UNIQUE_DEVICE_IDENTIFIER, "type": T_STRING, "value": D600})
        mark = len(client.events())
        reply = rn.set(rn.handle, PROP_REMOVE_DEVICE, T_STRING, D600)
        self.assertEqual(reply["result"]["handle"], rn.handle, reply)
        removal = await client.wait(lambda r: r["event"]["id"] == EV_DEVICE_REMOVAL, start=mark, timeout=20,
                                    what="DeviceRemoval of the removed D600")
        self.assertEqual(removal["event"]["value"]["guid"], arrival["event"]["value"]["guid"])
        self.assertEqual(rn.close(device)["result"], {"handle": device})
        # Favorite "*" stays "*" (docs/capturejs.md §3.2), as the CLI reads it.
        got = subprocess.run([capture_bin(), "get", "manager", "favorite"], env=service.env, capture_output=True,
                             text=True, timeout=20)
        self.assertEqual(got.stdout.strip(), "*", got)


if __name__ == "__main__":
    unittest.main()
