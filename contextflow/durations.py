"""Durations ("30m", "24h", "7d", "2w", "1d12h", ISO "P7D", "PT24H") and expiry times.

`expiry()` turns what a caller passed as `expires_at` (a duration from now, or an ISO-8601
time) into one UTC instant. Pure: the caller passes `now`, so tests can fix the time.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from contextflow.errors import InputError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_SHORT = re.compile(r"^(?:\d+[smhdw])+$")
_SHORT_PART = re.compile(r"(\d+)([smhdw])")
_ISO = re.compile(
    r"^P(?:(?P<w>\d+)W)?(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+)S)?)?$"
)
MAX_DURATION = timedelta(days=3660)
HOW = "a duration such as 30m, 24h, 7d, 2w or P7D, or an ISO-8601 time such as 2026-02-10T09:00:00Z"


def parse_duration(raw: str) -> timedelta | None:
    """The duration `raw` spells, or None when it is not a duration."""
    text = raw.strip()
    seconds = 0
    if _SHORT.match(text.lower()):
        for amount, unit in _SHORT_PART.findall(text.lower()):
            seconds += int(amount) * _UNITS[unit]
    else:
        match = _ISO.match(text.upper())
        if match is None or not any(match.groupdict().values()):
            return None
        seconds = sum(int(value) * _UNITS[unit.lower()] for unit, value in match.groupdict().items() if value)
    return timedelta(seconds=seconds)


def parse_time(raw: str) -> datetime | None:
    """An ISO-8601 time as an aware UTC datetime (naive means UTC), or None when it is not one."""
    try:
        moment = datetime.fromisoformat(raw.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def iso(moment: datetime) -> str:
    """UTC, millisecond precision, `Z` suffix: the form event timestamps use."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def expiry(value: Any, now: datetime, name: str = "expires_at") -> datetime | None:
    """When something passed as `expires_at` expires; None when not given."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{name} must be {HOW}; got {value!r}")
    span = parse_duration(value)
    if span is not None:
        if span <= timedelta(0):
            raise InputError(f"{name}={value!r} is zero; give a positive duration such as 24h")
        if span > MAX_DURATION:
            raise InputError(f"{name}={value!r} is over 10 years; give a shorter duration or omit it")
        return now + span
    moment = parse_time(value)
    if moment is None:
        raise InputError(f"{name}={value!r} is not understood; use {HOW}")
    if moment <= now:
        raise InputError(
            f"{name}={value!r} is already past (now is {iso(now)}); give a future time or a duration"
        )
    return moment


def age(moment: datetime, now: datetime) -> str:
    """How long ago, in words: "just now", "5 minutes ago", "9 hours ago", "3 days ago"."""
    seconds = int((now - moment).total_seconds())
    if seconds < 0:
        return "in the future"
    if seconds < 60:
        return "just now"
    # (unit size, first shown from): days up to two weeks read better than "1 week"
    for size, start, unit in (
        (86400 * 365, 86400 * 365, "year"),
        (86400 * 30, 86400 * 60, "month"),
        (86400 * 7, 86400 * 14, "week"),
        (86400, 86400, "day"),
        (3600, 3600, "hour"),
        (60, 60, "minute"),
    ):
        if seconds >= start:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''} ago"
    return "just now"  # pragma: no cover
