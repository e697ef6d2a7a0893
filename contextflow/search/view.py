"""The search view: every searchable event folded into one incremental `SearchIndex`.

Pure: an event's extractor turns it into index operations, applied with the event's order
key, so the index is the same whatever order events arrive in and is never rebuilt per query.
An extractor that fails on odd stored data skips that event (counted), never the fold.
"""

from __future__ import annotations

from contextflow.events import Event
from contextflow.search.extractors import EXTRACTORS
from contextflow.search.index import SearchIndex

VIEW_NAME = "search"


class SearchView:
    name = VIEW_NAME

    def initial(self) -> SearchIndex:
        return SearchIndex()

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
