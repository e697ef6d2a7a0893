"""get_context: ranked retrieval across every kind of record, packed into budgeted markdown.

The search view ranks the documents; each hit's block (contextflow.search.present: provenance
header, stored text quoted as untrusted data) is packed best first until `budget_tokens`: the
block that crosses it is clipped, the rest are listed as left out. The text never exceeds the
budget (`estimate_tokens`, about four characters a token).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from contextflow.app import App
from contextflow.core import checks, timeutil
from contextflow.core.errors import InputError
from contextflow.core.store import Store
from contextflow.core.text import DATA_NOTICE, clip, estimate_tokens
from contextflow.search import derived
from contextflow.search.extractors import search_kinds
from contextflow.search.index import Doc, Hit, SearchIndex
from contextflow.search.present import Views, hit_block, hit_json
from contextflow.search.tokens import iter_tokens, query_terms
from contextflow.search.view import VIEW_NAME

if TYPE_CHECKING:
    from contextflow.search.disk import DiskIndex

DEFAULT_LIMIT, MAX_LIMIT = 8, 50
DEFAULT_BUDGET, MIN_BUDGET, MAX_BUDGET = 2_000, 200, 50_000
CHARS_PER_TOKEN = 4
MIN_CLIPPED_CHARS = 320
FOOTER_RESERVE = 160
CLIP_MARK = "[clipped to stay within budget_tokens]"
RECENCY_FLOOR = 0.85  # a document a year old keeps about 86% of its score
HALF_LIFE_DAYS = 90.0
DAY_MS = 86_400_000


@dataclass(frozen=True)
class Query:
    text: str
    limit: int
    kinds: frozenset[str] = frozenset()  # empty: every kind
    project: str | None = None  # None: every project


@dataclass(frozen=True)
class Shown:
    hit: Hit
    status: str  # full | clipped | omitted


@dataclass(frozen=True)
class ContextResult:
    query: Query
    budget: int
    shown: list[Shown]
    text: str

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)

    def as_dict(self) -> dict[str, Any]:
        terms = query_terms(self.query.text)
        return {
            "query": self.query.text,
            "project": self.query.project,
            "kinds": sorted(self.query.kinds),
            "count": len(self.shown),
            "tokens": self.tokens,
            "budget_tokens": self.budget,
            "results": [
                {"rank": n, **hit_json(s.hit), "shown": s.status, **why(s.hit.doc, terms)}
                for n, s in enumerate(self.shown, 1)
            ],
        }


def why(doc: Doc, terms: list[str]) -> dict[str, Any]:
    """What matched (field -> terms) and an excerpt of the first field that matched."""
    found = matched(doc, terms)
    first = next(iter(found), None) or next((name for name, text in doc.field_texts() if text), "")
    return {"matched": found, "excerpt": clip(doc.text(first), 240) if first else None}


def matched(doc: Doc, terms: list[str]) -> dict[str, list[str]]:
    """Why a document matched: the query's (stemmed) terms each of its fields holds."""
    wanted = set(terms)
    found: dict[str, list[str]] = {}
    for name, text in doc.field_texts():
        hits = wanted.intersection(iter_tokens(text)) if text else set()
        if hits:
            found[name] = sorted(hits)
    return found


def recency(doc_ms: int, now_ms: int) -> float:
    """A factor in (RECENCY_FLOOR, 1]: 1 for now, halfway to the floor after HALF_LIFE_DAYS."""
    age_days = max(0, now_ms - doc_ms) / DAY_MS
    decay: float = 0.5 ** (age_days / HALF_LIFE_DAYS)
    return RECENCY_FLOOR + (1.0 - RECENCY_FLOOR) * decay


def rank(index: SearchIndex | DiskIndex, query: Query, now_ms: int) -> list[Hit]:
    """BM25 from the index, times a mild recency factor, within the query's filters."""
    kinds, project = query.kinds, query.project

    def factor(doc: Doc) -> float:
        if kinds and doc.kind not in kinds:
            return 0.0
        if project is not None and doc.project and doc.project != project:
            return 0.0  # a document without a project (a context record, a thought) is in every project
        if doc.expires_ms is not None and doc.expires_ms <= now_ms:
            return 0.0  # expiry is judged at read time, never in the fold
        return recency(doc.latest_ms, now_ms)

    if isinstance(index, SearchIndex):
        return index.search(query_terms(query.text), query.limit, factor)
    from contextflow.search.disk import top

    return top(index, query_terms(query.text), query.limit, factor, kinds, project)


def search_source(app: App) -> SearchIndex | DiskIndex:
    """The shared on-disk index, brought up to date; the in-memory view where the store folds it (a
    grant's filtered store) or where the disk index cannot be used."""
    if app.store.folds(VIEW_NAME):
        index: SearchIndex = app.store.view(VIEW_NAME)
        return index
    try:
        return derived.search_for(app.store).index()
    except (ImportError, OSError, ValueError, derived.IndexDamaged):
        return search_index(app)


def search_index(app: App) -> SearchIndex:
    """The search view folded in memory (the reference the disk index is tested against)."""
    if app.store.folds(VIEW_NAME):
        index: SearchIndex = app.store.view(VIEW_NAME)
        return index
    return memory_index(app.store)


_MEMORY: weakref.WeakKeyDictionary[Store, Store] = weakref.WeakKeyDictionary()


def memory_index(store: Store) -> SearchIndex:
    """The search view folded in this process's memory by a twin store that folds only it (the
    fallback when the disk index cannot be used, and the reference it is tested against)."""
    from contextflow.core.fold import LazyView
    from contextflow.features import VIEWS

    twin = _MEMORY.get(store)
    if twin is None:
        twin = _MEMORY[store] = Store(
            store.location,
            store.writer,
            store.state_dir,
            views=[LazyView("search", VIEWS["search"])],
            use_snapshot=False,
        )
    index: SearchIndex = twin.view("search")
    return index


def get_context(
    app: App,
    *,
    query: Any,
    project: Any = None,
    kinds: Any = None,
    limit: Any = None,
    budget_tokens: Any = None,
    now_ms: int | None = None,
) -> ContextResult:
    """The best matches for `query`, as markdown within `budget_tokens`."""
    text = checks.text(query, "query", required=True, max_chars=2_000) or ""
    if not query_terms(text):
        raise InputError("query has no searchable words: use names of files, components, topics or decisions")
    known = search_kinds()
    if kinds is not None and not isinstance(kinds, list | tuple):
        raise InputError(f'kinds must be a list such as ["conversation", "handoff"]; kinds are: {", ".join(known)}')
    for n, kind in enumerate(kinds or ()):
        if kind not in known:
            raise InputError(f"kinds[{n}]={kind!r} is not a searchable kind; kinds are: {', '.join(known)}")
    wanted = Query(
        text=text,
        limit=checks.bounded_int(limit, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT),
        kinds=frozenset(kinds or ()),
        project=checks.text(project, "project", max_chars=200),
    )
    budget = checks.bounded_int(budget_tokens, "budget_tokens", DEFAULT_BUDGET, MIN_BUDGET, MAX_BUDGET)
    now = timeutil.now_ms() if now_ms is None else now_ms
    source = search_source(app)
    if isinstance(source, SearchIndex):
        hits = rank(source, wanted, now)
    else:  # a damaged index is rebuilt and asked again
        hits = derived.search_for(app.store).search(lambda index: rank(index, wanted, now))
    return hydrate(app, wanted, hits, budget)


# -- hydration -----------------------------------------------------------------------------


def _clipped(block: str, room: int) -> str:
    """`block` cut at a line boundary (or inside its last line) to fit `room` characters."""
    limit = room - len(CLIP_MARK) - 2
    kept: list[str] = []
    used = 0
    for line in block.split("\n"):
        if used + len(line) + 1 > limit:
            space = limit - used - 4
            if space >= 40:
                kept.append(line[:space] + "...")
            break
        kept.append(line)
        used += len(line) + 1
    return "\n".join([*kept, CLIP_MARK])


def hydrate(app: App, query: Query, hits: list[Hit], budget: int) -> ContextResult:
    limit = budget * CHARS_PER_TOKEN
    scope = []
    if query.project is not None:
        scope.append(f"project={clip(query.project, 80)}")
    if query.kinds:
        scope.append("kinds=" + ",".join(sorted(query.kinds)))
    where = f" ({'; '.join(scope)})" if scope else ""
    if not hits:
        text = (
            f"# Context for: {clip(query.text, 200)}\nNo stored records match{where}. Try other words: names of "
            "files, components, people or decisions, or drop the filters."
        )
        return ContextResult(query, budget, [], text[:limit])
    found = f"{len(hits)} {'match' if len(hits) == 1 else 'matches'}"
    parts = [f"# Context for: {clip(query.text, 200)}\n{found}, best first{where}. {DATA_NOTICE}"]
    used = len(parts[0])
    shown: list[Shown] = []
    views: Views = cache(app.store.view)
    for position, hit in enumerate(hits, 1):
        block = hit_block(views, hit, position, limit)
        room = limit - used - 2 - FOOTER_RESERVE
        if len(block) > room:
            if room >= MIN_CLIPPED_CHARS:
                parts.append(_clipped(block, room))
                shown.append(Shown(hit, "clipped"))
            break
        parts.append(block)
        shown.append(Shown(hit, "full"))
        used += len(block) + 2
    omitted = hits[len(shown) :]
    if omitted:
        ids = ", ".join(f"{hit.doc.kind} {clip(hit.doc.ref, 20)}" for hit in omitted[:3])
        note = f"{len(omitted)} more match(es) left out by budget_tokens={budget} (e.g. {ids})"
        parts.append(clip(note, FOOTER_RESERVE - 4))
        shown += [Shown(hit, "omitted") for hit in omitted]
    return ContextResult(query, budget, shown, "\n\n".join(parts))
