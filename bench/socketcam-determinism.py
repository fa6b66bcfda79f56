#!/usr/bin/python3
"""Does an image give SocketCam the same codes alone, in a batch, from --dir and from stdin?

    /usr/bin/python3 bench/socketcam-determinism.py CAPTURE CORPUS [--repeat N] [--only REGEX]

CORPUS is a directory written by bench/corpus.py. The reference is each image decoded alone
(`capture --json trigger socketcam start --image FILE`, one process per image). Compared with it:
- stdin: one process per image, `--image -` with the file on standard input;
- batch: one process, `--image F1 --image F2 ...` over every image, REPEAT times (default 2);
- batch, one core: the same under `taskset -c 0` (the decoder pool then has one worker's worth of CPU);
- dir: one process, `--dir CORPUS/images`, REPEAT times.
Per image the result is the multiset of (dataSource name, text, bytes) of its decodedData events, so a
code reported twice differs from once; the points are compared too and a difference in points alone is
listed apart. A process killed by a signal is reported with the images it had not got to. Exit status 1
when anything differs.
"""
import argparse, base64, collections, json, os, re, shutil, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("capture")
ap.add_argument("corpus")
ap.add_argument("--repeat", type=int, default=2)
ap.add_argument("--only", help="only the images whose file name matches this regular expression "
                               "(drops the --dir runs, which read every image)")
args = ap.parse_args()

images = os.path.abspath(os.path.join(args.corpus, "images"))
files = [line.split("\t", 1)[0] for line in open(os.path.join(args.corpus, "manifest.tsv"), encoding="utf-8")
         if line.strip() and not line.startswith("#")]
if args.only:
    files = [f for f in files if re.search(args.only, f)]
env = dict(os.environ, XDG_STATE_HOME=tempfile.mkdtemp(prefix="socketcam-determinism-"))
base = [args.capture, "--json", "trigger", "socketcam", "start"]


def run(cmd, stdin=None):
    p = subprocess.run(cmd, env=env, stdin=stdin, capture_output=True, timeout=600)
    found = collections.defaultdict(list)
    for line in p.stdout.decode("utf-8", "surrogateescape").split("\n"):
        if not line.startswith("{"):
            continue
        ev = json.loads(line)
        if ev.get("event") != "decodedData":
            continue
        key = (ev["dataSource"]["name"], ev["text"], base64.b64decode(ev["bytes"]).hex())
        found[os.path.basename(ev["origin"])].append((key, json.dumps(ev.get("points"))))
    return found, p.returncode


def summary(entries):
    return sorted(entries)


def codes(entries):
    return sorted(k for k, _ in entries)


start = time.monotonic()
modes = collections.OrderedDict()
alone, rcs = {}, collections.Counter()
for f in files:
    found, rc = run([*base, "--image", os.path.join(images, f)])
    alone[f] = found.get(f, [])
    rcs[rc] += 1
print("alone: %d processes, exit statuses %s" % (len(files), dict(rcs)))
stdin, rcs = {}, collections.Counter()
for f in files:
    with open(os.path.join(images, f), "rb") as fh:
        found, rc = run([*base, "--image", "-"], stdin=fh)
    stdin[f] = found.get("-", [])
    rcs[rc] += 1
print("stdin: %d processes, exit statuses %s" % (len(files), dict(rcs)))
modes["stdin"] = (stdin, 0)
image_args = [a for f in files for a in ("--image", os.path.join(images, f))]
for n in range(1, args.repeat + 1):
    modes["batch #%d" % n] = run([*base, *image_args])
if shutil.which("taskset") and (os.cpu_count() or 1) > 1:
    modes["batch, one core"] = run(["taskset", "-c", "0", *base, *image_args])
if not args.only:
    for n in range(1, args.repeat + 1):
        modes["dir #%d" % n] = run([*base, "--dir", images])

differences = 0
for mode, (found, rc) in modes.items():
    if rc not in (0, 17) and mode != "stdin":
        print("%s: exit status %d%s" % (mode, rc, " (signal %d)" % -rc if rc < 0 else ""))
        differences += 1
    diff = [f for f in files if codes(found.get(f, [])) != codes(alone[f])]
    points = [f for f in files if f not in diff and summary(found.get(f, [])) != summary(alone[f])]
    differences += len(diff)
    print("%s: %d of %d images differ from alone%s" % (
        mode, len(diff), len(files), ", %d in points only" % len(points) if points else ""))
    for f in diff:
        a, b = codes(alone[f]), codes(found.get(f, []))
        print("  %s" % f)
        print("    alone: %s" % json.dumps([list(x) for x in a], ensure_ascii=False))
        print("    %s: %s" % (mode, json.dumps([list(x) for x in b], ensure_ascii=False)))
    if points:
        print("  points only: " + " ".join(points))
print("%.0f s; %s" % (time.monotonic() - start, "no differences" if not differences else "DIFFERENCES"))
sys.exit(1 if differences else 0)
