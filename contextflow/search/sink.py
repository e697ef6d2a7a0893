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

from contextflow.core.events import Event, OrderKey
from contextflow.search.disk import DiskIndex
from contextflow.search.docs import Doc, Put, admits, merge, put_new
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


class SearchSink:
    """Documents touched since the last commit, each with whether it may already be on disk."""

    def __init__(self, index: DiskIndex, fresh: bool = False) -> None:
        self.index = index
        # an index that was empty when this began holds only what this committed: no lookup for the rest
        self.written: set[str] | None = set() if fresh else None
        self.pending: Docs = {}
        self.origin: dict[str, tuple[str, OrderKey]] = {}  # pending entries' sequence and key on disk
        self.rewrites: dict[str, Doc] = {}  # entries on disk whose neighbours changed (`_settle`)
        self.skipped = 0

    def _lookup(self, doc_id: str) -> Doc | None:
        if self.written is not None and doc_id not in self.written:
            return None
        found = self.index.get(doc_id)
        if found is not None and found.member:
            self.origin[doc_id] = (found.group, found.put_key)
        return found

    def apply(self, event: Event) -> None:
        if not fold(self.pending, event, self._lookup):
            self.skipped += 1

    # -- sequences ---------------------------------------------------------------------------

    def _settle(self) -> None:
        """Give every entry of the touched sequences its near field (see the module's docstring)."""
        self.rewrites.clear()
        spans: dict[str, list[int]] = {}
        members: dict[str, dict[str, tuple[OrderKey, Doc]]] = {}
        for doc_id, (doc, _) in self.pending.items():
            if doc.member:
                spans.setdefault(doc.group, []).append(doc.put_key[0])
                members.setdefault(doc.group, {})[doc_id] = (doc.put_key, doc)
            else:
                doc.near, doc.near_terms = ("", ""), ("", "")
            if doc_id in self.origin:
                group, key = self.origin[doc_id]
                spans.setdefault(group, []).append(key[0])
        for group, stamps in spans.items():
            self._settle_group(group, sorted(set(stamps)), members.get(group, {}))

    def _settle_group(self, group: str, stamps: list[int], mine: dict[str, tuple[OrderKey, Doc]]) -> None:
        """One sequence: the entries on disk next to the pending ones (`DiskIndex.around`; the others in
        between only keep places) and on both sides of the span, ordered with the pending ones."""
        before = self.index.beside(group, stamps[0], after=False)
        after = self.index.beside(group, stamps[-1], after=True)
        near_ones, elsewhere = self.index.around(group, stamps)
        edges = {doc.doc_id: 0 for doc in before} | {doc.doc_id: 1 for doc in after}
        found: dict[str, tuple[OrderKey, Doc | None]] = {}
        for doc in (*before, *near_ones, *after):
            if doc.doc_id not in self.pending:
                found[doc.doc_id] = (doc.put_key, doc)
        found.update(mine)
        found.update(((f"\0{n}", ((stamp, "", 0), None)) for n, stamp in enumerate(elsewhere)))  # places only
        ordered = sorted(found.items(), key=lambda item: (item[1][0], item[0]))
        ids = [doc_id for doc_id, _ in ordered]
        owns = [None if entry is None else entry.own_terms() for _, (_, entry) in ordered]
        last = len(ordered) - 1
        for n, (doc_id, (_, entry)) in enumerate(ordered):
            if entry is None:
                continue
            current = entry.near
            sides: list[tuple[str, str | None]] = []
            for side, step, inside in ((0, -1, n > 0), (1, 1, n < last)):
                if inside and owns[n + step] is not None:
                    sides.append((ids[n + step], owns[n + step]))
                elif inside or edges.get(doc_id) == side:  # that neighbour is unchanged and not read: keep it
                    sides.append((current[side], None))
                else:
                    sides.append(("", ""))
            near = (sides[0][0], sides[1][0])
            if doc_id in self.pending:
                entry.near, entry.near_terms = near, (self._own(*sides[0]), self._own(*sides[1]))
            elif near != current or any(side in self.pending for side in near if side):  # a neighbour changed
                entry.near, entry.near_terms = near, (self._own(*sides[0]), self._own(*sides[1]))
                self.rewrites[doc_id] = entry

    def _own(self, doc_id: str, own: str | None) -> str:
        """The terms an entry lends its neighbours (read from disk when not at hand)."""
        if own is not None or not doc_id:
            return own or ""
        if doc_id in self.pending:
            return self.pending[doc_id][0].own_terms()
        found = self.index.get(doc_id)
        return found.own_terms() if found is not None else ""

    # -- committing --------------------------------------------------------------------------

    def commit(self, last: bool = True) -> None:
        """Write what is pending and commit (not `last`: a build goes on, its writer stays open)."""
        if self.pending:
            self._settle()
            self.index.write((doc, True) for doc in self.rewrites.values())
            self.index.write(self.pending.values())
            self.index.commit(last)
            if self.written is not None:
                self.written.update(self.pending)
        self._clear()

    def discard(self) -> None:
        self.index.rollback()
        self._clear()

    def _clear(self) -> None:
        self.pending.clear()
        self.rewrites.clear()
        self.origin.clear()

    def count(self) -> int:
        return self.index.count()
