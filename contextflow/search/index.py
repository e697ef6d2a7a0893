"""An incremental BM25 index over searchable documents, updated one operation at a time.

A document (a note, a conversation, a graph node) has the stable id `<kind>:<ref>`, text fields
weighted by `FIELD_WEIGHTS` (BM25F style) and a little metadata (project, agent, writer, status).
A field named `group.member` (e.g. `tags.tier:pinned`) weighs as its group and is set or cleared
on its own: that is how set-like values (tags added and removed) are kept.

Operations come from the extractors, each stamped with its event's order key: `Put` replaces
the whole document, `Patch` changes some fields, `Delete` removes it. Fields and metadata are
last-writer-wins by order key, a `Put` drops anything older than itself, and a document is
visible while its latest `Put` is newer than its latest `Delete`: the index is the same
whatever order the events arrive in, which keeps it a pure view.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from contextflow.core.clock import stamp_ms
from contextflow.core.events import OrderKey
from contextflow.search.tokens import WORD, word_terms

FIELD_WEIGHTS: Mapping[str, int] = {"title": 3, "key": 3, "tags": 2, "entities": 2, "files": 2, "decisions": 2}
K1 = 1.2
B = 0.75
ZERO: OrderKey = (0, "", 0)
MIN_COMPACT_PAIRS = 100_000


@dataclass(frozen=True)
class Put:  # the whole document, replacing any older version of it
    ref: str
    fields: dict[str, str]
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Patch:  # some fields or metadata of a document; the rest stays as it was
    ref: str
    fields: dict[str, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Delete:
    ref: str


Op = Put | Patch | Delete


@dataclass(slots=True)
class Doc:
    doc_id: str
    kind: str
    ref: str
    num: int = field(compare=False)  # its number in the postings, -1 when not indexed: not logical state
    fields: dict[str, tuple[OrderKey, str]] = field(default_factory=dict)
    meta: dict[str, tuple[OrderKey, Any]] = field(default_factory=dict)
    put_key: OrderKey = ZERO
    delete_key: OrderKey = ZERO
    # derived at each reindex, for fast filtering and ranking
    project: str = ""
    latest: OrderKey = ZERO
    latest_ms: int = 0
    expires_ms: int | None = None

    @property
    def visible(self) -> bool:
        return self.put_key > self.delete_key

    def text(self, name: str) -> str:
        entry = self.fields.get(name)
        return entry[1] if entry else ""

    def value(self, name: str) -> Any:
        entry = self.meta.get(name)
        return entry[1] if entry else None

    def field_texts(self) -> list[tuple[str, str]]:
        return [(name, text) for name, (_, text) in self.fields.items()]


def _merge(target: dict[str, tuple[OrderKey, Any]], values: Mapping[str, Any], key: OrderKey) -> None:
    for name, value in values.items():
        current = target.get(name)
        if current is None or current[0] < key:
            target[name] = (key, value)


def _drop_older(target: dict[str, tuple[OrderKey, Any]], floor: OrderKey) -> None:
    for name in [name for name, (key, _) in target.items() if key < floor]:
        del target[name]


@dataclass
class Hit:
    doc: Doc
    score: float


def _weights(doc: Doc) -> dict[str, int]:
    """Weighted term frequencies of a document's fields (a deterministic function of them)."""
    return weighted_terms(doc.field_texts())


def weighted_terms(fields: Iterable[tuple[str, str]]) -> dict[str, int]:
    """Term -> sum over fields of its count times the field's weight (BM25F's weighted tf)."""
    weights: dict[str, int] = {}
    get = weights.get
    for name, text in fields:
        if not text:
            continue
        weight = FIELD_WEIGHTS.get(name.split(".", 1)[0], 1)
        for raw, count in Counter(WORD.findall(text)).items():
            for term in word_terms(raw):
                weights[term] = get(term, 0) + count * weight
    return weights


def admits(doc: Doc, op: Op, key: OrderKey) -> bool:
    """Record a put's or delete's key; False when `op` is older than the document's floor (its
    latest put or delete) and so changes nothing else."""
    floor = max(doc.put_key, doc.delete_key)
    if isinstance(op, Delete):
        doc.delete_key = max(doc.delete_key, key)
    elif isinstance(op, Put):
        doc.put_key = max(doc.put_key, key)
    return key >= floor


def merge(doc: Doc, op: Op, key: OrderKey, writer: str) -> None:
    """Apply an admitted operation's fields and metadata (last writer wins), then `derive`."""
    if not isinstance(op, Patch):  # a put or delete raises the floor: older values go
        _drop_older(doc.fields, key)
        _drop_older(doc.meta, key)
    if not isinstance(op, Delete):
        _merge(doc.fields, op.fields, key)
        _merge(doc.meta, {**op.meta, "writer": writer}, key)
    derive(doc)


def put_new(doc_id: str, kind: str, op: Put, key: OrderKey, writer: str) -> Doc:
    """A document made by one put (what `admits` and `merge` make of it, built directly: a build's common case)."""
    doc = Doc(doc_id, kind, op.ref, -1, put_key=key)
    doc.fields = {name: (key, text) for name, text in op.fields.items()}
    doc.meta = {name: (key, value) for name, value in op.meta.items()}
    doc.meta["writer"] = (key, writer)
    project, expires = op.meta.get("project"), op.meta.get("expires_ms")
    doc.project = project if isinstance(project, str) else ""
    doc.latest, doc.latest_ms = key, stamp_ms(key[0])
    doc.expires_ms = expires if isinstance(expires, int) and not isinstance(expires, bool) else None
    return doc


def join(doc: Doc, other: Doc) -> None:
    """Fold into `doc` another state of the same document, made from other operations: the result is
    the state of both sets of operations (floors and keys are maxima, fields below the floor go)."""
    doc.put_key, doc.delete_key = max(doc.put_key, other.put_key), max(doc.delete_key, other.delete_key)
    floor = max(doc.put_key, doc.delete_key)
    for target, source in ((doc.fields, other.fields), (doc.meta, other.meta)):
        for name, (key, value) in source.items():
            current = target.get(name)
            if current is None or current[0] < key:
                target[name] = (key, value)
        _drop_older(target, floor)
    derive(doc)


def derive(doc: Doc) -> None:
    """The fields kept for fast filtering and ranking, from the document's state."""
    project = doc.value("project")
    doc.project = project if isinstance(project, str) else ""
    doc.latest = max([key for key, _ in doc.fields.values()] + [key for key, _ in doc.meta.values()], default=ZERO)
    doc.latest_ms = stamp_ms(doc.latest[0])
    expires = doc.value("expires_ms")
    doc.expires_ms = expires if isinstance(expires, int) and not isinstance(expires, bool) else None


@dataclass(eq=False)
class SearchIndex:
    """Postings are compact arrays of (document number, weighted tf) pairs. A changed document
    gets a new number and its old one is retired (length 0): queries skip retired numbers, and
    `_compact` drops them once they outnumber the live pairs. `df` counts live documents."""

    docs: dict[str, Doc] = field(default_factory=dict)
    by_num: list[Doc | None] = field(default_factory=list)
    lengths: array[int] = field(default_factory=lambda: array("I"))
    postings: dict[str, array[int]] = field(default_factory=dict)
    df: dict[str, int] = field(default_factory=dict)
    visible_count: int = 0
    total_length: int = 0
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
        return (self.docs, postings, self.df, self.visible_count, self.total_length, self.skipped_events)

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
        self._retire(doc)
        merge(doc, op, key, writer)
        self._reindex(doc)

    def _retire(self, doc: Doc) -> None:
        """Take a document out of the counts before it changes (its fields are still the indexed ones)."""
        if doc.num < 0:
            return
        terms = _weights(doc)
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
        self.visible_count -= 1
        self.lengths[doc.num] = 0
        self.by_num[doc.num] = None
        doc.num = -1

    def _reindex(self, doc: Doc) -> None:
        if not doc.visible:
            return
        weights = _weights(doc)
        num = doc.num = len(self.by_num)
        self.by_num.append(doc)
        length = sum(weights.values()) or 1  # a visible document's length is at least 1
        self.lengths.append(length)
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
        self.visible_count += 1
        if self.dead_pairs > max(self.live_pairs, MIN_COMPACT_PAIRS):
            self._compact()

    def _compact(self) -> None:
        """Renumber the live documents densely and drop retired pairs from every posting."""
        renumber = array("I", bytes(4 * len(self.by_num)))
        by_num: list[Doc | None] = []
        lengths = array("I")
        for old, doc in enumerate(self.by_num):
            if doc is not None:
                renumber[old] = doc.num = len(by_num)
                by_num.append(doc)
                lengths.append(self.lengths[old])
        for term, pairs in self.postings.items():
            kept = array("I")
            for num, weight in zip(pairs[::2], pairs[1::2], strict=True):
                if self.lengths[num]:
                    kept.extend((renumber[num], weight))
            self.postings[term] = kept
        self.by_num, self.lengths, self.dead_pairs = by_num, lengths, 0

    # -- querying --------------------------------------------------------------------------

    def search(self, terms: list[str], k: int, factor: Callable[[Doc], float]) -> list[Hit]:
        """The `k` best documents for `terms` by BM25 times `factor(doc)`.

        `factor` returns 0 for documents to leave out (filters) and at most 1 otherwise
        (recency). Exact top-k with MaxScore pruning: terms are scored rarest first, and
        once the terms left could not lift an unseen document into the top k, they only
        add to the documents already found. `factor` runs only for the best raw scores.
        """
        if not self.visible_count or k < 1:
            return []
        count = self.visible_count
        lists = []
        for term in dict.fromkeys(terms):
            pairs = self.postings.get(term)
            if pairs:
                df = self.df[term]
                idf = math.log(1.0 + (count - df + 0.5) / (df + 0.5))
                lists.append((idf * (K1 + 1.0), pairs))  # the most a term can add to a score
        lists.sort(key=lambda item: item[0], reverse=True)
        lengths = self.lengths
        base = K1 * (1.0 - B)
        per_length = K1 * B * count / max(1, self.total_length)
        scores: dict[int, float] = {}
        factors: dict[int, float] = {}
        rest = sum(bound for bound, _ in lists)
        threshold = 0.0
        for bound, pairs in lists:
            flat = iter(pairs)
            if scores and rest <= threshold:  # no unseen document can reach the top k any more
                for num, tf in zip(flat, flat, strict=True):
                    if num in scores:
                        scores[num] += bound * tf / (tf + base + per_length * lengths[num])
            else:
                get = scores.get
                for num, tf in zip(flat, flat, strict=True):
                    length = lengths[num]
                    if length:  # 0: a retired number
                        scores[num] = get(num, 0.0) + bound * tf / (tf + base + per_length * length)
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
