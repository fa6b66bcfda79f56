#!/usr/bin/env python3
"""Many clients at once on `capture serve`: ROUNDS (5) rounds of CLIENTS (200) clients each opening
concurrently (openclient over HTTP, the WebSocket, waitforcaptureevent, until the replayed DeviceArrival
of the one pty scanner arrives: docs/capturejs.md §1.4, §4), all held open together, then all closing
(close over HTTP, then the socket). Checked: every client served (a non-zero handle and its arrival), no
handle given to two clients open at the same time. Reported: time for a round to open, the service's
resident memory before the first round, after each round once the clients are gone, and its peak.
Peer, a floor: a minimal aiohttp server answering the same calls (a fixed arrival, no devices), the same
client load and figures. Usage: serve-clients.py CAPTURE [CLIENTS] [ROUNDS]
"""
import asyncio, os, shutil, socket, subprocess, sys, tempfile, threading, time, tty

import aiohttp
from aiohttp import web

capture = os.path.abspath(sys.argv[1])
nclients = int(sys.argv[2]) if len(sys.argv) > 2 else 200
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
APP_INFO = {"appId": "web:com.example.bench", "developerId": "bb57d8e1-f911-47ba-b510-693be162686a",
            "appKey": "MC4CFQDNCtjazxILEh8oyT6w/wlaVKqS1gIVAK7TkfS2mMCBkBP9hpfMd5flBlUj"}
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def rss(pid):
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * PAGE_KB


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"nothing listens on {port}")


async def one_client(session, url, ws_url, opened, release):
    async with session.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "openclient", "params": APP_INFO}) as r:
        reply = await r.json(content_type=None)
    handle = reply["result"]["handle"]
    assert handle, reply
    ws = await session.ws_connect(ws_url, autoping=False)
    await ws.send_json({"jsonrpc": "2.0", "id": 1, "method": "waitforcaptureevent", "params": {"handle": handle}})
    while True:
        message = await asyncio.wait_for(ws.receive_json(), 30)
        if message["result"]["event"]["id"] == 1 and message["result"]["handle"] == handle:
            break
    opened.append(handle)
    await release.wait()
    async with session.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "close", "params": {"handle": handle}}) as r:
        await r.read()
    await ws.close()
    return handle


async def load(port, pid):
    url = f"http://127.0.0.1:{port}/Capture/v1/api"
    ws_url = f"ws://127.0.0.1:{port}/Capture/v1/api"
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    figures = dict(before=rss(pid), after=[], open_s=[], peak=rss(pid), reused=0, served=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        for _ in range(rounds):
            opened, release = [], asyncio.Event()
            t0 = time.perf_counter()
            tasks = [asyncio.create_task(one_client(session, url, ws_url, opened, release)) for _ in range(nclients)]
            while len(opened) < nclients:
                if any(t.done() for t in tasks):
                    for t in tasks:
                        if t.done() and t.exception():
                            raise t.exception()
                await asyncio.sleep(0.01)
                if time.perf_counter() - t0 > 120:
                    sys.exit(f"only {len(opened)} of {nclients} clients served in 120 s")
            figures["open_s"].append(time.perf_counter() - t0)
            figures["peak"] = max(figures["peak"], rss(pid))
            figures["reused"] += len(opened) - len(set(opened))
            figures["served"] += len(opened)
            release.set()
            await asyncio.gather(*tasks)
            await asyncio.sleep(1.0)  # the service notices the closed sockets
            figures["after"].append(rss(pid))
    return figures


def peer_server(port, ready):
    """The floor: the same calls, answered by a few lines of aiohttp."""
    async def api(request):
        body = await request.json()
        if body["method"] == "openclient":
            api.handle += 1
            return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": {"handle": api.handle}})
        return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": {"handle": body["params"]["handle"]}})
    api.handle = 0

    async def events(request):
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        async for message in ws:
            handle = message.json()["params"]["handle"]
            await ws.send_json({"jsonrpc": "2.0", "result": {"handle": handle, "event": {
                "id": 1, "type": 6, "value": {"guid": "{2EAA0000-0000-4000-8000-000000000000}", "name": "peer", "type": 0}}}})
        return ws

    async def main():
        app = web.Application()
        app.router.add_post("/Capture/v1/api", api)
        app.router.add_get("/Capture/v1/api", events)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port, backlog=1024).start()
        ready.set()
        await asyncio.Event().wait()
    asyncio.run(main())


work = tempfile.mkdtemp(prefix="capture-serve-clients.")
try:
    master, slave = os.openpty()
    path = os.ttyname(slave)
    tty.setraw(slave)
    os.close(slave)
    port = free_port()
    proc = subprocess.Popen([capture, "serve", f"serial:{path}?framing=line", "--listen", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, XDG_STATE_HOME=work))
    wait_port(port)
    time.sleep(1)
    ours = asyncio.run(load(port, proc.pid))
    alive = proc.poll() is None
    proc.terminate()
    proc.wait()
    os.close(master)

    # The peer runs in a child process so its memory is its own.
    peer_port = free_port()
    child = os.fork()
    if child == 0:
        try:
            peer_server(peer_port, threading.Event())
        finally:
            os._exit(0)
    wait_port(peer_port)
    peer = asyncio.run(load(peer_port, child))
    os.kill(child, 15)
    os.waitpid(child, 0)
finally:
    shutil.rmtree(work, ignore_errors=True)

mb = lambda kb: f"{kb / 1024:.1f} MB"
print(f"capture {capture}: {rounds} rounds of {nclients} clients opening and closing concurrently")
for name, f in (("serve", ours), ("peer aiohttp floor", peer)):
    print(f"{name}: served {f['served']} of {rounds * nclients}, handles reused while open {f['reused']}; "
          f"open a round {min(f['open_s']):.2f}-{max(f['open_s']):.2f} s; RSS before {mb(f['before'])}, after each round "
          f"{', '.join(mb(a) for a in f['after'])}, peak {mb(f['peak'])}")
print(f"serve still running after the load: {alive}")
print(f"ratio serve / peer: open time {sum(ours['open_s']) / sum(peer['open_s']):.2f}; RSS growth "
      f"{mb(ours['after'][-1] - ours['before'])} vs {mb(peer['after'][-1] - peer['before'])}")
if ours["served"] != rounds * nclients or ours["reused"] or not alive:
    sys.exit("FAIL: not every client served, a handle reused while open, or the service died")
