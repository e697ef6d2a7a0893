"""Progress of a long job: done, rate, time left, on stderr when it is a terminal, and for the
process itself (`running()`: the web page shows the search index's first build with it)."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

_LOCK = threading.Lock()
_RUNNING: list[Progress] = []


class Progress:
    """`events done, rate, time left` on stderr, only when it is a terminal and the work takes a moment."""

    def __init__(self, total_bytes: int) -> None:
        self.total = max(1, total_bytes)
        self.began = self.last = time.monotonic()
        self.shown = False
        self.enabled = sys.stderr.isatty()
        self.done, self.events = 0, 0
        with _LOCK:
            _RUNNING.append(self)

    def update(self, done_bytes: int, events: int, force: bool = False) -> None:
        now = time.monotonic()
        self.done, self.events = done_bytes, events
        if not self.enabled or (not force and (now - self.last < 0.5 or now - self.began < 1.0)):
            return
        self.last, self.shown = now, True
        spent = max(now - self.began, 1e-6)
        left = spent * (self.total - done_bytes) / max(done_bytes, 1)
        sys.stderr.write(
            f"\rcontextflow: indexing the store: {events:,} events, {events / spent:,.0f}/s, {left:,.0f} s left   "
        )
        sys.stderr.flush()

    def state(self) -> dict[str, Any]:
        spent = time.monotonic() - self.began
        left = spent * (self.total - self.done) / self.done if self.done else None
        return {"done_bytes": self.done, "total_bytes": self.total, "events": self.events, "seconds_left": left}

    def finish(self, events: int) -> None:
        self.close()
        if self.shown:
            spent = time.monotonic() - self.began
            sys.stderr.write(f"\rcontextflow: indexed {events:,} events in {spent:,.1f} s{' ' * 24}\n")
            sys.stderr.flush()

    def close(self) -> None:
        with _LOCK:
            if self in _RUNNING:
                _RUNNING.remove(self)


def running() -> dict[str, Any] | None:
    """The state of the longest job of this process still running (done, total, events, time left), or None."""
    with _LOCK:
        jobs = list(_RUNNING)
    return max((job.state() for job in jobs), key=lambda s: s["total_bytes"], default=None)
