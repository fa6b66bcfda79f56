#!/usr/bin/env python3
"""capture on BLE against the project's bluetoothd model (Tests/Rigs), each figure next to a peer doing
the same work in the same run, with the ratio printed last.

(a) `capture get DEV battery-level` vs the equivalent busctl sequence (GetManagedObjects + ReadValue)
    — goal ratio <= 1.5;
(b) `capture --json listen` receiving 10,000 scan notifications vs dbus-monitor receiving the same
    PropertiesChanged signals — goal: not slower, zero lost;
(c) resident memory of `listen` after 100,000 events — goal < 30 MB and flat.
"""
import os, statistics, subprocess, sys, tempfile, time

capture = os.path.abspath(sys.argv[1])
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
rig = os.path.join(root, "Tests", "Rigs", "rig.py")
PY = "/usr/bin/python3"


def start_rig(*params):
    args = [PY, rig, "start"] + sum((["--param", p] for p in params), [])
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    values = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    return values["RIG_DIR"], values["DBUS_SYSTEM_BUS_ADDRESS"]


def ctl(d, *args):
    return subprocess.run([PY, rig, "ctl", "--dir", d, *args], capture_output=True, text=True, check=True).stdout


def stop_rig(d):
    subprocess.run([PY, rig, "stop", "--dir", d], capture_output=True)


ADDR = "00:11:22:7E:F6:19"
DEV = "/org/bluez/hci0/dev_00_11_22_7E_F6_19"
env = dict(os.environ, XDG_STATE_HOME=tempfile.mkdtemp())


def median_time(cmd, repeat=15):
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, env=env, capture_output=True, check=True)
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


# (a) battery level: no battery plugin, so 0x2A19 is a GATT characteristic read with ReadValue.
d, bus = start_rig("BatteryPlugin=false")
try:
    env["DBUS_SYSTEM_BUS_ADDRESS"] = bus
    ctl(d, "AddLEDevice", ADDR, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
    ctl(d, "SetBattery", DEV, "64")
    subprocess.run([capture, "connect", ADDR], env=env, capture_output=True, check=True)
    # Setup only (not timed): find the 0x2A19 characteristic's path with python-dbus.
    os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = bus
    import dbus
    manager = dbus.Interface(dbus.SystemBus().get_object("org.bluez", "/"), "org.freedesktop.DBus.ObjectManager")
    char = next(str(p) for p, ifs in manager.GetManagedObjects().items()
                if str(ifs.get("org.bluez.GattCharacteristic1", {}).get("UUID", "")).startswith("00002a19"))
    ours = median_time([capture, "get", ADDR, "battery-level"])
    peer_cmd = ("busctl --system call org.bluez / org.freedesktop.DBus.ObjectManager GetManagedObjects >/dev/null && "
                f"busctl --system call org.bluez {char} org.bluez.GattCharacteristic1 ReadValue a{{sv}} 0")
    peer = median_time(["sh", "-c", peer_cmd])
    out = subprocess.run([capture, "get", ADDR, "battery-level"], env=env, capture_output=True, text=True).stdout
    print(f"(a) get battery-level: capture {ours*1000:.1f} ms   busctl GetManagedObjects+ReadValue {peer*1000:.1f} ms"
          f"   ratio {ours/peer:.2f} (goal <= 1.5)   [{out.strip()}]")
finally:
    stop_rig(d)


def storm_run(count, sample_rss=False):
    d, bus = start_rig()
    env["DBUS_SYSTEM_BUS_ADDRESS"] = bus
    try:
        ctl(d, "AddLEDevice", ADDR, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
        ctl(d, "SetChunkSize", "20")
        listener = subprocess.Popen([capture, "--json", "listen", ADDR, "--count", str(count), "--timeout", "120s"], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        # Ready when the D600 has been switched to scanner mode (config AE 07 written).
        for _ in range(200):
            if "1254fc72" in ctl(d, "GetWrites", DEV).lower():
                break
            time.sleep(0.05)
        time.sleep(0.2)
        path = None
        monitor = None
        if not sample_rss:
            tree = subprocess.run(["busctl", "--system", "tree", "--list", "org.bluez"], env=env,
                                  capture_output=True, text=True).stdout.split()
            # dbus-monitor sees the same notifications as signals on the scan-data characteristic.
            # To a file: a pipe nobody reads would fill and stall the bus for everyone.
            monitor_out = open(os.path.join(d, "monitor.txt"), "w")
            monitor = subprocess.Popen(["dbus-monitor", "--system",
                                        "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.Properties',"
                                        "member='PropertiesChanged',path_namespace='" + DEV + "'"],
                                       env=env, stdout=monitor_out, stderr=subprocess.DEVNULL, text=True)
            time.sleep(0.5)
        t0 = time.perf_counter()
        rss = []
        sampler_stop = False
        if sample_rss:
            import threading

            def sample():
                while listener.poll() is None and not sampler_stop:
                    try:
                        for line in open(f"/proc/{listener.pid}/status"):
                            if line.startswith("VmRSS:"):
                                rss.append(int(line.split()[1]))
                    except OSError:
                        break
                    time.sleep(0.2)
            threading.Thread(target=sample, daemon=True).start()
        # Read capture's output while the storm runs, as a real consumer would: a pipe nobody reads
        # fills after 64 KiB and capture then holds the events in memory (backlog, not a leak).
        import threading
        chunks = []
        drainer = threading.Thread(target=lambda: chunks.append(listener.stdout.read()), daemon=True)
        drainer.start()
        ctl(d, "Storm", DEV, str(count), "34 46 31 32 33 34 35 36 37 38 00")  # "4F" + "12345678" + 00
        listener.wait()
        drainer.join()
        lines = b"".join(chunks).decode().splitlines()
        ours = time.perf_counter() - t0
        decoded = sum(1 for l in lines if '"event":"decodedData"' in l)
        peer = None
        peer_count = None
        if monitor:
            # Count the notifications dbus-monitor printed (one "PropertiesChanged" signal each).
            time.sleep(1.0)
            monitor.terminate()
            monitor.wait()
            monitor_out.close()
            peer_count = open(os.path.join(d, "monitor.txt")).read().count("member=PropertiesChanged")
            peer = ours  # dbus-monitor runs concurrently; its completion is bounded by the same storm
        return ours, decoded, peer_count, rss
    finally:
        stop_rig(d)


# (b) 10,000 scan notifications: capture's listen vs dbus-monitor on the same signals, same storm.
ours, decoded, peer_count, _ = storm_run(10000)
print(f"(b) 10,000 notifications: capture decoded {decoded} in {ours:.2f} s ({decoded/ours:,.0f}/s);"
      f" dbus-monitor saw {peer_count} signals in the same storm; lost by capture: {10000 - decoded}")

# dbus-monitor alone, timed on its own storm, for the speed ratio.
d, bus = start_rig()
env["DBUS_SYSTEM_BUS_ADDRESS"] = bus
try:
    ctl(d, "AddLEDevice", ADDR, "Socket D600 [7EF619]", "d600", "--", "-50", "true")
    # A listener of our own keeps the notify session armed (dbus-monitor cannot StartNotify).
    holder = subprocess.Popen([capture, "listen", ADDR], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        if "1254fc72" in ctl(d, "GetWrites", DEV).lower():
            break
        time.sleep(0.05)
    monitor = subprocess.Popen(["dbus-monitor", "--system",
                                "type='signal',sender='org.bluez',member='PropertiesChanged',path_namespace='" + DEV + "'"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
    time.sleep(0.5)
    import threading
    seen = 0
    last = None
    t0 = time.perf_counter()

    def count_lines():
        global seen, last
        for line in monitor.stdout:
            if "member=PropertiesChanged" in line:
                seen += 1
                last = time.perf_counter()
                if seen >= 10000:
                    break
    reader = threading.Thread(target=count_lines, daemon=True)
    reader.start()
    ctl(d, "Storm", DEV, "10000", "34 46 31 32 33 34 35 36 37 38 00")
    # dbus-monitor may be dropped messages by the daemon when it falls behind: stop waiting 5 s after
    # the last one it printed.
    while reader.is_alive():
        reader.join(0.5)
        if last is not None and time.perf_counter() - last > 5:
            break
        if time.perf_counter() - t0 > 60:
            break
    peer_time = (last or time.perf_counter()) - t0
    monitor.kill()
    holder.terminate()
    holder.wait()
finally:
    stop_rig(d)
print(f"    dbus-monitor alone: {seen} of 10000 signals, last after {peer_time:.2f} s;"
      f" ratio capture/dbus-monitor (time to the last event) = {ours/peer_time:.2f} (goal <= 1.00, 0 lost)")

# (c) memory after 100,000 events.
ours, decoded, _, rss = storm_run(100000, sample_rss=True)
if rss:
    tenth = rss[max(0, len(rss) // 10)]
    print(f"(c) 100,000 events: decoded {decoded}; RSS max {max(rss)/1024:.1f} MB, at 10% {tenth/1024:.1f} MB,"
          f" last {rss[-1]/1024:.1f} MB (goal < 30 MB, flat)")
else:
    print(f"(c) 100,000 events: decoded {decoded}; RSS not sampled")
