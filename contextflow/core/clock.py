"""Hybrid logical clock.

A stamp is one int: wall-clock milliseconds shifted left by 16 bits plus a logical counter.
`tick()` never returns a stamp at or below one already seen (`observe()`), so a write made after
reading another machine's write orders after it even when this machine's clock is behind.
Stamps from other machines are untrusted: past MAX_HLC (year 9999) the line is bad, and
`observe()` ignores a stamp more than MAX_DRIFT_MS ahead of wall time (such events are bounded
instead, so later writes still order after them: `ahead.py`), so this clock never runs ahead of
wall time by more than that.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime

from contextflow.core.timeutil import now_ms as system_ms
from contextflow.core.timeutil import to_iso

COUNTER_BITS = 16
MAX_DRIFT_MS = 60 * 60 * 1000  # how far ahead of wall time observing another writer may move this clock
MAX_MS = 253402300799999  # 9999-12-31T23:59:59.999Z, the last moment an ISO time can name
MAX_HLC = (MAX_MS << COUNTER_BITS) | ((1 << COUNTER_BITS) - 1)


class HybridClock:
    def __init__(self, now_ms: Callable[[], int] = system_ms) -> None:
        self._now_ms = now_ms
        self._last = 0

    def observe(self, stamp: int) -> None:
        """Order later ticks after `stamp`, unless it lies more than MAX_DRIFT_MS ahead of wall time
        (a clock that far ahead drags no other: its events are bounded instead, `ahead.py`)."""
        if stamp > self._last and stamp >> COUNTER_BITS <= self._now_ms() + MAX_DRIFT_MS:
            self._last = stamp

    def tick(self) -> int:
        stamp = max(self._now_ms() << COUNTER_BITS, self._last + 1)
        self._last = stamp
        return stamp


def ahead_ms(stamp: int, now_ms: int | None = None) -> int:
    """How far a stamp lies ahead of wall time (0 when it does not)."""
    return max(0, stamp_ms(stamp) - (system_ms() if now_ms is None else now_ms))


def stamp_ms(stamp: int) -> int:
    return stamp >> COUNTER_BITS


def stamp_from_ms(ms: int) -> int:
    return ms << COUNTER_BITS


@functools.lru_cache(maxsize=65536)
def stamp_iso(stamp: int) -> str:
    """ISO-8601 UTC time of a stamp, millisecond precision, `Z` suffix."""
    return to_iso(datetime.fromtimestamp(min(max(stamp_ms(stamp), 0), MAX_MS) / 1000, tz=UTC))
