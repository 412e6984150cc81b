"""The HTML report in a real browser: Debian's headless Chromium.

Two looks: the plain command line (--screenshot, console messages on stderr
via --enable-logging), and the DevTools protocol over --remote-debugging-pipe
for what the command line cannot tell: every network request the page made
(none but the file itself: self-contained), the layout on a 375 px phone
screen (no sideways scrolling of the page; wide tables scroll in their box),
and the text the reader sees.
"""
import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time

import pytest

from rfc2544.reports.render import write_reports

from known_results import DATA, headline, key_figures
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="chromium not installed (make apt-deps)")


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    out = tmp_path_factory.mktemp("html")
    return {name: write_reports(DATA / f"{name}.json", out, ("html",))[0] for name in ("complete", "partial")}


def assert_not_blank(png_path, min_height):
    from matplotlib.image import imread
    pixels = imread(str(png_path))
    assert pixels.shape[0] >= min_height
    assert pixels.std() > 0.05


def keep(path):
    """Copy a picture to $RFC2544_TEST_ARTIFACTS, when set, for a person to look at."""
    target = os.environ.get("RFC2544_TEST_ARTIFACTS")
    if target:
        os.makedirs(target, exist_ok=True)
        shutil.copy(path, target)


def test_screenshot_and_no_console_messages(reports, tmp_path):
    name = "complete"
    shot = tmp_path / f"{name}.png"
    proc = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
         "--window-size=1200,1800", f"--screenshot={shot}", reports[name].as_uri()],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    assert_not_blank(shot, 1800)
    keep(shot)


class DevTools:
    """A minimal Chrome DevTools Protocol client over --remote-debugging-pipe:
    Chromium reads JSON commands on fd 3 and writes replies on fd 4, each
    message ending in a NUL byte."""

    def __init__(self, profile_dir, timeout=60):
        self.timeout = timeout
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire_fds():  # in the child, before exec: our pipe ends become fds 3 and 4
            hi_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)
            hi_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile_dir}", "--remote-debugging-pipe", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=False, preexec_fn=wire_fds)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._next_id = 0
        self.events = []

    def _read(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            if select.select([self._from_child], [], [], left)[0]:
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self._buf += chunk
        message, self._buf = self._buf.split(b"\0", 1)
        return json.loads(message)

    def send(self, method, session=None, **params):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method):
        deadline = time.monotonic() + self.timeout
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self._read(deadline))

    def evaluate(self, session, expression):
        result = self.send("Runtime.evaluate", session=session, expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise AssertionError(result["exceptionDetails"])
        return result["result"]["value"]

    def close(self):
        try:
            self.send("Browser.close")
            self.proc.wait(timeout=15)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_child)
        os.close(self._from_child)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    tools = DevTools(tmp_path_factory.mktemp("chromium-profile"))
    yield tools
    tools.close()


def open_page(browser, url, width, height, mobile):
    target = browser.send("Target.createTarget", url="about:blank")["targetId"]
    session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    for domain in ("Runtime", "Log", "Network", "Page"):
        browser.send(f"{domain}.enable", session=session)
    browser.send("Emulation.setDeviceMetricsOverride", session=session, width=width, height=height,
                 deviceScaleFactor=1, mobile=mobile)
    browser.events.clear()
    browser.send("Page.navigate", session=session, url=url)
    browser.wait_for("Page.loadEventFired")
    return session


def problems(events):
    """Console calls, uncaught exceptions and browser log errors (failed loads, CSP...)."""
    found = []
    for e in events:
        method, params = e.get("method"), e.get("params", {})
        if method == "Runtime.consoleAPICalled":
            found.append(f"console.{params['type']}: {params.get('args')}")
        elif method == "Runtime.exceptionThrown":
            found.append(f"exception: {params['exceptionDetails']}")
        elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
            found.append(f"log: {params['entry']['text']}")
    return found


def test_complete_report_on_a_phone_screen(browser, reports, tmp_path):
    url = reports["complete"].as_uri()
    session = open_page(browser, url, 375, 800, True)
    requests = [e["params"]["request"]["url"] for e in browser.events if e.get("method") == "Network.requestWillBeSent"]
    assert requests == [url]                                   # self-contained: nothing else is fetched
    assert problems(browser.events) == []
    page = browser.evaluate(session, """({
        pageWidth: document.documentElement.scrollWidth, viewport: window.innerWidth,
        plots: [...document.querySelectorAll('svg.plot')].map(s => s.getBoundingClientRect().width),
        widestTable: Math.max(...[...document.querySelectorAll('.table-wrap')].map(w => w.scrollWidth)),
        text: document.body.innerText })""")
    assert page["pageWidth"] <= page["viewport"] == 375      # no sideways scrolling of the page
    assert page["widestTable"] > 375                          # the trial log scrolls inside its box
    assert len(page["plots"]) == 3 and all(300 < w <= 375 for w in page["plots"])
    text = page["text"]
    for figure in [headline(), *key_figures()]:
        assert figure in text, figure
    shot = browser.send("Page.captureScreenshot", session=session, format="png")
    (tmp_path / "phone.png").write_bytes(base64.b64decode(shot["data"]))
    assert_not_blank(tmp_path / "phone.png", 800)
    keep(tmp_path / "phone.png")


def test_partial_report_banner_is_visible_first(browser, reports):
    session = open_page(browser, reports["partial"].as_uri(), 1200, 900, False)
    assert problems(browser.events) == []
    banner = browser.evaluate(session, """(() => {
        const b = document.querySelector('#incomplete'); const r = b.getBoundingClientRect();
        return {top: r.top, height: r.height, text: b.innerText,
                color: getComputedStyle(b).backgroundColor}; })()""")
    assert 0 < banner["top"] < 200 and banner["height"] > 50   # on the first screen, not hidden
    assert banner["text"].startswith("INCOMPLETE RUN")
    assert banner["color"] != "rgba(0, 0, 0, 0)"


def test_browser_print_is_a4_with_the_figures(browser, reports, tmp_path):
    # Chromium's own print of the same HTML (print CSS), as a reader printing from the browser.
    session = open_page(browser, reports["complete"].as_uri(), 1200, 900, False)
    pdf = browser.send("Page.printToPDF", session=session, paperWidth=8.27, paperHeight=11.69,
                       preferCSSPageSize=True)
    path = tmp_path / "printed.pdf"
    path.write_bytes(base64.b64decode(pdf["data"]))
    text = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, check=True).stdout
    assert headline().split(": ")[1] in text and "Trial log" in text
    info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, check=True).stdout
    assert "(A4)" in info
