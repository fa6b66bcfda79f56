"""The broker rig of the --mqtt tests checked on its own with Debian's mosquitto_pub: anonymous, a
password file, TLS with the CA made here, retained messages, QoS, a persistent session across a
restart, and a stopped broker refusing connections. Run: /usr/bin/python3 -m unittest discover -s
Tests/MQTT -p 'test_broker.py' -v"""
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broker import Broker, Subscriber, retained  # noqa: E402


def pub(broker, topic, message, *extra, user=None):
    argv = ["mosquitto_pub", "-h", broker.host, "-p", str(broker.port), "-t", topic, "-m", message, *extra]
    if user:
        argv += ["-u", user[0], "-P", user[1]]
    if broker.tls:
        argv += ["--cafile", broker.ca]
    return subprocess.run(argv, capture_output=True, text=True, timeout=20)


class BrokerRigTests(unittest.TestCase):
    def test_anonymous_broker_delivers_qos_and_retain_flags(self):
        broker = Broker()
        self.addCleanup(broker.close)
        sub = Subscriber(broker, "rig/#")
        self.addCleanup(sub.close)
        self.assertEqual(pub(broker, "rig/a", "one", "-q", "1").returncode, 0)
        got = sub.wait(lambda m: m.topic == "rig/a")
        self.assertEqual((got.payload, got.qos, got.retain), (b"one", 1, False))
        self.assertEqual(pub(broker, "rig/status", '{"state":"online"}', "-q", "1", "-r").returncode, 0)
        sub.wait(lambda m: m.topic == "rig/status")
        kept = retained(broker, "rig/status")
        self.assertIsNotNone(kept)
        self.assertEqual((kept.json(), kept.retain), ({"state": "online"}, True))

    def test_password_file_accepts_the_user_and_refuses_a_wrong_password(self):
        broker = Broker(users={"alice": "s3cret"})
        self.addCleanup(broker.close)
        self.assertEqual(pub(broker, "t", "x", user=("alice", "s3cret")).returncode, 0)
        self.assertNotEqual(pub(broker, "t", "x", user=("alice", "wrong")).returncode, 0)
        self.assertNotEqual(pub(broker, "t", "x").returncode, 0)

    def test_tls_listener_verifies_with_the_test_ca(self):
        broker = Broker(users={"alice": "s3cret"}, tls=True)
        self.addCleanup(broker.close)
        sub = Subscriber(broker, "#", username="alice", password="s3cret")
        self.addCleanup(sub.close)
        self.assertEqual(pub(broker, "tls/x", "over tls", "-q", "1", user=("alice", "s3cret")).returncode, 0)
        self.assertEqual(sub.wait(lambda m: m.topic == "tls/x").payload, b"over tls")
        # Without the CA the broker's certificate does not verify.
        plain = subprocess.run(["mosquitto_pub", "-h", broker.host, "-p", str(broker.port), "-t", "x", "-m", "x",
                                "-u", "alice", "-P", "s3cret"], capture_output=True, timeout=20)
        self.assertNotEqual(plain.returncode, 0)

    def test_stopped_broker_refuses_and_a_restart_keeps_the_port_and_a_persistent_session(self):
        broker = Broker(persistence=True)
        self.addCleanup(broker.close)
        sub = Subscriber(broker, "p/#", session="rig-consumer")
        self.addCleanup(sub.close)
        broker.stop()
        self.assertNotEqual(pub(broker, "p/x", "down").returncode, 0)
        broker.start()
        # Published before the subscriber is back: queued in its session, delivered on reconnection.
        self.assertEqual(pub(broker, "p/x", "queued", "-q", "1").returncode, 0)
        self.assertEqual(sub.wait(lambda m: m.topic == "p/x", seconds=10).payload, b"queued")

    def test_kill_is_immediate(self):
        broker = Broker()
        self.addCleanup(broker.close)
        started = time.monotonic()
        broker.kill()
        self.assertFalse(broker.running())
        self.assertLess(time.monotonic() - started, 5)


if __name__ == "__main__":
    unittest.main()
