"""The broker side of the `capture --mqtt` tests: Debian's mosquitto on a free loopback port with a
config written to a temp dir (anonymous, a password file made with mosquitto_passwd -b, or a TLS
listener whose CA and server certificate openssl makes here), and a paho-mqtt subscriber that keeps
every message with its topic, retain flag and QoS. Nothing here models capture.
"""
import atexit
import json
import ssl
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import paho.mqtt.client as paho

MOSQUITTO = "/usr/sbin/mosquitto"
_running = set()  # brokers of this process, killed at exit whatever a test left behind
atexit.register(lambda: [b.kill() for b in list(_running)])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_ca_and_server_cert(directory, host="127.0.0.1"):
    """A CA and a server certificate for `host` signed by it (subjectAltName IP, as a TLS client checks
    the name against it). Returns (ca.pem, server.pem, server.key)."""
    ca_key, ca = os.path.join(directory, "ca.key"), os.path.join(directory, "ca.pem")
    key, csr, cert = (os.path.join(directory, n) for n in ("server.key", "server.csr", "server.pem"))
    ext = os.path.join(directory, "san.ext")
    with open(ext, "w") as f:
        f.write(f"subjectAltName=IP:{host}\nbasicConstraints=CA:FALSE\n")
    run = lambda *argv: subprocess.run(["openssl", *argv], check=True, capture_output=True, timeout=300)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca, "-days", "2",
        "-subj", "/CN=capture test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", f"/CN={host}")
    run("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert, "-days", "2",
        "-extfile", ext)
    return ca, cert, key


class Broker:
    """One mosquitto process. `users` {name: password} turns anonymous access off and writes a
    password_file; `tls` puts the listener behind TLS with a CA made here (self.ca is its file).
    `persistence` keeps sessions (a subscriber's subscriptions and queued QoS 1 messages) across a
    stop and a start, as a fleet's broker does; off by default."""

    def __init__(self, users=None, tls=False, persistence=False, port=None):
        self.dir = tempfile.mkdtemp(prefix="capture-mqtt-broker.")
        self.port = port or free_port()
        self.host = "127.0.0.1"
        self.tls = tls
        self.users = dict(users or {})
        self.ca = None
        self.log = os.path.join(self.dir, "mosquitto.log")
        lines = [f"listener {self.port} {self.host}", "per_listener_settings false",
                 f"persistence {'true' if persistence else 'false'}",
                 f"persistence_location {self.dir}/", "autosave_interval 1",
                 "max_queued_messages 200000", "max_inflight_messages 0",
                 f"log_dest file {self.log}", "log_type all", "connection_messages true"]
        if os.geteuid() == 0:
            # Run as root, mosquitto would drop to the user mosquitto, who cannot read this private dir.
            lines.append("user root")
        if self.users:
            pwfile = os.path.join(self.dir, "passwords")
            open(pwfile, "w").close()
            for name, password in self.users.items():
                subprocess.run(["mosquitto_passwd", "-b", pwfile, name, password], check=True,
                               capture_output=True, timeout=30)
            lines += ["allow_anonymous false", f"password_file {pwfile}"]
        else:
            lines += ["allow_anonymous true"]
        if tls:
            self.ca, cert, key = make_ca_and_server_cert(self.dir, self.host)
            lines += [f"cafile {self.ca}", f"certfile {cert}", f"keyfile {key}", "require_certificate false"]
        self.config = os.path.join(self.dir, "mosquitto.conf")
        with open(self.config, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.proc = None
        self.start()

    @property
    def url_authority(self):
        return f"{self.host}:{self.port}"

    def start(self, seconds=10):
        assert self.proc is None or self.proc.poll() is not None, "mosquitto is already running"
        deadline = time.monotonic() + seconds
        while True:
            self.proc = subprocess.Popen([MOSQUITTO, "-c", self.config], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            _running.add(self)
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    break
                try:
                    with socket.create_connection((self.host, self.port), timeout=0.2):
                        return
                except OSError:
                    time.sleep(0.02)
            err = self.proc.stderr.read().decode(errors="replace") if self.proc.poll() is not None else ""
            # The old listener's port can linger for a moment after a restart: try again until the deadline.
            if time.monotonic() >= deadline:
                self.kill()
                raise RuntimeError(f"mosquitto did not accept on {self.port}: {err}\n{self.tail()}")
            time.sleep(0.1)

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        """SIGTERM: clients are disconnected; with persistence the sessions are saved first."""
        if self.running():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stderr:
            self.proc.stderr.close()

    def restart(self):
        self.stop()
        self.start()

    def kill(self):
        if self.running():
            self.proc.kill()
            self.proc.wait()

    def tail(self, n=40):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def sent_to(self, topic):
        """The client ids the broker sent a PUBLISH on `topic` to, one per message, from its log
        (log_type all). mosquitto writes "Sending PUBLISH to ..." for every subscriber while it routes
        a message, before its PUBACK to the publisher: once a QoS 1 publish is acknowledged, the
        routing of that message is all in the log."""
        sending = re.compile(r"Sending PUBLISH to (\S+) \(d\d, q\d, r\d, m\d+, '(.*)', \.\.\. \(\d+ bytes\)\)$")
        try:
            with open(self.log, errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            return []
        return [m.group(1) for m in map(sending.search, lines) if m and m.group(2) == topic]

    def close(self):
        self.kill()
        _running.discard(self)
        if self.proc is not None and self.proc.stderr:
            self.proc.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Message:
    __slots__ = ("topic", "payload", "retain", "qos", "time")

    def __init__(self, topic, payload, retain, qos, when):
        self.topic, self.payload, self.retain, self.qos, self.time = topic, payload, retain, qos, when

    def json(self):
        return json.loads(self.payload)

    def __repr__(self):
        return f"Message({self.topic!r}, {self.payload[:200]!r}, retain={self.retain}, qos={self.qos})"


class Subscriber:
    """A paho-mqtt 1.6 client subscribed to `topic` (QoS 1) keeping every message in arrival order.
    `session` names a persistent session (clean_session false, the fleet consumer's way: the broker
    queues QoS 1 messages while it is away); it reconnects on its own after a broker restart."""

    def __init__(self, broker, topic="#", session=None, username=None, password=None, qos=1):
        self.broker = broker
        self.topic = topic
        self.qos = qos
        self.messages = []
        self.lock = threading.RLock()  # predicates may take a snapshot while wait() holds it
        self.changed = threading.Condition(self.lock)
        self.subscribed = threading.Event()
        self.subscriptions = 0  # SUBACKs so far: one per (re)connection
        client_id = session or f"capture-test-sub-{os.getpid()}-{id(self)}"
        self.client_id = client_id
        self.client = paho.Client(client_id=client_id, clean_session=session is None, protocol=paho.MQTTv311)
        self.client.reconnect_delay_set(0.05, 0.2)
        if username is not None:
            self.client.username_pw_set(username, password)
        if broker.tls:
            self.client.tls_set(ca_certs=broker.ca, tls_version=ssl.PROTOCOL_TLS_CLIENT)
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = self._on_subscribe
        self.client.on_message = self._on_message
        self.client.connect(broker.host, broker.port, keepalive=30)
        self.client.loop_start()
        if not self.subscribed.wait(10):
            raise RuntimeError("the test subscriber was never subscribed")

    def _on_connect(self, client, userdata, flags, rc):
        if rc == 0:
            client.subscribe(self.topic, qos=self.qos)

    def _on_subscribe(self, client, userdata, mid, granted):
        with self.changed:
            self.subscriptions += 1
            self.changed.notify_all()
        self.subscribed.set()

    def _on_message(self, client, userdata, msg):
        with self.changed:
            self.messages.append(Message(msg.topic, bytes(msg.payload), bool(msg.retain), msg.qos, time.monotonic()))
            self.changed.notify_all()

    def wait_resubscribed(self, since, seconds=10):
        """After a broker restart: until a SUBACK newer than `since` (self.subscriptions before the
        stop) put the subscription in place again."""
        deadline = time.monotonic() + seconds
        with self.changed:
            while self.subscriptions <= since:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"the test subscriber did not resubscribe; broker log:\n{self.broker.tail(30)}")
                self.changed.wait(min(left, 0.2))

    def snapshot(self, prefix=None):
        with self.lock:
            return [m for m in self.messages if prefix is None or m.topic.startswith(prefix)]

    def wait(self, predicate, seconds=10, what="a matching message", start=0):
        """The first message (in arrival order, from index `start`) matching predicate(message), waiting
        up to `seconds`."""
        deadline = time.monotonic() + seconds
        with self.changed:
            while True:
                for m in self.messages[start:]:
                    if predicate(m):
                        return m
                left = deadline - time.monotonic()
                if left <= 0:
                    topics = [m.topic for m in self.messages[-20:]]
                    raise AssertionError(f"no {what} within {seconds} s; last topics: {topics}")
                self.changed.wait(min(left, 0.2))

    def wait_count(self, predicate, count, seconds=30):
        """Until at least `count` messages match; returns them (maybe fewer after the deadline)."""
        deadline = time.monotonic() + seconds
        with self.changed:
            while True:
                found = [m for m in self.messages if predicate(m)]
                left = deadline - time.monotonic()
                if len(found) >= count or left <= 0:
                    return found
                self.changed.wait(min(left, 0.2))

    def close(self):
        self.client.loop_stop()
        try:
            self.client.disconnect()
        except Exception:  # noqa: BLE001 - the broker may be gone already
            pass


def retained(broker, topic, seconds=10, tls_user=None):
    """The retained message on `topic` as a fresh subscriber sees it (None when there is none: the
    broker sends a retained message right after the SUBACK, so `seconds` only bounds a slow machine;
    callers expect one)."""
    sub = Subscriber(broker, topic, username=tls_user[0] if tls_user else None,
                     password=tls_user[1] if tls_user else None)
    try:
        try:
            return sub.wait(lambda m: m.retain, seconds, what=f"retained message on {topic}")
        except AssertionError:
            return None
    finally:
        sub.close()
