#!/usr/bin/env python3
"""DMCC `get` round trip: `capture get tcp://127.0.0.1:PORT dmcc:DEVICE.TYPE`
vs `printf '||>GET DEVICE.TYPE\\r\\n' | nc -q1 127.0.0.1 PORT` against the same loopback simulator,
median of N runs each, ratio printed last.

The simulator here is a small Python model of a DataMan (docs/device-protocols.md §7: `||[checksum:id]>`
header, CR LF footer, silent mode by default, extended replies `||checksum:id[status]data` after
`SET COM.DMCC-RESPONSE 1`). It closes a connection when the client half-closes it. Debian's
netcat-openbsd sits out the whole `-q1` second after end of input even when the server has closed, so
that figure measures nc's quiet period; the round-trip floor is given too, as `nc -N` (shut down the
write side at end of input, exit when the server closes).
"""
import os, socket, statistics, subprocess, sys, threading, time

capture = os.path.abspath(sys.argv[1])
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20

PARAMS = {"DEVICE.TYPE": "DM8050", "DEVICE.NAME": "Bench reader", "DEVICE.FIRMWARE-VER": "6.1.5"}


def serve(conn):
    extended = False
    buf = b""
    with conn:
        while True:
            data = conn.recv(4096)
            if not data:
                return
            buf += data
            while b"\r\n" in buf:
                line, buf = buf.split(b"\r\n", 1)
                ident = None
                if line.startswith(b"||"):
                    header, _, line = line[2:].partition(b">")
                    fields = header.split(b":")
                    if len(fields) > 1:
                        ident = fields[1].decode()
                words = line.decode(errors="replace").split(" ", 2)
                status, value = 101, ""
                if words[0].upper() == "GET" and len(words) == 2:
                    name = words[1].upper()
                    status, value = (0, PARAMS[name]) if name in PARAMS else (102, "")
                elif words[0].upper() == "SET" and len(words) == 3:
                    if words[1].upper() == "COM.DMCC-RESPONSE":
                        extended = words[2] == "1"
                        continue
                    status = 0
                if extended:
                    head = "||" + ("0:" + ident if ident is not None else "")
                    conn.sendall(f"{head}[{status}]{value}\r\n".encode())
                elif status == 0 and value:
                    conn.sendall(f"{value}\r\n".encode())


def accept_loop(server):
    while True:
        conn, _ = server.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


def median_seconds(argv, shell=False):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        out = subprocess.run(argv, shell=shell, capture_output=True)
        times.append(time.perf_counter() - start)
        if b"DM8050" not in out.stdout:
            sys.exit(f"unexpected output from {argv}: {out}")
    return statistics.median(times)


server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", 0))
server.listen(16)
port = server.getsockname()[1]
threading.Thread(target=accept_loop, args=(server,), daemon=True).start()

cap = median_seconds([capture, "get", f"tcp://127.0.0.1:{port}", "dmcc:DEVICE.TYPE"])
nc = median_seconds(f"printf '||>GET DEVICE.TYPE\\r\\n' | nc -q1 127.0.0.1 {port}", shell=True)
nc_n = median_seconds(f"printf '||>GET DEVICE.TYPE\\r\\n' | nc -N 127.0.0.1 {port}", shell=True)
print(f"capture get dmcc:DEVICE.TYPE  median {cap * 1000:8.2f} ms  ({runs} runs, {capture})")
print(f"printf | nc -q1               median {nc * 1000:8.2f} ms")
print(f"printf | nc -N                median {nc_n * 1000:8.2f} ms")
print(f"ratio capture / nc -q1    = {cap / nc:.2f}")
print(f"ratio capture / nc -N     = {cap / nc_n:.2f}")
