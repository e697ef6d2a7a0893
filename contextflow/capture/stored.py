"""Captured turns read from the derived tables (`capture/projection.py`) or, where a store cannot use them
(tables that do not open), from the `activity` view: the same answers either way. A store scoped to some projects (an
HTTP grant's) reads only their turns.

Each query reads only the turns it returns: the newest turn of a project that did work, the turns
linking given handoffs, one session's turns, a page of the turns that did work, the newest turns that
said something. `recall.py` composes them into what a session start shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from contextflow.capture.projection import turn_of
from contextflow.core import jsonio
from contextflow.core.events import Event, OrderKey

if TYPE_CHECKING:
    from contextflow.app import App
    from contextflow.core.rest import Reading

_TURN = "id, hlc, w, seq, data"
_NEWEST_FIRST = "ORDER BY hlc DESC, w DESC, seq DESC"
_OLDEST_FIRST = "ORDER BY hlc, w, seq"


class Turns:
    """A project's captured turns, from the activity view (the base: a fold of every turn in memory)."""

    def __init__(self, app: App, project: str) -> None:
        self.app, self.project = app, project
        self._sessions: dict[str, list[Event]] | None = None

    def sessions(self) -> dict[str, list[Event]]:
        if self._sessions is None:
            from contextflow import ondisk
            from contextflow.capture.view import ActivityView

            state = ondisk.view(self.app, ActivityView)
            found = state.by_session.items()
            self._sessions = {sid: events for (p, sid), events in found if p == self.project and events}
        return self._sessions

    def latest_work(self) -> tuple[str, Event] | None:
        """(session, turn) of the newest turn that did work and wrote no handoff."""
        best: tuple[OrderKey, str, Event] | None = None
        for sid, events in self.sessions().items():
            last = next((event for event in reversed(events) if _works(turn_of(event.data))), None)
            if last is not None and (best is None or last.key > best[0]):
                best = (last.key, sid, last)
        return (best[1], best[2]) if best else None

    def linking(self, ids: Sequence[str]) -> dict[str, tuple[str, Event]]:
        """Handoff id -> (session, the newest turn that wrote it), for the given ids."""
        wanted: set[str] = set(ids)
        links: dict[str, tuple[str, Event]] = {}
        for sid, events in self.sessions().items():
            for event in events:
                handoff = turn_of(event.data).get("handoff")
                if isinstance(handoff, dict) and handoff.get("id") in wanted:
                    linked = links.get(handoff["id"])
                    if linked is None or event.key > linked[1].key:
                        links[handoff["id"]] = (sid, event)
        return links

    def holding(self, session_ids: Sequence[str]) -> set[str]:
        """Those of `session_ids` with captured turns."""
        return {sid for sid in session_ids if sid in self.sessions()}

    def session(self, session_id: str) -> list[Event]:
        return self.sessions().get(session_id, [])

    def work_page(self, before: OrderKey | None, size: int) -> list[tuple[str, Event]]:
        """(session, turn) of the `size` newest turns that did work (as `latest_work` counts it) before
        `before`, newest first. Their data may be as stored (not conformed): read it as any shape."""
        found = [
            (sid, event)
            for sid, events in self.sessions().items()
            for event in events
            if (before is None or event.key < before) and _works(turn_of(event.data))
        ]
        return sorted(found, key=lambda pair: pair[1].key, reverse=True)[:size]

    def said_since(self, floor: OrderKey | None, size: int, before: OrderKey | None = None) -> list[Event]:
        """The `size` newest turns that said something before `before`, none before `floor`, newest first.
        Their data may be as stored (not conformed): read it as any shape (`substance.of_turn` does)."""
        found = [
            event
            for events in self.sessions().values()
            for event in events
            if (floor is None or event.key >= floor)
            and (before is None or event.key < before)
            and _says(turn_of(event.data))
        ]
        return sorted(found, key=lambda event: event.key, reverse=True)[:size]


class DiskTurns(Turns):
    """The same, each answer a query of the derived tables (with the rows of the logs' remaining bytes
    while they do not hold every log: `core/rest.py`)."""

    def __init__(self, app: App, project: str, read: Reading) -> None:
        super().__init__(app, project)
        self.read = read

    def _query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self.read.query(sql, params)

    def _events(self, rows: list[tuple[Any, ...]], conformed: bool = True) -> list[Event]:
        """The rows' events, each checked as read (a file like any other); `conformed=False` for a caller
        that reads its data as untrusted shapes anyway (`digest.turn_changes_something`, `substance.of_turn`):
        no check, three times faster."""

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
        sql = f"SELECT session_id, {_TURN} FROM capture_turns WHERE project = ? AND work = 1 {_NEWEST_FIRST} LIMIT 1"
        rows = self._query(sql, (self.project,))
        return (str(rows[0][0]), self._events([rows[0][1:]])[0]) if rows else None

    def linking(self, ids: Sequence[str]) -> dict[str, tuple[str, Event]]:
        if not ids:
            return {}
        marks = ", ".join("?" * len(ids))
        sql = f"SELECT session_id, handoff, {_TURN} FROM capture_turns WHERE project = ? AND handoff IN ({marks})"
        rows = self._query(f"{sql} {_OLDEST_FIRST}", (self.project, *ids))
        events = self._events([row[2:] for row in rows])
        return {str(row[1]): (str(row[0]), event) for row, event in zip(rows, events, strict=True)}  # newest wins

    def holding(self, session_ids: Sequence[str]) -> set[str]:
        if not session_ids:
            return set()
        marks = ", ".join("?" * len(session_ids))
        sql = f"SELECT session_id FROM capture_sessions WHERE project = ? AND session_id IN ({marks})"
        return {str(sid) for (sid,) in self._query(sql, (self.project, *session_ids))}

    def session(self, session_id: str) -> list[Event]:
        sql = f"SELECT {_TURN} FROM capture_turns WHERE project = ? AND session_id = ? {_OLDEST_FIRST}"
        return self._events(self._query(sql, (self.project, session_id)))

    def work_page(self, before: OrderKey | None, size: int) -> list[tuple[str, Event]]:
        from contextflow.core.tables import db_stamp

        after = "AND (hlc, w, seq) < (?, ?, ?)" if before is not None else ""
        sql = f"SELECT session_id, {_TURN} FROM capture_turns WHERE project = ? AND work = 1 {after} {_NEWEST_FIRST}"
        key = (db_stamp(before[0]), before[1], before[2]) if before is not None else ()
        rows = self._query(f"{sql} LIMIT ?", (self.project, *key, size))
        events = self._events([row[1:] for row in rows], conformed=False)  # (only classified: any shape is read)
        return list(zip((str(row[0]) for row in rows), events, strict=True))

    def said_since(self, floor: OrderKey | None, size: int, before: OrderKey | None = None) -> list[Event]:
        from contextflow.core.tables import db_stamp

        where = ["project = ?", "said = 1"]
        params: list[Any] = [self.project]
        for key, test in ((floor, ">="), (before, "<")):
            if key is not None:
                where.append(f"(hlc, w, seq) {test} (?, ?, ?)")
                params += [db_stamp(key[0]), key[1], key[2]]
        sql = f"SELECT {_TURN} FROM capture_turns WHERE {' AND '.join(where)} {_NEWEST_FIRST} LIMIT ?"
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


def reading(app: App) -> Reading | None:
    """How this call reads captured turns from the derived tables (`core/rest.py`: with the rows of the
    logs' remaining bytes while a build runs or another process holds their lock, never "no turns" from
    an unfinished build), or None where a store does not read them (the activity view answers)."""
    from contextflow.capture.projection import PROJECTION
    from contextflow.core import rest
    from contextflow.sessions.stored import disk

    return rest.reading(app.tables(), (PROJECTION.name,)) if disk(app) else None


def known_turns(app: App) -> KnownTurns | set[str]:
    """The turn ids captured before: from the derived tables, else (tables that do not open) the logs."""
    read = reading(app)
    if read is not None:
        return KnownTurns(read)
    from contextflow import ondisk
    from contextflow.capture.view import ActivityView

    return set(ondisk.view(app, ActivityView).turn_ids)


def turns(app: App, project: str) -> Turns:
    """The project's captured turns, from the derived tables where this store reads them (`reading`)."""
    read = reading(app)
    return DiskTurns(app, project, read) if read is not None else Turns(app, project)


def _works(turn: dict[str, Any]) -> bool:
    from contextflow.capture.digest import turn_has_work

    return turn_has_work(turn) and "handoff" not in turn


def _says(turn: dict[str, Any]) -> bool:
    from contextflow.capture.substance import of_turn

    return bool(of_turn(turn))
