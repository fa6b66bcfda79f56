#!/usr/bin/env python3
"""`capture listen --mqtt` end to end: codes from SCANNERS (4) line-mode pty scanners through capture to
a local mosquitto (Tests/MQTT/broker.py: a private broker on a free loopback port) and a paho-mqtt
subscriber on PREFIX/#.

1. Throughput: TOTAL (100,000) codes written as fast as the ptys take them. Checked: every code arrives
   (deduplicated on eventId), in order per scanner. Reported: events/s (codes / wall time from the first
   write to the last code received), capture's CPU per event (user+sys from /proc/PID/stat), fsyncs per
   second (fsync + fdatasync counted by `strace -c -f --seccomp-bpf`: only those two calls stop the
   process; without strace, from the spool's state not measured, and the bench says so).
   Peer: `mosquitto_pub -q 1 -l` publishing the same lines to the same broker and subscriber (events/s
   and its CPU per event: the ratio is what the spool, the JSON and the driver cost over a bare client).
2. Latency: LATENCY (2,000) codes paced at 500 codes/s, each timed from its write into the pty to its
   arrival at the subscriber: p50 / p99. Peers: the same lines through `mosquitto_pub -q 1 -l` (write
   into its stdin → subscriber), and `capture --json listen` to stdout (write into the pty → the line).
3. Outage: the broker stopped, OUTAGE (50,000) codes read into the spool, capture's VmRSS sampled every
   0.2 s (/proc/PID/status): start, peak, end; the spool's size on disk; then the broker started and
   the drain timed (all delivered is checked).
Usage: mqtt-throughput.py CAPTURE [TOTAL] [SCANNERS] [OUTAGE] [LATENCY]
"""
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tty

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "Tests", "MQTT"))
from broker import Broker  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "bench"))
from benchlib import holders, pty, wait_opened  # noqa: E402

import paho.mqtt.client as paho  # noqa: E402

capture = os.path.abspath(sys.argv[1])
total = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
nscanners = int(sys.argv[3]) if len(sys.argv) > 3 else 4
outage_total = int(sys.argv[4]) if len(sys.argv) > 4 else 50_000
latency_total = int(sys.argv[5]) if len(sys.argv) > 5 else 2_000
HOST, PREFIX = "benchhost", "bench"
TICK = os.sysconf("SC_CLK_TCK")
TEXT = re.compile(rb'"text":"([^"]*)"')
EVENT_ID = re.compile(rb'"eventId":"([^"]*)"')


def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def vmrss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def percentile(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


class Sink:
    """paho subscriber on bench/#: (arrival ns, payload) of every message; the callback only appends."""

    def __init__(self, broker, topic):
        self.got = []
        self.lock = threading.Lock()
        self.ready = threading.Event()
        self.client = paho.Client(client_id=f"bench-sink-{os.getpid()}-{id(self)}", protocol=paho.MQTTv311)
        self.client.reconnect_delay_set(0.05, 0.2)
        self.client.on_connect = lambda c, u, f, rc: c.subscribe(topic, qos=1)
        self.client.on_subscribe = lambda c, u, m, g: self.ready.set()
        self.client.on_message = lambda c, u, m: self.got.append((time.monotonic_ns(), m.payload))
        self.client.connect(broker.host, broker.port, keepalive=60)
        self.client.loop_start()
        if not self.ready.wait(10):
            sys.exit("the bench subscriber never subscribed")

    def count(self):
        return len(self.got)

    def wait_count(self, n, seconds):
        deadline = time.monotonic() + seconds
        while len(self.got) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        return len(self.got) >= n

    def close(self):
        self.client.loop_stop()
        self.client.disconnect()


def codes_of(got, id_key=True):
    """[(arrival ns, text)] deduplicated on eventId (capture) or on the text (mosquitto_pub lines)."""
    seen, out, dups = set(), [], 0
    for when, payload in got:
        if id_key:
            t, e = TEXT.search(payload), EVENT_ID.search(payload)
            if not t or not e:
                continue  # status, devices, arrivals
            key, text = e.group(1), t.group(1)
        else:
            key = text = bytes(payload)
        if key in seen:
            dups += 1
            continue
        seen.add(key)
        out.append((when, text))
    return out, dups


class Capture:
    """capture listen over the ptys with --mqtt, under strace -c when asked (the pid measured is
    capture's, not strace's)."""

    def __init__(self, paths, broker, state, strace_out=None, mqtt=True, stdout=subprocess.DEVNULL, extra=()):
        argv = [capture, *(["--json"] if not mqtt else []), "listen", *[f"serial:{p}?framing=line" for p in paths]]
        if mqtt:
            argv += ["--mqtt", f"mqtt://{broker.host}:{broker.port}/{PREFIX}", "--mqtt-host-id", HOST, *extra]
        if strace_out:
            argv = ["strace", "-f", "-c", "--seccomp-bpf", "-e", "trace=fsync,fdatasync", "-o", strace_out, *argv]
        env = dict(os.environ, XDG_STATE_HOME=state, NO_COLOR="1")
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE)
        for p in paths:
            wait_opened(p)
        self.pid = self.proc.pid
        if strace_out:
            self.pid = next(pid for pid in holders(paths[0]) if pid != self.proc.pid)
        self.err = []
        threading.Thread(target=lambda: self.err.extend(self.proc.stderr), daemon=True).start()

    def stop(self):
        # SIGTERM to capture itself (strace passes through and writes its summary when capture exits).
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return b"".join(self.err).decode(errors="replace")


def fsyncs(strace_out):
    calls = 0
    with open(strace_out) as f:
        for line in f:
            parts = line.split()
            if parts and parts[-1] in ("fsync", "fdatasync"):
                calls += int(parts[3])  # % time, seconds, usecs/call, calls, [errors], syscall
    return calls


def perf_fsyncs_start(pid, out):
    """perf stat counting the fsync and fdatasync tracepoints of capture's threads in the kernel (the
    process is not stopped, unlike under strace)."""
    return subprocess.Popen(["perf", "stat", "-x", ",", "-o", out, "-e",
                             "syscalls:sys_enter_fsync,syscalls:sys_enter_fdatasync", "-p", str(pid)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def perf_fsyncs_end(proc, out):
    proc.send_signal(signal.SIGINT)
    proc.wait(30)
    calls = 0
    with open(out) as f:
        for line in f:
            fields = line.strip().split(",")
            if len(fields) > 2 and fields[2].startswith("syscalls:sys_enter_f") and fields[0].isdigit():
                calls += int(fields[0])
    return calls


def perf_works():
    if shutil.which("perf") is None:
        return False
    r = subprocess.run(["perf", "stat", "-x", ",", "-e", "syscalls:sys_enter_fsync", "--", "true"],
                       capture_output=True, text=True, timeout=30)
    return r.returncode == 0 and "syscalls:sys_enter_fsync" in r.stderr and "not supported" not in r.stderr


def feed(masters, texts_by_scanner, chunk=500):
    """Every scanner's codes written by a thread of its own, `chunk` lines per write."""
    def one(fd, texts):
        for i in range(0, len(texts), chunk):
            write_all(fd, b"".join(t + b"\r\n" for t in texts[i:i + chunk]))
    threads = [threading.Thread(target=one, args=(fd, texts)) for fd, texts in zip(masters, texts_by_scanner)]
    for t in threads:
        t.start()
    return threads


def check_order(codes, texts_by_scanner):
    want = {t for texts in texts_by_scanner for t in texts}
    got = [t for _, t in codes if t in want]
    complete = len(set(got)) == len(want)
    ordered = all([t for t in got if t.startswith(b"S%d-" % i)] == texts for i, texts in enumerate(texts_by_scanner))
    return complete, ordered, len(set(got))


def throughput(broker, ptys, strace_ok, perf_ok=False):
    state = tempfile.mkdtemp(prefix="capture-mqtt-bench.")
    sink = Sink(broker, f"{PREFIX}/#")
    strace_out = os.path.join(state, "strace.txt") if strace_ok else None
    cap = Capture([p for _, p in ptys], broker, state, strace_out)
    time.sleep(1.0)  # arrivals and the retained status out of the way
    per = total // nscanners
    texts = [[b"S%d-%07d" % (i, n) for n in range(per)] for i in range(nscanners)]
    base = sink.count()
    perf_out = os.path.join(state, "perf.txt")
    perf = perf_fsyncs_start(cap.pid, perf_out) if perf_ok else None
    if perf:
        time.sleep(0.5)  # attached
    cpu0 = cpu(cap.pid)
    t0 = time.monotonic_ns()
    threads = feed([m for m, _ in ptys], texts)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        codes, _ = codes_of(sink.got[base:])
        if len(codes) >= per * nscanners:
            break
        time.sleep(0.2)
    for t in threads:
        t.join()
    cpu1 = cpu(cap.pid)
    perf_calls = perf_fsyncs_end(perf, perf_out) if perf else None
    codes, dups = codes_of(sink.got[base:])
    t1 = codes[-1][0] if codes else time.monotonic_ns()
    err = cap.stop()
    complete, ordered, n = check_order(codes, texts)
    calls = fsyncs(strace_out) if strace_out else None
    sink.close()
    wall = (t1 - t0) / 1e9
    shutil.rmtree(state, ignore_errors=True)
    return dict(n=n, wall=wall, cpu=cpu1 - cpu0, complete=complete, ordered=ordered, dups=dups, fsyncs=calls, perf=perf_calls, err=err)


def mosquitto_pub_peer(broker):
    sink = Sink(broker, f"{PREFIX}/peer")
    lines = b"".join(b"S%d-%07d\n" % (n % nscanners, n) for n in range(total))
    pub = subprocess.Popen(["mosquitto_pub", "-h", broker.host, "-p", str(broker.port), "-q", "1", "-l", "-t",
                            f"{PREFIX}/peer", "-i", "bench-peer"], stdin=subprocess.PIPE)
    time.sleep(0.5)
    t0 = time.monotonic_ns()
    pub.stdin.write(lines)
    pub.stdin.flush()
    ok = sink.wait_count(total, 300)
    t1 = sink.got[-1][0]
    used = cpu(pub.pid)
    pub.stdin.close()
    pub.wait(30)
    sink.close()
    return dict(ok=ok, wall=(t1 - t0) / 1e9, cpu=used)


def paced(write_one, n, rate):
    """Writes code i at t0 + i/rate; returns the write times (ns) by text."""
    sent = {}
    t0 = time.monotonic()
    for i in range(n):
        delay = t0 + i / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        text = b"L%07d" % i
        sent[text] = time.monotonic_ns()
        write_one(i, text)
    return sent


def latency_capture(broker, ptys):
    state = tempfile.mkdtemp(prefix="capture-mqtt-bench.")
    sink = Sink(broker, f"{PREFIX}/#")
    cap = Capture([p for _, p in ptys], broker, state)
    time.sleep(1.0)
    base = sink.count()
    sent = paced(lambda i, t: write_all(ptys[i % len(ptys)][0], t + b"\r\n"), latency_total, 500)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(codes_of(sink.got[base:])[0]) < latency_total:
        time.sleep(0.05)
    codes, _ = codes_of(sink.got[base:])
    cap.stop()
    sink.close()
    shutil.rmtree(state, ignore_errors=True)
    return [(when - sent[t]) / 1e6 for when, t in codes if t in sent]


def latency_mosquitto_pub(broker):
    sink = Sink(broker, f"{PREFIX}/peerlat")
    pub = subprocess.Popen(["mosquitto_pub", "-h", broker.host, "-p", str(broker.port), "-q", "1", "-l", "-t",
                            f"{PREFIX}/peerlat", "-i", "bench-peer-lat"], stdin=subprocess.PIPE, bufsize=0)
    time.sleep(0.5)
    sent = paced(lambda i, t: pub.stdin.write(t + b"\n"), latency_total, 500)
    sink.wait_count(latency_total, 30)
    pub.stdin.close()
    pub.wait(30)
    sink.close()
    return [(when - sent[bytes(p)]) / 1e6 for when, p in sink.got if bytes(p) in sent]


def latency_listen(ptys):
    state = tempfile.mkdtemp(prefix="capture-mqtt-bench.")
    cap = Capture([p for _, p in ptys], None, state, mqtt=False, stdout=subprocess.PIPE)
    got = []

    def reader():
        for line in cap.proc.stdout:
            m = TEXT.search(line)
            if m:
                got.append((time.monotonic_ns(), m.group(1)))
    threading.Thread(target=reader, daemon=True).start()
    time.sleep(1.0)
    sent = paced(lambda i, t: write_all(ptys[i % len(ptys)][0], t + b"\r\n"), latency_total, 500)
    deadline = time.monotonic() + 30
    while len(got) < latency_total and time.monotonic() < deadline:
        time.sleep(0.05)
    cap.stop()
    shutil.rmtree(state, ignore_errors=True)
    return [(when - sent[t]) / 1e6 for when, t in got if t in sent]


def outage(broker, ptys):
    state = tempfile.mkdtemp(prefix="capture-mqtt-bench.")
    sink = Sink(broker, f"{PREFIX}/#")
    cap = Capture([p for _, p in ptys], broker, state)
    time.sleep(1.0)
    samples = [vmrss_kb(cap.pid)]
    stop = threading.Event()

    def sampler():
        while not stop.is_set():
            try:
                samples.append(vmrss_kb(cap.pid))
            except OSError:
                return
            time.sleep(0.2)
    threading.Thread(target=sampler, daemon=True).start()
    broker.stop()
    down_at = len(samples)
    per = outage_total // nscanners
    texts = [[b"S%d-%07d" % (i, n) for n in range(per)] for i in range(nscanners)]
    for t in feed([m for m, _ in ptys], texts):
        t.join()
    time.sleep(3.0)  # the last reads appended and fsynced
    down_peak = max(samples)
    during = samples[down_at:] or samples
    quartiles = [during[min(len(during) - 1, len(during) * q // 4)] for q in (1, 2, 3, 4)]
    spool_bytes = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(state) for f in fs)
    rss_before_drain = samples[-1]
    base = sink.count()
    broker.start()
    t0 = time.monotonic()
    deadline = t0 + 600
    while time.monotonic() < deadline and len(codes_of(sink.got[base:])[0]) < per * nscanners:
        time.sleep(0.2)
    drain = time.monotonic() - t0
    codes, dups = codes_of(sink.got[base:])
    complete, ordered, n = check_order(codes, texts)
    stop.set()
    time.sleep(0.3)
    err = cap.stop()
    sink.close()
    shutil.rmtree(state, ignore_errors=True)
    return dict(start=samples[0], down_peak=down_peak, quartiles=quartiles, before_drain=rss_before_drain, peak=max(samples),
                end=samples[-1], spool=spool_bytes, drain=drain, n=n, complete=complete, ordered=ordered,
                dups=dups, err=err)


def main():
    if not os.access(capture, os.X_OK):
        sys.exit(f"no capture binary at {capture}")
    strace_ok = shutil.which("strace") is not None and not os.environ.get("NO_STRACE")
    ptys = [pty() for _ in range(nscanners)]
    broker = Broker()
    try:
        print(f"capture {capture}: {total:,} codes from {nscanners} line-mode ptys → capture listen --mqtt → "
              f"mosquitto {broker.port} → paho subscriber")
        perf_ok = perf_works()
        tp = throughput(broker, ptys, False, perf_ok)
        print(f"throughput: {tp['n']:,} of {total:,} codes delivered (complete {tp['complete']}, in order per "
              f"scanner {tp['ordered']}, {tp['dups']} duplicates) in {tp['wall']:.2f} s: "
              f"{tp['n'] / tp['wall']:,.0f} events/s; capture CPU {tp['cpu']:.2f} s = {tp['cpu'] / max(tp['n'], 1) * 1e6:.1f} µs/event")
        if not tp["complete"]:
            print("capture stderr:\n" + tp["err"][-2000:])
        if tp["perf"] is not None:
            print(f"fsyncs (perf stat, the syscalls:sys_enter_fsync/fdatasync tracepoints of capture over the feed): "
                  f"{tp['perf']:,} = {tp['perf'] / tp['wall']:,.1f}/s, {tp['n'] / max(tp['perf'], 1):,.1f} events per fsync")
        # A run of its own: each traced fsync stops capture for strace, which slows the whole pipeline
        # (the lane waits for the spool), so the throughput above is measured without it.
        if strace_ok and not perf_ok:
            ts = throughput(broker, ptys, True)
            print(f"fsyncs (a second run under strace -c -f --seccomp-bpf, {ts['n'] / ts['wall']:,.0f} events/s there, "
                  f"complete {ts['complete']}): {ts['fsyncs']:,} fsync+fdatasync = {ts['fsyncs'] / ts['wall']:,.1f}/s, "
                  f"{ts['n'] / max(ts['fsyncs'], 1):,.1f} events per fsync")
        elif not perf_ok:
            print("fsyncs: not measured (neither perf tracepoints nor strace on this machine, or NO_STRACE set)")
        peer = mosquitto_pub_peer(broker)
        print(f"peer mosquitto_pub -q 1 -l: all {total:,} delivered {peer['ok']} in {peer['wall']:.2f} s: "
              f"{total / peer['wall']:,.0f} events/s; CPU {peer['cpu']:.2f} s = {peer['cpu'] / total * 1e6:.1f} µs/event")
        print(f"ratio events/s capture / mosquitto_pub: {(tp['n'] / tp['wall']) / (total / peer['wall']):.2f}")

        lat = latency_capture(broker, ptys)
        lat_pub = latency_mosquitto_pub(broker)
        lat_listen = latency_listen(ptys)
        for name, values in (("capture --mqtt (pty → subscriber)", lat),
                             ("mosquitto_pub -q 1 -l (stdin → subscriber)", lat_pub),
                             ("capture --json listen (pty → stdout)", lat_listen)):
            if values:
                print(f"latency {name}: {len(values):,} of {latency_total:,} at 500/s, p50 {percentile(values, 50):.3f} ms, "
                      f"p99 {percentile(values, 99):.3f} ms, mean {statistics.mean(values):.3f} ms")
            else:
                print(f"latency {name}: nothing arrived")
        if lat and lat_listen:
            print(f"latency ratio --mqtt / listen stdout: p50 {percentile(lat, 50) / percentile(lat_listen, 50):.1f}, "
                  f"p99 {percentile(lat, 99) / percentile(lat_listen, 99):.1f}")

        out = outage(broker, ptys)
        print(f"outage: broker down, {outage_total:,} codes spooled ({out['spool'] / 1e6:.1f} MB on disk); capture VmRSS "
              f"start {out['start'] / 1024:.1f} MB, peak while down {out['down_peak'] / 1024:.1f} MB, "
              f"before the drain {out['before_drain'] / 1024:.1f} MB, peak {out['peak'] / 1024:.1f} MB, end {out['end'] / 1024:.1f} MB")
        print("outage: VmRSS while down at 1/4, 1/2, 3/4 and the end of the outage: "
              + ", ".join(f"{q / 1024:.1f}" for q in out["quartiles"]) + " MB")
        print(f"outage: drained after the broker came back in {out['drain']:.2f} s: {out['n']:,} of {outage_total:,} "
              f"(complete {out['complete']}, in order {out['ordered']}, {out['dups']} duplicates)")
        if not out["complete"]:
            print("capture stderr:\n" + out["err"][-2000:])
    finally:
        broker.close()
        for m, _ in ptys:
            os.close(m)


main()
