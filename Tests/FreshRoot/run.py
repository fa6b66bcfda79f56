"""`make test` on a fresh Debian 12 with only the Swift toolchain added, as a new developer runs it.

    /usr/bin/python3 Tests/FreshRoot/run.py [MAKE-ARGUMENT...]   (make test-fresh-root; part of .ci/run)

The arguments go to make instead of `test` (e.g. `-k test` to go on past a failing step).

A machine that has run the suite before hides missing steps: packages an earlier run installed,
groups udev made, caches. This runs the README's test command where none of that exists: a Debian 12
root from mmdebstrap (the apt variant, Debian's Essential packages and apt, plus the Swift
toolchain's prerequisites for Debian 12 as swift.org's tarball installation guide lists them, and
make to run the Makefile), built once per set of inputs under /tmp/capture-fresh-root and unpacked
anew on every run, with the /etc/hosts the Debian installer writes (mmdebstrap writes none) and this machine's own
certificate authorities (/usr/local/share/ca-certificates, for a network that inspects TLS); the toolchain (/opt/swift) mounted read-only; this checkout copied in without its
build products. Everything else — Debian packages, groups, services — the project's own `make test`
must install, make and start itself.

Two caches the tiers key by their own inputs and would otherwise rebuild from the mirror on every run
(Tests/VM's kernel image, Tests/Package's root) are mounted from the host: they are test fixtures, not
state of the machine under test, and each tier builds its own when missing.

Exit status: make test's. 3 when the root cannot be had (not root, no mmdebstrap or unshare, the
Debian mirror out of reach), with one line saying why: the caller decides whether that is a skip.
"""

import os
import shlex
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "Package"))
import debian_root  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLCHAIN = os.environ.get("CAPTURE_SWIFT_TOOLCHAIN", "/opt/swift")
# swift.org, "Linux Installation via Tarball", Debian 12: what the toolchain needs to run; and make.
SWIFT_PREREQUISITES = ["binutils-gold", "gcc", "git", "libcurl4-openssl-dev", "libedit-dev", "libicu-dev",
                       "libncurses-dev", "libpython3-dev", "libsqlite3-dev", "libxml2-dev", "pkg-config", "tzdata",
                       "uuid-dev"]
ROOT_PACKAGES = SWIFT_PREREQUISITES + ["make"]
ROOT_VERSION = "1"
DEFAULT_CACHE = "/tmp/capture-fresh-root"
# The fixtures shared with the host run (see above): path inside = path outside.
FIXTURE_CACHES = [os.environ.get("CAPTURE_VM_CACHE", "/tmp/capture-vm-image"),
                  os.environ.get("CAPTURE_PKG_ROOT_CACHE", "/tmp/capture-pkg-root")]
# What is not copied: build products and caches of this checkout.
EXCLUDED = {".build", "build", ".swiftpm", "__pycache__"}
SOURCE_DIR = "/src/capture"


def log(message):
    print(f"fresh-root: {message}", flush=True)


def cannot(reason):
    print(f"*** fresh-root: cannot run: {reason}", flush=True)
    sys.exit(3)


def copy_checkout(root):
    """The checkout as a clone has it (tracked and untracked files that are not ignored), without build
    products; owned by root like the rest of the root."""
    listed = subprocess.run(["git", "-C", REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.split(b"\0")
    target = root + SOURCE_DIR
    for name in filter(None, listed):
        relative = os.fsdecode(name)
        if relative.split("/")[0] in EXCLUDED or not os.path.lexists(os.path.join(REPO, relative)):
            continue
        destination = os.path.join(target, relative)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        shutil.copy2(os.path.join(REPO, relative), destination, follow_symlinks=False)
    # The tree is a git work tree in a clone; scripts/version reads the history.
    shutil.copytree(os.path.join(REPO, ".git"), os.path.join(target, ".git"), symlinks=True)


def write_hosts(root):
    """/etc/hosts as the Debian installer writes it (mmdebstrap writes none, and without it glibc does
    not resolve localhost, which every Debian 12 machine does)."""
    hostname = "capture-fresh-root"
    with open(os.path.join(root, "etc/hostname"), "w", encoding="utf-8") as f:
        f.write(hostname + "\n")
    with open(os.path.join(root, "etc/hosts"), "w", encoding="utf-8") as f:
        f.write(f"127.0.0.1\tlocalhost\n127.0.1.1\t{hostname}\n\n"
                "# The following lines are desirable for IPv6 capable hosts\n"
                "::1     localhost ip6-localhost ip6-loopback\nff02::1 ip6-allnodes\nff02::2 ip6-allrouters\n")


LOCAL_TRUST = "/usr/local/share/ca-certificates"


def copy_local_trust(root):
    """The certificate authorities this machine's administrator added (update-ca-certificates(8) reads
    them from /usr/local/share/ca-certificates), copied into the root: they belong to the machine's
    network, like /etc/hosts, not to what the project must set up. Where outgoing TLS is inspected,
    `make deps` fetches zxing-cpp from PyPI through that authority; without it pip fails with
    CERTIFICATE_VERIFY_FAILED in the root while the same command works on the host. The root gets
    them in its bundle when make test installs ca-certificates (its postinst runs
    update-ca-certificates), or at once when the root has it already. Returns the names copied."""
    copied = []
    if not os.path.isdir(LOCAL_TRUST):
        return copied
    target = os.path.join(root, LOCAL_TRUST.lstrip("/"))
    os.makedirs(target, exist_ok=True)
    for name in sorted(os.listdir(LOCAL_TRUST)):
        source = os.path.join(LOCAL_TRUST, name)
        if name.endswith(".crt") and os.path.isfile(source):
            shutil.copyfile(source, os.path.join(target, name))
            copied.append(name)
    return copied


def main():
    if os.geteuid() != 0:
        cannot("not root: mmdebstrap, chroot and mount need root")
    for tool in ["mmdebstrap", "unshare", "chroot"]:
        if shutil.which(tool) is None:
            cannot(f"{tool} is not installed (make package-deps)")
    if not os.path.isfile(os.path.join(TOOLCHAIN, "usr/bin/swift")):
        cannot(f"no Swift toolchain at {TOOLCHAIN} (CAPTURE_SWIFT_TOOLCHAIN)")
    sources, url = debian_root.mirror()
    reachable, why = debian_root.mirror_reachable(url)
    if not reachable:
        cannot(f"the Debian mirror {url} is out of reach ({why})")
    cache = os.environ.get("CAPTURE_FRESH_ROOT_CACHE", DEFAULT_CACHE)
    tarball = debian_root.build_root(cache, sources, ROOT_PACKAGES, ROOT_VERSION, log)
    root = debian_root.unpack(tarball, cache)
    try:
        write_hosts(root)
        trust = copy_local_trust(root)
        if trust:
            log(f"this machine's own certificate authorities copied in: {', '.join(trust)}")
        copy_checkout(root)
        for path in FIXTURE_CACHES:
            os.makedirs(path, exist_ok=True)
        env = {"PATH": f"{TOOLCHAIN}/usr/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8",
               "TERM": "dumb", "CI": os.environ.get("CI", "true")}
        arguments = " ".join(shlex.quote(a) for a in sys.argv[1:]) or "test"
        refresh = "if [ -x /usr/sbin/update-ca-certificates ]; then update-ca-certificates >/dev/null; fi; " if trust else ""
        script = f"{refresh}cd {SOURCE_DIR} && exec make {arguments}"
        log(f"make test in {root} (toolchain {TOOLCHAIN} read-only)")
        started = time.monotonic()
        command = debian_root.chroot_command(root, script, env, read_only_binds=[TOOLCHAIN], binds=FIXTURE_CACHES,
                                             full_system=True)
        status = subprocess.run(command, check=False).returncode
        log(f"make test exited {status} after {time.monotonic() - started:.0f} s")
        return status
    finally:
        if os.environ.get("CAPTURE_FRESH_ROOT_KEEP"):
            log(f"kept the root {root}")
        else:
            subprocess.run(["rm", "-rf", "--one-file-system", root], check=False)


if __name__ == "__main__":
    sys.exit(main())
