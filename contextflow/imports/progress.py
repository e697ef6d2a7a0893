"""A progress bar on standard error for long imports; nothing at all when stderr is not a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 30
LABEL = 56  # characters of the label shown before the bar
EVERY = 0.1  # seconds between redraws


class Progress:
    def __init__(self, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.total = 0
        self.done = 0
        self.label = ""
        self._drawn = 0.0
        self._shown = False

    def start(self, total: int, label: str) -> None:
        self.total, self.done, self.label = max(total, 1), 0, label
        self._draw(force=True)

    def advance(self, amount: int = 1, label: str | None = None) -> None:
        self.done = min(self.total, self.done + amount)
        if label is not None:
            self.label = label
        self._draw(force=self.done >= self.total)

    def say(self, label: str) -> None:
        """What it is doing now, drawn at once (a step that moves no count, such as reading the graph)."""
        self.label = label
        self._draw(force=True)

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._drawn < EVERY:
            return
        self._drawn = now
        filled = WIDTH * self.done // self.total
        bar = "#" * filled + "-" * (WIDTH - filled)
        self.stream.write(f"\r{self.label[:LABEL]:<{LABEL}} [{bar}] {100 * self.done // self.total:3d}%")
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        if self.enabled and self._shown:
            self.stream.write("\r" + " " * (WIDTH + LABEL + 10) + "\r")
            self.stream.flush()
