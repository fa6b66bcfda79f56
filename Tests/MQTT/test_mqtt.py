"""`capture listen|serve --mqtt` end to end: the real binary, a real broker (Debian's mosquitto on a free
loopback port, started, stopped and killed here: Tests/MQTT/broker.py), real devices from the project's
rigs (pty serial scanners, the DataMan simulator, a D600 on the BlueZ model) and a paho-mqtt subscriber.
The contract checked is the fleet one of docs/fleet.md: topics PREFIX/HOST/status (retained online, the
Last Will and a clean stop offline), PREFIX/HOST/devices (retained, the objects of list --json),
PREFIX/HOST/events/DEVICE/EVENT (QoS 1, the --json event plus host and eventId; DEVICE with % / + #
written %25 %2F %2B %23), PREFIX/HOST/commands and PREFIX/HOST/replies/ID; the on-disk spool that loses
nothing across a broker outage or kill -9; --confirm-delivery; remote commands.

Run: CAPTURE_BIN=.build/debug/capture /usr/bin/python3 -m unittest discover -s Tests/MQTT -v
"""
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "Service"))
from broker import Broker, Subscriber, retained  # noqa: E402
from serve_harness import BlueZRig, DataManSimulator, PtyScanner, capture_bin, free_port  # noqa: E402

HOST = "testhost"
PREFIX = "fleet"
BASE = f"{PREFIX}/{HOST}"
# Exit statuses are the SKT result codes negated (docs/capture-sdk.md §1; docs/fleet.md §5, §6).
EXIT_INVALID_PARAMETER = 18  # ESKT_INVALIDPARAMETER: every usage error
EXIT_COMMAND_DENIED = 37  # ESKT_COMMANDDENIED: a broker refusing the login, a remote command not allowed
EXIT_INVALID_FORMAT = 85  # ESKT_INVALIDFORMAT: a malformed remote request
ESKT_QUEUERESETED = -45  # the error event of a code refused by a full spool

D600 = "00:11:22:7E:F6:19"
D600_PATH = "/org/bluez/hci0/dev_00_11_22_7E_F6_19"
D600_SCAN_CONTROL = "833a2364-bca0-4647-8113-478e1fc449ba"  # the verdict's write (docs/device-protocols.md)
D600_CONFIG = "1254fc72-336e-4bb2-a0a8-71c7d28d73ce"  # written at bring-up


def setUpModule():
    if not os.access(capture_bin(), os.X_OK):
        raise unittest.SkipTest(f"*** SKIPPED: no capture binary at {capture_bin()} (set CAPTURE_BIN)")
    if not os.access("/usr/sbin/mosquitto", os.X_OK):
        raise unittest.SkipTest("*** SKIPPED: no /usr/sbin/mosquitto (Debian package mosquitto)")


def topic_safe(device_id):
    """DEVICE as one topic level, as docs/fleet.md writes it: % first, then / + #."""
    return (device_id.replace("%", "%25").replace("/", "%2F").replace("+", "%2B").replace("#", "%23"))


def event_topic(device_id, event):
    return f"{BASE}/events/{topic_safe(device_id)}/{event}"


def is_event(m):
    return m.topic.startswith(f"{BASE}/events/")


def decoded(m):
    return is_event(m) and m.topic.endswith("/decodedData")


def spool_records(state, host=HOST):
    """What capture's spool holds on disk, oldest first, as (header, payload) pairs: the segment files
    $XDG_STATE_HOME/capture/spool/HOST/*.seg of `u32 length | u32 CRC-32 | body` records (little-endian),
    the body a JSON header line ({"eventId","seq","topic"}) and the published payload (docs/fleet.md §4;
    Sources/CaptureMQTT/SpoolFiles.swift). A record still being written (torn) ends the reading."""
    directory = os.path.join(state, "capture", "spool", host)
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".seg"))
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        try:
            with open(os.path.join(directory, name), "rb") as f:
                data = f.read()
        except FileNotFoundError:  # an acknowledged segment deleted meanwhile
            continue
        at = 0
        while len(data) - at >= 8:
            length, crc = struct.unpack_from("<II", data, at)
            body = data[at + 8:at + 8 + length]
            if len(body) < length or zlib.crc32(body) != crc:
                break
            head, _, payload = body.partition(b"\n")
            out.append((json.loads(head), payload))
            at += 8 + length
    return out


def spool_drained(state, host=HOST):
    """True when the spool's `acked` file says the broker acknowledged every record (floor == next):
    the publisher has freed all its room (it saves the file after counting the PUBACKs)."""
    try:
        with open(os.path.join(state, "capture", "spool", host, "acked")) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return False
    return doc.get("floor") == doc.get("next")


def unique_events(messages):
    """The messages deduplicated on eventId as a consumer does: first arrival kept, in arrival order.
    Every copy of one eventId must carry the same event (stable across retries)."""
    first, order = {}, []
    for m in messages:
        doc = m.json()
        key = doc["eventId"]
        if key in first:
            assert first[key] == doc, f"eventId {key} published twice with different events: {first[key]} / {doc}"
            continue
        first[key] = doc
        order.append(doc)
    return order


class Capture:
    """One `capture listen` (or `serve`) process with --mqtt, its stdout (JSON Lines with --json) and
    stderr kept line by line. The state directory is private unless one is handed in (a restart
    with the same spool)."""

    def __init__(self, broker, devices=(), extra=(), command="listen", url=None, state=None, json_out=True,
                 env=None, mqtt=True, stdin=subprocess.DEVNULL):
        self.state = state or tempfile.mkdtemp(prefix="capture-mqtt-test.")
        self.own_state = state is None
        if mqtt and url is None:
            url = f"mqtt://{broker.host}:{broker.port}/{PREFIX}"
        argv = [capture_bin()] + (["--json"] if json_out else []) + [command, *devices]
        if command == "serve":
            self.http_port = free_port()
            argv += ["--listen", f"127.0.0.1:{self.http_port}"]
        if mqtt:
            argv += ["--mqtt", url, "--mqtt-host-id", HOST]
        self.argv = argv + list(extra)
        self.env = dict(os.environ, XDG_STATE_HOME=self.state, NO_COLOR="1", **(env or {}))
        self.out_lines, self.err_lines = [], []
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(self.argv, env=self.env, stdin=stdin, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.readers = [threading.Thread(target=self._read, args=(self.proc.stdout, self.out_lines), daemon=True),
                        threading.Thread(target=self._read, args=(self.proc.stderr, self.err_lines), daemon=True)]
        for t in self.readers:
            t.start()

    def _read(self, stream, lines):
        for raw in stream:
            with self.lock:
                lines.append(raw.decode(errors="replace").rstrip("\n"))

    def stdout(self):
        with self.lock:
            return list(self.out_lines)

    def stderr(self):
        with self.lock:
            return list(self.err_lines)

    def events(self):
        out = []
        for line in self.stdout():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    def wait_exit(self, seconds=20):
        """The exit status once the process ended and its output was read to the end (None after
        `seconds`). The readers are waited for: a process's exit does not mean its last lines are in
        err_lines yet (CI, on a loaded machine: exit 18 seen with no stderr line read)."""
        try:
            status = self.proc.wait(seconds)
        except subprocess.TimeoutExpired:
            return None
        for t in self.readers:
            t.join(30)
        return status

    def terminate(self, seconds=15):
        """SIGTERM, the clean stop; the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        status = self.wait_exit(seconds)
        if status is None:
            self.proc.kill()
            status = self.proc.wait()
        for t in self.readers:
            t.join(2)
        return status

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        for t in self.readers:
            t.join(2)

    def describe(self):
        return f"{self.argv}\nexit {self.proc.poll()}\nstderr:\n" + "\n".join(self.stderr()[-30:])

    def wait_for(self, condition, seconds, what):
        """Until condition() is true (returns its value); fails naming `what` after `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not within {seconds} s\n{self.describe()}\nstdout:\n"
                                     + "\n".join(self.stdout()[-20:]))
            time.sleep(0.05)

    def spooled(self, predicate=lambda doc: True):
        """The payloads (event objects) of the spool's records matching predicate(payload)."""
        docs = []
        for header, payload in spool_records(self.state):
            try:
                doc = json.loads(payload)
            except ValueError:
                continue
            if predicate(doc):
                docs.append(doc)
        return docs

    def wait_spooled(self, predicate, count=1, seconds=30, what="the record in the spool"):
        """Until the spool on disk holds `count` records matching predicate(payload): capture read the
        event and wrote it (fsync follows the write at once; a kill -9 loses nothing written)."""
        return self.wait_for(lambda: (lambda d: d if len(d) >= count else None)(self.spooled(predicate)),
                             seconds, what)

    def error_events(self, text=None):
        """The --json error events on stdout (naming `text` when given)."""
        return [e for e in self.events() if e.get("event") == "error"
                and (text is None or text in e.get("error", {}).get("message", ""))]

    def close(self):
        if self.proc.poll() is None:
            self.terminate()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        if self.own_state:
            shutil.rmtree(self.state, ignore_errors=True)


class Fixture(unittest.TestCase):
    def broker(self, **kw):
        b = Broker(**kw)
        self.addCleanup(b.close)
        return b

    def subscriber(self, broker, topic=f"{PREFIX}/#", **kw):
        s = Subscriber(broker, topic, **kw)
        self.addCleanup(s.close)
        return s

    def scanner(self):
        s = PtyScanner()
        self.addCleanup(s.close)
        return s

    def capture(self, broker, *args, **kw):
        c = Capture(broker, *args, **kw)
        self.addCleanup(c.close)
        return c

    def wait_online(self, sub, cap, seconds=20):
        try:
            return sub.wait(lambda m: m.topic == f"{BASE}/status" and m.json().get("state") == "online", seconds,
                            what="status online")
        except AssertionError as error:
            raise AssertionError(f"{error}\n{cap.describe()}") from None

    def wait_opened(self, scanner, cap):
        self.assertTrue(scanner.wait_opened(), f"capture never opened {scanner.path}\n{cap.describe()}")

    def wait_codes(self, sub, count, seconds=30, prefix=None):
        """Until `count` distinct eventIds of decodedData arrived (texts starting with prefix)."""
        deadline = time.monotonic() + seconds
        while True:
            msgs = sub.snapshot(f"{BASE}/events/")
            docs = [d for d in unique_events([m for m in msgs if decoded(m)])
                    if prefix is None or d.get("text", "").startswith(prefix)]
            if len(docs) >= count or time.monotonic() > deadline:
                return docs
            time.sleep(0.1)


class TopicsTests(Fixture):
    def test_status_devices_and_events_have_the_documented_topics_keys_and_flags(self):
        broker = self.broker()
        sub = self.subscriber(broker)
        scanner = self.scanner()
        cap = self.capture(broker, [scanner.selector])
        self.wait_opened(scanner, cap)
        online = self.wait_online(sub, cap)
        self.assertEqual(online.qos, 1)
        self.assertEqual(online.json()["state"], "online")
        self.assertEqual(online.json()["host"], HOST)
        self.assertIsInstance(online.json()["version"], str)
        self.assertIsInstance(online.json()["since"], str)

        # Two codes: one event topic per code, QoS 1, the --json event plus host and eventId.
        scanner.write("MQTT-1")
        scanner.write("MQTT-2")
        got = self.wait_codes(sub, 2)
        self.assertEqual([d["text"] for d in got], ["MQTT-1", "MQTT-2"], cap.describe())
        msgs = [m for m in sub.snapshot() if decoded(m)]
        # The serial device id has slashes: one topic level, / written %2F (docs/fleet.md).
        self.assertIn("/", scanner.selector)
        self.assertEqual({m.topic for m in msgs}, {event_topic(scanner.selector, "decodedData")})
        self.assertEqual({m.qos for m in msgs}, {1})
        self.assertEqual({m.retain for m in msgs}, {False})
        for doc in got:
            self.assertEqual(doc["host"], HOST)
            self.assertIsInstance(doc["eventId"], str)
            self.assertTrue(doc["eventId"])
            self.assertEqual(doc["event"], "decodedData")
            self.assertEqual(doc["device"]["id"], scanner.selector)
        self.assertNotEqual(got[0]["eventId"], got[1]["eventId"])
        # The same object as the --json line on stdout, key for key, plus host and eventId.
        printed = [e for e in cap.events() if e.get("event") == "decodedData"]
        self.assertEqual(len(printed), 2, cap.stdout())
        for doc, line in zip(got, printed):
            self.assertEqual({k: v for k, v in doc.items() if k not in ("host", "eventId")}, line)
        # The arrival is an event too, on its own EVENT level.
        arrival = sub.wait(lambda m: m.topic == event_topic(scanner.selector, "deviceArrival"), 5,
                           what="deviceArrival event")
        self.assertEqual(arrival.json()["device"]["id"], scanner.selector)

        # The devices topic is retained and lists the scanner as list --json objects.
        devices = retained(broker, f"{BASE}/devices")
        self.assertIsNotNone(devices, "no retained PREFIX/HOST/devices")
        self.assertEqual(devices.qos, 1)
        doc = devices.json()
        self.assertEqual(list(doc), ["devices"], doc)
        mine = [d for d in doc["devices"] if d.get("id") == scanner.selector]
        self.assertEqual(len(mine), 1, doc)
        self.assertEqual(mine[0]["state"], "connected")
        self.assertEqual(mine[0]["name"], got[0]["device"]["name"])
        self.assertEqual((mine[0]["type"], mine[0]["typeName"]), (got[0]["device"]["type"], got[0]["device"]["typeName"]))
        status = retained(broker, f"{BASE}/status")
        self.assertEqual(status.json()["state"], "online")

        # SIGTERM, the clean stop: exit 0 and the retained status says offline.
        self.assertEqual(cap.terminate(), 0, cap.describe())
        offline = retained(broker, f"{BASE}/status")
        self.assertIsNotNone(offline)
        self.assertEqual(offline.json(), {"state": "offline"})

    def test_serve_accepts_mqtt_and_publishes_its_devices_events(self):
        broker = self.broker()
        sub = self.subscriber(broker)
        scanner = self.scanner()
        cap = self.capture(broker, [scanner.selector], command="serve", json_out=False)
        self.wait_opened(scanner, cap)
        self.wait_online(sub, cap)
        scanner.write("FROM-SERVE")
        got = self.wait_codes(sub, 1)
        self.assertEqual([d["text"] for d in got], ["FROM-SERVE"], cap.describe())
        self.assertEqual(got[0]["host"], HOST)
        self.assertEqual(got[0]["device"]["id"], scanner.selector)
        self.assertEqual(cap.terminate(), 0, cap.describe())
        self.assertEqual(retained(broker, f"{BASE}/status").json(), {"state": "offline"})


class NothingLostTests(Fixture):
    def test_broker_down_5s_while_500_codes_are_read_from_2_scanners_all_arrive_once_in_order(self):
        # A persistent consumer session (clean session off) on a broker that keeps sessions, the way a
        # fleet consumes: messages capture publishes while the consumer reconnects wait in its session.
        broker = self.broker(persistence=True)
        sub = self.subscriber(broker, session="fleet-consumer")
        scanners = [self.scanner(), self.scanner()]
        cap = self.capture(broker, [s.selector for s in scanners], json_out=False)
        for s in scanners:
            self.wait_opened(s, cap)
        self.wait_online(sub, cap)
        texts = {s.selector: [f"S{i}-{n:04d}" for n in range(250)] for i, s in enumerate(scanners)}

        def write(lo, hi, pause=0.0):
            for n in range(lo, hi):
                for s in scanners:
                    s.write(texts[s.selector][n])
                if pause:
                    time.sleep(pause)

        write(0, 50)
        self.assertEqual(len(self.wait_codes(sub, 100)), 100, cap.describe())
        broker.stop()
        down = time.monotonic()
        write(50, 250, pause=4.0 / 200)  # 400 codes over about 4 s with the broker down
        time.sleep(max(0.0, 5.0 - (time.monotonic() - down)))
        self.assertIsNone(cap.proc.poll(), f"capture exited while the broker was down\n{cap.describe()}")
        broker.start()
        docs = self.wait_codes(sub, 500, seconds=60)
        self.assertEqual(len(docs), 500, cap.describe())
        for s in scanners:
            got = [d["text"] for d in docs if d["device"]["id"] == s.selector]
            self.assertEqual(got, texts[s.selector], f"per-device order of {s.selector}")
        self.assertEqual(len({d["eventId"] for d in docs}), 500)

    def test_kill9_leaves_the_will_offline_and_the_spool_is_published_on_the_next_start(self):
        broker = self.broker()
        sub = self.subscriber(broker)
        scanner = self.scanner()
        state = tempfile.mkdtemp(prefix="capture-mqtt-test.")
        self.addCleanup(shutil.rmtree, state, True)
        cap = self.capture(broker, [scanner.selector], state=state, json_out=False)
        self.wait_opened(scanner, cap)
        self.wait_online(sub, cap)
        scanner.write("BEFORE-KILL")
        self.assertEqual(len(self.wait_codes(sub, 1)), 1, cap.describe())

        # kill -9: no clean DISCONNECT, the broker publishes the Last Will, retained.
        mark = len(sub.snapshot())
        cap.kill9()
        will = sub.wait(lambda m: m.topic == f"{BASE}/status" and m.json().get("state") == "offline", 10,
                        what="the Last Will")
        self.assertIn(will, sub.snapshot()[mark:])
        self.assertEqual(retained(broker, f"{BASE}/status").json(), {"state": "offline"})

        # Broker down, codes read into the spool, capture killed before it could publish them.
        cap2 = self.capture(broker, [scanner.selector], state=state, json_out=False)
        self.wait_opened(scanner, cap2)
        self.wait_online(sub, cap2)
        n = sub.subscriptions
        broker.stop()
        spooled = [f"SPOOLED-{n:02d}" for n in range(20)]
        for text in spooled:
            scanner.write(text)
        # kill -9 once every code is read and written to the spool's segment (not before: a code still
        # in the pty or in capture's memory is not what this test is about).
        cap2.wait_spooled(lambda d: d.get("text", "").startswith("SPOOLED-"), len(spooled),
                          what="the 20 codes written to the spool before kill -9")
        cap2.kill9()
        broker.start()
        sub.wait_resubscribed(n)
        cap3 = self.capture(broker, [scanner.selector], state=state, json_out=False)
        docs = self.wait_codes(sub, 20, prefix="SPOOLED-")
        self.assertEqual([d["text"] for d in docs], spooled, cap3.describe())
        self.assertEqual({d["host"] for d in docs}, {HOST})

    def test_a_full_spool_refuses_new_codes_and_keeps_every_old_one(self):
        # A persistent consumer session on a broker that keeps it: what capture publishes as soon as it
        # is back waits in the session if it comes before the subscriber's own reconnection.
        broker = self.broker(persistence=True)
        sub = self.subscriber(broker, session="fleet-consumer")
        n = sub.subscriptions
        broker.stop()  # capture starts with the broker down and keeps trying
        scanner = self.scanner()
        cap = self.capture(broker, [scanner.selector], extra=["--mqtt-spool-max", "5"])
        self.wait_opened(scanner, cap)
        # The device's arrival is spooled first and takes one of the 5 places.
        cap.wait_spooled(lambda d: d.get("event") == "deviceArrival", what="the arrival in the spool")
        codes = [f"FULL-{i}" for i in range(8)]
        for text in codes:
            scanner.write(text)
        # Every code ends either in the spool or refused with an error event.
        full = lambda d: d.get("event") == "decodedData" and d.get("text", "").startswith("FULL-")
        cap.wait_for(lambda: len(cap.spooled(full)) + len(cap.error_events("FULL-")) >= len(codes), 30,
                     "an outcome (spooled, or refused with an error event) for each of the 8 codes")
        self.assertIsNone(cap.proc.poll(), cap.describe())
        # Each refused code is an error event ESKT_QUEUERESETED naming --mqtt-spool-max (docs/fleet.md §4).
        errors = cap.error_events()
        self.assertTrue(errors, f"a full spool refused codes silently\n{cap.describe()}\n{cap.stdout()}")
        for e in errors:
            self.assertEqual(e["error"]["code"], ESKT_QUEUERESETED, e)
            self.assertIn("--mqtt-spool-max", e["error"]["message"])
        room = 5 - len(cap.spooled(lambda d: not full(d)))
        self.assertEqual([d["text"] for d in cap.spooled(full)], codes[:room], cap.describe())
        self.assertEqual([t for t in codes if cap.error_events(f"{t} not sent")], codes[room:], errors)
        self.assertEqual(len(errors), len(codes) - room, errors)
        broker.start()
        sub.wait_resubscribed(n)
        sub.wait(lambda m: m.topic == event_topic(scanner.selector, "deviceArrival"), 20, what="the spooled arrival")
        self.wait_codes(sub, room, seconds=30, prefix="FULL-")
        # As PUBACKs free the spool, codes are taken again.
        cap.wait_for(lambda: spool_drained(cap.state), 30, "the broker's PUBACKs for every spooled record")
        scanner.write("AFTER-DRAIN")
        self.assertEqual([d["text"] for d in self.wait_codes(sub, 1, prefix="AFTER-")], ["AFTER-DRAIN"])
        # One device's events are published in spool order: AFTER-DRAIN came after everything the spool
        # held, so a refused code that was spooled after all would have arrived before it.
        texts = [d["text"] for d in self.wait_codes(sub, 0, seconds=0, prefix="FULL-")]
        self.assertEqual(texts, codes[:room], cap.describe())


def tiny_tmpfs(size):
    """A tmpfs of `size` bytes on a fresh directory (mount(2) needs root), or None when it cannot be
    mounted; unmount with umount_tiny()."""
    path = tempfile.mkdtemp(prefix="capture-mqtt-full.")
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", path],
                                           capture_output=True).returncode != 0:
        os.rmdir(path)
        return None
    return path


def umount_tiny(path):
    subprocess.run(["umount", "-l", path], capture_output=True)
    shutil.rmtree(path, ignore_errors=True)


def fill_but(path, room):
    """Fills the file system of `path` with a file of its own, then frees `room` bytes of it: what is
    left is all the spool can use."""
    filler = os.path.join(path, "filler")
    chunk = b"\0" * 4096
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(chunk)
        except OSError:
            pass
        f.truncate(max(0, f.tell() - room))


class FullDiskTests(Fixture):
    def test_a_full_disk_is_said_once_and_codes_are_taken_again_once_the_broker_acknowledged(self):
        # docs/fleet.md §4 (a full disk). It once went wrong: after the broker had acknowledged every
        # record on a full file system, every new code was refused for ever ("not sent: No space left on
        # device", after a restart too) and "cannot write …/acked.tmp" was logged four times a second.
        state = tiny_tmpfs(256 << 10)
        if state is None:
            self.skipTest("needs root to mount a 256 KiB tmpfs for the spool")
        self.addCleanup(umount_tiny, state)
        # A persistent session on a persistent broker, as a fleet's consumer has: capture republishes as
        # soon as it is back, which may be before this subscriber has subscribed again.
        broker = self.broker(persistence=True)
        sub = self.subscriber(broker, session="fleet-consumer")
        n = sub.subscriptions
        scanner = self.scanner()
        cap = self.capture(broker, [scanner.selector], state=state)
        self.wait_online(sub, cap)
        self.wait_opened(scanner, cap)
        cap.wait_spooled(lambda d: d.get("event") == "deviceArrival", what="the arrival in the spool")
        broker.stop()
        fill_but(state, 24 << 10)
        # The broker is away: codes of ~1 KiB fill the 24 KiB left. The code whose write finds the disk
        # full was queued (listen does not wait for the disk without --confirm-delivery): the warning
        # counts it. From then on each code waits for its write, and is refused with an error event.
        def warnings():
            # The outage warning only: a refused code's own error line ("FULL-009-… not sent: cannot write
            # the spool …") says the same words, and when stderr is read before stdout's error event
            # (a loaded machine) it made that code look unheard.
            return [line for line in cap.stderr() if "cannot write the spool" in line and " not sent: " not in line]

        spooled, refused, unheard = [], [], []
        for i in range(200):
            text = f"FULL-{i:03d}-" + "x" * 1000
            before = len(warnings())
            scanner.write(text)

            def outcome():
                if cap.spooled(lambda d: d.get("text") == text):
                    return "spooled"
                if cap.error_events(f"{text} not sent"):
                    return "refused"
                return "unheard" if len(warnings()) > before else None

            {"spooled": spooled, "refused": refused, "unheard": unheard}[
                cap.wait_for(outcome, 30, f"an outcome for code {i}")].append(text)
            if len(refused) == 3:
                break
        self.assertEqual(len(refused), 3, f"the 24 KiB never filled\n{cap.describe()}")
        self.assertEqual(len(unheard), 1, f"{unheard}\n{cap.describe()}")
        self.assertIn("(1 queued event was not spooled)", warnings()[0])
        for text in refused:
            self.assertIn("No space left on device", cap.error_events(f"{text} not sent")[0]["error"]["message"])
        self.assertIsNone(cap.proc.poll(), cap.describe())
        # The broker comes back and acknowledges everything: the acked marker is saved (the disk is
        # still full: the acknowledged segment makes the room) and the next code is taken.
        broker.start()
        sub.wait_resubscribed(n)
        self.assertEqual([d["text"] for d in self.wait_codes(sub, len(spooled), prefix="FULL-")], spooled,
                         cap.describe())
        cap.wait_for(lambda: spool_drained(state), 30, "the acked marker saying every record was acknowledged")
        scanner.write("AFTER-FULL")
        self.assertEqual([d["text"] for d in self.wait_codes(sub, 1, prefix="AFTER-")], ["AFTER-FULL"],
                         cap.describe())
        self.assertFalse(cap.error_events("AFTER-FULL"), cap.describe())
        # Besides the error line of each refused code: one warning for the outage, one for its end, and
        # none for the acked marker (it was once logged four times a second).
        warned = [line for line in cap.stderr() if "No space left on device" in line and " not sent: " not in line]
        self.assertEqual(len(warned), 1, f"one warning per outage, not {len(warned)}:\n" + "\n".join(warned))
        self.assertIn("until the spool can be written again", warned[0])
        self.assertFalse([line for line in cap.stderr() if "acked" in line], cap.describe())
        self.assertEqual(len([line for line in cap.stderr() if "is written again" in line]), 1, cap.describe())
        # A restart on the disk, still full but for what the spool freed, takes codes at once.
        self.assertEqual(cap.terminate(), 0, cap.describe())
        again = self.capture(broker, [scanner.selector], state=state)
        # The pty keeps the first capture's line settings: its arrival says the new one opened and
        # configured it (a code written before that may be flushed with the old input).
        again.wait_for(lambda: any(e.get("event") == "deviceArrival" for e in again.events()), 30,
                       "the scanner's arrival in the new capture")
        scanner.write("AFTER-RESTART")
        self.assertEqual([d["text"] for d in self.wait_codes(sub, 2, prefix="AFTER-")], ["AFTER-FULL", "AFTER-RESTART"],
                         again.describe())


class ConnectionTests(Fixture):
    def test_tls_with_the_test_ca_and_a_password_file(self):
        broker = self.broker(users={"scanner1": "pa55 word"}, tls=True)
        sub = self.subscriber(broker, username="scanner1", password="pa55 word")
        pw = os.path.join(broker.dir, "capture-password")
        with open(pw, "w") as f:
            f.write("pa55 word\n")
        os.chmod(pw, 0o600)
        scanner = self.scanner()
        cap = self.capture(broker, [scanner.selector], url=f"mqtts://scanner1@127.0.0.1:{broker.port}/{PREFIX}",
                           extra=["--mqtt-ca", broker.ca, "--mqtt-password-file", pw], json_out=False)
        self.wait_opened(scanner, cap)
        self.wait_online(sub, cap)
        scanner.write("OVER-TLS")
        self.assertEqual([d["text"] for d in self.wait_codes(sub, 1)], ["OVER-TLS"], cap.describe())

    def test_a_password_in_the_url_is_a_usage_error_before_connecting(self):
        broker = self.broker()
        cap = self.capture(broker, ["serial:/dev/null?framing=line"],
                           url=f"mqtt://user:secret@127.0.0.1:{broker.port}/{PREFIX}", json_out=False)
        self.assertEqual(cap.wait_exit(15), EXIT_INVALID_PARAMETER, cap.describe())
        self.assertNotIn("New client connected", broker.tail(200), "capture connected with a URL it should refuse")
        self.assertTrue(any("password" in line.lower() for line in cap.stderr()), cap.describe())

    def test_url_problems_the_transport_would_refuse_are_usage_errors(self):
        """A host with a space, an over-long or control-character prefix, a %00 user name
        exited 24 (ESKT_INVALIDCONFIGURATION) when libmosquitto refused them; they are usage errors (18)
        that say what is wrong, before any connection (docs/fleet.md §6)."""
        broker = self.broker()
        cases = {f"mqtt://127.0.0.1 :{broker.port}/{PREFIX}": "host",
                 f"mqtt://127.0.0.1:{broker.port} /{PREFIX}": "port",
                 f"mqtt://127.0.0.1:{broker.port}/" + "p" * 70000: "prefix",
                 f"mqtt://127.0.0.1:{broker.port}/fle\x01et": "control",
                 f"mqtt://a%00b@127.0.0.1:{broker.port}/{PREFIX}": "NUL"}
        for url, word in cases.items():
            with self.subTest(url=url[:60]):
                cap = self.capture(broker, ["serial:/dev/null?framing=line"], url=url, json_out=False)
                self.assertEqual(cap.wait_exit(15), EXIT_INVALID_PARAMETER, cap.describe())
                errors = [line for line in cap.stderr() if line.startswith("capture: ESKT_INVALIDPARAMETER (-18): --mqtt: ")]
                self.assertEqual(len(errors), 1, cap.describe())
                self.assertIn(word, errors[0])
                self.assertLess(len(errors[0]), 300, "the message does not repeat a huge URL")
        self.assertNotIn("New client connected", broker.tail(200), "capture connected with a URL it should refuse")

    def test_a_refused_password_is_a_one_line_error_and_a_nonzero_exit(self):
        broker = self.broker(users={"scanner1": "right"})
        pw = os.path.join(broker.dir, "wrong-password")
        with open(pw, "w") as f:
            f.write("wrong\n")
        os.chmod(pw, 0o600)
        scanner = self.scanner()
        cap = self.capture(broker, [scanner.selector], url=f"mqtt://scanner1@127.0.0.1:{broker.port}/{PREFIX}",
                           extra=["--mqtt-password-file", pw], json_out=False)
        status = cap.wait_exit(30)
        self.assertIsNotNone(status, f"capture kept running with a refused password\n{cap.describe()}")
        self.assertEqual(status, EXIT_COMMAND_DENIED, cap.describe())
        for t in cap.readers:
            t.join(2)
        errors = [line for line in cap.stderr() if line.startswith("capture:")]
        self.assertEqual(len(errors), 1, cap.describe())
        self.assertRegex(errors[0].lower(), r"not authori[sz]ed|password|refused")


    def test_a_broker_certificate_that_does_not_verify_ends_with_exit_24(self):
        broker = self.broker(tls=True)
        other = tempfile.mkdtemp(prefix="capture-mqtt-ca.")
        self.addCleanup(shutil.rmtree, other, True)
        from broker import make_ca_and_server_cert
        wrong_ca, _, _ = make_ca_and_server_cert(other)
        scanner = self.scanner()
        cap = self.capture(broker, [scanner.selector], url=f"mqtts://127.0.0.1:{broker.port}/{PREFIX}",
                           extra=["--mqtt-ca", wrong_ca], json_out=False)
        self.assertEqual(cap.wait_exit(30), 24, cap.describe())  # ESKT_INVALIDCONFIGURATION (docs/fleet.md §6)

    def test_confirm_delivery_with_confirm_is_a_usage_error(self):
        broker = self.broker()
        cap = self.capture(broker, ["serial:/dev/null?framing=line"], json_out=False,
                           extra=["--confirm-delivery", "spool", "--confirm", "true"])
        self.assertEqual(cap.wait_exit(15), EXIT_INVALID_PARAMETER, cap.describe())

    def test_a_second_capture_on_the_same_spool_fails_at_once_with_exit_25(self):
        broker = self.broker()
        sub = self.subscriber(broker)
        scanner = self.scanner()
        first = self.capture(broker, [scanner.selector], json_out=False)
        self.wait_online(sub, first)
        second = self.capture(broker, [self.scanner().selector], state=first.state, json_out=False)
        self.assertEqual(second.wait_exit(15), 25, second.describe())  # ESKT_ALREADYEXISTING (docs/fleet.md §4)
        self.assertIsNone(first.proc.poll(), first.describe())


class CommandTests(Fixture):
    """Remote commands on PREFIX/HOST/commands against a DataMan simulator that listen holds."""

    def setUp(self):
        try:
            self.dataman = DataManSimulator()
        except (RuntimeError, OSError) as error:
            self.skipTest(f"*** SKIPPED: DataMan simulator unavailable: {error}")
        self.addCleanup(self.dataman.proc.stdout.close)
        self.addCleanup(self.dataman.close)
        self.broker_ = self.broker()
        self.sub = self.subscriber(self.broker_)
        self.publisher = Subscriber(self.broker_, f"{BASE}/replies/#")
        self.addCleanup(self.publisher.close)

    def start(self, commands=("--mqtt-commands",)):
        cap = self.capture(self.broker_, [self.dataman.selector], extra=list(commands), json_out=False)
        self.wait_online(self.sub, cap)
        self.sub.wait(lambda m: m.topic == event_topic(self.dataman.selector, "deviceArrival"), 20,
                      what="the DataMan's arrival")
        return cap

    def request(self, body, reply_id=None, seconds=15):
        payload = body if isinstance(body, (bytes, str)) else json.dumps(body)
        mark = len(self.sub.snapshot())
        info = self.publisher.client.publish(f"{BASE}/commands", payload, qos=1)
        info.wait_for_publish(20)
        self.assertTrue(info.is_published(), f"the broker never acknowledged the request {str(body)[:80]}")
        if reply_id is None:
            return None
        topic = f"{BASE}/replies/{reply_id}"
        return self.sub.wait(lambda m: m.topic == topic, seconds, what=f"the reply on {topic}", start=mark).json()

    def document(self, reply):
        """The --json document the command printed, as the reply carries it (docs/fleet.md)."""
        for key in ("output", "result", "document"):
            if key in reply:
                return reply[key]
        return {k: v for k, v in reply.items() if k not in ("id", "exit")}

    def test_get_set_trigger_and_a_profile_round_trip(self):
        cap = self.start()
        dev = self.dataman.selector
        reply = self.request({"id": "g1", "argv": ["get", dev, "friendly-name"]}, "g1")
        self.assertEqual((reply["id"], reply["exit"]), ("g1", 0), reply)
        props = self.document(reply)["properties"]
        self.assertEqual([(p["name"], p["value"]) for p in props], [("friendly-name", "Line 3 reader")])

        reply = self.request({"id": "s1", "argv": ["set", dev, "friendly-name", "Dock 7"]}, "s1")
        self.assertEqual((reply["id"], reply["exit"]), ("s1", 0), reply)
        reply = self.request({"id": "g2", "argv": ["get", dev, "friendly-name"]}, "g2")
        self.assertEqual(self.document(reply)["properties"][0]["value"], "Dock 7")

        # A profile: what `get --all` printed, changed, sent inline for --from.
        reply = self.request({"id": "g3", "argv": ["get", dev, "--all"]}, "g3")
        self.assertEqual(reply["exit"], 0, reply)
        profile = self.document(reply)
        for p in profile["properties"]:
            if p["name"] == "friendly-name":
                p["value"] = "From profile"
        reply = self.request({"id": "p1", "argv": ["set", dev, "--from", "-"], "profile": profile}, "p1")
        self.assertEqual((reply["id"], reply["exit"]), ("p1", 0), reply)
        reply = self.request({"id": "g4", "argv": ["get", dev, "friendly-name"]}, "g4")
        self.assertEqual(self.document(reply)["properties"][0]["value"], "From profile")

        # trigger: the reader reads, and the code is an event like any other.
        reply = self.request({"id": "t1", "argv": ["trigger", dev, "start"]}, "t1")
        self.assertEqual((reply["id"], reply["exit"]), ("t1", 0), reply)
        docs = self.wait_codes(self.sub, 1, seconds=15)
        self.assertEqual([d["text"] for d in docs], [DataManSimulator.READ_TEXT], cap.describe())

    def test_a_duplicate_request_id_is_answered_again_and_not_run_twice(self):
        self.start()
        dev = self.dataman.selector
        first = self.request({"id": "dup-1", "argv": ["trigger", dev, "start"]}, "dup-1")
        self.assertEqual(first["exit"], 0, first)
        self.wait_codes(self.sub, 1, seconds=15)
        again = self.request({"id": "dup-1", "argv": ["trigger", dev, "start"]}, "dup-1")
        self.assertEqual(again, first)
        # A request that runs is answered after its command ended: had the duplicate run, its TRIGGER ON
        # would have reached the simulator before this reply did.
        triggers = [c for c in self.dataman.commands() if "TRIGGER ON" in str(c).upper()]
        self.assertEqual(len(triggers), 1, self.dataman.commands())
        self.assertEqual(len(self.wait_codes(self.sub, 2, seconds=0.1)), 1)

    def test_malformed_requests_get_an_error_reply_and_run_nothing(self):
        cap = self.start()
        dev = self.dataman.selector
        acting = lambda: [c for c in self.dataman.commands() if c.upper().split(">")[-1].startswith(("TRIGGER", "SET"))]
        before = acting()
        # A request that is not well formed is ESKT_INVALIDFORMAT; a command line the parser refuses is a
        # usage error, one not allowed ESKT_COMMANDDENIED (docs/fleet.md §5).
        cases = [({"id": "m1", "argv": "trigger"}, EXIT_INVALID_FORMAT), ({"id": "m2"}, EXIT_INVALID_FORMAT),
                 ({"id": "m3", "argv": [1, 2]}, EXIT_INVALID_FORMAT), ({"id": "m3b", "argv": []}, EXIT_INVALID_FORMAT),
                 ({"id": "m6", "argv": ["trigger", dev, "start"], "run": "twice"}, EXIT_INVALID_FORMAT),
                 ({"id": "m7", "argv": ["trigger", dev, "start"], "profile": []}, EXIT_INVALID_FORMAT),
                 ({"id": "m8", "argv": ["trigger", dev, "start"], "pad": "x" * 70000}, EXIT_INVALID_FORMAT),
                 ({"id": "m4", "argv": ["trigger", dev, "sideways"]}, EXIT_INVALID_PARAMETER),
                 ({"id": "m5", "argv": ["no-such-command", dev]}, EXIT_COMMAND_DENIED),
                 ({"id": "m9", "argv": ["set", dev, "--from", "/etc/passwd"]}, None)]
        for body, status in cases:
            with self.subTest(body=str(body)[:80]):
                reply = self.request(body, body["id"])
                self.assertEqual(reply["id"], body["id"])
                self.assertIsInstance(reply["exit"], int)
                if status is None:
                    self.assertNotEqual(reply["exit"], 0, reply)
                else:
                    self.assertEqual(reply["exit"], status, reply)
                # The error object every --json command prints on failure.
                self.assertIsInstance(reply.get("error", {}).get("code"), int, reply)
                self.assertIsInstance(reply["error"].get("message"), str, reply)
        # Not JSON and no id at all: nothing to answer on, and nothing runs.
        ignored = lambda: [line for line in cap.stderr() if "MQTT command ignored" in line]
        self.assertEqual(ignored(), [])
        self.request(b"{not json")
        self.request(json.dumps({"argv": ["trigger", dev, "start"]}))
        # Each is dropped with a warning once capture has handled it: both handled, nothing ran.
        cap.wait_for(lambda: len(ignored()) >= 2, 20, "the warnings of the two requests without an id")
        self.assertEqual(acting(), before)
        self.assertEqual(self.wait_codes(self.sub, 1, seconds=0.1), [])

    def test_a_local_path_in_any_spelling_is_refused_and_nothing_is_read(self):
        """A remote command is judged on the parsed command line, so --from=PATH (and
        --image, --dir, --camera in every spelling) is refused before anything is opened; a FIFO named
        so is never waited on. Only set --from - with the profile inline is taken."""
        self.start()
        dev = self.dataman.selector
        private = tempfile.mkdtemp(prefix="capture-remote-path.")
        self.addCleanup(shutil.rmtree, private, True)
        secret = os.path.join(private, "secret.json")
        with open(secret, "w") as f:
            json.dump({"properties": [{"name": "friendly-name", "value": "Leaked"}]}, f)
        os.chmod(secret, 0o600)
        fifo = os.path.join(private, "fifo")
        os.mkfifo(fifo)
        cases = [["set", dev, f"--from={secret}"], ["set", dev, "--from", secret],
                 ["set", dev, "--dry-run", f"--from={fifo}"], ["set", dev, "--from", "-"],
                 ["trigger", "socketcam", "start", "--image", "/dev/ptmx"],
                 ["trigger", "socketcam", "start", "--image=/dev/ptmx"], ["trigger", "socketcam", "start", "--image=-"],
                 ["trigger", "socketcam", "start", "--dir", private], ["trigger", "socketcam", "start", f"--dir={private}"],
                 ["trigger", "socketcam", "start", "--camera=/dev/ptmx"],
                 ["trigger", "-q", "socketcam", "start", "--wait", "--image", fifo]]
        for i, argv in enumerate(cases):
            with self.subTest(argv=argv):
                start = time.monotonic()
                reply = self.request({"id": f"path{i}", "argv": argv}, f"path{i}", seconds=10)
                self.assertEqual(reply["exit"], EXIT_INVALID_PARAMETER, reply)
                self.assertEqual(reply["error"]["name"], "ESKT_INVALIDPARAMETER", reply)
                self.assertLess(time.monotonic() - start, 5, "refused at once, nothing opened")
        # The secret was never applied: the name is the simulator's own.
        reply = self.request({"id": "name", "argv": ["get", dev, "friendly-name"]}, "name")
        self.assertEqual(self.document(reply)["properties"][0]["value"], "Line 3 reader", reply)
        # An inline profile in the --from=- spelling is taken.
        profile = {"properties": [{"name": "friendly-name", "value": "Inline"}]}
        reply = self.request({"id": "inline", "argv": ["set", dev, "--from=-"], "profile": profile}, "inline")
        self.assertEqual(reply["exit"], 0, reply)
        reply = self.request({"id": "name2", "argv": ["get", dev, "friendly-name"]}, "name2")
        self.assertEqual(self.document(reply)["properties"][0]["value"], "Inline", reply)

    def test_connect_is_refused_unless_mqtt_commands_all(self):
        self.start()
        reply = self.request({"id": "c1", "argv": ["connect", self.dataman.selector]}, "c1")
        self.assertEqual(reply["id"], "c1")
        self.assertEqual(reply["exit"], EXIT_COMMAND_DENIED, reply)
        self.assertEqual(reply["error"]["name"], "ESKT_COMMANDDENIED", reply)
        reply = self.request({"id": "r1", "argv": ["remove", self.dataman.selector]}, "r1")
        self.assertEqual(reply["exit"], EXIT_COMMAND_DENIED, reply)

    def test_connect_runs_with_mqtt_commands_all(self):
        self.start(commands=("--mqtt-commands", "all"))
        reply = self.request({"id": "c2", "argv": ["connect", self.dataman.selector]}, "c2")
        self.assertEqual((reply["id"], reply["exit"]), ("c2", 0), reply)

    def test_commands_are_off_without_mqtt_commands(self):
        self.start(commands=())
        self.request({"id": "off1", "argv": ["trigger", self.dataman.selector, "start"]})
        # The broker acknowledged the request, so it has routed it (Broker.sent_to): to the test's
        # subscriber and to nobody else; capture, not subscribed, never got it.
        self.assertEqual(self.broker_.sent_to(f"{BASE}/commands"), [self.sub.client_id], self.broker_.tail(60))
        self.assertEqual([m for m in self.sub.snapshot() if "/replies/" in m.topic], [])
        self.assertEqual(self.wait_codes(self.sub, 1, seconds=0.1), [])


class SilentServer:
    """A TCP port that accepts connections and never says a word: a `tcp://` device (a DataMan) whose
    open waits for a DMCC answer that never comes. Counts the connections still open (a command that
    was cut must close its socket)."""

    def __init__(self):
        import socket
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(512)
        self.port = self.sock.getsockname()[1]
        self.lock = threading.Lock()
        self.conns = []
        self.accepted = 0
        self.stopping = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.conns.append(conn)
                self.accepted += 1

    def open_connections(self):
        """Connections the peer has not closed: a read that would block means still open."""
        import select
        with self.lock:
            still = []
            for conn in self.conns:
                readable, _, _ = select.select([conn], [], [], 0)
                if readable:
                    try:
                        if conn.recv(4096, 0) == b"":
                            conn.close()
                            continue
                    except OSError:
                        conn.close()
                        continue
                still.append(conn)
            self.conns = still
            return len(still)

    def close(self):
        self.stopping = True
        self.sock.close()
        with self.lock:
            for conn in self.conns:
                conn.close()


def process_usage(pid):
    """(open descriptors, threads) of a process, from /proc."""
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    with open(f"/proc/{pid}/status") as f:
        threads = next(int(line.split()[1]) for line in f if line.startswith("Threads:"))
    return fds, threads


class CommandDeadlineTests(Fixture):
    """Every remote command has a deadline (--mqtt-command-timeout, docs/fleet.md §5),
    at most 4 run at once and 16 wait; one past those is answered busy at once. A command cut at its
    deadline is answered ESKT_REQUESTTIMEDOUT and ends, releasing what it held; SIGTERM ends capture
    (exit 0) whatever the remote commands are doing."""

    # Long enough that all 300 requests arrive within one deadline even on a loaded machine: a slot
    # freed before the last one arrived would let more than RUNNING + WAITING run.
    DEADLINE = 30.0
    MARGIN = 60.0  # a loaded machine's scheduling and the broker's round trips
    RUNNING, WAITING = 4, 16
    EXIT_TIMED_OUT = 42  # ESKT_REQUESTTIMEDOUT
    EXIT_BUSY = 16  # ESKT_PENDINGOPERATIONNOTCOMPLETED

    def setUp(self):
        self.broker_ = self.broker()
        self.sub = self.subscriber(self.broker_)
        self.silent = SilentServer()
        self.addCleanup(self.silent.close)
        self.scanner_ = self.scanner()
        self.cap = self.capture(self.broker_, [self.scanner_.selector],
                                extra=["--mqtt-commands", "--mqtt-command-timeout", f"{self.DEADLINE}s"],
                                json_out=False)
        self.wait_online(self.sub, self.cap)
        self.wait_opened(self.scanner_, self.cap)
        self.sender = Subscriber(self.broker_, f"{BASE}/nothing")
        self.addCleanup(self.sender.close)

    def publish(self, body):
        info = self.sender.client.publish(f"{BASE}/commands", json.dumps(body), qos=1)
        return info

    def replies(self, ids, seconds):
        """{id: (reply, arrival)} for every id, waiting up to `seconds` for all of them."""
        wanted = {f"{BASE}/replies/{i}": i for i in ids}
        found = self.sub.wait_count(lambda m: m.topic in wanted, len(wanted), seconds=seconds)
        return {wanted[m.topic]: (m.json(), m.time) for m in found}

    def blocking(self, i):
        return {"id": f"b{i}", "argv": ["get", f"tcp://127.0.0.1:{self.silent.port}", "friendly-name",
                                        "--timeout", "1h"]}

    def test_blocking_commands_are_answered_at_their_deadline_and_the_process_stays_bounded(self):
        base_fds, base_threads = process_usage(self.cap.proc.pid)
        count = 300
        sent = {}
        peak = [base_fds, base_threads]
        for i in range(count):
            sent[f"b{i}"] = time.monotonic()
            self.publish(self.blocking(i))
        # Every request is answered: the ones that ran or waited at their deadline, the rest busy at once.
        deadline = time.monotonic() + self.DEADLINE + self.MARGIN + 10
        got = {}
        most_open = 0
        while time.monotonic() < deadline and len(got) < count:
            fds, threads = process_usage(self.cap.proc.pid)
            peak = [max(peak[0], fds), max(peak[1], threads)]
            most_open = max(most_open, self.silent.open_connections())
            got = self.replies(list(sent), seconds=0.05)
        self.assertEqual(len(got), count, f"answered {len(got)} of {count}\n{self.cap.describe()}")
        timed_out = [i for i, (r, _) in got.items() if r["exit"] == self.EXIT_TIMED_OUT]
        busy = [i for i, (r, _) in got.items() if r["exit"] == self.EXIT_BUSY]
        self.assertEqual(len(timed_out), self.RUNNING + self.WAITING, {i: r for i, (r, _) in list(got.items())[:30]})
        self.assertEqual(len(busy), count - self.RUNNING - self.WAITING)
        for i in timed_out:
            reply, when = got[i]
            self.assertEqual((reply["error"]["code"], reply["error"]["name"]), (-42, "ESKT_REQUESTTIMEDOUT"), reply)
            self.assertIn("--mqtt-command-timeout", reply["error"]["message"])
            self.assertGreaterEqual(when - sent[i], self.DEADLINE - 0.2, reply)
            self.assertLess(when - sent[i], self.DEADLINE + self.MARGIN, reply)
        for i in busy:
            reply, when = got[i]
            self.assertEqual(reply["error"]["name"], "ESKT_PENDINGOPERATIONNOTCOMPLETED", reply)
        # Bounded: a handful of descriptors and threads per running command, not one set per request
        # (before: 296 threads and 1,170 descriptors for 300 requests).
        self.assertLess(peak[0] - base_fds, 60, f"descriptors {base_fds} -> {peak[0]}")
        self.assertLess(peak[1] - base_threads, 40, f"threads {base_threads} -> {peak[1]}")
        # Only commands holding a slot connect: at most 4 at once (a waiting one whose deadline had not
        # passed yet may take a slot freed by a cut one), none of the busy ones.
        self.assertLessEqual(most_open, self.RUNNING, "connections open at once")
        self.assertLessEqual(self.silent.accepted, self.RUNNING + self.WAITING)
        # The cut commands ended: their sockets are closed, and new commands run again.
        self.cap.wait_for(lambda: self.silent.open_connections() == 0, 10, "the cut commands' sockets closed")
        self.publish({"id": "after", "argv": ["list"]})
        after = self.replies(["after"], seconds=10)
        self.assertEqual(after["after"][0]["exit"], 0, after)

    def test_a_command_on_a_held_device_ends_by_itself_and_the_device_still_reads(self):
        """A trigger on the serial scanner listen holds (lent to the command) fails at once with
        ESKT_NOTSUPPORTED (docs/device-protocols.md §5.3): it closes its view of the device before its
        event stream is asked for, and that stream must then end, not subscribe for ever and hold the
        command until its deadline (which it did now and then). The device stays listen's."""
        for i in range(10):
            start = time.monotonic()
            self.publish({"id": f"tw{i}", "argv": ["trigger", self.scanner_.selector, "start", "--wait"]})
            got = self.replies([f"tw{i}"], seconds=self.DEADLINE + self.MARGIN)
            self.assertIn(f"tw{i}", got, self.cap.describe())
            reply, when = got[f"tw{i}"]
            self.assertEqual(reply["exit"], 15, reply)
            self.assertLess(when - start, self.DEADLINE, f"answered by the command, not cut: {reply}")
        self.scanner_.write("AFTER-COMMANDS")
        docs = self.wait_codes(self.sub, 1, seconds=15, prefix="AFTER-COMMANDS")
        self.assertEqual([d["text"] for d in docs], ["AFTER-COMMANDS"], self.cap.describe())
        self.publish({"id": "l1", "argv": ["list"]})
        self.assertEqual(self.replies(["l1"], seconds=10)["l1"][0]["exit"], 0)

    def test_sigterm_ends_capture_while_commands_block(self):
        for i in range(self.RUNNING + self.WAITING + 5):
            self.publish(self.blocking(i))
        self.cap.wait_for(lambda: self.silent.accepted >= self.RUNNING, 15, "the blocking commands running")
        start = time.monotonic()
        status = self.cap.terminate(seconds=15)
        self.assertEqual(status, 0, self.cap.describe())
        self.assertLess(time.monotonic() - start, 10, self.cap.describe())
        self.assertEqual(retained(self.broker_, f"{BASE}/status").json().get("state"), "offline")


class ConfirmDeliveryTests(Fixture):
    """The good beep waits for the broker's PUBACK with --confirm-delivery broker. A serial scanner takes
    no data confirmation (Sources/Drivers/Serial writes nothing back), so the observable device is a D600
    on the BlueZ model, whose scan-control writes the rig records."""

    def rig(self):
        try:
            rig = BlueZRig()
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as error:
            self.skipTest(f"*** SKIPPED: the BlueZ rig does not start here: {error}")
        self.addCleanup(rig.stop)
        rig.ctl("AddLEDevice", D600, "Socket D600 [7EF619]", "d600", -50, "true")
        return rig

    def scan_control_writes(self, rig):
        return [w for w in rig.ctl("GetWrites", D600_PATH) if D600_SCAN_CONTROL in str(w).lower()]

    def bring_up(self, rig, cap, seconds=30):
        """Until capture has the D600 up: its arrival is an event (on stdout with --json) only once the
        open, and with it the bring-up, returned (scanner mode, config AE 07, is its last write)."""
        cap.wait_for(lambda: any(e.get("event") == "deviceArrival" and e.get("device", {}).get("id") == D600
                                 for e in cap.events()), seconds, "the D600's arrival (brought up)")
        self.assertTrue(any(D600_CONFIG in str(w).lower() for w in rig.ctl("GetWrites", D600_PATH) or []),
                        f"the D600 arrived without its bring-up (no config write)\n{cap.describe()}")

    def scan(self, rig, text, seconds=20):
        deadline = time.monotonic() + seconds
        while not rig.ctl("ScanText", D600_PATH, "4F", text):  # 0 until capture's notify session is on
            if time.monotonic() > deadline:
                self.fail(f"the rig dropped the scan {text!r}: nobody notified in {seconds} s")
            time.sleep(0.1)

    def wait_confirmed(self, rig, cap, seconds, what):
        deadline = time.monotonic() + seconds
        while not self.scan_control_writes(rig):
            if time.monotonic() > deadline:
                self.fail(f"{what}: no scan-control write in {seconds} s\n{cap.describe()}")
            time.sleep(0.1)
        return self.scan_control_writes(rig)

    def test_broker_mode_beeps_good_only_after_the_broker_acknowledged(self):
        rig = self.rig()
        # A persistent consumer session on a broker that keeps it: capture may publish the code before
        # the subscriber has reconnected after the restart.
        broker = self.broker(persistence=True)
        sub = self.subscriber(broker, session="fleet-consumer")
        cap = self.capture(broker, [D600], extra=["--confirm-delivery", "broker"], env=rig.env)
        self.bring_up(rig, cap)
        self.wait_online(sub, cap)
        n = sub.subscriptions
        broker.stop()
        rig.ctl("ClearWrites", D600_PATH)
        self.scan(rig, "WAIT-FOR-PUBACK")
        # The code is read and durable in the spool: the point where spool mode confirms. Broker mode must
        # not have; it confirms only after the PUBACK, and there is no broker before broker.start().
        cap.wait_spooled(lambda d: d.get("text") == "WAIT-FOR-PUBACK", what="WAIT-FOR-PUBACK in the spool")
        self.assertEqual(self.scan_control_writes(rig), [], "confirmed before the broker had the code")
        broker.start()
        sub.wait_resubscribed(n)
        self.wait_confirmed(rig, cap, 30, "never confirmed after the broker came back")
        docs = self.wait_codes(sub, 1, seconds=10)
        self.assertEqual([d["text"] for d in docs], ["WAIT-FOR-PUBACK"])

    def test_spool_mode_beeps_good_with_the_broker_down(self):
        rig = self.rig()
        broker = self.broker()
        sub = self.subscriber(broker)
        cap = self.capture(broker, [D600], extra=["--confirm-delivery", "spool"], env=rig.env)
        self.bring_up(rig, cap)
        self.wait_online(sub, cap)
        broker.stop()
        rig.ctl("ClearWrites", D600_PATH)
        self.scan(rig, "SAFE-ON-DISK")
        self.wait_confirmed(rig, cap, 20, "no confirmation once the code was spooled")

    def test_a_code_a_full_spool_refuses_gets_a_confirmation_and_accepted_ones_none(self):
        # Without --confirm-delivery an accepted code is not confirmed by capture (the scanner's own
        # beep); a refused one is told bad (docs/fleet.md §4).
        rig = self.rig()
        broker = self.broker()
        broker.stop()
        cap = self.capture(broker, [D600], extra=["--mqtt-spool-max", "3"], env=rig.env)
        self.bring_up(rig, cap)
        rig.ctl("ClearWrites", D600_PATH)
        # capture hands one event at a time to the spool and confirms (or not) before taking the next:
        # once code i is spooled or refused, whatever code i-1 got is written already.
        refused = None
        for i in range(6):
            text = f"CODE-{i}"
            self.scan(rig, text)
            cap.wait_for(lambda: cap.spooled(lambda d: d.get("text") == text) or cap.error_events(f"{text} not sent"),
                         20, f"{text} spooled or refused")
            if cap.error_events(f"{text} not sent"):
                refused = i
                break
            self.assertEqual(self.scan_control_writes(rig), [], f"CODE-{i - 1} was accepted, yet confirmed")
        self.assertIsNotNone(refused, f"the spool of 3 never refused a code\n{cap.describe()}")
        writes = self.wait_confirmed(rig, cap, 20, f"CODE-{refused} was refused without a bad confirmation")
        # The first write is the refused code's (an earlier one would be the last accepted code's): the
        # bad confirmation's LED command, 91 with the scan LED red (docs/device-protocols.md §2.5,
        # firmware >= 1.44 layout: power delay,R,G,B,mode then scan delay,R,G,B,mode).
        first = bytes.fromhex(writes[0][1])
        if first[:1] == b"\x91":
            self.assertEqual((first[7], first[8]), (0xFF, 0x00), f"CODE-{refused - 1} was accepted, yet confirmed: {writes}")


if __name__ == "__main__":
    unittest.main()
