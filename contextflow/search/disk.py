"""The search index on disk: a tantivy index in the machine-local state folder (`derived.py` keeps it current).

One tantivy document per search document (`<kind>:<ref>`, as `docs.Doc`), holding:
- `id`, `kind`, `project` (`=` + project, `=` alone for none), `agent` (its `ranking.agent_terms`):
  untokenized terms, so a lookup, a delete, the kind filter and a named speaker are term queries on
  the inverted index;
- `body`: the document's terms, each field's repeated `docs.repeats` times (weight x scale), so
  tantivy's BM25 over one field equals the in-memory index's BM25F (same k1, b and idf; tantivy
  stores lengths in one byte, exact up to 40 terms and within a few percent above);
- `near`: the terms of the entries before and after it in its session (the neighbour field), repeated
  `scale` times, scored as its own field at `ranking.NEAR_WEIGHT`;
- `pbody`, `pnear`: the same terms qualified by the project (`web|token`, `|token` without one): the
  project filter is a disjunction of these terms, boosted to their idf among the documents it searches
  (`DiskIndex._within`);
- `seq` and `order` (a session's id and the entry's creation stamp) on the entries of a sequence, so
  the sink finds an entry's neighbours with two small queries; fast fields (`FAST`) with what the
  ranking's levers read for a pool of candidates without decoding them;
- `state`: the document's whole state (fields and metadata with their order keys), and `links`: the
  ids of its neighbours, both stored, so an update merges into it (last writer wins, as `docs.merge`)
  and a hit renders from it. The near field's terms are not stored (they would triple the stored
  text): the sink computes them again from the neighbours when an entry must be rewritten.

A deleted document keeps its state (an older put arriving later must stay hidden) and nothing else.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import threading
import time
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import tantivy

from contextflow.core import jsonio
from contextflow.core.events import OrderKey
from contextflow.search import ranking
from contextflow.search.docs import SEQUENCE_FIELDS, Doc, Hit, derive, own_terms, repeats, split
from contextflow.search.ranking import Candidate

WRITER_HEAP = 64_000_000
M_ARENA_MAX = -8  # glibc's mallopt parameter
WRITER_WAIT_S = 60.0  # how long a writer waits for another's merges to end (tantivy's writer lock)
ENGINE = str(getattr(tantivy, "__version__", "tantivy"))  # part of the derived state's version key
FAST = ("tie", "at", "latest", "expires", "group", "speaker", "timely")
LAST_STAMP = (1 << 64) - 1


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    for name in ("id", "kind", "project", "agent", "seq"):
        builder.add_text_field(name, tokenizer_name="raw", index_option="basic")
    for name in ("body", "pbody", "near", "pnear"):
        builder.add_text_field(name, tokenizer_name="whitespace", index_option="freq")
    builder.add_unsigned_field("order", fast=True)
    for name in FAST:
        builder.add_unsigned_field(name, fast=True)
    builder.add_bytes_field("state", stored=True)
    builder.add_bytes_field("links", stored=True)
    return builder.build()


def _key(value: Any) -> OrderKey:
    return (int(value[0]), str(value[1]), int(value[2]))


def encode_doc(doc: Doc) -> bytes:
    """A document's state as stored: each field's and value's order key only when it is not the latest
    put's (almost always it is: written once, the key said once instead of once a field)."""
    put = doc.put_key
    fields = {name: text if key == put else [key, text] for name, (key, text) in doc.fields.items()}
    meta = {name: value for name, (_, value) in doc.meta.items()}
    keys = {name: key for name, (key, _) in doc.meta.items() if key != put}
    return jsonio.dumps([doc.kind, doc.ref, put, doc.delete_key, fields, meta, keys])


def decode_doc(raw: bytes, links: bytes | None = None, timely: bool | None = None) -> Doc:
    """A document from its stored state and links (`timely`, when the caller read it from the index)."""
    kind, ref, put_key, delete_key, fields, meta, keys = jsonio.loads(raw)
    put = _key(put_key)
    doc = Doc(f"{kind}:{ref}", kind, ref, -1, put_key=put, delete_key=_key(delete_key))
    doc.fields = {  # (a field's text is a string: a list is [key, text])
        name: (put, entry) if isinstance(entry, str) else (_key(entry[0]), entry[1]) for name, entry in fields.items()
    }
    doc.meta = {name: (_key(keys[name]) if name in keys else put, value) for name, value in meta.items()}
    derive(doc, timely)
    if links:
        before, after = jsonio.loads(links)
        doc.near = (str(before), str(after))
    elif not doc.member:
        doc.near_terms = ("", "")
    return doc


def body(doc: Doc, scale: int) -> str:
    """The document's terms, each field's repeated `repeats` times (so each term's count is its
    weighted frequency, `docs.weighted_terms`); empty when the document is not visible."""
    return _indexed(doc, scale)[0] if doc.visible else ""


def _indexed(doc: Doc, scale: int) -> tuple[str, str, bool]:
    """Its body, its own terms (what it lends its neighbours) and whether it states a time: one pass."""
    parts, own, timely = [], [], False
    mains = SEQUENCE_FIELDS.get(doc.kind, ()) if doc.own is None else ()  # the sink may have them already
    done = doc.mains or {}  # (the sink split them for their neighbours: `Doc.own_terms`)
    for name, text in doc.field_texts():
        if text:
            found = done.get(name)
            if found is not None and found[0] is text:
                terms, stated = found[1], found[2]
                timely = timely or stated
            else:
                terms, stated = split(text)
                timely = timely or stated
            parts.append(terms * repeats(name, scale))
            if name in mains:
                own.append(terms)
    return "".join(parts), own_terms(own) if doc.own is None else doc.own, timely


class Row(NamedTuple):
    """A document ready to write: its state and index values."""

    doc_id: str
    kind: str
    project: str
    state: bytes
    body: str
    agent: tuple[str, ...]  # ranking.agent_terms of its agent
    group: str  # its session or thread
    key: OrderKey | None  # its creation key when it is a member of a sequence
    own: str  # the terms it lends its neighbours (members only)
    near: tuple[str, str]  # its neighbours' terms (the near field)
    links: tuple[str, str]  # its neighbours' ids
    at: int
    latest: int
    expires: int
    speaker: int
    timely: bool


def row(doc: Doc, scale: int) -> Row:
    visible, member = doc.visible, doc.member
    agent = doc.value("agent")
    text, own, timely = _indexed(doc, scale) if visible else ("", "", False)
    if doc.own is None and member:
        doc.own = own
    return Row(
        doc.doc_id, doc.kind, doc.project, encode_doc(doc), text,
        ranking.agent_terms(agent) if visible and isinstance(agent, str) else (), doc.group,
        doc.put_key if member else None, own if member else "", (doc.near_terms or ("", "")) if member else ("", ""),
        doc.near if member else ("", ""),
        doc.at_ms, doc.latest_ms, doc.expires_ms or 0, ranking.stable_hash(doc.speaker) if doc.speaker else 0, timely,
    )  # fmt: skip


def near_text(item: Row, scale: int) -> str:
    """The near field of a row: its neighbours' terms, each followed by a space, `scale` times."""
    near = " ".join(side for side in item.near if side)
    return (near + " ") * scale if near else ""


def project_term(project: str) -> str:
    return "=" + project


def qualified(project: str, term: str) -> str:
    """A term of `pbody` or `pnear`: the term within one project (`|term` for documents without one)."""
    return f"{project}|{term}"


def _scoped(project: str, terms: str) -> str:
    """`terms` (each followed by a space) as terms of that project."""
    prefix = qualified(project, "")
    return prefix + terms.rstrip(" ").replace(" ", " " + prefix) + " " if terms.strip() else ""


class DiskIndex:
    """A reader (any number of processes) and, under `derived.py`'s lock, the one writer."""

    def __init__(self, folder: Path, scale: int | None = None) -> None:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.folder = folder
        self.scale = ranking.weight_scale() if scale is None else scale
        self.schema = _schema()
        self.index = tantivy.Index(self.schema, str(folder), reuse=True)
        self._searcher: tantivy.Searcher | None = None
        self._writer: tantivy.IndexWriter | None = None
        self._merging: threading.Thread | None = None  # the last writer, ending its merges

    @staticmethod
    def exists(folder: Path) -> bool:
        return folder.is_dir() and tantivy.Index.exists(str(folder))

    def reload(self) -> None:
        """See what the writer (this process or another) committed last."""
        self.index.reload()
        self._searcher = None

    @property
    def searcher(self) -> tantivy.Searcher:
        if self._searcher is None:
            self._searcher = self.index.searcher()
        return self._searcher

    def open_searcher(self) -> None:
        """Open the searcher of the last commit now (each new segment's files), not on the next search."""
        self.searcher  # noqa: B018

    def count(self, scope: Collection[str] | None = None) -> int:
        if scope is None:
            return int(self.searcher.num_docs)
        return int(self.searcher.search(self._in_scope(scope), 1, count=True).count)  # type: ignore[attr-defined]  # (not in the stubs)

    def counted(self, scope: Collection[str] | None = None) -> int:
        """How many documents BM25's statistics count, as tantivy's own scores do: the live ones and those
        replaced or deleted whose segments have not merged yet, which `doc_freq` counts too (each document
        has one `kind` term, one `project` term), so no idf of the two is negative. `count` is the live ones."""
        from contextflow.search.extractors import search_kinds

        if scope is None:
            found = sum(int(self.searcher.doc_freq("kind", kind)) for kind in search_kinds())
        else:
            found = sum(int(self.searcher.doc_freq("project", project_term(p))) for p in ranking.scoped(scope))
        return max(found, self.count(scope))

    def _in_scope(self, scope: Collection[str]) -> tantivy.Query:
        return tantivy.Query.term_set_query(self.schema, "project", [project_term(p) for p in ranking.scoped(scope)])

    # -- reading ---------------------------------------------------------------------------

    def get(self, doc_id: str) -> Doc | None:
        """The committed state of one document, or None."""
        query = tantivy.Query.term_query(self.schema, "id", doc_id)
        hits = self.searcher.search(query, 1, count=False).hits
        return self._load(hits[0][1]) if hits else None

    def _load(self, address: tantivy.DocAddress, timely: bool | None = None) -> Doc:
        stored = self.searcher.doc(address)
        raw, links = stored.get_first("state"), stored.get_first("links")
        if not isinstance(raw, bytes):
            raise ValueError("a document of the search index has no state")
        return decode_doc(raw, links if isinstance(links, bytes) else None, timely)

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
        """The `size` best raw BM25 scores for `terms` (body, and the near field at NEAR_WEIGHT when
        `near`) as the ranking's candidates (`ranking.Searchable.pool`): all index filters, none applied
        afterwards."""
        query_, schema, should, must = tantivy.Query, self.schema, tantivy.Occur.Should, tantivy.Occur.Must
        fields = (("body", 1.0), ("near", ranking.NEAR_WEIGHT)) if near else (("body", 1.0),)
        text = []
        for name, weight in fields:
            if project is not None or scope is not None:
                text += [(should, clause) for clause in self._within(name, terms, project, weight, scope)]
            elif weight == 1.0:
                text += [(should, query_.term_query(schema, name, t)) for t in terms]
            else:
                text += [(should, query_.boost_query(query_.term_query(schema, name, t), weight)) for t in terms]
        if not text:
            return []
        filters = []
        if wanted := sorted(set(kinds)):
            filters.append(query_.term_set_query(schema, "kind", wanted))
        if speakers:
            filters.append(query_.term_set_query(schema, "agent", list(speakers)))
        if spans:
            filters.append(query_.boolean_query([
                (should, query_.range_query(schema, "at", tantivy.FieldType.Unsigned, lo, hi, include_upper=False))
                for lo, hi in spans
            ]))  # fmt: skip
        query = query_.boolean_query(text)
        if filters:  # (without them the query stays a disjunction of term queries: tantivy's top-k pruning)
            query = query_.boolean_query([(must, query), *((must, query_.const_score_query(f, 0.0)) for f in filters)])
        hits = self.searcher.search(query, size, count=False).hits
        addresses = [address for _, address in hits]
        values = [self.searcher.fast_field_values(name, addresses) for name in FAST]
        return [
            Candidate(float(score), int(tie or 0), int(at or 0), int(latest or 0), int(expires or 0), int(group or 0),
                      int(speaker or 0), bool(timely), address)
            for (score, address), tie, at, latest, expires, group, speaker, timely in zip(hits, *values, strict=True)
        ]  # fmt: skip

    def _within(
        self, name: str, terms: list[str], project: str | None, weight: float, scope: Collection[str] | None
    ) -> list[tantivy.Query]:
        """The terms as `p<name>` terms of the project and of no project (or of the projects a reader may
        see, `scope`), each boosted by its idf among the documents searched over its idf there: a word
        common in a project tells its documents apart less than the whole index's frequency says (the
        length normalisation still uses the whole index's average). A disjunction of term queries keeps
        tantivy's top-k pruning (block-max WAND), which a filter intersected with the terms loses."""
        searcher, query_ = self.searcher, tantivy.Query
        docs = self.counted()  # (as tantivy's scores count them)
        seen = None if scope is None else ranking.scoped(scope)
        scopes = list(dict.fromkeys((project, ""))) if project is not None else []
        if seen is not None:
            scopes = [p for p in scopes if p in seen] if project is not None else seen
        if not scopes:
            return []
        counted = sum(int(searcher.doc_freq("project", project_term(p))) for p in scopes)  # (as `counted`)
        found = []
        for term in terms:
            frequencies = [int(searcher.doc_freq("p" + name, qualified(p, term))) for p in scopes]
            within = sum(frequencies)
            for each, local in zip(scopes, frequencies, strict=True):
                if local:
                    boost = weight * ranking.idf(within, counted) / ranking.idf(local, docs)
                    term_query = query_.term_query(self.schema, "p" + name, qualified(each, term))
                    found.append(query_.boost_query(term_query, boost))
        return found

    def hits(self, ranked: list[tuple[float, Candidate]]) -> list[Hit]:
        return [Hit(self._load(candidate.handle, candidate.timely), score) for score, candidate in ranked]

    def knows_speaker(self, word: str, scope: Collection[str] | None = None) -> bool:
        if scope is None:
            return bool(self.searcher.doc_freq("agent", word))
        must, query_ = tantivy.Occur.Must, tantivy.Query
        query = query_.boolean_query(
            [(must, query_.term_query(self.schema, "agent", word)), (must, self._in_scope(scope))]
        )
        return bool(self.searcher.search(query, 1, count=True).count)  # type: ignore[attr-defined]

    def near_holds(self, asked: set[str], hits: list[Hit]) -> list[set[str]]:
        """The asked terms each hit's neighbour field holds (its terms are not stored: one small query a term)."""
        found: list[set[str]] = [set() for _ in hits]
        if not hits:
            return found
        query_, schema, must = tantivy.Query, self.schema, tantivy.Occur.Must
        ids = query_.term_set_query(schema, "id", [hit.doc.doc_id for hit in hits])
        where = {ranking.stable_hash(hit.doc.doc_id): n for n, hit in enumerate(hits)}
        for term in sorted(asked):
            query = query_.boolean_query([(must, query_.term_query(schema, "near", term)), (must, ids)])
            addresses = [address for _, address in self.searcher.search(query, len(hits), count=False).hits]
            for tie in self.searcher.fast_field_values("tie", addresses) if addresses else ():
                found[where[int(tie or 0)]].add(term)
        return found

    def frequency(self, term: str, scope: Collection[str] | None = None) -> int:
        """In how many documents (within `scope`'s projects) the term is, in their text (0 also when only
        in neighbour fields: then 1)."""
        if scope is None:
            return int(self.searcher.doc_freq("body", term)) or min(1, int(self.searcher.doc_freq("near", term)))
        body, near = (
            sum(int(self.searcher.doc_freq(name, qualified(p, term))) for p in ranking.scoped(scope))
            for name in ("pbody", "pnear")
        )
        return body or min(1, near)

    def all_docs(self) -> list[Doc]:
        """Every document's state, deleted ones included (for tests and `doctor`; reads them all)."""
        count = self.count()
        hits = self.searcher.search(tantivy.Query.all_query(), max(count, 1), count=False).hits if count else []
        return [self._load(address) for _, address in hits]

    # -- sequences (for the sink) -----------------------------------------------------------

    def _stamped(self, group: str, low: int, high: int) -> list[tuple[int, tantivy.DocAddress]]:
        """(creation stamp, address) of the entries of a sequence created at stamps low..high (both included)."""
        query_ = tantivy.Query
        query = query_.boolean_query([
            (tantivy.Occur.Must, query_.term_query(self.schema, "seq", group)),
            (tantivy.Occur.Must, query_.range_query(self.schema, "order", tantivy.FieldType.Unsigned, low, high)),
        ])  # fmt: skip
        limit = 64
        while len(hits := self.searcher.search(query, limit, count=False).hits) == limit:
            limit *= 4
        addresses = [address for _, address in hits]
        stamps = self.searcher.fast_field_values("order", addresses) if addresses else []
        return [(int(stamp or 0), address) for stamp, address in zip(stamps, addresses, strict=True)]

    def members(self, group: str, low: int, high: int) -> list[Doc]:
        """The entries of a sequence created at stamps low..high (both included)."""
        return [self._load(address) for _, address in self._stamped(group, low, high)]

    def around(self, group: str, stamps: list[int]) -> tuple[list[Doc], list[int]]:
        """For the given creation stamps of a sequence (sorted): the entries on disk at those stamps and
        at the nearest stamps on both sides of each, decoded, and the stamps of the other entries in
        between (whose neighbours these stamps cannot change)."""
        found = self._stamped(group, stamps[0], stamps[-1])
        held = sorted({stamp for stamp, _ in found})
        wanted: set[int] = set()
        for stamp in stamps:
            at = bisect.bisect_left(held, stamp)
            if at > 0:
                wanted.add(held[at - 1])
            if at < len(held) and held[at] == stamp:
                wanted.add(stamp)
                at += 1
            if at < len(held):
                wanted.add(held[at])
        return ([self._load(address) for stamp, address in found if stamp in wanted],
                [stamp for stamp, _ in found if stamp not in wanted])  # fmt: skip

    def beside(self, group: str, stamp: int, after: bool) -> list[Doc]:
        """The entries of a sequence at the nearest stamp before (or after) `stamp`: its neighbours there."""
        query_ = tantivy.Query
        low, high = (stamp + 1, LAST_STAMP) if after else (0, stamp - 1)
        if low > high:
            return []
        query = query_.boolean_query([
            (tantivy.Occur.Must, query_.term_query(self.schema, "seq", group)),
            (tantivy.Occur.Must, query_.range_query(self.schema, "order", tantivy.FieldType.Unsigned, low, high)),
        ])  # fmt: skip
        order = tantivy.Order.Asc if after else tantivy.Order.Desc
        hits = self.searcher.search(query, 1, count=False, order_by_field="order", order=order).hits
        if not hits:
            return []
        nearest = int(self.searcher.fast_field_values("order", [hits[0][1]])[0] or 0)
        return self.members(group, nearest, nearest)

    # -- writing (the caller holds derived.py's lock) ----------------------------------------

    def _writing(self) -> tantivy.IndexWriter:
        if self._writer is None:
            self.settle()  # this process's last writer holds tantivy's writer lock until its merges end
            self._writer = _writer(self.index)
        return self._writer

    def write(self, docs: Iterable[tuple[Doc, bool]]) -> None:
        """Replace each document (`known`: it may already be on disk, so delete it first)."""
        self.write_rows((row(doc, self.scale), known) for doc, known in docs)

    def write_rows(self, rows: Iterable[tuple[Row, bool]]) -> None:
        writer = self._writing()
        for item, known in rows:
            if known:
                writer.delete_documents_by_term("id", item.doc_id)
            self._add(item)

    def _add(self, item: Row) -> None:
        fields: dict[str, Any] = {
            "id": item.doc_id, "kind": item.kind, "project": project_term(item.project), "state": item.state,
            "tie": ranking.stable_hash(item.doc_id), "at": item.at, "latest": item.latest, "expires": item.expires,
            "group": ranking.stable_hash(item.group) if item.group else 0, "speaker": item.speaker,
            "timely": int(item.timely),
        }  # fmt: skip
        if item.body:
            fields["body"], fields["pbody"] = item.body, _scoped(item.project, item.body)
        if near := near_text(item, self.scale):
            fields["near"], fields["pnear"] = near, _scoped(item.project, near)
        if item.agent:
            fields["agent"] = list(item.agent)
        if item.key is not None:
            fields |= {"seq": item.group, "order": item.key[0], "links": jsonio.dumps(list(item.links))}
        (self._writer or self._writing()).add_document(tantivy.Document.from_dict(fields, self.schema))

    def commit(self, last: bool = True) -> None:
        """Make what was written visible to every reader (atomic: all of it or, after a crash, none).
        Not `last` (a build going on): the writer stays open and merges go on beside the next documents."""
        if self._writer is None:
            return
        self._writer.commit()
        if last:  # the merges it started end in the background (a search right after a write waits not)
            writer, self._writer = self._writer, None
            self._merging = threading.Thread(target=_end_merges, args=(writer,), name="search-merges")
            self._merging.start()  # (not a daemon: a process ends once they are done)
        self.reload()

    def settle(self) -> None:
        """Wait for the merges of this process's last commit to end."""
        if self._merging is not None:
            self._merging.join()
            self._merging = None

    def rollback(self) -> None:
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.rollback()


@functools.cache
def _few_arenas() -> None:
    """Cap glibc's malloc arenas at two. It gives each thread that contends for memory an arena of its own
    (up to eight per core) and keeps what was freed in it: a server whose searches each commit starts a
    writer's threads every time, and grew from 80 to 235 MB in 100 appends and searches (100 MB capped)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):  # not glibc (musl, macOS): nothing to cap
        ctypes.CDLL(None).mallopt(M_ARENA_MAX, 2)


def _writer(index: tantivy.Index) -> tantivy.IndexWriter:
    """A writer, once another process's merges let go of tantivy's writer lock (a few ms to seconds)."""
    _few_arenas()
    deadline, pause = time.monotonic() + WRITER_WAIT_S, 0.002
    while True:
        try:
            return index.writer(heap_size=WRITER_HEAP, num_threads=1)
        except ValueError as exc:
            if "LockBusy" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _end_merges(writer: tantivy.IndexWriter) -> None:
    """Let a committed writer's merges end, then drop it. A merge that fails (its folder rebuilt or
    deleted meanwhile) leaves its segments unmerged: what was committed stays as it is."""
    try:
        writer.wait_merging_threads()
    except BaseException:  # (pyo3's PanicException too) nothing committed depends on it
        return
