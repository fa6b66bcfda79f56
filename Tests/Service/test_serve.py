"""`capture serve` end to end: the real binary on a free loopback port, real devices from the project's
rigs, a JSON-RPC + WebSocket client speaking docs/capturejs.md (§1 transport, §2 methods, §3
properties, §4 events). Run: CAPTURE_BIN=.build/debug/capture python3 -m unittest discover -s
Tests/Service -v (or python3 Tests/Service/test_serve.py [CAPTURE])."""
import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import uuid

import websockets

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import *  # noqa: E402,F401,F403
import serve_harness as h  # noqa: E402


def setUpModule():
    if not os.access(h.capture_bin(), os.X_OK):
        raise unittest.SkipTest(f"*** SKIPPED: no capture binary at {h.capture_bin()} (set CAPTURE_BIN)")


def rpc_id_reply(service, id_value, method="openclient"):
    status, _, reply = service.post({"jsonrpc": "2.0", "id": id_value, "method": method, "params": APP_INFO})
    return status, reply


class ProtocolTests(AsyncTestCase):
    """One service with a pty scanner and (when swiftc can build it) the DataMan simulator."""

    @classmethod
    def setUpClass(cls):
        cls.scanner = PtyScanner()
        try:
            cls.dataman = DataManSimulator()
        except (RuntimeError, OSError) as error:
            cls.dataman = None
            cls.dataman_missing = str(error)
        devices = [cls.scanner.selector] + ([cls.dataman.selector] if cls.dataman else [])
        cls.service = Service(devices)
        assert cls.scanner.wait_opened(), f"capture serve never opened {cls.scanner.path}"

    @classmethod
    def tearDownClass(cls):
        cls.service.stop()
        cls.scanner.close()
        if cls.dataman:
            cls.dataman.close()

    def need_dataman(self):
        if self.dataman is None:
            self.skipTest(f"*** SKIPPED: DataMan simulator unavailable: {self.dataman_missing}")

    async def client(self, path=API):
        c = await EventClient(self.service, path).open()
        self.addAsyncCleanup(c.close)
        return c

    async def open_scanner(self, client):
        arrival = await client.arrival(self.scanner.path)
        return await client.opendevice(arrival["event"]["value"]["guid"])

    # --- methods, ids, names ------------------------------------------------------------------------

    def test_openclient_returns_a_nonzero_numeric_handle_and_echoes_id_0(self):
        status, reply = rpc_id_reply(self.service, 0)
        self.assertEqual(status, 200)
        self.assertEqual(reply["jsonrpc"], "2.0")
        self.assertIs(type(reply["id"]), int)
        self.assertEqual(reply["id"], 0)
        handle = reply["result"]["handle"]
        self.assertIs(type(handle), int)
        self.assertNotEqual(handle, 0)
        self.assertNotIn("error", reply)

    def test_ids_are_echoed_with_their_json_type(self):
        for id_value in (0, 7, "7", "", None, 2**40):
            with self.subTest(id=id_value):
                status, reply = rpc_id_reply(self.service, id_value)
                self.assertEqual(status, 200)
                self.assertIn("id", reply)
                self.assertIs(type(reply["id"]), type(id_value))
                self.assertEqual(reply["id"], id_value)
        # The same on an error reply.
        status, _, reply = self.service.post({"jsonrpc": "2.0", "id": "x9", "method": "nosuchmethod", "params": {}})
        self.assertEqual((status, reply["id"]), (200, "x9"))

    def test_method_names_are_case_insensitive(self):
        for name in ("openclient", "OpenClient", "OPENCLIENT", "openClient"):
            with self.subTest(method=name):
                status, reply = rpc_id_reply(self.service, 1, name)
                self.assertEqual(status, 200)
                self.assertNotEqual(reply["result"]["handle"], 0)
        handle = self.service.openclient()
        reply = self.service.call("GetProperty", {"handle": handle, "property": {"id": PROP_VERSION, "type": 0, "value": {}}})
        self.assertEqual(reply["result"]["property"]["type"], T_VERSION, reply)
        self.assertNotIn("error", self.service.call("CLOSE", {"handle": handle}))

    def test_openclient_without_three_nonempty_strings_is_invalid_app_info(self):
        bad = [{}, {"appId": "web:x", "developerId": "d"}, dict(APP_INFO, appKey=""),
               dict(APP_INFO, appId=12), dict(APP_INFO, developerId=None)]
        for params in bad:
            with self.subTest(params=params):
                self.assertEqual(error_code(self.service.call("openclient", params)), ESKT_INVALIDAPPINFO)

    def test_a_body_that_is_not_json_is_http_200_with_parse_error(self):
        for body in (b"{not json", b"", b"\xff\xfe", b'{"jsonrpc":"2.0","id":1,"method":"openclient",'):
            with self.subTest(body=body):
                status, _, reply = self.service.post(body)
                self.assertEqual(status, 200)
                self.assertEqual(reply["jsonrpc"], "2.0")
                self.assertEqual(error_code(reply), JSONRPC_PARSE_ERROR)
                self.assertIsNone(reply["id"])  # null when the id could not be read (the JSON-RPC 2.0 specification §5)
        # The service still serves.
        self.service.openclient()

    def test_json_that_is_not_a_request_object_is_invalid_request(self):
        for body in (b"[]", b"42", b'"openclient"', b'{"jsonrpc":"2.0","id":1}', b'{"jsonrpc":"2.0","id":1,"method":5}'):
            with self.subTest(body=body):
                status, _, reply = self.service.post(body)
                self.assertEqual(status, 200)
                self.assertEqual(error_code(reply), JSONRPC_INVALID_REQUEST)

    def test_an_unknown_method_is_method_not_found(self):
        reply = self.service.call("openthedoor", {}, id=5)
        self.assertEqual(error_code(reply), JSONRPC_METHOD_NOT_FOUND)
        self.assertEqual(reply["id"], 5)

    def test_an_unknown_handle_is_invalid_handle_for_every_method(self):
        unknown = 987654321
        guid = "{00000000-0000-4000-8000-000000000000}"
        calls = [("opendevice", {"handle": unknown, "guid": guid}), ("close", {"handle": unknown}),
                 ("getproperty", {"handle": unknown, "property": {"id": PROP_FRIENDLY_NAME, "type": 0, "value": {}}}),
                 ("setproperty", {"handle": unknown, "property": {"id": PROP_FRIENDLY_NAME, "type": 5, "value": "x"}})]
        for method, params in calls:
            with self.subTest(method=method):
                self.assertEqual(error_code(self.service.call(method, params)), ESKT_INVALIDHANDLE)

    def test_bad_params_are_invalid_parameter(self):
        handle = self.service.openclient()
        for params in ({"handle": handle}, {"handle": handle, "property": {"type": 0}},
                       {"handle": handle, "property": "version"}):
            with self.subTest(params=params):
                self.assertEqual(error_code(self.service.call("getproperty", params)), ESKT_INVALIDPARAMETER)

    def test_opendevice_with_a_guid_no_device_has_is_an_error(self):
        handle = self.service.openclient()
        reply = self.service.call("opendevice", {"handle": handle, "guid": "{00000000-0000-4000-8000-000000000000}"})
        self.assertLess(error_code(reply), 0)

    # --- properties: one per wire type the rig devices have ---------------------------------------

    def test_socketcam_status_without_a_source_is_not_supported(self):
        handle = self.service.openclient()
        status = self.service.get(handle, PROP_SOCKETCAM_STATUS)["result"]["property"]
        self.assertEqual((status["type"], status["value"]), (T_BYTE, 2))  # NotSupported, docs/capture-sdk.md §7.13
        self.assertEqual(error_code(self.service.set(handle, PROP_SOCKETCAM_STATUS, T_BYTE, 0)), ESKT_NOTSUPPORTED)

    def test_version_on_the_client_handle_is_a_version_object_with_minute_and_minutes(self):
        handle = self.service.openclient()
        reply = self.service.get(handle, PROP_VERSION)
        self.assertEqual(reply["result"]["handle"], handle)
        prop = reply["result"]["property"]
        self.assertEqual((prop["id"], prop["type"]), (PROP_VERSION, T_VERSION))
        for key in ("major", "middle", "minor", "build", "year", "month", "day", "hour", "minute", "minutes"):
            self.assertIs(type(prop["value"][key]), int, key)
        self.assertEqual(prop["value"]["minute"], prop["value"]["minutes"])

    async def test_serial_scanner_string_and_ulong_properties_and_what_it_lacks(self):
        client = await self.client()
        device = await self.open_scanner(client)
        name = self.service.get(device, PROP_FRIENDLY_NAME)["result"]
        self.assertEqual(name["handle"], device)
        self.assertEqual(name["property"], {"id": PROP_FRIENDLY_NAME, "type": T_STRING, "value": self.scanner.path})
        kind = self.service.get(device, PROP_DEVICE_TYPE)["result"]["property"]
        self.assertEqual((kind["id"], kind["type"], kind["value"]), (PROP_DEVICE_TYPE, T_ULONG, 0))
        # A property the serial scanner does not have, and an id no device has.
        self.assertEqual(error_code(self.service.get(device, PROP_BATTERY_LEVEL)), ESKT_NOTSUPPORTED)
        self.assertEqual(error_code(self.service.get(device, 0x00FE0FFF)), ESKT_NOTSUPPORTED)
        self.assertEqual(error_code(self.service.get(device, PROP_DEVICE_SPECIFIC, T_ARRAY, [1, 2])), ESKT_NOTSUPPORTED)

    async def test_dataman_version_datasource_string_and_trigger(self):
        self.need_dataman()
        client = await self.client()
        # The DataMan's name is its DEVICE.NAME (the simulator's "Line 3 reader").
        arrival = await client.arrival("Line 3 reader")
        device = await client.opendevice(arrival["event"]["value"]["guid"])
        version = self.service.get(device, PROP_VERSION_DEVICE)["result"]["property"]
        self.assertEqual(version["type"], T_VERSION)
        self.assertEqual((version["value"]["major"], version["value"]["middle"], version["value"]["minor"]), (6, 1, 5))
        self.assertEqual(version["value"]["minute"], version["value"]["minutes"])

        qr = {"id": 38, "name": "", "status": -1, "flags": 1}
        got = self.service.get(device, PROP_DATA_SOURCE, T_DATASOURCE, qr)["result"]["property"]
        self.assertEqual(got, {"id": PROP_DATA_SOURCE, "type": T_DATASOURCE,
                               "value": {"id": 38, "name": "QR Code", "status": 1, "flags": 1}})
        # Set under "value", then under "dataSource" (both spellings clients use, docs/capturejs.md §3).
        c39 = {"id": 11, "name": "Code 39", "status": 1, "flags": 1}
        reply = self.service.set(device, PROP_DATA_SOURCE, T_DATASOURCE, c39)
        self.assertEqual(reply["result"]["handle"], device, reply)
        self.assertEqual(reply["result"]["property"]["id"], PROP_DATA_SOURCE)
        probe = dict(c39, status=-1)
        self.assertEqual(self.service.get(device, PROP_DATA_SOURCE, T_DATASOURCE, probe)["result"]["property"]["value"]["status"], 1)
        reply = self.service.call("setproperty", {"handle": device, "property": {
            "id": PROP_DATA_SOURCE, "type": T_DATASOURCE, "dataSource": dict(c39, status=0)}})
        self.assertNotIn("error", reply)
        self.assertEqual(self.service.get(device, PROP_DATA_SOURCE, T_DATASOURCE, probe)["result"]["property"]["value"]["status"], 0)
        self.assertIn("SET SYMBOL.C39 ON", self.dataman.commands())

        reply = self.service.set(device, PROP_FRIENDLY_NAME, T_STRING, "Dock 4")
        self.assertNotIn("error", reply)
        self.assertEqual(self.service.get(device, PROP_FRIENDLY_NAME)["result"]["property"]["value"], "Dock 4")

        # TriggerDevice start (byte 1, docs/capture-sdk.md §7.1): the reader reads, a DecodedData follows.
        mark = len(client.events())
        reply = self.service.set(device, PROP_TRIGGER, T_BYTE, 1)
        self.assertNotIn("error", reply)
        event = (await client.decoded(device, DataManSimulator.READ_TEXT, start=mark))["event"]
        self.assertEqual(event["type"], EVT_DECODED_DATA)
        self.assertIs(type(event["value"]["id"]), int)
        self.assertIs(type(event["value"]["name"]), str)

    # --- events -------------------------------------------------------------------------------------

    async def test_arrival_is_replayed_on_the_client_handle_and_decoded_data_comes_as_byte_numbers(self):
        client = await self.client()
        arrival = await client.arrival(self.scanner.path)
        self.assertEqual(arrival["handle"], client.handle)
        event = arrival["event"]
        self.assertEqual(event["type"], EVT_DEVICE_INFO)
        info = event["value"]
        self.assertRegex(info["guid"], GUID)
        self.assertIs(type(info["name"]), str)
        self.assertIs(type(info["type"]), int)
        device = await client.opendevice(info["guid"])
        text = "Zürich-\u20ac-1"
        self.scanner.write(text)
        got = await client.decoded(device, text)
        self.assertEqual(got["handle"], device)
        value = got["event"]["value"]
        self.assertEqual(got["event"]["type"], EVT_DECODED_DATA)
        self.assertEqual(value["data"], list(text.encode()))
        self.assertTrue(all(type(b) is int and 0 <= b <= 255 for b in value["data"]))
        self.assertTrue(any(b > 127 for b in value["data"]))
        self.assertIs(type(value["id"]), int)
        self.assertIs(type(value["name"]), str)
        # Every frame is a text frame holding one JSON object (the pump asserts text frames).
        self.assertTrue(all(isinstance(m, dict) and m.get("jsonrpc") == "2.0" for m in client.messages))

    async def test_both_websocket_paths_carry_the_events(self):
        for path in ("/", API):
            with self.subTest(path=path):
                client = await self.client(path)
                device = await self.open_scanner(client)
                code = f"PATH-{path}-{uuid.uuid4().hex[:6]}"
                self.scanner.write(code)
                await client.decoded(device, code)

    async def test_a_flutter_style_wait_on_the_root_path_with_a_string_id_and_null_keys(self):
        # Flutter's transport: the root path, id "1", params with guid and property null (docs/capturejs.md §1.4).
        handle = self.service.openclient()
        async with websockets.connect(f"ws://127.0.0.1:{self.service.port}/", ping_interval=None) as ws:
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": "1", "method": "waitforcaptureevent",
                                      "params": {"handle": handle, "guid": None, "property": None}}))
            deadline = time.monotonic() + 10
            while True:
                message = json.loads(await asyncio.wait_for(ws.recv(), max(0.1, deadline - time.monotonic())))
                result = message.get("result")
                self.assertNotIn("error", message)
                if isinstance(result, dict) and result.get("event", {}).get("id") == EV_DEVICE_ARRIVAL:
                    self.assertIs(type(result["handle"]), int)
                    self.assertEqual(result["handle"], handle)
                    break

    async def test_a_repeated_waitforcaptureevent_changes_nothing(self):
        client = await self.client()
        device = await self.open_scanner(client)
        await client.ws.send(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "waitforcaptureevent",
                                         "params": {"handle": client.handle}}))
        # The repeat succeeds silently. A later frame on the socket that is answered (a wait for a handle
        # that is no client: an error reply) shows the service has read the repeat and taken it up.
        await client.ws.send(json.dumps({"jsonrpc": "2.0", "id": 10, "method": "waitforcaptureevent",
                                         "params": {"handle": 987654321}}))
        deadline = time.monotonic() + 120
        while not any(m.get("id") == 10 and "error" in m for m in client.messages):
            self.assertLess(time.monotonic(), deadline, f"no error reply to the wait for a bad handle: {client.messages}")
            await asyncio.sleep(0.05)
        prefix = f"REPEAT-{uuid.uuid4().hex[:6]}-"
        first, later = prefix + "1", prefix + "2"
        self.scanner.write(first)
        await client.decoded(device, first)
        # Events reach a client in order: once a later code is here, a second copy of the first would be too.
        self.scanner.write(later)
        await client.decoded(device, later)
        self.assertEqual(client.decoded_texts(device).count(first.encode()), 1)
        self.assertEqual(client.decoded_texts(device).count(later.encode()), 1)
        guids = [r["event"]["value"]["guid"] for r in client.events() if r["event"]["id"] == EV_DEVICE_ARRIVAL]
        self.assertEqual(len(guids), len(set(guids)), f"the repeat replayed the arrivals: {guids}")

    async def test_decoded_data_goes_only_to_clients_that_opened_the_device(self):
        opened, bystander = await self.client(), await self.client()
        await bystander.arrival(self.scanner.path)
        device = await self.open_scanner(opened)
        code = f"ONLY-{uuid.uuid4().hex[:6]}"
        self.scanner.write(code)
        await opened.decoded(device, code)
        # The marker: the bystander opens the scanner now and gets a later code. Its events come in
        # order, so a copy of the first code, had it been sent, would have come before.
        arrival = await bystander.arrival(self.scanner.path)
        late = await bystander.opendevice(arrival["event"]["value"]["guid"])
        marker = f"ONLY-LATER-{uuid.uuid4().hex[:6]}"
        self.scanner.write(marker)
        await bystander.decoded(late, marker)
        self.assertEqual([bytes(r["event"]["value"]["data"]) for r in bystander.events()
                          if r["event"]["id"] == EV_DECODED_DATA], [marker.encode()])

    async def test_close_frees_the_device_handle_then_the_client_handle(self):
        client = await self.client()
        device = await self.open_scanner(client)
        reply = self.service.call("close", {"handle": device})
        self.assertNotIn("error", reply)
        self.assertIsInstance(reply["result"], dict)
        self.assertEqual(error_code(self.service.get(device, PROP_FRIENDLY_NAME)), ESKT_INVALIDHANDLE)
        code = f"AFTERCLOSE-{uuid.uuid4().hex[:6]}"
        self.scanner.write(code)
        # The marker: the scanner opened again on this client (a new handle: handles are not reused
        # while counting up) gets a later code; the client's events come in order, so anything on the
        # closed handle would have come before it.
        arrival = await client.arrival(self.scanner.path)
        again = await client.opendevice(arrival["event"]["value"]["guid"])
        self.assertNotEqual(again, device)
        marker = f"REOPENED-{uuid.uuid4().hex[:6]}"
        self.scanner.write(marker)
        await client.decoded(again, marker)
        self.assertEqual(client.decoded_texts(device), [])
        self.assertNotIn("error", self.service.call("close", {"handle": client.handle}))
        self.assertEqual(error_code(self.service.get(client.handle, PROP_VERSION)), ESKT_INVALIDHANDLE)

    async def test_two_clients_both_get_the_arrivals_and_every_code_in_order(self):
        a, b = await self.client(), await self.client()
        da, db = await self.open_scanner(a), await self.open_scanner(b)
        prefix = f"TWO-{uuid.uuid4().hex[:6]}-"
        codes = [f"{prefix}{i:03d}".encode() for i in range(50)]
        for code in codes:
            self.scanner.write(code)
        for client, device in ((a, da), (b, db)):
            await client.decoded(device, codes[-1], timeout=15)
            self.assertEqual([t for t in client.decoded_texts(device) if t.startswith(prefix.encode())], codes)

    async def test_a_client_that_vanishes_mid_stream_loses_its_handles_and_nothing_else(self):
        gone, stays = await self.client(), await self.client()
        d_gone, d_stays = await self.open_scanner(gone), await self.open_scanner(stays)
        prefix = f"VANISH-{uuid.uuid4().hex[:6]}-"
        codes = [f"{prefix}{i:03d}".encode() for i in range(200)]
        for code in codes[:100]:
            self.scanner.write(code)
        await gone.decoded(d_gone, codes[10], timeout=15)
        gone.ws.transport.abort()  # no close frame: the TCP connection just drops
        for code in codes[100:]:
            self.scanner.write(code)
        await stays.decoded(d_stays, codes[-1], timeout=20)
        self.assertEqual([t for t in stays.decoded_texts(d_stays) if t.startswith(prefix.encode())], codes)
        # The vanished client's handles go with its socket.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and "error" not in self.service.get(d_gone, PROP_FRIENDLY_NAME):
            await asyncio.sleep(0.1)
        self.assertEqual(error_code(self.service.get(d_gone, PROP_FRIENDLY_NAME)), ESKT_INVALIDHANDLE)
        self.assertEqual(error_code(self.service.get(gone.handle, PROP_VERSION)), ESKT_INVALIDHANDLE)
        self.assertNotIn("error", self.service.get(d_stays, PROP_FRIENDLY_NAME))


class RememberedDevicesTests(AsyncTestCase):
    async def test_without_device_it_serves_the_remembered_ones_and_sighup_adds_new_ones(self):
        state = tempfile.mkdtemp(prefix="capture-serve-state.")
        env = dict(os.environ, XDG_STATE_HOME=state)
        first, second = PtyScanner(), PtyScanner()
        self.addCleanup(first.close)
        self.addCleanup(second.close)
        connect = subprocess.run([capture_bin(), "connect", first.selector], env=env, capture_output=True, text=True, timeout=30)
        self.assertEqual(connect.returncode, 0, connect)
        service = Service(state=state)
        self.addCleanup(service.stop)
        client = await EventClient(service).open()
        self.addAsyncCleanup(client.close)
        await client.arrival(first.path, timeout=15)
        connect = subprocess.run([capture_bin(), "connect", second.selector], env=env, capture_output=True, text=True, timeout=30)
        self.assertEqual(connect.returncode, 0, connect)
        mark = len(client.events())
        service.signal(signal.SIGHUP)
        arrival = await client.arrival(second.path, timeout=15, start=mark)
        device = await client.opendevice(arrival["event"]["value"]["guid"])
        self.assertTrue(second.wait_opened())
        second.write("AFTER-HUP")
        await client.decoded(device, "AFTER-HUP")
        self.assertIsNone(service.proc.poll())


class SlowClientTests(unittest.TestCase):
    def test_a_client_that_stops_reading_is_dropped_with_1008_and_the_others_get_every_code(self):
        scanner = PtyScanner()
        self.addCleanup(scanner.close)
        service = Service([scanner.selector])
        self.addCleanup(service.stop)
        self.assertTrue(scanner.wait_opened())
        clients = {}
        for name, rcvbuf in (("slow", 4096), ("fast", None)):
            c = RawEventClient(service, rcvbuf)
            self.addCleanup(c.close)
            arrival = c.wait(lambda r: r["event"]["id"] == EV_DEVICE_ARRIVAL)
            device = service.result("opendevice", {"handle": c.handle, "guid": arrival["event"]["value"]["guid"]})["handle"]
            clients[name] = (c, device)
        fast, d_fast = clients["fast"]
        slow, d_slow = clients["slow"]
        # Long codes (1,000 bytes: about 3.6 kB of JSON each), 6,000 of them (21 MB): far more than the
        # slow client's kernel buffers and the service's 8 MiB bound of unsent messages per client
        # (docs/capturejs.md §1.4), so the slow one is dropped whatever the pace. The feed never runs
        # more than WINDOW codes (1.8 MB) ahead of what the fast client has read, so the fast one
        # stays far inside that bound however little CPU this process gets: a starved reader on a
        # loaded machine fell 8 MiB behind within a second at a fixed 2,000 codes a second, and was
        # (rightly) dropped too.
        total, window = 6000, 500
        codes = [b"S%06d-" % i + b"x" * 1000 for i in range(total)]
        progress = threading.Condition()
        got, seen, stop = [], 0, threading.Event()

        def feed():
            for i in range(0, total, 20):
                with progress:
                    progress.wait_for(lambda: i - len(got) <= window or stop.is_set())
                if stop.is_set():
                    return
                os.write(scanner.master, b"".join(code + b"\r\n" for code in codes[i:i + 20]))

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        self.addCleanup(stop.set)
        deadline = time.monotonic() + 300
        while len(got) < total and time.monotonic() < deadline:
            if not fast.pump(0.5):
                break
            with progress:
                for m in fast.messages[seen:]:
                    r = m.get("result") or {}
                    if r.get("handle") == d_fast and r["event"]["id"] == EV_DECODED_DATA:
                        got.append(bytes(r["event"]["value"]["data"]))
                seen = len(fast.messages)
                progress.notify_all()
        stop.set()
        with progress:
            progress.notify_all()
        writer.join(5)
        self.assertEqual(len(got), total, "the fast client did not get every code")
        self.assertEqual(got, codes)
        self.assertFalse(fast.eof)
        # The slow client, read now: whatever was queued, then the close frame 1008 and the end.
        deadline = time.monotonic() + 30
        while not slow.eof and time.monotonic() < deadline:
            slow.pump(0.5)
        self.assertTrue(slow.eof, "the slow client was never dropped")
        # A close frame (1008) can only reach a client that reads again before the service gives up on
        # the close handshake; otherwise the connection just ends. Any other code is wrong.
        self.assertIn(slow.close_code, (1008, None))
        slow_codes = [bytes(r["event"]["value"]["data"]) for r in slow.events() if r["event"]["id"] == EV_DECODED_DATA]
        self.assertLess(len(slow_codes), total)
        self.assertEqual(slow_codes, codes[:len(slow_codes)], "what the slow client got is not a prefix in order")
        # Its handles went with it.
        self.assertEqual(error_code(service.get(d_slow, PROP_FRIENDLY_NAME)), ESKT_INVALIDHANDLE)


class DeviceLeavesAndComesBackTests(AsyncTestCase):
    async def test_removal_on_the_client_handle_then_arrival_with_a_new_guid(self):
        scanner = PtyScanner()
        service = Service([scanner.selector])
        self.addCleanup(service.stop)
        self.addCleanup(scanner.close)
        self.assertTrue(scanner.wait_opened())
        client = await EventClient(service).open()
        self.addAsyncCleanup(client.close)
        first = await client.arrival(scanner.path)
        guid = first["event"]["value"]["guid"]
        device = await client.opendevice(guid)
        scanner.write("BEFORE")
        await client.decoded(device, "BEFORE")

        mark = len(client.events())
        scanner.unplug()
        removal = await client.wait(lambda r: r["event"]["id"] == EV_DEVICE_REMOVAL, start=mark, what="DeviceRemoval")
        self.assertEqual(removal["handle"], client.handle)
        self.assertEqual(removal["event"]["type"], EVT_DEVICE_INFO)
        self.assertEqual(removal["event"]["value"]["guid"], guid)

        mark = len(client.events())
        if not scanner.replug():
            self.skipTest(f"*** SKIPPED: {scanner.path} was taken by another process; cannot bring the scanner back")
        again = await client.arrival(scanner.path, timeout=15, start=mark)
        new_guid = again["event"]["value"]["guid"]
        self.assertRegex(new_guid, GUID)
        self.assertNotEqual(new_guid, guid)
        self.assertLess(error_code(service.call("opendevice", {"handle": client.handle, "guid": guid})), 0)
        device2 = await client.opendevice(new_guid)
        self.assertTrue(scanner.wait_opened())
        scanner.write("AFTER")
        await client.decoded(device2, "AFTER")


EV_BATTERY_LEVEL, EV_DEVICE_MANAGER_ARRIVAL = 8, 11
DEVICE_MANAGER_BLE = 17104897  # docs/capture-sdk.md §5.2
PROP_FAVORITE = 0x00050201
PROP_BLUETOOTH_ADDRESS = 0x0001010D
PROP_NOTIFICATIONS = 0x00030113
PROP_DATA_CONFIRMATION = 0x0013010A


class BluetoothLETests(AsyncTestCase):
    """A D600 on the BlueZ model (Tests/Rigs): the device manager, an Array property, BatteryLevel and
    DecodedData events, DataConfirmationDevice reaching the scanner."""

    async def test_device_manager_favorite_array_battery_decoded_data_and_confirmation(self):
        rig, service = self.bluez_d600()
        client = await self.event_client(service)

        manager = await client.wait(lambda r: r["event"]["id"] == EV_DEVICE_MANAGER_ARRIVAL, what="DeviceManagerArrival")
        self.assertEqual(manager["handle"], client.handle)
        self.assertEqual(manager["event"]["type"], EVT_DEVICE_INFO)
        self.assertEqual(manager["event"]["value"]["type"], DEVICE_MANAGER_BLE)
        self.assertRegex(manager["event"]["value"]["guid"], GUID)
        dm = await client.opendevice(manager["event"]["value"]["guid"])
        self.assertEqual(service.get(dm, PROP_FAVORITE)["result"]["property"], {"id": PROP_FAVORITE, "type": T_STRING, "value": ""})
        self.assertNotIn("error", service.set(dm, PROP_FAVORITE, T_STRING, "*"))
        self.assertEqual(service.get(dm, PROP_FAVORITE)["result"]["property"]["value"], "*")
        # The same persisted setting as capture set manager favorite.
        got = subprocess.run([capture_bin(), "get", "manager", "favorite"], env=service.env, capture_output=True,
                             text=True, timeout=20)
        self.assertEqual(got.stdout.strip(), "*", got)

        arrival = await client.arrival("D600", timeout=20)
        self.assertRegex(arrival["event"]["value"]["guid"], GUID)
        self.assertNotEqual(arrival["event"]["value"]["guid"], manager["event"]["value"]["guid"])
        device = await client.opendevice(arrival["event"]["value"]["guid"])
        address = service.get(device, PROP_BLUETOOTH_ADDRESS)["result"]["property"]
        self.assertEqual(address, {"id": PROP_BLUETOOTH_ADDRESS, "type": T_ARRAY, "value": [0x00, 0x11, 0x22, 0x7E, 0xF6, 0x19]})
        level = service.get(device, PROP_BATTERY_LEVEL)["result"]["property"]
        self.assertEqual(level["type"], T_ULONG)
        self.assertEqual((level["value"] >> 8) & 0xFF, 90)  # current level in byte 1, docs/capture-sdk.md §7.3

        rig.ctl("ScanText", D600_PATH, "4F", "HELLO-BLE")
        await client.decoded(device, "HELLO-BLE", timeout=15)

        # BatteryLevel events need the BatteryLevelChange bit (32) of NotificationsDevice (docs/capture-sdk.md §7.6).
        notifications = service.get(device, PROP_NOTIFICATIONS)["result"]["property"]
        self.assertEqual(notifications["type"], T_ULONG)
        self.assertNotIn("error", service.set(device, PROP_NOTIFICATIONS, T_ULONG, notifications["value"] | 32))
        mark = len(client.events())
        rig.ctl("SetBattery", D600_PATH, 42)
        battery = await client.wait(lambda r: r["event"]["id"] == EV_BATTERY_LEVEL, start=mark, timeout=15, what="BatteryLevel")
        self.assertEqual(battery["handle"], device)
        self.assertEqual(battery["event"]["type"], EVT_ULONG)
        self.assertEqual((battery["event"]["value"] >> 8) & 0xFF, 42)

        # DataConfirmationDevice good (0x15, docs/capture-sdk.md §7.4) is written to the scanner.
        rig.ctl("ClearWrites", D600_PATH)
        self.assertNotIn("error", service.set(device, PROP_DATA_CONFIRMATION, T_ULONG, 0x15))
        self.assertTrue(rig.ctl("GetWrites", D600_PATH), "the D600 received no write for DataConfirmationDevice")


PROP_START_DISCOVERY = 0x00130200
PROP_CONNECT_DISCOVERED = 0x00150203
EV_DEVICE_DISCOVERED, EV_DISCOVERY_END = 13, 14


class BluetoothLEDiscoveryTests(AsyncTestCase):
    async def test_start_discovery_reports_devices_then_its_end_and_connect_discovered_brings_one(self):
        rig, service = self.bluez_d600(new_d600=True)
        client = await self.event_client(service)
        manager = await client.wait(lambda r: r["event"]["id"] == EV_DEVICE_MANAGER_ARRIVAL, what="DeviceManagerArrival")
        dm = await client.opendevice(manager["event"]["value"]["guid"])
        mark = len(client.events())
        self.assertNotIn("error", service.set(dm, PROP_START_DISCOVERY, T_ULONG, 2))
        found = await client.wait(lambda r: r["event"]["id"] == EV_DEVICE_DISCOVERED and "7EF620" in json.dumps(r["event"]),
                                  start=mark, timeout=20, what="DeviceDiscovered of the D600 in range")
        self.assertEqual(found["handle"], dm)
        value = found["event"]["value"]
        self.assertIsInstance(value, dict)
        self.assertEqual(value.get("name"), "Socket D600 [7EF620]")
        self.assertIsInstance(value.get("identifierUuid"), str)
        end = await client.wait(lambda r: r["event"]["id"] == EV_DISCOVERY_END, start=mark, timeout=30, what="DiscoveryEnd")
        self.assertEqual(end["handle"], dm)
        self.assertIs(type(end["event"].get("result", 0)), int)

        mark = len(client.events())
        self.assertNotIn("error", service.set(dm, PROP_CONNECT_DISCOVERED, T_STRING, value["identifierUuid"]))
        arrival = await client.arrival("7EF620", timeout=20, start=mark)
        self.assertRegex(arrival["event"]["value"]["guid"], GUID)


class SocketCamTests(AsyncTestCase):
    """SocketCam with --dir DIR: enabled by the app through SocketCamStatus, frames from new files."""

    async def test_socketcam_status_byte_enables_it_and_images_dropped_in_the_dir_are_read(self):
        images, service = self.socketcam_dir_service()
        client = await EventClient(service).open()
        self.addAsyncCleanup(client.close)
        h_ = client.handle
        reply = service.set(h_, PROP_SOCKETCAM_STATUS, T_BYTE, 0)  # Enable (docs/capture-sdk.md §7.13)
        self.assertNotIn("error", reply)
        status = service.get(h_, PROP_SOCKETCAM_STATUS)["result"]["property"]
        self.assertEqual((status["id"], status["type"], status["value"]), (PROP_SOCKETCAM_STATUS, T_BYTE, 0))
        arrival = await client.arrival("SocketCam", timeout=15)
        device = await client.opendevice(arrival["event"]["value"]["guid"])

        qr = {"id": 38, "name": "", "status": -1, "flags": 1}
        ds = service.get(device, PROP_DATA_SOURCE, T_DATASOURCE, qr)["result"]["property"]
        self.assertEqual(ds["value"], {"id": 38, "name": "QR Code", "status": 1, "flags": 1})

        # Files are read while a scan runs, as a camera's frames are (TriggerDevice, docs/capture-sdk.md
        # §7.1): start reads until the first code; a file arriving after it is not read.
        def drop(name, text=None, content=None):
            tmp = os.path.join(images, ".tmp-" + name)
            if content is None:
                zint_png(tmp, text)
            else:
                with open(tmp, "wb") as f:
                    f.write(content)
            os.rename(tmp, os.path.join(images, name))

        self.assertNotIn("error", service.set(device, PROP_TRIGGER, T_BYTE, 1))  # Start
        drop("a.png", "CAM-QR-1")
        got = await client.decoded(device, "CAM-QR-1", timeout=15)
        self.assertEqual(got["event"]["value"]["id"], 38)
        self.assertEqual(got["event"]["value"]["name"], "QR Code")
        drop("b.png", "CAM-QR-NOSCAN")  # renamed in before the next scan arms its watch: never read

        # Continuous (5) reads every file until Stop (2); an image that cannot be read is an Error event
        # on the device handle, the SKT code in value.
        self.assertNotIn("error", service.set(device, PROP_TRIGGER, T_BYTE, 5))
        drop("c.png", "CAM-QR-2")
        drop("d.png", "CAM-QR-3")
        await client.decoded(device, "CAM-QR-3", timeout=15)
        # The device's events come in order: CAM-QR-NOSCAN, had it been read, would be here before the
        # codes of the later scan.
        self.assertEqual([t for t in client.decoded_texts(device)], [b"CAM-QR-1", b"CAM-QR-2", b"CAM-QR-3"])
        mark = len(client.events())
        drop("e.png", content=b"\x89PNG\r\n\x1a\nbroken")
        error = await client.wait(lambda r: r["event"]["id"] == EV_ERROR, start=mark, timeout=15, what="Error")
        self.assertEqual(error["handle"], device)
        self.assertEqual(error["event"]["type"], EVT_ULONG)
        self.assertEqual(error["event"]["value"], ESKT_UNABLEREADFILE)
        self.assertNotIn("error", service.set(device, PROP_TRIGGER, T_BYTE, 2))

        # Disable: SocketCam leaves; the setting is persisted (it is the state of set socketcam).
        mark = len(client.events())
        self.assertNotIn("error", service.set(h_, PROP_SOCKETCAM_STATUS, T_BYTE, 1))
        removal = await client.wait(lambda r: r["event"]["id"] == EV_DEVICE_REMOVAL, start=mark, what="DeviceRemoval")
        self.assertEqual(removal["event"]["value"]["guid"], arrival["event"]["value"]["guid"])
        got = subprocess.run([capture_bin(), "get", "socketcam", "socket-cam-status"], env=service.env,
                             capture_output=True, text=True, timeout=20)
        self.assertEqual(got.stdout.strip(), "disable", got)


ALLOWED_ORIGINS = ["http://localhost:8080", "http://127.0.0.1:3000", "http://127.9.8.7:1", "http://[::1]:5000",
                   "http://localhost"]
# `null` is every sandboxed iframe and opaque origin of any website (docs/capturejs.md §1.3).
REFUSED_ORIGINS = ["http://evil.example", "https://singleentry.socketmobile.dev", "http://localhost.evil.example:80",
                   "http://128.0.0.1:80", "null", "file://"]


def preflight(service, origin, private_network=False, host=None):
    headers = {"Origin": origin, "Access-Control-Request-Method": "POST",
               "Access-Control-Request-Headers": "content-type"}
    if private_network:
        headers["Access-Control-Request-Private-Network"] = "true"
    return service.http("OPTIONS", headers=headers, host=host)


def oversized_post(port, size):
    """A POST with a body of `size` bytes; the status the service answers with (it may answer and
    close before reading all of it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall((f"POST {API} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                   f"Content-Length: {size}\r\n\r\n").encode())
        try:
            chunk = b" " * 65536
            sent = 0
            while sent < size:
                n = min(len(chunk), size - sent)
                s.sendall(chunk[:n])
                sent += n
        except (BrokenPipeError, ConnectionResetError):
            pass
        head = read_head(s, b"\r\n")
    return int(head.split(b" ")[1]) if head.startswith(b"HTTP/") else None


class SecurityTests(AsyncTestCase):
    @classmethod
    def setUpClass(cls):
        cls.service = Service()

    @classmethod
    def tearDownClass(cls):
        cls.service.stop()

    def test_a_host_that_is_not_loopback_with_the_served_port_is_refused(self):
        port = self.service.port
        for host in ("evil.example", f"evil.example:{port}", f"localhost:{port + 1}", f"192.168.1.5:{port}",
                     f"127.0.0.1.evil.example:{port}"):
            with self.subTest(host=host):
                status, _, _ = self.service.post({"jsonrpc": "2.0", "id": 1, "method": "openclient", "params": APP_INFO},
                                                 host=host)
                self.assertEqual(status, 403)
                self.assertEqual(preflight(self.service, "http://localhost:1", host=host)[0], 403)
                self.assertEqual(raw_upgrade(port, host=host)[0], 403)

    def test_loopback_hosts_with_the_served_port_are_accepted(self):
        port = self.service.port
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"127.3.2.1:{port}", f"[::1]:{port}", f"LOCALHOST:{port}"):
            with self.subTest(host=host):
                status, _, reply = self.service.post({"jsonrpc": "2.0", "id": 1, "method": "openclient", "params": APP_INFO},
                                                     host=host)
                self.assertEqual(status, 200)
                self.assertNotEqual(reply["result"]["handle"], 0)
                self.assertEqual(raw_upgrade(port, host=host)[0], 101)

    def test_a_refused_origin_gets_403_on_preflight_post_and_upgrade_and_one_stderr_line(self):
        origin = "http://evil.example"
        status, headers, _ = preflight(self.service, origin)
        self.assertEqual(status, 403)
        self.assertNotIn("access-control-allow-origin", headers)
        status, headers, _ = self.service.post({"jsonrpc": "2.0", "id": 1, "method": "openclient", "params": APP_INFO},
                                               headers={"Origin": origin})
        self.assertEqual(status, 403)
        self.assertNotIn("access-control-allow-origin", headers)
        self.assertEqual(raw_upgrade(self.service.port, origin=origin)[0], 403)
        lines = self.service.wait_stderr(lambda line: origin in line and "--allow-origin" in line)
        self.assertTrue(lines, f"no stderr line names {origin} and --allow-origin: {self.service.stderr()}")
        # One line for the origin, not one per request (a page retrying must not flood the journal).
        for _ in range(3):
            self.assertEqual(preflight(self.service, origin)[0], 403)
            self.assertEqual(raw_upgrade(self.service.port, origin=origin)[0], 403)
        # The marker: a refusal of a new origin after those, logged before its 403 (as every refusal
        # line is); stderr is in order, so a second line for the first origin would be before it.
        marker = f"http://marker-{uuid.uuid4().hex[:8]}.example"
        self.assertEqual(preflight(self.service, marker)[0], 403)
        self.assertTrue(self.service.wait_stderr(lambda line: marker in line), self.service.stderr())
        self.assertEqual(len([line for line in self.service.stderr() if origin in line]), 1, self.service.stderr())

    def test_other_refused_origins(self):
        for origin in REFUSED_ORIGINS[1:]:
            with self.subTest(origin=origin):
                self.assertEqual(preflight(self.service, origin)[0], 403)
                status, _, _ = self.service.post({"jsonrpc": "2.0", "id": 1, "method": "openclient", "params": APP_INFO},
                                                 headers={"Origin": origin})
                self.assertEqual(status, 403)
                self.assertEqual(raw_upgrade(self.service.port, origin=origin)[0], 403)

    def test_loopback_origins_get_the_cors_headers(self):
        for origin in ALLOWED_ORIGINS:
            with self.subTest(origin=origin):
                status, headers, _ = preflight(self.service, origin)
                self.assertIn(status, (200, 204))
                self.assertEqual(headers.get("access-control-allow-origin"), origin)
                self.assertIn("origin", headers.get("vary", "").lower())
                methods = {m.strip() for m in headers.get("access-control-allow-methods", "").split(",")}
                self.assertTrue({"POST", "OPTIONS"} <= methods, headers)
                allowed = {m.strip().lower() for m in headers.get("access-control-allow-headers", "").split(",")}
                self.assertIn("content-type", allowed)
                self.assertNotIn("access-control-allow-private-network", headers)
                status, headers, reply = self.service.post(
                    {"jsonrpc": "2.0", "id": 1, "method": "openclient", "params": APP_INFO}, headers={"Origin": origin})
                self.assertEqual(status, 200)
                self.assertEqual(headers.get("access-control-allow-origin"), origin)
                self.assertNotEqual(reply["result"]["handle"], 0)
                self.assertEqual(raw_upgrade(self.service.port, origin=origin)[0], 101)

    def test_preflight_answers_private_network_access_when_asked(self):
        status, headers, _ = preflight(self.service, "http://localhost:8080", private_network=True)
        self.assertIn(status, (200, 204))
        self.assertEqual(headers.get("access-control-allow-private-network"), "true")

    def test_no_origin_header_is_allowed(self):
        status, _, reply = self.service.post({"jsonrpc": "2.0", "id": 1, "method": "openclient", "params": APP_INFO})
        self.assertEqual(status, 200)
        self.assertEqual(raw_upgrade(self.service.port)[0], 101)

    def test_a_body_over_1_mib_is_413_and_the_service_keeps_serving(self):
        self.assertEqual(oversized_post(self.service.port, (1 << 20) + 1), 413)
        self.assertEqual(oversized_post(self.service.port, 8 << 20), 413)
        self.service.openclient()
        # Exactly 1 MiB is within the bound.
        doc = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "openclient", "params": APP_INFO}).encode()
        body = doc + b" " * ((1 << 20) - len(doc))
        status, _, reply = self.service.post(body)
        self.assertEqual(status, 200)
        self.assertNotEqual(reply["result"]["handle"], 0)


class AllowOriginTests(unittest.TestCase):
    def test_allow_origin_adds_an_origin_and_refuses_the_rest(self):
        service = Service(extra=["--allow-origin", "https://singleentry.socketmobile.dev",
                                 "--allow-origin", "http://kiosk.example:8000"])
        self.addCleanup(service.stop)
        for origin in ("https://singleentry.socketmobile.dev", "http://kiosk.example:8000", "http://localhost:9"):
            with self.subTest(origin=origin):
                status, headers, _ = preflight(service, origin, private_network=True)
                self.assertIn(status, (200, 204))
                self.assertEqual(headers.get("access-control-allow-origin"), origin)
                self.assertEqual(headers.get("access-control-allow-private-network"), "true")
                self.assertEqual(raw_upgrade(service.port, origin=origin)[0], 101)
        for origin in ("http://evil.example", "https://singleentry.socketmobile.dev.evil.example", "http://kiosk.example:8001"):
            with self.subTest(origin=origin):
                self.assertEqual(preflight(service, origin)[0], 403)

    def test_allow_origin_star_written_out_allows_any_origin(self):
        service = Service(extra=["--allow-origin", "*"])
        self.addCleanup(service.stop)
        status, headers, _ = preflight(service, "http://evil.example")
        self.assertIn(status, (200, 204))
        self.assertIn(headers.get("access-control-allow-origin"), ("http://evil.example", "*"))
        self.assertEqual(raw_upgrade(service.port, origin="http://evil.example")[0], 101)
        # The Host check still holds (DNS rebinding).
        self.assertEqual(preflight(service, "http://evil.example", host="evil.example")[0], 403)


def non_loopback_ipv4():
    """An address of this machine outside 127.0.0.0/8, or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


class ListenAddressTests(unittest.TestCase):
    def test_the_listen_host_is_an_accepted_host_and_other_names_are_not(self):
        address = non_loopback_ipv4()
        if address is None:
            self.skipTest("*** SKIPPED: this machine has no IPv4 address outside 127.0.0.0/8")
        service = Service(host=address)
        self.addCleanup(service.stop)
        request = {"jsonrpc": "2.0", "id": 1, "method": "openclient", "params": APP_INFO}
        status, _, reply = service.post(request)  # Host: ADDRESS:PORT, the --listen value
        self.assertEqual(status, 200)
        self.assertNotEqual(reply["result"]["handle"], 0)
        self.assertEqual(service.post(request, host=f"localhost:{service.port}")[0], 200)
        self.assertEqual(service.post(request, host=f"evil.example:{service.port}")[0], 403)
        self.assertEqual(service.post(request, host=f"{address}:{service.port + 1}")[0], 403)
        # Loopback only unless --listen names another address: nothing answers on 127.0.0.1 here.
        with self.assertRaises(OSError):
            socket.create_connection(("127.0.0.1", service.port), timeout=2).close()


class LifecycleTests(AsyncTestCase):
    def test_one_stderr_line_when_it_accepts_connections(self):
        service = Service()
        self.addCleanup(service.stop)
        lines = service.wait_stderr(lambda line: service.listen in line)
        self.assertEqual(len(lines), 1, service.stderr())

    async def test_kill_9_closes_the_socket_abnormally(self):
        service = Service()
        self.addCleanup(service.stop)
        client = await EventClient(service).open()  # returns once the upgrade is answered (101)
        service.signal(signal.SIGKILL)
        self.assertEqual(await client.wait_closed(), 1006)

    async def test_sigterm_and_sigint_send_close_1001_and_exit_0(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(signal=sig.name):
                scanner = PtyScanner()
                self.addCleanup(scanner.close)
                service = Service([scanner.selector])
                self.addCleanup(service.stop)
                clients = [await EventClient(service).open(), await EventClient(service, "/").open()]
                await clients[0].arrival(scanner.path)
                service.signal(sig)
                for c in clients:
                    self.assertEqual(await c.wait_closed(), 1001)
                self.assertEqual(service.proc.wait(10), 0, service.stderr())

    def test_a_port_in_use_is_a_clear_error_before_any_device_opens(self):
        busy = socket.socket()
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        self.addCleanup(busy.close)
        port = busy.getsockname()[1]
        # A DataMan-shaped TCP device that would be connected to if a device were opened.
        device = socket.socket()
        device.bind(("127.0.0.1", 0))
        device.listen(4)
        device.settimeout(0)
        self.addCleanup(device.close)
        scanner = PtyScanner()
        self.addCleanup(scanner.close)
        service = Service([f"tcp://127.0.0.1:{device.getsockname()[1]}", scanner.selector], port=port, wait=False)
        self.addCleanup(service.stop)
        status = service.proc.wait(20)
        service._reader.join(30)
        self.assertNotEqual(status, 0)
        text = "\n".join(service.stderr())
        self.assertIn(str(port), text)
        self.assertRegex(text.lower(), r"in use|address already")
        with self.assertRaises(BlockingIOError):
            device.accept()
        self.assertEqual(fds_of_others(scanner.path), [])


class SystemdUnitTests(unittest.TestCase):
    def test_make_install_service_installs_both_units_and_systemd_analyze_verifies_them(self):
        analyze = shutil.which("systemd-analyze")
        if analyze is None:
            self.skipTest("*** SKIPPED: systemd-analyze is not installed (apt-get install systemd)")
        work = tempfile.mkdtemp(prefix="capture-serve-units.")
        self.addCleanup(shutil.rmtree, work, True)
        prefix = os.path.join(work, "prefix")
        make = subprocess.run(["make", "-C", ROOT, "--no-print-directory", "install-service", f"PREFIX={prefix}"],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(make.returncode, 0, make)
        units = {}
        for dirpath, _, names in os.walk(prefix):
            for name in names:
                if name.startswith("capture-serve."):
                    units[name] = os.path.join(dirpath, name)
        self.assertEqual(sorted(units), ["capture-serve.service", "capture-serve.socket"])
        with open(units["capture-serve.socket"]) as f:
            socket_text = f.read()
        self.assertRegex(socket_text, r"(?m)^ListenStream=127\.0\.0\.1:18481\s*$")
        with open(units["capture-serve.service"]) as f:
            service_text = f.read()
        self.assertRegex(service_text, rf"(?m)^ExecStart={prefix}/bin/capture serve")
        # The verifier checks that ExecStart's program exists: give it the capture under test.
        os.makedirs(os.path.join(prefix, "bin"), exist_ok=True)
        os.symlink(capture_bin(), os.path.join(prefix, "bin", "capture"))
        runtime = os.path.join(work, "runtime")
        os.mkdir(runtime, 0o700)
        user = "/lib/systemd/user/" in units["capture-serve.service"]
        verify = subprocess.run([analyze, "verify", *(["--user"] if user else []), "--man=no",
                                 units["capture-serve.socket"], units["capture-serve.service"]],
                                capture_output=True, text=True, timeout=60, env=dict(os.environ, XDG_RUNTIME_DIR=runtime))
        self.assertEqual(verify.returncode, 0, verify)
        self.assertEqual((verify.stdout, verify.stderr), ("", ""))


if __name__ == "__main__":
    if len(sys.argv) > 1 and os.path.isfile(sys.argv[1]):
        os.environ["CAPTURE_BIN"] = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
