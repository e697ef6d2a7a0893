"""The search view folded in memory: the oracle the shared on-disk index (`search/derived.py`) is tested
against, never used at run time (every search reads the index on disk).

`SearchIndex` is an incremental BM25 index over searchable documents (`search/docs.py`), updated one
operation at a time. Each document's body terms are weighted by its fields (BM25F: a field's words
repeated `repeats` times) and its neighbour field (`near`, the terms of the entries before and after it
in its session) is a second field with its own lengths, scored at `ranking.NEAR_WEIGHT`. The index keeps
each session's sequence, so when an entry arrives, changes or goes, the neighbours on both sides get
their near field again: the result depends only on the set of events, never on their order.
"""

from __future__ import annotations

import bisect
import heapq
from array import array
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextflow.app import App
from contextflow.core.events import Event, OrderKey
from contextflow.core.store import Store
from contextflow.search import ranking
from contextflow.search.docs import (
    Doc,
    Hit,
    Op,
    admits,
    merge,
    weighted_terms,
)
from contextflow.search.ranking import K1, B
from contextflow.search.view import extract
from tests.folding import view_of

MIN_COMPACT_PAIRS = 100_000
NEAR = "~"  # near-field terms share the postings under this prefix (index terms never start with it)


@dataclass(eq=False)
class SearchIndex:
    """Postings are compact arrays of (document number, weighted tf) pairs, body terms and near terms
    (prefixed `NEAR`) alike. A changed document gets a new number and its old one is retired (length 0):
    queries skip retired numbers, and `_compact` drops them once they outnumber the live pairs. `df`
    counts live documents. `sequences` holds each session's entries in order (`Doc.member`)."""

    docs: dict[str, Doc] = field(default_factory=dict)
    by_num: list[Doc | None] = field(default_factory=list)
    lengths: array[int] = field(default_factory=lambda: array("I"))
    near_lengths: array[int] = field(default_factory=lambda: array("I"))
    postings: dict[str, array[int]] = field(default_factory=dict)
    df: dict[str, int] = field(default_factory=dict)
    sequences: dict[str, list[tuple[OrderKey, str]]] = field(default_factory=dict)
    speakers: dict[str, int] = field(default_factory=dict)  # agent terms of visible documents: how many
    scale: int = field(default_factory=ranking.weight_scale)
    visible_count: int = 0
    total_length: int = 0
    near_total: int = 0
    live_pairs: int = 0
    dead_pairs: int = 0
    skipped_events: int = 0

    def __eq__(self, other: object) -> bool:
        """Equal when the logical content is: the same documents and postings, however numbered."""
        if not isinstance(other, SearchIndex):
            return NotImplemented
        return self._canonical() == other._canonical()

    def _canonical(self) -> tuple[Any, ...]:
        postings = {term: self.posting(term) for term in self.postings}
        return (
            self.docs,
            postings,
            self.df,
            self.visible_count,
            self.total_length,
            self.near_total,
            self.sequences,
            self.speakers,
            self.skipped_events,
        )

    def posting(self, term: str) -> dict[str, int]:
        """The live postings of a term by document id (for tests and comparisons, not queries)."""
        pairs = self.postings.get(term, array("I"))
        return {
            doc.doc_id: weight
            for num, weight in zip(pairs[::2], pairs[1::2], strict=True)
            if self.lengths[num] and (doc := self.by_num[num]) is not None
        }

    def length(self, doc: Doc) -> int:
        return self.lengths[doc.num] if doc.num >= 0 else 0

    # -- updating --------------------------------------------------------------------------

    def apply(self, kind: str, op: Op, key: OrderKey, writer: str) -> None:
        """Fold one operation. Only operations at or after the document's floor (its latest put
        or delete) count, and fields are last-writer-wins, so arrival order never matters."""
        doc_id = f"{kind}:{op.ref}"
        doc = self.docs.get(doc_id)
        if doc is None:
            doc = self.docs[doc_id] = Doc(doc_id, kind, op.ref, -1)
        if not admits(doc, op, key):
            return  # superseded; visibility (put_key > delete_key) cannot have changed
        before = (doc.group, doc.put_key, doc.own_terms()) if doc.member else None
        self._retire(doc)
        merge(doc, op, key, writer)
        after = (doc.group, doc.put_key, doc.own_terms()) if doc.member else None
        touched: list[str] = []
        if before != after:
            if before is not None:
                touched += self._leave(before[0], (before[1], doc_id))
            if after is not None:
                touched += self._enter(after[0], (after[1], doc_id))
        if after is None:
            doc.near, doc.near_terms = ("", ""), ("", "")
        elif before != after or doc.near_terms is None:
            doc.near = self._near(doc)
            doc.near_terms = self._terms_of(doc.near)
        self._reindex(doc)
        for other_id in dict.fromkeys(touched):
            other = self.docs[other_id]
            near = self._near(other)
            terms = self._terms_of(near)
            if other_id != doc_id and (other.near, other.near_terms) != (near, terms):
                self._retire(other)  # by the near terms it was indexed with
                other.near, other.near_terms = near, terms
                self._reindex(other)

    # -- sequences: each session's entries in creation order -------------------------------

    def _leave(self, group: str, entry: tuple[OrderKey, str]) -> list[str]:
        """Take an entry out of its sequence; returns the ids of the entries that were beside it."""
        entries = self.sequences[group]
        at = bisect.bisect_left(entries, entry)
        del entries[at]
        if not entries:
            del self.sequences[group]
        return [entries[n][1] for n in (at - 1, at) if 0 <= n < len(entries)]

    def _enter(self, group: str, entry: tuple[OrderKey, str]) -> list[str]:
        entries = self.sequences.setdefault(group, [])
        at = bisect.bisect_left(entries, entry)
        entries.insert(at, entry)
        return [entries[n][1] for n in (at - 1, at + 1) if 0 <= n < len(entries)]

    def _near(self, doc: Doc) -> tuple[str, str]:
        """The ids of the entries before and after `doc` in its sequence."""
        entries = self.sequences[doc.group]
        at = bisect.bisect_left(entries, (doc.put_key, doc.doc_id))
        return entries[at - 1][1] if at > 0 else "", entries[at + 1][1] if at + 1 < len(entries) else ""

    def _terms_of(self, near: tuple[str, str]) -> tuple[str, str]:
        before, after = (self.docs[doc_id].own_terms() if doc_id else "" for doc_id in near)
        return before, after

    # -- postings --------------------------------------------------------------------------

    def _weights(self, doc: Doc) -> dict[str, int]:
        """Weighted term frequencies of a document's body and near fields (a function of its state)."""
        weights = weighted_terms(doc.field_texts(), self.scale)
        for side in doc.near_terms or ():
            for term, count in Counter(side.split()).items():
                weights[NEAR + term] = weights.get(NEAR + term, 0) + count * self.scale
        return weights

    def _retire(self, doc: Doc) -> None:
        """Take a document out of the counts before it changes (its fields are still the indexed ones)."""
        if doc.num < 0:
            return
        terms = self._weights(doc)
        self.live_pairs -= len(terms)
        self.dead_pairs += len(terms)
        for term in terms:
            left = self.df[term] - 1
            if left:
                self.df[term] = left
            else:  # this was the term's last live pair: drop the array and its retired pairs
                del self.df[term]
                self.dead_pairs -= len(self.postings.pop(term)) // 2
        self.total_length -= self.lengths[doc.num]
        self.near_total -= self.near_lengths[doc.num]
        self.visible_count -= 1
        self._count_speaker(doc, -1)
        self.lengths[doc.num] = self.near_lengths[doc.num] = 0
        self.by_num[doc.num] = None
        doc.num = -1

    def _reindex(self, doc: Doc) -> None:
        if not doc.visible:
            return
        weights = self._weights(doc)
        num = doc.num = len(self.by_num)
        self.by_num.append(doc)
        near = sum(weight for term, weight in weights.items() if term.startswith(NEAR))
        length = sum(weights.values()) - near or 1  # a visible document's body length is at least 1
        self.lengths.append(length)
        self.near_lengths.append(near)
        postings, df = self.postings, self.df
        for term, weight in weights.items():
            pairs = postings.get(term)
            if pairs is None:
                postings[term] = array("I", (num, weight))
            else:
                pairs.extend((num, weight))
            df[term] = df.get(term, 0) + 1
        self.live_pairs += len(weights)
        self.total_length += length
        self.near_total += near
        self.visible_count += 1
        self._count_speaker(doc, 1)
        if self.dead_pairs > max(self.live_pairs, MIN_COMPACT_PAIRS):
            self._compact()

    def _count_speaker(self, doc: Doc, change: int) -> None:
        agent = doc.value("agent")
        for term in ranking.agent_terms(agent) if isinstance(agent, str) else ():
            left = self.speakers.get(term, 0) + change
            if left:
                self.speakers[term] = left
            else:
                del self.speakers[term]

    def _compact(self) -> None:
        """Renumber the live documents densely and drop retired pairs from every posting."""
        renumber = array("I", bytes(4 * len(self.by_num)))
        by_num: list[Doc | None] = []
        lengths, near_lengths = array("I"), array("I")
        for old, doc in enumerate(self.by_num):
            if doc is not None:
                renumber[old] = doc.num = len(by_num)
                by_num.append(doc)
                lengths.append(self.lengths[old])
                near_lengths.append(self.near_lengths[old])
        for term, pairs in self.postings.items():
            kept = array("I")
            for num, weight in zip(pairs[::2], pairs[1::2], strict=True):
                if self.lengths[num]:
                    kept.extend((renumber[num], weight))
            self.postings[term] = kept
        self.by_num, self.lengths, self.near_lengths, self.dead_pairs = by_num, lengths, near_lengths, 0

    # -- querying --------------------------------------------------------------------------

    def knows_speaker(self, word: str, scope: Collection[str] | None = None) -> bool:
        if scope is None:
            return self.speakers.get(word, 0) > 0
        return any(word in ranking.agent_terms(str(doc.value("agent") or "")) for doc in self._within(scope))

    def _within(self, scope: Collection[str]) -> list[Doc]:
        seen = set(ranking.scoped(scope))
        return [doc for doc in self.docs.values() if doc.visible and doc.project in seen]

    def search(
        self, terms: list[str], k: int, factor: Callable[[Doc], float], near: bool = True, among: set[int] | None = None
    ) -> list[Hit]:
        """The `k` best documents for `terms` by BM25 (body, plus the near field at NEAR_WEIGHT) times
        `factor(doc)`, each term's idf that among the documents numbered `among` (None: all).

        `factor` returns 0 for documents to leave out (filters) and at most 1 otherwise. Exact top-k
        with MaxScore pruning: terms are scored rarest first, and once the terms left could not lift
        an unseen document into the top k, they only add to the documents already found. `factor`
        runs only for the best raw scores.
        """
        if not self.visible_count or k < 1:
            return []
        count = self.visible_count if among is None else len(among)
        lists = []  # (the most a term can add to a score, its postings, the lengths it is normalised by, per length)
        for term in dict.fromkeys(terms):
            for name, weight, lengths, total in (
                (term, 1.0, self.lengths, self.total_length),
                (NEAR + term, ranking.NEAR_WEIGHT, self.near_lengths, self.near_total),
            ):
                pairs = self.postings.get(name)
                if pairs and (near or weight == 1.0):
                    df = self.df[name] if among is None else sum(num in among for num in pairs[::2])
                    idf = ranking.idf(df, count)
                    lists.append((weight * idf * (K1 + 1.0), pairs, lengths, K1 * B * count / max(1, total)))
        lists.sort(key=lambda item: item[0], reverse=True)
        live = self.lengths
        base = K1 * (1.0 - B)
        scores: dict[int, float] = {}
        factors: dict[int, float] = {}
        rest = sum(item[0] for item in lists)
        threshold = 0.0
        for bound, pairs, lengths, per_length in lists:
            flat = iter(pairs)
            if scores and rest <= threshold:  # no unseen document can reach the top k any more
                for num, tf in zip(flat, flat, strict=True):
                    if num in scores:
                        scores[num] += bound * tf / (tf + base + per_length * lengths[num])
            else:
                get = scores.get
                for num, tf in zip(flat, flat, strict=True):
                    if live[num]:  # 0: a retired number
                        scores[num] = get(num, 0.0) + bound * tf / (tf + base + per_length * lengths[num])
            rest -= bound
            if rest > threshold and len(scores) >= k and max(scores.values()) >= rest:
                best = self._best(scores, factors, factor, k, exact=False)
                if len(best) == k:
                    threshold = max(threshold, best[-1][0])
        found = self._best(scores, factors, factor, k, exact=True)
        return [Hit(doc, score) for score, num in found if (doc := self.by_num[num]) is not None]

    def _best(
        self, scores: dict[int, float], factors: dict[int, float], factor: Callable[[Doc], float], k: int, exact: bool
    ) -> list[tuple[float, int]]:
        """The k best (final score, num) among the 4k best raw scores; with `exact`, that pool
        widens until no document outside it could win (factor <= 1, so final <= raw)."""
        pool = 4 * k
        while True:
            raw = heapq.nlargest(pool, scores, key=scores.__getitem__)
            finals = []
            for num in raw:
                doc = self.by_num[num]
                weight = factors.get(num)
                if weight is None:
                    weight = factors[num] = factor(doc) if doc is not None else 0.0
                if weight > 0 and doc is not None:
                    finals.append((scores[num] * weight, doc.doc_id, num))  # ties: by id, the same everywhere
            best = [(score, num) for score, _, num in heapq.nlargest(k, finals)]
            if not exact or len(raw) < pool or (len(best) == k and best[-1][0] >= scores[raw[-1]]):
                return best
            pool *= 4

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
    ) -> list[ranking.Candidate]:
        """The `size` best raw scores as the ranking's candidates (`ranking.Searchable.pool`), filtered here."""
        seen = None if scope is None else set(ranking.scoped(scope))

        def accept(doc: Doc) -> float:
            if kinds and doc.kind not in kinds:
                return 0.0
            if project is not None and doc.project and doc.project != project:
                return 0.0  # a document without a project (a context record, a thought) is in every project
            if seen is not None and doc.project not in seen:
                return 0.0
            if speakers and not set(speakers) & set(ranking.agent_terms(str(doc.value("agent") or ""))):
                return 0.0
            return 0.0 if spans and not any(low <= doc.at_ms < high for low, high in spans) else 1.0

        among = None  # a project's search weighs its terms among the documents it searches, as the index does
        if project is not None or seen is not None:
            wanted = {project, ""} if project is not None else None
            among = {
                doc.num for doc in self.docs.values()
                if doc.visible and (wanted is None or doc.project in wanted) and (seen is None or doc.project in seen)
            }  # fmt: skip
        return [candidate(hit.doc, hit.score) for hit in self.search(terms, size, accept, near, among)]

    def hits(self, ranked: list[tuple[float, ranking.Candidate]]) -> list[Hit]:
        return [Hit(c.handle, score) for score, c in ranked]

    def count(self, scope: Collection[str] | None = None) -> int:
        return self.visible_count if scope is None else len(self._within(scope))

    def counted(self, scope: Collection[str] | None = None) -> int:
        return self.count(scope)  # (nothing replaced stays here)

    def near_holds(self, asked: set[str], hits: list[Hit]) -> list[set[str]]:
        """The asked terms each hit's neighbour field holds (`Doc.terms` has them already here)."""
        return [asked & {term for side in hit.doc.near_terms or () for term in side.split()} for hit in hits]

    def frequency(self, term: str, scope: Collection[str] | None = None) -> int:
        """In how many documents the term is, in their text (0 also when only in neighbour fields: then 1)."""
        if scope is None:
            return self.df.get(term, 0) or min(1, self.df.get(NEAR + term, 0))
        ids = {doc.doc_id for doc in self._within(scope)}
        return len(ids & set(self.posting(term))) or min(1, len(ids & set(self.posting(NEAR + term))))


def candidate(doc: Doc, raw: float) -> ranking.Candidate:
    hashed = ranking.stable_hash
    return ranking.Candidate(
        raw,
        hashed(doc.doc_id),
        doc.at_ms,
        doc.latest_ms,
        doc.expires_ms or 0,
        hashed(doc.group) if doc.group else 0,
        hashed(doc.speaker) if doc.speaker else 0,
        doc.timely,
        doc,
    )


class OracleView:
    """The search view folded into a `SearchIndex` (at run time the index on disk holds it: `search/sink.py`)."""

    name = "search"

    def initial(self) -> SearchIndex:
        return SearchIndex()

    def apply(self, state: SearchIndex, event: Event) -> None:
        ops = extract(event)
        if ops is None:
            state.skipped_events += 1
        for kind, op in ops or ():
            state.apply(kind, op, event.key, event.writer)


def memory_index(store: Store) -> SearchIndex:
    """The search view folded in this process's memory (kept for `store`: later calls read the new events)."""
    return view_of(store, OracleView)


def search_index(app: App) -> SearchIndex:
    """The app's search view in memory."""
    return memory_index(app.store)
