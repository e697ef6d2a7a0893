"""Reading JSON: one `loads` that accepts and refuses the same texts whichever library parses them.

orjson parses fastest, but importing it pulls in `dataclasses`, `inspect`, `uuid` and `platform`: about
7 ms, a tenth of a hook's whole run, for the few rows a hook decodes. So a process parses with the
standard library's `json` until orjson is loaded (a server, a write, a catch-up of many bytes: `fast()`),
then with orjson. Both follow orjson's rules (tests/test_jsonio.py holds them equal): UTF-8 only (no
byte order mark, no encoded or escaped lone surrogate), no NaN or Infinity, a number too large for a
double refused, an integer beyond 64 bits read as a float, nesting past the reader's limit refused.
A refused text raises `DecodeError` (orjson's own error is one). Writing (`dumps`) is orjson's once it
is loaded; before that, a value made only of dicts with string keys, lists, strings, 64-bit integers,
booleans and None is written by `json` in orjson's exact bytes (a hook's few writes), and anything else
loads orjson. No other module imports orjson (tests/test_jsonio.py).
"""

from __future__ import annotations

import json
import math
import re
import sys
from functools import cache
from typing import Any

from contextflow.core import regexes

DecodeError = json.JSONDecodeError  # (orjson.JSONDecodeError is a subclass)

BULK_BYTES = 256 << 10  # the stdlib parses events 17 ms/MB slower; orjson's import costs 7 ms
_MIN_INT, _MAX_INT = -(2**63), 2**64 - 1
_SURROGATE = "[\ud800-\udfff]"
_BOM = b"\xef\xbb\xbf"
_MAX_DEPTH = 254  # containers orjson writes nested in one another


def fast(size: int | None = None) -> None:
    """Parse with orjson from now on in this process: a server, or a read about to parse `size` bytes
    when that is more than BULK_BYTES (its import then pays for itself)."""
    if size is None or size > BULK_BYTES:
        import orjson  # noqa: F401  (loaded: `loads` finds it)


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """The value `data` holds, or DecodeError when it is not JSON by the rules above."""
    orjson = sys.modules.get("orjson")
    if orjson is not None:
        return orjson.loads(data)
    text = _text(data)
    try:
        value = _DECODER.decode(text)
    except RecursionError:
        raise DecodeError("recursion limit: arrays and objects nested too deeply", text, 0) from None
    except ValueError as exc:  # (a refused number; json's own errors are DecodeErrors already)
        if isinstance(exc, DecodeError):
            raise
        raise DecodeError(str(exc), text, 0) from None
    if "\\u" in text and _has_surrogate(value):
        raise DecodeError("a lone surrogate escape in a string", text, 0)
    return value


def dumps(value: Any, *, indent: bool = False, sort_keys: bool = False, any_keys: bool = False) -> bytes:
    """`value` as UTF-8 JSON, compact unless `indent`; `any_keys`: dict keys that are not strings written
    as strings. TypeError (orjson.JSONEncodeError is one) when `value` is not plain JSON."""
    if "orjson" not in sys.modules and not any_keys and _plain(value, 0):
        return _written(value, indent, sort_keys)
    import orjson

    if not (indent or sort_keys or any_keys):
        return orjson.dumps(value)  # (an import's every event: nothing more to ask)
    option = orjson.OPT_INDENT_2 if indent else 0
    option |= (orjson.OPT_SORT_KEYS if sort_keys else 0) | (orjson.OPT_NON_STR_KEYS if any_keys else 0)
    return orjson.dumps(value, option=option)


def _written(value: Any, indent: bool, sort_keys: bool) -> bytes:
    """A plain value (`_plain`) as orjson writes it, by `json`."""
    if indent:
        return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=sort_keys).encode()
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys).encode()


def _plain(value: Any, depth: int) -> bool:
    """Whether `value` is one `json` writes byte for byte as orjson does (exact types: no float, whose
    digits the two spell differently, no subclass, no lone surrogate, within orjson's nesting limit)."""
    kind = type(value)
    if kind is str:
        return not _has_surrogate(value)
    if kind is int:
        return bool(_MIN_INT <= value <= _MAX_INT)
    if value is None or kind is bool:
        return True
    if depth >= _MAX_DEPTH:
        return False
    if kind is dict:
        return all(type(key) is str and _plain(key, depth) and _plain(item, depth + 1) for key, item in value.items())
    if kind is list:
        return all(_plain(item, depth + 1) for item in value)
    return False


def _text(data: bytes | bytearray | memoryview | str) -> str:
    if isinstance(data, str):
        if data.startswith("\ufeff") or _has_surrogate(data):
            raise DecodeError("not UTF-8 text (a byte order mark or a lone surrogate)", data, 0)
        return data
    raw = bytes(data)
    if raw.startswith(_BOM):
        raise DecodeError("a UTF-8 byte order mark is not JSON", "", 0)
    try:
        return raw.decode("utf-8")  # (strict: json's own decoding would let encoded surrogates through)
    except UnicodeDecodeError as exc:
        raise DecodeError(f"not valid UTF-8 at byte {exc.start}", "", exc.start) from None


def _int(digits: str) -> int | float:
    value = int(digits)
    return value if _MIN_INT <= value <= _MAX_INT else float(digits)


def _float(digits: str) -> float:
    value = float(digits)
    if math.isinf(value):
        raise ValueError(f"number is infinity when parsed as double: {digits[:40]}")
    return value


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


@cache
def _surrogates() -> re.Pattern[str]:
    """Compiled on first use: ASCII text (most of it) holds no surrogate and never needs it."""
    return regexes.compile(_SURROGATE)


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return not value.isascii() and _surrogates().search(value) is not None
    if isinstance(value, list):
        return any(_has_surrogate(item) for item in value)
    if isinstance(value, dict):
        return any(_has_surrogate(key) or _has_surrogate(item) for key, item in value.items())
    return False


_DECODER = json.JSONDecoder(parse_int=_int, parse_float=_float, parse_constant=_constant)
