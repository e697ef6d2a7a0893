"""Hybrid logical clock.

A stamp is one int: wall-clock milliseconds shifted left by 16 bits, plus a logical
counter in the low bits. `tick()` never returns a stamp at or below one already seen
(`observe()`), so a write made after reading another machine's write orders after it,
even when this machine's clock is behind.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime

from contextflow.timeutil import now_ms as system_ms

COUNTER_BITS = 16


class HybridClock:
    def __init__(self, now_ms: Callable[[], int] = system_ms) -> None:
        self._now_ms = now_ms
        self._last = 0

    @property
    def last(self) -> int:
        return self._last

    def observe(self, stamp: int) -> None:
        if stamp > self._last:
            self._last = stamp

    def tick(self) -> int:
        stamp = max(self._now_ms() << COUNTER_BITS, self._last + 1)
        self._last = stamp
        return stamp


def stamp_ms(stamp: int) -> int:
    return stamp >> COUNTER_BITS


def stamp_from_ms(ms: int) -> int:
    return ms << COUNTER_BITS


@functools.lru_cache(maxsize=65536)
def stamp_iso(stamp: int) -> str:
    """ISO-8601 UTC time of a stamp, millisecond precision, `Z` suffix."""
    moment = datetime.fromtimestamp(stamp_ms(stamp) / 1000, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
