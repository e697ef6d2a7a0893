"""The search index on disk: a tantivy index in the machine-local state folder (`derived.py` keeps it current).

One tantivy document per search document (`<kind>:<ref>`, as `index.Doc`), holding:
- `id`, `kind`, `project` (`=` + project, `=` alone for none): untokenized terms, so a lookup,
  a delete and the kind filter are term queries on the inverted index;
- `body`: the document's terms, each field's repeated by its weight (as `index.weighted_terms`),
  so tantivy's BM25 over one field equals the in-memory index's BM25F (same k1, b and idf;
  tantivy stores lengths in one byte, exact up to 40 terms and within a few percent above);
- `pbody`: the same terms qualified by the project (`web|token`, `|token` without one): the project
  filter is a disjunction of these terms, boosted back to the global idf (`DiskIndex._within`);
- `state`: the document's whole state (fields and metadata with their order keys), stored, so an
  update merges into it (last writer wins, as `index.merge`) and a hit renders from it.

A deleted document keeps its state (an older put arriving later must stay hidden) and no body.
Weights are whole repeats: `WEIGHT_SCALE` (1 now) is how many repeats weight 1 gets, so a scale of
2 allows half weights.
"""

from __future__ import annotations

import heapq
import math
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import tantivy

from contextflow.core.events import OrderKey
from contextflow.search.index import FIELD_WEIGHTS, Doc, Hit, derive
from contextflow.search.tokens import WORD, word_terms

WEIGHT_SCALE = 1
WRITER_HEAP = 64_000_000
ENGINE = str(getattr(tantivy, "__version__", "tantivy"))  # part of the derived state's version key


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    for name in ("id", "kind", "project"):
        builder.add_text_field(name, tokenizer_name="raw", index_option="basic")
    for name in ("body", "pbody"):
        builder.add_text_field(name, tokenizer_name="whitespace", index_option="freq")
    builder.add_bytes_field("state", stored=True)
    return builder.build()


def _key(value: Any) -> OrderKey:
    return (int(value[0]), str(value[1]), int(value[2]))


def encode_doc(doc: Doc) -> bytes:
    fields = {name: [key, text] for name, (key, text) in doc.fields.items()}
    meta = {name: [key, value] for name, (key, value) in doc.meta.items()}
    return orjson.dumps([doc.kind, doc.ref, doc.put_key, doc.delete_key, fields, meta])


def decode_doc(raw: bytes) -> Doc:
    kind, ref, put_key, delete_key, fields, meta = orjson.loads(raw)
    doc = Doc(f"{kind}:{ref}", kind, ref, -1, put_key=_key(put_key), delete_key=_key(delete_key))
    doc.fields = {name: (_key(key), text) for name, (key, text) in fields.items()}
    doc.meta = {name: (_key(key), value) for name, (key, value) in meta.items()}
    derive(doc)
    return doc


class _Terms(dict[str, str]):
    """A word -> its index terms, each followed by a space (`tokens.word_terms`), memoized."""

    def __missing__(self, word: str) -> str:
        if len(self) > 1 << 18:
            self.clear()
        found = self[word] = "".join(term + " " for term in word_terms(word))
        return found


_TERMS = _Terms()


def body(doc: Doc) -> str:
    """The document's terms, each field's repeated by its weight (so each term's count is its
    weighted frequency, `index.weighted_terms`); empty when the document is not visible."""
    if not doc.visible:
        return ""
    parts = []
    for name, text in doc.field_texts():
        if text:
            weight = FIELD_WEIGHTS.get(name.split(".", 1)[0], 1) * WEIGHT_SCALE
            parts.append("".join(map(_TERMS.__getitem__, WORD.findall(text))) * weight)
    return "".join(parts)


class Prepared(NamedTuple):
    """A document's tantivy fields, ready to write (a build's workers make them)."""

    doc_id: str
    kind: str
    project: str  # `project_term`
    state: bytes
    body: str
    pbody: str


def project_term(project: str) -> str:
    return "=" + project


def prepare(doc: Doc) -> Prepared:
    terms = body(doc)
    prefix = qualified(doc.project, "")
    scoped = prefix + terms.rstrip(" ").replace(" ", " " + prefix) if terms else ""
    return Prepared(doc.doc_id, doc.kind, project_term(doc.project), encode_doc(doc), terms, scoped)


def qualified(project: str, term: str) -> str:
    """A term of `pbody`: the term within one project (`|term` for documents without one)."""
    return f"{project}|{term}"


def idf(docs: int, having: int) -> float:
    """BM25's idf, as tantivy computes it."""
    return math.log(1.0 + (docs - having + 0.5) / (having + 0.5))


class DiskIndex:
    """A reader (any number of processes) and, under `derived.py`'s lock, the one writer."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.folder = folder
        self.schema = _schema()
        self.index = tantivy.Index(self.schema, str(folder), reuse=True)
        self._searcher: tantivy.Searcher | None = None
        self._writer: tantivy.IndexWriter | None = None

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

    def count(self) -> int:
        return int(self.searcher.num_docs)

    # -- reading ---------------------------------------------------------------------------

    def get(self, doc_id: str) -> Doc | None:
        """The committed state of one document, or None."""
        query = tantivy.Query.term_query(self.schema, "id", doc_id)
        hits = self.searcher.search(query, 1, count=False).hits
        return self._load(hits[0][1]) if hits else None

    def _load(self, address: tantivy.DocAddress) -> Doc:
        raw = self.searcher.doc(address).get_first("state")
        if not isinstance(raw, bytes):
            raise ValueError("a document of the search index has no state")
        return decode_doc(raw)

    def search(
        self, terms: list[str], limit: int, kinds: Iterable[str], project: str | None
    ) -> list[tuple[float, Doc]]:
        """The `limit` best (BM25 score, document) for `terms`, within the kinds (none: all) and the
        project (None: all; documents without a project are in every project), as index filters."""
        query_ = tantivy.Query
        schema = self.schema
        if project is None:
            should = [query_.term_query(schema, "body", term) for term in terms]
        else:
            should = self._within(terms, project)
        if not should:
            return []
        text = query_.boolean_query([(tantivy.Occur.Should, clause) for clause in should])
        clauses = [(tantivy.Occur.Must, text)]
        wanted = sorted(set(kinds))
        if wanted:
            kind = query_.term_set_query(schema, "kind", wanted)
            clauses.append((tantivy.Occur.Must, query_.const_score_query(kind, 0.0)))
        query = query_.boolean_query(clauses) if len(clauses) > 1 else text
        hits = self.searcher.search(query, limit, count=False).hits
        return [(float(score), self._load(address)) for score, address in hits]

    def _within(self, terms: list[str], project: str) -> list[tantivy.Query]:
        """The terms as `pbody` terms of the project and of no project, each boosted by its global idf
        over its idf there: the scores are the unfiltered ones, and a disjunction of term queries keeps
        tantivy's top-k pruning (block-max WAND), which a filter intersected with the terms loses."""
        searcher, query_ = self.searcher, tantivy.Query
        docs = int(searcher.num_docs)
        found = []
        for term in terms:
            everywhere = int(searcher.doc_freq("body", term))
            for scope in dict.fromkeys((project, "")):
                name = qualified(scope, term)
                local = int(searcher.doc_freq("pbody", name))
                if local:
                    boost = idf(docs, everywhere) / idf(docs, local)
                    found.append(query_.boost_query(query_.term_query(self.schema, "pbody", name), boost))
        return found

    def all_docs(self) -> list[Doc]:
        """Every document's state, deleted ones included (for tests and `doctor`; reads them all)."""
        count = self.count()
        hits = self.searcher.search(tantivy.Query.all_query(), max(count, 1), count=False).hits if count else []
        return [self._load(address) for _, address in hits]

    # -- writing (the caller holds derived.py's lock) ----------------------------------------

    def _writing(self) -> tantivy.IndexWriter:
        if self._writer is None:
            self._writer = self.index.writer(heap_size=WRITER_HEAP, num_threads=1)
        return self._writer

    def write(self, docs: Iterable[tuple[Doc, bool]]) -> None:
        """Replace each document (`known`: it may already be on disk, so delete it first)."""
        writer = self._writing()
        for doc, known in docs:
            if known:
                writer.delete_documents_by_term("id", doc.doc_id)
            self._add(prepare(doc))

    def write_prepared(self, docs: Iterable[Prepared]) -> None:
        """Add documents known to be new."""
        for doc in docs:
            self._add(doc)

    def _add(self, doc: Prepared) -> None:
        writer = self._writer or self._writing()
        if doc.body:
            writer.add_document(
                tantivy.Document(
                    id=doc.doc_id, kind=doc.kind, project=doc.project, state=doc.state, body=doc.body, pbody=doc.pbody
                )
            )
        else:
            writer.add_document(tantivy.Document(id=doc.doc_id, kind=doc.kind, project=doc.project, state=doc.state))

    def commit(self, last: bool = True) -> None:
        """Make what was written visible to every reader (atomic: all of it or, after a crash, none).
        Not `last` (a build going on): the writer stays open and merges go on beside the next documents."""
        if self._writer is None:
            return
        self._writer.commit()
        if last:
            writer, self._writer = self._writer, None
            writer.wait_merging_threads()  # small merges now keep the segment count (and query cost) low
        self.reload()

    def rollback(self) -> None:
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.rollback()

    def size_bytes(self) -> int:
        total = 0
        for entry in os.scandir(self.folder):
            if entry.is_file(follow_symlinks=False):
                total += entry.stat().st_size
        return total


def top(
    index: DiskIndex,
    terms: list[str],
    k: int,
    factor: Callable[[Doc], float],
    kinds: Iterable[str],
    project: str | None,
) -> list[Hit]:
    """The `k` best documents by BM25 times `factor(doc)` (0: leave out, else at most 1: recency,
    expiry), as `SearchIndex.search`: the pool of best raw scores widens until no document outside
    it could win. Kinds and project are filters of the index query itself."""
    if k < 1 or not terms:
        return []
    kinds = tuple(kinds)
    pool = 4 * k
    while True:
        found = index.search(terms, pool, kinds, project)
        finals = [(raw * weight, doc.doc_id, doc) for raw, doc in found if (weight := factor(doc)) > 0]
        best = heapq.nlargest(k, finals, key=lambda item: (item[0], item[1]))
        if len(found) < pool or (len(best) == k and best[-1][0] >= found[-1][0]):
            return [Hit(doc, score) for score, _, doc in best]
        pool *= 4
