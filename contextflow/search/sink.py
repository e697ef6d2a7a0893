"""Folding events into the on-disk index: each event's index operations (the extractors) merged into
the state of the documents they touch (last writer wins, as in memory), written back on commit."""

from __future__ import annotations

from contextflow.events import Event
from contextflow.search.disk import DiskIndex
from contextflow.search.index import Doc, Put, admits, merge, put_new
from contextflow.search.view import extract


class SearchSink:
    """Documents touched since the last commit, each with whether it may already be on disk."""

    def __init__(self, index: DiskIndex, fresh: bool = False) -> None:
        self.index = index
        # an index that was empty when this began holds only what this committed: no lookup for the rest
        self.written: set[str] | None = set() if fresh else None
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
                found = self.index.get(doc_id) if self.written is None or doc_id in self.written else None
                if found is None and isinstance(op, Put):
                    self.pending[doc_id] = (put_new(doc_id, kind, op, key, writer), False)
                    continue
                entry = self.pending[doc_id] = (found, True) if found else (Doc(doc_id, kind, op.ref, -1), False)
            doc = entry[0]
            if admits(doc, op, key):
                merge(doc, op, key, writer)

    def commit(self) -> None:
        if self.pending:
            self.index.write(self.pending.values())
            self.index.commit()
            if self.written is not None:
                self.written.update(self.pending)
        self.pending.clear()
        self.pending_events = 0

    def discard(self) -> None:
        self.index.rollback()
        self.pending.clear()
        self.pending_events = 0

    def count(self) -> int:
        return self.index.count()
