"""Sessions read while their tables do not hold every log (a build under way, another process holding the
lock): the tables as built, and the rows of the logs' remaining bytes, queried together.

An `Overlay` is an in-memory database with the sessions schema (its triggers too) that attaches the
tables (`base`, read only). It holds the rows of the events past the sessions cursors and every entry
the tables hold of the sessions those events touch, so the triggers make those sessions' summaries as a
build would. TEMP views named as the tables (`sessions_entries`, `sessions`, ...) show the tables' rows
with the overlay's in their place: `sessions/stored.py`'s queries read them unchanged. Building one
costs O(the remaining bytes + the entries of the sessions they touch); while the cursors stay as they
were it is extended by the logs' new bytes only, and built again when they move.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from contextflow.core.fsutil import Signature, signature
from contextflow.core.log import Cursor
from contextflow.core.table_rest import chunks_past
from contextflow.core.table_sets import cursor_of

if TYPE_CHECKING:
    from contextflow.core.tables import Tables

_VIEWS = {
    "sessions_entries": "SELECT * FROM base.sessions_entries WHERE id NOT IN (SELECT id FROM main.sessions_entries) "
    "UNION ALL SELECT * FROM main.sessions_entries",
    "sessions": "SELECT * FROM base.sessions b WHERE NOT EXISTS (SELECT 1 FROM main.sessions m "
    "WHERE m.project = b.project AND m.session_id = b.session_id) UNION ALL SELECT * FROM main.sessions",
    "sessions_agents": "SELECT * FROM base.sessions_agents UNION SELECT * FROM main.sessions_agents",
    "sessions_marks": "SELECT project, session_id, handoff, min(note) AS note FROM (SELECT * FROM base.sessions_marks "
    "UNION ALL SELECT * FROM main.sessions_marks) GROUP BY project, session_id, handoff",
}
CHUNK_BYTES = 1024 * 1024  # read and inserted at a time: the overlay's memory is its rows, not a chunk's events
_EMPTY = {name: f"SELECT * FROM main.{name}" for name in _VIEWS}  # no tables built yet: the overlay is all


class Overlay:
    """One in-memory overlay over the tables (see the module's docstring); `query` reads through it."""

    def __init__(self, db: sqlite3.Connection, base: object, built: bool) -> None:
        self.db, self.base, self.built = db, base, built
        self.read: dict[str, Cursor | None] = {}  # per log, how far the overlay holds its rows
        self.seen: dict[str, Signature | None] = {}  # per log, its signature when read
        self._seeded: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self.db.execute(sql, params).fetchall()

    def close(self) -> None:
        self.db.close()

    def add(self, tables: Tables) -> None:
        """Add the rows of every log's bytes past what the overlay holds, a chunk at a time."""
        from contextflow.sessions.table import TABLES

        with self._lock:
            for path in tables.paths():
                self.seen[str(path)] = signature(path)
                for rows, after in chunks_past(tables, TABLES, path, self.read.get(str(path)), CHUNK_BYTES):
                    self.db.execute("BEGIN")
                    self._insert(rows)
                    self.db.execute("COMMIT")
                    self.read[str(path)] = after

    def _insert(self, rows: dict[str, list[tuple[Any, ...]]]) -> None:
        from contextflow.sessions.table import INSERTS

        entries = rows.get("sessions_entries", [])
        if self.built:
            touched = {(row[5], row[6]) for row in entries if row[6]} - self._seeded
            _seed(self.db, touched)
            self._seeded |= touched
        self.db.executemany(_main(INSERTS["sessions_entries"]), entries)
        for table in ("sessions_agents", "sessions_marks"):
            self.db.executemany(_main(INSERTS[table]), rows.get(table, []))


def _main(insert: str) -> str:
    """An insert into the overlay's own table (the TEMP view of that name is not written)."""
    return insert.replace(" INTO ", " INTO main.", 1)


def base_key(tables: Tables) -> object:
    """The sessions cursors of the tables: while they stay, an overlay is extended, else built again."""
    found = tables.peek("SELECT path, cursor FROM cursors WHERE format = 'sessions'")
    return tuple(sorted((str(path), bytes(blob)) for path, blob in found))


def fresh(overlay: Overlay, tables: Tables) -> bool:
    """Whether `overlay` holds every log as it is now (one stat per log)."""
    paths = tables.paths()
    return len(paths) == len(overlay.seen) and all(overlay.seen.get(str(p), 0) == signature(p) for p in paths)


def build(tables: Tables, most: int) -> Overlay | None:
    """The overlay of the tables now, or None when more than `most` bytes, or more than half the logs
    (and over CHUNK_BYTES), remain past the cursors (a new machine: the caller folds the logs, which costs
    as much and holds less)."""
    from contextflow.core.table_rest import remaining
    from contextflow.sessions.table import TABLES

    key = base_key(tables)
    db = sqlite3.connect("file::memory:", uri=True, isolation_level=None, check_same_thread=False)
    try:
        db.execute("ATTACH ? AS base", (f"{tables.path.absolute().as_uri()}?mode=ro",))
        versions = db.execute("SELECT version FROM base.formats WHERE name = ?", (TABLES.name,)).fetchall()
        built = versions == [(TABLES.format.version,)] and _has_tables(db)
        cursors: dict[str, Cursor] = {}
        if built:
            found = db.execute("SELECT path, cursor FROM base.cursors WHERE format = ?", (TABLES.name,)).fetchall()
            cursors = {str(path): cursor_of(blob) for path, blob in found}
        left = remaining(tables, TABLES, cursors)
        if left > most or (left > CHUNK_BYTES and left * 2 > _size(tables)):
            db.close()  # (over half the logs: their fold costs as much and holds less memory)
            return None
        for statement in TABLES.schema:
            db.execute(statement)
        overlay = Overlay(db, key, built)
        overlay.read = dict(cursors)
        overlay.add(tables)
        for name, sql in (_VIEWS if built else _EMPTY).items():
            db.execute(f"CREATE TEMP VIEW {name} AS {sql}")
    except BaseException:
        db.close()
        raise
    return overlay


def _size(tables: Tables) -> int:
    return sum(sig[2] for sig in map(signature, tables.paths()) if sig is not None)


def _has_tables(db: sqlite3.Connection) -> bool:
    names = {name for (name,) in db.execute("SELECT name FROM base.sqlite_master WHERE type = 'table'")}
    return set(_VIEWS) <= names


_ENTRY_COLUMNS = "id, hlc, w, seq, kind, project, session_id, agent, task, auto, summary, data, superseded"


def _seed(db: sqlite3.Connection, touched: set[tuple[str, str]]) -> None:
    """Copy every entry the tables hold of each `touched` session into the overlay, before any of its new
    entries: the triggers make its summary and which automatic handoff is current from all of them (each
    entry once, by id: one the tables took since the cursors were read is both there and in the logs'
    remaining bytes)."""
    for project, session_id in sorted(touched):
        db.execute(
            f"INSERT OR IGNORE INTO main.sessions_entries({_ENTRY_COLUMNS}) SELECT {_ENTRY_COLUMNS} "
            "FROM base.sessions_entries WHERE project = ? AND session_id = ?",
            (project, session_id),
        )
