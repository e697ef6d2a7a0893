"""The timeline's derived tables: every timeline event keyed by the thread and thought it touches, and
one summary row per thread (created or not, its status, its latest activity) to pick threads from.

`rows` is the pure fold (an event gives its row); each summary is kept by triggers from the set of
rows, whatever the order they arrive in, as the in-memory view (`timeline/view.py`) keeps it: status
is last-writer-wins by event key, activity the newest event key of a thread's creation, its updates,
its thoughts and its position moves. A clock bound that lowers an event recomputes its thread.
Queries are in `timeline/stored.py`, which folds the rows of the threads a call shows with the view. Read
beside the logs' remaining bytes (`core/rest.py`), a thread's rows there come with its rows in the tables
(`seed`), so the triggers summarise it whole, and that summary replaces the tables' (`MERGED`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from contextflow.core import jsonio
from contextflow.core.events import Event
from contextflow.core.formats import Format
from contextflow.core.project import project_of
from contextflow.core.scan import overwritten
from contextflow.core.tables import Projection, Row, db_stamp
from contextflow.timeline.fields import (
    POSITION,
    THOUGHT,
    THOUGHT_UPDATE,
    THREAD,
    THREAD_STATUSES,
    THREAD_UPDATE,
    nonempty,
)

_NEWER = "(excluded.hlc, excluded.w, excluded.seq) > (hlc, w, seq)"
_STATUS_NEWER = (
    "excluded.status_hlc IS NOT NULL AND (status_hlc IS NULL OR "
    "(excluded.status_hlc, excluded.status_w, excluded.status_seq) > (status_hlc, status_w, status_seq))"
)
_NEWEST = "ORDER BY hlc DESC, w DESC, seq DESC LIMIT 1"

SCHEMA = (
    # thread: the thread an event writes or moves (none for a thought update); thought: the thought a
    # thought, thought update or position names, or the thought a tangent thread started from
    """CREATE TABLE timeline_events(
    id TEXT NOT NULL UNIQUE, hlc INTEGER NOT NULL, w TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL,
    thread TEXT, thought TEXT, status TEXT, project TEXT NOT NULL, data BLOB NOT NULL)""",
    "CREATE INDEX timeline_by_thread ON timeline_events(thread, kind, hlc, w, seq) WHERE thread IS NOT NULL",
    "CREATE INDEX timeline_by_thought ON timeline_events(thought, kind) WHERE thought IS NOT NULL",
    """CREATE TABLE timeline_threads(
    thread TEXT PRIMARY KEY, created INTEGER NOT NULL, status TEXT NOT NULL, status_hlc INTEGER, status_w TEXT,
    status_seq INTEGER, hlc INTEGER NOT NULL, w TEXT NOT NULL, seq INTEGER NOT NULL) WITHOUT ROWID""",
    "CREATE INDEX timeline_recent ON timeline_threads(created, status, hlc, w, seq)",
    "CREATE INDEX timeline_recent_all ON timeline_threads(created, hlc, w, seq)",
    f"""CREATE TRIGGER timeline_add AFTER INSERT ON timeline_events
    WHEN new.thread IS NOT NULL AND new.kind != '{THOUGHT_UPDATE}' BEGIN
    INSERT INTO timeline_threads(thread, created, status, status_hlc, status_w, status_seq, hlc, w, seq)
    VALUES (new.thread, new.kind = '{THREAD}', coalesce(new.status, 'active'), iif(new.status IS NULL, NULL, new.hlc),
        iif(new.status IS NULL, NULL, new.w), iif(new.status IS NULL, NULL, new.seq), new.hlc, new.w, new.seq)
    ON CONFLICT(thread) DO UPDATE SET
        created = max(created, excluded.created),
        status = iif({_STATUS_NEWER}, excluded.status, status),
        status_hlc = iif({_STATUS_NEWER}, excluded.status_hlc, status_hlc),
        status_w = iif({_STATUS_NEWER}, excluded.status_w, status_w),
        status_seq = iif({_STATUS_NEWER}, excluded.status_seq, status_seq),
        hlc = iif({_NEWER}, excluded.hlc, hlc),
        w = iif({_NEWER}, excluded.w, w),
        seq = iif({_NEWER}, excluded.seq, seq);
    END""",
    # a clock bound lowered an event: its thread's latest activity and status again
    f"""CREATE TRIGGER timeline_rekey AFTER UPDATE OF hlc ON timeline_events
    WHEN new.thread IS NOT NULL AND new.kind != '{THOUGHT_UPDATE}' BEGIN
    UPDATE timeline_threads SET (hlc, w, seq) = (SELECT hlc, w, seq FROM timeline_events e
        WHERE e.thread = new.thread AND e.kind != '{THOUGHT_UPDATE}' {_NEWEST}) WHERE thread = new.thread;
    UPDATE timeline_threads SET (status, status_hlc, status_w, status_seq) = (SELECT status, hlc, w, seq
        FROM timeline_events e WHERE e.thread = new.thread AND e.kind IN ('{THREAD}', '{THREAD_UPDATE}')
        AND e.status IS NOT NULL {_NEWEST}) WHERE thread = new.thread AND status_hlc IS NOT NULL;
    END""",
)

INSERTS = {
    "timeline_events": "INSERT OR IGNORE INTO timeline_events(id, hlc, w, seq, kind, thread, thought, status, project, "
    "data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
}


def _status(event: Event) -> str | None:
    """The status a thread event sets, as the view reads it (an unknown one reads as active)."""
    if "status" not in event.data:
        return None
    value = event.data["status"]
    return value if value in THREAD_STATUSES else "active"


def _touches(event: Event) -> tuple[str | None, str | None, str | None]:
    """(thread, thought, status) of an event, each only where the view folds it (`view.TimelineView.apply`)."""
    data, kind = event.data, event.kind
    if kind == THREAD:
        return event.id, nonempty(data.get("parent_thought_id")), _status(event)
    if kind == THREAD_UPDATE:
        thread_id = nonempty(data.get("thread_id"))
        return thread_id, None, _status(event) if thread_id else None
    if kind == THOUGHT:
        return nonempty(data.get("thread_id")), event.id, None
    if kind == THOUGHT_UPDATE:
        return None, nonempty(data.get("thought_id")), None
    if kind == POSITION:
        thread_id, thought_id = nonempty(data.get("thread_id")), nonempty(data.get("thought_id"))
        return (thread_id, thought_id, None) if thread_id and thought_id else (None, None, None)
    return None, None, None


def rows(event: Event) -> Iterator[Row]:
    if not event.kind.startswith("timeline."):
        return
    thread, thought, status = _touches(event)
    if thread is None and thought is None:
        return  # the view folds nothing of it
    key = (event.id, db_stamp(event.hlc), event.writer, event.seq, event.kind)
    yield "timeline_events", (*key, thread, thought, status, project_of(event), jsonio.dumps(event.data))


MERGED = (  # read beside the logs' remaining bytes (core/rest.py): their threads' summaries replace the tables'
    (
        "timeline_threads",
        "SELECT * FROM base.{t} b WHERE NOT EXISTS (SELECT 1 FROM main.{t} m WHERE m.thread = b.thread) "
        "UNION ALL SELECT * FROM main.{t}",
    ),
)


def seed(db: sqlite3.Connection, found: dict[str, list[tuple[Any, ...]]], seeded: set[Any]) -> None:
    """Copy every event the tables hold of each thread the new rows `found` touch (once each) beside them:
    the triggers make its whole summary (each event once, by id: one the tables took since the read positions
    were read is in both)."""
    touched = {row[5] for row in found.get("timeline_events", []) if row[5] and row[4] != THOUGHT_UPDATE} - seeded
    for thread in sorted(touched):
        db.execute(
            "INSERT OR IGNORE INTO main.timeline_events SELECT * FROM base.timeline_events WHERE thread = ?", (thread,)
        )
    seeded |= touched


def unneeded(events: Sequence[Event]) -> dict[str, tuple[str, ...]]:
    """Compaction (scan.Unneeded): an update whose every field, or a position move that a later event in
    the same log overwrites, can go. Threads and thoughts themselves stay."""
    from contextflow.timeline.view import writes

    found: dict[str, tuple[str, ...]] = {e.id: () for e in events if not e.kind.startswith("timeline.")}
    droppable = {e.id for e in events if e.kind in (THREAD_UPDATE, THOUGHT_UPDATE, POSITION)}
    found.update(dict.fromkeys(overwritten(events, writes) & droppable, ()))
    return found


PROJECTION = Projection(
    Format("timeline", 2, ("contextflow.timeline.projection",)),  # 2: each event's project (read by a scoped store)
    SCHEMA,
    INSERTS,
    rows,
    ("timeline_events",),
    ("timeline_events", "timeline_threads"),
    merged=MERGED,
    seed=seed,
    scoped=(
        ("timeline_events", "SELECT * FROM main.timeline_events WHERE project IN ({projects})"),
        # each thread as the triggers summarise it, from the events of those projects only
        (
            "timeline_threads",
            "SELECT thread, created, coalesce(status, 'active') AS status, NULL AS status_hlc, NULL AS status_w, "
            "NULL AS status_seq, hlc, w, seq FROM (SELECT thread, hlc, w, seq, "
            f"max(kind = '{THREAD}') OVER (PARTITION BY thread) AS created, first_value(status) OVER "
            "(PARTITION BY thread ORDER BY status IS NULL, hlc DESC, w DESC, seq DESC) AS status, row_number() OVER "
            "(PARTITION BY thread ORDER BY hlc DESC, w DESC, seq DESC) AS n FROM main.timeline_events WHERE thread "
            f"IS NOT NULL AND kind != '{THOUGHT_UPDATE}' AND project IN ({{projects}})) WHERE n = 1",
        ),
    ),
    unneeded=unneeded,
)
