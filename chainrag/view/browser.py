"""A headless Chromium driven over the DevTools protocol, with the standard library only: open
a page, run script in it, collect its JavaScript errors, take a screenshot. The view's
real-browser test and ``scripts/view_screenshots.py`` use it.

    with Browser.start() as browser:          # BrowserError if Chromium is missing or stuck
        browser.open(Path("view.html").resolve().as_uri())
        browser.evaluate("document.title")
        browser.screenshot(Path("shot.png"))
        browser.errors                        # exceptions and console errors, as text

The protocol's messages travel over one WebSocket (RFC 6455): text frames, masked from the
client, unmasked from the browser.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from chainrag.core.errors import ChainragError

CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
"""Executables tried, in order."""


class BrowserError(ChainragError):
    """Chromium is missing, did not start, or the page did something the caller waits for
    too slowly; the message says which."""


def find_chromium() -> str | None:
    """The path of a Chromium executable on ``PATH``, or None."""
    return next((path for name in CHROMIUM if (path := shutil.which(name))), None)


class WebSocket:
    """A client WebSocket over a plain TCP connection (enough for DevTools on localhost)."""

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        rest = url.removeprefix("ws://")
        host_port, _, path = rest.partition("/")
        host, _, port = host_port.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET /{path} HTTP/1.1\r\nHost: {host_port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise BrowserError(f"{url}: the connection closed during the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise BrowserError(f"{url}: no WebSocket upgrade: {head[:200]!r}")

    def send(self, text: str) -> None:
        payload = text.encode()
        n = len(payload)
        if n < 126:
            header = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 1 << 16:
            header = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            header = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def _exactly(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise BrowserError("the browser closed the connection")
            data.extend(chunk)
        return bytes(data)

    def receive(self) -> str:
        """The next text message (fragments joined; pings answered)."""
        message = bytearray()
        while True:
            first, second = self._exactly(2)
            opcode, n = first & 0x0F, second & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._exactly(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._exactly(8))[0]
            mask = self._exactly(4) if second & 0x80 else b""
            payload = self._exactly(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x8:
                raise BrowserError("the browser closed the connection")
            if opcode == 0x9:  # ping: answer with the same payload
                self.sock.sendall(
                    struct.pack("!BB", 0x8A, 0x80 | len(payload)) + b"\0" * 4 + payload
                )
                continue
            if opcode in (0x0, 0x1, 0x2):
                message.extend(payload)
                if first & 0x80:
                    return message.decode()

    def close(self) -> None:
        self.sock.close()


class Browser:
    """One headless Chromium with one page (see the module docstring)."""

    def __init__(self, process: subprocess.Popen[bytes], profile: Path, page: WebSocket) -> None:
        self.process = process
        self.profile = profile
        self.page = page
        self.events: list[dict[str, Any]] = []
        self._next = 0

    @classmethod
    def start(cls, width: int = 1280, height: int = 900, timeout: float = 30.0) -> Browser:
        """Start Chromium headless on a free port with a throw-away profile."""
        executable = find_chromium()
        if executable is None:
            raise BrowserError(f"no Chromium on PATH (looked for {', '.join(CHROMIUM)})")
        profile = Path(tempfile.mkdtemp(prefix="chainrag-chromium-"))
        argv = [
            executable,
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--disable-dev-shm-usage",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            "about:blank",
        ]
        quiet = subprocess.DEVNULL
        process = subprocess.Popen(argv, stdout=quiet, stderr=quiet)  # noqa: S603
        try:
            port = cls._port(profile, process, timeout)
            page = cls._page_socket(port, timeout)
        except BaseException:
            process.kill()
            process.wait()
            shutil.rmtree(profile, ignore_errors=True)
            raise
        browser = cls(process, profile, page)
        for domain in ("Page", "Runtime", "Log"):
            browser.call(f"{domain}.enable")
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        return browser

    @staticmethod
    def _port(profile: Path, process: subprocess.Popen[bytes], timeout: float) -> int:
        marker = profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise BrowserError(f"Chromium exited at start (code {process.returncode})")
            if marker.is_file() and (lines := marker.read_text().split()):
                return int(lines[0])
            time.sleep(0.1)
        raise BrowserError(f"Chromium did not open its DevTools port within {timeout:.0f} s")

    @staticmethod
    def _page_socket(port: int, timeout: float) -> WebSocket:
        url = f"http://127.0.0.1:{port}/json/list"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with urllib.request.urlopen(url, timeout=timeout) as reply:
                targets = json.load(reply)
            pages = [t for t in targets if t.get("type") == "page"]
            if pages:
                return WebSocket(pages[0]["webSocketDebuggerUrl"], timeout)
            time.sleep(0.1)
        raise BrowserError(f"Chromium opened no page within {timeout:.0f} s")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one protocol command and return its result (events meanwhile are kept)."""
        self._next += 1
        ident = self._next
        self.page.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.page.receive())
            if message.get("id") == ident:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            if "method" in message:
                self.events.append(message)

    def open(self, url: str, timeout: float = 60.0) -> None:
        """Navigate to ``url`` and wait for its load event."""
        seen = len(self.events)
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + timeout
        while not any(e["method"] == "Page.loadEventFired" for e in self.events[seen:]):
            if time.monotonic() > deadline:
                raise BrowserError(f"{url} did not load within {timeout:.0f} s")
            self.events.append(json.loads(self.page.receive()))

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited if a promise); a
        BrowserError carrying the exception's text if it throws."""
        reply = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in reply:
            details = reply["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"the page's script threw: {text}")
        return reply.get("result", {}).get("value")

    @property
    def errors(self) -> list[str]:
        """The page's uncaught exceptions and console / log errors so far."""
        found = []
        for event in self.events:
            params = event.get("params", {})
            if event["method"] == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                found.append(
                    details.get("exception", {}).get("description")
                    or details.get("text", "exception")
                )
            elif event["method"] == "Runtime.consoleAPICalled" and params.get("type") == "error":
                found.append(
                    " ".join(
                        str(a.get("value", a.get("description", "")))
                        for a in params.get("args", [])
                    )
                )
            elif (
                event["method"] == "Log.entryAdded"
                and params.get("entry", {}).get("level") == "error"
            ):
                found.append(params["entry"].get("text", "log error"))
        return found

    def screenshot(self, path: Path, *, full_page: bool = False) -> Path:
        """A PNG of the viewport (or of the whole page) written to ``path``."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", **params)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        """Stop Chromium and remove its profile."""
        self.page.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
