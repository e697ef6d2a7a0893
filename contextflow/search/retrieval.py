"""get_context: ranked retrieval across every kind of record, packed into budgeted markdown.

The search view ranks the documents; each hit's block (contextflow.search.hits: provenance
header, stored text quoted as untrusted data) is packed best first until `budget_tokens`: the
block that crosses it is clipped, the rest are listed as left out. The text never exceeds the
budget (`estimate_tokens`, about four characters a token).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from contextflow.app import App
from contextflow.core import checks, timeutil
from contextflow.core.errors import InputError
from contextflow.core.text import DATA_NOTICE, clip, cut, estimate_tokens
from contextflow.search import derived, ranking, when
from contextflow.search.docs import Doc, Hit
from contextflow.search.fields import DEFAULT_BUDGET, DEFAULT_LIMIT, MAX_LIMIT
from contextflow.search.hits import Views, hit_block, hit_json
from contextflow.search.tokens import iter_tokens, query_terms

CHARS_PER_TOKEN = 4
MIN_CLIPPED_CHARS = 320
FOOTER_RESERVE = 160
CLIP_MARK = "[clipped to stay within budget_tokens]"


@dataclass(frozen=True)
class Query:
    text: str
    limit: int
    kinds: frozenset[str] = frozenset()  # empty: every kind
    project: str | None = None  # None: every project
    scope: frozenset[str] | None = None  # the projects the reader may see (`Store.read_projects`), None: all


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
    partial: str = ""  # why the answer may miss records ("" when it holds every event of the logs)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)

    @property
    def weak(self) -> bool:
        """Nothing matched strongly: every result is only the closest there is."""
        return bool(self.shown) and all(shown.hit.weak for shown in self.shown)

    def as_dict(self) -> dict[str, Any]:
        terms = query_terms(self.query.text)
        return {
            "query": self.query.text,
            "project": self.query.project,
            "kinds": sorted(self.query.kinds),
            "count": len(self.shown),
            "weak": self.weak,
            **({"partial": self.partial} if self.partial else {}),
            "tokens": self.tokens,
            "budget_tokens": self.budget,
            "results": [
                {"rank": n, **hit_json(s.hit), "shown": s.status, **why(s.hit.doc, terms, s.hit.beside)}
                for n, s in enumerate(self.shown, 1)
            ],
        }


NEIGHBOUR = "the entry beside it"  # where a hit's terms are when its own text holds none


def why(doc: Doc, terms: list[str], beside: tuple[str, ...] = ()) -> dict[str, Any]:
    """What matched (field -> terms) and an excerpt of the first field that matched; a hit whose own
    text holds no query term says which terms its neighbour holds."""
    found = matched(doc, terms)
    first = next(iter(found), None) or next((name for name, text in doc.field_texts() if text), "")
    if not found and beside:
        found = {NEIGHBOUR: list(beside)}
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


def rank(index: ranking.Searchable, query: Query, now_ms: int) -> list[Hit]:
    """BM25 candidates from the index, within the query's filters, reranked by the levers
    (`search/ranking.py`), each hit marked weak when it is not a strong match (`ranking.weak_flags`).
    Beside the main pool, a query naming a speaker or a date takes one more pool of that speaker's
    entries or of entries created then, so the levers can lift entries the plain scores ranked low."""
    terms = query_terms(query.text)
    if not terms:
        return []
    scope = query.scope  # the statistics too are the reader's projects' (none of another project leaks)

    def knows(word: str) -> bool:
        return index.knows_speaker(word, scope)

    def frequency(term: str) -> int:
        return index.frequency(term, scope)

    wanted = ranking.plan(query.text, knows)
    size, near, kinds, project = ranking.pool_size(query.limit), wanted.settings.neighbours, query.kinds, query.project
    named = [word for word in ranking.speaker_words(query.text) if knows(word)] if wanted.speakers else []
    spans = when.month_spans(wanted.dates, now_ms)
    deep, count = max(MAX_LIMIT, query.limit), index.counted(scope)  # (what `frequency` counts in)
    while True:
        pools = [index.pool(terms, size, kinds, project, near, scope=scope)]
        if named:
            pools.append(index.pool(terms, size, kinds, project, near, speakers=named, scope=scope))
        if spans:
            pools.append(index.pool(terms, size, kinds, project, near, spans=spans, scope=scope))
        # ranked as deep as any limit asks, then cut: the pool and whether it grows do not depend on the limit
        ranked = ranking.rerank(ranking.merge_pools(pools), wanted, now_ms, deep)
        if len(ranked) == deep or len(pools[0]) < size:
            break
        size *= 4  # expired records took places in the pool: look further
    ranked = ranked[: query.limit]
    hits = index.hits(ranked)
    words = ranking.asked_words(query.text, named)
    asked = {term for word in words for term in word}
    held = [asked & hit.doc.terms() for hit in hits]
    own = [bool(holds) for holds in held]
    flags = ranking.weak_flags(words, frequency, count, held)
    if any(flags) and not ranking.weak_flags(words, frequency, count, [asked])[0]:
        doubtful = [n for n, weak in enumerate(flags) if weak]  # their neighbour fields may hold more
        for n, more in zip(doubtful, index.near_holds(asked, [hits[n] for n in doubtful]), strict=True):
            held[n] |= more
        flags = ranking.weak_flags(words, frequency, count, held)
    for hit, weak, holds, itself in zip(hits, flags, held, own, strict=True):
        hit.weak = weak
        if not itself:  # never shown as a plain match: it is said to match beside it
            hit.beside = tuple(sorted(holds))
    return hits


def search(app: App, query: Query, now_ms: int) -> tuple[list[Hit], str]:
    """The ranked hits from the machine's shared index (`search/derived.py`) and, when they may miss records,
    why (a build under way in the background, another process holding the derived store's write lock:
    the answer comes from what the index held, and says how far that is)."""
    return derived.search_for(app.store).search(lambda index: rank(index, query, now_ms), [])


def get_context(
    app: App,
    *,
    query: str,
    project: str | None = None,
    kinds: Sequence[str] | None = None,
    limit: int | None = None,
    budget_tokens: int | None = None,
    now_ms: int | None = None,
) -> ContextResult:
    """The best matches for `query`, as markdown within `budget_tokens`: up to `limit` (to MAX_LIMIT) of
    `kinds` (SEARCH_KINDS: the table's row checks each), within MIN_BUDGET to MAX_BUDGET tokens."""
    text = checks.trimmed(query, "query", required=True, max_chars=2_000) or ""
    if not query_terms(text):
        raise InputError("query has no searchable words: use names of files, components, topics or decisions")
    wanted = Query(
        text=text,
        limit=DEFAULT_LIMIT if limit is None else limit,
        kinds=frozenset(kinds or ()),
        project=checks.trimmed(project, "project", max_chars=200),
        scope=app.store.read_projects,
    )
    budget = DEFAULT_BUDGET if budget_tokens is None else budget_tokens
    now = timeutil.now_ms() if now_ms is None else now_ms
    hits, partial = search(app, wanted, now)
    return hydrate(app, wanted, current_handoffs(app, hits), budget, partial)


def current_handoffs(app: App, hits: list[Hit]) -> list[Hit]:
    """The hits without automatic handoffs a newer one of their session replaced: one per session, as
    every recent read shows them (the superseded stay in the activity feed)."""
    from contextflow.sessions import stored

    handoffs = [hit.doc.ref for hit in hits if hit.doc.kind == "handoff"]  # (`ref`: the event's id)
    if not handoffs or not stored.current(app):
        return hits
    replaced = stored.superseded(app, handoffs)
    return [hit for hit in hits if hit.doc.ref not in replaced]


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
                kept.append(cut(line, space + 3))
            break
        kept.append(line)
        used += len(line) + 1
    return "\n".join([*kept, CLIP_MARK])


def hydrate(app: App, query: Query, hits: list[Hit], budget: int, partial: str = "") -> ContextResult:
    limit = budget * CHARS_PER_TOKEN
    lead = f"{partial}\n" if partial else ""
    scope = []
    if query.project is not None:
        scope.append(f"project={clip(query.project, 80)}")
    if query.kinds:
        scope.append("kinds=" + ",".join(sorted(query.kinds)))
    where = f" ({'; '.join(scope)})" if scope else ""
    if not hits:
        none = "Nothing found in what could be searched" if partial else "No stored records match"
        text = (
            f"# Context for: {clip(query.text, 200)}\n{lead}{none}{where}. Try other words: names of "
            "files, components, people or decisions, or drop the filters."
        )
        return ContextResult(query, budget, [], text[:limit], partial)
    weak, count = sum(hit.weak for hit in hits), len(hits)
    if weak == count:  # an honest empty answer: say so, and show the closest as such
        found = (
            f"Nothing stored matches this strongly{where}; the closest {count} "
            f"{'record' if count == 1 else 'records'}, best first, each marked match=weak."
        )
    else:
        partly = f"; {weak} only partly (match=weak)" if weak else ""
        if beside := sum(bool(hit.beside) and not hit.weak for hit in hits):
            partly += f"; {beside} only through the entry beside it (matched=only in the entry beside it)"
        found = f"{count} {'match' if count == 1 else 'matches'}, best first{where}{partly}."
    parts = [f"# Context for: {clip(query.text, 200)}\n{lead}{found} {DATA_NOTICE}"]
    used = len(parts[0])
    shown: list[Shown] = []
    views: Views = cache(lambda name: _state(app, name))
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
    return ContextResult(query, budget, shown, "\n\n".join(parts), partial)


def _state(app: App, name: str) -> Any:
    """What a hit's block reads beside its document (`hits.hit_block` asks for the saved conversations
    only): their tables, queried."""
    if name != "conversations":
        raise ValueError(f"a hit's block reads no view {name!r}")
    from contextflow.conversations.core import conversations_state

    return conversations_state(app)
