"""Sessions read while their tables do not hold every log (a build under way, another process holding the
lock): the tables as built, and the rows of the logs' remaining bytes, queried together.

An `Overlay` is an in-memory database with the sessions schema (its triggers too) that attaches the
tables (`base`, read only). It holds the rows of the events past the sessions cursors and, for the
sessions those events touch, the tables' summaries and current automatic handoffs, so the triggers
merge the new entries into them as a build would. TEMP views named as the tables (`sessions_entries`,
`sessions`, ...) show the tables' rows with the overlay's in their place: `sessions/stored.py`'s queries
read them unchanged. Building one costs O(the remaining bytes + the sessions they touch); it is kept
while the logs and the cursors stay as they were.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from contextflow.core.fsutil import signature
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
_EMPTY = {name: f"SELECT * FROM main.{name}" for name in _VIEWS}  # no tables built yet: the overlay is all
_IDS = 500  # ids looked up at a time


class Overlay:
    """One in-memory overlay over the tables (see the module's docstring); `query` reads through it."""

    def __init__(self, db: sqlite3.Connection, key: object) -> None:
        self.db, self.key = db, key
        self._lock = threading.Lock()

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self.db.execute(sql, params).fetchall()

    def close(self) -> None:
        self.db.close()


def key_of(tables: Tables) -> object:
    """What an overlay is valid for: every log's signature and the sessions cursors (one stat per log)."""
    paths = tables.paths()
    cursors = sorted(
        (path, bytes(blob)) for path, blob in tables.peek("SELECT path, cursor FROM cursors WHERE format = 'sessions'")
    )
    return tuple((str(path), signature(path)) for path in paths), tuple(cursors)


def build(tables: Tables, most: int) -> Overlay | None:
    """The overlay of the tables now, or None when more than `most` bytes remain past the cursors (a new
    machine: the caller reads the logs its own way) or the tables do not read."""
    from contextflow.core.table_rest import remaining, rows_past
    from contextflow.sessions.table import TABLES

    key = key_of(tables)
    db = sqlite3.connect("file::memory:", uri=True, isolation_level=None, check_same_thread=False)
    try:
        db.execute("ATTACH ? AS base", (f"{tables.path.absolute().as_uri()}?mode=ro",))
        db.execute("BEGIN")  # the cursors and the rows seeded from the tables: one snapshot
        built = db.execute("SELECT version FROM base.formats WHERE name = ?", (TABLES.name,)).fetchall() == [
            (TABLES.format.version,)
        ] and _has_tables(db)
        cursors = {}
        if built:
            found = db.execute("SELECT path, cursor FROM base.cursors WHERE format = ?", (TABLES.name,)).fetchall()
            cursors = {str(path): cursor_of(blob) for path, blob in found}
        if remaining(tables, TABLES, cursors) > most:
            db.close()
            return None
        rows = rows_past(tables, TABLES, cursors)
        for statement in TABLES.schema:
            db.execute(statement)
        entries = rows.get("sessions_entries", [])
        if built:
            entries = _new(db, entries)
            _seed(db, {(row[5], row[6]) for row in entries if row[6]})
        db.executemany(TABLES.inserts["sessions_entries"], entries)
        for table in ("sessions_agents", "sessions_marks"):
            db.executemany(TABLES.inserts[table], rows.get(table, []))
        db.execute("COMMIT")
        for name, sql in (_VIEWS if built else _EMPTY).items():
            db.execute(f"CREATE TEMP VIEW {name} AS {sql}")
    except BaseException:
        db.close()
        raise
    return Overlay(db, key)


def _has_tables(db: sqlite3.Connection) -> bool:
    names = {name for (name,) in db.execute("SELECT name FROM base.sqlite_master WHERE type = 'table'")}
    return set(_VIEWS) <= names


def _new(db: sqlite3.Connection, entries: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Those of `entries` the tables do not hold (a chunk committed after the cursors were read, rows this
    machine added ahead of the build)."""
    held: set[str] = set()
    for start in range(0, len(entries), _IDS):
        ids = [row[0] for row in entries[start : start + _IDS]]
        sql = f"SELECT id FROM base.sessions_entries WHERE id IN ({', '.join('?' * len(ids))})"
        held.update(event_id for (event_id,) in db.execute(sql, ids))
    return [row for row in entries if row[0] not in held]


_ENTRY_COLUMNS = "id, hlc, w, seq, kind, project, session_id, agent, task, auto, summary, data, superseded"


def _seed(db: sqlite3.Connection, touched: set[tuple[str, str]]) -> None:
    """Copy the tables' summaries and current automatic handoffs of the `touched` sessions into the overlay,
    so its triggers add the new entries to them (the copies' own trigger effects are undone first)."""
    for project, session_id in sorted(touched):
        db.execute(
            f"INSERT INTO main.sessions_entries({_ENTRY_COLUMNS}) SELECT {_ENTRY_COLUMNS} FROM base.sessions_entries "
            "WHERE project = ? AND session_id = ? AND kind = 'handoff' AND auto = 1 AND superseded = 0",
            (project, session_id),
        )
    db.execute("DELETE FROM main.sessions")
    for project, session_id in sorted(touched):
        db.execute(
            "INSERT INTO main.sessions SELECT * FROM base.sessions WHERE project = ? AND session_id = ?",
            (project, session_id),
        )
