"""Search documents: their operations, their state (last writer wins per field), what is derived from it.

A document (a note, a conversation, a graph node) has the stable id `<kind>:<ref>`, text fields
weighted by `FIELD_WEIGHTS` (BM25F style) and a little metadata (project, agent, writer, status).
A field named `group.member` (e.g. `tags.tier:pinned`) weighs as its group and is set or cleared
on its own: that is how set-like values (tags added and removed) are kept.

Operations come from the extractors, each stamped with its event's order key: `Put` replaces
the whole document, `Patch` changes some fields, `Delete` removes it. Fields and metadata are
last-writer-wins by order key, a `Put` drops anything older than itself, and a document is
visible while its latest `Put` is newer than its latest `Delete`: the state is the same whatever
order the events arrive in.

Derived from that state (`derive`): its project, latest change, expiry, creation time, session group
(a session's or thread's entries share one), speaker (the agent's first word) and whether it states a
time. Notes, thoughts and captured turns of one session form a sequence by creation order; each one's
`near` names the entries before and after it in its sequence and `near_terms` holds their terms (the
neighbour field), kept by the disk sink at commit (`search/sink.py`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from contextflow.core.clock import stamp_ms
from contextflow.core.events import OrderKey
from contextflow.search.ranking import speaker_of
from contextflow.search.tokens import WORD, term_string, word_terms
from contextflow.search.when import has_time_words

# Fractional weights are allowed: a field's words are repeated weight x scale times (`repeats`), and the
# scale (`ranking.weight_scale`) is even, so halves are whole repeats.
FIELD_WEIGHTS: Mapping[str, float] = {
    "title": 3, "key": 3, "tags": 2, "entities": 2, "files": 2, "decisions": 2,
}  # fmt: skip
ZERO: OrderKey = (0, "", 0)
SEQUENCE_FIELDS: Mapping[str, tuple[str, ...]] = {  # the kinds whose entries form sequences: their main text
    "note": ("text",), "thought": ("text",), "activity": ("title", "text"),
}  # fmt: skip
NEAR_TERMS = 100  # terms an entry lends to each neighbour's near field, at most
SPLITS = 4096  # field texts whose split is remembered (`split`)


_SPLITS: dict[str, tuple[str, bool]] = {}


def split(text: str) -> tuple[str, bool]:
    """A field's text as index terms (`tokens.term_string`) and whether it states a time, remembered for the
    last SPLITS texts: a session's task, tags and titles repeat from entry to entry."""
    found = _SPLITS.get(text)
    if found is None:
        if len(_SPLITS) >= SPLITS:
            _SPLITS.clear()
        words = WORD.findall(text)
        found = _SPLITS[text] = (term_string(words), has_time_words(text, words))
    return found


def repeats(name: str, scale: int) -> int:
    """How many times the words of field `name` are counted at this weight scale."""
    return round(FIELD_WEIGHTS.get(name.split(".", 1)[0], 1) * scale)


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
    # derived at each change, for fast filtering and ranking
    project: str = ""
    latest: OrderKey = ZERO
    latest_ms: int = 0
    expires_ms: int | None = None
    at_ms: int = 0  # created: its latest put
    group: str = ""  # its session or thread ("" none)
    speaker: str = ""  # its agent's first word, lower-cased
    near: tuple[str, str] = ("", "")  # the ids of the entries before and after it in its sequence ("": none)
    near_terms: tuple[str, str] | None = field(default=None, compare=False, repr=False)  # theirs, as indexed
    # computed when first asked for, until the fields change
    own: str | None = field(default=None, compare=False, repr=False)
    stated_time: bool | None = field(default=None, compare=False, repr=False)
    # of its main fields (SEQUENCE_FIELDS), split for `own_terms`: name -> (its text, its term string, whether
    # it states a time), so writing it splits them not again (`disk._indexed`)
    mains: dict[str, tuple[str, str, bool]] | None = field(default=None, compare=False, repr=False)

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

    @property
    def member(self) -> bool:
        """In a sequence: a visible note, thought or captured turn of a session."""
        return bool(self.group) and self.kind in SEQUENCE_FIELDS and self.visible

    def terms(self, max_chars: int = 20_000) -> set[str]:
        """Every index term of its fields (each cut to `max_chars`) and of its neighbour field."""
        found: set[str] = set()
        for _, (_, text) in self.fields.items():
            for word in set(WORD.findall(text[:max_chars])):
                found.update(word_terms(word))
        for side in self.near_terms or ():
            found.update(side.split())
        return found

    def own_terms(self) -> str:
        """The terms this entry lends its neighbours' near fields (its main text, bounded)."""
        if self.own is None:
            self.mains = {}
            for name in SEQUENCE_FIELDS.get(self.kind, ()):
                text = self.text(name)
                words = WORD.findall(text)  # (an entry's main text seldom repeats: not `split`)
                self.mains[name] = (text, term_string(words), has_time_words(text, words))
            self.own = own_terms(terms for _, terms, _ in self.mains.values())
        return self.own

    @property
    def timely(self) -> bool:
        """Whether it states a time (a date, a weekday, "tomorrow" ...)."""
        if self.stated_time is None:
            self.stated_time = any(has_time_words(text) for _, (_, text) in self.fields.items())
        return self.stated_time


@dataclass
class Hit:
    doc: Doc
    score: float
    weak: bool = False  # not a strong match: only the closest there is (`ranking.weak_flags`)
    beside: tuple[str, ...] = ()  # query terms only its neighbour field holds, when its own text holds none


def _merge(target: dict[str, tuple[OrderKey, Any]], values: Mapping[str, Any], key: OrderKey) -> None:
    for name, value in values.items():
        current = target.get(name)
        if current is None or current[0] < key:
            target[name] = (key, value)


def _drop_older(target: dict[str, tuple[OrderKey, Any]], floor: OrderKey) -> None:
    for name in [name for name, (key, _) in target.items() if key < floor]:
        del target[name]


def weighted_terms(fields: Iterable[tuple[str, str]], scale: int) -> dict[str, int]:
    """Term -> sum over fields of its count times the field's repeats (BM25F's weighted tf)."""
    weights: dict[str, int] = {}
    get = weights.get
    for name, text in fields:
        if not text:
            continue
        weight = repeats(name, scale)
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
        doc.at_ms = stamp_ms(doc.put_key[0])  # derived from the put key, which changes here even when nothing else does
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
    _derive_more(doc)
    return doc


def own_terms(strings: Iterable[str]) -> str:
    """The first NEAR_TERMS terms of the term strings of an entry's main fields (`tokens.term_string`)."""
    return " ".join(" ".join(strings).split()[:NEAR_TERMS])


def derive(doc: Doc, timely: bool | None = None) -> None:
    """The fields kept for fast filtering and ranking, from the document's state (`timely` when known)."""
    project = doc.value("project")
    doc.project = project if isinstance(project, str) else ""
    doc.latest = max([key for key, _ in doc.fields.values()] + [key for key, _ in doc.meta.values()], default=ZERO)
    doc.latest_ms = stamp_ms(doc.latest[0])
    expires = doc.value("expires_ms")
    doc.expires_ms = expires if isinstance(expires, int) and not isinstance(expires, bool) else None
    _derive_more(doc, timely)


def _derive_more(doc: Doc, timely: bool | None = None) -> None:
    doc.own, doc.stated_time, doc.mains = None, timely, None
    doc.at_ms = stamp_ms(doc.put_key[0])
    doc.group = group_of(doc)
    agent = doc.value("agent")
    doc.speaker = speaker_of(agent) if isinstance(agent, str) else ""


def group_of(doc: Doc) -> str:
    """The session (project and session id) or thread a document belongs to; "" for none."""
    session, thread = doc.value("session_id"), doc.value("thread_id")
    if isinstance(session, str) and session:
        return f"s\x1f{doc.project}\x1f{session}"
    if isinstance(thread, str) and thread:
        return f"t\x1f{thread}"
    return f"t\x1f{doc.ref}" if doc.kind == "thread" else ""
