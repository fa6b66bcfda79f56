#!/usr/bin/python3
"""The end-to-end scenarios, run inside the VM (python3 scenarios.py --guest /host).

Setup: a system bus, `btvirt -l2` (two virtual dual-mode controllers through hci_vhci), bluetoothd,
hci0 ("capture host") powered for capture, hci1 ("Scanner One") powered, discoverable and pairable
for the scanner emulation (scanner.py). Each scenario gets its own state directory and asserts exit
codes and output exactly; its log (every command, its exit code, stdout and stderr) is kept in the
results. The host side (vm.py) reads SCENARIOS for the names only.
"""

import fcntl
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
import traceback

import camera  # the camera tier's vivid helpers (Tests/VM/camera.py, beside this file in the share)

CODE = "EQ0000013158"
# The channel the scanner's Serial Port record names; the host's --accept channel.
SCANNER_CHANNEL = 3
ACCEPT_CHANNEL = 5
HOST_NAME = "capture host"
SCANNER_NAME = "Scanner One"
# Class of Device set in main.conf: major class Peripheral (0x05), minor 0x40, as a scanner reports.
SCANNER_CLASS_OF_DEVICE = 0x000540
NO_BUS = "unix:path=/nonexistent/system_bus_socket"
# SKT result codes as exit statuses (docs/architecture.md: exit status = |SKT code|).
EXIT_NOT_FOUND = 17
CODE128 = {"id": 15, "name": "Code 128"}
# The D600 model on hci1 (d600.py; docs/device-protocols.md §2): its advertised service, its SDK type
# (ScannerD600, 0x50015), the battery level it starts with, and a tag read whose frame ("4F" + text +
# 00, 30 bytes) spans two 20-byte notifications. 4F (NFC Forum) is the SDK's TagTypeNFCForum.
D600_SERVICE = "6cb501b7-96f6-4eef-acb1-d7535f153cf0"
D600_TYPE = {"type": 0x50015, "typeName": "ScannerD600"}
D600_BATTERY = 73
TAG_TEXT = "tags.springcard.com/vm-tier"
TAG_TEXT_2 = "st.com/nfc-rfid after the link came back"
NFC_FORUM = {"id": 266, "name": "NFC Forum"}


class Failure(Exception):
    pass


class Context:
    def __init__(self, share, log):
        self.share = share
        self.log = log
        self.capture = os.path.join(share, "capture")
        self.host = None
        self.scanner = None
        self.state = None
        self.d600_name = None
        self.background = []
        # Run after the scenario, last added first (the camera's writer and vivid).
        self.cleanups = []
        # Background captures, killed at the end if a failed scenario left them running.
        self.captures = []

    # Commands

    def run(self, args, bluetoothd=True, timeout=120, expect=0):
        env = dict(os.environ, XDG_STATE_HOME=self.state)
        if not bluetoothd:
            env["DBUS_SYSTEM_BUS_ADDRESS"] = NO_BUS
        self.log(f"$ capture {' '.join(args)}" + ("" if bluetoothd else "   (bluetoothd unreachable)"))
        started = time.monotonic()
        done = subprocess.run([self.capture] + args, env=env, capture_output=True, text=True, timeout=timeout)
        self.log(f"  exit {done.returncode} after {time.monotonic() - started:.1f} s")
        for line in done.stdout.splitlines():
            self.log(f"  out: {line}")
        for line in done.stderr.splitlines():
            self.log(f"  err: {line}")
        if expect is not None and done.returncode != expect:
            raise Failure(f"capture {' '.join(args)}: exit {done.returncode}, expected {expect}")
        return done

    def start(self, args, name):
        """A background process whose output goes to the scenario log when it is stopped."""
        out = output_file()
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, text=True)
        self.background.append((name, process, out))
        return process, out

    def start_capture(self, args, name="capture"):
        env = dict(os.environ, XDG_STATE_HOME=self.state)
        self.log(f"$ capture {' '.join(args)} &")
        out = output_file()
        err = output_file()
        process = subprocess.Popen([self.capture] + args, env=env, stdout=out, stderr=err, text=True)
        self.captures.append(process)
        return process, out, err

    def stop_all(self):
        for process in self.captures:
            if process.poll() is None:
                process.kill()
                process.wait()
        while self.cleanups:
            try:
                self.cleanups.pop()()
            except Exception as error:  # noqa: BLE001 (logged; the scenario's own result stands)
                self.log(f"  cleanup failed: {error}")
        for name, process, out in self.background:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            out.seek(0)
            for line in out.read().splitlines():
                self.log(f"  {name}: {line}")
        self.background = []

    def acceptor(self):
        """The scanner in SPP acceptor mode on hci1, ready to be connected to."""
        process, out = self.start(
            ["python3", os.path.join(self.share, "scanner.py"), "acceptor", "--adapter", "hci1",
             "--channel", str(SCANNER_CHANNEL), "--code", CODE], "scanner")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            out.seek(0)
            if "ready" in out.read().split():
                return process
            if process.poll() is not None:
                raise Failure("the scanner emulation exited before it was ready")
            time.sleep(0.2)
        raise Failure("the scanner emulation was not ready in 60 s")

    def d600(self):
        """The D600 model on hci1 (d600.py), registered and advertising; its name from the address.
        (d600.py makes hci1 LE-only first, as a D600 is.)"""
        model = D600Model(self)
        self.background.append(("d600", model.process, model.out))
        line = model.wait_for("ready ", 60, "the D600 model ready")
        self.d600_name = line.split(" ", 2)[2]
        return model

    def devices_file(self):
        with open(os.path.join(self.state, "capture", "devices.json")) as f:
            return json.load(f)


class D600Model:
    """d600.py in the background: commands on its stdin, what it did on its stdout (kept in a file that
    the scenario log gets)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.out = output_file()
        self.process = subprocess.Popen(
            ["python3", os.path.join(ctx.share, "d600.py"), "--adapter", "hci1", "--battery", str(D600_BATTERY)],
            stdin=subprocess.PIPE, stdout=self.out, stderr=subprocess.STDOUT, text=True)

    def lines(self):
        self.out.seek(0)
        return self.out.read().splitlines()

    def send(self, command):
        self.ctx.log(f"  d600 <- {command}")
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def wait_for(self, prefix, seconds, what, after=0):
        """The first output line from line `after` on that starts with `prefix`."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for line in self.lines()[after:]:
                if line.startswith(prefix):
                    return line
            if self.process.poll() is not None:
                raise Failure(f"the D600 model exited ({self.process.returncode}) before {what}")
            time.sleep(0.1)
        raise Failure(f"{what}: not seen in {seconds} s")

    def read(self, text, family="4F"):
        """A tag read; returns the model's line saying how it went (sent in N notifications, or why not)."""
        mark = len(self.lines())
        self.send(f"read {family} {text}")
        return self.wait_for("read ", 10, "the model's answer to the read", after=mark)


def wait_output(file, condition, seconds, what):
    """Polls a background capture's stdout (a file) until `condition(text)`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        file.seek(0)
        if condition(file.read()):
            return
        time.sleep(0.1)
    raise Failure(f"{what}: not in capture's output after {seconds} s")


def check(condition, message):
    if not condition:
        raise Failure(message)


def equal(actual, expected, what):
    if actual != expected:
        raise Failure(f"{what}: got {actual!r}, expected {expected!r}")


def json_lines(text):
    events = []
    for line in text.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            raise Failure(f"not a JSON line: {line!r}")
    return events


def compact(address):
    return address.replace(":", "")


# Scenarios


def pairing_code(ctx):
    """connect --show-pairing-code prints the FNI barcodes with hci0's real address, from bluetoothd
    (Adapter1.Address) and without it (HCI)."""
    expected = {
        "adapter": ctx.host, "code1D": f"#FNI{compact(ctx.host)}#",
        "code2D": f"#FNC SPP Initiator {compact(ctx.host)}#",
    }
    for bluetoothd in [True, False]:
        done = ctx.run(["connect", "--show-pairing-code", "--json", "--adapter", "hci0"], bluetoothd=bluetoothd)
        equal(json_lines(done.stdout), [expected], "pairing code JSON")
        equal(done.stderr, "", "stderr")
    done = ctx.run(["connect", "--show-pairing-code", "--adapter", "hci0"], bluetoothd=False)
    equal(done.stdout, f"1D (Code 128):\t#FNI{compact(ctx.host)}#\n"
          f"2D (DataMatrix/QR):\t#FNC SPP Initiator {compact(ctx.host)}#\n", "pairing code text")


def discovered(ctx, events, bluetoothd):
    check(events, "no output")
    equal(events[-1].get("event"), "discoveryEnd", "last event")
    found = [e for e in events[:-1] if e.get("address") == ctx.scanner]
    equal(len(found), 1, f"deviceDiscovered events for the scanner {ctx.scanner}")
    others = [e.get("address") for e in events[:-1] if e.get("address") != ctx.scanner]
    equal(others, [], "other devices found")
    equal(events[-1].get("count"), 1, "discoveryEnd count")
    event = found[0]
    equal(event.get("event"), "deviceDiscovered", "event")
    equal(event.get("device", {}).get("name"), SCANNER_NAME, "device name")
    equal(event.get("device", {}).get("id"), ctx.scanner, "device id")
    equal(event.get("classOfDevice"), SCANNER_CLASS_OF_DEVICE, "classOfDevice")
    equal(event.get("socketMobile"), True, "socketMobile")
    equal(event.get("recognizedBy"), "serviceClass", "recognizedBy")
    equal(event.get("addressType"), "bredr" if not bluetoothd else "public", "addressType")
    return event


def discover_hci(ctx):
    """discover --classic without bluetoothd: HCI inquiry, remote name request, and an SDP search
    for the scanner service class find hci1 as a scanner (recognised by its SDP record)."""
    ctx.acceptor()
    for extra in [["--all"], []]:
        done = ctx.run(["discover", "--classic", *extra, "--json", "--adapter", "hci0", "--timeout", "4s"],
                       bluetoothd=False)
        discovered(ctx, json_lines(done.stdout), bluetoothd=False)


def discover_bluez(ctx):
    """discover --classic with bluetoothd: a BR/EDR discovery through BlueZ finds hci1 with its name,
    class and the scanner service class among its UUIDs."""
    ctx.acceptor()
    done = ctx.run(["discover", "--classic", "--all", "--json", "--adapter", "hci0", "--timeout", "12s"])
    event = discovered(ctx, json_lines(done.stdout), bluetoothd=True)
    check("a1220169-e854-473e-9cb5-873acbdf1f13" in event.get("uuids", []), "scanner class in uuids")


def arrival_device(ctx):
    return {"id": ctx.scanner, "name": f"Bluetooth SPP scanner {ctx.scanner}", "type": 0, "typeName": "None"}


def remembered(ctx, name=None):
    devices = ctx.devices_file().get("devices", [])
    equal(len(devices), 1, f"remembered devices {devices}")
    device = devices[0]
    equal(device.get("id"), ctx.scanner, "remembered id")
    equal(device.get("transport"), "classic", "remembered transport")
    equal(device.get("channel"), SCANNER_CHANNEL, "remembered channel")
    if name is not None:
        equal(device.get("name"), name, "remembered name")
    return device


def connect(ctx):
    """connect ADDR --classic: SDP finds the Serial Port channel, RFCOMM connects, the scanner is
    remembered with transport classic and its channel."""
    ctx.acceptor()
    done = ctx.run(["connect", ctx.scanner, "--classic", "--json", "--adapter", "hci0"])
    events = json_lines(done.stdout)
    equal([e.get("event") for e in events], ["deviceArrival"], "events")
    equal(events[0].get("device"), arrival_device(ctx), "arrival device")
    remembered(ctx, name=f"Bluetooth SPP scanner {ctx.scanner}")
    listed = ctx.run(["list", "--json"])
    check(ctx.scanner in listed.stdout, "list shows the scanner")


def decoded_event(ctx, events, device_id):
    decoded = [e for e in events if e.get("event") == "decodedData"]
    equal(len(decoded), 1, "decodedData events")
    event = decoded[0]
    equal(event.get("text"), CODE, "decoded text")
    equal(event.get("dataSource"), CODE128, "dataSource (]C0 is Code 128)")
    equal(event.get("device", {}).get("id"), device_id, "decodedData device id")
    return event


def listen(ctx):
    """listen ADDR --count 1 on a remembered Classic scanner: RFCOMM again, one decodedData with the
    frame's text and Code 128 from its AIM identifier ]C0."""
    ctx.acceptor()
    ctx.run(["connect", ctx.scanner, "--classic", "--adapter", "hci0"])
    links_down(ctx)
    done = ctx.run(["listen", ctx.scanner, "--count", "1", "--json", "--adapter", "hci0"])
    events = json_lines(done.stdout)
    equal(events[0].get("event"), "deviceArrival", "first event")
    decoded_event(ctx, events, ctx.scanner)
    kinds = [e.get("event") for e in events]
    equal(kinds.count("decodedData"), 1, "decodedData count")


def no_serial_port(ctx):
    """connect --classic to a device with no Serial Port record (the scanner not in SPP acceptor
    mode): NOTFOUND, exit 17, saying which barcode to scan; nothing remembered."""
    done = ctx.run(["connect", ctx.scanner, "--classic", "--adapter", "hci0"], expect=EXIT_NOT_FOUND)
    check("#FNB00F40000#" in done.stderr, "the error names the acceptor barcode")
    check(not os.path.exists(os.path.join(ctx.state, "capture", "devices.json"))
          or ctx.devices_file().get("devices") == [], "nothing remembered")


def accept(ctx):
    """listen --accept --channel N: the scanner in SPP initiator mode connects to hci0's channel N
    and sends a frame; one decodedData from the scanner's address."""
    # A scanner pages the host, so hci0 must be connectable (page scan): bluetoothd leaves page scan
    # off while no device is paired, and Discoverable implies connectable.
    set_adapter("hci0", Discoverable=dbus_bool(True))
    process, out, err = ctx.start_capture(
        ["listen", "--accept", "--channel", str(ACCEPT_CHANNEL), "--count", "1", "--json", "--verbose",
         "--adapter", "hci0"])
    # The scanner connects once capture listens: its socket on the channel is in the kernel's listen
    # state. (Connecting too early is refused, and the kernel's RFCOMM session to the host is then
    # still closing: the next connect(2) gives EINPROGRESS.)
    wait(lambda: rfcomm_listening(ACCEPT_CHANNEL) or process.poll() is not None, 60,
         f"capture listening on RFCOMM channel {ACCEPT_CHANNEL}")
    if process.poll() is not None:
        raise Failure(f"listen --accept exited ({process.returncode}) before it listened")
    scanner, scanner_out = ctx.start(
        ["python3", os.path.join(ctx.share, "scanner.py"), "initiator", "--source", ctx.scanner,
         "--to", ctx.host, "--channel", str(ACCEPT_CHANNEL), "--code", CODE], "scanner")
    status, stdout, stderr = finish(ctx, process, out, err, 60)
    scanner.wait(40)
    equal(status, 0, "listen --accept exit status")
    equal(scanner.returncode, 0, "scanner initiator exit status")
    events = json_lines(stdout)
    equal(events[0].get("event"), "deviceArrival", "first event")
    decoded_event(ctx, events, ctx.scanner)
    name = f"Bluetooth SPP scanner {ctx.scanner} ({ctx.scanner})"
    equal(stderr, f"capture: waiting for a Bluetooth Classic scanner on RFCOMM channel {ACCEPT_CHANNEL}\n"
          f"capture: {name} arrived\ncapture: {name} removed\n", "stderr (--verbose)")


def pair(ctx):
    """connect ADDR --classic --pair: bluetoothd pairs (NoInputNoOutput on both sides: just works)
    and trusts the scanner, then SDP and RFCOMM connect and it is remembered."""
    ctx.acceptor()
    done = ctx.run(["connect", ctx.scanner, "--classic", "--pair", "--json", "--verbose", "--adapter", "hci0"])
    events = json_lines(done.stdout)
    equal([e.get("event") for e in events], ["deviceArrival"], "events")
    equal(done.stderr, f"capture: paired and trusted {ctx.scanner} through bluetoothd\n", "stderr")
    properties = device_properties(ctx.scanner)
    equal(bool(properties.get("Paired")), True, "Device1.Paired on hci0")
    equal(bool(properties.get("Trusted")), True, "Device1.Trusted on hci0")
    device = remembered(ctx)
    equal(device.get("name"), SCANNER_NAME, "remembered name (bluetoothd's alias)")
    # Paired already: a second --pair succeeds the same way.
    ctx.run(["connect", ctx.scanner, "--classic", "--pair", "--adapter", "hci0"])


# BLE: capture as the central on hci0, the D600 model (d600.py) as a GATT peripheral on hci1.


def d600_device(ctx, device, what):
    """An event's device object: the D600's address, its advertised name and its SDK type."""
    expected = {"id": ctx.scanner, "name": ctx.d600_name, **D600_TYPE}
    equal({k: device.get(k) for k in expected}, expected, what)
    extra = set(device) - set(expected) - {"model"}
    equal(extra, set(), f"{what}: other keys")


def ble_discover(ctx):
    """discover --le finds the D600 model by its advertised scanner service: one deviceDiscovered with
    its address, name, type and UUIDs, then discoveryEnd; the plain form prints the same device."""
    ctx.d600()
    done = ctx.run(["discover", "--le", "--json", "--timeout", "5s"])
    equal(done.stderr, "", "stderr")
    events = json_lines(done.stdout)
    equal([e.get("event") for e in events], ["deviceDiscovered", "discoveryEnd"], "events")
    event = events[0]
    equal(event.get("address"), ctx.scanner, "address")
    equal(event.get("addressType"), "public", "addressType")
    equal(event.get("uuids"), [D600_SERVICE], "uuids (the advertised scanner service)")
    check(isinstance(event.get("rssi"), int), f"rssi is a number: {event.get('rssi')!r}")
    d600_device(ctx, event.get("device", {}), "discovered device")
    equal(events[1].get("count"), 1, "discoveryEnd count")
    done = ctx.run(["discover", "--le", "--timeout", "3s"])
    fields = [line.split("\t") for line in done.stdout.splitlines()]
    equal([f[:3] for f in fields], [[ctx.scanner, ctx.d600_name, "ScannerD600"]], "plain discover")


def paired_d600(ctx):
    """The D600 model up and `connect ADDR --pair --json` done: bluetoothd finds it (an LE discovery),
    connects, resolves its GATT services, pairs (NoInputNoOutput on both sides: just works) and trusts
    it; one deviceArrival naming it; paired and trusted on hci0, and the bond on hci1's side too."""
    d600 = ctx.d600()
    # The search for the advertising model may take longer than connect's default 10 s in an emulated,
    # loaded VM: the scenario gives it up to 120 s (--timeout bounds the search, capture-connect(1)).
    done = ctx.run(["connect", ctx.scanner, "--pair", "--json", "--timeout", "120s"], timeout=300)
    events = json_lines(done.stdout)
    equal([e.get("event") for e in events], ["deviceArrival"], "events")
    d600_device(ctx, events[0].get("device", {}), "arrival device")
    properties = device_properties(ctx.scanner)
    equal(bool(properties.get("Paired")), True, "Device1.Paired on hci0")
    equal(bool(properties.get("Trusted")), True, "Device1.Trusted on hci0")
    equal(str(properties.get("AddressType")), "public", "Device1.AddressType")
    # The other side of the bond: bluetoothd on hci1 paired with hci0 too.
    wait(lambda: bool(bluez_objects().get(f"/org/bluez/hci1/dev_{ctx.host.replace(':', '_')}", {})
                      .get("org.bluez.Device1", {}).get("Paired")), 10, "hci0 paired on the D600's side (hci1)")
    return d600


def ble_connect(ctx):
    """connect ADDR --pair (paired_d600), then: remembered with transport ble; list shows it connected;
    partnership status says paired, bonded, trusted, connected, pairing-required (its scanner service is
    the pairing-required form, docs/device-protocols.md §2.1)."""
    paired_d600(ctx)
    devices = ctx.devices_file().get("devices", [])
    equal([(d.get("id"), d.get("transport")) for d in devices], [(ctx.scanner, "ble")], "remembered devices")
    listed = json.loads(ctx.run(["list", "--json"]).stdout)
    mine = [d for d in listed.get("devices", []) if d.get("id") == ctx.scanner]
    equal([(d.get("transport"), d.get("state")) for d in mine], [("ble", "connected")], "list")
    status = json.loads(ctx.run(["partnership", "status", ctx.scanner, "--json"]).stdout)
    equal({k: status.get(k) for k in ["paired", "bonded", "trusted", "connected", "variant"]},
          {"paired": True, "bonded": True, "trusted": True, "connected": True, "variant": "pairing-required"},
          "partnership status")


def ble_get(ctx):
    """get battery-level friendly-name device-type version --json on the paired D600: the battery level
    its 0x2A19 holds (through bluetoothd's Battery1; ScanAPI packing: max 100 << 24 | min 0 << 16 |
    current << 8, valueName N%), the name bluetoothd has for it (its GAP name), ScannerD600, the
    firmware revision; a new battery level the device notifies is what the next get reads."""
    d600 = paired_d600(ctx)
    # bluetoothd's battery plugin claims 0x180F and shows the level as Battery1 (doc/org.bluez.Battery.rst).
    path = f"/org/bluez/hci0/dev_{ctx.scanner.replace(':', '_')}"
    wait(lambda: "org.bluez.Battery1" in bluez_objects().get(path, {}), 10, "Battery1 on hci0's device")
    equal(int(bluez_objects()[path]["org.bluez.Battery1"].get("Percentage")), D600_BATTERY, "Battery1.Percentage")
    done = ctx.run(["get", ctx.scanner, "battery-level", "friendly-name", "device-type", "version", "--json"])
    values = {p.get("name"): p for p in json.loads(done.stdout).get("properties", [])}
    equal(sorted(values), ["battery-level", "device-type", "friendly-name", "version"], "properties")
    equal(values["battery-level"].get("value"), (100 << 24) | (D600_BATTERY << 8), "battery-level value")
    equal(values["battery-level"].get("valueName"), f"{D600_BATTERY}%", "battery-level valueName")
    equal(values["friendly-name"].get("value"), ctx.d600_name, "friendly-name value")
    equal(values["device-type"].get("value"), D600_TYPE["type"], "device-type value")
    # Firmware revision 0x2A26 "1.50" (Device Information, exported by bluetoothd as GATT).
    version = values["version"].get("value", {})
    equal((version.get("major"), version.get("middle"), version.get("minor"), version.get("build")), (1, 50, 0, 0),
          "version from the firmware revision")
    d600.send("battery 41")
    d600.wait_for("battery 41", 10, "the new battery level")
    deadline = time.monotonic() + 15
    while True:
        done = ctx.run(["get", ctx.scanner, "battery-level", "--json"])
        value = json.loads(done.stdout)["properties"][0].get("value")
        if value == (100 << 24) | (41 << 8) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    equal(value, (100 << 24) | (41 << 8), "battery-level after the device notified 41%")


def ble_set_trigger(ctx):
    """set ADDR friendly-name renames the D600 on this host (Device1.Alias; get reads it back, and the
    D600's own name is unchanged); trigger ADDR start brings it up (config 02 AE 07) and writes scan
    control A1 as a 20-byte buffer (docs/device-protocols.md §2.5: TS writes 20 bytes, byte 0 the
    command)."""
    d600 = paired_d600(ctx)
    ctx.run(["set", ctx.scanner, "friendly-name", "Dock 4"])
    done = ctx.run(["get", ctx.scanner, "friendly-name", "--json"])
    equal([p.get("value") for p in json.loads(done.stdout).get("properties", [])], ["Dock 4"], "friendly-name")
    equal(str(device_properties(ctx.scanner).get("Alias")), "Dock 4", "Device1.Alias on hci0")
    equal(str(device_properties(ctx.scanner).get("Name")), ctx.d600_name, "Device1.Name (the D600's own)")
    mark = len(d600.lines())
    ctx.run(["trigger", ctx.scanner, "start"])
    d600.wait_for("scan control a1", 10, "scan control A1", after=mark)
    writes = [line.split(" ", 2)[2] for line in d600.lines()[mark:] if line.startswith("write ")]
    equal(writes, ["02 ae 07", "a1" + " 00" * 19], "writes: config AE 07, then scan control A1")


def kinds(events):
    return [e.get("event") for e in events]


def ble_listen(ctx):
    """listen ADDR --count 1 on the paired D600: capture subscribes and switches it to scanner mode
    (config 02 AE 07, answered 01 00) before it prints deviceArrival, so a tag read made as soon as the
    arrival is out is delivered: its frame spans two notifications and is exactly one decodedData with
    the whole text, NFC Forum; exit 0."""
    d600 = paired_d600(ctx)
    mark = len(d600.lines())
    process, out, err = ctx.start_capture(["listen", ctx.scanner, "--count", "1", "--json"])
    wait_output(out, lambda text: '"deviceArrival"' in text, 30, "deviceArrival")
    sent = d600.read(TAG_TEXT)
    equal(sent, "read sent in 2 notifications", "the D600 model's read")
    status, stdout, stderr = finish(ctx, process, out, err, 30)
    equal(status, 0, "listen exit status")
    equal(stderr, "", "listen stderr")
    events = json_lines(stdout)
    equal(kinds(events), ["deviceArrival", "decodedData", "deviceRemoval"], "events")
    decoded = events[1]
    equal(decoded.get("text"), TAG_TEXT, "decoded text")
    equal(decoded.get("dataSource"), NFC_FORUM, "dataSource (tag family 4F)")
    for event in events:
        d600_device(ctx, event.get("device", {}), f"{event.get('event')} device")
    config = [line for line in d600.lines()[mark:] if line.startswith("config ")]
    equal(config, ["config command ae 07", "config answer 01 00"], "the config exchange")
    check(any(line == "write 1254fc72-336e-4bb2-a0a8-71c7d28d73ce 02 ae 07" for line in d600.lines()[mark:]),
          "scanner mode written as one block 02 AE 07 (docs/device-protocols.md §2.6, TS/SC-NET)")


def finish(ctx, process, out, err, seconds):
    """Waits for a background capture (killed after `seconds`); logs and returns its outcome."""
    try:
        status = process.wait(seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        status = None
    out.seek(0)
    err.seek(0)
    stdout, stderr = out.read(), err.read()
    ctx.log(f"  exit {status}")
    for line in stdout.splitlines():
        ctx.log(f"  out: {line}")
    for line in stderr.splitlines():
        ctx.log(f"  err: {line}")
    return status, stdout, stderr


def ble_reconnect(ctx):
    """Link loss: listen ADDR --count 2 gets one read; the D600 cuts the link and stops advertising for
    3 s; listen prints deviceRemoval, reconnects when it advertises again (deviceArrival once it is
    back in scanner mode), and receives the next read; exit 0."""
    d600 = paired_d600(ctx)
    mark = len(d600.lines())
    process, out, err = ctx.start_capture(["listen", ctx.scanner, "--count", "2", "--json"])
    d600.wait_for("config answer 01 00", 30, "scanner mode (config AE 07) answered", after=mark)
    equal(d600.read(TAG_TEXT), "read sent in 2 notifications", "the first read")
    wait_output(out, lambda text: '"decodedData"' in text, 15, "the first decodedData")
    mark = len(d600.lines())
    d600.send("drop 3")
    d600.wait_for("dropped ", 10, "the link cut", after=mark)
    wait_output(out, lambda text: text.count('"deviceArrival"') == 2, 60, "the second deviceArrival")
    d600.wait_for("config answer 01 00", 10, "scanner mode again after reconnecting", after=mark)
    equal(d600.read(TAG_TEXT_2), "read sent in 3 notifications", "the read after reconnecting")
    status, stdout, stderr = finish(ctx, process, out, err, 30)
    equal(status, 0, "listen exit status")
    events = json_lines(stdout)
    equal(kinds(events), ["deviceArrival", "decodedData", "deviceRemoval", "deviceArrival", "decodedData",
                          "deviceRemoval"], "events")
    equal([e.get("text") for e in events if e.get("event") == "decodedData"], [TAG_TEXT, TAG_TEXT_2],
          "decoded texts")
    ctx.log(f"  (stderr: {stderr!r})")


def ble_controller_loss(ctx):
    """The controllers go away and come back (btvirt stopped and started again; bluetoothd stays):
    listen ADDR --count 2 prints deviceRemoval when bluetoothd drops the device with its adapter and
    deviceArrival once bluetoothd has the bonded device again (from its storage) and capture has
    reconnected and brought it up, then receives the next read; exit 0."""
    d600 = paired_d600(ctx)
    process, out, err = ctx.start_capture(["listen", ctx.scanner, "--count", "2", "--json"])
    wait_output(out, lambda text: '"deviceArrival"' in text, 30, "the first deviceArrival")
    equal(d600.read(TAG_TEXT), "read sent in 2 notifications", "the first read")
    wait_output(out, lambda text: '"decodedData"' in text, 15, "the first decodedData")
    mark = len(d600.lines())
    restart_controllers(ctx)
    d600.wait_for("ready again", 60, "the D600 model registered on the new hci1", after=mark)
    wait_output(out, lambda text: text.count('"deviceArrival"') == 2, 60, "the second deviceArrival")
    equal(d600.read(TAG_TEXT_2), "read sent in 3 notifications", "the read after the controllers came back")
    status, stdout, stderr = finish(ctx, process, out, err, 30)
    equal(status, 0, "listen exit status")
    events = json_lines(stdout)
    equal(kinds(events), ["deviceArrival", "decodedData", "deviceRemoval", "deviceArrival", "decodedData",
                          "deviceRemoval"], "events")
    equal([e.get("text") for e in events if e.get("event") == "decodedData"], [TAG_TEXT, TAG_TEXT_2],
          "decoded texts")


def ble_remove(ctx):
    """remove ADDR --json on the paired, connected D600: one deviceRemoval; bluetoothd forgets it (no
    Device1 on hci0, so no pairing) and capture forgets it; a second remove exits 17."""
    paired_d600(ctx)
    done = ctx.run(["remove", ctx.scanner, "--json"])
    events = json_lines(done.stdout)
    equal(kinds(events), ["deviceRemoval"], "events")
    d600_device(ctx, events[0].get("device", {}), "removal device")
    equal(device_properties(ctx.scanner), {}, "Device1 on hci0 after remove")
    equal(ctx.devices_file().get("devices"), [], "remembered devices")
    again = ctx.run(["remove", ctx.scanner], expect=EXIT_NOT_FOUND)
    check(again.stderr.startswith("capture: ESKT_NOTFOUND (-17): "), f"second remove: {again.stderr!r}")


DOCTOR_KEYS = ["check", "code", "fix", "message", "status", "subject"]
UNBLOCK = "rfkill unblock bluetooth"
CAUSE_SUFFIX = " (capture doctor checks the host)"


def doctor_rows(ctx, expect):
    """`capture --json doctor`: one document with the four keys, every row with all six (sorted)."""
    done = ctx.run(["--json", "doctor"], expect=expect)
    documents = json_lines(done.stdout)
    equal(len(documents), 1, "doctor --json documents")
    document = documents[0]
    equal(sorted(document), ["checks", "error", "failures", "warnings"], "doctor document keys")
    for row in document["checks"]:
        equal(list(row), DOCTOR_KEYS, f"keys of {row}")
    return document, done


def node_row(check, paths, readable_mode, many, none):
    """What doctor says of a node check as root: every node is readable, so one ok row."""
    denied = [p for p in paths if not os.access(p, readable_mode)]
    if denied:
        raise Failure(f"root cannot open {denied}?")
    return {"check": check, "code": None, "fix": None, "message": many(len(paths)) if paths else none,
            "status": "ok", "subject": None}


def query_capture(path):
    """(is a capture node, card) by VIDIOC_QUERYCAP, asked here independently of capture: struct
    v4l2_capability is driver[16], card[32], bus_info[32], then version, capabilities and device_caps
    (u32); a capture node has V4L2_CAP_VIDEO_CAPTURE (0x1) or _MPLANE (0x1000) in the node's caps
    (device_caps when V4L2_CAP_DEVICE_CAPS, 0x80000000, is set). None when it cannot be asked."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        raw = bytearray(104)
        fcntl.ioctl(fd, 0x80685600, raw)
    except OSError:
        return None
    finally:
        os.close(fd)
    capabilities, device_caps = struct.unpack_from("<II", raw, 84)
    caps = device_caps if capabilities & 0x80000000 else capabilities
    card = bytes(raw[16:48]).split(b"\0", 1)[0].decode("utf-8", "replace")
    return bool(caps & 0x1001), card


def video_message(paths):
    """What doctor says of readable video nodes: the cameras counted and named, the others counted."""
    cameras = []
    for path in paths:
        found = query_capture(path)
        if found and found[0]:
            cameras.append(f"{path} ({found[1]})" if found[1] else path)
    others = len(paths) - len(cameras)
    if not cameras:
        return f"no cameras (/dev/video*: {others} video node{'' if others == 1 else 's'}, none a video capture device)"
    count = "1 camera" if len(cameras) == 1 else f"{len(cameras)} cameras"
    rest = "" if others == 0 else ("; 1 other video node is not a camera" if others == 1
                                    else f"; {others} other video nodes are not cameras")
    return f"{count} readable: {', '.join(cameras)}{rest}"


def zbar_version():
    import ctypes
    lib = ctypes.CDLL("libzbar.so.0")
    major, minor, patch = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
    lib.zbar_version(ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch))
    return f"ZBar {major.value}.{minor.value}.{patch.value}"


def adapter_power(name):
    props = bluez_objects().get(f"/org/bluez/{name}", {}).get("org.bluez.Adapter1", {})
    return str(props.get("PowerState", "")), bool(props.get("Powered", False))


def rfkill_soft(name):
    """The soft state of the rfkill switch the kernel gave adapter NAME (its /sys rfkillN)."""
    base = f"/sys/class/bluetooth/{name}"
    switches = [e for e in os.listdir(base) if e.startswith("rfkill")]
    equal(len(switches), 1, f"rfkill switches of {name}")
    with open(os.path.join(base, switches[0], "soft")) as f:
        return f.read().strip()


def doctor(ctx):
    """capture doctor on a real host: bluetoothd 5.66 (its version from its own binary), the kernel's
    AF_BLUETOOTH, both adapters powered: exit 0. Then rfkill blocks Bluetooth: both adapters fail
    with `rfkill unblock bluetooth` (exit 32), and discover names that cause in its one error line.
    rfkill is unblocked after, whatever happened."""
    state_path = os.path.join(ctx.state, "capture", "devices.json")
    pid = STACK["bluetoothd"].pid
    inputs = sorted(p for p in os.listdir("/dev/input") if p.startswith("event")) if os.path.isdir("/dev/input") else []
    serial = sorted(f"/dev/{p}" for p in os.listdir("/dev") if p.startswith(("ttyUSB", "ttyACM", "rfcomm")))
    video = sorted(f"/dev/{p}" for p in os.listdir("/dev") if p.startswith("video"))
    host_rows = [
        {"check": "kernel-bluetooth", "code": None, "fix": None, "message": "AF_BLUETOOTH sockets available",
         "status": "ok", "subject": None},
        node_row("input", [f"/dev/input/{p}" for p in inputs], os.R_OK, lambda n: f"{n} input devices readable" if n != 1 else "1 input device readable",
                 "no input devices (/dev/input/event*)"),
        node_row("serial", serial, os.R_OK | os.W_OK, lambda n: f"{n} serial devices readable" if n != 1 else "1 serial device readable", "no serial devices"),
        node_row("video", video, os.R_OK, lambda n: video_message(video), "no cameras (/dev/video*)"),
        {"check": "state-file", "code": None, "fix": None, "message": "no state file yet", "status": "ok",
         "subject": state_path},
        {"check": "zbar", "code": None, "fix": None, "message": zbar_version(), "status": "ok", "subject": None},
    ]
    version = subprocess.run(["/usr/libexec/bluetooth/bluetoothd", "--version"], capture_output=True, text=True)
    equal(version.stdout.strip(), "5.66", "bluetoothd --version")

    def bus_rows(adapters):
        return [
            {"check": "system-bus", "code": None, "fix": None, "message": None, "status": "ok", "subject": None},
            {"check": "bluetoothd", "code": None, "fix": None, "message": f"bluetoothd 5.66 is running (pid {pid})",
             "status": "ok", "subject": None},
        ] + adapters + [
            {"check": "bluez-permission", "code": None, "fix": None, "message": "this user may talk to org.bluez",
             "status": "ok", "subject": None}]

    def check_rows(rows, expected):
        zxing = rows[-1]
        equal({k: zxing[k] for k in DOCTOR_KEYS if k != "message"},
              {"check": "zxing", "code": None, "fix": None, "status": "ok", "subject": None}, "zxing row")
        check(zxing["message"].startswith("zxing-cpp ") and all(
            part.isdigit() for part in zxing["message"].split(" ", 1)[1].split(".")), f"zxing row {zxing}")
        for index, (got, want) in enumerate(zip(rows[:-1], expected)):
            if want.get("message") is None:  # a message the contract leaves open: non-empty, and checked below
                check(isinstance(got["message"], str) and got["message"], f"row {index} message {got}")
                want = dict(want, message=got["message"])
            equal(got, want, f"doctor row {index}")
        equal(len(rows), len(expected) + 1, "doctor rows")

    adapters_ok = [
        {"check": "adapter", "code": None, "fix": None, "message": f"{name} {address}, powered", "status": "ok",
         "subject": name} for name, address in (("hci0", ctx.host), ("hci1", ctx.scanner))]
    document, done = doctor_rows(ctx, expect=0)
    check_rows(document["checks"], bus_rows(adapters_ok) + host_rows)
    # No DBUS_SYSTEM_BUS_ADDRESS here: libdbus's default system bus, which Debian's dbus puts in /run
    # (/var/run is a link to it).
    check(document["checks"][0]["message"] in (
        "unix:path=/run/dbus/system_bus_socket (system bus reachable)",
        "unix:path=/var/run/dbus/system_bus_socket (system bus reachable)"), f"system-bus row {document['checks'][0]}")
    equal((document["error"], document["failures"], document["warnings"]), (None, 0, 0), "error, failures, warnings")
    equal(done.stderr, "", "doctor stderr")
    plain = ctx.run(["doctor"], expect=0)
    equal(plain.stdout.splitlines()[1], f"ok bluetoothd: bluetoothd 5.66 is running (pid {pid})", "plain bluetoothd row")
    equal(ctx.run(["-q", "doctor"], expect=0).stdout, "", "doctor -q with nothing wrong")

    errors = []
    try:
        subprocess.run(["rfkill", "block", "bluetooth"], check=True)
        ctx.log("$ rfkill block bluetooth")
        wait(lambda: all(rfkill_soft(n) == "1" and not adapter_power(n)[1] for n in ("hci0", "hci1")), 20,
             "both adapters blocked and powered off")
        props = bluez_objects().get("/org/bluez/hci0", {}).get("org.bluez.Adapter1", {})
        ctx.log(f"  hci0 Adapter1 while blocked: Powered {bool(props.get('Powered'))}, PowerState "
                f"{str(props.get('PowerState', '(not exported)'))}")
        # hci0 is the adapter the commands use without --adapter: its block fails; hci1's only warns.
        blocked = [
            {"check": "adapter", "code": -32, "fix": UNBLOCK, "message": None, "status": status, "subject": name}
            for name, status in (("hci0", "failure"), ("hci1", "warning"))]
        document, done = doctor_rows(ctx, expect=32)
        rows = document["checks"]
        check_rows(rows, bus_rows(blocked) + host_rows)
        first = rows[2]
        check("rfkill" in first["message"], f"the blocked adapter's message names rfkill: {first}")
        message = f"doctor: 1 check failed; the first: adapter hci0: {first['message']}"
        equal(document["error"], {"code": -32, "message": message, "name": "ESKT_NOTAVAILABLE"}, "doctor error")
        equal((document["failures"], document["warnings"]), (1, 1), "failures, warnings")
        equal(done.stderr, f"capture: ESKT_NOTAVAILABLE (-32): {message}\n", "doctor stderr")
        plain = ctx.run(["doctor"], expect=32)
        equal(plain.stdout.splitlines()[2], f"failure adapter hci0: {first['message']}; fix: {UNBLOCK}",
              "plain adapter row")
        # The commands that need the adapter say the same cause and fix in their one line (each is
        # checked; the failures are reported together once rfkill is unblocked again).
        suffix = f": {first['message']}; fix: {UNBLOCK}{CAUSE_SUFFIX}"
        for args in (["discover", "--le", "--timeout", "2s"], ["discover", "--classic", "--timeout", "2s"],
                     ["--timeout", "5s", "connect", ctx.scanner, "--classic"]):
            failed = ctx.run(args, expect=None)
            lines = failed.stderr.splitlines()
            if failed.returncode != 32 or len(lines) != 1 or not (
                    lines[0].startswith("capture: ESKT_NOTAVAILABLE (-32): ") and lines[0].endswith(suffix)):
                errors.append(f"capture {' '.join(args)}: exit {failed.returncode}, stderr {failed.stderr!r}; "
                              f"expected exit 32 and one line ending {suffix!r}")
    finally:
        subprocess.run(["rfkill", "unblock", "bluetooth"], check=False)
        ctx.log("$ rfkill unblock bluetooth")
    wait(lambda: all(rfkill_soft(n) == "0" for n in ("hci0", "hci1")), 20, "both adapters unblocked")
    import dbus
    for name in ("hci0", "hci1"):
        if not adapter_power(name)[1]:
            set_adapter(name, Powered=dbus.Boolean(True))
    doctor_rows(ctx, expect=0)
    if errors:
        raise Failure("; ".join(errors))


# The camera scenarios (camera.py: vivid looped from its output node to its capture node).

QR_CODE = {"id": 38, "name": "QR Code"}
DATA_MATRIX = {"id": 16, "name": "Data Matrix"}
EAN13 = {"id": 19, "name": "EAN 13"}
# The frames vm.py draws (FRAMES there): name -> (text, data source) that capture must report.
FRAME_CODES = {
    "qr-640": ("capture vm tier: QR Code", QR_CODE),
    "qr2-640": ("capture vm tier: another QR Code", QR_CODE),
    "dm-640": ("capture vm tier: Data Matrix", DATA_MATRIX),
    "c128-640": ("CAPTURE-VM-128", CODE128),
    "ean-640": ("4006381333931", EAN13),
    "qr-1280": ("capture vm tier: QR Code at 720p", QR_CODE),
    "ean-1280": ("9780201379624", EAN13),
}
EXIT_TIMED_OUT = 42
EXIT_NOT_AVAILABLE = 32


class Camera:
    """vivid loaded and looped at W×H in `fourcc`, and the writer of its output node."""

    def __init__(self, ctx, width=640, height=480, fourcc="GREY", multiplanar=False, nodes=None):
        """`nodes`: vivid's (capture, output), loaded already and streamed from by a reader that opened
        the capture node as it came back: the loop follows the capture node's own size and format."""
        self.ctx = ctx
        if nodes:
            self.capture, self.output = nodes
            width, height, fourcc = camera.capture_format(self.capture, ctx.log)
        else:
            self.capture, self.output = camera.load(ctx.log, multiplanar=multiplanar)
        line, size = camera.configure(self.capture, self.output, width, height, fourcc, ctx.log,
                                      streaming=nodes is not None)
        # vm.py draws the frames of each size as NAME-WIDTH.pgm.
        directory = os.path.join(ctx.share, "frames")
        frames = {name[:-4]: os.path.join(directory, name) for name in os.listdir(directory)
                  if name.endswith(f"-{width}.pgm")}
        self.width, self.height, self.multiplanar, self.paths = width, height, multiplanar, frames
        self.writer = camera.Writer(self.output, frames, width, height, fourcc, line, size, ctx.log,
                                    multiplanar=multiplanar)
        self.suffix = str(width)
        ctx.log(f"  (vivid: capture {self.capture}, output {self.output}, {width}x{height} {fourcc}, "
                f"{line} bytes a line, {size} a frame)")
        ctx.cleanups.append(self.close)

    def reconfigure(self, fourcc):
        """The loop in another pixel format: both sides set again, a new writer for it."""
        self.writer.close()
        line, size = camera.configure(self.capture, self.output, self.width, self.height, fourcc, self.ctx.log)
        self.writer = camera.Writer(self.output, self.paths, self.width, self.height, fourcc, line, size,
                                    self.ctx.log, multiplanar=self.multiplanar)

    def show(self, name):
        self.ctx.log(f"  (in view: {name})")
        self.writer.show(name)

    def close(self):
        self.writer.close()
        camera.unload(self.ctx.log)


def decoded(events):
    return [(e["text"], e["dataSource"]) for e in events if e.get("event") == "decodedData"]


def read_in_view(ctx, cam, shown, args=(), count=None):
    """listen --camera with `shown` put in view one after the other, each once the one before it was
    reported (so "a new code at once" is what moves it on); returns the decodedData (text, data
    source) pairs and the events."""
    count = len(shown) if count is None else count
    cam.show(f"blank-{cam.suffix}")
    process, out, err = ctx.start_capture(
        ["--json", "listen", "--camera", cam.capture, "--count", str(count), *args])
    for index, name in enumerate(shown):
        cam.show(name)
        wait_output(out, lambda text, n=index + 1: text.count('"decodedData"') >= n, 120,
                    f"decodedData #{index + 1} ({name})")
    code, stdout, stderr = finish(ctx, process, out, err, 60)
    equal(code, 0, "listen --camera --count exit status")
    events = json_lines(stdout)
    return decoded(events), events


def camera_symbologies(ctx):
    """640×480 GREY: QR Code, Data Matrix, Code 128 and EAN-13 put in view one after the other are
    each reported once, with their data source, as soon as they are in view."""
    cam = Camera(ctx)
    names = ["qr-640", "dm-640", "c128-640", "ean-640"]
    codes, events = read_in_view(ctx, cam, names)
    equal(codes, [FRAME_CODES[n] for n in names], "the codes read, in order")
    equal([e["event"] for e in events],
          ["deviceArrival"] + ["decodedData"] * 4 + ["deviceRemoval"], "the events")


def camera_720p(ctx):
    """1280×720 GREY: a QR Code and an EAN-13 from a 720p camera."""
    cam = Camera(ctx, 1280, 720)
    names = ["qr-1280", "ean-1280"]
    codes, _ = read_in_view(ctx, cam, names)
    equal(codes, [FRAME_CODES[n] for n in names], "the codes read at 720p")


def camera_held(ctx):
    """The repeat rule on a real camera: a code held in view for 3 s (three times the rule's 1 s) is
    reported once; another code is reported at once (the marker that the held one's frames were all
    decoded without a repeat); the first code, back after 3 s out of sight, is reported again."""
    cam = Camera(ctx)
    cam.show("blank-640")
    process, out, err = ctx.start_capture(["--json", "listen", "--camera", cam.capture, "--count", "3"])
    cam.show("qr-640")
    wait_output(out, lambda text: text.count('"decodedData"') >= 1, 120, "the first read")
    time.sleep(3)  # the product's rule is about time in view: holding it is the test
    cam.show("qr2-640")
    wait_output(out, lambda text: text.count('"decodedData"') >= 2, 120, "the second code")
    cam.show("blank-640")
    time.sleep(3)
    cam.show("qr-640")
    code, stdout, _ = finish(ctx, process, out, err, 120)
    equal(code, 0, "listen --count 3 exit status")
    equal([c[0] for c in decoded(json_lines(stdout))],
          [FRAME_CODES["qr-640"][0], FRAME_CODES["qr2-640"][0], FRAME_CODES["qr-640"][0]],
          "held once, the next at once, the first again after it was out of sight")


def camera_signals(ctx):
    """listen --camera without --count: SIGTERM after a read ends it with 0, the read printed once
    and the device's removal last."""
    cam = Camera(ctx)
    cam.show("qr-640")
    process, out, err = ctx.start_capture(["--json", "listen", "--camera", cam.capture])
    wait_output(out, lambda text: '"decodedData"' in text, 120, "the read")
    process.terminate()
    code, stdout, _ = finish(ctx, process, out, err, 60)
    equal(code, 0, "exit status after SIGTERM")
    events = json_lines(stdout)
    equal([e["event"] for e in events], ["deviceArrival", "decodedData", "deviceRemoval"], "the events")


def camera_timeout(ctx):
    """listen --camera --timeout 3s in front of a blank picture: nothing decoded, exit 42."""
    cam = Camera(ctx)
    cam.show("blank-640")
    done = ctx.run(["--json", "listen", "--camera", cam.capture, "--timeout", "3s"], expect=EXIT_TIMED_OUT)
    equal(decoded(json_lines(done.stdout)), [], "codes read from a blank picture")


def camera_trigger(ctx):
    """trigger socketcam start --camera: one read, then it returns (exit 0) with that code."""
    cam = Camera(ctx)
    cam.show("dm-640")
    done = ctx.run(["--json", "trigger", "socketcam", "start", "--camera", cam.capture, "--timeout", "60s"])
    equal(decoded(json_lines(done.stdout)), [FRAME_CODES["dm-640"]], "trigger's read")


# Every uncompressed format capture reads (V4L2Camera.PixelFormat), by fourcc. MJPEG is not here:
# vivid has no compressed format (its decoding is tested on the host with a real JPEG stream).
CAMERA_FORMATS = ["GREY", "NV12", "NV21", "NV16", "NV61", "YU12", "YV12", "422P", "YUYV", "YVYU", "UYVY",
                  "VYUY", "RGB3", "BGR3"]


def read_format(ctx, cam, fourcc, name):
    """vivid's loop switched to `fourcc` (both sides; a new writer for the new frame size), `name` in
    view, and one `listen --camera --camera-format FOURCC --count 1` read of it."""
    cam.reconfigure(fourcc)
    cam.show(name)
    done = ctx.run(["--json", "listen", "--camera", cam.capture, "--camera-format", fourcc, "--count", "1",
                    "--timeout", "120s"])
    equal(decoded(json_lines(done.stdout)), [FRAME_CODES[name]], f"the code read in {fourcc}")
    shown = camera.run(["v4l2-ctl", "-d", cam.capture, "--get-fmt-video"], ctx.log).stdout
    check(f"'{fourcc}'" in shown, f"capture used {fourcc}: {shown}")


def camera_formats(ctx):
    """Each pixel format, forced with --camera-format: the luma plane of the planar YUV formats, the
    even or odd bytes of the packed 4:2:2 ones, RGB's luma; and without --camera-format capture takes
    GREY, the cheapest (one byte a pixel, copied as it is) of the formats vivid offers."""
    cam = Camera(ctx)
    for index, fourcc in enumerate(CAMERA_FORMATS):
        read_format(ctx, cam, fourcc, "qr-640" if index % 2 == 0 else "qr2-640")
    cam.reconfigure("GREY")
    cam.show("dm-640")
    done = ctx.run(["--json", "listen", "--camera", cam.capture, "--count", "1", "--timeout", "120s"])
    equal(decoded(json_lines(done.stdout)), [FRAME_CODES["dm-640"]], "the code read in the format chosen")


def camera_multiplanar(ctx):
    """A multi-planar device (vivid multiplanar=2: VIDEO_CAPTURE_MPLANE, as SoC and MIPI cameras are):
    read through the multi-planar API in one-plane formats."""
    cam = Camera(ctx, multiplanar=True)
    for fourcc, name in [("NV12", "qr-640"), ("YUYV", "dm-640"), ("GREY", "qr2-640")]:
        read_format(ctx, cam, fourcc, name)


def camera_busy(ctx):
    """A camera another program streams from: one line naming it busy, exit 32."""
    cam = Camera(ctx)
    cam.show("qr-640")
    process, out, err = ctx.start_capture(["--json", "listen", "--camera", cam.capture])
    wait_output(out, lambda text: '"decodedData"' in text, 120, "the first reader's read")
    done = ctx.run(["listen", "--camera", cam.capture, "--count", "1"], expect=EXIT_NOT_AVAILABLE)
    lines = done.stderr.splitlines()
    equal(len(lines), 1, "error lines")
    check("busy (in use by another program)" in lines[0] and cam.capture in lines[0], f"the error: {lines}")
    process.terminate()
    code, _, _ = finish(ctx, process, out, err, 60)
    equal(code, 0, "the first reader's exit status")


def fds_on(pid, path):
    """How many of process `pid`'s descriptors are open on `path`."""
    base = f"/proc/{pid}/fd"
    count = 0
    for entry in os.listdir(base):
        try:
            if os.readlink(os.path.join(base, entry)) == path:
                count += 1
        except OSError:
            pass
    return count


def camera_removal(ctx):
    """The camera unplugged while listen reads it (vivid's Disconnect control: every ioctl then fails
    with ENODEV, as after a USB unplug) and plugged in again (vivid reloaded: the node is back): a
    deviceRemoval, the descriptor closed, a deviceArrival once the node is back, and the next code read;
    SIGTERM ends it with 0."""
    cam = Camera(ctx)
    cam.show("qr-640")
    process, out, err = ctx.start_capture(["--json", "listen", "--camera", cam.capture])
    wait_output(out, lambda text: '"decodedData"' in text, 120, "the read before the unplug")
    camera.run(["v4l2-ctl", "-d", cam.capture, "-c", "disconnect=1"], ctx.log)
    wait_output(out, lambda text: '"deviceRemoval"' in text, 60, "the removal")
    camera.wait_for(lambda: fds_on(process.pid, cam.capture) == 0, 30, "capture's descriptor closed")
    cam.close()
    ctx.cleanups.remove(cam.close)
    # Plugged in again: capture, looking for the node every 250 ms, opens it as soon as it is there and
    # streams in vivid's default size (its HDMI input's DV timings), so the loop follows that.
    nodes = camera.load(ctx.log)
    wait_output(out, lambda text: text.count('"deviceArrival"') >= 2, 60, "the arrival after the replug")
    camera.wait_for(lambda: fds_on(process.pid, nodes[0]) > 0, 30, "capture's descriptor on the node again")
    cam = Camera(ctx, nodes=nodes)
    check(cam.width in (640, 1280), f"vivid's default size {cam.width}x{cam.height} has frames drawn")
    name = "qr2-640" if cam.width == 640 else "qr-1280"
    cam.show(name)
    wait_output(out, lambda text: text.count('"decodedData"') >= 2, 120, "the read after the replug")
    process.terminate()
    code, stdout, _ = finish(ctx, process, out, err, 60)
    equal(code, 0, "exit status after SIGTERM")
    events = json_lines(stdout)
    equal([e["event"] for e in events], ["deviceArrival", "decodedData", "deviceRemoval", "deviceArrival",
                                         "decodedData", "deviceRemoval"], "the events")
    equal([c[0] for c in decoded(events)], [FRAME_CODES["qr-640"][0], FRAME_CODES[name][0]], "the codes")


def camera_serve(ctx):
    """`capture serve --camera` on a real camera, driven as a CaptureJS app drives SocketCam
    (docs/capturejs.md, SocketCam with a camera; the client is Tests/Service's, over python3-websockets):
    SocketCam enabled and opened, a Start read returns the code in view as DecodedData and ends; the
    camera is open only while a read runs; a Continuous read reports each code put in view once, until
    Stop."""
    import asyncio
    os.environ["CAPTURE_BIN"] = ctx.capture
    if ctx.share not in sys.path:
        sys.path.insert(0, ctx.share)
    import serve_harness as h
    cam = Camera(ctx)
    cam.show("qr-640")
    service = h.Service(extra=["--camera", cam.capture])
    ctx.cleanups.append(service.stop)
    texts = [FRAME_CODES[n][0] for n in ["qr-640", "dm-640", "qr2-640"]]

    def camera_closed(what):
        camera.wait_for(lambda: fds_on(service.proc.pid, cam.capture) == 0, 60, what)

    async def drive():
        client = await h.EventClient(service).open()
        try:
            reply = service.set(client.handle, h.PROP_SOCKETCAM_STATUS, h.T_BYTE, 0)  # Enable
            check("error" not in reply, f"enabling SocketCam: {reply}")
            arrival = await client.arrival("SocketCam", timeout=60)
            device = await client.opendevice(arrival["event"]["value"]["guid"])
            camera_closed("the camera closed while no read runs")
            reply = service.set(device, h.PROP_TRIGGER, h.T_BYTE, 1)  # Start
            check("error" not in reply, f"Start: {reply}")
            got = await client.decoded(device, texts[0], timeout=60)
            equal(got["event"]["value"]["id"], QR_CODE["id"], "the data source of the read")
            camera_closed("the camera closed once the Start read had its code")
            cam.show("blank-640")
            reply = service.set(device, h.PROP_TRIGGER, h.T_BYTE, 5)  # Continuous
            check("error" not in reply, f"Continuous: {reply}")
            for name, text in [("dm-640", texts[1]), ("qr2-640", texts[2])]:
                cam.show(name)
                await client.decoded(device, text, timeout=60)
            reply = service.set(device, h.PROP_TRIGGER, h.T_BYTE, 2)  # Stop
            check("error" not in reply, f"Stop: {reply}")
            camera_closed("the camera closed after Stop")
            equal(client.decoded_texts(device), [t.encode() for t in texts], "the codes the app got")
        finally:
            await client.close()

    asyncio.run(drive())
    ctx.log(f"  (serve stderr: {service.stderr()[-10:]})")


def camera_not_capture(ctx):
    """The output node given as --camera: one clear line, exit 32, nothing else tried."""
    cam = Camera(ctx)
    done = ctx.run(["listen", "--camera", cam.output, "--count", "1"], expect=EXIT_NOT_AVAILABLE)
    lines = done.stderr.splitlines()
    equal(len(lines), 1, "error lines")
    check("not a video capture device" in lines[0] and cam.output in lines[0], f"the error names it: {lines}")


SCENARIOS = {
    "pairing-code": pairing_code,
    "discover-hci": discover_hci,
    "discover-bluez": discover_bluez,
    "no-serial-port": no_serial_port,
    "connect": connect,
    "listen": listen,
    "accept": accept,
    "pair": pair,
    "ble-discover": ble_discover,
    "ble-connect": ble_connect,
    "ble-get": ble_get,
    "ble-set-trigger": ble_set_trigger,
    "ble-listen": ble_listen,
    "ble-reconnect": ble_reconnect,
    "ble-controller-loss": ble_controller_loss,
    "ble-remove": ble_remove,
    "doctor": doctor,
    "camera-symbologies": camera_symbologies,
    "camera-720p": camera_720p,
    "camera-held": camera_held,
    "camera-signals": camera_signals,
    "camera-timeout": camera_timeout,
    "camera-trigger": camera_trigger,
    "camera-not-capture": camera_not_capture,
    "camera-formats": camera_formats,
    "camera-multiplanar": camera_multiplanar,
    "camera-busy": camera_busy,
    "camera-removal": camera_removal,
    "camera-serve": camera_serve,
}

# Benchmarks (bench/camera-latency.py runs them by name; never part of the test run).

def stream_lines(process):
    """A thread that stamps every line the process prints (CLOCK_MONOTONIC, as the writer's)."""
    import threading
    lines = []

    def read():
        for line in process.stdout:
            lines.append((time.monotonic(), line.rstrip("\n")))
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return lines


def cpu_seconds(pid):
    """utime + stime of a process (proc(5): fields 14 and 15, in clock ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


GST_SYMBOL = re.compile(r'\bsymbol=\(string\)("(?:[^"\\]|\\.)*"|[^,;]*)')


def gst_symbol(line):
    """The text of a zbar element message as gst-launch-1.0 -m prints it (`... (element): barcode, ...,
    symbol=(string)"capture\\ vm\\ tier:\\ QR\\ Code", ...`: GstStructure's serialization, quoted
    when it must be, every other character after a backslash itself); None for any other line."""
    match = GST_SYMBOL.search(line) if "barcode" in line else None
    if not match:
        return None
    value = match.group(1)
    if value.startswith('"'):
        value = value[1:-1]
    return re.sub(r"\\(.)", r"\1", value)


def measure_reader(ctx, cam, command, names, switches, parse=None):
    """One reader (capture or a peer) on the camera: `switches` times the other code put in view, the
    latency from its frame's queueing on the output node to the reader's line; then the CPU it uses
    while a code is held in view for 10 s (every frame decoded; capture and zbarcam print nothing then,
    the zbar element posts each frame's reading). `parse` turns a line into the text it reports (None:
    the line is the text)."""
    parse = parse or (lambda line: line)
    env = dict(os.environ, XDG_STATE_HOME=ctx.state)
    cam.show(f"blank-{cam.suffix}")
    errors = output_file()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=errors, text=True)
    ctx.captures.append(process)
    lines = stream_lines(process)
    latencies = []
    texts = {n: FRAME_CODES[n][0] for n in names}
    try:
        for index in range(switches + 1):
            name = names[index % len(names)]
            # Out of sight first, long enough for either reader to take the next code as new (capture's
            # repeat rule: 3 decoded frames spanning 1 s; ZBar's result cache is shorter).
            cam.show(f"blank-{cam.suffix}")
            time.sleep(1.5)
            seen = len(lines)
            cam.show(name)
            queued = cam.writer.queued[-1][1]
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not any(parse(t) == texts[name] for _, t in lines[seen:]):
                time.sleep(0.005)
            hit = [stamp for stamp, t in lines[seen:] if parse(t) == texts[name]]
            if not hit:
                errors.seek(0)
                shown = camera.run(["v4l2-ctl", "-d", cam.capture, "--get-fmt-video"], ctx.log).stdout
                raise Failure(f"{command[0]} did not read {name} in 60 s: {lines[seen:]}; its stderr: "
                              f"{errors.read()[-2000:]!r}; the capture format: {shown!r}")
            if index > 0:  # the first read includes the reader's start
                latencies.append(hit[0] - queued)
        before = cpu_seconds(process.pid)
        started = time.monotonic()
        time.sleep(10)
        cpu = (cpu_seconds(process.pid) - before) / (time.monotonic() - started)
    finally:
        process.terminate()
        process.wait(10)
    latencies.sort()
    return {"p50": latencies[len(latencies) // 2], "p99": latencies[min(len(latencies) - 1,
            int(len(latencies) * 0.99))], "max": latencies[-1], "samples": len(latencies),
            "cpuPerSecond": cpu}


def bench_camera(ctx):
    """capture listen --camera against two ZBar camera readers, zbarcam --raw (the host's, from the
    share) and GStreamer's v4l2src into its zbar element (the bench image's gstreamer1.0-plugins-bad), on
    the same vivid camera and frames: latency per size, and CPU while a code is held in view."""
    path = os.path.join(ctx.share, "bench-switches")
    switches = int(open(path).read()) if os.path.exists(path) else 30
    zbarcam = os.path.join(ctx.share, "zbarcam")
    # GStreamer scans its plugins into a registry on first use, minutes of emulated CPU for
    # plugins-bad: done once here, so no reader's first read waits for it.
    started = time.monotonic()
    registry = subprocess.run(["gst-inspect-1.0", "zbar"], capture_output=True, text=True, timeout=900)
    if registry.returncode != 0:
        raise Failure(f"gst-inspect-1.0 zbar failed ({registry.returncode}): {registry.stderr[-1000:]!r}")
    ctx.log(f"  GStreamer's registry built in {time.monotonic() - started:.0f} s")
    results = {}
    for (width, height), names in [((640, 480), ["qr-640", "qr2-640"]), ((1280, 720), ["qr-1280", "ean-1280"])]:
        cam = Camera(ctx, width, height)
        size = f"{width}x{height}"
        results[size] = {}
        # (name, command, what turns its line into the text it read: None for a line that is the text)
        for tool, command, parse in [("capture", [ctx.capture, "listen", "--camera", cam.capture], None),
                              # --prescale: the frame size capture keeps (the node's own); without it
                              # ZBar asks the driver for its largest (vivid scales to 16384×8640).
                              # stdbuf: zbarcam's stdout is a pipe here, block-buffered by stdio.
                              ("zbarcam", ["stdbuf", "-oL", zbarcam, "--nodisplay", "--raw",
                                           f"--prescale={width}x{height}", cam.capture], None),
                              # The node's own size and GREY, as capture reads it; the zbar element
                              # takes no GRAY8 (its caps are I420 and the other YUV layouts: "can't
                              # handle caps video/x-raw, format=GRAY8"), so videoconvert makes the
                              # frame I420 first, as a user of the element must. Its defaults: every
                              # frame scanned, cache off (a symbol is posted from the first frame it
                              # is read in); fakesink sync=false: frames are not held back to the
                              # clock after the scan. -m: element messages on stdout (not with -q,
                              # which silences them).
                              ("gst-zbar", ["stdbuf", "-oL", "gst-launch-1.0", "-m", "v4l2src",
                                            f"device={cam.capture}", "!",
                                            f"video/x-raw,format=GRAY8,width={width},height={height}", "!",
                                            "videoconvert", "!", "zbar", "!", "fakesink", "sync=false"],
                               gst_symbol)]:
            try:
                results[size][tool] = measure_reader(ctx, cam, command, names, switches, parse)
            except Failure as error:
                # The peer is measured when it reads; one that reads nothing is reported as such (Debian's
                # zbarcam 0.23.92 read nothing from vivid here: see bench/README.md), not a failed bench.
                if tool == "capture":
                    raise
                results[size][tool] = {"error": str(error)[:2000]}
            ctx.log(f"  {size} {tool}: {results[size][tool]}")
        ctx.cleanups.remove(cam.close)
        cam.close()
    with open(os.path.join(ctx.share, "bench-camera.json"), "w") as f:
        json.dump(results, f, indent=1)


BENCHES = {"bench-camera": bench_camera}


# Guest setup

def bluez_objects():
    import dbus
    bus = dbus.SystemBus()
    manager = dbus.Interface(bus.get_object("org.bluez", "/"), "org.freedesktop.DBus.ObjectManager")
    return manager.GetManagedObjects()


def device_properties(address):
    path = f"/org/bluez/hci0/dev_{address.replace(':', '_')}"
    return bluez_objects().get(path, {}).get("org.bluez.Device1", {})


def dbus_bool(value):
    import dbus
    return dbus.Boolean(value)


def set_adapter(name, **properties):
    import dbus
    bus = dbus.SystemBus()
    adapter = dbus.Interface(bus.get_object("org.bluez", f"/org/bluez/{name}"), "org.freedesktop.DBus.Properties")
    for key, value in properties.items():
        adapter.Set("org.bluez.Adapter1", key, value)


STACK = {"btvirt": None, "bluetoothd": None, "runs": 0}


def start_stack(share):
    """btvirt's two controllers and bluetoothd, new: every scenario starts with them. Stopping btvirt
    removes its controllers, which drops every link and all kernel state about them; bluetoothd
    starts with /var/lib/bluetooth empty. (Reusing them, a scenario after one that paired or
    connected saw links between hci0 and hci1 that no longer completed: see README.md.)
    Returns the addresses of hci0 and hci1."""
    import dbus
    for name in ["bluetoothd", "btvirt"]:
        old = STACK[name]
        if old is not None:
            old.terminate()
            try:
                old.wait(10)
            except subprocess.TimeoutExpired:
                old.kill()
                old.wait()
    wait(lambda: not any(os.path.exists(f"/sys/class/bluetooth/hci{i}") for i in (0, 1)), 30,
         "the old controllers gone")
    subprocess.run("rm -rf /var/lib/bluetooth/*", shell=True, check=True)
    STACK["runs"] += 1
    logs = os.path.join(share, "logs")
    btvirt_log = open(os.path.join(logs, "btvirt.log"), "a")
    STACK["btvirt"] = subprocess.Popen(["btvirt", "-l2"], stdout=btvirt_log, stderr=subprocess.STDOUT)
    wait(lambda: all(os.path.exists(f"/sys/class/bluetooth/hci{i}") for i in (0, 1)), 30, "btvirt's controllers")
    debug = ["-d"] if os.path.exists(os.path.join(share, "debug")) else []
    log = open(os.path.join(logs, "bluetoothd.log"), "a")
    log.write(f"--- bluetoothd run {STACK['runs']}\n")
    log.flush()
    STACK["bluetoothd"] = subprocess.Popen(["/usr/libexec/bluetooth/bluetoothd", "-n", *debug], stdout=log,
                                           stderr=subprocess.STDOUT)

    wait(both_adapters, 60, "bluetoothd's adapters")
    set_adapter("hci0", Alias=dbus.String(HOST_NAME), Powered=dbus.Boolean(True), Pairable=dbus.Boolean(True))
    set_adapter("hci1", Alias=dbus.String(SCANNER_NAME), Powered=dbus.Boolean(True),
                Pairable=dbus.Boolean(True), DiscoverableTimeout=dbus.UInt32(0), Discoverable=dbus.Boolean(True))
    objects = bluez_objects()
    return (str(objects["/org/bluez/hci0"]["org.bluez.Adapter1"]["Address"]),
            str(objects["/org/bluez/hci1"]["org.bluez.Adapter1"]["Address"]))


def both_adapters():
    """bluetoothd shows hci0 and hci1 (False while it is not on the bus yet)."""
    import dbus
    try:
        objects = bluez_objects()
    except dbus.DBusException:
        return False
    return all(f"/org/bluez/hci{i}" in objects for i in (0, 1))


def restart_controllers(ctx):
    """btvirt stopped and started again with bluetoothd running: both controllers go (bluetoothd drops
    their adapters and devices) and come back with the same addresses; bluetoothd loads the bonds it
    stored. hci0 is powered again for capture."""
    import dbus
    started = time.monotonic()
    old = STACK["btvirt"]
    old.terminate()
    try:
        old.wait(10)
    except subprocess.TimeoutExpired:
        old.kill()
        old.wait()
    wait(lambda: not any(os.path.exists(f"/sys/class/bluetooth/hci{i}") for i in (0, 1)), 30,
         "the old controllers gone")
    btvirt_log = open(os.path.join(ctx.share, "logs", "btvirt.log"), "a")
    STACK["btvirt"] = subprocess.Popen(["btvirt", "-l2"], stdout=btvirt_log, stderr=subprocess.STDOUT)

    wait(both_adapters, 60, "bluetoothd's adapters again")
    set_adapter("hci0", Alias=dbus.String(HOST_NAME), Powered=dbus.Boolean(True), Pairable=dbus.Boolean(True))
    ctx.log(f"  (controllers restarted in {time.monotonic() - started:.1f} s)")


def loopback_up():
    """The loopback interface up (the VM has no network and init brings up nothing): camera-serve's
    client talks to `capture serve` on 127.0.0.1. SIOCGIFFLAGS/SIOCSIFFLAGS (netdevice(7)) with
    IFF_UP, struct ifreq as its name (16 bytes) and the flags (a short)."""
    import socket
    import struct
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", fcntl.ioctl(s, 0x8913, request))[1]
        fcntl.ioctl(s, 0x8914, struct.pack("16sH14s", b"lo", flags | 0x1, b""))


def setup(share, log):
    import dbus
    loopback_up()
    logs = os.path.join(share, "logs")
    os.makedirs(logs, exist_ok=True)
    os.makedirs("/run/dbus", exist_ok=True)
    os.makedirs("/var/lib/bluetooth", exist_ok=True)
    with open("/etc/bluetooth/main.conf", "w") as f:
        f.write(f"[General]\nClass = 0x{SCANNER_CLASS_OF_DEVICE:06x}\nDiscoverableTimeout = 0\n"
                "PairableTimeout = 0\n"
                # No SDP browse back from the scanner side after pairing: a second L2CAP link torn
                # down in the same kernel while the host disconnects hit a kernel list corruption in
                # hci_chan_del (Debian 6.1.0-57, l2cap_sock_release), killing bluetoothd.
                "ReverseServiceDiscovery = false\n"
                # SSP "just works" between hci0 (capture's sockets ask no bonding) and hci1 can leave a
                # stored link key on one side only; the next link then re-pairs, which bluetoothd
                # rejects by default (EACCES for capture). A scanner that accepts a new pairing:
                "JustWorksRepairing = always\n")
    subprocess.run(["dbus-daemon", "--system", "--fork"], check=True)
    host, scanner = start_stack(share)
    log(f"hci0 {host} ({HOST_NAME}), hci1 {scanner} ({SCANNER_NAME})")
    return host, scanner


def output_file():
    """A file a background process writes and the scenario reads while it runs. The child shares the
    file's open description, so its offset too: without O_APPEND, a write that lands between the
    scenario's seek(0) and read() goes to offset 0, over the first lines (seen under load: the first
    deviceArrival overwritten by the second, so a count of two was never reached). With O_APPEND
    (open(2): the offset is moved to the end before each write) the child always writes at the end."""
    file = tempfile.TemporaryFile(mode="w+", errors="replace")
    flags = fcntl.fcntl(file.fileno(), fcntl.F_GETFL)
    fcntl.fcntl(file.fileno(), fcntl.F_SETFL, flags | os.O_APPEND)
    return file


def rfcomm_listening(channel):
    """Whether a socket listens on RFCOMM `channel`: the kernel's debugfs list of RFCOMM sockets
    (net/bluetooth/rfcomm/sock.c, rfcomm_sock_debugfs_show: "src dst state channel"), state 4 being
    BT_LISTEN (include/net/bluetooth/bluetooth.h)."""
    path = "/sys/kernel/debug/bluetooth/rfcomm"
    if not os.path.exists(path):
        subprocess.run(["mount", "-t", "debugfs", "debugfs", "/sys/kernel/debug"], check=True)
    with open(path) as f:
        rows = [line.split() for line in f]
    return any(len(row) == 4 and row[2] == "4" and row[3] == str(channel) for row in rows)


def wait(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise Failure(f"{what} not there after {seconds} s")


def links_down(ctx=None):
    """Waits (up to 20 s) until bluetoothd shows no device connected: the last command's ACL link
    is gone, as it would be between a user's commands."""
    def idle():
        return not any(bool(i["org.bluez.Device1"].get("Connected")) for i in bluez_objects().values()
                       if "org.bluez.Device1" in i)

    started = time.monotonic()
    try:
        wait(idle, 20, "no connected devices")
    except Failure:
        pass
    if ctx:
        ctx.log(f"  (links down after {time.monotonic() - started:.1f} s)")


def guest(share):
    results = {"scenarios": {}}
    setup_log = []

    def log(line):
        setup_log.append(line)
        print(line, flush=True)

    started = time.monotonic()
    with open(os.path.join(share, "scenarios")) as f:
        names = [n for n in f.read().split() if n]
    try:
        host, scanner = setup(share, log)
    except Exception:
        results["setupError"] = traceback.format_exc()
        print(results["setupError"], flush=True)
        write_results(share, results)
        return 2
    results["setupSeconds"] = time.monotonic() - started
    failed = 0
    for index, name in enumerate(names):
        key = name if name not in names[:index] else f"{name}#{names[:index].count(name) + 1}"
        lines = []
        ctx = Context(share, lambda line: lines.append(line))
        ctx.host, ctx.scanner = host, scanner
        ctx.state = tempfile.mkdtemp(prefix=f"state-{name}-")
        began = time.monotonic()
        error = None
        try:
            # The camera scenarios need no Bluetooth: they run on the stack as it is.
            if index > 0 and not name.startswith(("camera-", "bench-camera")):
                ctx.host, ctx.scanner = start_stack(share)
            {**SCENARIOS, **BENCHES}[name](ctx)
        except Exception as e:
            error = f"{type(e).__name__}: {e}" if isinstance(e, Failure) else traceback.format_exc()
        finally:
            ctx.stop_all()
        seconds = time.monotonic() - began
        if error:
            failed += 1
            lines.append(f"FAILED: {error}")
        results["scenarios"][key] = {"passed": error is None, "seconds": seconds, "error": error,
                                      "log": "\n".join(lines)}
        print(f"{'PASS' if error is None else 'FAIL'} {key} ({seconds:.1f} s)", flush=True)
        print("\n".join("    " + line for line in lines), flush=True)
        write_results(share, results)
    return 1 if failed else 0


def write_results(share, results):
    partial = os.path.join(share, "results.json.part")
    with open(partial, "w") as f:
        json.dump(results, f, indent=1)
    os.replace(partial, os.path.join(share, "results.json"))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--guest":
        sys.exit(guest(sys.argv[2]))
    print(__doc__)
    sys.exit(2)
