#!/usr/bin/env python3
"""Writes the fuzz seed corpora (fuzz/corpus/<name>/) from the frames quoted in
device-protocols.md §2.4 (AXM D600 frames), §2.6 (config blocks) and §3.4 (AXM S550 example).

Seed layout (see fuzz/Support.swift): option byte(s), then notifications, each as a length byte
followed by that many bytes."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def chunks(data, size):
    return [data[i:i + size] for i in range(0, len(data), size)] or [b""]


def notifications(parts):
    out = b""
    for part in parts:
        assert len(part) <= 255
        out += bytes([len(part)]) + part
    return out


def write(name, seeds):
    folder = os.path.join(HERE, "corpus", name)
    os.makedirs(folder, exist_ok=True)
    for seed_name, data in seeds.items():
        with open(os.path.join(folder, seed_name), "wb") as f:
            f.write(data)


# §2.4, AXM: real D600 frames (the springcard URL is quoted with its middle elided as "…").
ST = b"4F" + b"st.com/nfc-rfid" + b"\x00"
SPRINGCARD = b"4F" + "http://tags.springcard.com/uid/…/springfield-florida".encode() + b"\x00"
write("d600-scan", {
    "st-whole": b"\x00" + notifications([ST]),
    "st-20": b"\x00" + notifications(chunks(ST, 20)),
    "st-springcard-20": b"\x05" + notifications(chunks(ST + SPRINGCARD, 20)),
    "two-in-one": b"\x07" + notifications([ST + SPRINGCARD]),
    "empty-frames": b"\x00" + notifications([b"\x00\x00", ST]),
    "garbage-then-frame": b"\x00" + notifications([b"zz\x01garbage\x00", ST]),
    "ht-no-prefix": b"\x00" + notifications(chunks(SPRINGCARD[2:], 20)),
    "thinfilm": b"\x00" + notifications([b"18\xb7\x03example.com\xfe\x00"]),
    "short": b"\x00" + notifications([b"4\x00", b"\x00"]),
    "long-1k": b"\x10" + notifications(chunks(b"4F" + b"x" * 1000 + b"\x00", 250)),
    "oversized-then-st": b"\x00" + notifications(chunks(b"4F" + b"x" * 4200 + b"\x00" + ST, 250)),
})


def config_blocks(command, payload, size=20):
    """§2.6 (TS): first block (n+1)|0x20, command, n bytes; continuation k: n|0x80|0x40 (k even)|0x20."""
    first = payload[:size - 2]
    rest = payload[size - 2:]
    blocks = [bytes([(len(first) + 1) | (0x20 if rest else 0), command]) + first]
    k = 1
    while rest:
        part, rest = rest[:size - 1], rest[size - 1:]
        header = len(part) | 0x80 | (0x40 if k % 2 == 0 else 0) | (0x20 if rest else 0)
        blocks.append(bytes([header]) + part)
        k += 1
    return blocks


write("d600-config-answer", {
    "ae07": b"\x00\x14" + notifications(config_blocks(0xAE, b"\x07")),
    "status-only": b"\x00\x14" + notifications([b"\x01\x00"]),
    "status-data": b"\x00\x14" + notifications([b"\x03\x00\xab\xcd"]),
    "chained-50": b"\x00\x14" + notifications(config_blocks(0x00, bytes(range(1, 51)))),
    "chained-100": b"\x02\x14" + notifications(config_blocks(0x01, bytes(range(100)))),
    "garbage": b"\x00\x14" + notifications([b"\x80\x01", b"\x40", b"", b"\x20\x00\x01", b"\x01"]),
})

# §3.4, AXM s550-data-test.js: the worked Tag read event.
READ = bytes.fromhex("CC5B0020B0" "C10420030100" "C20702C40044F99DB6") + b"\xC3\x0F" + b"st.com/nfc-rfid"
INSERTED = bytes.fromhex("CC5B0012B1" "C00100" "C10480030100" "C20702C40044F99DB6")
REMOVED = bytes.fromhex("CC5B0003B1C00100")
LONG = bytes.fromhex("DC5B00000008B0C00101C3030102FF")
write("direct", {
    "read-whole": b"\x00" + notifications([READ]),
    "read-20": b"\x00" + notifications(chunks(READ, 20)),
    "inserted-removed": b"\x00" + notifications([INSERTED, REMOVED]),
    "two-in-one": b"\x00" + notifications([INSERTED + REMOVED]),
    "garbage-then-read": b"\x00" + notifications([b"\x01\x02\x03", READ]),
    "long-header": b"\x00" + notifications([LONG]),
    "oversized": b"\x10" + notifications([bytes.fromhex("DC5B00010001B0"), READ]),
    "tlv-long-lengths": b"\x01" + bytes.fromhex("C3810141C4820002ABCD"),
})
