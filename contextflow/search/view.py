"""Each searchable event's index operations (`extract`) and what compaction may drop of them (`unneeded`).

Search is served by the shared index on disk (`search/derived.py`, fed by `search/sink.py`). An extractor
that fails on odd stored data skips that event (the index counts it), never the index.
"""

from __future__ import annotations

from collections.abc import Sequence

from contextflow.core.events import Event, OrderKey
from contextflow.search.docs import ZERO, Delete, Op, Patch, Put
from contextflow.search.extractors import extractors


def extract(event: Event) -> list[tuple[str, Op]] | None:
    """The event's index operations with their search kind (none for other kinds); None when its extractor fails."""
    entry = extractors().get(event.kind)
    if entry is None:
        return []
    try:
        return [(entry[0], op) for op in entry[1](event)]
    except Exception:  # stored data from any writer and version: never break the index
        return None


def unneeded(events: Sequence[Event]) -> dict[str, tuple[str, ...]]:
    """Compaction (scan.Unneeded): an event whose every index operation a later event in the same log
    supersedes can go: a Put or Patch by a later Put or Delete of the same document, a Patch also by
    later writes of all its fields, a Delete by a later Delete. Events whose extractor fails stay (they
    are counted as skipped)."""
    extracted = [(event, ops) for event in events if (ops := extract(event)) is not None]
    latest: dict[tuple[str, ...], OrderKey] = {}
    for event, ops in extracted:
        for slot in (slot for kind, op in ops for slot in _slots(kind, op)):
            latest[slot] = max(latest.get(slot, event.key), event.key)
    return {event.id: () for event, ops in extracted if all(_superseded(*item, event.key, latest) for item in ops)}


def _slots(kind: str, op: Op) -> list[tuple[str, ...]]:
    doc = f"{kind}:{op.ref}"
    if isinstance(op, Delete):
        return [("delete", doc)]
    slots: list[tuple[str, ...]] = [("field", doc, name) for name in op.fields]
    slots += [("meta", doc, name) for name in (*op.meta, "writer")]
    return [("put", doc), *slots] if isinstance(op, Put) else slots


def _superseded(kind: str, op: Op, key: OrderKey, latest: dict[tuple[str, ...], OrderKey]) -> bool:
    doc = f"{kind}:{op.ref}"
    later_delete = latest.get(("delete", doc), ZERO) > key
    if isinstance(op, Delete):
        return later_delete
    if later_delete or latest.get(("put", doc), ZERO) > key:
        return True
    return isinstance(op, Patch) and all(latest[slot] > key for slot in _slots(kind, op))
