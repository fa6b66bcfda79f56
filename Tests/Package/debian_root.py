"""A fresh Debian 12 root: built once per set of inputs with mmdebstrap, unpacked anew for every use,
and run in with chroot inside a private mount namespace. Shared by Tests/Package (the .deb installed
into Debian 12 without Swift) and Tests/FreshRoot (`make test` on a fresh Debian 12 with the Swift
toolchain added).
"""

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

SUITE = "bookworm"


def run(command, **kwargs):
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    return subprocess.run(command, check=False, **kwargs)


def mirror():
    """The apt sources this host uses (as Tests/VM does) and the first mirror URL in them."""
    for path in ["/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"]:
        if os.path.isfile(path) and os.path.getsize(path) > 0:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            urls = re.findall(r"^URIs:\s*(\S+)", text, re.MULTILINE) or re.findall(
                r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)", text, re.MULTILINE)
            if urls:
                return path, urls[0]
    return "http://deb.debian.org/debian", "http://deb.debian.org/debian"


def mirror_reachable(url):
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/dists/{SUITE}/InRelease", timeout=30) as response:
            return response.status == 200, ""
    except (urllib.error.URLError, OSError) as error:
        return False, str(error)


def root_command(packages, sources, output):
    """mmdebstrap's apt variant (the Essential packages and apt) plus `packages`."""
    return ["mmdebstrap", "--variant=apt", "--format=tar", "--quiet", "--include=" + ",".join(packages),
            SUITE, output, sources]


def root_key(version, packages, sources):
    """Changes with anything the root is made of: the command, the packages, the apt sources."""
    digest = hashlib.sha256()
    for part in [version] + root_command(packages, sources, "OUT"):
        digest.update(part.encode() + b"\0")
    if os.path.isfile(sources):
        with open(sources, "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()[:16]


def build_root(cache, sources, packages, version, log):
    """The root as a tarball, built once per set of inputs under cache/KEY (as Tests/VM's image)."""
    key = root_key(version, packages, sources)
    target = os.path.join(cache, key, "root.tar")
    if os.path.isfile(target):
        log(f"root {target} (cached)")
        return target
    started = time.monotonic()
    os.makedirs(os.path.dirname(target), exist_ok=True)
    partial = target + ".part"
    result = run(root_command(packages, sources, partial))
    if result.returncode != 0:
        if os.path.exists(partial):
            os.remove(partial)
        raise RuntimeError(f"mmdebstrap failed ({result.returncode}): {result.stderr[-2000:]}")
    os.replace(partial, target)
    # Roots of older inputs are never used again.
    for name in os.listdir(cache):
        if name != key and len(name) == len(key) and os.path.isdir(os.path.join(cache, name)):
            shutil.rmtree(os.path.join(cache, name), ignore_errors=True)
    log(f"root {target} built in {time.monotonic() - started:.0f} s ({os.path.getsize(target) / 1e6:.0f} MB)")
    return target


def unpack(tarball, parent):
    """A fresh copy of the root under `parent`, with this host's resolv.conf so apt reaches the mirror."""
    root = tempfile.mkdtemp(prefix="run-", dir=parent)
    subprocess.run(["tar", "--numeric-owner", "-xpf", tarball, "-C", root], check=True)
    shutil.copy2("/etc/resolv.conf", os.path.join(root, "etc/resolv.conf"))
    return root


def chroot_command(root, script, env, read_only_binds=(), binds=(), full_system=False):
    """The command that runs `script` with /bin/sh in `root`, with only `env` in its environment, in a
    private mount namespace (the mounts go away with it). /dev and /proc are mounted; `full_system`
    adds what a test suite's services need — /dev recursively (ptys, /dev/shm), /sys, a private /run
    tmpfs — and a PID namespace of its own, so nothing started inside outlives the run.
    `read_only_binds`: host directories mounted read-only at the same path inside (a toolchain);
    `binds`: host directories mounted writable at the same path inside (a cache)."""
    inner = " ".join(["env", "-i"] + [shlex.quote(f"{k}={v}") for k, v in env.items()] +
                     ["/bin/sh", "-c", shlex.quote(script)])
    r = shlex.quote(root)
    if full_system:
        # The root bound onto itself first: chroot into a plain directory leaves "/" no mount point, and
        # a test inside that runs `unshare --mount --propagation private` (Tests/Package) then fails
        # with EINVAL.
        mounts = [f"mount --bind {r} {r}", f"mount --rbind /dev {r}/dev", f"mount -t proc proc {r}/proc", f"mount --rbind /sys {r}/sys",
                  f"mount -t tmpfs -o mode=0755 tmpfs {r}/run"]
    else:
        mounts = [f"mount --bind /dev {r}/dev", f"mount -t proc proc {r}/proc"]
    for path in read_only_binds:
        target = shlex.quote(root + path)
        mounts += [f"mkdir -p {target}", f"mount --bind {shlex.quote(path)} {target}",
                   f"mount -o remount,bind,ro {target}"]
    for path in binds:
        target = shlex.quote(root + path)
        mounts += [f"mkdir -p {target}", f"mount --bind {shlex.quote(path)} {target}"]
    outer = " && ".join(mounts + [f"exec chroot {r} {inner}"])
    unshare = ["unshare", "--mount", "--propagation", "private"]
    if full_system:
        unshare += ["--pid", "--fork"]
    return unshare + ["/bin/sh", "-c", outer]
