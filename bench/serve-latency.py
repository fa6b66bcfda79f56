#!/usr/bin/env python3
"""Latency of `capture serve`: a code written by a pty scanner, timed to a WebSocket client of the service
(openclient, WebSocket, waitforcaptureevent, opendevice on the arrival: docs/capturejs.md §7), and the
peer, the same code timed to `capture --json listen` stdout. One code at a time (the next is written
once the previous one arrived), COUNT (1,000) codes each, after 20 codes of warm-up; p50, p99 and their
ratio. Goal: serve adds under 1 ms at p50. Usage: serve-latency.py CAPTURE [COUNT]
"""
import asyncio, json, os, shutil, socket, statistics, subprocess, sys, tempfile, time, tty
import http.client

import websockets

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import post, pty, wait_opened  # noqa: E402

capture = os.path.abspath(sys.argv[1])
count = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
WARM = 20
APP_INFO = {"appId": "web:com.example.bench", "developerId": "bb57d8e1-f911-47ba-b510-693be162686a",
            "appKey": "MC4CFQDNCtjazxILEh8oyT6w/wlaVKqS1gIVAK7TkfS2mMCBkBP9hpfMd5flBlUj"}


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def codes(tag):
    return [f"{tag}{i:06d}" for i in range(WARM + count)]


def run_listen(state):
    master, path = pty()
    proc = subprocess.Popen([capture, "--json", "listen", f"serial:{path}?framing=line"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=dict(os.environ, XDG_STATE_HOME=state))
    wait_opened(path)
    times = []
    for code in codes("L"):
        data = code.encode() + b"\r\n"
        t0 = time.perf_counter()
        os.write(master, data)
        while True:
            line = proc.stdout.readline()
            if not line:
                sys.exit("listen ended early")
            if b'"decodedData"' in line and json.loads(line)["text"] == code:
                break
        times.append(time.perf_counter() - t0)
    proc.terminate()
    proc.wait()
    os.close(master)
    return times[WARM:]


async def run_serve(state):
    master, path = pty()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([capture, "serve", f"serial:{path}?framing=line", "--listen", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, XDG_STATE_HOME=state))
    wait_opened(path)
    handle = post(port, "openclient", APP_INFO)["handle"]
    times = []
    async with websockets.connect(f"ws://127.0.0.1:{port}/Capture/v1/api", ping_interval=None) as ws:
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "waitforcaptureevent", "params": {"handle": handle}}))
        while True:
            event = json.loads(await asyncio.wait_for(ws.recv(), 20))["result"]["event"]
            if event["id"] == 1:
                device = post(port, "opendevice", {"handle": handle, "guid": event["value"]["guid"]})["handle"]
                break
        for code in codes("S"):
            want = list(code.encode())
            data = code.encode() + b"\r\n"
            t0 = time.perf_counter()
            os.write(master, data)
            while True:
                result = json.loads(await asyncio.wait_for(ws.recv(), 20))["result"]
                if result["handle"] == device and result["event"]["id"] == 5 and result["event"]["value"]["data"] == want:
                    break
            times.append(time.perf_counter() - t0)
    proc.terminate()
    proc.wait()
    os.close(master)
    return times[WARM:]


work = tempfile.mkdtemp(prefix="capture-serve-latency.")
try:
    listen_times = run_listen(os.path.join(work, "listen"))
    serve_times = asyncio.run(run_serve(os.path.join(work, "serve")))
finally:
    shutil.rmtree(work, ignore_errors=True)

ms = lambda s: s * 1000
sp50, sp99 = pct(serve_times, 50), pct(serve_times, 99)
lp50, lp99 = pct(listen_times, 50), pct(listen_times, 99)
print(f"capture {capture}: {count} codes each from a line-mode pty, one at a time")
print(f"serve, to a WebSocket client:      p50 {ms(sp50):.3f} ms  p99 {ms(sp99):.3f} ms  mean {ms(statistics.mean(serve_times)):.3f} ms")
print(f"peer listen --json, to its stdout: p50 {ms(lp50):.3f} ms  p99 {ms(lp99):.3f} ms  mean {ms(statistics.mean(listen_times)):.3f} ms")
print(f"ratio serve / listen: p50 {sp50 / lp50:.2f}  p99 {sp99 / lp99:.2f}; serve adds {ms(sp50 - lp50):+.3f} ms at p50 "
      f"(goal < 1 ms: {'met' if sp50 - lp50 < 0.001 else 'NOT met'})")
