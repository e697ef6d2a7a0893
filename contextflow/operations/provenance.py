"""The one provenance header: the line above stored text that says whose it is and when, and the
small helpers every presenter shares (ages, JSON values). Light imports: hooks use them too.

Stored text is untrusted, so every value in a header is cleaned to one line and clipped;
the writer (the log that holds it) is always labelled `writer=`.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from contextflow.core import jsonio
from contextflow.core.clock import stamp_ms
from contextflow.core.project import DEFAULT_PROJECT
from contextflow.core.text import clean, clip, quote
from contextflow.core.timeutil import age_ms

if TYPE_CHECKING:
    from contextflow.core.events import OrderKey

Part = str | tuple[str, object] | None
# Text shown before, by what it was made of: a listing repeats its writers, projects, sessions and tasks on
# every line, and a read asked again shows the same headers. Only strings make a key (1 == True, and their
# text differs); at most _HELD kept, then started over.
_SHOWN: dict[tuple[object, ...], str] = {}
_HELD = 8192
_LONG = 200  # characters: a longer value is cleaned each time (a note, a summary), never kept


def _keep(key: tuple[object, ...], text: str) -> str:
    if len(_SHOWN) >= _HELD:
        _SHOWN.clear()
    _SHOWN[key] = text
    return text


def one_line(value: object) -> str:
    """`clean(value, single_line=True)`, remembered for short strings."""
    if type(value) is not str or len(value) > _LONG:
        return clean(value, single_line=True)
    found = _SHOWN.get(("line", value))
    return found if found is not None else _keep(("line", value), clean(value, single_line=True))


def quoted(value: object) -> str:
    """`quote(value)`, remembered for strings up to a few lines (a note shown again)."""
    if type(value) is not str or len(value) > 5 * _LONG:
        return quote(value)
    found = _SHOWN.get(("quote", value))
    return found if found is not None else _keep(("quote", value), quote(value))


def clipped(value: object, limit: int) -> str:
    """`clip(value, limit)`, remembered for short strings."""
    if type(value) is not str or len(value) > _LONG:
        return clip(value, limit)
    found = _SHOWN.get(("clip", value, limit))
    return found if found is not None else _keep(("clip", value, limit), clip(value, limit))


def header(*parts: Part, limit: int = 120) -> str:
    """`part | name=value | ...`: (name, value) pairs are cleaned and clipped, plain strings (which
    may hold stored values, e.g. a thought's type) cleaned onto one line; None, and pairs whose value
    is None or empty, are left out."""
    key = ("header", limit, *parts)
    try:
        found = _SHOWN.get(key)  # (a key holding anything but strings is never kept, so never found)
    except TypeError:  # a value that is not hashable (a list)
        return _header(parts, limit)
    if found is not None:
        return found
    text = _header(parts, limit)
    return _keep(key, text) if all(_short(part) for part in parts) else text


def _short(part: Part) -> bool:
    if part is None:
        return True
    if type(part) is str:
        return len(part) <= _LONG
    return type(part) is tuple and (part[1] is None or (type(part[1]) is str and len(part[1]) <= _LONG))


def _header(parts: tuple[Part, ...], limit: int) -> str:
    shown: list[str] = []
    for part in parts:
        if isinstance(part, tuple):
            name, value = part
            if value is None or value == "":
                continue
            if type(value) is not str or len(value) > _LONG:
                shown.append(f"{name}={clip(value, limit)}")
                continue
            pair = _SHOWN.get(("pair", name, value, limit))
            shown.append(
                pair if pair is not None else _keep(("pair", name, value, limit), f"{name}={clip(value, limit)}")
            )
        elif part:
            shown.append(one_line(part))
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
    return age_ms(stamp_ms(key[0]), now)


def value_text(value: Any, limit: int | None) -> str:
    """A stored JSON value as text: indented in full, or compact and clipped to `limit`."""
    return dumps(value) if limit is None else clip(jsonio.dumps(value).decode(), limit)


def value_quoted(value: Any, limit: int | None) -> str:
    """`quote(value_text(value, limit))`, remembered by the value's JSON when it is clipped and short."""
    if limit is None:
        return quote(dumps(value))
    text = jsonio.dumps(value).decode()
    if len(text) > 5 * _LONG:
        return quote(clip(text, limit))
    found = _SHOWN.get(("value", text, limit))
    return found if found is not None else _keep(("value", text, limit), quote(clip(text, limit)))
