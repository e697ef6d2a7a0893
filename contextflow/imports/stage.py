"""What the planner of a graph import needs of every item, kept on disk so memory stays bounded.

A reader yields items one at a time (`model.Item`); `Stage` keeps them in a temporary SQLite file in the
state folder (`import-stage/`, removed when the import ends; one left by a killed import is removed by the
next), a chunk at a time:

- a node once per key, where the key first appeared, with the last record given for it (a key given twice:
  the last one counts, as before), its derived ids and source version, and its `graph.node` data already
  checked and redacted (or why it cannot be stored);
- every edge (merged by ends and type when planned), tombstones, and claude-mem's session groups.

Text that is stored as it was read (keys, relation names, errors naming a key) is sealed with a key that
only this process holds, so nothing readable of the source lands on disk unredacted.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
from collections import Counter
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import Any, NamedTuple

from contextflow.core import hashing, jsonio
from contextflow.core.errors import InputError
from contextflow.core.ids import derived_id
from contextflow.core.private import stripped_encoded
from contextflow.graph.writes import node_item
from contextflow.imports.model import Deleted, EdgeRecord, GroupEdge, Item, Member, NodeRecord, Skipped

FOLDER = "import-stage"
CHUNK = 2000
VERSION_KEY = "source_version"  # in graph model.UNSEARCHED_METADATA: kept on the node, not in the search index

_SCHEMA = """
CREATE TABLE node(nid TEXT, version TEXT, upd TEXT, tag TEXT, data BLOB, error BLOB, file INT, as_is INT);
CREATE TABLE edge(snid TEXT, tnid TEXT, type TEXT, ends BLOB, file INT);
CREATE TABLE gone(nid TEXT, del TEXT, label BLOB, file INT);
CREATE TABLE member(grp BLOB, tnid TEXT, tgt BLOB);
CREATE TABLE group_edge(grp BLOB, snid TEXT, src BLOB, type TEXT, file INT);
"""


# (id, source version, update id, tag id, data or None, error, file, and the data's JSON when a staged batch
# may store it as it is: it holds no `<private>` text to remove; None otherwise)
NodeRow = tuple[str, str, str, str, dict[str, Any] | None, str, int, bytes | None]


class EdgeRow(NamedTuple):
    record: EdgeRecord  # its relation names merged, sorted
    source: str  # node ids
    target: str
    source_here: bool  # the end is a node of this import
    target_here: bool


def node_id(fmt: str, key: str) -> str:
    return derived_id(fmt, "node", key)


def version(record: NodeRecord) -> str:
    raw = jsonio.dumps(
        [record.type, record.content, record.summary, sorted(record.tags), record.metadata],
        sort_keys=True,
    )
    digest = _VERSIONING.copy()  # (cheaper than a new hash told its size each time)
    digest.update(raw)
    return digest.hexdigest()


_VERSIONING = hashing.blake2b(digest_size=6)


def _encoded(data: dict[str, Any]) -> tuple[bytes, int]:
    """A node's data as JSON, and 1 when it holds no `<private>` text (`private.stripped_encoded`): a staged
    batch then stores those bytes as they are, where it would have encoded the same data again."""
    kept, body = stripped_encoded(data)
    return (body, 1) if body is not None and kept is data else (jsonio.dumps(data), 0)


def _packed(source: str, target: str, relations: str) -> str:
    """An edge's two keys and its relation names (JSON, or empty) in one text, sealed once."""
    return f"{len(source)}:{len(target)}:{source}{target}{relations}"


def _unpacked(text: str) -> tuple[str, str, str]:
    source_chars, target_chars, rest = text.split(":", 2)
    split = int(source_chars)
    end = split + int(target_chars)
    return rest[:split], rest[split:end], rest[end:]


# Nodes are appended as read (a unique index kept while a million random ids arrive costs twice the
# inserts) and a key given again is settled once everything is read: its first row (where the key first
# appeared) takes the last record given for it, and the others go.
_REPEATED = (
    "CREATE TABLE repeated AS SELECT nid, min(rowid) AS first, max(rowid) AS last FROM node"
    " GROUP BY nid HAVING count(*) > 1"
)
_TAKE_LAST = (
    "UPDATE node SET version = l.version, upd = l.upd, tag = l.tag, data = l.data, error = l.error, file = l.file,"
    " as_is = l.as_is FROM repeated r JOIN node l ON l.rowid = r.last WHERE node.rowid = r.first"
)
_DROP_LATER = (
    "DELETE FROM node WHERE rowid IN"
    " (SELECT n.rowid FROM repeated r JOIN node n ON n.nid = r.nid WHERE n.rowid != r.first)"
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _remove_stale(folder: Path) -> None:
    """Files a killed import left behind (its process is gone)."""
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            pid = entry.name.split(".", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


class Stage:
    def __init__(self, state_dir: Path, fmt: str) -> None:
        folder = state_dir / FOLDER
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        _remove_stale(folder)
        self.path = folder / f"{os.getpid()}.{secrets.token_hex(6)}.sqlite"
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        os.chmod(self.path, 0o600)
        for pragma in ("journal_mode=OFF", "synchronous=OFF", "cache_size=-4000", "temp_store=FILE"):
            self.db.execute(f"PRAGMA {pragma}")
        self.db.executescript(_SCHEMA)
        self.fmt = fmt
        self.files: list[str] = []  # file index -> its label
        self.skipped: Counter[str] = Counter()
        self.items = 0  # nodes and edges read (for progress)
        self.repeated = 0  # node records given again for a key already read
        self._pending: list[tuple[int, Item]] = []
        self._key, self._nonce = secrets.token_bytes(32), count()

    # -- sealing: text kept as read, unreadable on disk ------------------------------------

    def seal(self, text: str) -> bytes:
        raw, nonce = text.encode("utf-8", "surrogatepass"), next(self._nonce).to_bytes(8, "big")
        pad = hashing.shake_256(self._key + nonce).digest(len(raw))
        return nonce + (int.from_bytes(raw, "big") ^ int.from_bytes(pad, "big")).to_bytes(len(raw), "big")

    def unseal(self, sealed: bytes) -> str:
        nonce, body = sealed[:8], sealed[8:]
        pad = hashing.shake_256(self._key + nonce).digest(len(body))
        return (
            (int.from_bytes(body, "big") ^ int.from_bytes(pad, "big"))
            .to_bytes(len(body), "big")
            .decode("utf-8", "surrogatepass")
        )

    def _group(self, group: str) -> bytes:
        return hashing.blake2b(group.encode("utf-8", "surrogatepass"), digest_size=16, key=self._key).digest()

    # -- filling ---------------------------------------------------------------------------

    def file(self, label: str) -> int:
        self.files.append(label)
        return len(self.files) - 1

    def add(self, file: int, item: Item) -> None:
        self._pending.append((file, item))
        if len(self._pending) >= CHUNK:
            self.flush()

    def flush(self) -> None:
        from contextflow.core.secrets import scrub_items  # its patterns compile on first use

        pending, self._pending = self._pending, []
        nodes: list[tuple[int, NodeRecord, str, str]] = []
        checked: list[tuple[str, dict[str, Any]]] = []
        edges, gone, members, grouped = [], [], [], []
        for file, item in pending:
            if isinstance(item, NodeRecord):
                digest = version(item)
                metadata = {**item.metadata, VERSION_KEY: digest}
                try:
                    kind, data = node_item(
                        type=item.type,
                        content=item.content,
                        tags=item.tags,
                        metadata=metadata,
                        summary=item.summary,
                        agent=self.fmt,
                        origin=f"{self.fmt}:{item.key}",
                    )
                    error = ""
                except InputError as exc:
                    kind, data, error = "", {}, f"item {item.key!r}: {exc}"
                nodes.append((file, item, digest, error))
                checked.append((kind, data))
            elif isinstance(item, EdgeRecord):
                rels = jsonio.dumps(item.relations).decode() if item.relations else ""
                ends = self.seal(_packed(item.source, item.target, rels))
                edges.append((node_id(self.fmt, item.source), node_id(self.fmt, item.target), item.type, ends, file))
            elif isinstance(item, Deleted):
                label = self.seal(item.key)
                gone.append((node_id(self.fmt, item.key), derived_id(self.fmt, "delete", item.key), label, file))
            elif isinstance(item, Member):
                members.append((self._group(item.group), node_id(self.fmt, item.key), self.seal(item.key)))
            elif isinstance(item, GroupEdge):
                source = (node_id(self.fmt, item.source), self.seal(item.source), item.type, file)
                grouped.append((self._group(item.group), *source))
            elif isinstance(item, Skipped):
                self.skipped[item.what] += item.n
        scrubbed = scrub_items(checked)  # secrets are redacted (or refused) before the data touches disk
        rows = []
        for (file, record, digest, error), (_, data) in zip(nodes, scrubbed, strict=True):
            nid = node_id(self.fmt, record.key)
            upd = tag = None  # derived by `with_ids` from the origin (its key), for a node already stored
            if error or data.get("origin") != f"{self.fmt}:{record.key}":  # (its key redacted there)
                upd, tag = (
                    derived_id(self.fmt, "update", record.key, digest),
                    derived_id(self.fmt, "tag", record.key, digest),
                )
            body, as_is = (None, 0) if error else _encoded(data)
            rows.append((nid, digest, upd, tag, body, self.seal(error) if error else None, file, as_is))
        self.db.execute("BEGIN")
        self.db.executemany("INSERT INTO node VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        self.db.executemany("INSERT INTO edge VALUES (?, ?, ?, ?, ?)", edges)
        self.db.executemany("INSERT INTO gone VALUES (?, ?, ?, ?)", gone)
        self.db.executemany("INSERT INTO member VALUES (?, ?, ?)", members)
        self.db.executemany("INSERT INTO group_edge VALUES (?, ?, ?, ?, ?)", grouped)
        self.db.execute("COMMIT")

    def finish(self) -> None:
        """Everything read: a key given again settled, claude-mem's summaries linked to their sessions'
        observations, the indexes made."""
        self.flush()
        self.db.execute("CREATE INDEX node_nid ON node(nid)")
        self._settle_repeated()
        self.db.execute("CREATE INDEX member_grp ON member(grp)")
        grouped = self.db.execute(
            "SELECT g.snid, m.tnid, g.type, g.src, m.tgt, g.file FROM group_edge g"
            " JOIN member m ON m.grp = g.grp ORDER BY g.rowid, m.rowid"
        )
        while rows := grouped.fetchmany(CHUNK):
            edges = [
                (snid, tnid, kind, self.seal(_packed(self.unseal(src), self.unseal(tgt), "")), file)
                for snid, tnid, kind, src, tgt, file in rows
            ]
            self.db.executemany("INSERT INTO edge VALUES (?, ?, ?, ?, ?)", edges)
        self.db.execute("CREATE INDEX edge_ends ON edge(snid, tnid, type)")
        self.items = self._count("SELECT count(*) FROM node") + self._count("SELECT count(*) FROM edge")

    def _settle_repeated(self) -> None:
        """Each node key read more than once: one row, where it first appeared, with the last record given."""
        self.db.execute("BEGIN")
        self.db.execute(_REPEATED)
        if self._count("SELECT count(*) FROM repeated"):
            self.db.execute(_TAKE_LAST)
            self.repeated = self.db.execute(_DROP_LATER).rowcount
        self.db.execute("DROP TABLE repeated")
        self.db.execute("COMMIT")

    def _count(self, sql: str) -> int:
        found: int = self.db.execute(sql).fetchone()[0]
        return found

    # -- reading back, in order ------------------------------------------------------------

    def nodes(self) -> Iterator[NodeRow]:
        """A `NodeRow` per key, in first-seen order; the update and tag ids may be empty: `with_ids` gives them."""
        for nid, digest, upd, tag, body, error, file, as_is in self.db.execute("SELECT * FROM node ORDER BY rowid"):
            data = jsonio.loads(body) if body is not None else None
            shown = self.unseal(error) if error else ""
            yield nid, digest, upd or "", tag or "", data, shown, file, body if as_is else None

    def with_ids(self, row: NodeRow) -> NodeRow:
        """`row` with its update and tag ids (derived from its source version and the key in its origin)."""
        nid, digest, upd, tag, data, error, file, body = row
        if upd or data is None:
            return row
        key = str(data["origin"])[len(self.fmt) + 1 :]
        upd, tag = derived_id(self.fmt, "update", key, digest), derived_id(self.fmt, "tag", key, digest)
        return nid, digest, upd, tag, data, error, file, body

    def edges(self) -> Iterator[EdgeRow]:
        """Each edge merged by its ends and type (its relation names together), in first-seen order."""
        rows = self.db.execute(
            "SELECT g.first, e.snid, e.tnid, e.type, e.ends,"
            " EXISTS(SELECT 1 FROM node WHERE nid = e.snid), EXISTS(SELECT 1 FROM node WHERE nid = e.tnid)"
            " FROM (SELECT snid, tnid, type, min(rowid) AS first FROM edge GROUP BY snid, tnid, type) g"
            " JOIN edge e ON e.snid = g.snid AND e.tnid = g.tnid AND e.type = g.type ORDER BY g.first, e.rowid"
        )
        current: int | None = None
        names: set[str] = set()
        row: tuple[Any, ...] = ()
        for first, snid, tnid, kind, ends, source_here, target_here in rows:
            if first != current and current is not None:
                yield self._edge(row, names)
                names = set()
            source, target, rels = _unpacked(self.unseal(ends))
            current, row = first, (snid, tnid, kind, source, target, source_here, target_here)
            if rels:
                names.update(jsonio.loads(rels))
        if current is not None:
            yield self._edge(row, names)

    def _edge(self, row: tuple[Any, ...], names: set[str]) -> EdgeRow:
        snid, tnid, kind, source, target, source_here, target_here = row
        record = EdgeRecord(source, target, kind, tuple(sorted(names)))
        return EdgeRow(record, snid, tnid, bool(source_here), bool(target_here))

    def deleted(self) -> Iterator[tuple[str, str, str]]:
        """(node id, delete id, key) per tombstone, in order."""
        for nid, delete, label, _ in self.db.execute("SELECT * FROM gone ORDER BY rowid"):
            yield nid, delete, self.unseal(label)

    def close(self) -> None:
        self.db.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)

    def __enter__(self) -> Stage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
