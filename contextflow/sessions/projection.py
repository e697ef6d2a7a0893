"""The sessions' derived tables: every note and handoff, per-session summaries, marks and agents.

`rows` is the pure fold (an entry gives its row, its agent, the mark it makes); the summaries and
which automatic handoffs are superseded are kept by triggers, so they follow from the set of rows
whatever the order they arrive in (a clock bound that lowers an entry recomputes its session).
Queries are in `sessions/stored.py`; the tests' in-memory fold (`tests/sessions_fold.py`) says the same.
An entry's `data` is its event's data without the fields its columns hold as they are (SHARED), and
`shared` says where each was: the text is stored once, and `data_of` reads the data back whole, in order.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from contextflow.core import jsonio
from contextflow.core.events import Event
from contextflow.core.formats import Format
from contextflow.core.project import project_of
from contextflow.core.projections import Writer, by_project
from contextflow.core.tables import Projection, Row, db_stamp
from contextflow.sessions.view import ENTRY_KINDS, marked_wrong, session_of

_KEY_NEWER = "(excluded.hlc, excluded.w, excluded.seq) > (hlc, w, seq)"
_TASK_NEWER = (
    "excluded.task IS NOT NULL AND "
    "(task_hlc IS NULL OR (excluded.task_hlc, excluded.task_w, excluded.task_seq) > (task_hlc, task_w, task_seq))"
)
_SAME_SESSION = "project = new.project AND session_id = new.session_id"
_NEWEST = "ORDER BY hlc DESC, w DESC, seq DESC LIMIT 1"

SCHEMA = (
    """CREATE TABLE sessions_entries(
    id TEXT NOT NULL UNIQUE, hlc INTEGER NOT NULL, w TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL,
    project TEXT NOT NULL, session_id TEXT NOT NULL, agent TEXT, task TEXT, auto INTEGER NOT NULL,
    summary TEXT, shared INTEGER NOT NULL, data BLOB NOT NULL, superseded INTEGER NOT NULL DEFAULT 0)""",
    "CREATE INDEX sessions_by_project ON sessions_entries(project, hlc, w, seq)",
    "CREATE INDEX sessions_by_session ON sessions_entries(project, session_id, hlc, w, seq)",
    "CREATE INDEX sessions_handoffs ON sessions_entries(project, hlc, w, seq) WHERE kind = 'handoff'",
    "CREATE INDEX sessions_session_handoffs ON sessions_entries(project, session_id, hlc, w, seq) "
    "WHERE kind = 'handoff'",
    "CREATE INDEX sessions_autos ON sessions_entries(project, session_id, hlc, w, seq) "
    "WHERE kind = 'handoff' AND auto = 1",
    "CREATE INDEX sessions_current_autos ON sessions_entries(project, session_id, hlc, w, seq) "
    "WHERE kind = 'handoff' AND auto = 1 AND superseded = 0",
    """CREATE TABLE sessions(
    project TEXT NOT NULL, session_id TEXT NOT NULL, entries INTEGER NOT NULL, notes INTEGER NOT NULL,
    handoffs INTEGER NOT NULL, hlc INTEGER NOT NULL, w TEXT NOT NULL, seq INTEGER NOT NULL, last_kind TEXT NOT NULL,
    task TEXT, task_hlc INTEGER, task_w TEXT, task_seq INTEGER, PRIMARY KEY(project, session_id)) WITHOUT ROWID""",
    "CREATE INDEX sessions_recent ON sessions(project, hlc, w, seq, session_id)",
    """CREATE TABLE sessions_agents(
    project TEXT NOT NULL, session_id TEXT NOT NULL, agent TEXT NOT NULL,
    PRIMARY KEY(project, session_id, agent)) WITHOUT ROWID""",
    """CREATE TABLE sessions_marks(
    project TEXT NOT NULL, session_id TEXT NOT NULL, handoff TEXT NOT NULL, note TEXT NOT NULL,
    PRIMARY KEY(project, session_id, handoff)) WITHOUT ROWID""",
    # one automatic handoff per session is current: the newest
    f"""CREATE TRIGGER sessions_supersede AFTER INSERT ON sessions_entries
    WHEN new.kind = 'handoff' AND new.auto = 1 BEGIN
    UPDATE sessions_entries SET superseded = 1 WHERE {_SAME_SESSION} AND kind = 'handoff' AND auto = 1
        AND superseded = 0 AND (hlc, w, seq) < (new.hlc, new.w, new.seq);
    UPDATE sessions_entries SET superseded = 1 WHERE id = new.id AND EXISTS (SELECT 1 FROM sessions_entries e
        WHERE e.project = new.project AND e.session_id = new.session_id AND e.kind = 'handoff' AND e.auto = 1
        AND (e.hlc, e.w, e.seq) > (new.hlc, new.w, new.seq));
    END""",
    # a clock bound lowered an entry: its session's newest entry, task and current automatic handoff again
    f"""CREATE TRIGGER sessions_rekey AFTER UPDATE OF hlc ON sessions_entries BEGIN
    UPDATE sessions SET (hlc, w, seq, last_kind) = (SELECT hlc, w, seq, kind FROM sessions_entries e
        WHERE e.project = new.project AND e.session_id = new.session_id {_NEWEST})
        WHERE {_SAME_SESSION};
    UPDATE sessions SET (task, task_hlc, task_w, task_seq) = (SELECT task, hlc, w, seq FROM sessions_entries e
        WHERE e.project = new.project AND e.session_id = new.session_id AND e.task IS NOT NULL {_NEWEST})
        WHERE {_SAME_SESSION};
    UPDATE sessions_entries SET superseded = EXISTS (SELECT 1 FROM sessions_entries e
        WHERE e.project = sessions_entries.project AND e.session_id = sessions_entries.session_id
        AND e.kind = 'handoff' AND e.auto = 1
        AND (e.hlc, e.w, e.seq) > (sessions_entries.hlc, sessions_entries.w, sessions_entries.seq))
        WHERE {_SAME_SESSION} AND kind = 'handoff' AND auto = 1;
    END""",
)

# a session's summary: counts, its newest entry, its newest task (by order key, whatever the arrival order), made
# from a batch of new entries at once (`summarise`; the counts add up, the newest of both wins)
_SUMMARY_ADD = f"""INSERT INTO main.sessions(project, session_id, entries, notes, handoffs, hlc, w, seq, last_kind,
    task, task_hlc, task_w, task_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT(project, session_id) DO UPDATE SET
        entries = entries + excluded.entries, notes = notes + excluded.notes, handoffs = handoffs + excluded.handoffs,
        last_kind = iif({_KEY_NEWER}, excluded.last_kind, last_kind),
        task = iif({_TASK_NEWER}, excluded.task, task),
        task_w = iif({_TASK_NEWER}, excluded.task_w, task_w),
        task_seq = iif({_TASK_NEWER}, excluded.task_seq, task_seq),
        task_hlc = iif({_TASK_NEWER}, excluded.task_hlc, task_hlc),
        w = iif({_KEY_NEWER}, excluded.w, w),
        seq = iif({_KEY_NEWER}, excluded.seq, seq),
        hlc = iif({_KEY_NEWER}, excluded.hlc, hlc)"""
_ADDED = (
    "SELECT project, session_id, hlc, w, seq, kind, task FROM main.sessions_entries "
    "WHERE rowid > ? AND session_id != ''"
)


def summarise(db: Writer, after: int) -> None:
    """The summaries of the sessions of the entries added past rowid `after`, brought up to date (as a trigger
    a row did: each count grows by the new entries, the newest entry and task win, the earlier added on a tie)."""
    found: dict[tuple[str, str], list[Any]] = {}
    for project, session_id, hlc, w, seq, kind, task in db.execute(_ADDED, (after,)):
        key = (hlc, w, seq)
        summary = found.get((project, session_id))
        if summary is None:
            summary = found[(project, session_id)] = [0, 0, 0, key, kind, None, None]
        summary[0] += 1
        summary[1] += kind == "note"
        summary[2] += kind == "handoff"
        if key > summary[3]:
            summary[3], summary[4] = key, kind
        if task is not None and (summary[6] is None or key > summary[6]):
            summary[5], summary[6] = task, key
    db.executemany(
        _SUMMARY_ADD,
        [
            (project, session_id, entries, notes, handoffs, *key, kind, task, *(task_key or (None, None, None)))
            for (project, session_id), (entries, notes, handoffs, key, kind, task, task_key) in found.items()
        ],
    )


INSERTS = {
    "sessions_entries": "INSERT OR IGNORE INTO sessions_entries(id, hlc, w, seq, kind, project, session_id, "
    "agent, task, auto, summary, shared, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "sessions_agents": "INSERT OR IGNORE INTO sessions_agents(project, session_id, agent) VALUES (?, ?, ?)",
    # the same mark whatever the order: the smallest note id names it
    "sessions_marks": "INSERT INTO sessions_marks(project, session_id, handoff, note) VALUES (?, ?, ?, ?) "
    "ON CONFLICT DO UPDATE SET note = excluded.note WHERE excluded.note < note",
}


def _stripped(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def rows(event: Event) -> Iterator[Row]:
    if event.kind not in ENTRY_KINDS:
        return
    data = event.data
    project, session_id = project_of(event), session_of(event)
    agent = data.get("agent") if isinstance(data.get("agent"), str) else None
    summary = data.get("summary") if event.kind == "handoff" and isinstance(data.get("summary"), str) else None
    auto = int(event.kind == "handoff" and data.get("auto") is True)
    task = _stripped(data.get("task"))
    shared, kept = _kept(data, (project, session_id, agent, task, summary))
    key = (event.id, db_stamp(event.hlc), event.writer, event.seq, event.kind)
    yield "sessions_entries", (*key, project, session_id, agent, task, auto, summary, shared, kept)
    if session_id and (name := _stripped(agent)):
        yield "sessions_agents", (project, session_id, name)
    handoff = marked_wrong(event)
    if session_id and handoff is not None:
        yield "sessions_marks", (project, session_id, handoff, event.id)


MERGED = (  # read beside the logs' remaining bytes (core/rest.py): their sessions' summaries replace the tables'
    (
        "sessions_entries",
        "SELECT * FROM base.{t} WHERE id NOT IN (SELECT id FROM main.{t}) UNION ALL SELECT * FROM main.{t}",
    ),
    (
        "sessions",
        "SELECT * FROM base.{t} b WHERE NOT EXISTS (SELECT 1 FROM main.{t} m WHERE m.project = b.project "
        "AND m.session_id = b.session_id) UNION ALL SELECT * FROM main.{t}",
    ),
    ("sessions_agents", "SELECT * FROM base.{t} UNION SELECT * FROM main.{t}"),
    (
        "sessions_marks",
        "SELECT project, session_id, handoff, min(note) AS note FROM (SELECT * FROM base.{t} "
        "UNION ALL SELECT * FROM main.{t}) GROUP BY project, session_id, handoff",
    ),
)
_ENTRY_COLUMNS = "id, hlc, w, seq, kind, project, session_id, agent, task, auto, summary, shared, data, superseded"


def seed(db: sqlite3.Connection, found: dict[str, list[tuple[Any, ...]]], seeded: set[Any]) -> None:
    """Copy every entry the tables hold of each session the new entries `found` touch (once each) beside
    them, before them: the triggers make its summary and which automatic handoff is current from all of
    them (each entry once, by id: one the tables took since the read positions were read is in both)."""
    touched = {(row[5], row[6]) for row in found.get("sessions_entries", []) if row[6]} - seeded
    for project, session_id in sorted(touched):
        db.execute(
            f"INSERT OR IGNORE INTO main.sessions_entries({_ENTRY_COLUMNS}) SELECT {_ENTRY_COLUMNS} "
            "FROM base.sessions_entries WHERE project = ? AND session_id = ?",
            (project, session_id),
        )
    seeded |= touched


SHARED = ("project", "session_id", "agent", "task", "summary")  # data fields the columns of these names hold
DATA_COLUMNS = "project, session_id, agent, task, summary, shared, data"  # what `data_of` reads an entry's data from
_BITS = 5  # of `shared` per SHARED field: its position in the data + 1 (0: the data keeps it)
_SLOTS = {name: slot for slot, name in enumerate(SHARED)}


def _kept(data: dict[str, Any], columns: Sequence[str | None]) -> tuple[int, bytes]:
    """`data` as stored: without each SHARED field its column holds as is, and `shared` saying where each was."""
    shared, kept = 0, {}
    for position, (name, value) in enumerate(data.items()):
        slot = _SLOTS.get(name)
        if slot is not None and position < 31 and isinstance(value, str) and value == columns[slot]:
            shared |= (position + 1) << (_BITS * slot)
        else:
            kept[name] = value
    return shared, jsonio.dumps(kept)


def data_of(row: Sequence[Any]) -> dict[str, Any]:
    """An entry's event data, whole and in its order, from its DATA_COLUMNS."""
    data: dict[str, Any] = jsonio.loads(row[6])
    if not row[5]:
        return data
    first, places = _places(row[5])
    if first:  # (the common case: they came first)
        whole = {SHARED[slot]: row[slot] for _, slot in places}
        whole.update(data)
        return whole
    items = list(data.items())
    for place, slot in places:  # each at its position, the earlier ones first
        items.insert(place, (SHARED[slot], row[slot]))
    return dict(items)


@functools.lru_cache(maxsize=256)
def _places(shared: int) -> tuple[bool, tuple[tuple[int, int], ...]]:
    """Whether the fields `shared` names came first in the data, and (position, SHARED slot) of each in order."""
    found = ((shared >> _BITS * slot & 31, slot) for slot in range(len(SHARED)))
    places = tuple(sorted((place - 1, slot) for place, slot in found if place))
    return all(place == n for n, (place, _) in enumerate(places)), places


def unneeded(events: Sequence[Event]) -> dict[str, tuple[str, ...]]:
    """Compaction (scan.Unneeded): every note and handoff stays; other kinds are not ours."""
    return {event.id: () for event in events if event.kind not in ENTRY_KINDS}


PROJECTION = Projection(
    # 2: fields its columns hold kept once; 3: summaries made a batch at a time (no trigger)
    Format("sessions", 3, ("contextflow.sessions.projection",)),
    SCHEMA,
    INSERTS,
    rows,
    ("sessions_entries",),
    ("sessions_entries", "sessions", "sessions_agents", "sessions_marks"),
    merged=MERGED,
    seed=seed,
    scoped=by_project("sessions_entries", "sessions", "sessions_agents", "sessions_marks"),
    unneeded=unneeded,
    summarise=("sessions_entries", summarise),
)
