"""A tiny Chrome DevTools Protocol driver for the system Chromium (no downloaded browser).

Uses ``websocket-client`` to talk to ``chromium --headless --remote-debugging-port=0``. It records
network requests, console errors, page exceptions and log errors (e.g. CSP violations).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import websocket

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
    "--remote-allow-origins=*",
]
KEYS = {
    "Enter": ("Enter", 13, "\r"),
    " ": ("Space", 32, " "),
    "Tab": ("Tab", 9, ""),
    "ArrowDown": ("ArrowDown", 40, ""),
    "ArrowUp": ("ArrowUp", 38, ""),
    "ArrowLeft": ("ArrowLeft", 37, ""),
    "ArrowRight": ("ArrowRight", 39, ""),
    "Home": ("Home", 36, ""),
    "End": ("End", 35, ""),
}


def chromium_binary() -> str | None:
    """Path of an installed Chromium/Chrome, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Browser:
    """One headless Chromium with one page, driven over CDP."""

    def __init__(self, width: int = 1400, height: int = 900, javascript: bool = True) -> None:
        binary = chromium_binary()
        if binary is None:
            raise RuntimeError("Chromium is not installed")
        self.profile = tempfile.mkdtemp(prefix="torchscan-chromium-")
        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise RuntimeError("Chromium did not start")
            time.sleep(0.05)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list") as response:
            pages = [t for t in json.load(response) if t["type"] == "page"]
        self.ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=30)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.send(f"{domain}.enable")
        self.send(
            "Network.emulateNetworkConditions",
            offline=True,
            latency=0,
            downloadThroughput=-1,
            uploadThroughput=-1,
        )
        self.resize(width, height)
        if not javascript:
            self.send("Emulation.setScriptExecutionDisabled", value=True)

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command and return its result, collecting events meanwhile."""
        self.next_id += 1
        ident = self.next_id
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def resize(self, width: int, height: int) -> None:
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def load(self, path: Path) -> None:
        """Open a file from disk and wait for its load event."""
        self.events.clear()
        self.send("Page.navigate", url=path.resolve().as_uri())
        deadline = time.monotonic() + 30
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            if time.monotonic() > deadline:
                raise RuntimeError("page did not load")
            self.send("Runtime.evaluate", expression="1")
            time.sleep(0.02)
        self.document_url = path.resolve().as_uri()

    def eval(self, expression: str) -> Any:
        """Evaluate JavaScript in the page and return its JSON value."""
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page evaluation failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def key(self, name: str, shift: bool = False) -> None:
        """Press one key (keyDown, keyUp) as a user would."""
        code, keycode, text = KEYS[name]
        params: dict[str, Any] = {
            "key": name,
            "code": code,
            "windowsVirtualKeyCode": keycode,
            "modifiers": 8 if shift else 0,
        }
        self.send("Input.dispatchKeyEvent", type="keyDown", text=text, **params)
        self.send("Input.dispatchKeyEvent", type="keyUp", **params)

    def click(self, selector: str) -> None:
        """Click the centre of the first element matching ``selector``."""
        box = self.eval(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); "
            "e.scrollIntoView({block: 'center'});"
            " const r = e.getClientRects()[0] || e.getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def requests(self) -> list[str]:
        """URLs requested after the document itself."""
        urls = [
            e["params"]["request"]["url"]
            for e in self.events
            if e.get("method") == "Network.requestWillBeSent"
        ]
        return [url for url in urls if url != self.document_url]

    def errors(self) -> list[str]:
        """Page exceptions, console errors and browser log errors (CSP violations included)."""
        found = []
        for e in self.events:
            method = e.get("method")
            if method == "Runtime.exceptionThrown":
                found.append(json.dumps(e["params"]["exceptionDetails"])[:500])
            elif method == "Runtime.consoleAPICalled" and e["params"]["type"] == "error":
                found.append(json.dumps(e["params"]["args"])[:500])
            elif method == "Log.entryAdded" and e["params"]["entry"]["level"] == "error":
                found.append(e["params"]["entry"]["text"])
        return found

    def screenshot(self, path: Path, full_page: bool = False) -> None:
        """Write a PNG of the viewport (or the whole page)."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        data = self.send("Page.captureScreenshot", **params)["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        """Stop the browser this object started and remove its profile."""
        try:
            if getattr(self, "ws", None) is not None:
                self.ws.close()
        finally:
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
            shutil.rmtree(self.profile, ignore_errors=True)
