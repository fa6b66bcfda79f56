#!/usr/bin/python3
"""Camera latency and CPU: capture listen --camera against zbarcam --raw (zbar-tools) and GStreamer's
v4l2src into its zbar element (gst-launch-1.0 -m) on the same vivid camera and frames, in one VM run
(Tests/VM: the bench-camera scenario of scenarios.py, on the benchmarks' own image).

    bench/camera-latency.py CAPTURE [SWITCHES]     CAPTURE: a static release build (make test-vm's)

For 640x480 and 1280x720 (GREY, vivid looped from its output node): SWITCHES times the other of two
codes is put in view; the latency is from the moment its frame was queued on the output node
(VIDIOC_QBUF returned) to the reader's line on stdout, both on the guest's CLOCK_MONOTONIC. Then a
code is held in view for 10 s: the reader's CPU seconds per second (every frame decoded, nothing
printed). The VM is emulated (TCG), so only the ratios mean anything; both readers run on the same
emulated CPU in the same boot, one after the other.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
VM = os.path.join(HERE, "..", "Tests", "VM", "vm.py")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary = os.path.abspath(sys.argv[1])
    switches = sys.argv[2] if len(sys.argv) > 2 else "20"
    share = tempfile.mkdtemp(prefix="capture-bench-camera-")
    # The guest reads BENCH_SWITCHES from a file in the share (the VM has no host environment).
    with open(os.path.join(share, "bench-switches"), "w") as f:
        f.write(switches)
    done = subprocess.run(["/usr/bin/python3", VM, "--binary", binary, "--keep", share, "bench-camera"])
    if done.returncode != 0:
        print(f"bench-camera failed (vm.py exit {done.returncode}); logs in {share}")
        return 1
    with open(os.path.join(share, "bench-camera.json")) as f:
        results = json.load(f)
    print(f"{'size':<10} {'reader':<9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'CPU s/s':>8}")
    for size, readers in results.items():
        for name, r in readers.items():
            if "error" in r:
                print(f"{size:<10} {name:<9} read nothing: {r['error'][:300]}")
                continue
            print(f"{size:<10} {name:<9} {r['p50'] * 1000:8.1f} {r['p99'] * 1000:8.1f} {r['max'] * 1000:8.1f} "
                  f"{r['cpuPerSecond']:8.3f}")
        c = readers["capture"]
        for peer, z in readers.items():
            if peer == "capture":
                continue
            if "error" not in z:
                print(f"{size:<10} ratio capture/{peer}: p50 {c['p50'] / z['p50']:.2f}, "
                      f"p99 {c['p99'] / z['p99']:.2f}, CPU {c['cpuPerSecond'] / max(z['cpuPerSecond'], 1e-9):.2f}")
            else:
                print(f"{size:<10} no ratio to {peer}: it read nothing")
    return 0


if __name__ == "__main__":
    sys.exit(main())
