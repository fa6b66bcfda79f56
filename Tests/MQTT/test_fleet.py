"""`capture fleet hosts|run|watch|apply|status` end to end (docs/fleet.md §9): the real binary as the
controller, a real mosquitto (Tests/MQTT/broker.py), and real hosts: `capture listen --mqtt ...
--mqtt-commands` processes, each with its own state directory and host id. FleetTests gives each host
its own DataMan simulator (Tests/Simulators); FleetAtScaleTests runs the issue's 20 hosts, SocketCam
(`--image -`, stdin held open), line-mode serial scanners on ptys and DataMan simulators, on a broker
that keeps its retained messages and sessions across a restart.

Run: CAPTURE_BIN=.build/debug/capture /usr/bin/python3 -m unittest discover -s Tests/MQTT -p 'test_fleet.py' -v
"""
import json
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import paho.mqtt.client as paho

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "Service"))
from broker import Broker, Subscriber, retained  # noqa: E402
from serve_harness import DataManSimulator, PtyScanner, capture_bin  # noqa: E402
from test_mqtt import PREFIX, Capture, spool_records, topic_safe  # noqa: E402

EXIT_NOT_FOUND = 17  # ESKT_NOTFOUND: a --hosts GLOB that matches no known host
EXIT_INVALID_PARAMETER = 18  # ESKT_INVALIDPARAMETER: usage, and a profile set --from rejects
EXIT_COMMAND_DENIED = 37  # ESKT_COMMANDDENIED: a host without --mqtt-commands refuses a desired state
EXIT_TIMED_OUT = 42  # ESKT_REQUESTTIMEDOUT: hosts that did not answer, applied reports missing
EXIT_INVALID_FORMAT = 85  # ESKT_INVALIDFORMAT: a reply or report whose exit no capture host sends


def setUpModule():
    if not os.access(capture_bin(), os.X_OK):
        raise unittest.SkipTest(f"*** SKIPPED: no capture binary at {capture_bin()} (set CAPTURE_BIN)")
    if not os.access("/usr/sbin/mosquitto", os.X_OK):
        raise unittest.SkipTest("*** SKIPPED: no /usr/sbin/mosquitto (Debian package mosquitto)")


class DelayProxy:
    """A TCP proxy in front of the broker that hands on each chunk the broker sends `delay` seconds
    after it came (in order): a broker far away, whose every PUBACK comes a round trip late. What the
    client sends goes on at once."""

    def __init__(self, broker, delay):
        self.broker, self.delay = broker, delay
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection((self.broker.host, self.broker.port))
            self.sockets += [client, upstream]
            threading.Thread(target=self._pipe, args=(client, upstream, 0), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, self.delay), daemon=True).start()

    def _pipe(self, source, sink, delay):
        due = queue.Queue()

        def send():
            while True:
                at, data = due.get()
                if data is None:
                    return
                time.sleep(max(0.0, at - time.monotonic()))  # the latency this proxy models
                try:
                    sink.sendall(data)
                except OSError:
                    return
        threading.Thread(target=send, daemon=True).start()
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            due.put((time.monotonic() + delay, data or None))
            if not data:
                try:
                    sink.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return

    def close(self):
        self.listener.close()
        for s in self.sockets:
            s.close()


class FleetTests(unittest.TestCase):
    def setUp(self):
        self.broker_ = Broker()
        self.addCleanup(self.broker_.close)
        self.sub = Subscriber(self.broker_, f"{PREFIX}/#")
        self.addCleanup(self.sub.close)
        self.url = f"mqtt://{self.broker_.host}:{self.broker_.port}/{PREFIX}"
        self.hosts = {}

    def simulator(self):
        try:
            sim = DataManSimulator()
        except (RuntimeError, OSError) as error:
            self.skipTest(f"*** SKIPPED: DataMan simulator unavailable: {error}")
        self.addCleanup(sim.proc.stdout.close)
        self.addCleanup(sim.close)
        return sim

    def host(self, name, commands=True, wait=True):
        """A host: capture listen with its own DataMan simulator, up and its device arrived."""
        sim = self.simulator()
        extra = ["--mqtt", self.url, "--mqtt-host-id", name] + (["--mqtt-commands"] if commands else [])
        cap = Capture(self.broker_, [sim.selector], extra=extra, json_out=False, mqtt=False)
        self.addCleanup(cap.close)
        self.hosts[name] = (cap, sim)
        if wait:
            self.wait_up(name)
        return cap, sim

    def wait_up(self, name):
        cap, sim = self.hosts[name]
        device = sim.selector.replace("/", "%2F")
        try:
            self.sub.wait(lambda m: m.topic == f"{PREFIX}/{name}/events/{device}/deviceArrival", 30,
                          what=f"{name}'s DataMan arrival")
        except AssertionError as error:
            raise AssertionError(f"{error}\n{cap.describe()}") from None

    def fleet(self, *args, json_out=True, stdin=None, seconds=60):
        argv = [capture_bin()] + (["--json"] if json_out else []) + ["fleet", "--mqtt", self.url, *args]
        r = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=seconds,
                           env=dict(os.environ, NO_COLOR="1"))
        doc = None
        if json_out and r.stdout.strip():
            doc = json.loads(r.stdout.strip().splitlines()[0])
        return r, doc

    def profile(self, properties):
        f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump({"properties": properties}, f)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_hosts_lists_every_host_with_its_devices_and_selects_by_glob(self):
        _, sim1 = self.host("till-1")
        _, sim2 = self.host("till-2")
        # A malformed retained status is warned about and skipped, never a crash.
        self.sub.client.publish(f"{PREFIX}/broken/status", b"not json", qos=1, retain=True).wait_for_publish(10)
        r, doc = self.fleet("hosts")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([h["host"] for h in doc["hosts"]], ["till-1", "till-2"], doc)
        for h, sim in zip(doc["hosts"], (sim1, sim2)):
            self.assertEqual(h["state"], "online")
            self.assertIsInstance(h["since"], str)
            self.assertEqual([d["id"] for d in h["devices"]], [sim.selector])
        self.assertIn("broken/status", r.stderr)

        r, doc = self.fleet("hosts", "--hosts", "till-2")
        self.assertEqual([h["host"] for h in doc["hosts"]], ["till-2"])
        # Plain: one row per host, HOST STATE SINCE DEVICES.
        r, _ = self.fleet("hosts", "--hosts", "till-*", json_out=False)
        rows = [line.split("\t") for line in r.stdout.splitlines()]
        self.assertEqual([(row[0], row[1]) for row in rows], [("till-1", "online"), ("till-2", "online")], r.stdout)

        # A glob matching no host: one line, exit 17.
        r, _ = self.fleet("hosts", "--hosts", "nowhere-*", json_out=False)
        self.assertEqual(r.returncode, EXIT_NOT_FOUND, r.stderr)
        self.assertIn("no host under fleet matches --hosts 'nowhere-*'", r.stderr)
        self.assertEqual(r.stdout, "")

        # A host that stops cleanly is listed offline.
        self.assertEqual(self.hosts["till-1"][0].terminate(), 0)
        r, doc = self.fleet("hosts")
        self.assertEqual({h["host"]: h["state"] for h in doc["hosts"]}, {"till-1": "offline", "till-2": "online"})

    def test_run_sends_one_request_to_each_host_and_collects_every_reply(self):
        self.host("till-1")
        self.host("till-2")
        r, doc = self.fleet("--timeout", "30s", "run", "--", "list")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(doc["id"].startswith("fleet-"), doc)
        self.assertEqual([(h["host"], h["exit"]) for h in doc["hosts"]], [("till-1", 0), ("till-2", 0)], doc)

        # A host that fails: its own exit status, the first in host order.
        r, doc = self.fleet("--timeout", "30s", "run", "--host", "till-2", "--", "get", "nosuch", "friendly-name")
        self.assertEqual([h["host"] for h in doc["hosts"]], ["till-2"])
        self.assertNotEqual(doc["hosts"][0]["exit"], 0, doc)
        self.assertEqual(r.returncode, doc["hosts"][0]["exit"], r.stderr)
        self.assertIn("error", doc["hosts"][0]["reply"])

        # A named host that is not there is listed as not asked, and the status is 42.
        r, doc = self.fleet("--timeout", "30s", "run", "--host", "till-1", "--host", "ghost", "--", "list")
        self.assertEqual(r.returncode, EXIT_TIMED_OUT, r.stderr)
        self.assertEqual([(h["host"], h["exit"]) for h in doc["hosts"]], [("ghost", None), ("till-1", 0)], doc)

        # A command no host runs is refused before anything is sent.
        r, _ = self.fleet("run", "--", "serve", json_out=False)
        self.assertEqual(r.returncode, EXIT_INVALID_PARAMETER, r.stderr)

    def test_watch_prints_each_event_id_once(self):
        self.host("till-1")
        watch = subprocess.Popen(
            [capture_bin(), "--json", "--timeout", "60s", "fleet", "watch", "--count", "2", "--events", "decodedData",
             "--mqtt", self.url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: watch.poll() is None and watch.kill())
        # The same two events over and over, each twice (a QoS 1 redelivery): until the watch has
        # printed its two, every copy after the first of each is a duplicate.
        events = [{"event": "decodedData", "eventId": f"till-1-epoch-{n}", "host": "till-1", "text": f"CODE-{n}"}
                  for n in (1, 2)]
        topic = f"{PREFIX}/till-1/events/dev/decodedData"
        other = f"{PREFIX}/till-1/events/dev/batteryLevel"
        deadline = time.monotonic() + 60
        while watch.poll() is None and time.monotonic() < deadline:
            for e in events:
                for _ in range(2):
                    self.sub.client.publish(other, json.dumps(dict(e, event="batteryLevel", eventId="b")), qos=1)
                    self.sub.client.publish(topic, json.dumps(e), qos=1)
            time.sleep(0.2)
        out, err = watch.communicate(timeout=30)
        self.assertEqual(watch.returncode, 0, err)
        got = [json.loads(line) for line in out.splitlines()]
        self.assertEqual(sorted(e["eventId"] for e in got), ["till-1-epoch-1", "till-1-epoch-2"], out)

    def test_apply_converges_every_host_and_a_second_apply_writes_nothing(self):
        self.host("till-1")
        self.host("till-2")
        self.host("till-4", commands=False)
        path = self.profile([{"name": "friendly-name", "value": "Fleet reader"}])

        # A profile set --from rejects is refused before anything is published.
        bad = self.profile([{"name": "friendly-name", "value": 7}])
        r, _ = self.fleet("apply", bad, json_out=False)
        self.assertEqual(r.returncode, EXIT_INVALID_PARAMETER, r.stderr)
        self.assertIsNone(retained(self.broker_, f"{PREFIX}/till-1/desired", seconds=2))

        # till-3 is offline (never started): the others report, till-3 is missing (42).
        r, doc = self.fleet("apply", path, "--hosts", "till-[12]", "--host", "till-3", "--wait", "30s")
        self.assertEqual(r.returncode, EXIT_TIMED_OUT, r.stderr)
        reports = {h["host"]: h["applied"] for h in doc["hosts"]}
        self.assertIsNone(reports["till-3"])
        for name in ("till-1", "till-2"):
            self.assertEqual(reports[name]["exit"], 0, reports[name])
            [device] = reports[name]["devices"]
            self.assertEqual(device["changed"], ["friendly-name"], device)
        version = doc["version"]

        # till-3 comes later and converges by itself, from the retained desired state.
        self.host("till-3")
        applied = self.sub.wait(lambda m: m.topic == f"{PREFIX}/till-3/applied"
                                and m.json().get("version") == version, 30, what="till-3's applied report")
        self.assertEqual(applied.json()["devices"][0]["changed"], ["friendly-name"])
        r, doc = self.fleet("status", "--hosts", "till-[123]")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual({h["host"]: h["inSync"] for h in doc["hosts"]},
                         {"till-1": True, "till-2": True, "till-3": True}, doc)

        # Applied again: nothing is written, and the report says so.
        r, doc = self.fleet("apply", path, "--hosts", "till-[123]", "--wait", "30s")
        self.assertEqual(r.returncode, 0, r.stderr)
        for h in doc["hosts"]:
            [device] = h["applied"]["devices"]
            self.assertEqual((device["changed"], device["unchanged"]), ([], ["friendly-name"]), h)
        r, _ = self.fleet("apply", path, "--hosts", "till-[123]", "--wait", "30s", json_out=False)
        self.assertEqual(r.stdout.count("nothing written"), 3, r.stdout)

        # A host without --mqtt-commands refuses, and the report says so.
        r, doc = self.fleet("apply", path, "--host", "till-4", "--wait", "30s")
        self.assertEqual(r.returncode, EXIT_COMMAND_DENIED, r.stderr)
        report = doc["hosts"][0]["applied"]
        self.assertEqual(report["error"]["name"], "ESKT_COMMANDDENIED", report)
        self.assertIn("--mqtt-commands", report["error"]["message"])

    def test_a_forged_exit_in_a_reply_or_an_applied_report_is_a_failure_never_a_crash(self):
        # A "host" that is this test's client: online by its retained status, it answers every request
        # and every desired state with an exit no capture sends. fleet used to negate the exit as it
        # came: Int32.min trapped (the controller crashed), -5 became a warning code (exit 0) and 256
        # exit 255. Each is now ESKT_INVALIDFORMAT (85), a failure.
        forged = {"exit": None}
        base = f"{PREFIX}/forged"

        def on_message(client, userdata, msg):
            if not msg.payload:
                return
            doc = json.loads(msg.payload)
            if msg.topic == f"{base}/commands":
                client.publish(f"{base}/replies/{doc['id']}", json.dumps({"id": doc["id"], "exit": forged["exit"]}),
                               qos=1)
            elif msg.topic == f"{base}/desired":
                client.publish(f"{base}/applied", json.dumps(
                    {"version": doc["version"], "host": "forged", "exit": forged["exit"], "time": "now",
                     "devices": [{"device": "x", "exit": forged["exit"], "changed": [], "unchanged": [],
                                  "failed": []}]}), qos=1, retain=True)

        host = paho.Client(client_id="forged-host", protocol=paho.MQTTv311)
        host.on_message = on_message
        host.connect(self.broker_.host, self.broker_.port)
        host.subscribe([(f"{base}/commands", 1), (f"{base}/desired", 1)])
        host.loop_start()
        self.addCleanup(host.disconnect)
        self.addCleanup(host.loop_stop)
        host.publish(f"{base}/status", json.dumps({"host": "forged", "since": "2026-12-05T00:00:00.000Z",
                                                  "state": "online", "version": "x"}), qos=1, retain=True).wait_for_publish(10)
        path = self.profile([{"name": "friendly-name", "value": "Fleet reader"}])
        for exit in (-2147483648, -5, 256, 1.5):
            forged["exit"] = exit
            r, doc = self.fleet("--timeout", "20s", "run", "--host", "forged", "--", "list")
            self.assertEqual(r.returncode, EXIT_INVALID_FORMAT, (exit, r.stderr))
            self.assertEqual(doc["hosts"][0]["exit"], EXIT_INVALID_FORMAT, doc)
            r, doc = self.fleet("--timeout", "20s", "apply", path, "--host", "forged", "--wait", "20s")
            self.assertEqual(r.returncode, EXIT_INVALID_FORMAT, (exit, r.stderr))
            r, _ = self.fleet("apply", path, "--host", "forged", "--wait", "20s", json_out=False)
            self.assertEqual((r.returncode, r.stdout.split("\t")[:3]), (EXIT_INVALID_FORMAT, ["forged", "x", "85"]),
                             (exit, r.stdout, r.stderr))
            r, doc = self.fleet("status", "--host", "forged", json_out=False)
            self.assertEqual((r.returncode, r.stdout.split()[-1]), (0, "failed"), (exit, r.stdout, r.stderr))

    def test_an_applied_report_made_while_the_spool_drains_a_backlog_is_published(self):
        # A store offline with codes spooled comes back: its spool republishes them, 256 at a time (the
        # transport's bound), and the desired state waiting for it is applied meanwhile. The report
        # used to be dropped when the transport had no room for it, and the host stayed "pending".
        broker = Broker(persistence=True)
        self.addCleanup(broker.close)
        url = f"mqtt://{broker.host}:{broker.port}/{PREFIX}"
        scanner = PtyScanner()
        self.addCleanup(scanner.close)
        sub = Subscriber(broker, f"{PREFIX}/backlog/#")
        self.addCleanup(sub.close)
        cap = Capture(broker, [scanner.selector], extra=["--mqtt", url, "--mqtt-host-id", "backlog", "--mqtt-commands"],
                      json_out=False, mqtt=False)
        self.addCleanup(cap.close)
        self.assertTrue(scanner.wait_opened(), cap.describe())
        sub.wait(lambda m: m.topic.endswith("/deviceArrival"), 30, what="the arrival")
        broker.stop()
        for n in range(5000):
            scanner.write(f"B-{n:05d}")
        cap.wait_for(lambda: any("events are spooled" in line for line in cap.stderr()), 30, "the outage")
        cap.wait_for(lambda: any(b'"B-04999"' in payload for _, payload in spool_records(cap.state, "backlog")[-5:]),
                     120, "the backlog spooled")
        broker.start()
        desired = {"profile": {"properties": [{"name": "friendly-name", "value": "x"}]}, "version": "v-backlog"}
        publisher = Subscriber(broker, f"{PREFIX}/backlog/applied")
        self.addCleanup(publisher.close)
        publisher.client.publish(f"{PREFIX}/backlog/desired", json.dumps(desired), qos=1, retain=True).wait_for_publish(10)
        report = publisher.wait(lambda m: m.payload and m.json().get("version") == "v-backlog", 60,
                                what="the applied report").json()
        # A serial scanner has no friendly-name to write: a report all the same, saying so.
        self.assertEqual((report["host"], report["devices"][0]["device"]), ("backlog", scanner.selector), report)

    def test_apply_to_300_hosts_behind_a_slow_broker_publishes_them_at_once(self):
        # Every PUBACK 50 ms late (a broker across a WAN): one desired state after the other, each
        # waiting for its PUBACK, took 300 x 50 ms = 15 s, and --timeout 5s ran out (exit 42).
        proxy = DelayProxy(self.broker_, 0.05)
        self.addCleanup(proxy.close)
        path = self.profile([{"name": "friendly-name", "value": "Fleet reader"}])
        names = [f"far-{n:03d}" for n in range(300)]
        argv = [capture_bin(), "--json", "--timeout", "5s", "fleet", "--mqtt", f"mqtt://127.0.0.1:{proxy.port}/{PREFIX}",
                "apply", path] + [word for name in names for word in ("--host", name)]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["hosts"], names)
        desired = Subscriber(self.broker_, f"{PREFIX}/+/desired")
        self.addCleanup(desired.close)
        got = desired.wait_count(lambda m: m.retain, len(names), seconds=30)
        self.assertEqual(sorted(m.topic for m in got), [f"{PREFIX}/{n}/desired" for n in names])

    def test_watch_keeps_at_most_64_mib_waiting_for_a_reader_that_stopped(self):
        # 151 events of 1.5 MiB for a watch whose stdout nobody reads: it used to keep every one
        # (65,536 events of up to 2 MiB could wait: 128 GiB); past 64 MiB the newest are now lost.
        watch = subprocess.Popen([capture_bin(), "--json", "fleet", "watch", "--mqtt", self.url],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(lambda: watch.poll() is None and (watch.kill(), watch.wait()))
        self.addCleanup(watch.stdout.close)
        self.addCleanup(watch.stderr.close)
        deadline = time.monotonic() + 30
        while not re.search(r"capture-fleet-\S+ 1 fleet/\+/events/#", self.broker_.tail(200)):
            self.assertLess(time.monotonic(), deadline, f"the watch never subscribed\n{self.broker_.tail()}")
            time.sleep(0.05)
        client = re.search(r"(capture-fleet-\S+) 1 fleet/\+/events/#", self.broker_.tail(200)).group(1)
        text = "x" * (3 << 19)
        for n in range(151):
            event = {"event": "decodedData", "eventId": f"big-epoch-{n}", "host": "big", "text": text}
            self.sub.client.publish(f"{PREFIX}/big/events/dev/decodedData", json.dumps(event), qos=1).wait_for_publish(30)
        # The watch acknowledged all 151 (its PUBACK of one follows the hand-over of the one before).
        deadline = time.monotonic() + 60
        while open(self.broker_.log, errors="replace").read().count(f"Received PUBACK from {client} ") < 151:
            self.assertLess(time.monotonic(), deadline, "the watch did not take the 151 events")
            time.sleep(0.1)
        with open(f"/proc/{watch.pid}/status") as f:
            rss_mb = int(next(line for line in f if line.startswith("VmRSS:")).split()[1]) / 1024
        self.assertLess(rss_mb, 160, "the events waiting for stdout are not bounded")

    def test_a_broker_refusing_the_controller_exits_as_listen_does(self):
        r, _ = self.fleet("hosts", json_out=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        broker = Broker(users={"ops": "right"})
        self.addCleanup(broker.close)
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write("wrong\n")
        os.chmod(f.name, 0o600)
        self.addCleanup(os.unlink, f.name)
        r = subprocess.run([capture_bin(), "fleet", "hosts", "--mqtt", f"mqtt://ops@{broker.host}:{broker.port}/x",
                            "--mqtt-password-file", f.name], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, EXIT_COMMAND_DENIED, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


# The fleet: 20 hosts of the three kinds a store has (docs/fleet.md §9), named so that a glob
# picks a kind: s-cam-NN (SocketCam), s-tty-NN (a serial scanner), s-dm-NN (a DataMan).
SCALE_HOSTS = ([(f"s-cam-{i:02d}", "socketcam") for i in range(1, 9)] + [(f"s-tty-{i:02d}", "serial") for i in range(1, 9)]
               + [(f"s-dm-{i:02d}", "dataman") for i in range(1, 5)])
EXIT_NOT_SUPPORTED = 15  # ESKT_NOTSUPPORTED: a serial scanner has no friendly-name to write


class ScaleHost:
    """One host of FleetAtScaleTests: its device (a pty scanner or a DataMan simulator kept for the whole
    class, or SocketCam on `--image -` with stdin held open so listen keeps running) and its capture
    listen process, which stop() and start() end and run again with the same state directory."""

    def __init__(self, name, kind, broker, url):
        self.name, self.kind, self.broker, self.url = name, kind, broker, url
        self.state = tempfile.mkdtemp(prefix="capture-fleet-scale.")
        self.scanner = self.sim = self.cap = None
        if kind == "serial":
            self.scanner = PtyScanner()
            self.device = self.scanner.selector
        elif kind == "dataman":
            self.sim = DataManSimulator()
            self.device = self.sim.selector
        else:
            self.device = "socketcam"

    def start(self):
        devices = [self.device] + (["--image", "-"] if self.kind == "socketcam" else [])
        extra = ["--mqtt", self.url, "--mqtt-host-id", self.name, "--mqtt-commands"]
        self.cap = Capture(self.broker, devices, extra=extra, state=self.state, json_out=False, mqtt=False,
                           stdin=subprocess.PIPE if self.kind == "socketcam" else subprocess.DEVNULL)

    def stop(self):
        status = self.cap.terminate()
        self.cap.close()
        return status

    def arrival(self):
        return f"{PREFIX}/{self.name}/events/{topic_safe(self.device)}/deviceArrival"

    def name_sets(self, value):
        """The DMCC SETs of the device name to `value` the simulator received (DataMan hosts)."""
        return [c for c in self.sim.commands() if re.search(rf"SET DEVICE\.NAME .*{re.escape(value)}", str(c), re.I)]

    def close(self):
        if self.cap is not None:
            self.cap.close()
        if self.scanner is not None:
            self.scanner.close()
        if self.sim is not None:
            self.sim.proc.stdout.close()
            self.sim.close()
        shutil.rmtree(self.state, ignore_errors=True)


class FleetAtScaleTests(unittest.TestCase):
    """20 real hosts on one mosquitto (persistence on, as a fleet's broker runs), started once for the
    class; each test leaves all 20 running and uses a friendly name of its own, so the tests do not
    depend on their order."""

    @classmethod
    def setUpClass(cls):
        try:
            DataManSimulator.build()
        except (RuntimeError, OSError) as error:
            raise unittest.SkipTest(f"*** SKIPPED: DataMan simulator unavailable: {error}")
        cls.broker_ = Broker(persistence=True)
        cls.addClassCleanup(cls.broker_.close)
        cls.url = f"mqtt://{cls.broker_.host}:{cls.broker_.port}/{PREFIX}"
        cls.sub = Subscriber(cls.broker_, f"{PREFIX}/#")
        cls.addClassCleanup(cls.sub.close)
        cls.hosts = {}
        for name, kind in SCALE_HOSTS:
            host = ScaleHost(name, kind, cls.broker_, cls.url)
            cls.addClassCleanup(host.close)
            cls.hosts[host.name] = host
            host.start()
        for host in cls.hosts.values():
            cls.wait_up(host, 0)
        cls.names = sorted(cls.hosts)

    @classmethod
    def wait_up(cls, host, start):
        """Until `host` published its device's arrival (after message `start`): it is connected, and
        subscribed to its commands and desired topics (docs/fleet.md §9.4: it subscribes on connecting,
        before its spool publishes)."""
        try:
            cls.sub.wait(lambda m: m.topic == host.arrival(), 60, what=f"{host.name}'s device arrival", start=start)
        except AssertionError as error:
            raise AssertionError(f"{error}\n{host.cap.describe()}") from None

    def fleet(self, *args, json_out=True, seconds=120):
        argv = [capture_bin()] + (["--json"] if json_out else []) + ["fleet", "--mqtt", self.url, *args]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=seconds, env=dict(os.environ, NO_COLOR="1"))
        doc = json.loads(r.stdout.strip().splitlines()[0]) if json_out and r.stdout.strip() else None
        return r, doc

    def profile(self, friendly_name):
        f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump({"properties": [{"name": "friendly-name", "value": friendly_name}]}, f)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def applied(self, name, version, start=0, seconds=60):
        """`name`'s applied report of `version` that names its device (a host that connects before its
        device is open reports the empty set first, then applies again when the device arrives)."""
        def match(m):
            if m.topic != f"{PREFIX}/{name}/applied" or not m.payload:
                return False
            doc = m.json()
            return doc.get("version") == version and doc.get("devices")
        return self.sub.wait(match, seconds, what=f"{name}'s applied report of {version}", start=start).json()

    def test_hosts_lists_all_20_and_run_collects_20_replies(self):
        r, doc = self.fleet("hosts", "--hosts", "s-*")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([h["host"] for h in doc["hosts"]], self.names, doc)
        for h in doc["hosts"]:
            self.assertEqual(h["state"], "online", h)
            self.assertEqual([d["id"] for d in h["devices"]], [self.hosts[h["host"]].device], h)
        r, _ = self.fleet("hosts", "--hosts", "s-*", json_out=False)
        self.assertEqual([line.split("\t")[0] for line in r.stdout.splitlines()], self.names, r.stdout)

        r, doc = self.fleet("--timeout", "60s", "run", "--hosts", "s-*", "--", "list")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([(h["host"], h["exit"]) for h in doc["hosts"]], [(n, 0) for n in self.names], doc)
        # list's document (the devices remembered and SocketCam), as the host's own `list --json` prints it.
        self.assertTrue(all(isinstance(h["reply"]["devices"], list) for h in doc["hosts"]), doc)

    def check_report(self, name, report, version, changed):
        """A host's applied report of `version`: SocketCam and DataMan hosts wrote `changed`; a serial
        scanner has no friendly-name to write, so the whole profile is refused and nothing written."""
        host = self.hosts[name]
        self.assertEqual(report["version"], version, report)
        [device] = report["devices"]
        self.assertEqual(device["device"], host.device, report)
        if host.kind == "serial":
            self.assertEqual((report["exit"], device["exit"], device["changed"]),
                             (EXIT_NOT_SUPPORTED, EXIT_NOT_SUPPORTED, []), report)
            self.assertEqual(device["error"]["name"], "ESKT_NOTSUPPORTED", report)
        else:
            self.assertEqual((report["exit"], device["changed"], device["failed"]), (0, changed, []), report)

    def test_apply_converges_all_20_three_started_later_too_and_again_writes_nothing(self):
        late = ["s-cam-03", "s-dm-03", "s-tty-03"]  # one host of each kind, offline during the apply
        for name in late:
            self.addCleanup(lambda h=self.hosts[name]: h.cap.proc.poll() is None or self.restart(h))
            self.assertEqual(self.hosts[name].stop(), 0, self.hosts[name].cap.describe())
        path = self.profile("Scale-A")
        r, doc = self.fleet("--timeout", "60s", "apply", path, "--hosts", "s-*", "--wait", "60s")
        # The first failing host in host order (s-tty-01) decides the status over the missing reports.
        self.assertEqual(r.returncode, EXIT_NOT_SUPPORTED, r.stderr)
        version = doc["version"]
        reports = {h["host"]: h["applied"] for h in doc["hosts"]}
        self.assertEqual(sorted(reports), self.names)
        for name in self.names:
            if name in late:  # selected (their retained status says offline), no report yet
                self.assertIsNone(reports[name], name)
            else:
                self.check_report(name, reports[name], version, ["friendly-name"])

        # The three come back and converge from the retained desired state, nobody waiting for them.
        mark = len(self.sub.snapshot())
        for name in late:
            self.hosts[name].start()
        for name in late:
            self.check_report(name, self.applied(name, version, start=mark), version, ["friendly-name"])
        r, doc = self.fleet("status", "--hosts", "s-*")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([(h["host"], h["applied"]["version"], h["inSync"]) for h in doc["hosts"]],
                         [(n, version, self.hosts[n].kind != "serial") for n in self.names], doc)
        r, _ = self.fleet("status", "--hosts", "s-*", json_out=False)
        words = {line.split("\t")[0]: line.split("\t")[-1] for line in r.stdout.splitlines()}
        self.assertEqual(words, {n: "failed" if self.hosts[n].kind == "serial" else "applied" for n in self.names})

        # Applied again: every host reads, finds the value and writes nothing.
        r, doc = self.fleet("--timeout", "60s", "apply", path, "--hosts", "s-[cd]*", "--wait", "60s")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(doc["hosts"]), 12, doc)
        for h in doc["hosts"]:
            [device] = h["applied"]["devices"]
            self.assertEqual((device["changed"], device["unchanged"]), ([], ["friendly-name"]), h)
        r, _ = self.fleet("--timeout", "60s", "apply", path, "--hosts", "s-[cd]*", "--wait", "60s", json_out=False)
        self.assertEqual(r.stdout.count("nothing written"), 12, r.stdout)
        for host in self.hosts.values():
            if host.kind == "dataman":
                self.assertEqual(len(host.name_sets("Scale-A")), 1, (host.name, host.sim.commands()))

    def restart(self, host):
        mark = len(self.sub.snapshot())
        host.start()
        self.wait_up(host, mark)

    def test_a_broker_restart_while_the_controller_publishes_ends_with_every_host_applied_once(self):
        # The broker goes as soon as the first desired state is out: the controller is still publishing
        # the others (its unacknowledged one is sent again on the next connection).
        self.restart_during_apply("Scale-R1", lambda m, version: m.topic.endswith("/desired"))

    def test_a_broker_restart_while_the_hosts_apply_ends_with_every_host_applied_once(self):
        # The broker goes as soon as the first host reported: the others are applying, and their reports
        # cannot be sent while it is away (the retained desired state comes again on reconnection).
        self.restart_during_apply("Scale-R2", lambda m, version: m.topic.endswith("/applied") and m.payload
                                  and m.json().get("version") == version)

    def restart_during_apply(self, value, stop_at):
        # A consumer with a session of its own sees every applied report the broker took, across the restart.
        consumer = Subscriber(self.broker_, f"{PREFIX}/+/applied", session=f"fleet-scale-{value}")
        self.addCleanup(consumer.close)
        mark = len(self.sub.snapshot())
        path = self.profile(value)
        apply = subprocess.Popen(
            [capture_bin(), "--json", "--timeout", "60s", "fleet", "--mqtt", self.url, "apply", path,
             "--hosts", "s-*", "--wait", "90s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: apply.poll() is None and apply.kill())
        first = self.sub.wait(lambda m: m.topic.endswith("/desired") and value.encode() in m.payload, 60,
                              what="the first desired state", start=mark)
        version = first.json()["version"]
        self.sub.wait(lambda m: stop_at(m, version), 60, what="the moment to stop the broker", start=mark)
        subscriptions = consumer.subscriptions
        self.broker_.stop()
        self.broker_.start()
        consumer.wait_resubscribed(subscriptions, 30)
        out, err = apply.communicate(timeout=150)
        self.assertEqual(apply.returncode, EXIT_NOT_SUPPORTED, err)  # the serial hosts', as above
        doc = json.loads(out)
        self.assertEqual(doc["version"], version)
        self.assertEqual([h["host"] for h in doc["hosts"]], self.names, doc)
        for h in doc["hosts"]:
            # Written before the restart or after it: "changed" or, applied again, "unchanged".
            self.assertIsNotNone(h["applied"], h)
            self.assertEqual(h["applied"]["version"], version, h)

        # Every host ends with the applied report of this version (the retained one, as status reads it).
        r, status = self.fleet("status", "--hosts", "s-*")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([(h["host"], h["applied"]["version"]) for h in status["hosts"]],
                         [(n, version) for n in self.names], status)
        for h in status["hosts"]:
            device = h["applied"]["devices"][0]
            self.assertEqual(self.hosts[h["host"]].kind != "serial",
                             "friendly-name" in device["changed"] + device["unchanged"], h)
        # Nothing applied twice: no two reports of this version say they wrote the name, and the
        # DataMan readers were sent the name once. QoS 1 may deliver one report more than once (a
        # PUBACK lost in the restart: the host sends it again, the broker redelivers the session's),
        # so the reports are told apart by their bytes, which hold the time they were made.
        writes = {}
        for payload in {m.payload for m in consumer.snapshot() if m.payload}:
            report = json.loads(payload)
            if report.get("version") == version:
                for device in report.get("devices", []):
                    writes[report["host"]] = writes.get(report["host"], 0) + len(device["changed"])
        self.assertTrue(all(n <= 1 for n in writes.values()), writes)
        for host in self.hosts.values():
            if host.kind == "dataman":
                self.assertEqual(len(host.name_sets(value)), 1, (host.name, host.sim.commands()))
        r, doc = self.fleet("--timeout", "60s", "run", "--hosts", "s-cam-*", "--", "get", "socketcam", "friendly-name")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([h["reply"]["properties"][0]["value"] for h in doc["hosts"]], [value] * 8, doc)

    def test_watch_prints_each_real_scan_once(self):
        serial = [h for h in self.hosts.values() if h.kind == "serial"]
        with open(self.broker_.log, "rb") as f:
            offset = f.seek(0, os.SEEK_END)

        def subscribed():
            with open(self.broker_.log, "rb") as f:
                f.seek(offset)
                return f" 1 {PREFIX}/+/events/#".encode() in f.read()
        watch = subprocess.Popen(
            [capture_bin(), "--json", "--timeout", "90s", "fleet", "watch", "--hosts", "s-*", "--events",
             "decodedData", "--count", str(5 * len(serial)), "--mqtt", self.url],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: watch.poll() is None and watch.kill())
        # The watch subscribed (mosquitto logs "CLIENT 1 FILTER" for each subscription it takes).
        deadline = time.monotonic() + 30
        while not subscribed():
            self.assertLess(time.monotonic(), deadline, f"the watch never subscribed\n{self.broker_.tail()}")
            self.assertIsNone(watch.poll(), watch.stderr.read() if watch.poll() is not None else "")
            time.sleep(0.05)
        expected = []
        for n in range(3):
            for host in serial:
                text = f"W-{host.name}-{n}"
                host.scanner.write(text)
                expected.append(text)
        codes = self.sub.wait_count(lambda m: m.topic.endswith("/decodedData") and m.json().get("text", "").startswith("W-"),
                                    len(expected), seconds=60)
        self.assertEqual(len(codes), len(expected), [m.topic for m in codes])
        # Every one of them again, as a broker redelivers after a reconnection (same eventId).
        for m in codes:
            self.sub.client.publish(m.topic, m.payload, qos=1).wait_for_publish(10)
        for n in range(3, 5):
            for host in serial:
                text = f"W-{host.name}-{n}"
                host.scanner.write(text)
                expected.append(text)
        out, err = watch.communicate(timeout=120)
        self.assertEqual(watch.returncode, 0, err)
        got = [json.loads(line) for line in out.splitlines()]
        self.assertEqual(sorted(e["text"] for e in got), sorted(expected), out)
        self.assertEqual(len({e["eventId"] for e in got}), len(got), out)
        self.assertEqual({e["host"] for e in got}, {h.name for h in serial}, out)


if __name__ == "__main__":
    unittest.main()
