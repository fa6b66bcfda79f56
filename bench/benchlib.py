"""Pieces the benchmarks share: a raw pty a line-mode serial scanner is fed through, waiting until
capture has opened it, and one JSON-RPC call to `capture serve` (docs/capturejs.md §2)."""
import http.client, json, os, sys, time, tty


def pty():
    """A raw pseudo-terminal: (master fd to write codes into, the slave's path for serial:PATH)."""
    master, slave = os.openpty()
    path = os.ttyname(slave)
    tty.setraw(slave)
    os.close(slave)
    return master, path


def holders(path):
    """The pids (other than ours) that have `path` open."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        try:
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") == path for fd in os.listdir(f"/proc/{pid}/fd")):
                found.append(int(pid))
        except OSError:
            pass
    return found


def wait_opened(path, seconds=30):
    """Returns once another process has `path` open (and a moment to finish setting it up)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if holders(path):
            time.sleep(0.3)
            return
        time.sleep(0.05)
    sys.exit(f"nobody opened {path}")


def post(port, method, params):
    """One JSON-RPC request over HTTP POST; its `result`, or the benchmark ends with the reply."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/Capture/v1/api",
                 json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
                 {"Content-Type": "application/json"})
    reply = json.loads(conn.getresponse().read())
    conn.close()
    if "result" not in reply:
        sys.exit(f"{method} failed: {reply}")
    return reply["result"]
