"""Stages: a view's state kept in tables, folded from that view's rows in `view_events` (`Stage` in
core/table_sets.py), so a reader queries the rows its call touches instead of folding the whole view.

`stages` records what each stage was folded from: the view-events build (`formats.built`), how many
clock bounds were read (a new bound can lower a stamp already folded: the stage starts over), and the
last `view_events.n` folded. A reader whose stage is behind folds the new rows under SQLite's write
lock, BATCH at a time, one transaction each (a process killed meanwhile leaves the last batch's
state, whole); a reader that cannot get the lock within `wait` answers some other way (`Busy`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson

from contextflow.core.events import Event
from contextflow.core.fields import conform
from contextflow.core.table_sets import Stage, Txn, stamp_of

BATCH = 5000  # view events folded per transaction
STAGE_INLINE = 20_000  # a reader folds at most this many events into a stage itself; the background builder more

CHUNK = 400  # parameters per `IN (...)` a stage's queries pass (SQLite allows 32,766; smaller lists plan as well)

Mark = tuple[str, int, int]  # (the view-events build, bounds read, last view_events.n folded)


def catch_up(db: sqlite3.Connection, stage: Stage, fields: Mapping[str, Any], wait: float) -> bool:
    """Bring `stage` up to date with `view_events` (its tables built first when its version differs);
    False when there is nothing to fold from yet (view-events is not built)."""
    wanted = _wanted(db, stage)
    if wanted is None:
        return False
    if _recorded(db, stage) == wanted:
        return True
    while True:
        with Txn(db, wait):
            wanted = _wanted(db, stage)
            if wanted is None:
                return False
            recorded = _recorded(db, stage)
            if recorded is not None and recorded[:2] != wanted[:2]:  # rebuilt, or a bound lowered stamps
                for table in stage.tables:
                    db.execute(f'DELETE FROM "{table}"')
                recorded = None
            last = recorded[2] if recorded is not None else 0
            found = db.execute(
                "SELECT n, id, hlc, w, seq, kind, data FROM view_events WHERE view = ? AND n > ? ORDER BY n LIMIT ?",
                (stage.view, last, BATCH),
            ).fetchall()
            events = []
            for n, event_id, hlc, writer, seq, kind, blob in found:
                data, _ = conform(fields, kind, orjson.loads(blob))  # a file like any other: checked as read
                events.append(Event(event_id, writer, seq, stamp_of(hlc), kind, data))
                last = n
            stage.apply(db, events)
            db.execute(
                "INSERT OR REPLACE INTO stages(name, source, bounds, last) VALUES (?, ?, ?, ?)",
                (stage.name, wanted[0], wanted[1], last),
            )
            if len(found) < BATCH:
                return True


def chunks(items: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    """`items` in parts of at most `size` (the values of one `IN (...)`)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def marks(count: int) -> str:
    """`count` parameters, as an `IN (...)` lists them."""
    return ", ".join("?" * count)


def behind(db: sqlite3.Connection, stage: Stage, most: int) -> int:
    """How many of its view's events `stage` has yet to fold (counted up to `most` + 1)."""
    recorded, wanted = _recorded(db, stage), _wanted(db, stage)
    if wanted is None or recorded == wanted:
        return 0
    last = recorded[2] if recorded is not None and recorded[:2] == wanted[:2] else 0
    sql = "SELECT count(*) FROM (SELECT 1 FROM view_events WHERE view = ? AND n > ? LIMIT ?)"
    return int(db.execute(sql, (stage.view, last, most + 1)).fetchone()[0])


def _wanted(db: sqlite3.Connection, stage: Stage) -> Mark | None:
    """The mark of a stage holding every view event now (its tables made when its version differs)."""
    source = db.execute("SELECT built FROM formats WHERE name = 'view-events'").fetchone()
    if source is None:
        return None
    version = db.execute("SELECT version FROM formats WHERE name = ?", (stage.name,)).fetchone()
    if version is None or version[0] != stage.format.version:
        if not db.in_transaction:
            return source[0], -1, -1  # (made inside the caller's transaction)
        _make(db, stage)
    bounds = db.execute("SELECT count(*) FROM bounds").fetchone()[0]
    newest = db.execute("SELECT max(n) FROM view_events WHERE view = ?", (stage.view,)).fetchone()[0]
    return source[0], bounds, newest or 0


def _recorded(db: sqlite3.Connection, stage: Stage) -> Mark | None:
    found = db.execute("SELECT source, bounds, last FROM stages WHERE name = ?", (stage.name,)).fetchone()
    return (found[0], found[1], found[2]) if found else None


def _make(db: sqlite3.Connection, stage: Stage) -> None:
    """The stage's tables, empty, at its version (in the caller's transaction)."""
    for table in stage.tables:
        db.execute(f'DROP TABLE IF EXISTS "{table}"')  # (its indexes go with it)
    for statement in stage.schema:
        db.execute(statement)
    db.execute("DELETE FROM stages WHERE name = ?", (stage.name,))
    db.execute(
        "INSERT OR REPLACE INTO formats(name, version, built) VALUES (?, ?, NULL)", (stage.name, stage.format.version)
    )
