#!/usr/bin/env python3
"""`set DEVICE --from FILE` on an already-provisioned device issues no writes.

Against the project's DataMan simulator (Tests/Simulators/DMCCSimulator.swift, run as a process by
bench/dmcc-sim-main.swift), which logs every DMCC command line it receives:
  1. `capture --json get tcp://… --all` writes the device's profile; the bench changes the friendly
     name and flips three symbologies in it (the fleet's target profile);
  2. the first `set --from` provisions: writes happen (counted);
  3. RUNS more `set --from` with the same file: each must make 0 property writes (`SET` lines other
     than the session's `SET COM.DMCC-RESPONSE 1`, which every DMCC connection sends to get extended
     replies — counted and shown apart) and report every property `unchanged`; median time;
  4. the peer: `capture get tcp://… --all`, the read-only pass over the same properties; median time.
Ratio = idempotent set / get --all. Usage: provision.py CAPTURE SIMULATOR [RUNS]
"""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

capture = os.path.abspath(sys.argv[1])
simulator = os.path.abspath(sys.argv[2])
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 10
SESSION_SET = "SET COM.DMCC-RESPONSE 1"
# Off in the simulator: the target profile turns them on.
EDITED_SOURCES = ("Code 39", "PDF 417", "Interleaved 2 of 5")

sim = subprocess.Popen([simulator], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
port = int(sim.stdout.readline().strip().split("=", 1)[1])
device = f"tcp://127.0.0.1:{port}"
work = tempfile.mkdtemp(prefix="capture-provision.")
env = dict(os.environ, XDG_STATE_HOME=work)


def commands():
    sim.stdin.write("commands\n")
    sim.stdin.flush()
    return json.loads(sim.stdout.readline())


def run(args):
    """One capture command, timed; its commands at the simulator."""
    before = len(commands())
    t0 = time.perf_counter()
    out = subprocess.run([capture, *args], env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if out.returncode != 0:
        sys.exit(f"capture {' '.join(args)} exited {out.returncode}: {out.stderr.strip()}")
    seen = commands()[before:]
    sets = [c for c in seen if c.upper().startswith("SET ") and c != SESSION_SET]
    return out.stdout, elapsed, seen, sets


try:
    profile_text, _, _, _ = run(["--json", "get", device, "--all"])
    profile = json.loads(profile_text)
    changed = 0
    for entry in profile["properties"]:
        if entry.get("name") == "friendly-name":
            entry["value"] = "Line 3 reader (provisioned)"
            changed += 1
        elif entry.get("name") == "data-source" and entry["value"]["name"] in EDITED_SOURCES:
            entry["value"]["status"] = 1
            changed += 1
    target = os.path.join(work, "profile.json")
    with open(target, "w") as f:
        json.dump(profile, f)
    properties = len(profile["properties"])

    out, first_time, first_commands, first_sets = run(["--json", "set", device, "--from", target])
    first = json.loads(out)["results"]
    statuses = {s: sum(1 for r in first if r["status"] == s) for s in ("changed", "unchanged", "failed")}
    print(f"profile: {properties} properties from get --all, {changed} edited; first set --from: "
          f"{len(first_sets)} property writes ({', '.join(first_sets)}), {statuses}, {first_time * 1000:.1f} ms")

    times, writes, session_sets, not_unchanged, total_commands = [], [], [], 0, []
    for _ in range(runs):
        out, elapsed, seen, sets = run(["--json", "set", device, "--from", target])
        times.append(elapsed)
        writes.append(len(sets))
        session_sets.append(seen.count(SESSION_SET))
        total_commands.append(len(seen))
        not_unchanged += sum(1 for r in json.loads(out)["results"] if r["status"] != "unchanged")
    peer_times, peer_commands = [], []
    for _ in range(runs):
        _, elapsed, seen, sets = run(["--json", "get", device, "--all"])
        peer_times.append(elapsed)
        peer_commands.append(len(seen))
    ours, peer = statistics.median(times), statistics.median(peer_times)
    print(f"set --from again ({runs} runs): property writes per run {writes} (goal 0), rows not 'unchanged': "
          f"{not_unchanged}; session SET COM.DMCC-RESPONSE 1 per run {max(session_sets)}; "
          f"{statistics.median(total_commands):.0f} commands per run; median {ours * 1000:.1f} ms")
    print(f"peer get --all ({runs} runs): {statistics.median(peer_commands):.0f} commands per run; "
          f"median {peer * 1000:.1f} ms")
    print(f"ratio set --from (idempotent) / get --all = {ours / peer:.2f}")
    if any(writes) or not_unchanged:
        sys.exit("FAIL: an already-provisioned device was written to")
finally:
    sim.stdin.close()
    sim.wait(timeout=10)
    shutil.rmtree(work, ignore_errors=True)
