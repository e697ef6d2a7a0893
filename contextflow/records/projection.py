"""The context records' state in tables (a folding `Projection`, core/projections.py): each record as the pure fold
(`records/view.py`) leaves it, with the columns reads filter and order on, so a records call reads the
records it shows (`records/stored.py`) instead of folding every `context.*` event.

A batch is folded by loading the records its events write into an empty `RecordsState`, applying the
events with `RecordsView.apply` itself, and writing those records back (the latest write wins by event
key, so the rows equal the whole fold's whatever the batches).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from contextflow.core import jsonio
from contextflow.core.events import Event, OrderKey
from contextflow.core.formats import Format
from contextflow.core.projections import CHUNK, Projection, Writer, by_project, chunks, db_stamp, merged_by

if TYPE_CHECKING:  # (the fold is imported when a chunk is folded or a row read: every process names this projection)
    from contextflow.records.view import Record

SCHEMA = (
    """CREATE TABLE records_rows(
    project TEXT NOT NULL, key TEXT NOT NULL, deleted INTEGER NOT NULL, hlc INTEGER NOT NULL, w TEXT NOT NULL,
    seq INTEGER NOT NULL, category TEXT NOT NULL, thread_id TEXT, pinned INTEGER NOT NULL, expires_ms INTEGER,
    data BLOB NOT NULL, PRIMARY KEY(project, key)) WITHOUT ROWID""",
    "CREATE INDEX records_recent ON records_rows(deleted, hlc, w, seq)",
    "CREATE INDEX records_category ON records_rows(category, deleted, hlc)",
    "CREATE INDEX records_thread ON records_rows(thread_id) WHERE thread_id IS NOT NULL",
    "CREATE INDEX records_key ON records_rows(key, project)",
)


def record_of(blob: bytes) -> Record:
    """The record a `records_rows.data` holds."""
    from contextflow.records.view import Record

    project, key, event_key, event_id, writer, deleted, data, expires, live_sets, tombstone = jsonio.loads(blob)
    return Record(
        project,
        key,
        tuple(event_key),
        event_id,
        writer,
        deleted,
        data,
        expires,
        [tuple(one) for one in live_sets],
        tuple(tombstone) if tombstone else None,
    )


def _row(record: Record) -> tuple[Any, ...]:
    data = [
        record.project,
        record.key,
        record.event_key,
        record.event_id,
        record.writer,
        record.deleted,
        record.data,
        record.expires_ms,
        record.live_sets,
        record.tombstone,
    ]
    hlc, writer, seq = record.event_key
    return (
        record.project,
        record.key,
        int(record.deleted),
        db_stamp(hlc),
        writer,
        seq,
        record.category,
        record.thread_id,
        int(record.pinned),
        record.expires_ms,
        jsonio.dumps(data),
    )


def apply(db: Writer, events: list[Event]) -> None:
    """Fold a chunk's `context.*` events into the table (inside the catch-up's transaction)."""
    from contextflow.records.view import DELETE_KIND, SET_KIND, RecordsState, RecordsView, record_id

    mine = [event for event in events if event.kind in (SET_KIND, DELETE_KIND)]
    written = sorted({identity for event in mine if (identity := record_id(event)) is not None})
    state = RecordsState()
    for part in chunks(written, CHUNK // 2):
        projects = sorted({project for project, _ in part})
        values = ", ".join("(?, ?)" for _ in part)
        sql = f"""SELECT data FROM records_rows WHERE project IN ({", ".join("?" * len(projects))})
            AND (project, key) IN (VALUES {values})"""
        for (blob,) in db.execute(sql, [*projects, *(value for identity in part for value in identity)]):
            record = record_of(blob)
            state.records[record.identity] = record
    fold = RecordsView()
    for event in mine:
        fold.apply(state, event)
    db.executemany(
        "INSERT OR REPLACE INTO records_rows VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [_row(record) for record in state.records.values()],
    )


def unneeded(events: Sequence[Event]) -> dict[str, tuple[str, ...]]:
    """Compaction (scan.Unneeded): a write to a record that a later delete in the same log follows can go;
    a set that a later set follows keeps only its key and project (it may still be when the record was
    created). The latest write of a record stays whole, and so does a delete followed only by sets: a
    tombstone hides older writes other machines may hold."""
    from contextflow.records.view import DELETE_KIND, SET_KIND, RecordId, record_id

    latest: dict[RecordId, OrderKey] = {}
    latest_delete: dict[RecordId, OrderKey] = {}
    for event in events:
        key = record_id(event)
        if key is not None:
            latest[key] = max(latest.get(key, event.key), event.key)
            if event.kind == DELETE_KIND:
                latest_delete[key] = max(latest_delete.get(key, event.key), event.key)
    found: dict[str, tuple[str, ...]] = {}
    for event in events:
        key = record_id(event)
        if key is None or (key in latest_delete and event.key < latest_delete[key]):
            found[event.id] = ()
        elif event.kind == SET_KIND and event.key < latest[key]:
            found[event.id] = ("key", "project")
    return found


PROJECTION = Projection(
    Format("records-state", 2, ("contextflow.records.projection",)),
    SCHEMA,
    tables=("records_rows",),
    ahead=False,
    kinds="context.",
    apply=apply,
    merged=(merged_by("records_rows", "project", "key"),),
    scoped=by_project("records_rows"),
    unneeded=unneeded,
)
