"""Argument checks shared by the core functions. Each failure says what was wrong and how to fix it."""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path
from typing import Any

from contextflow.core import jsonio, timeutil
from contextflow.core.errors import InputError, arg


def json_type(value: Any) -> str:
    """What a JSON value is, for "must be X, got Y" messages: "null", "a number (7)", "a list"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"a number ({value})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def string(value: Any, name: str) -> str | None:
    """`value` when it is a string or absent: for values no table row checked (a field of an imported
    document); an operation's own arguments come checked by the table."""
    if value is not None and not isinstance(value, str):
        raise InputError(f"{arg(name)} must be a string, got {json_type(value)}")
    return value


def trimmed(
    value: str | None, name: str, *, required: bool = False, max_chars: int | None = None, hint: str | None = None
) -> str | None:
    """A string argument, trimmed; None when absent or blank and not required. `hint` says
    what to pass when a required one is missing or empty."""
    if value is None:
        if required:
            raise InputError(f"{arg(name)} is required: {hint or 'pass it as a non-empty string'}")
        return None
    stripped = value.strip()
    if not stripped:
        if required:
            raise InputError(f"{arg(name)} is empty: {hint or 'pass a non-empty string'}")
        return None
    if max_chars is not None and len(stripped) > max_chars:
        raise InputError(
            f"{arg(name)} is {len(stripped)} characters; the limit is {max_chars}. Shorten it or split it up"
        )
    return stripped


def text(
    value: Any, name: str, *, required: bool = False, max_chars: int | None = None, hint: str | None = None
) -> str | None:
    """`trimmed` for a value no table row checked (`string`)."""
    return trimmed(string(value, name), name, required=required, max_chars=max_chars, hint=hint)


def name(value: str | None, what: str, max_chars: int = 200) -> str | None:
    """A session id or project name, trimmed: refused when it holds a line break or another control
    or format character (it would display as something else)."""
    found = trimmed(value, what, max_chars=max_chars) or ""
    for position, char in enumerate(found, 1):
        if unicodedata.category(char) in ("Cc", "Cf"):
            raise InputError(
                f"{arg(what)} contains a control character (U+{ord(char):04X} at position {position}); "
                "use letters, digits, spaces and punctuation only, e.g. 'feature-login'"
            )
    return found or None


def json_list(value: Any, name: str, max_items: int, shape: str) -> list[Any]:
    """A list argument, empty when absent; `shape` ends the message "NAME must be a list of ..."."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{arg(name)} must be a list of {shape}")
    if len(value) > max_items:
        raise InputError(f"{arg(name)} has {len(value)} items; the limit is {max_items}")
    return value


def text_list(value: list[str] | None, name: str, *, max_items: int, max_chars: int) -> list[str]:
    """A list of strings (the table checked the type), each trimmed and non-empty, within the limits given."""
    items = value or []
    if len(items) > max_items:
        raise InputError(f"{arg(name)} has {len(items)} items; the limit is {max_items}")
    out: list[str] = []
    for index, item in enumerate(items):
        if not item.strip():
            raise InputError(f"{arg(name)}[{index}] must be a non-empty string")
        if len(item.strip()) > max_chars:
            raise InputError(f"{arg(name)}[{index}] is {len(item.strip())} characters; the limit is {max_chars}")
        out.append(item.strip())
    return out


def json_object(
    value: Any, name: str, *, example: str, max_bytes: int | None = None, hint: str = "", size_hint: str = ""
) -> dict[str, Any]:
    """A JSON object no table row checked, at most `max_bytes` once encoded. `hint` follows the message
    for a value that is not an object."""
    if not isinstance(value, dict):
        raise InputError(f"{arg(name)} must be a JSON object, e.g. {example}" + (f"; {hint}" if hint else ""))
    return json_size(value, name, max_bytes=max_bytes, size_hint=size_hint)


def json_size(value: dict[str, Any], name: str, *, max_bytes: int | None = None, size_hint: str = "") -> dict[str, Any]:
    """A JSON object, at most `max_bytes` once encoded; `size_hint` follows the message for one over the limit."""
    try:
        size = len(jsonio.dumps(value))
    except TypeError as exc:
        raise InputError(
            f"{arg(name)} is not JSON-serializable ({exc}); use strings, numbers, booleans, lists, objects"
        ) from None
    if max_bytes is not None and size > max_bytes:
        limit = f"the limit is {max_bytes} ({max_bytes // 1024} KB)"
        raise InputError(f"{arg(name)} is {size} bytes as JSON; {limit}" + (f". {size_hint}" if size_hint else ""))
    return value


def iso_time(value: str | None, name: str) -> str | None:
    """An ISO-8601 time as a UTC string comparable with event timestamps (no zone means UTC)."""
    raw = trimmed(value, name)
    if raw is None:
        return None
    moment = timeutil.parse_iso(raw)
    if moment is None:
        raise InputError(f"{arg(name)}={raw!r} is not an ISO-8601 time; use e.g. 2026-01-31 or 2026-01-31T09:30:00Z")
    return timeutil.to_iso(moment)


def json_file(path: str, hint: str) -> Any:
    """The JSON in file `path` (`-` reads stdin); each error names the file and ends with `hint`."""
    try:
        raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}; {hint}") from None

    try:
        return jsonio.loads(raw)
    except jsonio.DecodeError as exc:
        raise InputError(f"{path} is not valid JSON ({exc}); {hint}") from None


TRUE_WORDS = ("1", "on", "true", "yes", "always")
FALSE_WORDS = ("", "0", "off", "false", "no", "never", "none")


def flag(value: str | None) -> bool | None:
    """A yes/no setting or attribute as written by a person: True, False, or None when it is neither."""
    word = (value or "").strip().lower()
    return True if word in TRUE_WORDS else False if word in FALSE_WORDS else None
