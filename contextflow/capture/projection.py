"""Captured turns on disk: one row per turn (each turn id once), per-session summaries and digests.

What a session start reads of earlier sessions (`capture/recall.py`) is answered from these rows by
index, whatever the store's size: the newest turn that did work, the turns that link a handoff, the
turns of one session, what the turns that said something said (without decoding them). `rows` is the pure
fold; a turn captured twice (two machines, a transcript read again) keeps its earliest event, and the
sessions' newest turns are kept by triggers, so the result is the same in any order.

A session's digest (`capture/digest.py`, its turns folded in order) is kept too, so a session start
reads one row, not every turn of a long session: `summarise` folds a batch's new turns into it, or the
whole session again when one arrived out of order. It is used only when it holds exactly the session's
turns as they are now (its newest turn's key and their count, and its checksum: `stored.Turns.digest`);
otherwise the reader folds the turns itself (a turn rekeyed, the rows of the logs' rest beside them).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from contextflow.capture.digest import fold_in, turn_changes_something, turn_has_work
from contextflow.capture.fields import TURN_KIND
from contextflow.capture.substance import of_turn
from contextflow.core import hashing, jsonio
from contextflow.core.events import Event
from contextflow.core.formats import Format
from contextflow.core.project import project_of
from contextflow.core.projections import Writer, by_project, merged_by
from contextflow.core.tables import Projection, Row, db_stamp

_KEY = "(hlc, w, seq)"
_EARLIER = f"(excluded.hlc, excluded.w, excluded.seq) < {_KEY}"
_NEWEST = "ORDER BY hlc DESC, w DESC, seq DESC LIMIT 1"
_SAME_SESSION = "project = new.project AND session_id = new.session_id"

SCHEMA = (
    # `turn`: "t:" + the turn id, or "e:" + the event id for a turn without one (never deduplicated); a rowid
    # table: rows of a few KB would make a WITHOUT ROWID tree three times the size
    """CREATE TABLE capture_turns(
    turn TEXT NOT NULL UNIQUE, id TEXT NOT NULL, hlc INTEGER NOT NULL, w TEXT NOT NULL, seq INTEGER NOT NULL,
    project TEXT NOT NULL, session_id TEXT NOT NULL, work INTEGER NOT NULL, changes INTEGER NOT NULL, handoff TEXT,
    says BLOB, data BLOB NOT NULL)""",  # `says`: what the turn said (`said_of`), NULL when nothing
    "CREATE INDEX capture_by_id ON capture_turns(id)",
    "CREATE INDEX capture_by_session ON capture_turns(project, session_id, hlc, w, seq)",
    "CREATE INDEX capture_work ON capture_turns(project, hlc, w, seq) WHERE work = 1",
    "CREATE INDEX capture_links ON capture_turns(project, handoff) WHERE handoff IS NOT NULL",
    "CREATE INDEX capture_said ON capture_turns(project, hlc, w, seq) WHERE says IS NOT NULL",
    """CREATE TABLE capture_sessions(
    project TEXT NOT NULL, session_id TEXT NOT NULL, hlc INTEGER NOT NULL, w TEXT NOT NULL, seq INTEGER NOT NULL,
    PRIMARY KEY(project, session_id)) WITHOUT ROWID""",
    "CREATE INDEX capture_recent ON capture_sessions(project, hlc, w, seq)",
    # a session's turns folded (`summarise`), as of its newest turn (hlc, w, seq) and their count; `sum` its checksum
    """CREATE TABLE capture_digests(
    project TEXT NOT NULL, session_id TEXT NOT NULL, hlc INTEGER NOT NULL, w TEXT NOT NULL, seq INTEGER NOT NULL,
    turns INTEGER NOT NULL, digest BLOB NOT NULL, sum TEXT NOT NULL, PRIMARY KEY(project, session_id)) WITHOUT ROWID""",
    f"""CREATE TRIGGER capture_add AFTER INSERT ON capture_turns BEGIN
    INSERT INTO capture_sessions(project, session_id, hlc, w, seq) VALUES (new.project, new.session_id, new.hlc,
        new.w, new.seq)
    ON CONFLICT(project, session_id) DO UPDATE SET (hlc, w, seq) = (excluded.hlc, excluded.w, excluded.seq)
        WHERE (excluded.hlc, excluded.w, excluded.seq) > {_KEY};
    END""",
    # an earlier copy of a turn replaced the row, or a clock bound lowered it: its sessions' newest turns again
    f"""CREATE TRIGGER capture_rekey AFTER UPDATE OF hlc ON capture_turns BEGIN
    DELETE FROM capture_digests WHERE project IN (old.project, new.project)
        AND session_id IN (old.session_id, new.session_id);
    DELETE FROM capture_sessions WHERE project = old.project AND session_id = old.session_id;
    DELETE FROM capture_sessions WHERE {_SAME_SESSION};
    INSERT INTO capture_sessions(project, session_id, hlc, w, seq) SELECT project, session_id, hlc, w, seq
        FROM capture_turns WHERE project = old.project AND session_id = old.session_id {_NEWEST};
    INSERT INTO capture_sessions(project, session_id, hlc, w, seq) SELECT project, session_id, hlc, w, seq
        FROM capture_turns WHERE {_SAME_SESSION} AND (new.project, new.session_id) != (old.project, old.session_id)
        {_NEWEST};
    END""",
)

INSERTS = {
    "capture_turns": "INSERT INTO capture_turns(turn, id, hlc, w, seq, project, session_id, work, changes, handoff, "
    "says, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(turn) DO UPDATE SET (id, hlc, w, seq, "
    "project, session_id, work, changes, handoff, says, data) = (excluded.id, excluded.hlc, excluded.w, "
    "excluded.seq, excluded.project, excluded.session_id, excluded.work, excluded.changes, excluded.handoff, "
    f"excluded.says, excluded.data) WHERE {_EARLIER}",
}


def turn_of(data: dict[str, Any]) -> dict[str, Any]:
    turn = data.get("turn")
    return turn if isinstance(turn, dict) else {}


def rows(event: Event) -> Iterator[Row]:
    """A captured turn's row (as the `activity` view lists it: a session id, each turn id once)."""
    if event.kind != TURN_KIND:
        return
    session_id, turn_id = event.data.get("session_id"), event.data.get("turn_id")
    if not isinstance(session_id, str) or not session_id.strip():
        return
    turn = turn_of(event.data)
    handoff = turn.get("handoff")
    linked = handoff.get("id") if isinstance(handoff, dict) and isinstance(handoff.get("id"), str) else None
    work = int(turn_has_work(turn) and "handoff" not in turn)  # what an automatic handoff is derived from
    changes = int(work and turn_changes_something(turn))  # what ages earlier sessions' decisions
    key = f"t:{turn_id}" if isinstance(turn_id, str) else f"e:{event.id}"
    values = (event.id, db_stamp(event.hlc), event.writer, event.seq, project_of(event), session_id.strip())
    yield "capture_turns", (key, *values, work, changes, linked, said_of(event.data), jsonio.dumps(event.data))


def said_of(data: dict[str, Any]) -> bytes | None:
    """What a captured turn said (its decisions, questions, todos and what it resolved), with the state of its
    files, its session and its agent: the event data `standing_substance` reads in its place (a fraction of
    it). None when it said nothing."""
    turn = turn_of(data)
    said: dict[str, Any] = of_turn(turn)
    if not said:
        return None
    if isinstance(turn.get("state"), dict):
        said["state"] = turn["state"]
    return jsonio.dumps({name: data[name] for name in ("session_id", "agent") if name in data} | {"turn": said})


_ADDED = "SELECT DISTINCT project, session_id FROM main.capture_turns WHERE rowid > ?"
_KEPT = "SELECT hlc, w, seq, turns, digest, sum FROM main.capture_digests WHERE project = ? AND session_id = ?"
_COUNT = "SELECT count(*) FROM main.capture_turns WHERE project = ? AND session_id = ?"
_TURNS = (
    "SELECT hlc, w, seq, data FROM main.capture_turns WHERE project = ? AND session_id = ? AND rowid > ? "
    "ORDER BY hlc, w, seq"
)
_KEEP = "INSERT OR REPLACE INTO main.capture_digests VALUES (?, ?, ?, ?, ?, ?, ?, ?)"


def checksum(digest: bytes) -> str:
    return hashing.blake2b(digest, digest_size=16).hexdigest()


def folded(data: bytes) -> dict[str, Any]:
    """A stored turn's record, as its event was checked when its line was read (`readable_events`)."""
    event = jsonio.loads(data)
    return turn_of(event) if isinstance(event, dict) else {}


def summarise(db: Writer, after: int) -> None:
    """The digests of the sessions of the turns added past rowid `after`: their new turns folded in when they
    all follow what the digest holds, else the session's turns folded again, oldest first."""
    for project, session_id in db.execute(_ADDED, (after,)).fetchall():
        where = (project, session_id)
        kept = db.execute(_KEPT, where).fetchone()
        added = db.execute(_TURNS, (*where, after)).fetchall()
        digest: dict[str, Any] = {}
        holds = kept is not None and kept[3] + len(added) == db.execute(_COUNT, where).fetchone()[0]
        if (
            holds
            and tuple(added[0][:3]) > tuple(kept[:3])
            and isinstance(kept[4], bytes)
            and checksum(kept[4]) == kept[5]
        ):
            loaded = jsonio.loads(kept[4])
            digest = loaded if isinstance(loaded, dict) else {}
        if not digest:
            added = db.execute(_TURNS, (*where, 0)).fetchall()
        for *_, data in added:
            fold_in(digest, folded(data))
        blob = jsonio.dumps(digest)
        db.execute(_KEEP, (*where, *added[-1][:3], digest["turns"], blob, checksum(blob)))


def unneeded(events: Sequence[Event]) -> dict[str, tuple[str, ...]]:
    """Compaction (scan.Unneeded): every captured turn stays; other kinds are not ours."""
    return {event.id: () for event in events if event.kind != TURN_KIND}


PROJECTION = Projection(
    # 2: decisions read clause by clause, work by what changes; 3: each session's digest kept; 4: which turns change
    # something, kept as a column (what ages earlier sessions' decisions is read without decoding the turns)
    Format("capture", 4, ("contextflow.capture.projection", "contextflow.capture.digest")),
    SCHEMA,
    INSERTS,
    rows,
    ("capture_turns",),
    ("capture_turns", "capture_sessions", "capture_digests"),
    merged=(  # (core/rest.py) a turn once: its earliest event, as the insert keeps it; a session's newest turn
        (
            "capture_turns",
            "SELECT * FROM main.{t} r WHERE NOT EXISTS (SELECT 1 FROM base.{t} b WHERE b.turn = r.turn "
            "AND (b.hlc, b.w, b.seq) <= (r.hlc, r.w, r.seq)) UNION ALL SELECT * FROM base.{t} b WHERE NOT EXISTS "
            "(SELECT 1 FROM main.{t} r WHERE r.turn = b.turn AND (r.hlc, r.w, r.seq) < (b.hlc, b.w, b.seq))",
        ),
        (
            "capture_sessions",
            "SELECT * FROM main.{t} r WHERE NOT EXISTS (SELECT 1 FROM base.{t} b WHERE b.project = r.project AND "
            "b.session_id = r.session_id AND (b.hlc, b.w, b.seq) >= (r.hlc, r.w, r.seq)) UNION ALL SELECT * FROM "
            "base.{t} b WHERE NOT EXISTS (SELECT 1 FROM main.{t} r WHERE r.project = b.project AND "
            "r.session_id = b.session_id AND (r.hlc, r.w, r.seq) > (b.hlc, b.w, b.seq))",
        ),
        merged_by("capture_digests", "project", "session_id"),  # (the reader checks it holds every turn)
    ),
    scoped=by_project("capture_turns", "capture_sessions", "capture_digests"),
    unneeded=unneeded,
    summarise=("capture_turns", summarise),
    summarise_rest=False,  # (a fresh machine's rest would fold every session it holds: the reader folds one)
)
