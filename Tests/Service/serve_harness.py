"""The rig for the end-to-end tests of `capture serve`: the real binary, real devices from the project's
rigs (a pty serial scanner, the DataMan simulator, SocketCam over a watched directory) and a JSON-RPC
client speaking the protocol of docs/capturejs.md (HTTP POST for the calls, one WebSocket for the
events). Nothing here models capture itself.

The binary: $CAPTURE_BIN, else .build/debug/capture of this repository.
"""
import asyncio
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import termios
import threading
import time
import tty
import unittest

import websockets

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
API = "/Capture/v1/api"
APP_INFO = {"appId": "web:com.example.servetests", "developerId": "bb57d8e1-f911-47ba-b510-693be162686a",
            "appKey": "MC4CFQDNCtjazxILEh8oyT6w/wlaVKqS1gIVAK7TkfS2mMCBkBP9hpfMd5flBlUj"}

# SKT result codes (docs/capture-sdk.md §1) and the JSON-RPC codes of docs/capturejs.md §2.
ESKT_INVALIDHANDLE = -11
ESKT_NOTSUPPORTED = -15
ESKT_INVALIDPARAMETER = -18
ESKT_UNABLEREADFILE = -34
ESKT_SERVICENOTCOMMUNICATING = -87
ESKT_INVALIDAPPINFO = -93
JSONRPC_PARSE_ERROR = -32700
JSONRPC_INVALID_REQUEST = -32600
JSONRPC_METHOD_NOT_FOUND = -32601

# Event ids and event types (docs/capture-sdk.md §4; docs/capturejs.md §4: event types are not
# property types).
EV_DEVICE_ARRIVAL, EV_DEVICE_REMOVAL, EV_ERROR, EV_DECODED_DATA = 1, 2, 4, 5
EVT_ULONG, EVT_DECODED_DATA, EVT_DEVICE_INFO = 2, 5, 6

# Property ids (docs/capture-sdk.md §2.2) and property types (§3).
PROP_VERSION = -2147418111  # 0x80010001, capture level
PROP_SOCKETCAM_STATUS = -2147352569  # 0x80020007, capture level, byte
PROP_VERSION_DEVICE = 0x00010000
PROP_DEVICE_TYPE = 0x00010002
PROP_DATA_SOURCE = 0x00770004
PROP_TRIGGER = 0x00120005
PROP_FRIENDLY_NAME = 0x00050100
PROP_BATTERY_LEVEL = 0x0001010B
PROP_DEVICE_SPECIFIC = 0x00440003
T_NONE, T_BYTE, T_ULONG, T_ARRAY, T_STRING, T_VERSION, T_DATASOURCE = 0, 2, 3, 4, 5, 6, 7

# A GUID per connection of a device: UUID v4, upper case, in braces (docs/capturejs.md §4).
GUID = re.compile(r"^\{[0-9A-F]{8}-[0-9A-F]{4}-4[0-9A-F]{3}-[89AB][0-9A-F]{3}-[0-9A-F]{12}\}$")


def capture_bin():
    path = os.environ.get("CAPTURE_BIN") or os.path.join(ROOT, ".build", "debug", "capture")
    return os.path.abspath(path)


def free_port():
    """A TCP port nobody listens on right now (bound and released; the service binds it next)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fds_of_others(path):
    """Pids (not ours) holding `path` open."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == path:
                    found.append(int(pid))
                    break
        except OSError:
            continue
    return found


def named_by_others(path):
    """Pids (not ours) whose command line names `path` (/dev/pts/1, not /dev/pts/12): a capture left
    over from another run, waiting for that device to come back, would open a new pty that gets the
    number and read the codes written to it."""
    pattern = re.compile(re.escape(path.encode()) + rb"(?![0-9])")
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if pattern.search(f.read()):
                    found.append(int(pid))
        except OSError:
            continue
    return found


class PtyScanner:
    """A line-mode serial scanner on a pseudo-terminal: capture opens the slave
    (`serial:/dev/pts/N?framing=line`), each code written to the master is one line."""

    def __init__(self):
        self.master = None
        self._open()

    def _open(self, tries=64):
        # A pty number no other process names or holds: the kernel hands out the lowest free one, and
        # other test runs on this machine may still have a capture waiting for theirs to come back.
        taken = []
        try:
            for _ in range(tries):
                master, slave = os.openpty()
                path = os.ttyname(slave)
                if not named_by_others(path) and not fds_of_others(path):
                    break
                taken.append((master, slave))
            else:
                raise RuntimeError(f"no pseudo-terminal free of other processes in {tries} tries")
        finally:
            for fds in taken:
                for fd in fds:
                    os.close(fd)
        self.path = path
        # Raw before anyone reads: cooked mode would turn CR into LF and eat 0x03 (VINTR).
        tty.setraw(slave)
        os.close(slave)
        self.master = master

    @property
    def selector(self):
        return f"serial:{self.path}?framing=line"

    def configured(self):
        """True once someone set the line up as capture's SerialPort does: CLOCAL, which our raw mode
        leaves off, is on. tcgetattr on a pty master reads the slave's termios (Linux tty_mode_ioctl)."""
        return self.master is not None and bool(termios.tcgetattr(self.master)[2] & termios.CLOCAL)

    def wait_opened(self, seconds=30):
        """Until another process holds the slave open and has configured it (open(), then tcsetattr()
        in capture's SerialPort); False after `seconds`."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.configured() and fds_of_others(self.path):
                return True
            time.sleep(0.05)
        return False

    def write(self, code):
        data = (code if isinstance(code, bytes) else code.encode()) + b"\r\n"
        view = memoryview(data)
        while view:
            view = view[os.write(self.master, view):]

    def unplug(self):
        """The scanner goes away: the master closes, the slave reads EIO / hang-up."""
        os.close(self.master)
        self.master = None

    def replug(self, tries=50):
        """The same scanner comes back on the same path (the kernel hands out the lowest free pty
        number; ptys other processes take meanwhile are skipped)."""
        wanted = self.path
        spare = []
        try:
            for _ in range(tries):
                master, slave = os.openpty()
                path = os.ttyname(slave)
                if path == wanted:
                    tty.setraw(slave)
                    os.close(slave)
                    self.master = master
                    return True
                os.close(slave)
                spare.append(master)
            return False
        finally:
            for fd in spare:
                os.close(fd)

    def close(self):
        if self.master is not None:
            os.close(self.master)
            self.master = None


class DataManSimulator:
    """The project's DataMan simulator (Tests/Simulators/DMCCSimulator.swift) as a process: TRIGGER ON
    reads HELLO-123. Built with swiftc once into .build/service-tests/."""

    READ_TEXT = "HELLO-123"

    @staticmethod
    def build():
        swiftc = shutil.which("swiftc") or "/opt/swift/usr/bin/swiftc"
        sources = [os.path.join(ROOT, "Tests", "Simulators", "DMCCSimulator.swift"),
                   os.path.join(ROOT, "bench", "dmcc-sim-main.swift")]
        out_dir = os.path.join(ROOT, ".build", "service-tests")
        binary = os.path.join(out_dir, "dmcc-simulator")
        if os.path.exists(binary) and all(os.path.getmtime(s) < os.path.getmtime(binary) for s in sources):
            return binary
        if not os.path.exists(swiftc):
            return None
        os.makedirs(out_dir, exist_ok=True)
        r = subprocess.run([swiftc, "-parse-as-library", "-swift-version", "6", *sources, "-o", binary],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError(f"building the DataMan simulator failed: {r.stderr}")
        return binary

    def __init__(self):
        binary = self.build()
        if binary is None:
            raise RuntimeError("no swiftc to build the DataMan simulator")
        self.proc = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("PORT="), line
        self.port = int(line.strip()[5:])
        self.selector = f"tcp://127.0.0.1:{self.port}"

    def commands(self):
        self.proc.stdin.write("commands\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class BlueZRig:
    """The project's BlueZ model (Tests/Rigs): a private system bus with a bluetoothd 5.66 model and
    simulated Socket Mobile readers; stopped with this process at the latest."""

    RIG = os.path.join(ROOT, "Tests", "Rigs", "rig.py")

    def __init__(self, params=None):
        """`params`: more template parameters (Tests/Rigs/bluez566.py), e.g. {"BatteryPlugin": "false"}."""
        extra = [arg for key, value in (params or {}).items() for arg in ("--param", f"{key}={value}")]
        out = subprocess.run(["/usr/bin/python3", self.RIG, "start", "--stop-with", str(os.getpid()),
                              "--param", "TemporaryTimeout=1", *extra], capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(f"rig.py start failed: {out.stderr}")
        values = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
        self.bus = values["DBUS_SYSTEM_BUS_ADDRESS"]
        self.dir = values["RIG_DIR"]
        self.env = {"DBUS_SYSTEM_BUS_ADDRESS": self.bus}

    def ctl(self, method, *args):
        out = subprocess.run(["/usr/bin/python3", self.RIG, "ctl", "--dir", self.dir, method, "--", *map(str, args)],
                             capture_output=True, text=True, timeout=30)
        if out.returncode != 0:
            raise RuntimeError(f"rig ctl {method} failed: {out.stderr}")
        return json.loads(out.stdout) if out.stdout.strip() else None

    def stop(self):
        subprocess.run(["/usr/bin/python3", self.RIG, "stop", "--dir", self.dir], capture_output=True, timeout=30)


class Service:
    """One `capture serve` process on a free loopback port with a private state directory."""

    def __init__(self, devices=(), extra=(), port=None, state=None, wait=True, env=None, host="127.0.0.1"):
        self.host = host
        self.port = port or free_port()
        self.state = state or tempfile.mkdtemp(prefix="capture-serve-test.")
        self.listen = f"{host}:{self.port}"
        self.argv = [capture_bin(), "serve", *devices, "--listen", self.listen, *extra]
        self.env = dict(os.environ, XDG_STATE_HOME=self.state, NO_COLOR="1", **(env or {}))
        self.stderr_lines = []
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(self.argv, env=self.env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        if wait:
            self.wait_listening()

    def _read_stderr(self):
        for raw in self.proc.stderr:
            with self._lock:
                self.stderr_lines.append(raw.decode(errors="replace").rstrip("\n"))

    def stderr(self):
        with self._lock:
            return list(self.stderr_lines)

    def wait_stderr(self, predicate, seconds=15):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            found = [line for line in self.stderr() if predicate(line)]
            if found:
                return found
            time.sleep(0.05)
        return []

    def wait_listening(self, seconds=20):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._reader.join(2)
                raise RuntimeError(f"capture serve exited {self.proc.returncode} before accepting "
                                   f"connections: {self.argv}\n" + "\n".join(self.stderr()))
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"capture serve not accepting on {self.listen}: " + "\n".join(self.stderr()))

    def signal(self, sig):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(2)
        self.proc.stderr.close()
        shutil.rmtree(self.state, ignore_errors=True)

    # --- HTTP -----------------------------------------------------------------------------------

    def http(self, method, body=b"", headers=None, path=API, host=None, timeout=10):
        """One raw HTTP request; (status, headers lower-cased → value, body bytes)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            conn.putheader("Host", host if host is not None else self.listen)
            for name, value in (headers or {}).items():
                conn.putheader(name, value)
            if method != "OPTIONS" or body:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body if body else None)
            try:
                reply = conn.getresponse()
                data = reply.read()
            except (http.client.RemoteDisconnected, ConnectionResetError):
                return None, {}, b""  # no answer at all: the status None shows in the failure
            return reply.status, {k.lower(): v for k, v in reply.getheaders()}, data
        finally:
            conn.close()

    def post(self, document, headers=None, host=None):
        """POST one JSON-RPC request (a dict, or bytes sent as they are): (status, headers, reply)."""
        body = document if isinstance(document, bytes) else json.dumps(document).encode()
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        status, hdrs, data = self.http("POST", body, h, host=host)
        try:
            reply = json.loads(data) if data else None
        except ValueError:
            reply = data
        return status, hdrs, reply

    def call(self, method, params, id=1):
        """A JSON-RPC call that must be answered with HTTP 200; the reply object."""
        status, _, reply = self.post({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        assert status == 200, (status, reply)
        assert isinstance(reply, dict) and reply.get("jsonrpc") == "2.0", reply
        return reply

    def result(self, method, params, id=1):
        reply = self.call(method, params, id)
        assert "error" not in reply and isinstance(reply.get("result"), dict), (method, params, reply)
        return reply["result"]

    def openclient(self):
        handle = self.result("openclient", APP_INFO, id=0)["handle"]
        assert isinstance(handle, int) and not isinstance(handle, bool) and handle != 0, handle
        return handle

    def get(self, handle, prop, type=T_NONE, value=None):
        return self.call("getproperty", {"handle": handle, "property": {
            "id": prop, "type": type, "value": {} if value is None else value}})

    def set(self, handle, prop, type, value):
        return self.call("setproperty", {"handle": handle, "property": {"id": prop, "type": type, "value": value}})


def error_code(reply):
    assert isinstance(reply, dict) and "result" not in reply, reply
    error = reply.get("error")
    assert isinstance(error, dict) and isinstance(error.get("message"), str), reply
    return error["code"]


class EventClient:
    """One CaptureJS-style client: openclient over HTTP, then a WebSocket with one
    waitforcaptureevent; every message kept in order (docs/capturejs.md §1.4)."""

    def __init__(self, service, path=API):
        self.service = service
        self.path = path
        self.handle = None
        self.messages = []
        self.ws = None
        self._changed = asyncio.Event()
        self._task = None
        self.closed_code = None

    async def open(self, handle=None, wait_id=1):
        self.handle = handle or self.service.openclient()
        self.ws = await websockets.connect(f"ws://127.0.0.1:{self.service.port}{self.path}",
                                           ping_interval=None, max_size=1 << 22, open_timeout=10,
                                           close_timeout=2)
        await self.ws.send(json.dumps({"jsonrpc": "2.0", "id": wait_id, "method": "waitforcaptureevent",
                                       "params": {"handle": self.handle}}))
        self._task = asyncio.get_running_loop().create_task(self._pump())
        return self

    async def _pump(self):
        try:
            async for message in self.ws:
                assert isinstance(message, str), f"a binary frame: {message!r}"
                self.messages.append(json.loads(message))
                self._changed.set()
        except websockets.ConnectionClosed:
            pass
        finally:
            self.closed_code = self.ws.close_code
            self._changed.set()

    def events(self):
        return [m["result"] for m in self.messages if isinstance(m.get("result"), dict) and "event" in m["result"]]

    async def wait(self, predicate, timeout=10, start=0, what="an event"):
        """The first event (result object: handle, event) at index >= start matching predicate."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            for result in self.events()[start:]:
                if predicate(result):
                    return result
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0 or (self._task.done() and not any(predicate(r) for r in self.events()[start:])):
                raise AssertionError(f"no {what} within {timeout} s; got {json.dumps(self.messages)[-2000:]}"
                                     f" (socket close code {self.closed_code})")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), min(left, 0.5))
            except asyncio.TimeoutError:
                pass

    async def arrival(self, name_contains=None, timeout=10, start=0):
        def match(r):
            e = r["event"]
            return (e.get("id") == EV_DEVICE_ARRIVAL and r.get("handle") == self.handle
                    and (name_contains is None or name_contains in json.dumps(e.get("value"))))
        return await self.wait(match, timeout, start, f"DeviceArrival ({name_contains})")

    async def decoded(self, device_handle, text=None, timeout=10, start=0):
        def match(r):
            e = r["event"]
            return (e.get("id") == EV_DECODED_DATA and r.get("handle") == device_handle
                    and (text is None or bytes(e["value"]["data"]) == (text.encode() if isinstance(text, str) else text)))
        return await self.wait(match, timeout, start, f"DecodedData {text!r} on handle {device_handle}")

    def decoded_texts(self, device_handle):
        return [bytes(r["event"]["value"]["data"]) for r in self.events()
                if r["event"].get("id") == EV_DECODED_DATA and r.get("handle") == device_handle]

    async def opendevice(self, guid):
        handle = self.service.result("opendevice", {"handle": self.handle, "guid": guid}, id=2)["handle"]
        assert isinstance(handle, int) and not isinstance(handle, bool) and handle != 0, handle
        return handle

    async def wait_closed(self, timeout=10):
        await asyncio.wait_for(asyncio.shield(self._task), timeout)
        return self.closed_code

    async def close(self):
        if self.ws is not None:
            await self.ws.close()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, 5)
            except asyncio.TimeoutError:
                self._task.cancel()


def read_head(s, end=b"\r\n\r\n"):
    """What `s` receives up to and including `end` (the end of an HTTP head, or of its status line),
    or until the peer closes, resets or the socket's timeout passes."""
    head = b""
    try:
        while end not in head:
            chunk = s.recv(4096)
            if not chunk:
                break
            head += chunk
    except OSError:
        pass
    return head


class SharedService(unittest.TestCase):
    """Tests that share one `capture serve` for the class."""

    @classmethod
    def setUpClass(cls):
        cls.service = Service()

    @classmethod
    def tearDownClass(cls):
        cls.service.stop()


def raw_upgrade(port, path=API, host=None, origin=None, timeout=5):
    """A WebSocket upgrade request by hand (so Host and Origin are exactly what the test says): the
    status code of the answer and its head."""
    lines = [f"GET {path} HTTP/1.1", f"Host: {host or f'127.0.0.1:{port}'}", "Upgrade: websocket",
             "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = read_head(s)
    text = head.decode(errors="replace")
    status = int(text.split(" ", 2)[1]) if text.startswith("HTTP/") else None
    return status, text


def masked_text_frame(text):
    """A client's text frame (RFC 6455 §5.3: clients mask)."""
    data = text.encode()
    mask = os.urandom(4)
    if len(data) < 126:
        head = bytes([0x81, 0x80 | len(data)])
    else:
        head = bytes([0x81, 0x80 | 126]) + len(data).to_bytes(2, "big")
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


def server_frames(buf):
    """The complete (unmasked) server frames at the start of buf: ([(opcode, payload)], rest)."""
    out = []
    at, size = 0, len(buf)
    while size - at >= 2:
        opcode, n, head = buf[at] & 0x0F, buf[at + 1] & 0x7F, 2
        if n == 126:
            if size - at < 4:
                break
            n, head = int.from_bytes(buf[at + 2:at + 4], "big"), 4
        elif n == 127:
            if size - at < 10:
                break
            n, head = int.from_bytes(buf[at + 2:at + 10], "big"), 10
        if size - at < head + n:
            break
        out.append((opcode, bytes(buf[at + head:at + head + n])))
        at += head + n
    return out, buf[at:]


class RawEventClient:
    """A client on a plain socket after a hand-made upgrade, for the tests that need a client which
    stops reading (a small receive buffer, never read) or one that reads faster than the websockets
    library can parse. Frames are parsed here only to check what the service sent."""

    def __init__(self, service, rcvbuf=None):
        self.service = service
        self.handle = service.openclient()
        self.sock = socket.socket()
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.connect(("127.0.0.1", service.port))
        self.sock.sendall((f"GET {API} HTTP/1.1\r\nHost: {service.listen}\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            assert chunk, f"upgrade: connection closed after {head!r}"
            head += chunk
        head, self.buf = head.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 101"), head
        self.sock.sendall(masked_text_frame(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "waitforcaptureevent",
                                                        "params": {"handle": self.handle}})))
        self.messages = []
        self.close_code = None
        self.eof = False

    def pump(self, timeout=0.5):
        """Reads what is there (up to `timeout` s of silence); returns False at end of stream."""
        self.sock.settimeout(timeout)
        try:
            chunk = self.sock.recv(1 << 20)
        except socket.timeout:
            return True
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        frames, self.buf = server_frames(self.buf)
        for opcode, payload in frames:
            if opcode == 0x1:
                self.messages.append(json.loads(payload))
            elif opcode == 0x8:
                self.close_code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 1005
            else:
                assert opcode in (0x9, 0xA), f"unexpected opcode {opcode}"
        return True

    def events(self):
        return [m["result"] for m in self.messages if isinstance(m.get("result"), dict) and "event" in m["result"]]

    def wait(self, predicate, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for r in self.events():
                if predicate(r):
                    return r
            if not self.pump(0.2):
                break
        raise AssertionError(f"no matching event; got {json.dumps(self.messages)[-1000:]}")

    def close(self):
        self.sock.close()



# The rig's D600 (Tests/Rigs): the one this host remembers, and one in range it does not know yet.
D600 = "00:11:22:7E:F6:19"
D600_PATH = "/org/bluez/hci0/dev_00_11_22_7E_F6_19"
D600_NEW = "00:11:22:7E:F6:20"


def zint_png(path, text, symbology="58"):  # 58: QR Code in zint's numbering
    subprocess.run(["zint", "-b", symbology, "-d", text, "-o", path], check=True, capture_output=True)


def drop_image(directory, name, text):
    """A QR Code of `text` appears in `directory` (a `serve --dir` source) as `name` whole: written beside
    it under a dot name, then renamed in, as a camera's frame is whole."""
    tmp = os.path.join(directory, ".tmp-" + name)
    zint_png(tmp, text)
    os.rename(tmp, os.path.join(directory, name))


def wait_for_line(path, text, seconds=20):
    """True once the file at `path` has a line containing `text`; False after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(path, errors="replace") as f:
                if any(text in line for line in f):
                    return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


class AsyncTestCase(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self):
        # The tests call the service over blocking HTTP between awaits; asyncio's debug mode (on in
        # IsolatedAsyncioTestCase) would report each such call as a slow callback.
        asyncio.get_running_loop().slow_callback_duration = 60

    async def event_client(self, service, path=API, wait_id=1):
        """An EventClient of `service`, open (openclient, then its WebSocket on `path` with a
        waitforcaptureevent of id `wait_id`), closed at the test's end."""
        client = await EventClient(service, path=path).open(wait_id=wait_id)
        self.addAsyncCleanup(client.close)
        return client

    def socketcam_dir_service(self):
        """A `capture serve --dir DIR` (SocketCam reading the images that appear in DIR): (DIR, service),
        both gone at the test's end."""
        images = tempfile.mkdtemp(prefix="capture-serve-dir.")
        self.addCleanup(shutil.rmtree, images, True)
        service = Service(extra=["--dir", images])
        self.addCleanup(service.stop)
        return images, service

    def bluez_d600(self, params=None, new_d600=False, remembered=False):
        """The BlueZ rig (`params`: BlueZRig's) with the bonded D600 in range, and with `new_d600` a
        second D600 in range that this host does not know; a `capture serve D600` on it, or with
        `remembered` a `capture serve` of the D600 that `capture connect` remembered. Both stop at the
        test's end; the test is skipped where the rig cannot start. (rig, service)."""
        try:
            rig = BlueZRig(params)
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as error:
            self.skipTest(f"*** SKIPPED: the BlueZ rig does not start here: {error}")
        self.addCleanup(rig.stop)
        rig.ctl("AddLEDevice", D600, "Socket D600 [7EF619]", "d600", -50, "true")
        if new_d600:
            rig.ctl("AddLEDevice", D600_NEW, "Socket D600 [7EF620]", "d600", -50, "false")
        if remembered:
            state = tempfile.mkdtemp(prefix="capture-serve-test.")
            connected = subprocess.run([capture_bin(), "connect", D600], capture_output=True, text=True, timeout=60,
                                       stdin=subprocess.DEVNULL, env=dict(os.environ, XDG_STATE_HOME=state, **rig.env))
            if connected.returncode != 0:
                shutil.rmtree(state, ignore_errors=True)
                raise AssertionError(f"capture connect {D600} failed: {connected}")
            service = Service(env=rig.env, state=state)
        else:
            service = Service([D600], env=rig.env)
        self.addCleanup(service.stop)
        return rig, service
