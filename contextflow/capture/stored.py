"""Captured turns read from the derived tables (`capture/projection.py`): beside the rows of the logs'
remaining bytes while they do not hold every log, those rows alone where they do not open (`core/rest.py`).
A store scoped to some projects (an HTTP grant's) reads only their turns.

Each query reads only the turns it returns: the newest turn of a project that did work, the turns
linking given handoffs, one session's turns, a page of the turns that did work, the newest turns that
said something. `recall.py` composes them into what a session start shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from contextflow.core import jsonio
from contextflow.core.events import Event, OrderKey

if TYPE_CHECKING:
    from contextflow.app import App
    from contextflow.core.rest import Reading

_TURN = "id, hlc, w, seq, data"
_NEWEST_FIRST = "ORDER BY hlc DESC, w DESC, seq DESC"
_OLDEST_FIRST = "ORDER BY hlc, w, seq"


class Turns:
    """A project's captured turns, each answer a query of the derived tables (with the rows of the logs'
    remaining bytes while they do not hold every log, or alone where the tables do not open: `core/rest.py`)."""

    def __init__(self, app: App, project: str, read: Reading) -> None:
        self.app, self.project, self.read = app, project, read

    def _query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self.read.query(sql, params)

    def _events(self, rows: list[tuple[Any, ...]], conformed: bool = True) -> list[Event]:
        """The rows' events, each checked as read (a file like any other); `conformed=False` for a caller
        that reads its data as untrusted shapes anyway (`substance.of_turn`): no check, three times faster."""

        from contextflow.core.fields import conform
        from contextflow.core.tables import stamp_of

        schema, found = self.app.store.fields, []
        for event_id, hlc, writer, seq, blob in rows:
            data = jsonio.loads(blob)
            if conformed or not isinstance(data, dict):
                data, _ = conform(schema, "capture.turn", data if isinstance(data, dict) else {})
            found.append(Event(event_id, writer, seq, stamp_of(hlc), "capture.turn", data))
        return found

    def latest_work(self) -> tuple[str, Event] | None:
        """(session, turn) of the newest turn that did work and wrote no handoff."""
        sql = f"SELECT session_id, {_TURN} FROM capture_turns WHERE project = ? AND work = 1 {_NEWEST_FIRST} LIMIT 1"
        rows = self._query(sql, (self.project,))
        return (str(rows[0][0]), self._events([rows[0][1:]])[0]) if rows else None

    def linking(self, ids: Sequence[str]) -> dict[str, tuple[str, Event]]:
        """Handoff id -> (session, the newest turn that wrote it), for the given ids."""
        if not ids:
            return {}
        marks = ", ".join("?" * len(ids))
        sql = f"SELECT session_id, handoff, {_TURN} FROM capture_turns WHERE project = ? AND handoff IN ({marks})"
        rows = self._query(f"{sql} {_OLDEST_FIRST}", (self.project, *ids))
        events = self._events([row[2:] for row in rows])
        return {str(row[1]): (str(row[0]), event) for row, event in zip(rows, events, strict=True)}  # newest wins

    def holding(self, session_ids: Sequence[str]) -> set[str]:
        """Those of `session_ids` with captured turns."""
        if not session_ids:
            return set()
        marks = ", ".join("?" * len(session_ids))
        sql = f"SELECT session_id FROM capture_sessions WHERE project = ? AND session_id IN ({marks})"
        return {str(sid) for (sid,) in self._query(sql, (self.project, *session_ids))}

    def digest(self, session_id: str) -> dict[str, Any] | None:
        """The session's digest as kept (`projection.summarise`) when it holds exactly the session's turns as
        they are now (its newest turn, their count, its checksum), else None: fold `session`'s turns."""
        from contextflow.capture.projection import checksum

        sql = (
            "SELECT d.turns, d.digest, d.sum, (SELECT count(*) FROM capture_turns t WHERE t.project = d.project "
            "AND t.session_id = d.session_id) FROM capture_digests d JOIN capture_sessions s ON "
            "s.project = d.project AND s.session_id = d.session_id AND (s.hlc, s.w, s.seq) = (d.hlc, d.w, d.seq) "
            "WHERE d.project = ? AND d.session_id = ?"
        )
        rows = self._query(sql, (self.project, session_id))
        if (
            not rows
            or rows[0][0] != rows[0][3]
            or not isinstance(rows[0][1], bytes)
            or checksum(rows[0][1]) != rows[0][2]
        ):
            return None
        digest = jsonio.loads(rows[0][1])
        return digest if isinstance(digest, dict) and digest.get("turns") == rows[0][0] else None

    def session(self, session_id: str) -> list[Event]:
        sql = f"SELECT {_TURN} FROM capture_turns WHERE project = ? AND session_id = ? {_OLDEST_FIRST}"
        return self._events(self._query(sql, (self.project, session_id)))

    def work_keys(self, size: int) -> list[tuple[str, OrderKey, bool]]:
        """(session, key, whether it changed something) of the `size` newest turns that did work (as
        `latest_work` counts it), newest first: read from their columns, no turn decoded."""
        from contextflow.core.tables import stamp_of

        sql = "SELECT session_id, hlc, w, seq, changes FROM capture_turns WHERE project = ? AND work = 1 "
        sql += _NEWEST_FIRST
        rows = self._query(f"{sql} LIMIT ?", (self.project, size))
        return [(str(sid), (stamp_of(hlc), str(w), int(seq)), bool(changes)) for sid, hlc, w, seq, changes in rows]

    def said_since(self, floor: OrderKey | None, size: int, before: OrderKey | None = None) -> list[Event]:
        """The `size` newest turns that said something before `before`, none before `floor`, newest first. Each
        event's data is what its turn said (`projection.said_of`): a turn holding only that, its files' state
        and its agent, any shape (`substance.of_turn` reads it)."""
        from contextflow.core.tables import db_stamp

        where = ["project = ?", "says IS NOT NULL"]
        params: list[Any] = [self.project]
        for key, test in ((floor, ">="), (before, "<")):
            if key is not None:
                where.append(f"(hlc, w, seq) {test} (?, ?, ?)")
                params += [db_stamp(key[0]), key[1], key[2]]
        sql = f"SELECT id, hlc, w, seq, says FROM capture_turns WHERE {' AND '.join(where)} {_NEWEST_FIRST} LIMIT ?"
        return self._events(self._query(sql, (*params, size)), conformed=False)


class KnownTurns:
    """The turn ids captured before, each looked up in the derived tables, and those added since (an import
    of transcripts skips a turn it finds here: captured live, or imported before)."""

    def __init__(self, read: Reading) -> None:
        self.read, self.added = read, set[str]()

    def __contains__(self, turn_id: object) -> bool:
        if turn_id in self.added:
            return True
        sql = "SELECT 1 FROM capture_turns WHERE turn = ?"
        return isinstance(turn_id, str) and bool(self.read.query(sql, (f"t:{turn_id}",)))

    def add(self, turn_id: str) -> None:
        self.added.add(turn_id)


def reading(app: App) -> Reading:
    """How this call reads captured turns: the derived tables, or while a build runs or another process
    holds their lock the tables with the rows of the logs' remaining bytes (`core/rest.py`: never "no
    turns" from an unfinished build), or those rows alone where the tables do not open (`ondisk.reading`: a
    ContextFlowMCP file over its size limit is never read; `ondisk.partial` says whether the last was partial)."""
    from contextflow import ondisk
    from contextflow.capture.projection import PROJECTION

    return ondisk.reading(app, PROJECTION)


def known_turns(app: App) -> KnownTurns:
    """The turn ids captured before (`KnownTurns`)."""
    return KnownTurns(reading(app))


def turns(app: App, project: str) -> Turns:
    """The project's captured turns (`reading`)."""
    return Turns(app, project, reading(app))
