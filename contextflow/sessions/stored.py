"""Sessions read from the derived tables on disk (`sessions/projection.py`): each call reads only what it
shows (a latest handoff, a page of entries, a few summaries), whatever the store's size.

The one way `sessions/core.py` reads sessions: it calls `ready` (which asks `current`) before these
queries. A store scoped to some projects (an HTTP grant's, `Store.read_projects`) reads the same tables,
each a view of its projects' rows (`Projection.scoped`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from contextflow.core import jsonio
from contextflow.core.clock import stamp_from_ms, stamp_iso
from contextflow.core.events import Event, OrderKey
from contextflow.core.fields import conform
from contextflow.core.tables import db_stamp, stamp_of
from contextflow.core.timeutil import iso_ms
from contextflow.sessions.view import NO_SESSION, Marks, SessionSummary

if TYPE_CHECKING:
    from contextflow.app import App
    from contextflow.core.rest import Progress, Reading
    from contextflow.core.store import Store
    from contextflow.sessions.core import EntryFilter

_ENTRY = "e.id, e.hlc, e.w, e.seq, e.kind, e.project, e.session_id, e.agent, e.task, e.summary, e.shared, e.data"
_NOT_WRONG = (
    "NOT EXISTS (SELECT 1 FROM sessions_marks m WHERE m.project = e.project AND m.session_id = e.session_id "
    "AND m.handoff = e.id)"
)
_NEWEST_FIRST = "ORDER BY e.hlc DESC, e.w DESC, e.seq DESC"


def disk(app: App) -> bool:
    """Whether the views `ondisk.py` serves are read from the derived tables: a store that shares this
    machine's state (every app's but a test's oracle; a batch's reads too: `Tables.overlaid`). Sessions
    are always read from the tables (`current`)."""
    if not app.store.shares_state:
        return False
    tables = app.tables()
    return not tables.oversized() and tables.usable()


_READINGS: WeakKeyDictionary[Store, Reading] = WeakKeyDictionary()  # how this store's last `current` reads


def current(app: App) -> bool:
    """Whether the queries below answer (False only where the tables do not open or a ContextFlowMCP file is
    over its size limit: `ready` says which): the tables when they hold every log's events, else the tables
    as built with the rows of the logs' remaining bytes (`core/rest.py`; the logs' rows alone while another
    process holds the tables locked), or while more than its bound remains the logs' newest bytes only, and
    then `partial` says how far the build is. Never "no session" from an unfinished build. A store scoped to
    some projects reads them too (each query keeps to those)."""
    tables = app.tables()
    if tables.oversized() or (not tables.usable() and not tables.busy):
        return False
    from contextflow.core.rest import reading
    from contextflow.sessions.projection import PROJECTION

    _READINGS[app.store] = reading(tables, (PROJECTION.name,))
    return True


def ready(app: App) -> None:
    """Raise, saying why and what to do, unless the queries below answer now (`current`)."""
    if current(app):
        return
    from contextflow.core import legacy
    from contextflow.core.errors import StoreError

    roots, limit = app.store.location.legacy_files, app.store.legacy_max_bytes
    for path in legacy.files(roots) if roots else ():
        if size := legacy.oversize(path, roots, limit):
            raise StoreError(legacy.oversized_message(path, size, limit))
    raise StoreError(
        f"the derived tables {app.tables().path} cannot be opened (a read-only or full state folder?); "
        "free space or fix the folder's permissions, then `contextflow doctor --fix`"
    )


def partial(app: App) -> Progress | None:
    """How far the build is, when the last `current` read only the logs' newest bytes beside the tables."""
    found = _READINGS.get(app.store)
    return found.partial if found is not None else None


def _query(app: App, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Rows of `sql` over the sessions tables, as the last `current` of this store chose to read them (its
    callers ask `current` first)."""
    found = _READINGS.get(app.store)
    return found.query(sql, params) if found is not None else app.tables().query(sql, params)


def _event(app: App, row: Sequence[Any]) -> Event:
    from contextflow.sessions.projection import data_of

    event_id, hlc, writer, seq, kind = row[:5]
    data, _ = conform(app.store.fields, kind, data_of(row[5:]))  # a file like any other: checked as read
    return Event(event_id, writer, seq, stamp_of(hlc), kind, data)


def _key(app: App, event_id: str) -> tuple[int, str, int] | None:
    found = _query(app, "SELECT hlc, w, seq FROM sessions_entries WHERE id = ?", (event_id,))
    return (int(found[0][0]), str(found[0][1]), int(found[0][2])) if found else None


def _where(app: App, where: EntryFilter) -> tuple[list[str], list[Any]] | None:
    """The SQL conditions of `where` (None: nothing can match, its `before` entry is unknown)."""
    clauses: list[str] = ["e.project = ?"]
    params: list[Any] = [where.project]
    if where.session_id == NO_SESSION:
        clauses.append("e.session_id = ''")
    elif where.session_id:
        clauses.append("e.session_id = ?")
        params.append(where.session_id)
    if where.agent:
        clauses.append("e.agent = ?")
        params.append(where.agent)
    if where.kind:
        clauses.append("e.kind = ?")
        params.append(where.kind)
    if where.since and (since := iso_ms(where.since)) is not None:
        clauses.append("e.hlc >= ?")
        params.append(db_stamp(stamp_from_ms(max(since, 0))))
    if where.before:
        key = _key(app, where.before)
        if key is None:
            return None
        clauses.append("(e.hlc, e.w, e.seq) < (?, ?, ?)")
        params += key
    if where.skip:
        clauses.append(f"e.id NOT IN ({', '.join('?' * len(where.skip))})")
        params += sorted(where.skip)
    return clauses, params


def entries(app: App, where: EntryFilter, count: int | None, *, superseded: bool = False) -> list[Event]:
    """Up to `count` newest entries matching `where` (older than `where.before`), oldest first; an
    automatic handoff a newer one of its session replaced is left out unless `superseded`."""
    found = _where(app, where)
    if found is None:
        return []
    clauses, params = found
    if not superseded:
        clauses.append("e.superseded = 0")
    sql = f"SELECT {_ENTRY} FROM sessions_entries e WHERE {' AND '.join(clauses)} {_NEWEST_FIRST} LIMIT ?"
    return [_event(app, row) for row in reversed(_query(app, sql, (*params, -1 if count is None else count)))]


def entry(app: App, event_id: str) -> Event | None:
    """The note or handoff with this id."""
    rows = _query(app, f"SELECT {_ENTRY} FROM sessions_entries e WHERE e.id = ?", (event_id,))
    return _event(app, rows[0]) if rows else None


def latest_handoff(app: App, where: EntryFilter) -> Event | None:
    """The newest handoff matching `where` that no note marked wrong (superseded ones included: the
    current automatic handoff may be the one marked)."""
    found = _where(app, where)
    if found is None:
        return None
    clauses, params = found
    clauses += ["e.kind = 'handoff'", _NOT_WRONG]
    sql = f"SELECT {_ENTRY} FROM sessions_entries e WHERE {' AND '.join(clauses)} {_NEWEST_FIRST} LIMIT 1"
    rows = _query(app, sql, params)
    return _event(app, rows[0]) if rows else None


_SUMMARY = "session_id, entries, notes, handoffs, hlc, w, seq, last_kind, task, task_hlc, task_w, task_seq"
_RECENT = "ORDER BY hlc DESC, w DESC, seq DESC, session_id DESC"
# each listed session's agents and its newest handoff with a summary no note marked wrong, in the same query
_SUMMARY_EXTRAS = (
    "(SELECT json_group_array(a.agent) FROM sessions_agents a WHERE a.project = s.project "
    "AND a.session_id = s.session_id), h.hlc, h.w, h.seq, h.summary"
)
_HANDOFF_SHOWN = (  # the newest handoff of session `s` with a summary that no note marked wrong
    "FROM sessions_entries e WHERE e.project = s.project AND e.session_id = s.session_id "
    f"AND e.kind = 'handoff' AND e.summary IS NOT NULL AND {_NOT_WRONG} {_NEWEST_FIRST} LIMIT 1"
)
_LATEST_SUMMARY = f"h.id = (SELECT e.id {_HANDOFF_SHOWN})"


def summaries(app: App, project: str, limit: int | None = None, session_id: str | None = None) -> list[SessionSummary]:
    """Session summaries of a project, most recent first (or the one of `session_id`): one query, whatever
    the number of sessions listed."""
    where, params = "project = ?", [project]
    if session_id is not None:
        where += " AND session_id = ?"
        params.append(session_id)
    listed = f"SELECT {_SUMMARY}, project FROM sessions WHERE {where} {_RECENT} LIMIT ?"
    sql = (
        f"SELECT s.session_id, s.entries, s.notes, s.handoffs, s.hlc, s.w, s.seq, s.last_kind, s.task, s.task_hlc, "
        f"s.task_w, s.task_seq, {_SUMMARY_EXTRAS} FROM ({listed}) s LEFT JOIN sessions_entries h ON {_LATEST_SUMMARY} "
        f"ORDER BY s.hlc DESC, s.w DESC, s.seq DESC, s.session_id DESC"
    )
    found = []
    for row in _query(app, sql, (*params, -1 if limit is None else limit)):
        sid, count, notes, handoffs, hlc, writer, seq, last_kind, task, task_hlc, task_w, task_seq = row[:12]
        agents, handoff_hlc, handoff_w, handoff_seq, handoff_summary = row[12:]
        latest: OrderKey = (stamp_of(hlc), writer, seq)
        summary = SessionSummary(sid, project, count, notes, handoffs, latest, stamp_iso(latest[0]), last_kind)
        if task is not None:
            summary.task, summary.task_key = task, (stamp_of(task_hlc), task_w, task_seq)
        summary.agents = set(jsonio.loads(agents)) if agents else set()
        if handoff_hlc is not None:
            summary.handoff_key = (stamp_of(handoff_hlc), handoff_w, handoff_seq)
            summary.latest_handoff_summary = str(handoff_summary).strip()
        found.append(summary)
    return found


def listing_signature(app: App, project: str, limit: int) -> tuple[tuple[str, str, int, str, str], ...]:
    """(session id, last active time to the second, entries, task, latest handoff summary) of the project's `limit`
    most recent sessions, as `summaries` gives them: one query, without the agents or SessionSummary objects."""
    sql = (
        f"SELECT s.session_id, s.hlc, s.entries, s.task, (SELECT e.summary {_HANDOFF_SHOWN}) "
        f"FROM sessions s WHERE s.project = ? {_RECENT} LIMIT ?"
    )
    return tuple(
        (sid, stamp_iso(stamp_of(hlc))[:19], count, task or "", str(summary).strip() if summary is not None else "")
        for sid, hlc, count, task, summary in _query(app, sql, (project, limit))
    )


def superseded(app: App, ids: Sequence[str]) -> set[str]:
    """Those of `ids` that are automatic handoffs a newer one of their session replaced."""
    marks = ", ".join("?" * len(ids))
    sql = f"SELECT id FROM sessions_entries WHERE id IN ({marks}) AND superseded = 1"
    return {event_id for (event_id,) in _query(app, sql, ids)}


def projects(app: App) -> list[tuple[str, int, int, str, list[str]]]:
    """(name, entries, sessions, latest time, agents) of every project with entries, most recent first."""
    entries = _query(app, "SELECT project, count(*), max(hlc) FROM sessions_entries GROUP BY project")
    sessions = dict(_query(app, "SELECT project, count(*) FROM sessions GROUP BY project"))
    agents: dict[str, set[str]] = {}
    for project, agent in _query(app, "SELECT DISTINCT project, agent FROM sessions_agents"):
        agents.setdefault(project, set()).add(agent)
    found = [
        (name, count, sessions.get(name, 0), stamp_iso(stamp_of(newest)), sorted(agents.get(name, ())))
        for name, count, newest in entries
    ]
    return sorted(found, key=lambda p: (p[3], p[0]), reverse=True)


def projects_holding(app: App, session_id: str) -> list[str]:
    """The projects with entries in session `session_id`, most recently active first."""
    sql = "SELECT project FROM sessions WHERE session_id = ? ORDER BY hlc DESC, w DESC, seq DESC, project DESC"
    return [project for (project,) in _query(app, sql, (session_id,))]


def session_ids(app: App, project: str) -> list[str]:
    """The ids of the project's sessions, most recent first."""
    sql = "SELECT session_id FROM sessions WHERE project = ? ORDER BY hlc DESC, w DESC, seq DESC, session_id DESC"
    return [sid for (sid,) in _query(app, sql, (project,))]


def marks(app: App) -> Marks:
    """Handoffs marked wrong, keyed by (project, session, handoff id)."""
    found = _query(app, "SELECT project, session_id, handoff, note FROM sessions_marks")
    return {(project, sid, handoff): note for project, sid, handoff, note in found}


def bad_lines(app: App) -> int:
    return app.tables().bad_lines()
