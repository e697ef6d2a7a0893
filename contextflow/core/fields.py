"""Field shapes: every field of every event kind is checked as its line is read.

A synced line is untrusted input: a note whose `tags` is a number must not reach a renderer that
iterates it. Each feature declares the shape of every field of its kinds (`<feature>/fields.py`,
named in its `Feature`, `contextflow.features`); the store conforms each event it reads (`conform`): a field without
its shape is left out, a list keeps only its items that have theirs, and every such repair is
counted per log and reported (`doctor`, the info resource). A pure function of the line, so every
machine folds the same data. `null` passes as "absent"; fields and kinds no shape names pass
whole (a newer version may write them).

Shapes: STR, BOOL, INT (not a boolean), OBJECT (any JSON object), ANY, `listof(shape)` and
`record({name: shape})` (an object whose named fields are checked, the rest kept).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

STR, BOOL, INT, OBJECT, ANY = "str", "bool", "int", "object", "any"
Shape = str | tuple[str, Any]  # a name above, or (form, inner shape) from `listof` / `record`
Schema = Mapping[str, Mapping[str, Shape]]  # kind -> field -> shape

_MISSING = object()
_TYPES: dict[str, type | tuple[type, ...]] = {STR: str, BOOL: bool, INT: int, OBJECT: dict}
# fields every kind may carry: the project, the writing agent, what secrets scanning redacted
_PLAIN = frozenset((STR, BOOL, OBJECT))  # shapes an `isinstance` alone checks (not INT: a bool is no int)
COMMON: dict[str, Shape] = {"project": STR, "agent": STR, "redacted": ("list", STR)}


def listof(shape: Shape) -> Shape:
    return ("list", shape)


def record(fields: Mapping[str, Shape]) -> Shape:
    return ("record", fields)


STRS = listof(STR)


def _fits(value: Any, shape: Shape, where: str, dropped: list[str]) -> Any:
    """`value` conformed to `shape` (a copy only when something was left out), or _MISSING."""
    if value is None or shape == ANY:
        return value
    if isinstance(shape, str):
        wanted = _TYPES[shape]
        ok = isinstance(value, wanted) and not (shape == INT and isinstance(value, bool))
        if not ok:
            dropped.append(where)
        return value if ok else _MISSING
    form, inner = shape
    if form == "list":
        if not isinstance(value, list):
            dropped.append(where)
            return _MISSING
        plain = _TYPES[inner] if isinstance(inner, str) and inner in _PLAIN else None
        if plain is not None and all(item is None or isinstance(item, plain) for item in value):
            return value  # (the common case: every item fits, nothing to copy)
        items = [_fits(item, inner, where + "[]", dropped) for item in value]
        kept = [item for item in items if item is not _MISSING]
        return value if len(kept) == len(value) and all(a is b for a, b in zip(kept, value, strict=True)) else kept
    if not isinstance(value, dict):  # a record
        dropped.append(where)
        return _MISSING
    return _fields(value, inner, where + ".", dropped)


def _fields(data: dict[str, Any], shapes: Mapping[str, Shape], prefix: str, dropped: list[str]) -> dict[str, Any]:
    out: dict[str, Any] | None = None
    for name, value in data.items():
        shape = shapes.get(name)
        if shape is None or value is None:
            continue
        if isinstance(shape, str) and shape in _PLAIN and isinstance(value, _TYPES[shape]):  # (no call: most fields)
            continue
        fitted = _fits(value, shape, prefix + name, dropped)
        if fitted is not value:
            if out is None:
                out = dict(data)
            if fitted is _MISSING:
                del out[name]
            else:
                out[name] = fitted
    return data if out is None else out


def conform(schema: Schema, kind: str, data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`data` with every field of `kind` that lacks its shape left out, and where each was
    (`kind.field`, `kind.field[]` for a list item); `data` itself when nothing was."""
    shapes = schema.get(kind)
    if shapes is None:
        return data, []
    dropped: list[str] = []
    return _fields(data, shapes, kind + ".", dropped), dropped


def merged(*tables: Mapping[str, Mapping[str, Shape]]) -> dict[str, dict[str, Shape]]:
    """One schema from the features' tables, with the COMMON fields in every kind."""
    out: dict[str, dict[str, Shape]] = {}
    for table in tables:
        for kind, fields in table.items():
            out.setdefault(kind, dict(COMMON)).update(fields)
    return out
