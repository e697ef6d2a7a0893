"""Folding events into the on-disk index: each event's index operations (the extractors) merged into
the state of the documents they touch (last writer wins, as in memory), written back on commit.

A large build folds chunks of lines in worker processes (`fold_chunk`): each returns the states of
the documents its chunk touched, and the sink joins the states of a document touched by several
chunks (`index.join`), so the result is the state of all the events whatever the split.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

from contextflow.core.events import BadLine, Event, decode
from contextflow.search.disk import DiskIndex, Prepared, decode_doc, prepare
from contextflow.search.index import Doc, Put, admits, join, merge, put_new
from contextflow.search.view import extract

Docs = dict[str, tuple[Doc, bool]]  # doc id -> (state, whether it may already be on disk)


def fold(docs: Docs, event: Event, lookup: Callable[[str], Doc | None]) -> bool:
    """Fold one event into `docs` (a document not there yet comes from `lookup`); False when skipped."""
    ops = extract(event)
    if ops is None:
        return False
    key, writer = event.key, event.writer
    for kind, op in ops:
        doc_id = f"{kind}:{op.ref}"
        entry = docs.get(doc_id)
        if entry is None:
            found = lookup(doc_id)
            if found is None and isinstance(op, Put):
                docs[doc_id] = (put_new(doc_id, kind, op, key, writer), False)
                continue
            entry = docs[doc_id] = (found, True) if found else (Doc(doc_id, kind, op.ref, -1), False)
        doc = entry[0]
        if admits(doc, op, key):
            merge(doc, op, key, writer)
    return True


def fold_chunk(lines: list[tuple[int, bytes]]) -> tuple[list[Prepared], int]:
    """A worker's share of a build: one chunk's lines as prepared documents, and how many events it folded."""
    gc.disable()  # a short-lived worker: its objects are freed by reference counting
    docs: Docs = {}
    folded = 0
    for line_no, raw in lines:
        try:
            event = decode(raw, line_no)
        except BadLine:
            continue
        folded += fold(docs, event, lambda _: None)
    return [prepare(doc) for doc, _ in docs.values()], folded


class SearchSink:
    """Documents touched since the last commit, each with whether it may already be on disk."""

    def __init__(self, index: DiskIndex, fresh: bool = False) -> None:
        self.index = index
        # an index that was empty when this began holds only what this committed: no lookup for the rest
        self.written: set[str] | None = set() if fresh else None
        self.pending: Docs = {}
        self.prepared: dict[str, Prepared] = {}  # from workers, not touched since
        self.pending_events = 0
        self.skipped = 0

    def _lookup(self, doc_id: str) -> Doc | None:
        ready = self.prepared.pop(doc_id, None)
        if ready is not None:
            return decode_doc(ready.state)
        return self.index.get(doc_id) if self.written is None or doc_id in self.written else None

    def apply(self, event: Event) -> None:
        if fold(self.pending, event, self._lookup):
            self.pending_events += 1
        else:
            self.skipped += 1

    def absorb(self, chunk: tuple[list[Prepared], int]) -> None:
        """A worker's chunk: new documents as they are, others joined with what is pending or on disk."""
        prepared, folded = chunk
        for ready in prepared:
            entry = self.pending.get(ready.doc_id)
            if entry is None and ready.doc_id not in self.prepared:
                if self.written is not None and ready.doc_id not in self.written:
                    self.prepared[ready.doc_id] = ready
                    continue
                found = self.index.get(ready.doc_id)
                if found is None:
                    self.prepared[ready.doc_id] = ready
                    continue
                entry = self.pending[ready.doc_id] = (found, True)
            elif entry is None:
                entry = self.pending[ready.doc_id] = (decode_doc(self.prepared.pop(ready.doc_id).state), False)
            join(entry[0], decode_doc(ready.state))
        self.pending_events += folded

    def commit(self, last: bool = True) -> None:
        if self.pending or self.prepared:
            self.index.write(self.pending.values())
            self.index.write_prepared(self.prepared.values())
            self.index.commit(last)
        elif last:
            self.index.commit()
            if self.written is not None:
                self.written.update(self.pending, self.prepared)
        self.pending.clear()
        self.prepared.clear()
        self.pending_events = 0

    def discard(self) -> None:
        self.index.rollback()
        self.pending.clear()
        self.prepared.clear()
        self.pending_events = 0

    def count(self) -> int:
        return self.index.count()
