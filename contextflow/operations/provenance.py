"""The one provenance header: the line above stored text that says whose it is and when, and the
small helpers every presenter shares (ages, JSON values). Light imports: hooks use them too.

Stored text is untrusted, so every value in a header is cleaned to one line and clipped;
the writer (the log that holds it) is always labelled `writer=`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from contextflow.core import jsonio
from contextflow.core.project import DEFAULT_PROJECT
from contextflow.core.text import clean, clip

if TYPE_CHECKING:
    from contextflow.core.events import OrderKey

Part = str | tuple[str, object] | None
_PAIRS: dict[tuple[str, str, int], str] = {}  # (name, value, limit) -> its `name=value`: a listing repeats its writers,
_PAIRS_HELD = 4096  # projects, sessions and tasks on every line (at most this many kept, then started over)


def header(*parts: Part, limit: int = 120) -> str:
    """`part | name=value | ...`: (name, value) pairs are cleaned and clipped, plain strings (which
    may hold stored values, e.g. a thought's type) cleaned onto one line; None, and pairs whose value
    is None or empty, are left out."""
    shown: list[str] = []
    for part in parts:
        if isinstance(part, tuple):
            name, value = part
            if value is None or value == "":
                continue
            if type(value) is not str or len(value) > 200:
                shown.append(f"{name}={clip(value, limit)}")
                continue
            pair = _PAIRS.get((name, value, limit))
            if pair is None:
                if len(_PAIRS) >= _PAIRS_HELD:
                    _PAIRS.clear()
                pair = _PAIRS[(name, value, limit)] = f"{name}={clip(value, limit)}"
            shown.append(pair)
        elif part:
            shown.append(clean(part, single_line=True))
    return " | ".join(shown)


def stored_header(kind: str, ref: str, writer: Any, agent: Any, time: str, project: Any) -> str:
    """The header over one stored item of any kind (a search hit, a conversation record)."""
    return header(
        ("kind", kind),
        ("id", ref),
        ("writer", writer or "unknown"),
        ("agent", agent or "unknown"),
        ("time", time),
        ("project", project or DEFAULT_PROJECT),
    )


def dumps(value: Any) -> str:
    """Indented JSON, as resources, `format=json` replies and the CLI's `--format json` show it."""
    return jsonio.dumps(value, indent=True, any_keys=True).decode()


def age_of(key: OrderKey, now: datetime) -> str:
    """How long ago an event with this order key was written ("3h ago")."""
    from contextflow.core.clock import stamp_ms
    from contextflow.core.timeutil import age

    return age(datetime.fromtimestamp(stamp_ms(key[0]) / 1000, tz=UTC), now)


def value_text(value: Any, limit: int | None) -> str:
    """A stored JSON value as text: indented in full, or compact and clipped to `limit`."""
    return dumps(value) if limit is None else clip(jsonio.dumps(value).decode(), limit)
