#!/usr/bin/env python3
"""Writes the fuzz seed corpora (fuzz/corpus/<name>/) from the frames quoted in
docs/device-protocols.md §2.4 (AXM D600 frames), §2.6 (config blocks), §3.4 (AXM S550 example),
§5.3 (the captured SPP frame) and §7 (DMCC), and the MQTT spool's records (docs/fleet.md §4).

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


# docs/device-protocols.md §2.4, AXM: real D600 frames (the springcard URL is quoted with its middle elided as
# "…").
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
    """docs/device-protocols.md §2.6 (TS): first block (n+1)|0x20, command, n bytes; continuation k: n|0x80|0x40 (k even)|0x20."""
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

# docs/device-protocols.md §3.4, AXM s550-data-test.js: the worked Tag read event.
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

# docs/device-protocols.md §5.3, SO: the captured SPP frame (Code 128 "EQ0000013158"), 41 bytes, length
# 0x0029.
SPP = (b"\x02\x00\x29" + bytes.fromhex("00640100170000000000" "0C00010006") + b"EQ0000013158"
       + b"\x0d" + b"]C0DB3`E5" + b"\x03")
assert len(SPP) == 41
LIES = b"\x02\x0f\xff" + b"EQ0000013158"  # a length that lies upwards
write("spp", {
    "frame-whole": b"\x00" + notifications([SPP]),
    "frame-1": b"\x00" + notifications(chunks(SPP, 1)),
    "frame-7": b"\x01" + notifications(chunks(SPP, 7)),
    "frames-garbage": b"\x00" + notifications(chunks(b"noise\x03\xff" + SPP + b"\x00\x01" + SPP + b"zz", 16)),
    "lying-length-then-frame": b"\x01" + notifications(chunks(LIES + SPP, 20)),
    "lines-crlf": b"\x00" + notifications(chunks(b"EQ0000013158\r\n4006381333931\r\n", 5)),
    "lines-cr-lf": b"\x00" + notifications([b"abc\r", b"def\n", b"\r\n", b"\t tab\r"]),
    "line-then-frame": b"\x00" + notifications([b"EQ0000013158\r\n", SPP, b"after\r\n"]),
    "line-interrupted": b"\x00" + notifications([b"half a li", SPP]),
    "garbage": b"\x00" + notifications([b"\x00\x01\x03\x04\xff\xfe", b"\x7f\x80", b""]),
    "non-utf8-line": b"\x00" + notifications([b"\xc3\x28\r\n", b"caf\xc3\xa9\r\n"]),
    "long-line": b"\x00" + notifications(chunks(b"x" * 4200 + b"\r\n" + SPP, 250)),
    "short-frames": b"\x00" + notifications([b"\x02\x00\x04\x03", b"\x02\x00\x05A\x03", SPP]),
})

# docs/device-protocols.md §7: DMCC replies, with and without checksum and command id; read results in base64
# (status 1).
def dmcc_checked(line):
    x = 0
    for b in line:
        x ^= b
    return line + bytes([x])


READ = b"||1[1]" + __import__("base64").b64encode(b"EQ0000013158")
write("dmcc", {
    "reply-plain-header": b"\x10" + notifications([b"||[0]DM8050\r\n"]),
    "reply-id": b"\x10" + notifications(chunks(b"||0:123[0]\"reader one\"\r\n", 5)),
    "reply-checksum": b"\x90" + notifications([dmcc_checked(b"||1:7[0]ON") + b"\r\n"]),
    "reply-bad-checksum": b"\x90" + notifications([b"||1:7[0]ONx\r\n"]),
    "errors": b"\x08" + notifications([b"||:5[101]\r\n||[102]\r\n", b"||0:9[103]\r", b"\n"]),
    "read-base64": b"\x20" + notifications(chunks(b"||0[1]" + __import__("base64").b64encode(b"EQ0000013158") + b"\r\n", 9)),
    "read-base64-checksum": b"\xa0" + notifications([dmcc_checked(READ) + b"\r\n"]),
    "read-id-base64": b"\x20" + notifications([b"||0:42[1]SGVsbG8sIHdvcmxkIQ==\r\n"]),
    "silent-mode": b"\x00" + notifications([b"EQ0000013158\r\n", b"DM8050 1.2.3\r\n"]),
    "malformed": b"\x03" + notifications([b"||\r\n||0:[0]\r\n||2[0]x\r\n||[0\r\n\r\n"]),
    "quoted-text": b"\x80" + b"say \"hi\"\t|pipe|\\back\r\n",
})


# The MQTT spool's segments (docs/fleet.md §4): `u32 length | u32 CRC-32 | body` records, the body a JSON
# header line and the payload. Option byte 0x00: the spool's 1 MiB body cap; 0x21: a 17-byte cap.
import json
import zlib


def spool_record(seq, payload=b'{"event":"decodedData"}', host="h1"):
    header = json.dumps({"eventId": f"{host}-e1-{seq}", "seq": seq, "topic": f"capture/{host}/events/d/x"},
                        separators=(",", ":")).encode()
    body = header + b"\n" + payload
    return len(body).to_bytes(4, "little") + zlib.crc32(body).to_bytes(4, "little") + body


SEGMENT = b"".join(spool_record(n) for n in range(3))
FLIPPED = bytearray(SEGMENT)
FLIPPED[len(SEGMENT) - 3] ^= 0xFF
write("spool", {
    "three-records": b"\x00" + SEGMENT,
    "torn-tail": b"\x00" + SEGMENT + spool_record(3)[:20],
    "flipped-byte": b"\x00" + bytes(FLIPPED),
    "zero-filled-tail": b"\x00" + SEGMENT + bytes(64),
    "empty": b"\x00",
    "small-cap": b"\x21" + spool_record(0, b"") + spool_record(1, b"x" * 40),
    "length-beyond-cap": b"\x00" + (2 << 20).to_bytes(4, "little") + bytes(4) + b"\n",
    "huge-seq": b"\x00" + spool_record(0x7FFFFFFFFFFFFFFF),
})
