"""A real browser against `capture serve`: headless Chromium (Debian chromium + chromium-driver, driven by
python3-selenium) loads browser/index.html from ANOTHER loopback origin (a second port). The page speaks
the protocol with XMLHttpRequest and a WebSocket as CaptureJS does (docs/capturejs.md §7), so the
browser makes the CORS preflight itself; a code written by a pty scanner must appear on the page. The
same page from an origin the service refuses (evil.example, mapped to 127.0.0.1 by Chromium's host
resolver rules) must get nothing, and the service must log the refusal.

ReactPageTests: browser/react-app.jsx, a React page of our own that follows Socket Mobile's
single-entry-react sample (open Capture, open each arriving device, DecodedData into React state, close
on DeviceRemoval) over browser/capture-page.js's client, bundled here by esbuild from Debian's node-react
and node-react-dom into a temporary directory (docs/capturejs.md §7)."""
import functools
import http.server
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_harness as h  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
PAGE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "browser")
ESBUILD = "/usr/bin/esbuild"
NODE_MODULES = "/usr/share/nodejs"  # Debian's node-* packages install their modules here


def missing():
    reasons = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        reasons.append("python3-selenium")
    return reasons


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def missing_react():
    reasons = [] if os.access(ESBUILD, os.X_OK) else ["esbuild"]
    reasons += [f"node-{m}" for m in ("react", "react-dom") if not os.path.isdir(os.path.join(NODE_MODULES, m))]
    return reasons


def page_server(directory=PAGE_DIR):
    handler = functools.partial(QuietHandler, directory=directory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def chromium():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as ChromeService

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-proxy-server",
                "--no-first-run", "--disable-extensions", "--disable-background-networking",
                "--host-resolver-rules=MAP evil.example 127.0.0.1"):
        options.add_argument(arg)
    return webdriver.Chrome(service=ChromeService(CHROMEDRIVER), options=options)


@unittest.skipIf(missing(), f"*** SKIPPED: the browser test needs {', '.join(missing())} (apt-get install chromium chromium-driver python3-selenium)")
class BrowserCase(unittest.TestCase):
    """Chromium, and a server of the pages in `page_dir()` on a loopback port of its own."""

    @classmethod
    def page_dir(cls):
        return PAGE_DIR

    @classmethod
    def setUpClass(cls):
        if not os.access(h.capture_bin(), os.X_OK):
            raise unittest.SkipTest(f"*** SKIPPED: no capture binary at {h.capture_bin()} (set CAPTURE_BIN)")
        cls.pages = page_server(cls.page_dir())
        cls.page_port = cls.pages.server_address[1]
        cls.driver = chromium()
        cls.driver.set_page_load_timeout(30)

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.pages.shutdown()

    def text(self, element_id):
        return self.driver.find_element("id", element_id).text

    def wait_for(self, predicate, seconds=30, what="the page"):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.1)
        self.fail(f"{what} not reached in {seconds} s; page log:\n{self.text('log')}")

    def codes(self):
        return [li.text for li in self.driver.find_elements("css selector", "#codes li")]

    def serve_scanner(self, extra=()):
        """A pty scanner and a `capture serve` of it with `extra` options, the scanner open: (scanner,
        service), both gone at the test's end."""
        scanner = h.PtyScanner()
        self.addCleanup(scanner.close)
        service = h.Service([scanner.selector], extra=extra)
        self.addCleanup(service.stop)
        self.assertTrue(scanner.wait_opened())
        return scanner, service


class BrowserTests(BrowserCase):

    def test_a_page_from_another_loopback_origin_shows_a_code_the_scanner_read(self):
        scanner, service = self.serve_scanner()
        self.driver.get(f"http://127.0.0.1:{self.page_port}/index.html?port={service.port}")
        self.wait_for(lambda: self.text("status") == "listening", what="status listening")
        self.wait_for(lambda: scanner.path in self.text("devices"), what="the scanner's arrival and opendevice")
        code = f"WEB-{uuid.uuid4().hex[:8].upper()}"
        scanner.write(code)
        self.wait_for(lambda: code in self.codes(), what=f"code {code}")
        self.assertEqual(self.codes(), [code])
        self.assertEqual(self.text("error"), "")
        # The service goes away without a close frame: the page sees 1006 and reports -87.
        service.signal(signal.SIGKILL)
        self.wait_for(lambda: self.text("error") == str(h.ESKT_SERVICENOTCOMMUNICATING), what="Error -87")

    def test_the_same_page_from_a_refused_origin_gets_nothing(self):
        scanner, service = self.serve_scanner()
        origin = f"http://evil.example:{self.page_port}"
        self.driver.get(f"{origin}/index.html?port={service.port}")
        # The preflight is refused (403): XMLHttpRequest reports status 0, the page's -27.
        self.wait_for(lambda: self.text("status") == "failed", what="status failed")
        self.assertEqual(self.text("error"), "-27")
        # The marker: a client the service admits (no Origin) gets the code, so the service has read
        # and handed it out by now; the refused page holds no client handle and no socket to get it on.
        allowed = h.RawEventClient(service)
        self.addCleanup(allowed.close)
        arrival = allowed.wait(lambda r: r["event"]["id"] == h.EV_DEVICE_ARRIVAL, timeout=20)
        device = service.result("opendevice", {"handle": allowed.handle, "guid": arrival["event"]["value"]["guid"]})["handle"]
        scanner.write("NOT-FOR-EVIL")
        allowed.wait(lambda r: r["handle"] == device and r["event"]["id"] == h.EV_DECODED_DATA
                     and bytes(r["event"]["value"]["data"]) == b"NOT-FOR-EVIL", timeout=20)
        self.assertEqual(self.codes(), [])
        self.assertEqual(self.text("devices"), "")
        lines = service.wait_stderr(lambda line: origin in line and "--allow-origin" in line)
        self.assertTrue(lines, f"no stderr line names {origin} and --allow-origin: {service.stderr()}")

    def test_the_refused_origin_works_once_allowed(self):
        origin = f"http://evil.example:{self.page_port}"
        scanner, service = self.serve_scanner(["--allow-origin", origin])
        self.driver.get(f"{origin}/index.html?port={service.port}")
        self.wait_for(lambda: scanner.path in self.text("devices"), what="the scanner's arrival and opendevice")
        scanner.write("ALLOWED-1")
        self.wait_for(lambda: "ALLOWED-1" in self.codes(), what="code ALLOWED-1")


@unittest.skipIf(missing_react(), f"*** SKIPPED: the React page needs {', '.join(missing_react())} (apt-get install esbuild node-react node-react-dom)")
class ReactPageTests(BrowserCase):
    @classmethod
    def page_dir(cls):
        """react.html and react-app.js, bundled now from react-app.jsx and capture-page.js with Debian's
        React 18 (NODE_PATH: esbuild resolves bare imports there as node does); removed at the end."""
        out = tempfile.mkdtemp(prefix="capture-react-page.")
        cls.addClassCleanup(shutil.rmtree, out, True)
        built = subprocess.run([ESBUILD, os.path.join(PAGE_DIR, "react-app.jsx"), "--bundle", "--log-level=warning",
                                "--define:process.env.NODE_ENV=\"production\"",
                                f"--outfile={os.path.join(out, 'react-app.js')}"],
                               env=dict(os.environ, NODE_PATH=NODE_MODULES), capture_output=True, text=True, timeout=120)
        if built.returncode != 0 or built.stderr:
            raise AssertionError(f"esbuild failed ({built.returncode}): {built.stderr}")
        shutil.copy(os.path.join(PAGE_DIR, "react.html"), out)
        return out

    def devices(self):
        return [li.text for li in self.driver.find_elements("css selector", "#devices li")]

    def test_the_react_page_shows_a_code_in_its_state_and_follows_the_removal(self):
        scanner, service = self.serve_scanner()
        self.driver.get(f"http://127.0.0.1:{self.page_port}/react.html?port={service.port}")
        self.wait_for(lambda: self.text("status") == "listening", what="status listening")
        # DeviceArrival → opendevice → the device in React state, rendered with its handle.
        self.wait_for(lambda: len(self.devices()) == 1 and scanner.path in self.devices()[0],
                      what="the scanner in the device list")
        [name] = self.devices()
        handle = self.driver.find_element("css selector", "#devices li").get_attribute("data-handle")
        self.assertTrue(handle.isdigit() and int(handle) > 0, handle)
        code = f"REACT-{uuid.uuid4().hex[:8].upper()}"
        scanner.write(code)
        self.wait_for(lambda: code in self.codes(), what=f"code {code}")
        self.assertEqual(self.codes(), [code])
        # DeviceRemoval → close of that device handle, answered → dropped from the state.
        scanner.unplug()
        self.wait_for(lambda: self.text("status") == f"closed {name}", what="the device's close")
        self.assertEqual(self.devices(), [])
        self.assertEqual(self.text("error"), "")


if __name__ == "__main__":
    if len(sys.argv) > 1 and os.path.isfile(sys.argv[1]):
        os.environ["CAPTURE_BIN"] = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
