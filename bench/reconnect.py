#!/usr/bin/env python3
"""Reconnect time after simulated link loss: goal under 1 s plus the backoff.

On the project's bluetoothd model (Tests/Rigs), a remembered D600 (`capture connect`, then
`capture --json listen ADDR`), ROUNDS rounds of each scenario:
  A  link loss, device still in range (`LinkLoss`): connectable again at once; measured from the
     LinkLoss call's return to capture's next deviceArrival line. capture's first reconnect attempt
     follows the link loss without a pause, so no backoff step applies;
  B  out of range for OUTAGE seconds (`SetInRange false`: link loss, each Connect fails
     le-connection-abort-by-local after the rig's ConnectFailDelay 0.1 s), then back (`SetInRange
     true`); measured from that call's return to capture's next deviceArrival line. The backoff step
     in effect is read off the rig's record of Connect calls: after the k-th failed one, listen
     sleeps 0.25 s * 2^(k-1), at most 5 s (Backoff, BLELink.reconnectLoop), before its next Connect
     unless bluetoothd hears the device first: capture watches for it with a filtered discovery and
     connects at the first sign. The backoff wait a sleep-only client would have had left is shown
     for comparison ("backoff wait left"); capture's own time after the first sign is the rest
     (found, Connect, GATT objects, notify sessions re-armed, D600 mode, arrival line).
Peers, on the same rig after capture is gone, doing the same outages:
  floor       a minimal python-dbus client calling Device1.Connect the moment the bench makes the device
              connectable (it knows when: no real client can), timed to PropertiesChanged Connected=true;
  first sign  (B only) a client that, like capture, watches for the absent device with a discovery
              filtered to it (SetDiscoveryFilter Pattern=ADDR) and calls Device1.Connect at the first
              sign of it on the bus (an advertised property such as RSSI changing, or InterfacesAdded),
              timed from SetInRange true to Connected=true. The goal compares (B) with this one.
Ratio = capture median / peer median.
Usage: reconnect.py CAPTURE [ROUNDS] [OUTAGE]
"""
import os, shutil, statistics, subprocess, sys, tempfile, threading, time

capture = os.path.abspath(sys.argv[1])
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
outage = float(sys.argv[3]) if len(sys.argv) > 3 else 3.0
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(root, "Tests", "Rigs"))

import dbus  # noqa: E402  (Debian's python3-dbus; run with /usr/bin/python3)
from dbus.mainloop.glib import DBusGMainLoop  # noqa: E402
from gi.repository import GLib  # noqa: E402
from rig import Rig  # noqa: E402

DBusGMainLoop(set_as_default=True)
ADDR = "00:11:22:7E:F6:19"
DEV = "/org/bluez/hci0/dev_00_11_22_7E_F6_19"
CONNECT_FAIL_DELAY = 0.1  # the rig's default: an absent device's Connect fails after this long


def step_after(failures):
    """The sleep BLEDevice.reconnectLoop takes after its failures-th failed attempt."""
    return min(0.25 * 2 ** (failures - 1), 5.0) if failures else 0.0


def quantile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


class Lines:
    """A child's output lines, each with the perf_counter time it was read."""

    def __init__(self, stream):
        self.lines = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream):
        for raw in stream:
            with self.cond:
                self.lines.append((time.perf_counter(), raw.decode(errors="replace").rstrip("\n")))
                self.cond.notify_all()

    def wait_for(self, needle, after, timeout=30):
        deadline = time.perf_counter() + timeout
        with self.cond:
            while True:
                for t, line in self.lines:
                    if t >= after and needle in line:
                        return t
                left = deadline - time.perf_counter()
                if left <= 0:
                    raise SystemExit(f"no '{needle}' line within {timeout} s")
                self.cond.wait(left)


rig = Rig().start({})
state = tempfile.mkdtemp(prefix="capture-reconnect.")
env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=rig.address, XDG_STATE_HOME=state)
bus = rig.connection()
mock = dbus.Interface(bus.get_object("org.bluez", "/org/bluez"), "org.bluez.Mock")
ours = {"A": [], "B": []}
waits, steps = [], []
listener = None
try:
    mock.AddLEDevice(ADDR, "Socket D600 [7EF619]", "d600", dbus.Int16(-50), True)
    subprocess.run([capture, "connect", ADDR], env=env, capture_output=True, check=True)  # remembered
    listener = subprocess.Popen([capture, "--json", "listen", ADDR], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    out, err = Lines(listener.stdout), Lines(listener.stderr)
    out.wait_for('"event":"deviceArrival"', 0)
    time.sleep(0.5)
    for _ in range(rounds):
        mock.LinkLoss(DEV)
        t0 = time.perf_counter()
        arrived = out.wait_for('"event":"deviceArrival"', t0)
        ours["A"].append(arrived - t0)
        time.sleep(0.3)
    for _ in range(rounds):
        lost_clock = time.monotonic()
        mock.SetInRange(DEV, False)
        time.sleep(outage)
        mock.SetInRange(DEV, True)
        t0 = time.perf_counter()
        t0_clock = time.monotonic()
        arrived = out.wait_for('"event":"deviceArrival"', t0)
        ours["B"].append(arrived - t0)
        # The failed attempts, as the rig saw them (capture warns once per outage, so its stderr no
        # longer counts them): each Connect fails after ConnectFailDelay, then listen sleeps the step.
        calls = [t for t in mock.GetConnectCalls(DEV) if lost_clock <= t < t0_clock]
        step = step_after(len(calls))
        steps.append(step)
        # The next attempt is due `step` after the last failure; the wait is what was left of it.
        waits.append(max(0.0, calls[-1] + CONNECT_FAIL_DELAY + step - t0_clock) if calls else 0.0)
        time.sleep(0.3)
    listener.terminate()
    listener.wait(timeout=10)
    listener = None

    # The peer: Device1.Connect as soon as the device is connectable, until Connected=true.
    device = bus.get_object("org.bluez", DEV)

    def connect_until_connected():
        loop = GLib.MainLoop()
        seen = {}

        def changed(interface, props, invalidated):
            if interface == "org.bluez.Device1" and props.get("Connected") and "t" not in seen:
                seen["t"] = time.perf_counter()
                loop.quit()

        match = bus.add_signal_receiver(changed, "PropertiesChanged", "org.freedesktop.DBus.Properties",
                                        "org.bluez", DEV)
        t0 = time.perf_counter()
        device.Connect(dbus_interface="org.bluez.Device1", reply_handler=lambda: None,
                       error_handler=lambda e: (seen.setdefault("error", e), loop.quit()))
        GLib.timeout_add(10000, loop.quit)
        loop.run()
        match.remove()
        if "t" not in seen:
            raise SystemExit(f"peer: no Connected=true ({seen.get('error')})")
        return seen["t"] - t0

    adapter = dbus.Interface(bus.get_object("org.bluez", "/org/bluez/hci0"), "org.bluez.Adapter1")
    ADVERTISED = {"RSSI", "TxPower", "ManufacturerData", "ServiceData", "AdvertisingFlags", "AdvertisingData"}

    def outage_then_connect_at_first_sign():
        """Out of range for OUTAGE s while a discovery filtered to the device runs; back in range, then
        Device1.Connect at the first sign of it. Seconds from SetInRange true to Connected=true."""
        loop = GLib.MainLoop()
        seen = {}

        def connect():
            if "connecting" in seen:
                return
            seen["connecting"] = True
            device.Connect(dbus_interface="org.bluez.Device1", reply_handler=lambda: None,
                           error_handler=lambda e: (seen.setdefault("error", e), loop.quit()))

        def changed(interface, props, invalidated, path=None):
            if path != DEV or interface != "org.bluez.Device1":
                return
            if props.get("Connected") and "t" not in seen:
                seen["t"] = time.perf_counter()
                loop.quit()
            elif "t0" in seen and ADVERTISED & set(str(k) for k in props):
                connect()

        def added(path, interfaces):
            if str(path) == DEV and "t0" in seen:
                connect()

        m1 = bus.add_signal_receiver(changed, "PropertiesChanged", "org.freedesktop.DBus.Properties",
                                     "org.bluez", path_keyword="path")
        m2 = bus.add_signal_receiver(added, "InterfacesAdded", "org.freedesktop.DBus.ObjectManager", "org.bluez")
        mock.SetInRange(DEV, False)
        adapter.SetDiscoveryFilter({"Transport": "le", "Pattern": ADDR})
        adapter.StartDiscovery()
        time.sleep(outage)
        mock.SetInRange(DEV, True)
        seen["t0"] = time.perf_counter()
        GLib.timeout_add(10000, loop.quit)
        loop.run()
        m1.remove()
        m2.remove()
        adapter.StopDiscovery()
        if "t" not in seen:
            raise SystemExit(f"first-sign peer: no Connected=true ({seen.get('error')})")
        return seen["t"] - seen["t0"]

    peer = {"A": [], "B": [], "B1": []}
    if not mock.GetState(DEV)["Connected"]:
        connect_until_connected()
    for _ in range(rounds):
        mock.LinkLoss(DEV)
        peer["A"].append(connect_until_connected())
        time.sleep(0.3)
    for _ in range(rounds):
        mock.SetInRange(DEV, False)
        time.sleep(outage)
        mock.SetInRange(DEV, True)
        peer["B"].append(connect_until_connected())
        time.sleep(0.3)
    for _ in range(rounds):
        peer["B1"].append(outage_then_connect_at_first_sign())
        time.sleep(0.3)
finally:
    if listener is not None:
        listener.kill()
        listener.wait()
    rig.stop()
    shutil.rmtree(state, ignore_errors=True)

ms = lambda s: f"{s * 1000:.1f} ms"  # noqa: E731
print(f"capture {capture}; {rounds} rounds each; rig ConnectDelay 0.01 s, ConnectFailDelay {CONNECT_FAIL_DELAY:g} s")
for name, what in (("A", "link loss, still in range"), ("B", f"out of range {outage:g} s")):
    o, p = ours[name], peer[name]
    if name == "B":
        note = ("backoff step in effect " + ", ".join(f"{s:g} s x{steps.count(s)}" for s in sorted(set(steps)))
                + f"; backoff wait left median {ms(statistics.median(waits))}")
    else:
        note = "no backoff step (first attempt at once)"
    print(f"{name} ({what}): capture to deviceArrival median {ms(statistics.median(o))}, p90 {ms(quantile(o, 0.9))}"
          f", max {ms(max(o))} [{note}]")
    print(f"   floor peer Device1.Connect to Connected=true median {ms(statistics.median(p))}, p90 {ms(quantile(p, 0.9))}"
          f"; ratio capture/floor (medians) = {statistics.median(o) / statistics.median(p):.1f}")
    if name == "B":
        f = peer["B1"]
        ratio = statistics.median(o) / statistics.median(f)
        print(f"   first-sign peer (filtered discovery, Connect at the first sign) median {ms(statistics.median(f))}, "
              f"p90 {ms(quantile(f, 0.9))}; ratio capture/first-sign (medians) = {ratio:.2f}"
              f" - goal <= 1.5: {'met' if ratio <= 1.5 else 'NOT met'}")
