#!/usr/bin/env python3
"""`capture fleet apply` against HOSTS (200) real hosts on one broker (docs/fleet.md §9.4).

Each host is `capture listen socketcam --image - --mqtt mqtt://127.0.0.1:PORT/bench --mqtt-host-id
bench-NNN --mqtt-commands` (stdin held open, so listen keeps SocketCam open and runs), all under one
private mosquitto on a free loopback port (Tests/MQTT/broker.py, the tests' broker). One host is started
and measured first (VmRSS once its device arrived): HOSTS is lowered to what fits in half of
MemAvailable, and the bench says so.

A round applies a 10-property SocketCam profile (friendly-name and nine data sources; the two profiles
alternate, so every round writes all ten on every host) and ends when every host has published its
applied report of that round's version:
- ours: `capture --json fleet apply PROFILE --hosts 'bench-*' --wait 300s`, timed from its start to its
  exit (it exits once every report is in); its CPU is user+sys from wait4(2)'s rusage.
- peer: a bare paho-mqtt client (this script with --peer, its own process, timed and measured the same
  way) doing the same round trips: subscribe to bench/+/applied, publish the same desired payload
  retained with QoS 1 to each host, wait for every report of its version. It is handed the host list;
  ours reads the hosts' retained statuses first (what --hosts needs) and waits for the end of that
  burst (the marker, docs/fleet.md §9.1).
Messages are counted on the broker side by a tap (a paho client subscribed to `#` in this process): each
PUBLISH the broker routed during the round, by topic kind, per host. The hosts' CPU during the round
(user+sys from /proc/PID/stat, summed) is reported as well.

Usage: fleet-apply.py CAPTURE [HOSTS] [ROUNDS]   (default 200 hosts, 3 rounds of each)
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "Tests", "MQTT"))

import paho.mqtt.client as paho  # noqa: E402

PREFIX = "bench"
TICK = os.sysconf("SC_CLK_TCK")
# Nine data sources SocketCam has (docs/capture-sdk.md: Aztec, Codabar, Code 39, Code 93, Data Matrix,
# EAN 8, GS1 DataBar, Interleaved 2 of 5, MaxiCode) and the friendly name: ten properties.
SOURCES = [2, 7, 11, 14, 16, 18, 24, 27, 31]


def profile(n):
    status = n % 2
    return {"properties": [{"name": "friendly-name", "value": f"Bench {'AB'[status]}"}]
            + [{"name": "data-source", "value": {"id": i, "status": status}} for i in SOURCES]}


def cpu(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except OSError:
        return 0.0


def vmrss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def mem_available_mb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    return 0.0


def timed(argv):
    """Runs argv; (exit status, wall seconds, user+sys CPU seconds of the process from wait4, stdout)."""
    out = tempfile.TemporaryFile()
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    out.seek(0)
    text = out.read().decode(errors="replace")
    out.close()
    if proc.returncode not in (0,):
        print(f"  {argv[0]} exited {proc.returncode}: {err.strip()[:500]}", file=sys.stderr)
    return proc.returncode, wall, usage.ru_utime + usage.ru_stime, text


def peer(url_host, port, hosts_file, payload_file, version):
    """The bare client: subscribe to the applied reports, publish each desired state retained (QoS 1),
    wait for every report of `version`."""
    hosts = open(hosts_file).read().split()
    payload = open(payload_file, "rb").read()
    done = threading.Event()
    subscribed = threading.Event()
    seen = set()

    def on_message(client, userdata, msg):
        if not msg.payload:
            return
        if json.loads(msg.payload).get("version") == version:
            seen.add(msg.topic)
            if len(seen) == len(hosts):
                done.set()

    client = paho.Client(client_id=f"bench-peer-{os.getpid()}", protocol=paho.MQTTv311)
    client.on_message = on_message
    client.on_subscribe = lambda *a: subscribed.set()
    client.connect(url_host, int(port))
    client.loop_start()
    client.subscribe(f"{PREFIX}/+/applied", qos=1)
    if not subscribed.wait(60):
        sys.exit("peer: no SUBACK")
    infos = [client.publish(f"{PREFIX}/{h}/desired", payload, qos=1, retain=True) for h in hosts]
    for info in infos:
        info.wait_for_publish(60)
    ok = done.wait(300)
    client.disconnect()
    client.loop_stop()
    sys.exit(0 if ok else 42)


class Tap:
    """Every PUBLISH the broker routes under PREFIX/ (retained replays at subscription time left out),
    with its arrival time."""

    def __init__(self, broker):
        self.lock = threading.Lock()
        self.messages = []
        self.ready = threading.Event()
        self.client = paho.Client(client_id=f"bench-tap-{os.getpid()}", protocol=paho.MQTTv311)
        self.client.on_message = self._on_message
        self.client.on_subscribe = lambda *a: self.ready.set()
        self.client.connect(broker.host, broker.port)
        self.client.loop_start()
        self.client.subscribe(f"{PREFIX}/#", qos=1)
        if not self.ready.wait(30):
            sys.exit("the tap was never subscribed")

    def _on_message(self, client, userdata, msg):
        if msg.retain:
            return
        with self.lock:
            self.messages.append((time.monotonic(), msg.topic, bytes(msg.payload)))

    def since(self, mark):
        with self.lock:
            return self.messages[mark:]

    def mark(self):
        with self.lock:
            return len(self.messages)

    def close(self):
        self.client.loop_stop()
        self.client.disconnect()


def main():
    from broker import Broker  # noqa: E402 (here: the peer process does not need it)

    capture = os.path.abspath(sys.argv[1])
    wanted = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    work = tempfile.mkdtemp(prefix="capture-bench-fleet.")
    broker = Broker()
    url = f"mqtt://{broker.host}:{broker.port}/{PREFIX}"
    tap = Tap(broker)
    env = dict(os.environ, XDG_STATE_HOME=os.path.join(work, "state"), NO_COLOR="1")
    hosts = {}  # name -> Popen

    def start(name):
        err = open(os.path.join(work, f"{name}.err"), "wb")
        hosts[name] = subprocess.Popen(
            [capture, "listen", "socketcam", "--image", "-", "--mqtt", url, "--mqtt-host-id", name, "--mqtt-commands"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err, env=env)
        err.close()

    def wait_arrived(names, seconds):
        deadline = time.monotonic() + seconds
        want = {f"{PREFIX}/{n}/events/socketcam/deviceArrival" for n in names}
        while True:
            got = {t for _, t, _ in tap.since(0)} & want
            if len(got) == len(want):
                return
            dead = [n for n in names if hosts[n].poll() is not None]
            if dead or time.monotonic() > deadline:
                sys.exit(f"hosts not up: {len(want) - len(got)} of {len(want)} (exited: {dead[:5]}); see {work}")
            time.sleep(0.1)

    try:
        print(f"capture {capture}; mosquitto {broker.port}; {os.cpu_count()} cores, load {os.getloadavg()}")
        start("bench-000")
        wait_arrived(["bench-000"], 60)
        one = vmrss_mb(hosts["bench-000"].pid)
        available = mem_available_mb()
        fits = int(available * 0.5 / one)
        n = min(wanted, fits)
        print(f"one host: VmRSS {one:.1f} MB; MemAvailable {available:.0f} MB: {fits} hosts fit in half of it; "
              f"running {n}" + ("" if n == wanted else f" (not the {wanted} asked)"))
        names = [f"bench-{i:03d}" for i in range(n)]
        began = time.monotonic()
        for name in names[1:]:
            start(name)
        wait_arrived(names, 600)
        rss = [vmrss_mb(hosts[name].pid) for name in names]
        print(f"{n} hosts up in {time.monotonic() - began:.1f} s; VmRSS per host median {statistics.median(rss):.1f} MB, "
              f"max {max(rss):.1f} MB, total {sum(rss) / 1024:.2f} GB")
        hosts_file = os.path.join(work, "hosts")
        with open(hosts_file, "w") as f:
            f.write("\n".join(names))

        results = {"ours": [], "peer": []}
        for k in range(2 * rounds):
            who = "ours" if k % 2 == 0 else "peer"
            prof = profile(k)
            path = os.path.join(work, f"profile-{k}.json")
            with open(path, "w") as f:
                json.dump(prof, f)
            mark = tap.mark()
            host_cpu = sum(cpu(hosts[name].pid) for name in names)
            t0 = time.monotonic()
            if who == "ours":
                status, wall, used, out = timed([capture, "--json", "--timeout", "120s", "fleet", "--mqtt", url,
                                                 "apply", path, "--hosts", "bench-*", "--wait", "300s"])
                version = json.loads(out)["version"] if out.strip() else None
                reports = json.loads(out)["hosts"] if out.strip() else []
                changed = sum(len(d["changed"]) for h in reports if h["applied"] for d in h["applied"]["devices"])
            else:
                version = f"v-peer-{k}"
                payload_file = os.path.join(work, f"desired-{k}.json")
                with open(payload_file, "w") as f:
                    # The very bytes capture publishes: sorted keys, no spaces (docs/fleet.md §9.4).
                    f.write(json.dumps({"profile": prof, "version": version}, sort_keys=True, separators=(",", ":")))
                status, wall, used, _ = timed([sys.executable, os.path.abspath(__file__), "--peer", broker.host,
                                               str(broker.port), hosts_file, payload_file, version])
                changed = None
            host_cpu = sum(cpu(hosts[name].pid) for name in names) - host_cpu
            # Every report of this version is in the tap before the controller can have seen it.
            deadline = time.monotonic() + 30
            while True:
                window = tap.since(mark)
                applied = [(t, topic, p) for t, topic, p in window if topic.endswith("/applied")
                           and version and f'"version":"{version}"'.encode() in p]
                if len({topic for _, topic, _ in applied}) >= n or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            last = max((t for t, _, _ in applied), default=float("nan")) - t0
            kinds = {}
            for _, topic, _ in window:
                level = topic.split("/")
                kind = "marker" if level[1] == "@fleet" else (level[2] if len(level) > 2 else "?")
                kinds[kind] = kinds.get(kind, 0) + 1
            per_host = sum(c for kind, c in kinds.items() if kind != "marker") / n
            written = "" if changed is None else f", {changed} properties written"
            print(f"{who} round {k // 2 + 1}: exit {status}; {len({t for _, t, _ in applied})}/{n} applied; "
                  f"wall {wall:.2f} s, last report {last:.2f} s after start; CPU {used * 1000:.0f} ms; "
                  f"hosts' CPU {host_cpu:.2f} s{written}; PUBLISHes {sum(kinds.values())} "
                  f"({', '.join(f'{k2} {v}' for k2, v in sorted(kinds.items()))}), {per_host:.2f} per host")
            results[who].append((wall, used, per_host, host_cpu))

        print()
        for who in ("ours", "peer"):
            walls = [r[0] for r in results[who]]
            cpus = [r[1] for r in results[who]]
            print(f"{who}: wall median {statistics.median(walls):.2f} s (min {min(walls):.2f}, max {max(walls):.2f}); "
                  f"CPU median {statistics.median(cpus) * 1000:.0f} ms; PUBLISHes per host "
                  f"{statistics.median(r[2] for r in results[who]):.2f}; hosts' CPU median "
                  f"{statistics.median(r[3] for r in results[who]):.2f} s")
        ow = statistics.median(r[0] for r in results["ours"])
        pw = statistics.median(r[0] for r in results["peer"])
        oc = statistics.median(r[1] for r in results["ours"])
        pc = statistics.median(r[1] for r in results["peer"])
        print(f"ratio ours/peer: wall {ow / pw:.2f}, controller CPU {oc / pc:.2f}")
    finally:
        for proc in hosts.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in hosts.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdin.close()
        tap.close()
        broker.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--peer":
        peer(*sys.argv[2:7])
    else:
        main()
