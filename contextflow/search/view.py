"""The search view: every searchable event folded into one incremental `SearchIndex`.

Pure: an event's extractor turns it into index operations, applied with the event's order
key, so the index is the same whatever order events arrive in and is never rebuilt per query.
An extractor that fails on odd stored data skips that event (counted), never the fold.
"""

from __future__ import annotations

from collections.abc import Sequence

from contextflow.events import Event, OrderKey
from contextflow.search.extractors import EXTRACTORS
from contextflow.search.index import ZERO, Delete, Op, Patch, Put, SearchIndex
from contextflow.search.tokens import STEMMER

VIEW_NAME = "search"


class SearchView:
    name = VIEW_NAME
    version = STEMMER  # a stemmer upgrade changes every term: the snapshot's index must not be reused

    def initial(self) -> SearchIndex:
        return SearchIndex()

    def unneeded(self, events: Sequence[Event]) -> dict[str, tuple[str, ...]]:
        """Compaction (fold.Compactable): an event whose every index operation a later event in
        the same log supersedes can go: a Put or Patch by a later Put or Delete of the same
        document, a Patch also by later writes of all its fields, a Delete by a later Delete.
        Events whose extractor fails stay (they are counted as skipped)."""
        found: dict[str, tuple[str, ...]] = {}
        extracted: list[tuple[Event, list[tuple[str, Op]]]] = []
        for event in events:
            entry = EXTRACTORS.get(event.kind)
            if entry is None:
                found[event.id] = ()
                continue
            try:
                made = entry[1](event)
            except Exception:  # same rule as apply: odd stored data is skipped, and so kept here
                continue
            extracted.append((event, [(entry[0], op) for op in made]))
        latest: dict[tuple[str, ...], OrderKey] = {}
        for event, ops in extracted:
            for slot in (slot for kind, op in ops for slot in _slots(kind, op)):
                latest[slot] = max(latest.get(slot, event.key), event.key)
        for event, ops in extracted:
            if all(_superseded(kind, op, event.key, latest) for kind, op in ops):
                found[event.id] = ()
        return found

    def apply(self, state: SearchIndex, event: Event) -> None:
        entry = EXTRACTORS.get(event.kind)
        if entry is None:
            return
        kind, extract = entry
        try:
            ops = extract(event)
        except Exception:  # stored data from any writer and version: never break the fold
            state.skipped_events += 1
            return
        key = event.key
        for op in ops:
            state.apply(kind, op, key, event.writer)


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
