"""Folding events into the on-disk index: each event's index operations (the extractors) merged into
the state of the documents they touch (last writer wins, as in memory), written back on commit.

Before a commit the sink settles the sequences it touched (`_settle`): for each session with an
entry that arrived, changed or left, it reads from disk the entries in the span of those changes and
the nearest ones on both sides, orders them with the pending ones, and gives every entry whose
neighbours changed its new near field (rewriting entries already on disk). The result is the one the
in-memory index keeps, whatever the order and the batching of the events.
"""

from __future__ import annotations

from collections.abc import Callable

from contextflow.core.events import BadLine, Event, OrderKey, decode
from contextflow.core.fields import Schema, conform
from contextflow.search.disk import DiskIndex, Row, decode_doc
from contextflow.search.docs import Doc, Put, admits, merge, put_new
from contextflow.search.view import extract

Docs = dict[str, tuple[Doc, bool]]  # doc id -> (state, whether it may already be on disk)


def fold(docs: Docs, event: Event, lookup: Callable[[str], Doc | None], touched: set[str] | None = None) -> bool:
    """Fold one event into `docs` (a document not there yet comes from `lookup`); False when skipped."""
    ops = extract(event)
    if ops is None:
        return False
    key, writer = event.key, event.writer
    for kind, op in ops:
        doc_id = f"{kind}:{op.ref}"
        if touched is not None:
            touched.add(doc_id)
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


def readable(raw: bytes, line_no: int, schema: Schema) -> Event | None:
    """One log line as the index folds it: decoded and shaped (`fields.conform`) as every view reads
    it; None for a bad line (the store counts and reports those)."""
    try:
        event = decode(raw, line_no)
    except BadLine:
        return None
    data, dropped = conform(schema, event.kind, event.data)
    return Event(event.id, event.writer, event.seq, event.hlc, event.kind, data) if dropped else event


def _doc(item: Row) -> Doc:
    doc = decode_doc(item.state)
    doc.near, doc.near_terms = item.links, item.near
    return doc


class SearchSink:
    """Documents touched since the last commit, each with whether it may already be on disk."""

    def __init__(self, index: DiskIndex, fresh: bool = False) -> None:
        self.index = index
        # an index that was empty when this began holds only what this committed: no lookup for the rest
        self.written: set[str] | None = set() if fresh else None
        self.pending: Docs = {}
        self.prepared: dict[str, Row] = {}  # from workers, not touched since
        self.origin: dict[str, tuple[str, OrderKey]] = {}  # pending entries' sequence and key on disk
        self.rewrites: dict[str, Doc] = {}  # entries on disk whose neighbours changed (`_settle`)
        self.pending_events = 0
        self.skipped = 0

    def _from_disk(self, doc_id: str) -> Doc | None:
        found = self.index.get(doc_id)
        if found is not None and found.member:
            self.origin[doc_id] = (found.group, found.put_key)
        return found

    def _lookup(self, doc_id: str) -> Doc | None:
        ready = self.prepared.pop(doc_id, None)
        if ready is not None:
            return _doc(ready)
        return self._from_disk(doc_id) if self.written is None or doc_id in self.written else None

    def apply(self, event: Event) -> None:
        if fold(self.pending, event, self._lookup):
            self.pending_events += 1
        else:
            self.skipped += 1

    # -- sequences ---------------------------------------------------------------------------

    def _settle(self, groups: set[str] | None = None) -> None:
        """Give every entry of the touched sequences its near field (see the module's docstring); with
        `groups`, only those sequences (the others' pending entries are as the last settle left them)."""
        if groups is None:
            self.rewrites.clear()
        else:
            for doc_id in [doc_id for doc_id, doc in self.rewrites.items() if doc.group in groups]:
                del self.rewrites[doc_id]
        spans: dict[str, list[int]] = {}
        members: dict[str, dict[str, tuple[OrderKey, Doc | Row]]] = {}
        for doc_id, (doc, _) in self.pending.items():
            if doc.member:
                spans.setdefault(doc.group, []).append(doc.put_key[0])
                members.setdefault(doc.group, {})[doc_id] = (doc.put_key, doc)
            else:
                doc.near, doc.near_terms = ("", ""), ("", "")
            if doc_id in self.origin:
                group, key = self.origin[doc_id]
                spans.setdefault(group, []).append(key[0])
        for doc_id, ready in self.prepared.items():
            if ready.key is not None:
                spans.setdefault(ready.group, []).append(ready.key[0])
                members.setdefault(ready.group, {})[doc_id] = (ready.key, ready)
        for group, stamps in spans.items():
            if groups is None or group in groups:
                self._settle_group(group, sorted(set(stamps)), members.get(group, {}))

    def _settle_group(self, group: str, stamps: list[int], mine: dict[str, tuple[OrderKey, Doc | Row]]) -> None:
        """One sequence: the entries on disk next to the pending ones (`DiskIndex.around`; the others in
        between only keep places) and on both sides of the span, ordered with the pending ones."""
        before = self.index.beside(group, stamps[0], after=False)
        after = self.index.beside(group, stamps[-1], after=True)
        near_ones, elsewhere = self.index.around(group, stamps)
        edges = {doc.doc_id: 0 for doc in before} | {doc.doc_id: 1 for doc in after}
        found: dict[str, tuple[OrderKey, Doc | Row | None]] = {}
        for doc in (*before, *near_ones, *after):
            if doc.doc_id not in self.pending and doc.doc_id not in self.prepared:
                found[doc.doc_id] = (doc.put_key, doc)
        found.update(mine)
        found.update(((f"\0{n}", ((stamp, "", 0), None)) for n, stamp in enumerate(elsewhere)))  # places only
        ordered = sorted(found.items(), key=lambda item: (item[1][0], item[0]))
        ids = [doc_id for doc_id, _ in ordered]
        owns = [
            None if entry is None else entry.own if isinstance(entry, Row) else entry.own_terms()
            for _, (_, entry) in ordered
        ]
        last = len(ordered) - 1
        for n, (doc_id, (_, entry)) in enumerate(ordered):
            if entry is None:
                continue
            current = entry.links if isinstance(entry, Row) else entry.near
            sides: list[tuple[str, str | None]] = []
            for side, step, inside in ((0, -1, n > 0), (1, 1, n < last)):
                if inside and owns[n + step] is not None:
                    sides.append((ids[n + step], owns[n + step]))
                elif inside or edges.get(doc_id) == side:  # that neighbour is unchanged and not read: keep it
                    sides.append((current[side], None))
                else:
                    sides.append(("", ""))
            near = (sides[0][0], sides[1][0])
            if isinstance(entry, Row):
                self.prepared[doc_id] = entry._replace(near=(self._own(*sides[0]), self._own(*sides[1])), links=near)
            elif doc_id in self.pending:
                entry.near, entry.near_terms = near, (self._own(*sides[0]), self._own(*sides[1]))
            elif near != current or any(self._touched(side) for side in near):  # a neighbour changed: rewrite it
                entry.near, entry.near_terms = near, (self._own(*sides[0]), self._own(*sides[1]))
                self.rewrites[doc_id] = entry

    def _touched(self, doc_id: str) -> bool:
        return bool(doc_id) and (doc_id in self.pending or doc_id in self.prepared)

    def _own(self, doc_id: str, own: str | None) -> str:
        """The terms an entry lends its neighbours (read from disk when not at hand)."""
        if own is not None or not doc_id:
            return own or ""
        if doc_id in self.pending:
            return self.pending[doc_id][0].own_terms()
        if doc_id in self.prepared:
            return self.prepared[doc_id].own
        found = self.index.get(doc_id)
        return found.own_terms() if found is not None else ""

    # -- committing --------------------------------------------------------------------------

    def commit(self, last: bool = True) -> None:
        """Write what is pending and commit (not `last`: a build goes on, its writer stays open)."""
        if self.pending or self.prepared:
            self._settle()
            self.index.write((doc, True) for doc in self.rewrites.values())
            self.index.write(self.pending.values())
            self.index.write_rows((ready, False) for ready in self.prepared.values())
            self.index.commit(last)
            if self.written is not None:
                self.written.update(self.pending, self.prepared)
        elif last:
            self.index.commit()
        self._clear()

    def discard(self) -> None:
        self.index.rollback()
        self._clear()

    def _clear(self) -> None:
        self.pending.clear()
        self.prepared.clear()
        self.rewrites.clear()
        self.origin.clear()
        self.pending_events = 0

    def count(self) -> int:
        return self.index.count()
