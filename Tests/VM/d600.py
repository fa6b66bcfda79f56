#!/usr/bin/python3
"""A Socket Mobile D600 (pairing-required variant) as a BLE peripheral on the VM's second controller.

    d600.py --adapter hci1 [--battery 73]

Modelled from the public facts in docs/device-protocols.md §2 (not from capture's driver), through
bluetoothd's own peripheral APIs (BlueZ doc/org.bluez.GattManager.rst, org.bluez.LEAdvertisingManager.rst,
org.bluez.GattCharacteristic.rst, org.bluez.LEAdvertisement.rst):

- GATT (docs/device-protocols.md §2.2): the scanner service 6CB501B7-…-D7535F153CF0 with scan data (CE3E81B8…, notify and
  indicate), scan control (833A2364…, write with response); the device-configuration service
  7A4385C9-…-16D68FC588CA with config I/O (1254FC72…, write with response, answers notified); Battery
  (0x180F, level 0x2A19: read, notify, one byte percent); Device Information (0x180A: 0x2A29, 0x2A24,
  0x2A25, 0x2A26, 0x2A28). GAP (0x1800) and GATT (0x1801) are bluetoothd's own; GAP's device name is the
  adapter's alias, set here to the advertised name.
- Advertising (§2.1): the scanner service UUID and the name `Socket D600 [XXXXXX]`, XXXXXX the last six
  hex digits of the address (the published example record; that the brackets come from the address is
  the reference's "probably").
- Config channel (§2.6): blocks decoded by the TS/SC-NET rule (byte 0 = payload bytes + 1, | 0x20 when
  more follow; continuations | 0x80, | 0x40 on even k; AXM's one-higher first count is taken too, §2.9);
  every complete command is answered on the same characteristic with a first block `01 00` (status
  0x00 = success, no data; the facts give no length rule for answers, so the count follows the
  commands' rule).
- Scan data (§2.3, §2.4): sent only in scanner mode (config AE 07, written after each connect as every
  public client does) while a central has notifications on; a frame is the two-hex-digit tag family, the
  payload and one 0x00 terminator, cut into 20-byte notifications (the default ATT MTU's payload), so a
  frame longer than 19 bytes spans notifications.

The facts give no values for Device Information, and do not say whether the D600's characteristics
demand an encrypted link: the values below are this model's, and no attribute needs encryption (capture
pairs the pairing-required variant anyway, as AXM does).

The test drives it on stdin, one command a line, and reads what it did on stdout:
    read FAMILY TEXT    one tag read: FAMILY (two hex digits, e.g. 4F) + TEXT + 00
    battery N           a new battery level (notified when a central subscribed)
    drop SECONDS        link loss: advertising stops, the central's link is cut, and SECONDS later the
                        device advertises again (out of range and back)
It prints "ready ADDRESS NAME" once registered, then one line per thing that happened. When the
controller goes away and comes back (btvirt restarted), it registers again and prints "ready again".
"""

import argparse
import signal
import subprocess
import sys
import time

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

BLUEZ = "org.bluez"
OBJECT_MANAGER = "org.freedesktop.DBus.ObjectManager"
PROPERTIES = "org.freedesktop.DBus.Properties"
SERVICE_IFACE = "org.bluez.GattService1"
CHARACTERISTIC_IFACE = "org.bluez.GattCharacteristic1"
ADVERTISEMENT_IFACE = "org.bluez.LEAdvertisement1"
ROOT = "/d600"
AGENT_PATH = "/d600/agent"

# docs/device-protocols.md §2.2, pairing-required (bonded) forms.
SCANNER_SERVICE = "6cb501b7-96f6-4eef-acb1-d7535f153cf0"
SCAN_DATA = "ce3e81b8-d871-4613-ba78-5ffc0b1520a6"
SCAN_CONTROL = "833a2364-bca0-4647-8113-478e1fc449ba"
CONFIG_SERVICE = "7a4385c9-f7c7-4e22-9afd-16d68fc588ca"
CONFIG_IO = "1254fc72-336e-4bb2-a0a8-71c7d28d73ce"


def short(uuid16):
    return f"0000{uuid16:04x}-0000-1000-8000-00805f9b34fb"


# docs/device-protocols.md §2.6: AE = operating mode, 07 = scanner ("RFID") mode.
OPERATING_MODE = 0xAE
SCANNER_MODE = 0x07
# The default ATT MTU is 23: 20 bytes of value per notification.
NOTIFICATION_SIZE = 20


def say(line):
    print(line, flush=True)


def hexbytes(data):
    return " ".join(f"{b:02x}" for b in data)


class Characteristic(dbus.service.Object):
    def __init__(self, bus, service, index, uuid, flags, value=b"", on_write=None, on_notify=None):
        self.path = f"{service.path}/char{index}"
        self.uuid = uuid
        self.service = service
        self.flags = flags
        self.value = bytes(value)
        self.on_write = on_write
        self.on_notify = on_notify
        self.notifying = False
        super().__init__(bus, self.path)

    def properties(self):
        return {CHARACTERISTIC_IFACE: {
            "UUID": dbus.String(self.uuid), "Service": dbus.ObjectPath(self.service.path),
            "Flags": dbus.Array(self.flags, signature="s"),
            "Value": dbus.Array(self.value, signature="y"),
        }}

    @dbus.service.method(PROPERTIES, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return self.properties().get(interface, {})

    @dbus.service.method(CHARACTERISTIC_IFACE, in_signature="a{sv}", out_signature="ay")
    def ReadValue(self, options):
        offset = int(options.get("offset", 0))
        return dbus.Array(self.value[offset:], signature="y")

    @dbus.service.method(CHARACTERISTIC_IFACE, in_signature="aya{sv}", out_signature="")
    def WriteValue(self, value, options):
        data = bytes(value)
        say(f"write {self.uuid} {hexbytes(data)}")
        if self.on_write:
            self.on_write(data)

    @dbus.service.method(CHARACTERISTIC_IFACE, in_signature="", out_signature="")
    def StartNotify(self):
        self.notifying = True
        say(f"notify on {self.uuid}")
        if self.on_notify:
            self.on_notify(True)

    @dbus.service.method(CHARACTERISTIC_IFACE, in_signature="", out_signature="")
    def StopNotify(self):
        self.notifying = False
        say(f"notify off {self.uuid}")
        if self.on_notify:
            self.on_notify(False)

    @dbus.service.signal(PROPERTIES, signature="sa{sv}as")
    def PropertiesChanged(self, interface, changed, invalidated):
        pass

    def notify(self, data):
        """One notification (or indication): bluetoothd sends a value change of a characteristic a
        central subscribed to (doc/org.bluez.GattCharacteristic.rst, server role)."""
        self.value = bytes(data)
        self.PropertiesChanged(CHARACTERISTIC_IFACE, {"Value": dbus.Array(self.value, signature="y")}, [])


class Service(dbus.service.Object):
    def __init__(self, bus, index, uuid):
        self.path = f"{ROOT}/service{index}"
        self.uuid = uuid
        self.characteristics = []
        super().__init__(bus, self.path)

    def add(self, bus, uuid, flags, **kwargs):
        c = Characteristic(bus, self, len(self.characteristics), uuid, flags, **kwargs)
        self.characteristics.append(c)
        return c

    def properties(self):
        return {SERVICE_IFACE: {"UUID": dbus.String(self.uuid), "Primary": dbus.Boolean(True)}}

    @dbus.service.method(PROPERTIES, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return self.properties().get(interface, {})


class Application(dbus.service.Object):
    def __init__(self, bus):
        self.services = []
        super().__init__(bus, ROOT)

    @dbus.service.method(OBJECT_MANAGER, out_signature="a{oa{sa{sv}}}")
    def GetManagedObjects(self):
        objects = {}
        for service in self.services:
            objects[dbus.ObjectPath(service.path)] = service.properties()
            for c in service.characteristics:
                objects[dbus.ObjectPath(c.path)] = c.properties()
        return objects


class Advertisement(dbus.service.Object):
    def __init__(self, bus, name):
        self.path = f"{ROOT}/advertisement"
        self.name = name
        super().__init__(bus, self.path)

    @dbus.service.method(PROPERTIES, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        if interface != ADVERTISEMENT_IFACE:
            return {}
        return {
            "Type": dbus.String("peripheral"),
            "ServiceUUIDs": dbus.Array([SCANNER_SERVICE], signature="s"),
            "LocalName": dbus.String(self.name),
            "Discoverable": dbus.Boolean(True),
        }

    @dbus.service.method(ADVERTISEMENT_IFACE, in_signature="", out_signature="")
    def Release(self):
        say("advertisement released")


class Agent(dbus.service.Object):
    """NoInputNoOutput (AXM pairs with IO capability 0, docs/device-protocols.md §2.1): every request granted."""

    @dbus.service.method("org.bluez.Agent1", in_signature="", out_signature="")
    def Release(self):
        pass

    @dbus.service.method("org.bluez.Agent1", in_signature="ou", out_signature="")
    def RequestConfirmation(self, device, passkey):
        say(f"agent confirmation {passkey}")

    @dbus.service.method("org.bluez.Agent1", in_signature="o", out_signature="")
    def RequestAuthorization(self, device):
        say("agent authorization")

    @dbus.service.method("org.bluez.Agent1", in_signature="os", out_signature="")
    def AuthorizeService(self, device, uuid):
        say(f"agent authorize service {uuid}")

    @dbus.service.method("org.bluez.Agent1", in_signature="", out_signature="")
    def Cancel(self):
        pass


class ConfigDecoder:
    """The device side of docs/device-protocols.md §2.6's block framing: one command out of one or more writes."""

    def __init__(self):
        self.pending = None  # (command, payload, next continuation index)

    def feed(self, block):
        """Returns (command, payload) when a command is complete, None while more blocks follow;
        raises ValueError for a block the framing does not allow."""
        if not block:
            raise ValueError("empty block")
        header = block[0]
        count = header & 0x1F
        more = bool(header & 0x20)
        if header & 0x80 == 0:
            if header & 0x40 or len(block) < 2:
                raise ValueError("bad first block")
            # TS/SC-NET: the count is the command byte plus this block's payload bytes (02 AE 07). AXM
            # writes 03 AE 07 to a real D600 and reports it working (docs/device-protocols.md §2.9): both are
            # taken.
            if count not in (len(block) - 1, len(block)):
                raise ValueError(f"length {count} for {len(block) - 1} bytes after byte 0")
            command, payload = block[1], bytes(block[2:])
            self.pending = None
            if more:
                self.pending = (command, payload, 1)
                return None
            return command, payload
        if self.pending is None:
            raise ValueError("continuation without a first block")
        command, payload, k = self.pending
        if bool(header & 0x40) != (k % 2 == 0) or count != len(block) - 1:
            self.pending = None
            raise ValueError(f"bad continuation block {k}")
        payload += bytes(block[1:])
        if more:
            self.pending = (command, payload, k + 1)
            return None
        self.pending = None
        return command, payload


class D600:
    def __init__(self, bus, adapter, battery):
        self.bus = bus
        self.adapter = adapter
        self.adapter_path = f"/org/bluez/{adapter}"
        self.address = str(self.adapter_properties().Get("org.bluez.Adapter1", "Address"))
        self.name = f"Socket D600 [{self.address.replace(':', '')[-6:]}]"
        self.mode = None
        self.config = ConfigDecoder()
        self.advertising = False

        self.app = Application(bus)
        scanner = Service(bus, 0, SCANNER_SERVICE)
        self.scan_data = scanner.add(bus, SCAN_DATA, ["notify", "indicate"])
        scanner.add(bus, SCAN_CONTROL, ["write"], on_write=self.scan_control)
        config = Service(bus, 1, CONFIG_SERVICE)
        self.config_io = config.add(bus, CONFIG_IO, ["write", "notify"], on_write=self.config_write)
        battery_service = Service(bus, 2, short(0x180F))
        self.battery = battery_service.add(bus, short(0x2A19), ["read", "notify"], value=bytes([battery]))
        info = Service(bus, 3, short(0x180A))
        serial = self.address.replace(":", "")
        for uuid16, text in [(0x2A29, "Socket Mobile, Inc."), (0x2A24, "D600"), (0x2A25, serial),
                             (0x2A26, "1.50"), (0x2A28, "1.50")]:
            info.add(bus, short(uuid16), ["read"], value=text.encode())
        self.app.services = [scanner, config, battery_service, info]
        self.advertisement = Advertisement(bus, self.name)
        Agent(bus, AGENT_PATH)

        bus.add_signal_receiver(self.properties_changed, dbus_interface=PROPERTIES, signal_name="PropertiesChanged",
                                bus_name=BLUEZ, path_keyword="path")
        bus.add_signal_receiver(self.interfaces_added, dbus_interface=OBJECT_MANAGER, signal_name="InterfacesAdded",
                                bus_name=BLUEZ)
        bus.add_signal_receiver(self.interfaces_removed, dbus_interface=OBJECT_MANAGER,
                                signal_name="InterfacesRemoved", bus_name=BLUEZ)

    def adapter_properties(self):
        return dbus.Interface(self.bus.get_object(BLUEZ, self.adapter_path), PROPERTIES)

    def controller(self):
        """The controller as a D600's: LE only, so that its advertisements carry "BR/EDR not supported"
        as a single-mode device's do (btvirt's controllers are dual-mode, and a central's bluetoothd
        then takes the device for dual-mode: Device1.Connect tries BR/EDR and fails with
        br-connection-profile-unavailable). mgmt Set BR/EDR off is allowed only while powered off.
        GAP's device name (0x2A00) is the adapter's name: set to the advertised one."""
        props = self.adapter_properties()
        deadline = time.monotonic() + 20
        # A controller bluetoothd has just found is being powered on by it (AutoEnable): let that end.
        while not bool(props.Get("org.bluez.Adapter1", "Powered")) and time.monotonic() < deadline:
            time.sleep(0.2)
        props.Set("org.bluez.Adapter1", "Powered", dbus.Boolean(False))
        done = subprocess.run(["btmgmt", "--index", self.adapter.removeprefix("hci"), "bredr", "off"],
                              capture_output=True, text=True, timeout=20)
        say(f"btmgmt bredr off: exit {done.returncode}: {done.stdout.strip()}")
        if done.returncode != 0:
            self.fatal(f"btmgmt bredr off: {done.stdout}{done.stderr}")
        props.Set("org.bluez.Adapter1", "Powered", dbus.Boolean(True))
        props.Set("org.bluez.Adapter1", "Alias", dbus.String(self.name))

    def register(self, done):
        self.controller()
        agents = dbus.Interface(self.bus.get_object(BLUEZ, "/org/bluez"), "org.bluez.AgentManager1")
        try:
            agents.RegisterAgent(AGENT_PATH, "NoInputNoOutput")
        except dbus.DBusException as error:
            if "AlreadyExists" not in error.get_dbus_name():
                raise
        gatt = dbus.Interface(self.bus.get_object(BLUEZ, self.adapter_path), "org.bluez.GattManager1")

        def registered():
            say("gatt registered")
            self.advertise(done)

        gatt.RegisterApplication(ROOT, {}, reply_handler=registered,
                                 error_handler=lambda e: self.fatal(f"RegisterApplication: {e}"))

    def advertise(self, done=None):
        manager = dbus.Interface(self.bus.get_object(BLUEZ, self.adapter_path), "org.bluez.LEAdvertisingManager1")

        def advertising():
            self.advertising = True
            say("advertising")
            if done:
                done()

        manager.RegisterAdvertisement(self.advertisement.path, {}, reply_handler=advertising,
                                      error_handler=lambda e: self.fatal(f"RegisterAdvertisement: {e}"))

    def stop_advertising(self):
        if self.advertising:
            manager = dbus.Interface(self.bus.get_object(BLUEZ, self.adapter_path),
                                     "org.bluez.LEAdvertisingManager1")
            manager.UnregisterAdvertisement(self.advertisement.path)
            self.advertising = False
            say("advertising stopped")

    def fatal(self, message):
        say(f"error {message}")
        sys.exit(1)

    def centrals(self):
        manager = dbus.Interface(self.bus.get_object(BLUEZ, "/"), OBJECT_MANAGER)
        return [path for path, interfaces in manager.GetManagedObjects().items()
                if str(path).startswith(self.adapter_path + "/")
                and bool(interfaces.get("org.bluez.Device1", {}).get("Connected", False))]

    def mine(self, path):
        return str(path).startswith(self.adapter_path + "/dev_")

    def link_gone(self, path):
        say(f"disconnected {path}")
        # Scanner mode is set per session (docs/device-protocols.md §2.3: every public client writes AE 07
        # after connecting); a half-received config command goes with the link.
        self.mode = None
        self.config = ConfigDecoder()

    def properties_changed(self, interface, changed, invalidated, path=None):
        if interface != "org.bluez.Device1" or not self.mine(path):
            return
        if "Connected" in changed:
            if bool(changed["Connected"]):
                say(f"connected {path}")
            else:
                self.link_gone(path)
        if "Paired" in changed:
            say(f"paired {bool(changed['Paired'])} {path}")

    def interfaces_added(self, path, interfaces):
        if path == self.adapter_path and "org.bluez.Adapter1" in interfaces:
            # The controller is back (btvirt restarted): a new controller knows none of our
            # registrations, so the device comes up again as it did at power-on.
            say("adapter back")

            def again():
                self.register(lambda: say("ready again"))
                return False

            GLib.idle_add(again)
            return
        device = interfaces.get("org.bluez.Device1")
        if device is not None and self.mine(path) and bool(device.get("Connected", False)):
            say(f"connected {path}")

    def interfaces_removed(self, path, interfaces):
        if path == self.adapter_path and "org.bluez.Adapter1" in interfaces:
            say("adapter gone")
            self.advertising = False
            return
        if "org.bluez.Device1" in interfaces and self.mine(path):
            self.link_gone(path)

    # Characteristic behaviour

    def config_write(self, block):
        try:
            command = self.config.feed(block)
        except ValueError as error:
            say(f"config malformed: {error}: {hexbytes(block)}")
            return
        if command is None:
            return
        code, payload = command
        say(f"config command {code:02x} {hexbytes(payload)}".rstrip())
        if code == OPERATING_MODE and len(payload) == 1:
            self.mode = payload[0]
            say(f"mode {self.mode:02x}")
        answer = bytes([0x01, 0x00])
        if self.config_io.notifying:
            self.config_io.notify(answer)
            say(f"config answer {hexbytes(answer)}")
        else:
            say("config answer not sent: no notifications on config I/O")

    def scan_control(self, data):
        if data:
            say(f"scan control {data[0]:02x}")

    def read(self, family, text):
        frame = family.encode() + text.encode() + b"\x00"
        if self.mode != SCANNER_MODE:
            say(f"read dropped: not in scanner mode (mode {self.mode})")
            return
        if not self.scan_data.notifying:
            say("read dropped: no notifications on scan data")
            return
        chunks = [frame[i:i + NOTIFICATION_SIZE] for i in range(0, len(frame), NOTIFICATION_SIZE)]
        for chunk in chunks:
            self.scan_data.notify(chunk)
        say(f"read sent in {len(chunks)} notifications")

    def set_battery(self, percent):
        self.battery.value = bytes([percent])
        if self.battery.notifying:
            self.battery.notify(self.battery.value)
        say(f"battery {percent}")

    def drop(self, seconds):
        """Out of range: no advertising, the link cut from this side, back after `seconds`."""
        self.stop_advertising()
        for path in self.centrals():
            try:
                dbus.Interface(self.bus.get_object(BLUEZ, path), "org.bluez.Device1").Disconnect()
                say(f"dropped {path}")
            except dbus.DBusException as error:
                say(f"drop {path}: {error}")

        def back():
            self.advertise()
            return False

        GLib.timeout_add(int(seconds * 1000), back)

    def command(self, line):
        words = line.split(maxsplit=2)
        if not words:
            return
        if words[0] == "read" and len(words) == 3:
            self.read(words[1], words[2])
        elif words[0] == "battery" and len(words) == 2:
            self.set_battery(int(words[1]))
        elif words[0] == "drop" and len(words) == 2:
            self.drop(float(words[1]))
        else:
            say(f"unknown command {line!r}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--adapter", default="hci1")
    parser.add_argument("--battery", type=int, default=73)
    args = parser.parse_args()

    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SystemBus()
    d600 = D600(bus, args.adapter, args.battery)
    loop = GLib.MainLoop()

    def stdin_ready(source, condition):
        line = sys.stdin.readline()
        if not line:
            loop.quit()
            return False
        try:
            d600.command(line.strip())
        except dbus.DBusException as error:
            say(f"error {error}")
        return True

    GLib.io_add_watch(sys.stdin, GLib.IO_IN | GLib.IO_HUP, stdin_ready)
    # In the GLib loop: a Python signal handler would run only once the loop next wakes.
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, lambda: loop.quit() or False)
    d600.register(lambda: say(f"ready {d600.address} {d600.name}"))
    loop.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
