#!/usr/bin/python3
"""SocketCam against zbarimg, ZXingReader and zxing-cpp 3 (Python) on the same images: decode rate and wall time.

    /usr/bin/python3 bench/socketcam.py CAPTURE CORPUS [--runs N] [--json FILE] [--no-batch] [--venv DIR]

CORPUS is a directory written by bench/corpus.py (CORPUS/images, CORPUS/manifest.tsv). Every image is
decoded by each tool in its own process (capture, zbarimg, ZXingReader in turn, image by image, so the
three share the machine's noise); those runs give the decode rates and the one-image-per-process wall
times. Then each tool decodes all images in one process, RUNS times (median), for the batch wall time.

A code counts as read when one of the tool's results for that image is the manifest's text, compared as
each tool prints it:
- capture: `capture --json trigger socketcam start --image FILE`, the `text` key of each decodedData
  line, exactly; for binary payloads, whose text capture escapes (\\xHH), the `bytes` key against
  the raw payload. An add-on symbol counts as read when a text is the main code followed by the add-on
  digits, with or without one space between them.
- zbarimg: `zbarimg --nodbus -q --raw FILE` (default decoder settings), one line per symbol. ZBar prints
  UPC-A and UPC-E as EAN-13 (a leading 0; UPC-E expanded) and DataBar Expanded without GS separators;
  the expected text is converted to those forms. Debian's ZBar reads no Micro QR, Aztec, Data Matrix,
  MaxiCode or PDF417, and EAN-2/EAN-5 are off in its defaults.
- zxing-cpp: the newest zxing-cpp as a Python user gets it (`pip install zxing-cpp`, pinned to the
  version of deps/zxing-cpp.lock, with Pillow to load images), in a venv the bench makes once (--venv,
  default /tmp/capture-bench-zxingcpp-VERSION): `zxingcpp.read_barcodes(image)` with its defaults
  (all formats, try rotate/downscale/invert, add-ons ignored), text in TextMode.Plain (the content
  transcoded per ECI, GS1 with GS separators, Codabar with start/stop), one Python process per image
  (its start and imports included, as for every tool). It prints UPC-A and UPC-E as EAN-13 (as ZBar).
- ZXingReader: `ZXingReader FILE` (default options: try harder, rotations, downscaling), the quoted
  `Text:` of each result. zxing-cpp 1.4.0 prints Codabar without start/stop characters, DataBar as the
  GTIN-14 without "01", DataBar Expanded with "(AI)" parentheses and no GS, and an add-on as
  "MAIN ADDON" (one space).
"Main read, add-on dropped" counts symbols with an add-on where a result is the main code alone and none
has the add-on. "Misread" counts images where a tool returned a text matching nothing in the image (a
wrong character set, for example) and lists capture's.
"""
import argparse, base64, collections, json, os, re, statistics, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("capture")
ap.add_argument("corpus")
ap.add_argument("--runs", type=int, default=int(os.environ.get("RUNS", "3")), help="batch repetitions (median)")
ap.add_argument("--json", help="write every tool's results per image to this file")
ap.add_argument("--no-batch", action="store_true", help="skip the batch wall-time runs")
ap.add_argument("--only", help="only the images whose file name matches this regular expression")
ap.add_argument("--venv", help="the zxing-cpp Python peer's venv (made when missing)")
args = ap.parse_args()

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "..", "deps", "zxing-cpp.lock"), encoding="utf-8") as f:
    ZXING_CPP_VERSION = re.search(r"^ZXING_CPP_VERSION *= *(\S+)", f.read(), re.M).group(1)
VENV = args.venv or "/tmp/capture-bench-zxingcpp-%s" % ZXING_CPP_VERSION
VENV_PYTHON = os.path.join(VENV, "bin", "python3")
if not os.path.exists(os.path.join(VENV, "ok")):
    # The peer as users install it: the wheel PyPI publishes, and Pillow to open PNG and JPEG.
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--clear", VENV], check=True)
    subprocess.run([VENV_PYTHON, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    "zxing-cpp==%s" % ZXING_CPP_VERSION, "pillow"], check=True)
    open(os.path.join(VENV, "ok"), "w").close()
# One JSON line per image: [{"text", "bytes"}...]; images given as arguments.
PEER = os.path.join(tempfile.mkdtemp(prefix="zxingcpp-peer-"), "peer.py")
with open(PEER, "w", encoding="utf-8") as f:
    f.write("""import json, sys
import zxingcpp
from PIL import Image
for path in sys.argv[1:]:
    try:
        found = zxingcpp.read_barcodes(Image.open(path), text_mode=zxingcpp.TextMode.Plain)
        out = [{"text": b.text, "bytes": bytes(b.bytes).hex()} for b in found]
    except Exception as e:
        out = [{"error": str(e)}]
    print(json.dumps(out))
""")

images = os.path.join(args.corpus, "images")
env = dict(os.environ, XDG_STATE_HOME=tempfile.mkdtemp(prefix="socketcam-bench-"))
TIMEOUT = 120
# The corpus has add-on symbols, and reading them is capture's lead (bench/README.md): the bench's own state
# turns SocketCam's ean-add-on data source on (off by default, docs/capture-sdk.md §6.4). A capture
# from before the setting existed reads add-ons always, and refuses the set: nothing to do then.
subprocess.run([args.capture, "set", "socketcam", "data-source", "ean-add-on", "enable"], env=env,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def unescape(s):
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            c = s[i + 1]
            if c == "x":
                out.append(chr(int(s[i + 2:i + 4], 16)))
                i += 4
                continue
            out.append({"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}[c])
            i += 2
            continue
        out.append(s[i])
        i += 1
    return "".join(out)


Row = collections.namedtuple("Row", "file family variant payload text addon raw")
rows = []
with open(os.path.join(args.corpus, "manifest.tsv"), encoding="utf-8") as f:
    for line in f:
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        file, family, variant, payload, text, addon, raw = line.split("\t")
        rows.append(Row(file, family, variant, payload, unescape(text), addon, bytes.fromhex(raw)))
if args.only:
    rows = [r for r in rows if re.search(args.only, r.file)]
paths = [os.path.join(images, r.file) for r in rows]


def upce_to_ean13(t):
    # UPC-E (number system, 6 digits, check) to the EAN-13 of its UPC-A expansion, as ZBar prints it.
    s, d, c = t[0], t[1:7], t[7]
    last = d[5]
    if last in "012":
        body = d[:2] + last + "0000" + d[2:5]
    elif last == "3":
        body = d[:3] + "00000" + d[3:5]
    elif last == "4":
        body = d[:4] + "00000" + d[4]
    else:
        body = d[:5] + "0000" + last
    return "0" + s + body + c


def forms(tool, row):
    """(texts that count as read, texts that are the main code with its add-on dropped)."""
    t = row.text
    if tool == "zbarimg":
        if row.family == "upcA":
            t = "0" + t
        elif row.family == "upcE":
            t = upce_to_ean13(t)
        elif row.family == "dataBarExpanded":
            t = t.replace("\x1d", "")
    elif tool == "zxing-cpp":
        if row.family == "upcA":
            t = "0" + t
        elif row.family == "upcE":
            t = upce_to_ean13(t)
    elif tool == "ZXingReader":
        if row.family == "codabar":
            t = t[1:-1]
        elif row.family == "dataBar":
            t = t[2:]
        elif row.family == "dataBarExpanded":
            t = t.replace("\x1d", "")
    if row.addon:
        return {t + row.addon, t + " " + row.addon}, {t}
    return {t}, set()


def normal(tool, row, text):
    if tool == "ZXingReader" and row.family == "dataBarExpanded":
        return text.replace("(", "").replace(")", "")
    return text


def run(cmd, stdin=None):
    start = time.perf_counter()
    try:
        p = subprocess.run(cmd, env=env, stdin=stdin, capture_output=True, timeout=TIMEOUT)
        out, rc = p.stdout, p.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = e.stdout or b"", "timeout"
    return out, rc, time.perf_counter() - start


def capture_events(out):
    for line in out.decode("utf-8", "surrogateescape").split("\n"):
        if line.startswith("{"):
            ev = json.loads(line)
            if ev.get("event") == "decodedData":
                yield ev


def capture_result(ev):
    return {"format": ev["dataSource"]["name"], "text": ev["text"], "bytes": base64.b64decode(ev["bytes"]).hex()}


def capture_one(path):
    out, rc, dt = run([args.capture, "--json", "trigger", "socketcam", "start", "--image", path])
    return [capture_result(ev) for ev in capture_events(out)], rc, dt


def zbar_one(path):
    out, rc, dt = run(["zbarimg", "--nodbus", "-q", "--raw", path])
    lines = out.decode("utf-8", "surrogateescape").split("\n")
    return [{"text": t} for t in (lines[:-1] if lines and lines[-1] == "" else lines)], rc, dt


ZX_TEXT = re.compile(r'^Text: *"(.*?)"\nBytes: *([0-9A-F ]*)$', re.M | re.S)


def zxing_one(path):
    out, rc, dt = run(["ZXingReader", path])
    s = out.decode("utf-8", "surrogateescape")
    return [{"text": m.group(1), "bytes": m.group(2).replace(" ", "").lower()} for m in ZX_TEXT.finditer(s)], rc, dt


def zxingcpp_one(path):
    out, rc, dt = run([VENV_PYTHON, PEER, path])
    lines = [l for l in out.decode("utf-8", "surrogateescape").split("\n") if l.startswith("[")]
    return [r for r in (json.loads(lines[0]) if lines else []) if "text" in r], rc, dt


TOOLS = [("capture", capture_one), ("zbarimg", zbar_one), ("ZXingReader", zxing_one), ("zxing-cpp", zxingcpp_one)]
results = {name: {} for name, _ in TOOLS}
times = {name: [] for name, _ in TOOLS}
crashes, crashed = collections.Counter(), set()
t0 = time.monotonic()
for row, path in zip(rows, paths):
    for name, fn in TOOLS:
        res, rc, dt = fn(path)
        results[name][row.file] = res
        times[name].append(dt)
        if rc == "timeout" or (isinstance(rc, int) and rc < 0):
            crashes[name] += 1
            crashed.add(row.file)
            print("%s: %s on %s" % (name, "timeout" if rc == "timeout" else "signal %d" % -rc, row.file),
                  file=sys.stderr)
print("decoded %d images with %d tools, one process each, in %.0f s" % (
    len(rows), len(TOOLS), time.monotonic() - t0), file=sys.stderr)

# Per image and tool: "read", "addon" (main read, add-on dropped) or "missed"; misread when some result
# matches nothing expected.
status = {}
for name, _ in TOOLS:
    for row in rows:
        full, main = forms(name, row)
        got = {normal(name, row, r["text"]) for r in results[name][row.file]}
        if name == "capture" and row.payload == "binary":
            # capture's text for a payload that is not text (zxing-cpp's ContentType::Binary) is the
            # bytes as UTF-8 with \xHH escapes (its contract: docs and capture-listen(1)); its `bytes`
            # carry the payload. It counts as read when those bytes are the raw payload.
            got = {row.text for r in results[name][row.file] if row.raw and r["bytes"] == row.raw.hex()} or got
        st = "read" if got & full else "addon" if got & main else "missed"
        status[name, row.file] = (st, bool(got - full - main))
# capture's bytes: for a text read, its bytes should be the raw payload (manifest `bytes`, where defined).
bytes_differ = [row for row in rows if row.raw and row.payload != "binary" and
                status["capture", row.file][0] == "read" and
                not any(r["bytes"] == row.raw.hex() for r in results["capture"][row.file]
                        if r["text"] in forms("capture", row)[0])]

def stem(file):
    # corpus.py names each copy BASE-VARIANT.EXT; the lists below give one line per base symbol.
    return file.rsplit("-", 1)[0]


def grouped(members, line):
    groups = collections.OrderedDict()
    for r in members:
        groups.setdefault(stem(r.file), []).append(r)
    for base, rs in groups.items():
        print("    %s: %s" % (base, " ".join(r.variant for r in rs)))
        for text in line(rs):
            print("      " + text)


def capture_texts(rs):
    seen = collections.Counter(json.dumps([x["text"] for x in results["capture"][r.file]], ensure_ascii=False)
                               for r in rs)
    return ["capture: %s%s" % (t if t != "[]" else "nothing", " (%d)" % n if len(seen) > 1 else "")
            for t, n in seen.most_common()]


PEERS = ("zbarimg", "ZXingReader", "zxing-cpp")


def table(key, title):
    groups = collections.OrderedDict()
    for row in sorted(rows, key=lambda r: getattr(r, key)):
        groups.setdefault(getattr(row, key), []).append(row)
    print("%-16s %5s %9s %9s %9s %9s %9s  %s" % (title, "codes", "capture", "zbarimg", "ZXing1.4", "zxing3py",
                                                "peers", "verdict"))
    totals = collections.Counter()
    for g, members in list(groups.items()) + [("all", rows)]:
        c = collections.Counter()
        for row in members:
            for name in ("capture",) + PEERS:
                c[name] += status[name, row.file][0] == "read"
            c["union"] += any(status[p, row.file][0] == "read" for p in PEERS)
            c["gap"] += status["capture", row.file][0] != "read" and any(
                status[p, row.file][0] == "read" for p in PEERS)
        best = max(c[p] for p in PEERS)
        if g == "all":
            verdict = "union %s" % ("ok" if c["capture"] >= c["union"] else "short by %d" % (c["union"] - c["capture"]))
            verdict += "; best peer %s" % ("beaten" if c["capture"] > best else "matched" if c["capture"] == best
                                           else "ahead by %d" % (best - c["capture"]))
            print("-" * 86)
        else:
            verdict = "ok" if c["capture"] >= best else "WORSE by %d" % (best - c["capture"])
        if c["gap"]:
            verdict += ", %d read by a peer only" % c["gap"]
        n = len(members)
        cells = ["%3d %3.0f%%" % (c[k], 100 * c[k] / n) for k in ("capture",) + PEERS + ("union",)]
        print("%-16s %5d %9s %9s %9s %9s %9s  %s" % (g, n, *cells, verdict))
    print()


print("Decode rate, %d images (%s); counts are codes read, %% of the group" % (len(rows), args.corpus))
print()
table("family", "family")
table("variant", "degradation")
table("payload", "payload")

addon_rows = [r for r in rows if r.addon]
print("Add-ons (%d symbols with EAN-2/EAN-5): main+add-on read / main read, add-on dropped" % len(addon_rows))
for name in ("capture",) + PEERS:
    read = sum(status[name, r.file][0] == "read" for r in addon_rows)
    dropped = sum(status[name, r.file][0] == "addon" for r in addon_rows)
    print("  %-12s %3d / %3d" % (name, read, dropped))
print()
print("Misread (a text that is not in the image): " + ", ".join(
    "%s %d" % (name, sum(status[name, r.file][1] for r in rows)) for name in ("capture",) + PEERS))
if crashes:
    print("Crashes/timeouts: " + ", ".join("%s %d" % kv for kv in crashes.items()))
print("capture: text read but bytes not the raw payload: %d images" % len(bytes_differ))
for base in collections.OrderedDict.fromkeys(stem(r.file) for r in bytes_differ):
    rs = [r for r in bytes_differ if stem(r.file) == base]
    got = {r2["bytes"] for r in rs for r2 in results["capture"][r.file] if r2["text"] in forms("capture", r)[0]}
    print("  %s (%d): expected %s, got %s" % (base, len(rs), rs[0].raw.hex(), ", ".join(sorted(got))))
print()

print("Read by a peer, missed by capture, by family and base symbol (the degraded copies; which peer;")
print("what capture reported):")
gap = [r for r in rows if status["capture", r.file][0] != "read" and any(status[p, r.file][0] == "read" for p in PEERS)]
for fam in sorted({r.family for r in gap}):
    members = [r for r in gap if r.family == fam]
    found = [r for r in members if results["capture"][r.file]]
    print("  %s: %d (capture found nothing: %d; capture's text differs: %d)" % (
        fam, len(members), len(members) - len(found), len(found)))
    grouped(members, lambda rs: ["expected %s, read by %s" % (
        json.dumps(rs[0].text + (" +" + rs[0].addon if rs[0].addon else ""), ensure_ascii=False),
        ", ".join("%s %d" % (p, sum(status[p, r.file][0] == "read" for r in rs)) for p in PEERS))] + capture_texts(rs))
if not gap:
    print("  none")
print()

misread = [r for r in rows if status["capture", r.file][1]]
print("capture misreads: a text that is not the image's, by base symbol (%d images):" % len(misread))
grouped(misread, lambda rs: ["expected %s" % json.dumps(rs[0].text, ensure_ascii=False)] + [
    "capture: %s (%d)" % (t, n) for t, n in collections.Counter(
        json.dumps([x["text"] for x in results["capture"][r.file] if x["text"] not in sum(map(list, forms("capture", r)), [])],
                   ensure_ascii=False) for r in rs).most_common()])
if not misread:
    print("  none")
print()

if args.json:
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump({"rows": [r._asdict() | {"raw": r.raw.hex()} for r in rows], "results": results,
                   "status": {"%s\t%s" % k: v for k, v in status.items()}}, f, ensure_ascii=False, indent=1)


def ms(s):
    return "%8.1f ms" % (1000 * s)


print("Wall time, one image per process (%d images each; Python's subprocess start included for all):" % len(rows))
print("  %-12s %11s %11s" % ("", "median", "total"))
for name, _ in TOOLS:
    print("  %-12s %s %9.2f s" % (name, ms(statistics.median(times[name])), sum(times[name])))
per = {name: (statistics.median(times[name]), sum(times[name])) for name, _ in TOOLS}
print("  capture/zbarimg      median %.2f  total %.2f  (goal <= 1.00)" % (
    per["capture"][0] / per["zbarimg"][0], per["capture"][1] / per["zbarimg"][1]))
print("  capture/ZXingReader  median %.2f  total %.2f" % (
    per["capture"][0] / per["ZXingReader"][0], per["capture"][1] / per["ZXingReader"][1]))

if not args.no_batch:
    # Debian's ZXingReader aborts (SIGABRT, an assertion) on some DataBar images whatever their size, and
    # an abort ends its batch there: the batch leaves out every image a tool did not survive alone.
    survived = [p for row, p in zip(rows, paths) if row.file not in crashed]
    image_args = [a for p in survived for a in ("--image", p)]
    # --dir reads every image in the corpus, so it only joins when all of them are measured.
    batch = [("capture --image ×N", [args.capture, "--json", "trigger", "socketcam", "start", *image_args]),
             ("capture --dir", [args.capture, "--json", "trigger", "socketcam", "start", "--dir", images]),
             ][:1 if args.only else 2] + [
             ("zbarimg", ["zbarimg", "--nodbus", "-q", "--raw", *survived]),
             ("ZXingReader", ["ZXingReader", *survived]),
             ("zxing-cpp", [VENV_PYTHON, PEER, *survived])]
    samples, failed = collections.defaultdict(list), collections.defaultdict(list)
    for _ in range(args.runs):
        for name, cmd in batch:
            _, rc, dt = run(cmd)
            if rc == "timeout" or rc < 0:
                failed[name].append("timeout" if rc == "timeout" else "signal %d" % -rc)
            samples[name].append(dt)
    med = {name: statistics.median(s) for name, s in samples.items()}
    print()
    print("Wall time, one process over %d images (median of %d)%s:" % (
        len(survived), args.runs, "; left out, a tool aborts on them alone: %d (--dir reads all %d)" % (
            len(rows) - len(survived), len(rows)) if len(survived) < len(rows) else ""))
    for name, _ in batch:
        print("  %-20s %9.2f s  (%s)%s" % (name, med[name], ", ".join("%.2f" % s for s in samples[name]),
                                         "  FAILED: " + ", ".join(failed[name]) if failed[name] else ""))
    for name in [n for n, _ in batch if n.startswith("capture")]:
        print("  %-20s / zbarimg %.2f (goal < 1.00), / ZXingReader %.2f (goal < 1.00), / zxing-cpp %.2f" % (
            name, med[name] / med["zbarimg"], med[name] / med["ZXingReader"], med[name] / med["zxing-cpp"]))
