"""The ranking over a pool of BM25 candidates: its levers, their parameters, and how strong a match is.

The index (`search/disk.py`) returns a pool of the best raw
BM25 scores (body fields, plus the same-session neighbour field at `NEAR_WEIGHT`), each with the few
values the levers need (`Candidate`). `rerank` multiplies each raw score by factors of at most 1:

- recency: 1 for today, halfway to `RECENCY_FLOOR` after `HALF_LIFE_DAYS` (always on);
- speaker: when the query names a known agent (`maria`, `Claude` ...) next to a speech verb or
  capitalised, entries by other agents get `SPEAKER_MISS` (a boost of 1 / SPEAKER_MISS for the named);
- dates: when the query names a month or year, entries created outside it get `DATE_MISS`; when it
  asks when, entries without time words get `UNTIMELY` (`search/when.py`);
- session: the session prior, (1 + g x s) / (1 + g) with g = `SESSION_G` and s the entry's session
  score (the sum of its session's squared raw scores in the pool: a few strong matches outweigh many
  weak ones) over the best session's; an entry without a session is its own;

and keeps the best k (ties by a stable hash of the document id, the same on every machine). The
neighbour field and the k1 lever act inside the index: the first is queried or not, the second sets
how many times a field's words are repeated (`weight_scale`: BM25 over repeats x s behaves as k1 / s).

`CONTEXTFLOW_RANKING` turns levers off for benchmarks and comparisons: `-speaker,-dates` turns those
off, `none` all of them (plain BM25 with recency), `none,+session` only that one on.
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from contextflow.core import hashing, regexes
from contextflow.core.errors import InputError
from contextflow.core.settings import RANKING_VARIABLE, read, resolved
from contextflow.search import when
from contextflow.search.tokens import word_terms

if TYPE_CHECKING:
    from contextflow.search.docs import Hit

ENV = RANKING_VARIABLE
LEVERS = ("neighbours", "speaker", "session", "dates", "k1")

K1, B = 1.2, 0.75  # BM25 as tantivy fixes it; k1 moves only through weight_scale
TUNED_SCALE = 1  # chosen by scripts/tune_bm25.py, leaving one conversation out (docs/bm25-leave-one-out.txt)
NEAR_WEIGHT = 0.5
SPEAKER_MISS = 0.5
DATE_MISS = 0.5
UNTIMELY = 0.8
SESSION_G = 1.0
RECENCY_FLOOR = 0.85  # a document a year old keeps about 86% of its score
HALF_LIFE_DAYS = 90.0
DAY_MS = 86_400_000
POOL_MIN = 32  # candidates taken from the index per query (and per extra pool), at least 4 x limit
UNKNOWN_SHARE = 0.5  # more of a query's weight in words no document holds: nothing matches strongly
HELD_SHARE = 0.25  # a hit holding less of the weight of the query's known words is weak

_VERBS = (
    "say said says tell told think thought thinks suggest suggested suggests propose proposed ask asked asks want "
    "wanted wants mention mentioned recommend recommended prefer preferred reply replied answer answered agree "
    "agreed object objected explain explained claim claimed write wrote note noted insist insisted"
)
SPEECH = frozenset(_VERBS.split())
_WORD = regexes.compile(r"\w+")
_NAME_PART = regexes.compile(r"[^\W_]+")


class Settings(NamedTuple):
    neighbours: bool = True
    speaker: bool = True
    session: bool = True
    dates: bool = True
    k1: bool = True
    scale: int = 0  # a weight scale to try instead of the lever's (scripts/tune_bm25.py); 0: the lever's


@functools.lru_cache(maxsize=16)
def parse(value: str) -> Settings:
    """`-a,-b` (those off), `none` (all off), `none,+a` (only a on), `scale=N` (k1 1.2 / N); empty: all on."""
    on: dict[str, bool] = dict.fromkeys(LEVERS, True)
    scale = 0
    for item in (part.strip().lower() for part in value.split(",")):
        if item in ("", "all"):
            continue
        if item in ("none", "bm25"):
            on = dict.fromkeys(LEVERS, False)
        elif item[:1] in "+-" and item[1:] in on:
            on[item[1:]] = item[0] == "+"
        elif item.startswith("scale=") and item[6:].isdigit() and 1 <= int(item[6:]) <= 8:
            scale = int(item[6:])
        else:
            raise InputError(
                f"{ENV}={value!r}: {item!r} is not a lever; use -LEVER or +LEVER with LEVER one of "
                f"{', '.join(LEVERS)}, none, or scale=1..8"
            )
    return Settings(**on, scale=scale)


def settings() -> Settings:
    """The levers, from the settings this process resolved (`core.settings.resolved`: the environment
    `App.open` was given), else from the process's environment."""
    chosen = resolved()
    return parse((chosen or read()).ranking)


def weight_scale() -> int:
    """How many times a field of weight 1 repeats its words in the index (part of the index's version)."""
    chosen = settings()
    return chosen.scale or (TUNED_SCALE if chosen.k1 else 1)


@functools.lru_cache(maxsize=1 << 14)
def stable_hash(text: str) -> int:
    """A 63-bit hash, the same in every process (0 is kept for "none")."""
    value = int.from_bytes(hashing.blake2b(text.encode(), digest_size=8).digest(), "big") >> 1
    return value or 1


@functools.lru_cache(maxsize=1024)
def agent_terms(agent: str) -> tuple[str, ...]:
    """The words a query may use for an agent: its whole name and its first word (`claude_code`: both
    `claude_code` and `claude`), lower-cased."""
    whole = agent.strip().lower()
    first = _NAME_PART.findall(whole)[:1]
    return tuple(dict.fromkeys([whole, *first])) if whole else ()


def speaker_of(agent: str) -> str:
    """The speaker an agent counts as: its name's first word, lower-cased ("" for none)."""
    terms = agent_terms(agent)
    return terms[-1] if terms else ""


def speaker_words(query: str) -> list[str]:
    """Words of the query that may name a speaker: every word when the query has a speech verb, else its
    capitalised words (`What did maria say`, `Maria's plan`); the index keeps those naming a known agent."""
    words = _WORD.findall(query)
    if SPEECH & {word.lower() for word in words}:
        return list(dict.fromkeys(word.lower() for word in words))
    return list(dict.fromkeys(word.lower() for word in words[1:] if word[:1].isupper()))


def recency(doc_ms: int, now_ms: int) -> float:
    """A factor in (RECENCY_FLOOR, 1]: 1 for now, halfway to the floor after HALF_LIFE_DAYS."""
    age_days = max(0, now_ms - doc_ms) / DAY_MS
    decay: float = 0.5 ** (age_days / HALF_LIFE_DAYS)
    return RECENCY_FLOOR + (1.0 - RECENCY_FLOOR) * decay


class Candidate(NamedTuple):
    raw: float  # BM25 from the index
    tie: int  # stable_hash(doc id): breaks ties the same way everywhere
    at_ms: int  # created
    latest_ms: int  # last changed (recency)
    expires_ms: int  # 0: never
    group: int  # stable_hash of its session or thread, 0: none
    speaker: int  # stable_hash(speaker_of(agent)), 0: none
    timely: bool  # states a time
    handle: Any  # the index's own way back to the document


class Searchable(Protocol):
    """What the ranking reads from an index: the on-disk `DiskIndex` (and the tests' oracle)."""

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
        """The `size` best raw BM25 scores for `terms` (and the neighbour field when `near`) as candidates,
        within the kinds (none: all), the project (None: all; documents without a project are in every
        project), the projects a reader may see (`scope`, None: all; `scoped`) and, when given, the agents
        named `speakers` and the creation-time `spans`."""
        ...

    def hits(self, ranked: list[tuple[float, Candidate]]) -> list[Hit]: ...

    def knows_speaker(self, word: str, scope: Collection[str] | None = None) -> bool: ...

    def near_holds(self, asked: set[str], hits: list[Hit]) -> list[set[str]]: ...

    def frequency(self, term: str, scope: Collection[str] | None = None) -> int:
        """In how many documents (within `scope`'s projects, `scoped`) the term is."""
        ...

    def count(self, scope: Collection[str] | None = None) -> int: ...

    def counted(self, scope: Collection[str] | None = None) -> int:
        """The documents `frequency` counts in (replaced ones not yet merged away too): an idf's whole."""
        ...


def scoped(scope: Collection[str]) -> list[str]:
    """The document projects a reader limited to the projects `scope` sees: those, and "" (no project)
    when it sees the default project, where an event without a project belongs (`core.project.project_of`)."""
    from contextflow.core.project import DEFAULT_PROJECT

    return sorted({*scope, *([""] if DEFAULT_PROJECT in scope else [])})


class Plan(NamedTuple):
    """What a query asks beyond its terms (each part empty when its lever is off)."""

    settings: Settings
    speakers: frozenset[int]  # stable hashes of the speakers it names
    dates: tuple[tuple[int | None, int | None], ...]
    asks_when: bool


def plan(query: str, known_speaker: Callable[[str], bool]) -> Plan:
    """The query's levers; `known_speaker(word)` says whether an index holds an agent of that name."""
    chosen = settings()
    words = speaker_words(query) if chosen.speaker else []
    speakers = frozenset(stable_hash(speaker_of(word)) for word in words if known_speaker(word))
    dates = when.named_dates(query) if chosen.dates else ()
    return Plan(chosen, speakers, dates, chosen.dates and when.asks_when(query))


def pool_size(k: int | None = None) -> int:
    """Candidates taken from the index: the same for every limit asked (up to fields.MAX_LIMIT), so the
    session lever sums the same pool and a query's top five never depend on how many hits were asked for.
    `k` is ignored (kept for callers that pass their limit)."""
    from contextflow.search.fields import MAX_LIMIT

    return max(POOL_MIN, 4 * MAX_LIMIT)


def merge_pools(pools: Iterable[list[Candidate]]) -> list[Candidate]:
    found: dict[int, Candidate] = {}
    for pool in pools:
        for candidate in pool:
            found.setdefault(candidate.tie, candidate)
    return list(found.values())


def rerank(candidates: list[Candidate], wanted: Plan, now_ms: int, k: int) -> list[tuple[float, Candidate]]:
    """The k best (final score, candidate), best first."""
    alive = [c for c in candidates if not c.expires_ms or c.expires_ms > now_ms]  # expiry judged at read time
    sessions: dict[int, float] = {}
    if wanted.settings.session:
        for c in alive:
            key = c.group or c.tie
            sessions[key] = sessions.get(key, 0.0) + c.raw * c.raw
    best_session = max(sessions.values(), default=0.0) or 1.0
    scored = []
    for c in alive:
        factor = recency(c.latest_ms, now_ms)
        if wanted.speakers and c.speaker not in wanted.speakers:
            factor *= SPEAKER_MISS
        if wanted.dates and not when.date_matches(c.at_ms, wanted.dates):
            factor *= DATE_MISS
        if wanted.asks_when and not c.timely:
            factor *= UNTIMELY
        if sessions:
            factor *= (1.0 + SESSION_G * sessions[c.group or c.tie] / best_session) / (1.0 + SESSION_G)
        scored.append((c.raw * factor, c.tie, c))
    return [(score, c) for score, _, c in heapq.nlargest(k, scored, key=lambda item: (item[0], item[1]))]


def idf(df: int, count: int) -> float:
    """BM25's idf of a term in `df` of `count` documents (never negative: `df` is at most `count`)."""
    df = min(df, count)
    return math.log(1.0 + (count - df + 0.5) / (df + 0.5))


def asked_words(query: str, named: Iterable[str]) -> list[tuple[str, ...]]:
    """The query's words as their index terms, leaving out what the levers read instead: month names and
    years (the dates lever) and the speakers it names."""
    skip = set(named)
    words = [word for word in _WORD.findall(query) if word.lower() not in skip]
    found = [terms for word in words if (terms := word_terms(word)) and not all(map(when.is_date_word, terms))]
    return list(dict.fromkeys(found)) or list(dict.fromkeys(terms for word in words if (terms := word_terms(word))))


def weak_flags(
    words: list[tuple[str, ...]], frequency: Callable[[str], int], count: int, held: list[set[str]]
) -> list[bool]:
    """Which hits are only the closest there is, not strong matches. Each query word (`asked_words`)
    weighs the highest idf of its terms; a word no document holds, in its text or its neighbour field,
    weighs the highest idf there is. When such unknown words carry more than `UNKNOWN_SHARE` of the
    query's weight, what it asks about is not stored and every hit is weak; otherwise a hit is weak
    when the words it holds (one of their terms in `held`) carry less than `HELD_SHARE` of the weight
    of the known ones."""
    weights, unknown = [], 0.0
    for terms in words:
        frequencies = [frequency(term) for term in terms]
        weight = max(idf(df, count) for df in frequencies if df) if any(frequencies) else idf(0, count)
        weights.append(weight)
        unknown += 0.0 if any(frequencies) else weight
    total = sum(weights)
    if not total or unknown > UNKNOWN_SHARE * total:
        return [True] * len(held)
    known = total - unknown
    return [
        sum(weight for terms, weight in zip(words, weights, strict=True) if holds.intersection(terms))
        < HELD_SHARE * known
        for holds in held
    ]
