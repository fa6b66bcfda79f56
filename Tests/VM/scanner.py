#!/usr/bin/python3
"""A Socket Mobile Classic scanner in SPP mode, emulated on the VM's second controller (hci1).

    scanner.py acceptor --adapter hci1 --channel C --code TEXT [--aim C0]
        SPP acceptor mode (#FNB00F40000#): bluetoothd's Profile1 API (RegisterProfile) publishes an
        SDP Serial Port record on RFCOMM channel C plus a record of the scanner service class
        A1220169-… that Windows and capture recognise scanners by; every connection made to it gets
        one frame for TEXT. A NoInputNoOutput agent answers pairing. Prints "ready" when registered,
        runs until SIGTERM.
    scanner.py initiator --source ADDR --to ADDR --channel N --code TEXT [--aim C0]
        SPP initiator mode (#FNI<host>#): connects from ADDR to the host's RFCOMM channel N, sends
        one frame, waits for the host to close (at most 30 s).

The frame is the one docs/device-protocols.md §5.3 shows a Socket scanner sending in SPP mode:
STX, a big-endian total length, 15 header bytes, the data, CR, the AIM identifier trailer, ETX.
"""

import argparse
import os
import signal
import socket
import sys
import threading
import time

SERIAL_PORT = "00001101-0000-1000-8000-00805f9b34fb"
SCANNER_CLASS = "a1220169-e854-473e-9cb5-873acbdf1f13"
AGENT_PATH = "/scanner/agent"


def frame(text, aim):
    body = bytes([0x00, 0x64, 0x01, 0x00, 0x17, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x00, 0x01, 0x00, 0x06])
    body += text.encode() + b"\r" + f"]{aim}DB3".encode() + b"\x60" + b"E5"
    total = len(body) + 4
    return bytes([0x02, total >> 8, total & 0xFF]) + body + b"\x03"


def acceptor(args):
    import dbus
    import dbus.mainloop.glib
    import dbus.service
    from gi.repository import GLib

    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SystemBus()
    payload = frame(args.code, args.aim)
    adapter_prefix = f"/org/bluez/{args.adapter}/"

    class Profile(dbus.service.Object):
        @dbus.service.method("org.bluez.Profile1", in_signature="oha{sv}", out_signature="")
        def NewConnection(self, device, fd, properties):
            fd = fd.take()
            if not str(device).startswith(adapter_prefix):
                # bluetoothd registers a profile on every adapter; only hci1 is the scanner.
                os.close(fd)
                return
            print(f"connection from {device}", flush=True)

            def send():
                # The host reads once its connect(2) returns; a real scanner sends when a code is read.
                time.sleep(0.5)
                try:
                    os.write(fd, payload)
                    print(f"sent {len(payload)} bytes", flush=True)
                    time.sleep(10)
                except OSError as error:
                    print(f"write failed: {error}", flush=True)
                finally:
                    os.close(fd)

            threading.Thread(target=send, daemon=True).start()

        @dbus.service.method("org.bluez.Profile1", in_signature="o", out_signature="")
        def RequestDisconnection(self, device):
            pass

        @dbus.service.method("org.bluez.Profile1", in_signature="", out_signature="")
        def Release(self):
            pass

    class Agent(dbus.service.Object):
        """NoInputNoOutput: "just works" pairing, every request granted."""

        @dbus.service.method("org.bluez.Agent1", in_signature="", out_signature="")
        def Release(self):
            pass

        @dbus.service.method("org.bluez.Agent1", in_signature="ou", out_signature="")
        def RequestConfirmation(self, device, passkey):
            print(f"confirmation {device} {passkey}", flush=True)

        @dbus.service.method("org.bluez.Agent1", in_signature="o", out_signature="")
        def RequestAuthorization(self, device):
            print(f"authorization {device}", flush=True)

        @dbus.service.method("org.bluez.Agent1", in_signature="os", out_signature="")
        def AuthorizeService(self, device, uuid):
            print(f"authorize service {device} {uuid}", flush=True)

        @dbus.service.method("org.bluez.Agent1", in_signature="", out_signature="")
        def Cancel(self):
            pass

    Agent(bus, AGENT_PATH)
    manager = dbus.Interface(bus.get_object("org.bluez", "/org/bluez"), "org.bluez.AgentManager1")
    manager.RegisterAgent(AGENT_PATH, "NoInputNoOutput")
    manager.RequestDefaultAgent(AGENT_PATH)

    profiles = dbus.Interface(bus.get_object("org.bluez", "/org/bluez"), "org.bluez.ProfileManager1")
    # The Serial Port record capture's SDP query finds the channel in, and a scanner-class record
    # that discovery recognises the scanner by (its own RFCOMM channel, never connected to).
    for path, uuid, name, channel in [
        ("/scanner/spp", SERIAL_PORT, "Serial Port", args.channel),
        ("/scanner/class", SCANNER_CLASS, "Barcode Scanner", args.channel + 1),
    ]:
        Profile(bus, path)
        profiles.RegisterProfile(path, uuid, {
            "Name": dbus.String(name), "Role": dbus.String("server"), "Channel": dbus.UInt16(channel),
            "RequireAuthentication": dbus.Boolean(False), "RequireAuthorization": dbus.Boolean(False),
            "AutoConnect": dbus.Boolean(False),
        })
    loop = GLib.MainLoop()
    signal.signal(signal.SIGTERM, lambda *_: loop.quit())
    print("ready", flush=True)
    loop.run()
    return 0


def initiator(args):
    payload = frame(args.code, args.aim)
    deadline = time.monotonic() + 30
    while True:
        s = socket.socket(socket.AF_BLUETOOTH, socket.SOCK_STREAM, socket.BTPROTO_RFCOMM)
        try:
            s.bind((args.source, 0))
            s.connect((args.to, args.channel))
            break
        except OSError as error:
            s.close()
            # The host's listener may not be up yet: a refused connect is tried again, after the
            # RFCOMM session of the refused one has closed.
            print(f"connect: {error}", flush=True)
            if time.monotonic() > deadline:
                return 1
            time.sleep(3)
    print(f"connected to {args.to} channel {args.channel}", flush=True)
    s.sendall(payload)
    print(f"sent {len(payload)} bytes", flush=True)
    s.settimeout(max(1.0, deadline - time.monotonic()))
    try:
        while s.recv(64):
            pass
        print("host closed", flush=True)
    except OSError as error:
        print(f"waiting for the host to close: {error}", flush=True)
    s.close()
    return 0


def main():
    parser = argparse.ArgumentParser()
    modes = parser.add_subparsers(dest="mode", required=True)
    a = modes.add_parser("acceptor")
    a.add_argument("--adapter", default="hci1")
    a.add_argument("--channel", type=int, required=True)
    a.add_argument("--code", required=True)
    a.add_argument("--aim", default="C0")
    i = modes.add_parser("initiator")
    i.add_argument("--source", required=True)
    i.add_argument("--to", required=True)
    i.add_argument("--channel", type=int, required=True)
    i.add_argument("--code", required=True)
    i.add_argument("--aim", default="C0")
    args = parser.parse_args()
    return acceptor(args) if args.mode == "acceptor" else initiator(args)


if __name__ == "__main__":
    sys.exit(main())
