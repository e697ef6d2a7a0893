"""`<private>...</private>` text, which contextflow never stores (README): the one place it is removed.

Every write goes through `strip` (`Store.append_many`, a staged batch), and the operations' checked
arguments through `strip` before a handler sees them, so a note holding only private text is refused as
empty rather than stored empty. Capture's turn records use `without_private` too.
"""

from __future__ import annotations

import re
from typing import Any

from contextflow.core import jsonio, regexes

_PRIVATE = regexes.compile(r"<private>.*?(</private>|$)", re.S | re.I)
_NEEDLE = regexes.compile(rb"<private>", re.I)  # in JSON, `<` and `>` are written as they are


def without_private(text: str) -> str:
    """The text with every `<private>...</private>` span (an unclosed one to the end) removed."""
    return _PRIVATE.sub("", text) if "<" in text and _PRIVATE.search(text) else text


def strip(value: Any) -> Any:
    """`value` with private spans removed from every string in it (keys too); unchanged objects are the
    same objects, so data holding none is not copied. Data whose JSON holds no `<private>` is returned
    at once (an import's million events pay one encode each, not a walk)."""
    if isinstance(value, dict | list):
        try:
            if not _NEEDLE.search(jsonio.dumps(value)):
                return value
        except TypeError:  # not plain JSON: walked below
            pass
    return _strip(value)


def stripped_encoded(value: dict[str, Any]) -> tuple[dict[str, Any], bytes | None]:
    """`strip(value)`, and its JSON (`jsonio.dumps`) when that is what `strip` encoded to look (it held no
    private text: the same object comes back), so a writer that encodes it next encodes it once."""
    try:
        encoded = jsonio.dumps(value)
    except TypeError:  # not plain JSON: walked
        return _strip(value), None
    if not _NEEDLE.search(encoded):
        return value, encoded
    return _strip(value), None


def _strip(value: Any) -> Any:
    if isinstance(value, str):
        return without_private(value)
    if isinstance(value, dict):
        pairs = [(_strip(key), _strip(item)) for key, item in value.items()]
        if all(k is key and v is item for (k, v), (key, item) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    if isinstance(value, list):
        items = [_strip(item) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value
