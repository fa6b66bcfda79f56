#!/usr/bin/env python3
"""Throughput of `capture serve`: TOTAL (100,000) codes from one line-mode pty scanner to CLIENTS (10)
WebSocket clients at once, each of which opened the device (docs/capturejs.md §7). Checked: every code
reaches every client exactly once and in order, and no client is dropped. Reported: events/s (events
delivered to all clients / wall time from the first code written to the last one received by the slowest
client), the service's CPU per delivered event (user+sys from /proc, before and after the feed) and its
resident memory sampled every 0.2 s (start, peak, end: flat is the goal).

The clients must not be the bottleneck (a client that falls behind is dropped by design), so they are
cheap: each is a plain socket after the handshake, read in 1 MiB chunks by one select loop; each text
frame's "data" array is found with one regular expression, and the list of arrays is then compared
with the expected one.
Peer: `capture --json listen` on the same feed (one consumer, stdout to a file): events/s and CPU per event.
PACE (codes/s, default 0) paces the feed; 0 writes as fast as the pty takes it. Under a flood the device
can outrun what the service sends, and a client more than the service's event limit behind is dropped
whether or not it reads (the engine's policy for a client that falls behind); the bench then says so.
Usage: serve-throughput.py CAPTURE [TOTAL] [CLIENTS] [PACE]
"""
import json, os, shutil, socket, subprocess, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "Tests", "Service"))
from benchlib import ServeClient, pty, read_clients, wait_opened  # noqa: E402

capture = os.path.abspath(sys.argv[1])
total = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
nclients = int(sys.argv[3]) if len(sys.argv) > 3 else 10
pace = int(sys.argv[4]) if len(sys.argv) > 4 else 0
APP_INFO = {"appId": "web:com.example.bench", "developerId": "bb57d8e1-f911-47ba-b510-693be162686a",
            "appKey": "MC4CFQDNCtjazxILEh8oyT6w/wlaVKqS1gIVAK7TkfS2mMCBkBP9hpfMd5flBlUj"}
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
TICK = os.sysconf("SC_CLK_TCK")
CODES = [b"T%07d" % i for i in range(total)]
EXPECTED = [b",".join(b"%d" % c for c in code) for code in CODES]


def proc_sample(pid):
    with open(f"/proc/{pid}/statm") as f:
        rss = int(f.read().split()[1]) * PAGE_KB
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return rss, (int(fields[11]) + int(fields[12])) / TICK


def run_serve(state):
    master, path = pty()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([capture, "serve", f"serial:{path}?framing=line", "--listen", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ, XDG_STATE_HOME=state))
    wait_opened(path)
    clients = [ServeClient(port, APP_INFO) for _ in range(nclients)]
    samples = [proc_sample(proc.pid)]
    stop = threading.Event()

    def sampler():
        while not stop.wait(0.2):
            samples.append(proc_sample(proc.pid))

    threading.Thread(target=sampler, daemon=True).start()
    feed = b"".join(c + b"\r\n" for c in CODES)
    t0 = time.perf_counter()
    writer = threading.Thread(target=write_all, args=(master, feed, pace), daemon=True)
    writer.start()
    read_clients(clients, total, 600)
    wall = time.perf_counter() - t0
    stop.set()
    end = proc_sample(proc.pid)
    proc.terminate()
    proc.wait()
    err = proc.stderr.read().decode(errors="replace")
    os.close(master)
    ok = [c.seen == EXPECTED for c in clients]
    return dict(wall=wall, cpu=end[1] - samples[0][1], rss_start=samples[0][0], rss_peak=max(s[0] for s in samples + [end]),
                rss_end=end[0], ok=ok, counts=[len(c.seen) for c in clients], closed=[c.closed for c in clients], stderr=err)


def write_all(fd, data, rate=0):
    """Everything into the pty master; at `rate` codes/s in slices of 100 codes (0: as fast as it goes)."""
    view = memoryview(data)
    line = len(CODES[0]) + 2
    step = 100 * line if rate else 65536
    t0 = time.perf_counter()
    done = 0
    while view:
        if rate:
            pause = t0 + (done // line) / rate - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
        n = os.write(fd, view[:step])
        view = view[n:]
        done += n


def run_listen(state, out_path):
    master, path = pty()
    with open(out_path, "wb") as out:
        proc = subprocess.Popen([capture, "--json", "listen", f"serial:{path}?framing=line", "--count", str(total)],
                                stdout=out, stderr=subprocess.DEVNULL, env=dict(os.environ, XDG_STATE_HOME=state))
    wait_opened(path)
    feed = b"".join(c + b"\r\n" for c in CODES)
    t0 = time.perf_counter()
    threading.Thread(target=write_all, args=(master, feed, pace), daemon=True).start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    os.close(master)
    texts = [json.loads(line)["text"].encode() for line in open(out_path, "rb") if b'"decodedData"' in line]
    return dict(wall=wall, cpu=usage.ru_utime + usage.ru_stime, ok=texts == CODES)


work = tempfile.mkdtemp(prefix="capture-serve-throughput.")
try:
    serve = run_serve(os.path.join(work, "serve"))
    listen = run_listen(os.path.join(work, "listen"), os.path.join(work, "listen.jsonl"))
finally:
    shutil.rmtree(work, ignore_errors=True)

events = total * nclients
delivered = sum(serve["counts"])
how = f"paced at {pace:,} codes/s" if pace else "a flood (as fast as the pty takes them)"
print(f"capture {capture}: {total:,} codes from one line-mode pty, {how}, to {nclients} WebSocket clients ({events:,} events)")
print(f"serve: every code to every client exactly once and in order: {all(serve['ok'])} "
      f"(received per client {serve['counts']}; closed early {[c for c in serve['closed'] if c]})")
print(f"serve: {delivered:,} events delivered in {serve['wall']:.2f} s, {delivered / serve['wall']:,.0f} events/s; CPU {serve['cpu']:.2f} s = "
      f"{serve['cpu'] / max(delivered, 1) * 1e6:.2f} us per delivered event; "
      f"RSS start {serve['rss_start'] / 1024:.1f} MB, peak {serve['rss_peak'] / 1024:.1f} MB, end {serve['rss_end'] / 1024:.1f} MB")
print(f"peer listen --json (1 consumer): in order {listen['ok']}; wall {listen['wall']:.2f} s, {total / listen['wall']:,.0f} events/s; "
      f"CPU {listen['cpu']:.2f} s = {listen['cpu'] / total * 1e6:.2f} us per event")
print(f"ratio CPU per delivered event serve / listen: {serve['cpu'] / max(delivered, 1) / (listen['cpu'] / total):.2f}; "
      f"events/s serve (all clients) / listen: {delivered / serve['wall'] / (total / listen['wall']):.2f}")
if not all(serve["ok"]) or not listen["ok"]:
    if serve["stderr"]:
        print("serve stderr:\n" + serve["stderr"][-2000:])
    sys.exit("FAIL: not every code reached every client exactly once and in order")
