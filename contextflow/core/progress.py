"""Progress of a long job on a terminal: done, rate, time left (stderr, only when it is a terminal)."""

from __future__ import annotations

import sys
import time


class Progress:
    """`events done, rate, time left` on stderr, only when it is a terminal and the work takes a moment."""

    def __init__(self, total_bytes: int) -> None:
        self.total = max(1, total_bytes)
        self.began = self.last = time.monotonic()
        self.shown = False
        self.enabled = sys.stderr.isatty()

    def update(self, done_bytes: int, events: int, force: bool = False) -> None:
        now = time.monotonic()
        if not self.enabled or (not force and (now - self.last < 0.5 or now - self.began < 1.0)):
            return
        self.last, self.shown = now, True
        spent = max(now - self.began, 1e-6)
        left = spent * (self.total - done_bytes) / max(done_bytes, 1)
        sys.stderr.write(
            f"\rcontextflow: indexing the store: {events:,} events, {events / spent:,.0f}/s, {left:,.0f} s left   "
        )
        sys.stderr.flush()

    def finish(self, events: int) -> None:
        if self.shown:
            spent = time.monotonic() - self.began
            sys.stderr.write(f"\rcontextflow: indexed {events:,} events in {spent:,.1f} s{' ' * 24}\n")
            sys.stderr.flush()
