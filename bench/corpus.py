#!/usr/bin/python3
"""The SocketCam benchmark image set: every family capture reads, degraded the way photos are.

    /usr/bin/python3 bench/corpus.py OUTDIR [--seed N]

Writes OUTDIR/images/ (PNG, and JPEG for the compressed and photo-like copies) and OUTDIR/manifest.tsv,
one line per image (lines starting with '#' are comments):

    file  family  variant  payload  text  addon  bytes

- file: relative to OUTDIR/images.
- family: a Decoders.BarcodeFormat name (qrCode, microQRCode, rmqrCode, aztec, dataMatrix, pdf417,
  microPDF417, maxiCode, code128, code39, code93, ean13, ean8, upcA, upcE, itf, codabar, telepen, dataBar,
  dataBarLimited, dataBarExpanded). zint 2.11 (Debian 12) draws no DX film edge, so there is none.
- variant: the degradation (clean, rot7, rot15, rot30, rot45, rot60, rot75, rot90, rot180, perspective,
  blur, lowcontrast, noise, jpeg, small, inverted, photo, canvas): the turns cover a quarter in 15° steps
  (and 7°), every other quarter being the same symbol turned by a multiple of 90°.
- payload: what kind of content (plain, eci3, eci26, eci20, eciN+M for several ECIs, kanji, binary,
  latin1, utf8-noeci, addon2, addon5, gs1, ...).
- text: the exact text the symbol encodes, as Unicode (the ECI honoured, Kanji and other character sets
  converted), escaped: backslash, tab, newline, carriage return and other C0 controls as \\\\, \\t, \\n,
  \\r and \\xHH. EAN/UPC with their check digit, UPC-A as 12 digits, UPC-E as 8 (number system, 6,
  check), Codabar with its start/stop characters, DataBar as "01" + GTIN-14, DataBar Expanded as the GS1
  element string with GS (\\x1d) after each variable-length element but the last. For an add-on symbol
  the main code only.
- addon: the EAN-2 / EAN-5 add-on digits, else empty.
- bytes: the raw payload in hex (each ECI segment in its own character set; Kanji mode as Shift_JIS),
  empty where it is not defined without the decoder's choice (add-ons).

Binary payloads avoid byte sequences that are valid UTF-8 or Shift_JIS, so their text is unambiguous:
byte mode without an ECI is ISO-8859-1 in QR, Data Matrix and Aztec (the symbologies' default character
set). One `utf8-noeci` QR (qrencode -8 with UTF-8 input, as most phone apps write them) is the common
exception to that rule: its expected text is the UTF-8 reading, which is what readers return.

Linear symbols stay below 500 px on their shorter side (checked at the end): Debian's ZXingReader
(zxing-cpp 1.4.0 built with assertions) aborts with SIGABRT on a linear symbol in a larger image, which
would turn the benchmark into a crash count. Only matrix symbols go on the 2400x1800 photo-sized canvas.
Deterministic: every random choice comes from --seed (ImageMagick's noise from -seed).
"""
import argparse, codecs, concurrent.futures, os, random, shutil, subprocess, sys, tempfile, time

CONVERT = "/usr/bin/convert"  # ImageMagick itself, not a stand-in earlier on PATH
IDENTIFY = "/usr/bin/identify"
# No time stamps or other metadata in the files, so one seed gives the same bytes on every run.
STRIP = ["-strip", "-define", "png:exclude-chunks=date,time"]
MATRIX = {"qrCode", "microQRCode", "rmqrCode", "aztec", "dataMatrix", "pdf417", "microPDF417", "maxiCode"}
ECI_CODEC = {3: "latin-1", 4: "iso8859-2", 7: "iso8859-5", 9: "iso8859-7", 20: "shift_jis", 24: "cp1256",
             26: "utf-8", 28: "big5", 29: "gb2312", 30: "euc-kr"}


def check_digit(digits):
    s = sum(int(d) * (3 if i % 2 == 0 else 1) for i, d in enumerate(reversed(digits)))
    return str((10 - s % 10) % 10)


def escape(text):
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\x%02x" % ord(ch))
        else:
            out.append(ch)
    return "".join(out)


class Symbol:
    """One base symbol: how zint/qrencode draws it and what it encodes."""

    def __init__(self, family, payload, text, raw, cmd, module, addon="", stdin=None):
        self.family, self.payload, self.text, self.raw, self.addon = family, payload, text, raw, addon
        self.cmd, self.module, self.stdin = cmd, module, stdin  # module: px per module in the base image


def zint(barcode, data=None, scale=2.0, eci=None, segs=(), extra=(), binary=False):
    cmd = ["zint", "--barcode=%s" % barcode, "--quietzones", "--scale=%g" % scale, *extra]
    if eci is not None:
        cmd.append("--eci=%d" % eci)
    for n, (seg_eci, seg_data) in enumerate(segs, 1):
        cmd.append("--seg%d=%d,%s" % (n, seg_eci, seg_data))
    if binary:
        cmd += ["--binary", "--input=-"]
    else:
        cmd.append("--data=" + data)
    return cmd


def eci_symbol(family, barcode, segments, scale, payload=None, module=None):
    """segments: [(eci, text), ...]; the first is zint's segment 0."""
    text = "".join(t for _, t in segments)
    raw = b"".join(t.encode(ECI_CODEC[e]) for e, t in segments)
    payload = payload or "eci" + "+".join(str(e) for e, _ in segments)
    cmd = zint(barcode, segments[0][1], scale, eci=segments[0][0], segs=segments[1:])
    return Symbol(family, payload, text, raw, cmd, module or 2 * scale)


def symbols(rng):
    def digits(n):
        return "".join(rng.choice("0123456789") for _ in range(n))

    def alnum(n):
        return "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789") for _ in range(n))

    def binary(n):
        # Bytes 0x80..0x9F and 0xFF start no UTF-8 or Shift_JIS character, so the ISO-8859-1 reading is the
        # only one; no 0x0A, so line-based peers keep one line.
        body = bytes(rng.choice([0x00, 0x01, 0x1B, 0x7F, 0x80, 0x85, 0x9F, 0xA0, 0xC0, 0xFF]) for _ in range(n))
        return b"\xff\x80" + body

    out = []
    add = out.append

    def plain(family, barcode, text, scale, payload="plain", extra=(), module=None):
        add(Symbol(family, payload, text, text.encode("latin-1"), zint(barcode, text, scale, extra=extra),
                   module or 2 * scale))

    # QR Code, zint
    plain("qrCode", "QRCODE", "SocketCam bench %s" % alnum(6), 2)
    plain("qrCode", "QRCODE", "https://example.com/p/%s?ref=%s&lang=en-GB#top" % (alnum(10), digits(8)), 2,
          extra=["--secure=1"])
    plain("qrCode", "QRCODE", digits(40), 2, payload="numeric")
    add(eci_symbol("qrCode", "QRCODE", [(26, "Grüße aus Köln, 5 € — 日本 ✓")], 2))
    add(eci_symbol("qrCode", "QRCODE", [(3, "Ærøskøbing Straße Ñandú")], 2))
    add(eci_symbol("qrCode", "QRCODE", [(20, "日本語のテキスト、カタカナ")], 2))
    add(eci_symbol("qrCode", "QRCODE", [(7, "Привет, мир %s" % digits(3))], 2))
    add(eci_symbol("qrCode", "QRCODE", [(26, "Grüß€ "), (3, "Ærø "), (7, "Привет "), (20, "日本")], 2))
    kanji = "漢字モードの試験%s" % "".join(rng.choice("山川田中") for _ in range(4))
    add(Symbol("qrCode", "kanji", kanji, kanji.encode("shift_jis"), zint("QRCODE", kanji, 2), 4))
    raw = binary(24)
    add(Symbol("qrCode", "binary", raw.decode("latin-1"), raw, zint("QRCODE", scale=2, binary=True), 4, stdin=raw))
    # QR Code, qrencode (its own encoder: other masks and mode choices)
    url = "https://example.org/item/%s?q=%s" % (digits(6), alnum(5).lower())
    add(Symbol("qrCode", "plain", url, url.encode(), ["qrencode", "-s", "4", "-o", "-", url], 4))
    add(Symbol("qrCode", "plain", url.upper(), url.upper().encode(), ["qrencode", "-l", "H", "-s", "4", "-o", "-",
                                                                       url.upper()], 4))
    kanji2 = "東京都千代田区%s番地" % "".join(rng.choice("一二三四五") for _ in range(2))
    add(Symbol("qrCode", "kanji", kanji2, kanji2.encode("shift_jis"), ["qrencode", "-k", "-s", "4", "-o", "-"], 4,
               stdin=kanji2.encode("shift_jis")))
    utf8 = "Café crème brûlée %s" % digits(4)
    add(Symbol("qrCode", "utf8-noeci", utf8, utf8.encode(), ["qrencode", "-8", "-s", "4", "-o", "-", utf8], 4))

    # Micro QR (zint has no ECI for it)
    plain("microQRCode", "MICROQR", digits(12), 3, payload="numeric")
    plain("microQRCode", "MICROQR", "MQR %s" % alnum(5), 3)
    mk = "漢字%s" % rng.choice(["山", "川", "田"])
    add(Symbol("microQRCode", "kanji", mk, mk.encode("shift_jis"), zint("MICROQR", mk, 3), 6))
    plain("microQRCode", "MICROQR", "abc%s" % digits(3), 3, payload="byte")

    # Aztec
    plain("aztec", "AZTEC", "Aztec bench %s" % alnum(8), 2)
    add(eci_symbol("aztec", "AZTEC", [(26, "Aztec Grüße 日本 %s" % digits(3))], 2))
    add(eci_symbol("aztec", "AZTEC", [(3, "Ñandú "), (9, "Γειά σου "), (26, "✓")], 2))
    raw = binary(20)
    add(Symbol("aztec", "binary", raw.decode("latin-1"), raw, zint("AZTEC", scale=2, binary=True), 4, stdin=raw))

    # Data Matrix
    plain("dataMatrix", "DATAMATRIX", "DataMatrix bench %s" % alnum(6), 2)
    add(eci_symbol("dataMatrix", "DATAMATRIX", [(20, "日本語の文字")], 2))
    add(eci_symbol("dataMatrix", "DATAMATRIX", [(3, "Ærø "), (7, "Привет")], 2))
    raw = binary(16)
    add(Symbol("dataMatrix", "binary", raw.decode("latin-1"), raw, zint("DATAMATRIX", scale=2, binary=True), 4,
               stdin=raw))

    # PDF417: text, numeric and byte compaction mixed in one symbol
    plain("pdf417", "PDF417", "PDF417 bench %s %s abc/DEF !?" % (digits(16), alnum(4)), 1.5, payload="mixed")
    plain("pdf417", "PDF417", "Ärger über Öl %s" % digits(14), 1.5, payload="latin1")
    add(eci_symbol("pdf417", "PDF417", [(26, "PDF417 Grüße ÄÖÜ %s ✓ 日本" % digits(12))], 1.5))
    add(eci_symbol("pdf417", "PDF417", [(3, "Çà va %s " % digits(13)), (9, "Γειά "), (7, "Привет")], 1.5))

    # What zxing-cpp 3 reads and 1.4.0 did not: rMQR, MicroPDF417 (CHANGELOG.md, Unreleased).
    plain("rmqrCode", "RMQR", "RMQR %s" % alnum(8), 2)
    plain("rmqrCode", "RMQR", digits(20), 2, payload="numeric")
    plain("microPDF417", "MICROPDF417", "MicroPDF %s" % alnum(6), 1.5)
    plain("microPDF417", "MICROPDF417", digits(24), 1.5, payload="numeric")

    # MaxiCode (mode 4): code sets A to E mixed. zint draws its hexagons about 9.6 px apart at scale 1
    # (319 px with the quiet zone for 30 columns and 33 rows), so scale 0.5 gives about 4.8 px per module.
    maxi = dict(module=4.8)
    plain("maxiCode", "57", "MaxiCode bench %s" % alnum(6), 0.5, **maxi)
    plain("maxiCode", "57", "Maxi Ärger abc 123 XYZ {} ~ %s" % digits(4), 0.5, payload="mixed-sets", **maxi)
    add(eci_symbol("maxiCode", "57", [(26, "Maxi Grüße ÄÖ ✓ %s" % digits(3))], 0.5, **maxi))
    add(eci_symbol("maxiCode", "57", [(3, "Ñandú "), (7, "Привет")], 0.5, **maxi))

    # Linear symbols: 3 px per module, so a rotated copy stays below 500 px on its shorter side.
    plain("code128", "CODE128", "C128-%s-Ab/%s" % (digits(5), alnum(2)), 1.5)
    plain("code128", "CODE128", digits(18), 1.5, payload="numeric")
    plain("code128", "CODE128", "Größe %s" % digits(3), 1.5, payload="latin1")
    plain("code39", "CODE39", "C39 %s-%s" % (alnum(5), digits(2)), 1)
    plain("code39", "CODE39", "%s.$/+%%" % digits(4), 1)
    plain("code93", "CODE93", "CODE93 %s" % alnum(5), 1.5)
    plain("code93", "CODE93", "Code93 mixed %s" % digits(3), 1.5, payload="full-ascii")

    def ean(family, barcode, body, addon="", payload="plain"):
        main = body + check_digit(body)
        # zint takes EAN-8 as 7 digits (it adds the check digit; 8 digits would be an EAN-13 body), EAN-13
        # and UPC-A with theirs, which it checks.
        data = (main[:7] if family == "ean8" else main) + ("+" + addon if addon else "")
        add(Symbol(family, payload, main, main.encode() if not addon else b"", zint(barcode, data, 1.5), 3,
                   addon=addon))

    ean("ean13", "EANX", "4" + digits(11))
    ean("ean13", "EANX", "978" + digits(9), addon=digits(2), payload="addon2")
    ean("ean13", "EANX", "977" + digits(9), addon="5" + digits(4), payload="addon5")
    ean("ean8", "EANX", "5" + digits(6))
    ean("ean8", "EANX", "9" + digits(6))
    ean("upcA", "UPCA", "0" + digits(10))
    ean("upcA", "UPCA", "0" + digits(10), addon=digits(2), payload="addon2")
    ean("upcA", "UPCA", "0" + digits(10), addon="5" + digits(4), payload="addon5")
    for addon in ("", digits(2)):
        # UPC-E 0 m1..m5 X, X in 5..9, expands to UPC-A 0 m1..m5 0000 X (m5 != 0); its check digit is that
        # UPC-A's.
        m = digits(4) + rng.choice("123456789")
        last = rng.choice("56789")
        main = "0" + m + last + check_digit("0" + m + "0000" + last)
        add(Symbol("upcE", "addon2" if addon else "plain", main, b"" if addon else main.encode(),
                   zint("UPCE", main[:7] + ("+" + addon if addon else ""), 1.5), 3, addon=addon))
    plain("itf", "C25INTER", digits(10), 1.5)
    plain("itf", "C25INTER", digits(14), 1.5)
    plain("codabar", "CODABAR", "A%sB" % digits(8), 1.5)
    plain("codabar", "CODABAR", "C%s-%s$%sD" % (digits(3), digits(2), digits(2)), 1.5, payload="symbols")
    plain("telepen", "TELEPEN", "TP-%s/%s" % (alnum(4), digits(3)), 1.5)
    plain("telepen", "TELEPEN", "Telepen %s" % digits(4), 1.5, payload="ascii")
    for _ in range(2):
        body = "0" + digits(12)
        gtin = body + check_digit(body)
        add(Symbol("dataBar", "gs1", "01" + gtin, ("01" + gtin).encode(), zint("DBAR_OMN", body, 1.5), 3))
    for _ in range(2):
        # DataBar Limited: a GTIN-14 whose first digit (the indicator) is 0 or 1.
        body = rng.choice("01") + digits(12)
        gtin = body + check_digit(body)
        add(Symbol("dataBarLimited", "gs1", "01" + gtin, ("01" + gtin).encode(), zint("DBAR_LTD", body, 1.5), 3))
    body = "1" + digits(12)
    gtin = body + check_digit(body)
    weight = digits(6)
    text = "01%s3103%s" % (gtin, weight)
    add(Symbol("dataBarExpanded", "gs1", text, text.encode(),
               zint("DBAR_EXP", "[01]%s[3103]%s" % (gtin, weight), 1.5), 3))
    lot = alnum(5)
    text = "01%s10%s\x1d3103%s" % (gtin, lot, weight)
    add(Symbol("dataBarExpanded", "gs1-variable", text, text.encode(),
               zint("DBAR_EXP", "[01]%s[10]%s[3103]%s" % (gtin, lot, weight), 1.5), 3))
    return out


def perspective(rng, w, h, strength):
    # The symbol seen from one side: two corners pulled in towards each other, the others in place.
    s = strength
    tl, tr, br, bl = (0, 0), (w, 0), (w, h), (0, h)
    side = rng.choice(["left", "right", "top", "bottom"])
    if side == "left":
        tl, bl = (s * w * 0.5, s * h), (s * w * 0.5, h - s * h)
    elif side == "right":
        tr, br = (w - s * w * 0.5, s * h), (w - s * w * 0.5, h - s * h)
    elif side == "top":
        tl, tr = (s * w, s * h * 0.5), (w - s * w, s * h * 0.5)
    else:
        bl, br = (s * w, h - s * h * 0.5), (w - s * w, h - s * h * 0.5)
    pairs = zip([(0, 0), (w, 0), (w, h), (0, h)], [tl, tr, br, bl])
    return " ".join("%d,%d %.1f,%.1f" % (a[0], a[1], b[0], b[1]) for a, b in pairs)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def degrade(job):
    """One convert process writes every degraded copy of one base symbol."""
    sym, base, stem, images, seed, background = job
    rng = random.Random(seed)
    w, h = png_size(base)
    border = 12
    w, h = w + 2 * border, h + 2 * border
    linear = sym.family not in MATRIX
    small = 1.5 / sym.module
    # Shorter side below 500 px for linear symbols, whatever the rotation did ("^>": shrink only, to fit).
    guard = ["-resize", "499x499^>"] if linear else []
    variants = [
        ("clean", "png", []),
        ("rot7", "png", ["-rotate", "%d" % rng.choice([7, -7])]),
        ("rot15", "png", ["-rotate", "%d" % rng.choice([15, -15])]),
        ("rot30", "png", ["-rotate", "%d" % rng.choice([30, -30])]),
        ("rot45", "png", ["-rotate", "%d" % rng.choice([45, -45])]),
        ("rot60", "png", ["-rotate", "%d" % rng.choice([60, -60])]),
        ("rot75", "png", ["-rotate", "%d" % rng.choice([75, -75])]),
        ("rot90", "png", ["-rotate", "90"]),
        ("rot180", "png", ["-rotate", "180"]),
        ("perspective", "png", ["-distort", "Perspective", perspective(rng, w, h, rng.uniform(0.12, 0.22))]),
        ("blur", "png", ["-blur", "0x%.1f" % (0.45 * sym.module)]),
        ("lowcontrast", "png", ["+level", "40%,60%"]),
        ("noise", "png", ["-seed", str(seed), "-attenuate", "1.2", "+noise", "Gaussian"]),
        ("jpeg", "jpg", ["-quality", str(rng.choice([30, 40, 50, 60]))]),
        ("small", "png", ["-resize", "%.1f%%" % (100 * small)]),
        ("inverted", "png", ["-negate"]),
        ("photo", "jpg", ["-distort", "Perspective", perspective(rng, w, h, rng.uniform(0.06, 0.12)),
                          "-rotate", "%.1f" % rng.uniform(-12, 12), "-blur", "0x%.1f" % (0.3 * sym.module),
                          "+level", "15%,85%", "-seed", str(seed + 1), "-attenuate", "0.6", "+noise", "Gaussian",
                          "-quality", "55"]),
    ]
    cmd = [CONVERT, base, "-colorspace", "Gray", "-bordercolor", "white", "-border", str(border),
           "-background", "white", "-virtual-pixel", "white"]
    rows = []
    for name, ext, ops in variants:
        file = "%s-%s.%s" % (stem, name, ext)
        cmd += ["(", "+clone", *ops, *guard, *STRIP, "-write", os.path.join(images, file), "+delete", ")"]
        rows.append((file, name))
    cmd.append("null:")
    subprocess.run(cmd, check=True)
    if not linear:
        # A photo-sized frame with the symbol small inside, at about 3 px per module, slightly turned.
        file = "%s-canvas.jpg" % stem
        x, y = rng.randrange(100, 1400), rng.randrange(100, 1000)
        scale = 100 * 3.0 / sym.module
        subprocess.run([CONVERT, background, "(", base, "-colorspace", "Gray", "-bordercolor", "white",
                        "-border", str(border), "-resize", "%.1f%%" % scale, "-background", "white",
                        "-rotate", "%.1f" % rng.uniform(-20, 20), "-blur", "0x0.6", ")",
                        "-geometry", "+%d+%d" % (x, y), "-composite", *STRIP, "-quality", "75",
                        os.path.join(images, file)], check=True)
        rows.append((file, "canvas"))
    return [(file, sym.family, variant, sym.payload, escape(sym.text), sym.addon, sym.raw.hex())
            for file, variant in rows]


def main():
    # One thread per convert: the pool below runs one convert per core, and OpenMP's threads spinning
    # beside each other cost more than they give on these small images.
    os.environ["MAGICK_THREAD_LIMIT"] = "1"
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    for tool in ("zint", "qrencode", CONVERT, IDENTIFY):
        if not shutil.which(tool):
            sys.exit("corpus.py: %s not found (Debian packages zint, qrencode, imagemagick)" % tool)
    start = time.monotonic()
    rng = random.Random(args.seed)
    images = os.path.join(args.outdir, "images")
    if os.path.isdir(images):
        shutil.rmtree(images)
    os.makedirs(images)
    work = tempfile.mkdtemp(prefix="corpus-")
    try:
        # A mottled grey desk: noise at a quarter of the size, smoothed, blown up. ImageMagick's own .mpc
        # format, so each composite maps it instead of decoding a PNG.
        background = os.path.join(work, "background.mpc")
        subprocess.run([CONVERT, "-size", "600x450", "xc:grey70", "-seed", str(args.seed), "-attenuate", "2",
                        "+noise", "Gaussian", "-blur", "0x2", "-colorspace", "Gray", "-resize", "2400x1800!",
                        background], check=True)
        jobs = []
        for n, sym in enumerate(symbols(rng)):
            stem = "%03d-%s-%s" % (n, sym.family, sym.payload)
            base = os.path.join(work, stem + ".png")
            cmd = [*sym.cmd]
            if cmd[0] == "zint":
                cmd += ["--output=" + base]
                subprocess.run(cmd, input=sym.stdin, check=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            else:
                with open(base, "wb") as f:
                    subprocess.run(cmd, input=sym.stdin, check=True, stdout=f)
            jobs.append((sym, base, stem, images, args.seed * 1000 + n, background))
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            rows = [row for rows in pool.map(degrade, jobs) for row in rows]
        # The ZXingReader guard: no linear symbol image with a shorter side of 500 px or more.
        linear = [os.path.join(images, r[0]) for r in rows if r[1] not in MATRIX]
        sizes = subprocess.run([IDENTIFY, "-format", "%w %h %f\n", *linear], check=True, capture_output=True,
                               text=True).stdout.splitlines()
        big = [line for line in sizes if min(int(v) for v in line.split()[:2]) >= 500]
        if big:
            sys.exit("corpus.py: linear symbol images too large for ZXingReader: %s" % big)
    finally:
        shutil.rmtree(work)
    with open(os.path.join(args.outdir, "manifest.tsv"), "w", encoding="utf-8") as f:
        f.write("# bench/corpus.py --seed %d\n" % args.seed)
        f.write("# file\tfamily\tvariant\tpayload\ttext\taddon\tbytes\n")
        for row in rows:
            f.write("\t".join(row) + "\n")
    print("%d images (%d symbols) in %s, %.1f s" % (len(rows), len(jobs), images, time.monotonic() - start),
          file=sys.stderr)


if __name__ == "__main__":
    main()
