#!/usr/bin/env python3
"""Instructions per event on the paths a code takes through capture, for two binaries in one run:
what CPU-time benches cannot settle on a loaded 2-core machine (their run-to-run spread is as large as
the differences they look for), an instruction count does. Every run is under valgrind's callgrind,
which counts the instructions every thread of the process executed (its "totals" line); the
marginal count per event is (Ir(N2) - Ir(N1)) / (N2 - N1), so start-up, shutdown and the devices'
arrival cancel out.

Paths (each fed codes through one line-mode pty scanner, docs/device-protocols.md's serial framing):
- listen: `capture --json listen serial:PTY --count N` to a file (the CLI front end).
- mqtt:   `capture listen serial:PTY --mqtt mqtt://127.0.0.1:PORT/bench` to a private mosquitto
          (Tests/MQTT/broker.py), a paho subscriber waiting for all N decodedData events before capture
          is stopped with SIGTERM (so every code was published and acknowledged, none spooled for later).
- serve:  `capture serve serial:PTY` with CLIENTS (10) WebSocket clients that opened the device, each
          waiting for all N codes before SIGTERM; reported per delivered event (N × CLIENTS).
Peers: the other binary on the same work in the same run; the ratio NEW / BASE is what counts.

valgrind 3.19 (Debian 12) cannot read the DWARF 5 that swiftc writes (it gives up on the binary), so
each binary is run as a copy with its debug sections removed (objcopy --strip-debug); the code is the
same; and libdispatch's signal thread needs bench/valgrind-sigsuspend.c preloaded (valgrind 3.19 writes
into the read-only mask that thread gives sigsuspend, and dies). Deterministic to well under 1 % run to
run, whatever else the machine does.
Usage: instructions.py BASE NEW [N1] [N2] [CLIENTS]
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "Tests", "MQTT"))
from benchlib import ServeClient, pty, read_clients, wait_opened  # noqa: E402
from broker import Broker  # noqa: E402

import paho.mqtt.client as paho  # noqa: E402

APP_INFO = {"appId": "web:com.example.bench", "developerId": "bb57d8e1-f911-47ba-b510-693be162686a",
            "appKey": "MC4CFQDNCtjazxILEh8oyT6w/wlaVKqS1gIVAK7TkfS2mMCBkBP9hpfMd5flBlUj"}
TOTALS = re.compile(rb"^totals: (\d+)", re.M)
# Under valgrind capture runs 20-100 times slower: deadlines are generous, and a run that misses one
# ends the bench with the reason rather than reporting a count of partial work.
DEADLINE = 900


def stripped(binary, work, name):
    path = os.path.join(work, name)
    subprocess.run(["objcopy", "--strip-debug", binary, path], check=True)
    return path


SHIM = None


def build_shim(work):
    global SHIM
    SHIM = os.path.join(work, "valgrind-sigsuspend.so")
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", SHIM, os.path.join(HERE, "valgrind-sigsuspend.c")], check=True)


def under_callgrind(binary, out):
    return ["env", f"LD_PRELOAD={SHIM}", "valgrind", "--tool=callgrind", "--quiet", f"--callgrind-out-file={out}", binary]


def instructions(out):
    with open(out, "rb") as f:
        m = TOTALS.search(f.read())
    if not m:
        sys.exit(f"no totals in {out}")
    return int(m.group(1))


def codes(n):
    return [b"I%07d" % i for i in range(n)]


def feed(master, n):
    data = memoryview(b"".join(c + b"\r\n" for c in codes(n)))
    while data:
        data = data[os.write(master, data[:65536]):]


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        sys.exit("capture did not end within the deadline after SIGTERM")


def run_listen(binary, n, work):
    master, path = pty()
    out, cg = os.path.join(work, "listen.jsonl"), os.path.join(work, "cg.listen")
    with open(out, "wb") as f:
        proc = subprocess.Popen(under_callgrind(binary, cg) + ["--json", "listen", f"serial:{path}?framing=line",
                                "--count", str(n)], stdout=f, stderr=subprocess.DEVNULL,
                                env=dict(os.environ, XDG_STATE_HOME=os.path.join(work, "state")))
    wait_opened(path, DEADLINE)
    threading.Thread(target=feed, args=(master, n), daemon=True).start()
    try:
        proc.wait(DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        sys.exit("listen --count did not end within the deadline")
    os.close(master)
    with open(out, "rb") as f:
        got = f.read().count(b'"decodedData"')
    if got != n:
        sys.exit(f"listen printed {got} codes of {n}")
    return instructions(cg)


def run_mqtt(binary, n, work, broker):
    master, path = pty()
    cg = os.path.join(work, "cg.mqtt")
    got = []
    done = threading.Event()
    sink = paho.Client(client_id=f"instructions-{os.getpid()}", protocol=paho.MQTTv311)

    def on_message(client, userdata, message):
        if message.topic.endswith("/decodedData"):
            got.append(message.payload)
            if len(got) >= n:
                done.set()

    sink.on_message = on_message
    subscribed = threading.Event()
    sink.on_subscribe = lambda *args: subscribed.set()
    sink.connect(broker.host, broker.port)
    sink.subscribe("bench/#", qos=1)
    sink.loop_start()
    if not subscribed.wait(30):
        sys.exit("the subscriber's SUBSCRIBE was not acknowledged")
    proc = subprocess.Popen(under_callgrind(binary, cg) + ["listen", f"serial:{path}?framing=line", "--mqtt",
                            f"mqtt://{broker.host}:{broker.port}/bench", "--mqtt-host-id", "ihost"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, XDG_STATE_HOME=os.path.join(work, "state-mqtt-%d" % n)))
    wait_opened(path, DEADLINE)
    threading.Thread(target=feed, args=(master, n), daemon=True).start()
    if not done.wait(DEADLINE):
        proc.kill()
        sys.exit(f"the subscriber got {len(got)} codes of {n} within the deadline")
    stop(proc)
    sink.loop_stop()
    sink.disconnect()
    os.close(master)
    return instructions(cg)


def run_serve(binary, n, work, nclients):
    master, path = pty()
    cg = os.path.join(work, "cg.serve")

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(under_callgrind(binary, cg) + ["serve", f"serial:{path}?framing=line", "--listen",
                            f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, XDG_STATE_HOME=os.path.join(work, "state-serve-%d" % n)))
    wait_opened(path, DEADLINE)
    deadline = time.monotonic() + DEADLINE
    while True:  # the service accepts once its listener is up
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                sys.exit("capture serve never accepted a connection")
            time.sleep(0.1)
    clients = [ServeClient(port, APP_INFO) for _ in range(nclients)]
    threading.Thread(target=feed, args=(master, n), daemon=True).start()
    read_clients(clients, n, max(1, deadline - time.monotonic()))
    counts = [len(c.seen) for c in clients]
    if counts != [n] * nclients:
        proc.kill()
        sys.exit(f"serve delivered {counts} of {n} per client (closed: {[c.closed for c in clients]})")
    stop(proc)
    os.close(master)
    return instructions(cg)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.rsplit("Usage: ", 1)[1].strip())
    n1 = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    n2 = int(sys.argv[4]) if len(sys.argv) > 4 else 3000
    nclients = int(sys.argv[5]) if len(sys.argv) > 5 else 10
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (make bench-deps installs it)")
    work = tempfile.mkdtemp(prefix="capture-instructions.")
    broker = Broker()

    try:
        build_shim(work)
        binaries = {"base": stripped(sys.argv[1], work, "base"), "new": stripped(sys.argv[2], work, "new")}
        print(f"instructions per event (callgrind, marginal between {n1:,} and {n2:,} codes); base {sys.argv[1]}, "
              f"new {sys.argv[2]}")
        paths = [("listen", lambda b, n, w: run_listen(b, n, w), 1),
                 ("mqtt", lambda b, n, w: run_mqtt(b, n, w, broker), 1),
                 ("serve", lambda b, n, w: run_serve(b, n, w, nclients), nclients)]
        for name, run, per in paths:
            marginal = {}
            for label, binary in binaries.items():
                counts = []
                for n in (n1, n2):
                    w = tempfile.mkdtemp(dir=work)
                    counts.append(run(binary, n, w))
                marginal[label] = (counts[1] - counts[0]) / ((n2 - n1) * per)
            unit = "delivered event" if per > 1 else "event"
            print(f"{name}: base {marginal['base']:,.0f}, new {marginal['new']:,.0f} instructions per {unit}; "
                  f"ratio new / base {marginal['new'] / marginal['base']:.3f}", flush=True)
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
