"""`capture fleet hosts|run|watch|apply|status` end to end (docs/fleet.md §9): the real binary as the
controller, a real mosquitto (Tests/MQTT/broker.py), and real hosts: `capture listen --mqtt ...
--mqtt-commands` processes, each holding its own DataMan simulator (Tests/Simulators), each with its
own state directory and host id.

Run: CAPTURE_BIN=.build/debug/capture /usr/bin/python3 -m unittest discover -s Tests/MQTT -p 'test_fleet.py' -v
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "Service"))
from broker import Broker, Subscriber, retained  # noqa: E402
from serve_harness import DataManSimulator, capture_bin  # noqa: E402
from test_mqtt import PREFIX, Capture  # noqa: E402

EXIT_NOT_FOUND = 17  # ESKT_NOTFOUND: a --hosts GLOB that matches no known host
EXIT_INVALID_PARAMETER = 18  # ESKT_INVALIDPARAMETER: usage, and a profile set --from rejects
EXIT_COMMAND_DENIED = 37  # ESKT_COMMANDDENIED: a host without --mqtt-commands refuses a desired state
EXIT_TIMED_OUT = 42  # ESKT_REQUESTTIMEDOUT: hosts that did not answer, applied reports missing


def setUpModule():
    if not os.access(capture_bin(), os.X_OK):
        raise unittest.SkipTest(f"*** SKIPPED: no capture binary at {capture_bin()} (set CAPTURE_BIN)")
    if not os.access("/usr/sbin/mosquitto", os.X_OK):
        raise unittest.SkipTest("*** SKIPPED: no /usr/sbin/mosquitto (Debian package mosquitto)")


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


if __name__ == "__main__":
    unittest.main()
