"""A real headless browser for the HTML report's tests: Debian's Chromium, driven through the
DevTools protocol over a pipe (`--remote-debugging-pipe`: JSON messages ended by NUL on file
descriptors 3 and 4), so no WebDriver or websocket library is needed.

`load(path)` opens a file and returns what a person would have seen go wrong: console messages,
uncaught exceptions, log entries (failed resources), every network request the page made, and
lets the test evaluate JavaScript in it and take a full-page screenshot.

    python -m tests.renderers.browser report.html shot.png   # the screenshot in docs/
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def executable() -> str | None:
    return next((path for path in map(shutil.which, CANDIDATES) if path), None)


@dataclass
class Page:
    """What happened while a page loaded."""

    console: list[str] = field(default_factory=list)  # console.* calls: "error: text"
    exceptions: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)  # browser log entries: "error: Failed to load resource ..."
    requests: list[str] = field(default_factory=list)  # every URL the page asked for


class Browser:
    """One headless Chromium; `with Browser() as browser: browser.load(path)`."""

    def __init__(self, width: int = 1280, height: int = 900, timeout: float = 60.0) -> None:
        self.width, self.height, self.timeout = width, height, timeout
        self._next_id = 0
        self._buffer = b""
        self._events: list[dict[str, Any]] = []

    def __enter__(self) -> Browser:
        binary = executable()
        if binary is None:
            raise RuntimeError("no Chromium found (apt-get install chromium)")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # above 4, so that putting one on fd 3 or 4 cannot overwrite the other
        to_child_r, from_child_w = (_above(fd, 10) for fd in (to_child_r, from_child_w))
        self._profile = tempfile.mkdtemp(prefix="td-chromium-")

        arguments = ["--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
                     "--hide-scrollbars", "--disable-extensions", f"--user-data-dir={self._profile}", "about:blank"]
        # the pipe must be on fds 3 (commands) and 4 (replies): a small Python puts it there, then
        # becomes Chromium (a shell cannot: dash takes single-digit descriptors only)
        trampoline = "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); os.execv(sys.argv[3], sys.argv[3:])"
        self._process = subprocess.Popen(
            [sys.executable, "-c", trampoline, str(to_child_r), str(from_child_w), binary, *arguments],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(os.environ["TD_BROWSER_DEBUG"], "w") if os.environ.get("TD_BROWSER_DEBUG") else subprocess.DEVNULL,  # noqa: SIM115
            pass_fds=(to_child_r, from_child_w),
        )
        os.close(to_child_r)
        os.close(from_child_w)
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self._call(f"{domain}.enable", session=True)
        self._call("Emulation.setDeviceMetricsOverride",
                   {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False}, session=True)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._call("Browser.close")
        except Exception:  # noqa: BLE001 - it may be gone already
            pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        for fd in (self._to_child, self._from_child):
            os.close(fd)
        shutil.rmtree(self._profile, ignore_errors=True)

    def load(self, path: Path) -> Page:
        """Open `path` and wait for its load event (and a moment after, for late errors)."""
        self._events.clear()
        self._call("Page.navigate", {"url": path.resolve().as_uri()}, session=True)
        self._wait_for("Page.loadEventFired")
        self.evaluate("new Promise(r => requestAnimationFrame(() => setTimeout(r, 50)))", wait=True)
        page = Page()
        for event in self._events:
            method, params = event["method"], event.get("params", {})
            if method == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
                page.console.append(f"{params.get('type')}: {text}")
            elif method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                page.exceptions.append(details.get("exception", {}).get("description") or details.get("text", ""))
            elif method == "Log.entryAdded":
                entry = params.get("entry", {})
                page.log.append(f"{entry.get('level')}: {entry.get('text')} {entry.get('url', '')}".strip())
            elif method == "Network.requestWillBeSent":
                page.requests.append(params.get("request", {}).get("url", ""))
        return page

    def evaluate(self, expression: str, wait: bool = False) -> Any:
        result = self._call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": wait},
                            session=True)
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"].get("text", "evaluation failed"))
        return result.get("result", {}).get("value")

    def screenshot(self, path: Path, full_page: bool = True, height: int | None = None) -> None:
        """A PNG of the page (all of it, or its top `height` pixels)."""
        page_height = self.evaluate("document.documentElement.scrollHeight") if full_page else self.height
        clip_height = min(page_height, height) if height else page_height
        self._call("Emulation.setDeviceMetricsOverride",
                   {"width": self.width, "height": clip_height, "deviceScaleFactor": 1, "mobile": False}, session=True)
        data = self._call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": False}, session=True)["data"]
        path.write_bytes(base64.b64decode(data))

    # -- the protocol ---------------------------------------------------------------------------

    def _call(self, method: str, params: dict[str, Any] | None = None, session: bool = False) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        reply = self._receive(lambda m: m.get("id") == self._next_id)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error'].get('message')}")
        return reply.get("result", {})

    def _wait_for(self, method: str) -> dict[str, Any]:
        for event in self._events:
            if event.get("method") == method:
                return event
        return self._receive(lambda m: m.get("method") == method)

    def _receive(self, wanted: Any) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "method" in message:
                    self._events.append(message)
                if wanted(message):
                    return message
            if time.monotonic() > deadline:
                raise TimeoutError("the browser did not answer")
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise RuntimeError("the browser exited")
            self._buffer += chunk


def _above(fd: int, lowest: int) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, lowest)
    os.close(fd)
    return moved


def main(argv: list[str]) -> int:
    """`python -m tests.renderers.browser REPORT.html SHOT.png [HEIGHT]`: a screenshot for the docs."""
    source, target = Path(argv[0]), Path(argv[1])
    with Browser(width=1100) as browser:
        page = browser.load(source)
        problems = page.console + page.exceptions + [e for e in page.log if not e.startswith("verbose")]
        if problems:
            print("\n".join(problems), file=sys.stderr)
            return 1
        browser.screenshot(target, height=int(argv[2]) if len(argv) > 2 else None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
