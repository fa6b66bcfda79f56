#!/usr/bin/python3
"""End-to-end tests of capture's Bluetooth Classic and LE code against a real kernel Bluetooth stack.

The host kernel has no AF_BLUETOOTH, so this boots the stock Debian kernel under qemu (software
emulation: /dev/kvm here only runs PVM guests) with an initramfs holding a Debian root file system
(mmdebstrap), BlueZ and btvirt. btvirt makes two virtual controllers: hci0 for capture, hci1 for the
device emulations (scanner.py: a Classic SPP scanner; d600.py: a D600 as a BLE GATT peripheral). The
capture binary and the scenarios come in over a 9p share; each scenario's result and log come back
through it (see README.md).

    vm.py [--binary PATH] [--keep DIR] [--rebuild] [SCENARIO ...]

Exit status: 0 all scenarios passed, 1 some failed, 2 the VM did not run them (no result), 3 the image
could not be built (e.g. the Debian mirror out of reach).
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# What the image holds besides the essential set: the tools the guest needs, BlueZ with btvirt (and
# btmgmt, in bluez), python with dbus and GLib for the device emulations (bluetoothd's Profile1,
# GattManager1 and LEAdvertisingManager1 APIs call back into them), and the shared libraries the
# capture binary links or loads on demand (libstdc++6 for the zxing-cpp linked into it, which is C++;
# libzbar0, libdbus-1-3, libbluetooth3, libwebsockets17 and libmosquitto1 are dlopen'd by capture when a
# command needs them, docs/architecture.md §2).
GUEST_PACKAGES = [
    "mount", "kmod", "dbus-daemon", "dbus", "bluez", "bluez-test-tools", "python3-dbus", "python3-gi",
    "libzbar0", "libstdc++6", "libpng16-16", "libjpeg62-turbo", "libdbus-1-3", "libbluetooth3",
    "libwebsockets17", "libmosquitto1", "rfkill",
    # The camera scenarios: v4l2-ctl sets vivid's DV timings, controls and formats (camera.py);
    # camera-serve's CaptureJS client is Tests/Service's, on python3-websockets.
    "v4l-utils", "python3-websockets",
]
# Only in the benchmarks' image (bench/camera-latency.py): the peer camera reader, GStreamer's v4l2src
# feeding its zbar element (gst-launch-1.0 -m prints each symbol as an element message). Debian 12's
# zbarcam reads nothing from vivid (bench/README.md, "Camera latency"); this is ZBar's other camera
# front end. Too large for the test image (105 packages), so the benchmarks build their own, in a cache
# of their own (DEFAULT_BENCH_CACHE: each cache keeps one image), and boot it with more memory.
BENCH_GUEST_PACKAGES = ["gstreamer1.0-tools", "gstreamer1.0-plugins-good", "gstreamer1.0-plugins-bad"]
BENCH_MEMORY_MB = 3072
# Module directories copied whole from the host's kernel (relative to kernel/): Bluetooth and all
# crypto (the kernel asks for ECDH, CMAC, a DRBG… by name when SSP/SMP need them). The modules init
# loads come with their dependencies besides (see build_image).
MODULE_DIRS = ["net/bluetooth", "crypto", "arch/x86/crypto", "lib/crypto"]
# Loaded by init after the 9p share is up.
GUEST_MODULES = [
    "bluetooth", "hci_vhci", "rfcomm", "ecdh_generic", "ecc", "cmac", "ccm", "drbg", "jitterentropy_rng",
    "aesni_intel", "sha256_generic", "hmac",
]
# In the image with their dependencies but not loaded at boot: the camera scenarios load vivid
# themselves, with the options each needs (camera.py), and unload it to take the camera away.
ON_DEMAND_MODULES = ["vivid"]
SUITE = "bookworm"
IMAGE_VERSION = "1"
DEFAULT_CACHE = "/tmp/capture-vm-image"
DEFAULT_BENCH_CACHE = "/tmp/capture-vm-image-bench"
# A whole run (boot ~15 s, 15 scenarios) takes ~150 s on a quiet host; a busy one is several times
# slower. 10 minutes keeps a hung guest from eating the CI budget (make test stays under 20 min);
# --repeat runs get 40 s a scenario when that is more.
BOOT_TIMEOUT = 600
BENCH_TIMEOUT = 3600
SCENARIO_TIMEOUT = 40


def log(message):
    print(f"vm: {message}", flush=True)


def kernel_release():
    """The newest Debian kernel installed on the host (package linux-image-amd64)."""
    releases = sorted(
        name[len("vmlinuz-"):] for name in os.listdir("/boot") if name.startswith("vmlinuz-")
    )
    for release in reversed(releases):
        if os.path.isdir(f"/lib/modules/{release}/kernel/net/bluetooth"):
            return release
    raise SystemExit("vm: no Debian kernel with Bluetooth modules in /boot (install linux-image-amd64)")


def apt_sources():
    for path in ["/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"]:
        if os.path.isfile(path) and os.path.getsize(path) > 0:
            return path
    return "http://deb.debian.org/debian"


def image_key(release, packages):
    digest = hashlib.sha256()
    for part in [IMAGE_VERSION, SUITE, release, " ".join(packages), " ".join(MODULE_DIRS),
                 " ".join(GUEST_MODULES), " ".join(ON_DEMAND_MODULES)]:
        digest.update(part.encode() + b"\0")
    with open(os.path.join(HERE, "init"), "rb") as f:
        digest.update(f.read())
    return digest.hexdigest()[:16]


def build_image(cache, rebuild=False, packages=GUEST_PACKAGES):
    """The kernel and initramfs, built once per set of inputs under `cache`/KEY."""
    release = kernel_release()
    key = image_key(release, packages)
    target = os.path.join(cache, key)
    kernel, initrd = os.path.join(target, "vmlinuz"), os.path.join(target, "initrd.zst")
    if not rebuild and os.path.isfile(kernel) and os.path.isfile(initrd):
        log(f"image {target} (cached)")
        return kernel, initrd
    started = time.monotonic()
    os.makedirs(cache, exist_ok=True)
    work = tempfile.mkdtemp(prefix="build-", dir=cache)
    root = os.path.join(work, "root")
    try:
        excludes = ["/usr/share/doc/*", "/usr/share/man/*", "/usr/share/locale/*", "/usr/share/info/*"]
        command = ["mmdebstrap", "--variant=essential", "--format=directory", "--quiet",
                   "--include=" + ",".join(packages)]
        command += [f"--dpkgopt=path-exclude={e}" for e in excludes]
        command += [SUITE, root, apt_sources()]
        subprocess.run(command, check=True)
        modules = os.path.join(root, "usr/lib/modules", release)
        for item in MODULE_DIRS:
            source = f"/lib/modules/{release}/kernel/{item}"
            if not os.path.exists(source):
                continue
            destination = os.path.join(modules, "kernel", item)
            os.makedirs(os.path.dirname(destination), exist_ok=True)
            if os.path.isdir(source):
                shutil.copytree(source, destination)
            else:
                shutil.copy2(source, destination)
        # The modules init loads, with everything they depend on (modprobe resolves that on the host).
        for name in ["virtio_pci", "9pnet_virtio", "9p"] + GUEST_MODULES + ON_DEMAND_MODULES:
            shown = subprocess.run(["modprobe", "-D", "-S", release, name], capture_output=True, text=True,
                                   check=True).stdout
            for line in shown.splitlines():
                if line.startswith("insmod "):
                    source = line.split()[1]
                    destination = os.path.join(root, "usr", source.lstrip("/").removeprefix("usr/"))
                    os.makedirs(os.path.dirname(destination), exist_ok=True)
                    shutil.copy2(source, destination)
        for name in ["modules.order", "modules.builtin", "modules.builtin.modinfo"]:
            shutil.copy2(f"/lib/modules/{release}/{name}", modules)
        subprocess.run(["depmod", "-b", os.path.join(root, "usr"), release], check=True)
        with open(os.path.join(root, "etc/vm-modules"), "w") as f:
            f.write("\n".join(GUEST_MODULES) + "\n")
        shutil.copy2(os.path.join(HERE, "init"), os.path.join(root, "init"))
        os.chmod(os.path.join(root, "init"), 0o755)
        os.makedirs(target, exist_ok=True)
        partial = initrd + ".part"
        with open(partial, "wb") as out:
            find = subprocess.Popen(["find", ".", "-print0"], cwd=root, stdout=subprocess.PIPE)
            cpio = subprocess.Popen(["cpio", "--null", "-o", "-H", "newc", "--quiet"], cwd=root,
                                    stdin=find.stdout, stdout=subprocess.PIPE)
            find.stdout.close()
            zstd = subprocess.Popen(["zstd", "-q", "-T0", "-9", "-c"], stdin=cpio.stdout, stdout=out)
            cpio.stdout.close()
            if zstd.wait() or cpio.wait() or find.wait():
                raise SystemExit("vm: packing the initramfs failed")
        shutil.copy2(f"/boot/vmlinuz-{release}", kernel)
        os.replace(partial, initrd)
        # Images of older inputs are never used again.
        for name in os.listdir(cache):
            if name != key and len(name) == len(key) and os.path.isdir(os.path.join(cache, name)):
                shutil.rmtree(os.path.join(cache, name), ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    size = os.path.getsize(initrd) / 1e6
    log(f"image {target} built in {time.monotonic() - started:.0f} s (initramfs {size:.0f} MB)")
    return kernel, initrd


# The camera scenarios' pictures: (name, zint symbology, data, frame size). Drawn at each run by zint
# (Debian's zint: -b 58 QR Code, 71 Data Matrix, 20 Code 128, 13 EAN-13) and centred on a white frame
# by ImageMagick, as 8-bit PGM; camera.py turns them into the pixel format under test.
FRAMES = [
    ("qr-640", 58, "capture vm tier: QR Code", (640, 480)),
    ("qr2-640", 58, "capture vm tier: another QR Code", (640, 480)),
    ("dm-640", 71, "capture vm tier: Data Matrix", (640, 480)),
    ("c128-640", 20, "CAPTURE-VM-128", (640, 480)),
    ("ean-640", 13, "400638133393", (640, 480)),
    ("blank-640", None, "", (640, 480)),
    ("qr-1280", 58, "capture vm tier: QR Code at 720p", (1280, 720)),
    ("ean-1280", 13, "978020137962", (1280, 720)),
    ("blank-1280", None, "", (1280, 720)),
]


def draw_frames(directory):
    os.makedirs(directory, exist_ok=True)
    for name, symbology, data, (width, height) in FRAMES:
        target = os.path.join(directory, f"{name}.pgm")
        if symbology is None:
            subprocess.run(["convert", "-size", f"{width}x{height}", "xc:white", "-depth", "8", target], check=True)
            continue
        png = os.path.join(directory, f"{name}.png")
        # Module sizes that fit the frame with the quiet zones (zint's scale 1 is 2 pixels a module).
        scale = {58: "4", 71: "4", 20: "1.5", 13: "3"}[symbology] if width <= 640 else "6"
        subprocess.run(["zint", "-b", str(symbology), f"--scale={scale}", "-d", data, "-o", png], check=True)
        subprocess.run(["convert", png, "-background", "white", "-gravity", "center", "-extent",
                        f"{width}x{height}", "-colorspace", "Gray", "-depth", "8", target], check=True)
        os.remove(png)


def run(kernel, initrd, binary, scenarios, share, bench=False):
    """Boots the VM once; the guest runs the scenarios in order. Returns the results (or None)."""
    os.makedirs(share, exist_ok=True)
    for name in ["guest.sh", "scenarios.py", "scanner.py", "d600.py", "camera.py"]:
        shutil.copy2(os.path.join(HERE, name), share)
    if any(name.startswith(("camera-", "bench-camera")) for name in scenarios):
        draw_frames(os.path.join(share, "frames"))
    if "camera-serve" in scenarios:
        shutil.copy2(os.path.join(HERE, "..", "Service", "serve_harness.py"), share)
    if "bench-camera" in scenarios:
        # A peer: the host's zbarcam (zbar-tools, a bench package); the guest has its libzbar0.
        shutil.copy2(shutil.which("zbarcam") or "/usr/bin/zbarcam", os.path.join(share, "zbarcam"))
    os.chmod(os.path.join(share, "guest.sh"), 0o755)
    shutil.copy2(binary, os.path.join(share, "capture"))
    with open(os.path.join(share, "scenarios"), "w") as f:
        f.write("\n".join(scenarios) + "\n")
    for stale in ["rc", "results.json"]:
        if os.path.exists(os.path.join(share, stale)):
            os.remove(os.path.join(share, stale))
    console = os.path.join(share, "console.log")
    command = [
        "qemu-system-x86_64", "-accel", "tcg", "-cpu", "max", "-m", str(BENCH_MEMORY_MB if bench else 1024), "-smp", "1",
        "-nic", "none", "-display", "none", "-no-reboot", "-monitor", "none",
        "-serial", f"file:{console}",
        "-kernel", kernel, "-initrd", initrd,
        "-append", "console=ttyS0 quiet panic=-1 rdinit=/init",
        "-virtfs", f"local,path={share},mount_tag=host,security_model=none,id=host",
    ]
    started = time.monotonic()
    limit = max(BOOT_TIMEOUT, SCENARIO_TIMEOUT * len(scenarios))
    if bench:
        # Three readers, two sizes, SWITCHES reads each on an emulated CPU, and GStreamer's first
        # registry scan: not a test's budget.
        limit = max(limit, BENCH_TIMEOUT)
    try:
        subprocess.run(command, check=False, timeout=limit, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        log(f"the VM did not finish in {limit} s")
    log(f"VM ran {time.monotonic() - started:.0f} s")
    try:
        with open(os.path.join(share, "results.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", help="the capture binary (default: a static release build)")
    parser.add_argument("--cache", help=f"where the image is kept (default {DEFAULT_CACHE}, "
                        f"{DEFAULT_BENCH_CACHE} for a benchmark; or CAPTURE_VM_CACHE)")
    parser.add_argument("--keep", help="the shared folder (logs stay there); default a temporary one")
    parser.add_argument("--rebuild", action="store_true", help="build the image even if cached")
    parser.add_argument("--debug", action="store_true", help="bluetoothd -d, its log in the share")
    parser.add_argument("--image-only", action="store_true", help="build the image and stop")
    parser.add_argument("--repeat", type=int, default=1, help="run the scenarios this many times in one boot")
    parser.add_argument("scenarios", nargs="*")
    args = parser.parse_args()
    sys.path.insert(0, HERE)
    import scenarios as catalogue  # noqa: E402  (the guest's catalogue, read for the names only)
    names = args.scenarios or list(catalogue.SCENARIOS)
    unknown = [n for n in names if n not in catalogue.SCENARIOS and n not in catalogue.BENCHES]
    if unknown:
        raise SystemExit(f"vm: unknown scenario(s) {', '.join(unknown)}; known: {', '.join(catalogue.SCENARIOS)}")
    bench = any(n in catalogue.BENCHES for n in names)
    packages = GUEST_PACKAGES + (BENCH_GUEST_PACKAGES if bench else [])
    cache = args.cache or os.environ.get("CAPTURE_VM_CACHE") or (DEFAULT_BENCH_CACHE if bench else DEFAULT_CACHE)

    try:
        kernel, initrd = build_image(cache, args.rebuild, packages)
    except (subprocess.CalledProcessError, OSError) as error:
        # Mostly the Debian mirror out of reach for mmdebstrap: nothing this tier can install.
        log(f"cannot build the image: {error}")
        return 3
    if args.image_only:
        return 0
    binary = args.binary
    if binary is None:
        raise SystemExit("vm: --binary PATH is required (make test-vm builds one)")
    names = names * max(1, args.repeat)
    share = args.keep or tempfile.mkdtemp(prefix="capture-vm-")
    flag = os.path.join(share, "debug")
    if args.debug:
        os.makedirs(share, exist_ok=True)
        open(flag, "w").close()
    elif os.path.exists(flag):
        os.remove(flag)
    results = run(kernel, initrd, binary, names, share, bench)
    if results is None:
        log(f"no results: the VM did not run the scenarios; see {share}/console.log and {share}/guest.log")
        for path in ["console.log", "guest.log"]:
            try:
                with open(os.path.join(share, path), errors="replace") as f:
                    print(f"--- {path} (last 40 lines)")
                    print("".join(f.readlines()[-40:]), end="")
            except OSError:
                pass
        return 2
    if results.get("setupError"):
        log("the guest setup failed:")
        print(results["setupError"])
    log(f"setup in the guest (dbus, btvirt, bluetoothd, adapters): {results.get('setupSeconds', 0):.1f} s")
    passed = failed = 0
    for index, name in enumerate(names):
        if name in names[:index]:
            name = f"{name}#{names[:index].count(name) + 1}"
        result = results["scenarios"].get(name)
        if result and result["passed"]:
            passed += 1
            print(f"PASS {name} ({result['seconds']:.1f} s)")
        else:
            failed += 1
            reason = result["error"] if result else "not run"
            print(f"FAIL {name}: {reason}")
            if result:
                print("\n".join("    " + line for line in result["log"].splitlines()[-60:]))
    if failed == 0 and not args.keep:
        shutil.rmtree(share, ignore_errors=True)
    else:
        log(f"logs in {share}")
    print(f"vm: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
