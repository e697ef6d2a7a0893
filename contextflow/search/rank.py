"""Ranking: BM25 from the index, times a mild recency factor, within the caller's filters.

`rank()` is the one entry point retrieval uses.
"""

from __future__ import annotations

from dataclasses import dataclass

from contextflow.search.index import Doc, Hit, SearchIndex
from contextflow.search.tokens import query_terms

RECENCY_FLOOR = 0.85  # a document a year old keeps about 86% of its score
HALF_LIFE_DAYS = 90.0
DAY_MS = 86_400_000


def recency(doc_ms: int, now_ms: int) -> float:
    """A factor in (RECENCY_FLOOR, 1]: 1 for now, halfway to the floor after HALF_LIFE_DAYS."""
    age_days = max(0, now_ms - doc_ms) / DAY_MS
    decay: float = 0.5 ** (age_days / HALF_LIFE_DAYS)
    return RECENCY_FLOOR + (1.0 - RECENCY_FLOOR) * decay


@dataclass(frozen=True)
class Query:
    text: str
    limit: int
    kinds: frozenset[str] = frozenset()  # empty: every kind
    project: str | None = None  # None: every project


def rank(index: SearchIndex, query: Query, now_ms: int) -> list[Hit]:
    kinds, project = query.kinds, query.project

    def factor(doc: Doc) -> float:
        if kinds and doc.kind not in kinds:
            return 0.0
        if project is not None and doc.project and doc.project != project:
            return 0.0  # a document without a project (a context record, a thought) is in every project
        if doc.expires_ms is not None and doc.expires_ms <= now_ms:
            return 0.0  # expiry is judged at read time, never in the fold
        return recency(doc.latest_ms, now_ms)

    return index.search(query_terms(query.text), query.limit, factor)
