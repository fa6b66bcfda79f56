#!/usr/bin/env python3
"""`listen` under load: resident memory and CPU over 1,000,000 events from several
devices — goal: flat memory, every event delivered exactly once.

DEVICES pseudo-terminals, each a line-mode serial scanner (`serial:/dev/pts/N?framing=line`), each fed
TOTAL/DEVICES codes `D<k>-<seq>` (unique per device and sequence number) with CR LF by a writer thread
per pty (a blocking write to the master waits when the line discipline's buffer is full, so nothing is
dropped on the way). Two runs: a flood (as fast as the ptys take the codes) and one paced at PACE codes/s
in all (default 10,000/s). Under the flood capture's readers stop reading while the printer is a queue's
length behind (back-pressure), so the backlog (fed, not yet printed; reported) waits in the ptys and the
blocked writers, not in capture. `capture --json listen PTY... --count TOTAL` writes its JSON Lines to
a file; VmRSS, VmHWM, CPU and the output size are sampled from /proc every 0.2 s; user+sys CPU of the
whole run comes from wait4(2), the peak from VmHWM (wait4's ru_maxrss carries this script's own size
across the exec). Every decodedData line is then checked: its code,
that it came from the device the code was written to, duplicates, missing codes.
Peer, the I/O floor: the same feed on fresh ptys read by one `cat /dev/pts/N > FILE` per pty (ptys in
raw mode, as capture sets them); its CPU from wait4(2) once every byte arrived. Ratio = capture CPU /
cat CPU. Usage: listen-load.py CAPTURE [TOTAL] [DEVICES] [PACE] (PACE 0: the flood run only)
"""
import json, os, shutil, subprocess, sys, tempfile, threading, time, tty

capture = os.path.abspath(sys.argv[1])
total = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
ndev = int(sys.argv[3]) if len(sys.argv) > 3 else 4
pace = int(sys.argv[4]) if len(sys.argv) > 4 else 10_000
assert 1 <= ndev <= 10, "1 to 10 devices (the codes are D0-... to D9-...)"
per = total // ndev
total = per * ndev
work = tempfile.mkdtemp(prefix="capture-listen-load.")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
TICK = os.sysconf("SC_CLK_TCK")


LINE = 12  # len(b"D0-0000000\r\n")


def feed(k):
    return b"".join(b"D%d-%07d\r\n" % (k, seq) for seq in range(per))


def ptys():
    """DEVICES (master fd, slave fd, slave path), slave in raw mode (no echo back to the master)."""
    out = []
    for _ in range(ndev):
        master, slave = os.openpty()
        tty.setraw(slave)
        out.append((master, slave, os.ttyname(slave)))
    return out


def write_all(fd, data, progress, k, rate):
    """Everything into the master; at `rate` codes/s (0: as fast as the pty takes it), in 100-code slices."""
    view = memoryview(data)
    step = 100 * LINE if rate else 4096
    t0 = time.perf_counter()
    done = 0
    while view:
        if rate:
            due = t0 + (done // LINE) / rate
            pause = due - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
        n = os.write(fd, view[:step])
        view = view[n:]
        done += n
        progress[k] = done


def start_writers(pairs, feeds, progress, rate=0):
    threads = [threading.Thread(target=write_all, args=(m, f, progress, k, rate / ndev), daemon=True)
               for k, ((m, _, _), f) in enumerate(zip(pairs, feeds))]
    for t in threads:
        t.start()
    return threads


def proc_sample(pid):
    """(VmRSS kB, CPU seconds, VmHWM kB) from /proc, or None once the process is gone."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            rss = int(f.read().split()[1]) * PAGE_KB
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/status") as f:
            hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
        return rss, (int(fields[11]) + int(fields[12])) / TICK, hwm
    except (OSError, IndexError, StopIteration, ValueError):
        return None


def wait4(pid):
    _, status, usage = os.wait4(pid, 0)
    return status, usage.ru_utime, usage.ru_stime, usage.ru_maxrss


feeds = [feed(k) for k in range(ndev)]
feed_bytes = sum(len(f) for f in feeds)


def run_capture(rate):
    """One listen over the whole feed (at `rate` codes/s in all, 0 = flood); its figures."""
    pairs = ptys()
    selectors = [f"serial:{path}?framing=line" for _, _, path in pairs]
    out_path = os.path.join(work, "listen.jsonl")
    err_path = os.path.join(work, "listen.err")
    env = dict(os.environ, XDG_STATE_HOME=work)
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen([capture, "--json", "listen", *selectors, "--count", str(total),
                                 "--timeout", "1800s"], env=env, stdout=out, stderr=err)
    deadline = time.time() + 30
    while open(out_path, "rb").read().count(b'"deviceArrival"') < ndev:
        if time.time() > deadline or proc.poll() is not None:
            sys.exit(f"capture did not announce {ndev} devices: {open(err_path).read()}")
        time.sleep(0.05)
    head = os.path.getsize(out_path)
    samples = []  # (seconds since the feed started, rss kB, cpu s, output bytes, codes fed)
    progress = [0] * ndev
    t0 = time.perf_counter()
    first = proc_sample(proc.pid)
    samples.append((0.0, first[0], first[1], head, 0))
    # The peak: VmHWM, the high-water mark of capture's own address space since its exec. wait4's
    # ru_maxrss is not used for it: on exec Linux keeps the larger of the old and new address spaces'
    # peaks (exec_mmap → setmax_mm_hiwater_rss), and the old one is this Python process's (fork/vfork),
    # tens of MB with the feeds in memory, so it reported this script's size, not capture's.
    hwm = [first[2]]
    writers = start_writers(pairs, feeds, progress, rate)
    stop = threading.Event()

    def sampler():
        while not stop.is_set():
            s = proc_sample(proc.pid)
            if s is None:
                return
            samples.append((time.perf_counter() - t0, s[0], s[1], os.path.getsize(out_path), sum(progress) // LINE))
            hwm[0] = max(hwm[0], s[2])
            stop.wait(0.2)

    threading.Thread(target=sampler, daemon=True).start()
    fed_at = None

    def fed():
        nonlocal fed_at
        for w in writers:
            w.join()
        fed_at = time.perf_counter() - t0

    threading.Thread(target=fed, daemon=True).start()
    status, utime, stime, maxrss = wait4(proc.pid)
    wall = time.perf_counter() - t0
    stop.set()
    for m, s, _ in pairs:
        os.close(m)
        os.close(s)

    # Check every code.
    seen = [bytearray(per) for _ in range(ndev)]
    decoded = unknown = wrong_device = other = 0
    with open(out_path, "rb") as f:
        for line in f:
            if b'"event":"decodedData"' not in line:
                other += 1
                continue
            decoded += 1
            event = json.loads(line)
            text = event.get("text", "")
            try:
                k, seq = text[1:].split("-")
                k, seq = int(k), int(seq)
                assert text[0] == "D" and 0 <= k < ndev and 0 <= seq < per
            except (ValueError, AssertionError):
                unknown += 1
                continue
            if event["device"]["id"] != selectors[k]:
                wrong_device += 1
            if seen[k][seq] < 255:
                seen[k][seq] += 1
    out_bytes = os.path.getsize(out_path)
    os.unlink(out_path)
    per_event = (out_bytes - head) / max(decoded, 1)  # output bytes stand in for events delivered

    def delivered(sample):
        return max(0, (sample[3] - head) / per_event)

    def at(fraction):
        return next((s for s in samples if delivered(s) >= fraction * total), samples[-1])

    backlog = max(samples, key=lambda s: s[4] - delivered(s))
    return dict(
        rate=rate, status=os.waitstatus_to_exitcode(status), decoded=decoded, other=other, unknown=unknown,
        wrong_device=wrong_device, duplicates=sum(sum(c - 1 for c in s if c > 1) for s in seen),
        missing=sum(s.count(0) for s in seen), out_bytes=out_bytes, wall=wall, fed_at=fed_at,
        utime=utime, stime=stime, maxrss=maxrss, hwm=hwm[0],
        marks=[(label, at(fr)) for label, fr in (("start", 0.0), ("10%", 0.1), ("50%", 0.5), ("end", 1.0))],
        backlog=(int(backlog[4] - delivered(backlog)), backlog[1], backlog[0]))


runs = [run_capture(0)] + ([run_capture(pace)] if pace else [])

# --- peer: cat -----------------------------------------------------------------------------------------
pairs = ptys()
cats, cat_files = [], []
for k, (_, _, path) in enumerate(pairs):
    name = os.path.join(work, f"cat{k}.out")
    with open(name, "wb") as f:
        cats.append(subprocess.Popen(["cat", path], stdout=f))
    cat_files.append(name)
time.sleep(0.3)  # cat has opened its pty
c0 = time.perf_counter()
writers = start_writers(pairs, feeds, [0] * ndev)
while sum(os.path.getsize(n) for n in cat_files) < feed_bytes:
    time.sleep(0.01)
cat_wall = time.perf_counter() - c0
cat_cpu = 0.0
for p in cats:
    p.terminate()
    _, u, s, _ = wait4(p.pid)
    cat_cpu += u + s
cat_ok = all(open(n, "rb").read() == f for n, f in zip(cat_files, feeds))
for n in cat_files:
    os.unlink(n)
for m, s, _ in pairs:
    os.close(m)
    os.close(s)

shutil.rmtree(work, ignore_errors=True)
bad = False
for r in runs:
    cpu = r["utime"] + r["stime"]
    how = f"paced at {r['rate']:,} codes/s" if r["rate"] else "flood (as fast as the ptys take it)"
    print(f"capture {capture}, {how}: {ndev} line-mode ptys x {per:,} codes = {total:,} events, "
          f"{feed_bytes / 1e6:.1f} MB in, {r['out_bytes'] / 1e6:.1f} MB of JSON Lines out; exit {r['status']}")
    print(f"  delivered {r['decoded']:,} decodedData: missing {r['missing']}, duplicates {r['duplicates']}, "
          f"unknown {r['unknown']}, from the wrong device {r['wrong_device']}; other lines {r['other']} "
          f"(arrivals/removals)")
    print("  VmRSS " + ", ".join(f"{label} {s[1] / 1024:.1f} MB" for label, s in r["marks"])
          + f"; peak (VmHWM, last sample) {r['hwm'] / 1024:.1f} MB (wait4's {r['maxrss'] / 1024:.1f} MB "
          f"includes this script's own size at the fork)")
    n, rss, when = r["backlog"]
    print(f"  feed all written into the ptys (buffers of a few KB) after {r['fed_at']:.1f} s; largest backlog (fed, not yet "
          f"printed) {n:,} events at {when:.1f} s, VmRSS then {rss / 1024:.1f} MB")
    print(f"  wall {r['wall']:.1f} s ({r['decoded'] / r['wall']:,.0f} events/s); CPU user {r['utime']:.1f} s + "
          f"sys {r['stime']:.1f} s = {cpu:.1f} s ({cpu / max(r['decoded'], 1) * 1e6:.1f} us/event)")
    bad = bad or bool(r["missing"] or r["duplicates"] or r["unknown"] or r["wrong_device"])
cpu = runs[0]["utime"] + runs[0]["stime"]
print(f"peer: {ndev} x cat /dev/pts/N > FILE, same feed (flood): wall {cat_wall:.1f} s, CPU {cat_cpu:.2f} s "
      f"({cat_cpu / total * 1e6:.2f} us/event); bytes identical: {cat_ok}")
print(f"ratio CPU capture (flood) / cat = {cpu / cat_cpu:.0f}" if cat_cpu > 0 else "ratio: cat used no measurable CPU")
if bad:
    sys.exit("FAIL: not every code was delivered exactly once")
