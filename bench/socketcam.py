#!/usr/bin/env python3
"""SocketCam vs zbarimg and ZXingReader: decode rate per symbology and wall time, same images, same run.

Wall time is the median of repeated runs (these machines are noisy); the figures that matter are
the ratios, printed last. Goals: decode rate >= the better peer on every symbology both
support; per-image wall time <= 1.2x zbarimg; batch faster than one zbarimg call over the same files.
"""
import base64, csv, json, os, statistics, subprocess, sys, tempfile, time

capture, images = sys.argv[1], sys.argv[2]
rows = [r for r in csv.reader(open(os.path.join(images, "manifest.tsv")), delimiter="\t") if r and not r[0].startswith("#")]
files = [os.path.join(images, r[0]) for r in rows]
env = dict(os.environ, XDG_STATE_HOME=tempfile.mkdtemp())
# Formats as bench/make-images.sh names them (Decoders.BarcodeFormat); Debian's ZBar lacks the 2D ones
# but DataMatrix, Aztec and PDF417.
ZBAR_FORMATS = {"qrCode", "code128", "code39", "ean13", "ean8", "upcA", "upcE", "itf", "codabar", "dataBar",
                "dataBarExpanded"}


def run(cmd, stdin=None):
    return subprocess.run(cmd, env=env, stdin=stdin, capture_output=True)


def ours_batch():
    out = run([capture, "--json", "trigger", "socketcam", "start", *sum((["--image", f] for f in files), [])])
    found = {}
    for line in out.stdout.decode().splitlines():
        ev = json.loads(line)
        if ev.get("event") == "decodedData":
            found.setdefault(ev["origin"], set()).add(base64.b64decode(ev["bytes"]).decode("utf-8", "replace"))
    return found


def zbar_one(f):
    out = run(["zbarimg", "--nodbus", "-q", "--raw", f])
    return set(out.stdout.decode("utf-8", "replace").splitlines())


def zxing_one(f):
    out = run(["ZXingReader", f])
    texts = set()
    for line in out.stdout.decode("utf-8", "replace").splitlines():
        if line.startswith("Text:"):
            texts.add(line.split(":", 1)[1].strip().strip('"'))
    return texts


def normal(text):
    # Peers print the same symbol differently: GS1 element strings with "(01)" parentheses or a GS
    # byte, Codabar with or without its start/stop characters.
    t = text.replace("(", "").replace(")", "").replace("\x1d", "")
    if len(t) > 2 and t[0] in "ABCD" and t[-1] in "ABCD":
        t = t[1:-1]
    return t


def matches(expected, found):
    # EAN/UPC readers may add or drop the check digit or a leading 0; count the payload as found when
    # one read contains it or is contained in it.
    e = normal(expected)
    return any(e == normal(t) or (e.isdigit() and normal(t).isdigit() and (e in normal(t) or normal(t) in e))
               for t in found)


ours = ours_batch()
stats = {}
for (name, fmt, expected), f in zip(rows, files):
    s = stats.setdefault(fmt, {"n": 0, "ours": 0, "zbar": 0, "zxing": 0})
    s["n"] += 1
    s["ours"] += matches(expected, ours.get(f, set()))
    s["zbar"] += matches(expected, zbar_one(f))
    s["zxing"] += matches(expected, zxing_one(f))

print(f"{'symbology':18} {'images':>6} {'capture':>8} {'zbarimg':>8} {'ZXing':>8}  verdict")
worse = 0
for fmt, s in sorted(stats.items()):
    best = max(s["zxing"], s["zbar"] if fmt in ZBAR_FORMATS else 0)
    verdict = "ok" if s["ours"] >= best else "WORSE"
    worse += verdict != "ok"
    print(f"{fmt:18} {s['n']:6} {s['ours']/s['n']:8.0%} {s['zbar']/s['n'] if fmt in ZBAR_FORMATS else float('nan'):8.0%} "
          f"{s['zxing']/s['n']:8.0%}  {verdict}")
total = sum(s["n"] for s in stats.values())
print(f"{'all':18} {total:6} {sum(s['ours'] for s in stats.values())/total:8.0%}")


def median_time(cmd, repeat):
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, env=env, capture_output=True)
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


# (a) one image per process, over a sample of the images
sample = files[:: max(1, len(files) // 25)]
per_ours = statistics.mean(median_time([capture, "trigger", "socketcam", "start", "--image", f], 5) for f in sample)
per_zbar = statistics.mean(median_time(["zbarimg", "--nodbus", "-q", "--raw", f], 5) for f in sample)
per_zx = statistics.mean(median_time(["ZXingReader", f], 5) for f in sample)
# (b) all images in one process
batch_ours = median_time([capture, "trigger", "socketcam", "start", *sum((["--image", f] for f in files), [])], 5)
batch_zbar = median_time(["zbarimg", "--nodbus", "-q", "--raw", *files], 5)
batch_zx = median_time(["ZXingReader", *files], 5)

print()
print(f"per image (1 process each, mean of medians over {len(sample)} images):")
print(f"  capture {per_ours*1000:7.1f} ms   zbarimg {per_zbar*1000:7.1f} ms   ZXingReader {per_zx*1000:7.1f} ms")
print(f"batch of {len(files)} images in one process:")
print(f"  capture {batch_ours*1000:7.1f} ms   zbarimg {batch_zbar*1000:7.1f} ms   ZXingReader {batch_zx*1000:7.1f} ms")
print()
print(f"ratio per image  capture/zbarimg = {per_ours/per_zbar:.2f}  (goal <= 1.20)")
print(f"ratio batch      capture/zbarimg = {batch_ours/batch_zbar:.2f}  (goal < 1.00)")
print(f"ratio batch      capture/ZXingReader = {batch_ours/batch_zx:.2f}")
print(f"symbologies where capture decodes less than the better peer: {worse}")
