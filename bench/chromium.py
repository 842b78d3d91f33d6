"""A small headless Chromium driver over the DevTools protocol, for the HTML report's test, benchmark and screenshot.

It starts Debian's ``chromium`` (nothing is downloaded: no playwright, no
selenium-manager), connects to the page's DevTools websocket with
websocket-client (a dev dependency), and offers what the checks need: open a
file and wait for its load event, evaluate an expression, click, take a
screenshot. ``find_chromium`` says why no browser is usable, so a test can
skip with that reason.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Optional

#: Browser binaries tried in order.
BINARIES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> tuple[Optional[str], str]:
    """The browser binary, or None and why (no binary on PATH, or websocket-client missing)."""
    try:
        import websocket  # noqa: F401
    except ImportError:
        return None, "websocket-client is not installed (pip install -e '.[dev]')"
    for name in BINARIES:
        path = shutil.which(name)
        if path:
            return path, ""
    return None, "no chromium on PATH (.ci/run installs Debian's chromium when run as root: apt-get install -y chromium)"


class Chromium:
    """One headless browser with one page; use as a context manager so the process always ends."""

    def __init__(self, width: int = 1400, height: int = 1000, start_timeout: float = 30.0) -> None:
        import websocket

        binary, why = find_chromium()
        if binary is None:
            raise RuntimeError(why)
        self.profile = tempfile.mkdtemp(prefix="conformance-chromium-")
        arguments = [
            binary,
            "--headless=new",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--remote-debugging-port=0",
            "--remote-allow-origins=*",
            f"--user-data-dir={self.profile}",
            f"--window-size={width},{height}",
            "about:blank",
        ]
        if os.geteuid() == 0:
            arguments.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
        self.process = subprocess.Popen(arguments, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + start_timeout
        while not port_file.exists() or not port_file.read_text().strip():
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise RuntimeError(f"{binary} did not open its DevTools port within {start_timeout:g} s")
            time.sleep(0.05)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
            targets = json.load(answer)
        page = next(t for t in targets if t.get("type") == "page")
        self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60, suppress_origin=True)
        self._id = 0
        self.events: list[dict[str, Any]] = []
        self.send("Page.enable")
        self.send("Runtime.enable")

    def __enter__(self) -> "Chromium":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Call a DevTools method and return its result (events that arrive meanwhile are kept in ``events``)."""
        self._id += 1
        self.socket.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self._id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self.events.append(message)

    def wait_for(self, event: str, timeout: float = 60.0) -> dict[str, Any]:
        """The next event of that name (one already received counts)."""
        deadline = time.monotonic() + timeout
        while True:
            for index, message in enumerate(self.events):
                if message.get("method") == event:
                    return self.events.pop(index)
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {event} within {timeout:g} s")
            self.events.append(json.loads(self.socket.recv()))

    def open(self, path: Path) -> float:
        """Load a local file and wait for its load event; the seconds from the request to that event."""
        self.events.clear()
        started = time.perf_counter()
        self.send("Page.navigate", url=path.resolve().as_uri())
        self.wait_for("Page.loadEventFired")
        return time.perf_counter() - started

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-able values only)."""
        answer = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in answer:
            raise RuntimeError(f"{expression[:80]}: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def click(self, selector: str) -> None:
        """A real mouse click (pressed and released) at the middle of the first element the selector finds."""
        box = self.evaluate(
            f"(() => {{ const el = document.querySelector({json.dumps(selector)}); el.scrollIntoView({{block: 'center'}});"
            " const r = el.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def screenshot(self, path: Path, full_page: bool = False) -> None:
        """Save a PNG of the viewport (or of the whole page)."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
            params["captureBeyondViewport"] = True
        data = self.send("Page.captureScreenshot", **params)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        """End the browser process (only this one) and remove its profile."""
        socket = getattr(self, "socket", None)
        if socket is not None:
            try:
                socket.close()
            except OSError:
                pass
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)
