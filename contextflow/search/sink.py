"""Folding events into the on-disk index: each event's index operations (the extractors) merged into
the state of the documents they touch (last writer wins, as in memory), written back on commit."""

from __future__ import annotations

from contextflow.events import Event
from contextflow.search.disk import DiskIndex
from contextflow.search.index import Doc, admits, merge
from contextflow.search.view import extract


class SearchSink:
    """Documents touched since the last commit, each with whether it may already be on disk."""

    def __init__(self, index: DiskIndex, fresh: bool = False) -> None:
        self.index = index
        self.fresh = fresh  # the index was empty when this began: only what it committed can be on disk
        self.committed = False
        self.pending: dict[str, tuple[Doc, bool]] = {}
        self.pending_events = 0
        self.skipped = 0

    def apply(self, event: Event) -> None:
        ops = extract(event)
        if ops is None:
            self.skipped += 1
            return
        self.pending_events += 1
        key, writer = event.key, event.writer
        for kind, op in ops:
            doc_id = f"{kind}:{op.ref}"
            entry = self.pending.get(doc_id)
            if entry is None:
                found = self.index.get(doc_id) if self.committed or not self.fresh else None
                entry = self.pending[doc_id] = (found, True) if found else (Doc(doc_id, kind, op.ref, -1), False)
            doc = entry[0]
            if admits(doc, op, key):
                merge(doc, op, key, writer)

    def commit(self) -> None:
        if self.pending:
            self.index.write(self.pending.values())
            self.index.commit()
            self.committed = True
        self.pending.clear()
        self.pending_events = 0

    def discard(self) -> None:
        self.index.rollback()
        self.pending.clear()
        self.pending_events = 0

    def count(self) -> int:
        return self.index.count()
