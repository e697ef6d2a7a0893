"""`<private>...</private>` text, which contextflow never stores (README): the one place it is removed.

Every write goes through `strip_items` (`Store.append_many`, a staged batch), and the operations' checked
arguments through `strip` before a handler sees them, so a note holding only private text is refused as
empty rather than stored empty. Capture's turn records use `without_private` too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

_PRIVATE = re.compile(r"<private>.*?(</private>|$)", re.S | re.I)


def without_private(text: str) -> str:
    """The text with every `<private>...</private>` span (an unclosed one to the end) removed."""
    return _PRIVATE.sub("", text) if "<" in text and _PRIVATE.search(text) else text


def strip(value: Any) -> Any:
    """`value` with private spans removed from every string in it (keys too); unchanged objects are the
    same objects, so data holding none is not copied."""
    if isinstance(value, str):
        return without_private(value)
    if isinstance(value, dict):
        pairs = [(strip(key), strip(item)) for key, item in value.items()]
        if all(k is key and v is item for (k, v), (key, item) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    if isinstance(value, list):
        items = [strip(item) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def strip_items(items: Sequence[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """Events (kind, data) as they may be stored: no private text in any string."""
    return [(kind, strip(data)) for kind, data in items]
