"""The self-updating stderr status line of the ``torchscan`` command line (cli.md, ``latency``/``scan``).

A terminal shows ``torchscan: <what> (N s elapsed)`` from the first second of a slow import or
analysis; anything else (a pipe, a file, a test's capture) shows nothing, so logs stay clean.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator


class Status:
    """One self-updating stderr line with elapsed seconds, ticking every second (terminals only).

    The ticker starts at once, so something is on screen from the first second of a slow import or
    analysis; ``set`` changes the text (a progress callback of the timing APIs calls it).
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.start = time.perf_counter()
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.shown = False

    def set(self, text: str) -> None:
        """Show ``text`` now (followed by the elapsed seconds)."""
        self.text = text
        self._draw()

    def _draw(self) -> None:
        with self.lock:
            if self.done.is_set():
                return
            elapsed = time.perf_counter() - self.start
            sys.stderr.write(f"\rtorchscan: {self.text} ({elapsed:.0f} s elapsed)\033[K")
            sys.stderr.flush()
            self.shown = True

    def _tick(self) -> None:
        while not self.done.wait(1.0):
            self._draw()

    def clear(self) -> None:
        """Stop ticking and erase the line."""
        with self.lock:
            self.done.set()
            if self.shown:
                sys.stderr.write("\r\033[K")
                sys.stderr.flush()
                self.shown = False


@contextlib.contextmanager
def status_line(text: str) -> Iterator[Status | None]:
    """A :class:`Status` line while the block runs, or ``None`` when stderr is not a terminal."""
    if not sys.stderr.isatty():
        yield None
        return
    status = Status(text)
    status.set(text)
    thread = threading.Thread(target=status._tick, daemon=True)
    thread.start()
    try:
        yield status
    finally:
        status.clear()
        thread.join()
