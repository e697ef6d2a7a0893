"""Time in one place: now, ISO-8601 times, durations, expiry, age.

Every instant is UTC. A time that names no zone (legacy ContextFlowMCP `ts` fields, a
`since=2026-01-31T09:00` typed by a person) is read as UTC, never as the machine's local
time, so two machines in different zones read the same line as the same instant.

One duration grammar serves expiry times and graph queries alike: short units that may be
combined (`30m`, `24h`, `7d`, `2w`, `1y`, `1d12h`) or ISO-8601 (`P7D`, `PT24H`, `P1Y2W`).
A year is 365 days. Functions taking `now` are pure, so tests can fix the time.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from contextflow.core import regexes
from contextflow.core.errors import InputError, arg

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}
# short units, or ISO-8601 (in lower case), where `m` is minutes too: its date part has no months
_DURATION = regexes.compile(r"^(?:\d+[smhdwy])+$|^p(?:\d+y)?(?:\d+w)?(?:\d+d)?(?:t(?:\d+h)?(?:\d+m)?(?:\d+s)?)?$")
_PART = regexes.compile(r"(\d+)([smhdwy])")
_LONGEST = int(timedelta(days=999_999).total_seconds())  # beyond any limit a caller sets, within timedelta
MAX_EXPIRY = timedelta(days=3660)
DURATION_FORMS = "30m, 24h, 7d, 2w, 1y, 1d12h or P7D"
EXPIRY_HOW = f"a duration such as {DURATION_FORMS}, or an ISO-8601 time such as 2026-02-10T09:00:00Z"


def now() -> datetime:
    return datetime.now(UTC)


def now_ms() -> int:
    """Wall-clock milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


def parse_iso(raw: str) -> datetime | None:
    """An ISO-8601 time or date as an aware UTC datetime (no zone means UTC); None when it is not one."""
    try:
        moment = datetime.fromisoformat(raw.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+01:00 has no UTC form
        return None


def iso_ms(raw: object) -> int | None:
    """Milliseconds since the epoch of an ISO-8601 time (no zone means UTC), or None: a stored value
    of any type (a field of someone else's line) is read here."""
    moment = parse_iso(raw) if isinstance(raw, str) else None
    return None if moment is None else int(moment.timestamp() * 1000)


def to_iso(moment: datetime) -> str:
    """UTC, millisecond precision, `Z` suffix: the form event timestamps use."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_duration(raw: str) -> timedelta | None:
    """The duration `raw` spells, or None when it is not a duration. Huge ones are capped near
    2,700 years, so a caller's own limit (not an overflow) turns them down."""
    text = raw.strip().lower()
    parts = _PART.findall(text) if _DURATION.match(text) else []
    if not parts:  # also `P` and `PT`, which name no amount
        return None
    return timedelta(seconds=min(sum(int(amount) * _UNITS[unit] for amount, unit in parts), _LONGEST))


def expiry(value: str | None, now: datetime, name: str = "expires_at") -> datetime | None:
    """When something passed as `expires_at` (a duration from now, or an ISO time) expires; None when not given."""
    if value is None:
        return None
    if not value.strip():
        raise InputError(f"{arg(name)} must be {EXPIRY_HOW}; got {value!r}")
    span = parse_duration(value)
    if span is not None:
        if span <= timedelta(0):
            raise InputError(f"{arg(name)}={value!r} is zero; give a positive duration such as 24h")
        if span > MAX_EXPIRY:
            raise InputError(f"{arg(name)}={value!r} is over 10 years; give a shorter duration or omit it")
        return now + span
    moment = parse_iso(value)
    if moment is None:
        raise InputError(f"{arg(name)}={value!r} is not understood; use {EXPIRY_HOW}")
    if moment <= now:
        raise InputError(
            f"{arg(name)}={value!r} is already past (now is {to_iso(now)}); give a future time or a duration"
        )
    return moment


def age(moment: datetime, now: datetime) -> str:
    """How long ago, in words: "just now", "5 minutes ago", "9 hours ago", "3 days ago"."""
    return ago(int((now - moment).total_seconds()))


def age_ms(ms: int, now: datetime) -> str:
    """`age` of the moment `ms` milliseconds after the epoch, in integers (a listing asks it per row)."""
    elapsed = (now - _EPOCH) // _MICROSECOND - ms * 1000
    return ago(elapsed // 1_000_000 if elapsed >= 0 else -(-elapsed // 1_000_000))  # (toward zero, as `age`)


_EPOCH, _MICROSECOND = datetime(1970, 1, 1, tzinfo=UTC), timedelta(microseconds=1)


def ago(seconds: int) -> str:
    """`seconds` ago, in words (`age`)."""
    if seconds < 0:
        return "in the future"
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
    return "just now"
