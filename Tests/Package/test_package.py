"""The Debian package, tested the way a user installs it (docs/packaging.md).

    /usr/bin/python3 -m unittest discover -s Tests/Package -v      (make test-package)

PackageTests builds the .deb (`make deb`, a static release build) and checks what any machine with
Debian's tools can: one version everywhere, lintian clean (every tag left has an override with its
reason), the files in Debian's places. InstalledTests installs it with `apt-get install ./capture_*.deb`
into a fresh Debian 12 root without Swift (mmdebstrap, cached under /tmp/capture-pkg-root keyed by
its inputs, copied fresh for each run), so the dependencies come from the mirror and Depends must be
right; there it runs capture, a SocketCam decode, man and bash completion, then removes the package
and checks nothing is left. It is skipped, loudly, only when this machine cannot build that root: not
root, or the Debian mirror out of reach. A failing step fails.

CAPTURE_DEB=PATH tests that package instead of building one; CAPTURE_PKG_KEEP=1 keeps the root.
"""

import glob
import gzip
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
import unittest

import debian_root

# The sonames capture loads when a command needs them (Sources/CLazyLibraries/loader.c): not in the
# binary's DT_NEEDED, in the package's Depends.
ON_DEMAND = ["libzbar.so.0", "libdbus-1.so.3", "libwebsockets.so.17", "libmosquitto.so.1", "libbluetooth.so.3"]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The root: apt (the variant) plus what the checks use, man-db for `man -w` and bash-completion for
# the completion loader. Nothing of Swift: the package must bring or link everything it needs.
ROOT_PACKAGES = ["man-db", "bash-completion"]
ROOT_VERSION = "1"
DEFAULT_CACHE = "/tmp/capture-pkg-root"
SAMPLE = "01-qr-hello.png"
SAMPLE_TEXT = "Hello from capture"
MAINTAINER = "capture maintainers <maintainers@users.noreply.a-seed-bd27bc76.example>"
# apt-get update and install download from the mirror: minutes on a slow one, not an hour.
APT_TIMEOUT = 900


def log(message):
    print(f"package: {message}", flush=True)


def skip_loudly(reason):
    # make's output shows it like test-vm-if-possible's skip, not only unittest's summary.
    print(f"*** SKIPPED: Tests/Package (the Debian package installed into Debian 12): {reason}", flush=True)
    raise unittest.SkipTest(reason)


def run(command, **kwargs):
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    return subprocess.run(command, check=False, **kwargs)


def version():
    result = run([os.path.join(REPO, "scripts/version")])
    if result.returncode != 0:
        raise AssertionError(f"scripts/version failed: {result.stderr}")
    return result.stdout.strip()


_package = {}


def package():
    """The .deb under test: CAPTURE_DEB, or built once by `make deb` into a temporary DEBDIR."""
    if "path" in _package:
        return _package["path"]
    given = os.environ.get("CAPTURE_DEB")
    if given:
        _package["path"] = os.path.abspath(given)
        return _package["path"]
    out = tempfile.mkdtemp(prefix="capture-deb-")
    started = time.monotonic()
    result = run(["make", "--no-print-directory", "-C", REPO, "deb", f"DEBDIR={out}"])
    if result.returncode != 0:
        raise AssertionError(f"make deb failed ({result.returncode}):\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
    debs = glob.glob(os.path.join(out, "capture_*.deb"))
    if len(debs) != 1:
        raise AssertionError(f"make deb made {debs} in {out}, expected one capture_*.deb")
    log(f"built {debs[0]} in {time.monotonic() - started:.0f} s")
    _package["path"], _package["dir"] = debs[0], out
    return debs[0]


def tearDownModule():
    if "dir" in _package:
        shutil.rmtree(_package["dir"], ignore_errors=True)


def field(deb, name):
    return run(["dpkg-deb", "-f", deb, name]).stdout.strip()


class PackageTests(unittest.TestCase):
    """The .deb itself: its version, lintian, its files."""

    @classmethod
    def setUpClass(cls):
        cls.deb = package()
        cls.arch = run(["dpkg", "--print-architecture"]).stdout.strip()
        cls.contents = tempfile.mkdtemp(prefix="capture-deb-x-")
        subprocess.run(["dpkg-deb", "-x", cls.deb, cls.contents], check=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.contents, ignore_errors=True)

    def test_one_version_everywhere(self):
        """capture --version, scripts/version, CHANGELOG.md's newest release and the package agree."""
        expected = version()
        self.assertRegex(expected, r"^\d+\.\d+\.\d+$")
        binary = run([os.path.join(self.contents, "usr/bin/capture"), "--version"])
        self.assertEqual((binary.returncode, binary.stdout), (0, f"capture {expected}\n"))
        with open(os.path.join(REPO, "CHANGELOG.md"), encoding="utf-8") as f:
            released = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", f.read(), re.MULTILINE)
        self.assertTrue(released, "CHANGELOG.md has no released section (## [X.Y.Z] - YYYY-MM-DD)")
        self.assertEqual(released[0], expected, "CHANGELOG.md's newest release")
        self.assertEqual(field(self.deb, "Version"), expected, "the package's Version")
        self.assertEqual(os.path.basename(self.deb), f"capture_{expected}_{self.arch}.deb")

    def test_control_fields(self):
        self.assertEqual(field(self.deb, "Package"), "capture")
        self.assertEqual(field(self.deb, "Architecture"), self.arch)
        self.assertEqual(field(self.deb, "Section"), "utils")
        self.assertEqual(field(self.deb, "Priority"), "optional")
        self.assertEqual(field(self.deb, "Maintainer"), MAINTAINER)
        synopsis, _, long_text = field(self.deb, "Description").partition("\n")
        self.assertTrue(synopsis and long_text.strip(), "a synopsis and a long description")
        depends = [d.strip().split()[0] for d in field(self.deb, "Depends").split(",")]
        # What the binary links (dpkg-shlibdeps) and what it loads on demand (packaging/debian/control); no
        # Swift runtime package (there is none in Debian).
        for library in ["libc6", "libstdc++6", "libzbar0", "libdbus-1-3", "libbluetooth3", "libwebsockets17",
                        "libmosquitto1", "libpng16-16", "libjpeg62-turbo"]:
            self.assertIn(library, depends)
        # zxing-cpp is linked in statically (deps/zxing-cpp.lock): not Debian's 1.4.0.
        self.assertNotIn("libzxing2", depends)
        self.assertFalse([d for d in depends if "swift" in d], depends)
        self.assertEqual(field(self.deb, "Homepage"), "")

    def test_lintian_is_clean(self):
        """No tag at any level (error, warning, info, pedantic) that the overrides do not cover."""
        result = run(["lintian", "--display-info", "--pedantic", "--fail-on", "error,warning", self.deb])
        tags = [line for line in result.stdout.splitlines() if re.match(r"^[EWIPX]: ", line)]
        self.assertEqual(tags, [], f"lintian:\n{result.stdout}{result.stderr}")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        # Each override has its reason: a comment line right above it.
        path = os.path.join(self.contents, "usr/share/lintian/overrides/capture")
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        for index, line in enumerate(lines):
            if line.strip() and not line.startswith("#"):
                self.assertTrue(index > 0 and lines[index - 1].startswith("# "), f"override without a reason: {line}")

    def test_files_in_debians_places(self):
        root = self.contents
        binary = os.path.join(root, "usr/bin/capture")
        self.assertTrue(os.access(binary, os.X_OK))
        # Stripped: no symbol table left (as dh_strip leaves an executable).
        sections = run(["readelf", "-S", "-W", binary]).stdout
        self.assertNotIn(".symtab", sections)
        self.assertNotIn(".debug_info", sections)
        pages = sorted(os.path.basename(p) for p in glob.glob(os.path.join(REPO, "man/*.1")))
        installed = sorted(os.listdir(os.path.join(root, "usr/share/man/man1")))
        self.assertIn("capture.1", pages)
        self.assertEqual(installed, [p + ".gz" for p in pages], "every man/*.1, gzipped")
        for page in pages:
            with gzip.open(os.path.join(root, "usr/share/man/man1", page + ".gz"), "rb") as f, \
                    open(os.path.join(REPO, "man", page), "rb") as source:
                self.assertEqual(f.read(), source.read(), page)
        for installed_path, source in [
            ("usr/share/bash-completion/completions/capture", "completions/capture.bash"),
            ("usr/share/zsh/vendor-completions/_capture", "completions/_capture"),
            ("usr/share/fish/vendor_completions.d/capture.fish", "completions/capture.fish"),
        ]:
            with open(os.path.join(root, installed_path), "rb") as f, open(os.path.join(REPO, source), "rb") as g:
                self.assertEqual(f.read(), g.read(), installed_path)
        units = sorted(os.listdir(os.path.join(root, "usr/lib/systemd/user")))
        self.assertEqual(units, sorted(os.path.basename(p) for p in glob.glob(os.path.join(REPO, "contrib/capture-*"))))
        for unit in units:
            with open(os.path.join(root, "usr/lib/systemd/user", unit), encoding="utf-8") as f:
                text = f.read()
            self.assertNotIn("/usr/local", text, unit)
            for line in text.splitlines():
                if line.startswith("ExecStart="):
                    self.assertTrue(line.startswith("ExecStart=/usr/bin/capture "), f"{unit}: {line}")
        doc = os.path.join(root, "usr/share/doc/capture")
        self.assertEqual(sorted(os.listdir(doc)), ["changelog.gz", "copyright"])
        with open(os.path.join(doc, "copyright"), encoding="utf-8") as f:
            copyright_text = f.read()
        self.assertTrue(copyright_text.startswith(
            "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"))
        self.assertIn("\nFiles: *\nCopyright: 2026 capture maintainers\nLicense: Apache-2.0\n", copyright_text)
        self.assertIn('"/usr/share/common-licenses/Apache-2.0"', copyright_text)
        # zxing-cpp, linked in statically, and the libzueci it carries, each with its licence.
        self.assertIn("\nFiles: zxing-cpp/*\n", copyright_text)
        self.assertIn("\nFiles: zxing-cpp/core/src/libzueci/*\nCopyright: 2022 gitlost\n", copyright_text)
        self.assertIn("\nLicense: BSD-3-Clause\n Redistribution", copyright_text)
        with open(os.path.join(REPO, "LICENSE"), "rb") as f, open("/usr/share/common-licenses/Apache-2.0", "rb") as g:
            self.assertEqual(f.read(), g.read(), "LICENSE is the Apache-2.0 text")

    def test_debian_changelog_is_generated_from_changelog_md(self):
        with gzip.open(os.path.join(self.contents, "usr/share/doc/capture/changelog.gz"), "rt", encoding="utf-8") as f:
            text = f.read()
        with open(os.path.join(REPO, "CHANGELOG.md"), encoding="utf-8") as f:
            releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4})-(\d{2})-(\d{2})$", f.read(), re.MULTILINE)
        headers = re.findall(r"^capture \((\S+)\) unstable; urgency=medium$", text, re.MULTILINE)
        self.assertEqual(headers, [r[0] for r in releases], "one entry per release, newest first")
        trailers = re.findall(r"^ -- (.+?)  \w{3}, (\d{2}) (\w{3}) (\d{4}) 00:00:00 \+0000$", text, re.MULTILINE)
        self.assertEqual(len(trailers), len(releases))
        months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        for (maintainer, day, month, year), (_, y, m, d) in zip(trailers, releases):
            self.assertEqual((maintainer, year, month, day), (MAINTAINER, y, months[int(m) - 1], d))
        # dpkg reads it back as the package's changelog.
        parsed = run(["dpkg-parsechangelog", "-l", "-", "-S", "Version"], input=text)
        self.assertEqual(parsed.stdout.strip(), version(), parsed.stderr)


class ChangelogGeneratorTests(unittest.TestCase):
    """scripts/debian-changelog on a CHANGELOG.md of its own: the entries it writes, and what it refuses."""

    CONTROL = f"Source: capture\nMaintainer: {MAINTAINER}\n\nPackage: capture\n"

    def generate(self, changelog):
        with tempfile.TemporaryDirectory() as work:
            paths = [os.path.join(work, "CHANGELOG.md"), os.path.join(work, "control")]
            for path, text in zip(paths, [changelog, self.CONTROL]):
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
            return run([os.path.join(REPO, "scripts/debian-changelog")] + paths)

    def test_one_entry_per_release_newest_first_unreleased_left_out(self):
        result = self.generate(
            "# Changelog\n\nProse.\n\n## [Unreleased]\n\n### Added\n- not released yet\n\n"
            "## [0.2.0] - 2027-01-31\n\n### Added\n- a new command `capture frobnicate DEVICE` that does a great many\n"
            "  things, described at such length that the line is rewrapped\n- another one\n\n### Fixed\n- a fix\n\n"
            "## [0.1.0] - 2026-12-02\n\n### Added\n- the first release\n")
        self.assertEqual((result.returncode, result.stderr), (0, ""))
        self.assertEqual(result.stdout, (
            "capture (0.2.0) unstable; urgency=medium\n\n"
            "  * Added:\n"
            "    - a new command `capture frobnicate DEVICE` that does a great many things,\n"
            "      described at such length that the line is rewrapped\n"
            "    - another one\n"
            "  * Fixed:\n"
            "    - a fix\n\n"
            f" -- {MAINTAINER}  Sun, 31 Jan 2027 00:00:00 +0000\n"
            "\n"
            "capture (0.1.0) unstable; urgency=medium\n\n"
            "  * Added:\n"
            "    - the first release\n\n"
            f" -- {MAINTAINER}  Wed, 02 Dec 2026 00:00:00 +0000\n"))
        parsed = run(["dpkg-parsechangelog", "-l", "-", "--all", "--format", "rfc822"], input=result.stdout)
        self.assertEqual(re.findall(r"^Version: (.*)$", parsed.stdout, re.MULTILINE), ["0.2.0", "0.1.0"],
                         parsed.stderr)

    def test_refuses_a_changelog_without_a_release(self):
        result = self.generate("# Changelog\n\n## [Unreleased]\n\n### Added\n- something\n")
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stdout, "")
        self.assertIn("has no released section", result.stderr)

    def test_refuses_a_bullet_outside_a_subsection_and_an_empty_release(self):
        result = self.generate("## [0.1.0] - 2026-12-02\n\n- a bullet with no ### heading\n")
        self.assertEqual(result.returncode, 1)
        self.assertIn("a bullet outside a ### subsection in [0.1.0]", result.stderr)
        result = self.generate("## [0.1.0] - 2026-12-02\n\n### Added\n")
        self.assertEqual(result.returncode, 1)
        self.assertIn("[0.1.0] has no bullets", result.stderr)
        result = self.generate("## [0.1.0] - 2026-02-30\n\n### Added\n- x\n")
        self.assertEqual(result.returncode, 1)
        self.assertIn("impossible date 2026-02-30", result.stderr)


def build_root(cache, sources):
    """The package's root as a tarball, built once per set of inputs (debian_root.build_root)."""
    return debian_root.build_root(cache, sources, ROOT_PACKAGES, ROOT_VERSION, log)


class InstalledTests(unittest.TestCase):
    """apt-get install ./capture_*.deb into a fresh Debian 12 root without Swift; run it; remove it.

    The methods are numbered: they run in that order on one installation, the removal last.
    """

    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            skip_loudly("not root: mmdebstrap, chroot and apt-get need root")
        for tool in ["mmdebstrap", "unshare", "chroot"]:
            if shutil.which(tool) is None:
                skip_loudly(f"{tool} is not installed (make package-deps)")
        sources, url = debian_root.mirror()
        reachable, why = debian_root.mirror_reachable(url)
        if not reachable:
            skip_loudly(f"the Debian mirror {url} is out of reach ({why}): no root to install into")
        cls.deb = package()
        cache = os.environ.get("CAPTURE_PKG_ROOT_CACHE", DEFAULT_CACHE)
        # A mirror that answers but a root that does not build is a failure, not a skip.
        tarball = build_root(cache, sources)
        started = time.monotonic()
        cls.root = debian_root.unpack(tarball, cache)
        shutil.copy2(cls.deb, os.path.join(cls.root, "tmp"))
        shutil.copy2(os.path.join(REPO, "samples", SAMPLE), os.path.join(cls.root, "tmp"))
        deb = "/tmp/" + os.path.basename(cls.deb)
        result = cls.chroot(f"apt-get update -q && apt-get install -y -q {shlex.quote(deb)}", timeout=APT_TIMEOUT)
        if result.returncode != 0:
            raise AssertionError(f"apt-get install ./{os.path.basename(deb)} failed ({result.returncode}):\n"
                                 f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
        log(f"fresh root {cls.root}, capture installed in {time.monotonic() - started:.0f} s")

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "root", None) and not os.environ.get("CAPTURE_PKG_KEEP"):
            shutil.rmtree(cls.root, ignore_errors=True)
        elif getattr(cls, "root", None):
            log(f"kept the root {cls.root}")

    @classmethod
    def chroot(cls, script, timeout=120, user_env=None):
        """Runs a shell script in the root, with /dev and /proc mounted in a private mount namespace
        (they go away with it)."""
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C.UTF-8",
               "HOME": "/root"}
        env.update(user_env or {})
        return run(debian_root.chroot_command(cls.root, script, env), timeout=timeout)

    def in_root(self, script, **kwargs):
        result = self.chroot(script, **kwargs)
        self.assertEqual(result.returncode, 0, f"{script}:\n{result.stdout}{result.stderr}")
        return result.stdout

    def test_1_version(self):
        self.assertEqual(self.in_root("capture --version"), f"capture {version()}\n")
        self.assertEqual(self.in_root("command -v capture"), "/usr/bin/capture\n")

    def test_2_socketcam_decodes_a_sample(self):
        home = {"HOME": "/tmp/home", "XDG_STATE_HOME": "/tmp/home/.local/state"}
        result = self.chroot(f"mkdir -p /tmp/home && timeout 60 capture listen socketcam --image /tmp/{SAMPLE}",
                             user_env=home)
        self.assertEqual((result.returncode, result.stdout, result.stderr), (0, SAMPLE_TEXT + "\n", ""))

    def test_3_man(self):
        self.assertEqual(self.in_root("man -w capture"), "/usr/share/man/man1/capture.1.gz\n")
        self.assertEqual(self.in_root("man -w capture-listen"), "/usr/share/man/man1/capture-listen.1.gz\n")
        # man-db renders it (groff from the root, not this host's).
        self.assertIn("capture", self.in_root("MANWIDTH=80 man capture 2>&1 | head -5"))

    def test_4_bash_completion_of_capture_li(self):
        # The loader finds /usr/share/bash-completion/completions/capture as an interactive shell does.
        script = r"""
. /usr/share/bash-completion/bash_completion
__load_completion capture || exit 3
spec=$(complete -p capture) || exit 4
function=$(printf '%s\n' "$spec" | sed -n 's/.* -F \([^ ]*\) .*/\1/p')
[ -n "$function" ] || exit 5
COMP_WORDS=(capture li); COMP_CWORD=1; COMP_LINE="capture li"; COMP_POINT=${#COMP_LINE}
"$function" capture li capture
printf '%s\n' "${COMPREPLY[@]}"
"""
        result = self.chroot(f"exec bash -c {shlex.quote(script)}")
        self.assertEqual((result.returncode, result.stdout), (0, "list\nlisten\n"), result.stderr)

    def test_5_no_swift_in_the_root(self):
        libraries = self.in_root("ldd /usr/bin/capture")
        self.assertNotIn("libswift", libraries)
        self.assertNotIn("not found", libraries)
        # Loaded on demand (docs/architecture.md §2, "Libraries loaded on demand"): not linked.
        for soname in ON_DEMAND:
            self.assertNotIn(soname, libraries)
        found = self.in_root("find / -xdev \\( -name 'libswift*' -o -name swift -o -name swiftc "
                             "-o -name 'swift-*' \\) -print; ls -d /usr/lib/swift /opt/swift 2>/dev/null; true")
        self.assertEqual(found, "", "a Swift runtime or toolchain in the root")

    def test_6_the_libraries_loaded_on_demand_are_installed_whole(self):
        # dlopen(3) finds a soname through ld.so.cache: each is there (the package's Depends installed
        # it) and resolves everything it links in turn.
        cache = self.in_root("ldconfig -p")
        for soname in ON_DEMAND:
            match = re.search(r"^\s*" + re.escape(soname) + r" \([^)]*\) => (\S+)$", cache, re.M)
            self.assertIsNotNone(match, f"{soname} is not in the root's ld.so.cache")
            self.assertNotIn("not found", self.in_root(f"ldd {shlex.quote(match.group(1))}"), soname)
        # And capture loads one for real: doctor's zbar row, an actual dlopen of libzbar.so.0.
        result = self.chroot("capture doctor 2>/dev/null | grep '^ok zbar: ZBar '; true")
        self.assertRegex(result.stdout, r"^ok zbar: ZBar \d+\.\d+\.\d+\n$", result.stderr)

    def test_9_remove_leaves_nothing(self):
        listed = [p for p in self.in_root("dpkg -L capture").splitlines() if p.startswith("/")]
        self.assertIn("/usr/bin/capture", listed)
        # The directories other packages own too (/usr, /usr/share/man/man1...) stay; the rest goes.
        # Debian 12 is merged-/usr: /lib is /usr/lib, but dpkg knows a directory by the name its
        # packages ship (apt's /lib/systemd is capture's /usr/lib/systemd), so both names are asked.
        def aliases(path):
            for top in ["/bin/", "/sbin/", "/lib/"]:
                if path.startswith("/usr" + top):
                    return [path, path[len("/usr"):]]
            return [path]
        queried = [a for p in listed for a in aliases(p)]
        owners = {}
        for line in self.in_root("dpkg -S " + " ".join(shlex.quote(p) for p in queried) + " 2>/dev/null; true").splitlines():
            names, sep, path = line.partition(": ")
            if sep and not line.startswith("diversion "):
                owners.setdefault(path, set()).update(n.strip() for n in names.split(","))
        only_capture = [p for p in listed if set().union(*(owners.get(a, set()) for a in aliases(p))) == {"capture"}]
        self.assertIn("/usr/share/doc/capture", only_capture)
        self.assertIn("/usr/lib/systemd/user", only_capture)
        self.in_root("apt-get remove -y -q capture")
        left = self.in_root("for p in " + " ".join(shlex.quote(p) for p in only_capture) +
                            "; do if [ -e \"$p\" ] || [ -L \"$p\" ]; then echo \"$p\"; fi; done")
        self.assertEqual(left, "", "paths only capture owned, left after apt-get remove")
        status = self.chroot("dpkg -s capture")
        self.assertNotEqual(status.returncode, 0)
        self.assertIn("package 'capture' is not installed", status.stderr)


if __name__ == "__main__":
    unittest.main()
