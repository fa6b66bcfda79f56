"""Pieces the benchmarks share: a raw pty a line-mode serial scanner is fed through, waiting until
capture has opened it, and one JSON-RPC call to `capture serve` (docs/capturejs.md §2)."""
import base64, http.client, json, os, re, select, socket, sys, time, tty

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "Service"))
from serve_harness import server_frames  # noqa: E402

_DATA = re.compile(rb'"data":\[([0-9,]*)\]')


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


class ServeClient:
    """One client of `capture serve` that opened the first device: openclient, the WebSocket upgrade by
    hand, waitforcaptureevent, opendevice on the arrival; then `read()` collects the "data" array of
    each decodedData frame in `seen` (bytes as the JSON text has them), cheaply enough that the client
    is never what a benchmark measures."""

    def __init__(self, port, app_info):
        self.handle = post(port, "openclient", app_info)["handle"]
        self.sock = socket.create_connection(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /Capture/v1/api HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(4096)
        head, self.rest = head.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 101"):
            sys.exit(f"upgrade refused: {head!r}")
        self.send_text(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "waitforcaptureevent", "params": {"handle": self.handle}}))
        while True:
            got, self.rest = server_frames(self.rest)
            for opcode, payload in got:
                event = json.loads(payload)["result"]["event"]
                if event["id"] == 1:
                    self.device = post(port, "opendevice", {"handle": self.handle, "guid": event["value"]["guid"]})["handle"]
                    self.sock.setblocking(False)
                    self.seen, self.closed = [], None
                    return
            self.rest += self.sock.recv(65536)

    def send_text(self, text):
        data = text.encode()
        mask = os.urandom(4)
        assert len(data) < 126
        self.sock.sendall(bytes([0x81, 0x80 | len(data)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def read(self):
        try:
            chunk = self.sock.recv(1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            self.closed = self.closed or "EOF"
            return
        got, self.rest = server_frames(self.rest + chunk)
        for opcode, payload in got:
            if opcode == 0x8:
                self.closed = f"close frame {int.from_bytes(payload[:2], 'big') if len(payload) >= 2 else ''}"
            elif opcode == 0x1:
                m = _DATA.search(payload)
                if m:
                    self.seen.append(m.group(1))


def read_clients(clients, n, seconds):
    """Reads every ServeClient until each has seen `n` codes or was closed, for at most `seconds`."""
    socks = {c.sock: c for c in clients}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pending = [c for c in clients if len(c.seen) < n and not c.closed]
        if not pending:
            return
        readable, _, _ = select.select([c.sock for c in pending], [], [], 1)
        for s in readable:
            socks[s].read()
