"""The tail: events the logs hold beyond what the search index has committed, ranked beside it.

A tantivy commit costs milliseconds to tens of milliseconds (more as the index grows), so a search does
not commit what was appended since the last commit while it stays small (`derived.TAIL_EVENTS`,
`derived.TAIL_BYTES`): `derived.py` folds those events into a sink over the index without writing
(`SearchSink.uncommitted`: the documents a commit would write, neighbours settled), and `TailedIndex`
ranks them with the index. Its pool leaves their ids out of the index's (so an updated or deleted
document never shows its committed state), and scores each here by tantivy's BM25 with tantivy's
statistics (document count, document frequencies, average field lengths: a sum of the `blen`/`nlen`
fast fields once a commit) plus the tail's new documents, its own lengths rounded to tantivy's one-byte
norms: a document scores as tantivy scores it once committed. The index's pool keeps the statistics
without the tail until the commit, which moves them as every commit does (`tests/test_search_tail.py`).
"""

from __future__ import annotations

import bisect
import heapq
from collections import Counter
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import NamedTuple

from contextflow.core import jsonio
from contextflow.core.fields import Schema
from contextflow.core.fsutil import signature
from contextflow.core.log import Position, read_new
from contextflow.search import ranking
from contextflow.search.disk import DiskIndex, Row, decode_doc, near_text, qualified
from contextflow.search.docs import Doc, Hit
from contextflow.search.ranking import K1, B, Candidate
from contextflow.search.sink import SearchSink, readable


def _norms() -> list[int]:
    """tantivy's field-length table (`fieldnorm/code.rs`): exact to 23, then 8 steps per power of two."""
    table = []
    for code in range(256):
        if code < 24:
            table.append(code)
        else:
            part = code - 24
            bits, shift = part & 7, part >> 3
            table.append(24 + (bits if shift == 0 else (bits | 8) << (shift - 1)))
    return table


NORMS = _norms()


def norm(length: int) -> int:
    """A field length as tantivy stores it (one byte: the largest table value not above it)."""
    return NORMS[bisect.bisect_right(NORMS, length) - 1]


class Pending(NamedTuple):
    """One document of the tail: its row (what a commit would write) and what scoring reads."""

    row: Row
    body: Counter[str]
    near: Counter[str]
    body_norm: int
    near_norm: int
    body_length: int
    near_length: int

    @classmethod
    def of(cls, item: Row, scale: int) -> Pending:
        body, near = item.body.split(), near_text(item, scale).split()
        return cls(item, Counter(body), Counter(near), norm(len(body)), norm(len(near)), len(body), len(near))

    def doc(self) -> Doc:
        """The document as the index would return it (`DiskIndex._load`)."""
        links = jsonio.dumps(list(self.row.links)) if self.row.key is not None else None
        return decode_doc(self.row.state, links, self.row.timely)


class TailedIndex:
    """The committed index and its tail as one `ranking.Searchable`."""

    def __init__(self, disk: DiskIndex, rows: list[tuple[Row, bool]], before: TailedIndex | None = None) -> None:
        self.disk = disk
        earlier: dict[str, Pending] = before.pending if before is not None else {}
        self.pending: dict[str, Pending] = {
            item.doc_id: entry if (entry := earlier.get(item.doc_id)) is not None and entry.row is item
            else Pending.of(item, disk.scale)
            for item, _ in rows
        }  # fmt: skip
        self.fresh = {item.doc_id for item, known in rows if not known}  # documents not on disk yet
        self.new = len(self.fresh)
        fresh = [self.pending[doc_id] for doc_id in self.fresh]
        self.lengths = (sum(entry.body_length for entry in fresh), sum(entry.near_length for entry in fresh))
        self._terms: dict[str, tuple[list[Pending], int, int]] = {}

    def holding(self, term: str) -> tuple[list[Pending], int, int]:
        """The tail's documents holding `term` (body or near), and how many new ones hold it in each."""
        found = self._terms.get(term)
        if found is None:
            holders = [entry for entry in self.pending.values() if term in entry.body or term in entry.near]
            new = [entry for entry in holders if entry.row.doc_id in self.fresh]
            found = self._terms[term] = (holders, sum(term in e.body for e in new), sum(term in e.near for e in new))
        return found

    def __len__(self) -> int:
        return len(self.pending)

    def _stats(self) -> tuple[int, float, float]:
        """Documents and average body and near lengths as tantivy counts them, plus the new documents:
        a document new in the tail counts as it will once committed; one that replaces a document on
        disk as the one it replaces (so a record updated with the same words scores as before).
        Live documents: exact while no deleted document awaits a merge."""
        body, near = self.disk.totals()
        docs = max(1, self.disk.count() + self.new)
        return docs, (body + self.lengths[0]) / docs, (near + self.lengths[1]) / docs

    def pool(
        self,
        terms: list[str],
        size: int,
        kinds: Collection[str],
        project: str | None,
        near: bool,
        speakers: Sequence[str] = (),
        spans: Sequence[tuple[int, int]] = (),
        scope: Collection[str] | None = None,
    ) -> list[Candidate]:
        """The `size` best raw scores of the index (without the tail's ids) and the tail together."""
        found = self.disk.pool(terms, size, kinds, project, near, speakers, spans, scope, self.pending.keys())
        seen = None if scope is None else set(ranking.scoped(scope))
        found += self._scored(terms, size, kinds, project, near, speakers, spans, seen)
        return heapq.nlargest(size, found, key=lambda c: (c.raw, c.tie))

    def _scored(
        self,
        terms: list[str],
        size: int,
        kinds: Collection[str],
        project: str | None,
        near: bool,
        speakers: Sequence[str],
        spans: Sequence[tuple[int, int]],
        seen: set[str] | None,
    ) -> list[Candidate]:
        """The tail's documents within the filters, scored as tantivy scores the index's query."""
        docs, body_avg, near_avg = self._stats()
        counted = max(1, self.count(seen)) if seen is not None else docs
        searcher = self.disk.searcher
        fields = [("body", 1.0, body_avg, 1)] + ([("near", ranking.NEAR_WEIGHT, near_avg, 2)] if near else [])
        weights: dict[tuple[str, str], float] = {}
        holders: dict[str, Pending] = {}
        for term in set(terms):
            entries, body_new, near_new = self.holding(term)
            for entry in entries:
                holders[entry.row.doc_id] = entry
            if seen is not None:  # a reader limited to some projects: their documents' statistics only
                new = [e for e in entries if e.row.doc_id in self.fresh and e.row.project in seen]
                body_new, near_new = sum(term in e.body for e in new), sum(term in e.near for e in new)
            for name, boost, _, at in fields:
                if seen is None:
                    df = int(searcher.doc_freq(name, term))
                else:
                    df = sum(int(searcher.doc_freq("p" + name, qualified(p, term))) for p in seen)
                df = df + (body_new if at == 1 else near_new) if entries else 0
                weights[(name, term)] = boost * ranking.idf(df, docs if seen is None else counted) * (K1 + 1.0)
        named = set(speakers)
        hashed = ranking.stable_hash
        found = []
        for doc_id, entry in holders.items():
            item = entry.row
            if (kinds and item.kind not in kinds) or (project is not None and item.project not in (project, "")):
                continue
            if (named and not named.intersection(item.agent)) or (seen is not None and item.project not in seen):
                continue
            if spans and not any(low <= item.at < high for low, high in spans):
                continue
            score, matched = 0.0, False
            for name, _, average, _ in fields:
                counts, length = (entry.body, entry.body_norm) if name == "body" else (entry.near, entry.near_norm)
                for term in terms:
                    tf = counts.get(term)
                    if tf:
                        matched = True
                        score += weights[(name, term)] * tf / (tf + K1 * (1.0 - B + B * length / average))
            if matched:
                found.append(Candidate(
                    score, hashed(doc_id), item.at, item.latest, item.expires, hashed(item.group) if item.group else 0,
                    item.speaker, bool(item.timely), entry,
                ))  # fmt: skip
        return heapq.nlargest(size, found, key=lambda c: (c.raw, c.tie))

    def hits(self, ranked: list[tuple[float, Candidate]]) -> list[Hit]:
        return [
            Hit(c.handle.doc(), score) if isinstance(c.handle, Pending) else self.disk.hits([(score, c)])[0]
            for score, c in ranked
        ]

    def _within(self, scope: Collection[str] | None) -> list[Pending]:
        """The tail's documents within `scope`'s projects (all of them for None)."""
        seen = None if scope is None else set(ranking.scoped(scope))
        return [entry for entry in self.pending.values() if seen is None or entry.row.project in seen]

    def knows_speaker(self, word: str, scope: Collection[str] | None = None) -> bool:
        return any(word in entry.row.agent for entry in self._within(scope)) or self.disk.knows_speaker(word, scope)

    def near_holds(self, asked: set[str], hits: list[Hit]) -> list[set[str]]:
        mine = [hit.doc.doc_id in self.pending for hit in hits]
        committed = iter(self.disk.near_holds(asked, [hit for hit, here in zip(hits, mine, strict=True) if not here]))
        return [
            asked.intersection(self.pending[hit.doc.doc_id].near) if here else next(committed)
            for hit, here in zip(hits, mine, strict=True)
        ]

    def frequency(self, term: str, scope: Collection[str] | None = None) -> int:
        if scope is not None:
            new = [entry for entry in self._within(scope) if entry.row.doc_id in self.fresh]
            return self.disk.frequency(term, scope) + sum(term in entry.body for entry in new)
        searcher, (_, body, near) = self.disk.searcher, self.holding(term)
        return int(searcher.doc_freq("body", term)) + body or min(1, int(searcher.doc_freq("near", term)) + near)

    def count(self, scope: Collection[str] | None = None) -> int:
        if scope is None:
            return self.disk.count() + self.new
        return self.disk.count(scope) + sum(entry.row.doc_id in self.fresh for entry in self._within(scope))


class Follower:
    """The tail as this process follows it: a sink over the index (never committed here) and how far it
    read each log; made again whenever the index commits (`derived.py`)."""

    def __init__(self, key: object, sink: SearchSink) -> None:
        self.key = key
        self.sink = sink
        self.read: dict[str, Position] = {}
        self.kept: dict[str, Row] = {}
        self.view: TailedIndex | None = None

    def follow(
        self, logs: list[tuple[Path, Position | None]], schema: Schema, events: int, size: int
    ) -> TailedIndex | None:
        """The index with the logs' lines past the committed read positions; None when the tail is over `events`
        events or `size` bytes, or a log no longer continues (the caller commits instead). Bad lines are
        skipped, as a commit skips them (the store counts and reports them)."""
        changed = False
        for path, committed in logs:
            position = self.read.get(str(path), committed)
            if position is not None and signature(path) == (
                position.dev,
                position.ino,
                position.size,
                position.mtime_ns,
            ):
                continue
            start = position.offset if position is not None else 0
            chunk = read_new(path, position, size)
            if chunk.reset or chunk.position.offset - start >= size:
                return None
            for line_no, raw in chunk.lines:
                event = readable(raw, line_no, schema)
                if event is not None:
                    self.sink.apply(event)
            self.read[str(path)] = chunk.position
            changed = True
        if self.sink.pending_events > events:
            return None
        if changed or self.view is None:
            rows = self.sink.uncommitted(self.kept)
            self.kept = {item.doc_id: item for item, _ in rows}
            self.view = TailedIndex(self.sink.index, rows, self.view)
        return self.view
