"""Driving the app for real: ``pearl-verl compare serve`` in a subprocess and Debian's chromium via Playwright.

Used by the browser test and by :mod:`pearl_verl.compare.screenshot`. Playwright drives the
system's chromium (``apt-get install -y chromium``); its own browser download is never used, so
nothing is fetched at test time.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CHROMIUM_ARGS: tuple[str, ...] = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
INSTALL_HINT = (
    "run `sudo apt-get install chromium` (Debian's package; never `playwright install`), then rerun; the "
    "browser test tests/compare/test_browser.py and `python -m pearl_verl.compare.screenshot` need it"
)


def chromium_path() -> str:
    """The system chromium's executable.

    Raises:
        RuntimeError: when none is installed, saying how to install it.
    """
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError(f"chromium is not installed (none on PATH): {INSTALL_HINT}")


def launch_chromium(playwright: Any) -> Any:
    """A headless chromium ``Browser`` from a started ``sync_playwright()`` handle."""
    return playwright.chromium.launch(executable_path=chromium_path(), args=list(CHROMIUM_ARGS))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class StudyServer:
    """``pearl-verl compare serve`` on 127.0.0.1 in a subprocess; :meth:`start` waits until it answers.

    Args:
        db_url: the study database.
        pairs: pairs files to load on start.
        log: file that receives the server's output (kept for diagnosis).
        port: the port; a free one when None.
    """

    def __init__(self, db_url: str, pairs: Sequence[Path], log: Path, port: int | None = None) -> None:
        self.db_url = db_url
        self.pairs = list(pairs)
        self.log = log
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 60.0) -> StudyServer:
        """Start the server and wait for ``/healthz``.

        Raises:
            RuntimeError: when it exits or does not answer in time (its log is quoted).
        """
        command = [sys.executable, "-m", "pearl_verl.cli", "compare", "serve", "--db-url", self.db_url]
        command += ["--port", str(self.port)]
        for path in self.pairs:
            command += ["--pairs", str(path)]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with {self.process.returncode}:\n{self.log.read_text()}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=1) as response:
                    if response.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the server did not answer within {timeout_s} s:\n{self.log.read_text()}")

    def stop(self) -> None:
        """Kill the server (SIGKILL: no graceful shutdown, as a crash would be)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        self.process = None
