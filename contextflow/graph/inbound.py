"""Graph values that reach the core without passing the operations table: a transcript's `<ctx:...>`
attributes (graph/directives.py) and an export file being imported (graph/transfer.py).

Each check here is what a table row checks for its callers (a type, the closed list, a range, a
count), worded as the core worded it before, so a bad directive or imported item is refused with
the same message; what no schema says (tag form, content, metadata keys) stays in graph/model.py.
"""

from __future__ import annotations

from typing import Any

from contextflow.core import checks
from contextflow.core.errors import InputError
from contextflow.graph.fields import DEFAULT_VIEW_BUDGET, MAX_BUDGET, MAX_TAGS, NODE_TYPES


def node_type(value: object) -> str:
    if not isinstance(value, str) or value not in NODE_TYPES:
        raise InputError(f"node type must be one of {', '.join(NODE_TYPES)}; got {value!r}")
    return value


def tags(values: object) -> list[str]:
    """A list of tags (the table's `maxItems` and item type); their form is `model.tags`' to check."""
    if values is None:
        return []
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        raise InputError('tags must be a list of namespace:value strings, e.g. ["project:x", "tier:working"]')
    if len(values) > MAX_TAGS:
        raise InputError(f"{len(values)} tags given; the limit is {MAX_TAGS}")
    return values


def metadata(value: object) -> dict[str, Any] | None:
    if value is None:
        return None
    return checks.json_object(value, "metadata", example='{"confidence": "high"}')


def budget(value: object, default: int = DEFAULT_VIEW_BUDGET) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_BUDGET:
        raise InputError(f"budget must be a whole number of tokens from 1 to {MAX_BUDGET}; got {value!r}")
    return value


def text(value: object, name: str) -> str | None:
    """A string or nothing (`checks.string`)."""
    return checks.string(value, name)
