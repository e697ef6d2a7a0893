"""The activity feed: what happened across every project, agent and machine, newest first, page by page.

Served from the derived tables (`feed/projection.py`, kept by `core/tables.py`): a page is one indexed
query, so it answers in milliseconds whatever the store's size, and a process reads only its page.
While the tables do not hold every log (a build under way, another process holding their lock), a page
also reads the feed rows of the logs' remaining bytes (`core/rest.py`), merged in by the same queries; when
too much remains for that (a new machine), the page says it is partial and how far the build is.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from contextflow.core import checks
from contextflow.core.clock import MAX_HLC, stamp_from_ms, stamp_iso
from contextflow.core.errors import InputError
from contextflow.core.rest import Progress as Progress
from contextflow.core.tables import db_stamp, stamp_of
from contextflow.core.timeutil import iso_ms

if TYPE_CHECKING:
    from contextflow.app import App
    from contextflow.core.rest import Reading

_COLUMNS = "id, hlc, w, seq, project, agent, kind, session_id, text, dedupe"
_FILTERS = {"project": "project", "agent": "agent", "machine": "w", "kind": "kind", "session_id": "session_id"}


@dataclass(frozen=True, slots=True)
class FeedItem:
    id: str  # the event's id (pass it as `before` for the next page)
    at: str  # ISO-8601 UTC
    project: str
    agent: str | None
    machine: str  # the writer that appended it
    kind: str  # the event kind: note, handoff, capture.turn, graph.node, context.set, timeline.*, conversation.save
    session_id: str | None
    text: str  # cleaned, on one line, at most feed.table.TEXT_CHARS characters


@contextlib.contextmanager
def _reading(app: App) -> Iterator[Reading]:
    from contextflow.capture.projection import PROJECTION as CAPTURE
    from contextflow.core.rest import reading
    from contextflow.feed.projection import PROJECTION
    from contextflow.sessions.projection import PROJECTION as SESSIONS

    tables = app.tables()
    with tables.as_of_now():  # the logs checked once (a held lock waited for once), not once a query
        yield reading(tables, (PROJECTION.name, SESSIONS.name, CAPTURE.name))  # (the texts they keep: `_texts`)


def _order_key(read: Reading, before: str) -> tuple[int, str, int]:
    """The order key a page ends at: a feed item's id, or an ISO time (items strictly older)."""
    found = read.query("SELECT hlc, w, seq FROM feed WHERE id = ?", (before,))
    if found:
        hlc, writer, seq = found[0]
        return int(hlc), str(writer), int(seq)  # (as stored)
    when = iso_ms(before)
    if when is None:
        raise InputError(
            f"before must be the id of a feed item (the last one of the page before) or an ISO time such as "
            f"2026-05-01T12:00:00Z; {before[:80]!r} is neither"
        )
    return db_stamp(min(stamp_from_ms(max(when, 0)), MAX_HLC)), "", -1


def _text(value: str | None, name: str) -> str | None:
    return checks.trimmed(value, name, max_chars=200)


def recent(
    app: App,
    *,
    project: str | None = None,
    agent: str | None = None,
    machine: str | None = None,
    kind: str | None = None,
    session_id: str | None = None,
    before: str | None = None,
    limit: int = 50,
) -> list[FeedItem]:
    """The newest feed items matching every filter given, older than `before` when given; `limit` up to
    feed.fields.MAX_LIMIT (the table's row checks it)."""
    given = {"project": project, "agent": agent, "machine": machine, "kind": kind, "session_id": session_id}
    return page(app, given, before, limit).items


@dataclass(frozen=True, slots=True)
class Page:
    items: list[FeedItem]
    facets: dict[str, list[str]]
    partial: Progress | None  # None: complete; else the items may miss what the tables do not hold yet


def page(app: App, given: dict[str, str | None], before: str | None = None, limit: int = 50) -> Page:
    """`recent`'s items for the filters `given` (names of `_FILTERS`) and `facets`, read together."""
    with _reading(app) as read:
        return Page(_page(app, read, given, before, limit), _facets(app, read), read.partial)


def _page(app: App, read: Reading, given: dict[str, str | None], before: str | None, limit: int) -> list[FeedItem]:
    where: list[str] = []
    params: list[Any] = []
    for name, value in given.items():
        text = _text(value, name)
        if text:
            where.append(f"{_FILTERS[name]} = ?")
            params.append(text)
    allowed = readable_projects(app)
    if allowed is not None:
        where.append(f"project IN ({', '.join('?' * len(allowed))})" if allowed else "0")
        params += sorted(allowed)
    if before is not None:
        end = _text(before, "before")
        if end:
            where.append("(hlc, w, seq) < (?, ?, ?)")
            params += _order_key(read, end)
    clause = f"WHERE {' AND '.join(where)} " if where else ""
    sql = f"SELECT {_COLUMNS} FROM feed {clause}ORDER BY hlc DESC, w DESC, seq DESC LIMIT ?"
    found = read.query(sql, (*params, limit))
    texts = _texts(read, [(row[0], row[6]) for row in found if row[8] is None])
    return [
        FeedItem(row[0], stamp_iso(stamp_of(row[1])), row[4], row[5], row[2], row[6], row[7], texts.get(row[0], row[8]))
        for row in found
    ]


def _texts(read: Reading, items: list[tuple[str, str]]) -> dict[str, str]:
    """The lines of the feed items (id, kind) whose rows hold no text, made from the data the sessions' or
    the captured turns' table keeps under their ids (`feed/projection.kept_elsewhere`)."""
    from contextflow.sessions.projection import DATA_COLUMNS

    turns = [event_id for event_id, kind in items if kind == "capture.turn"]
    entries = [event_id for event_id, kind in items if kind != "capture.turn"]
    found: dict[str, str] = {}
    for ids, sql in (
        (entries, f"SELECT id, kind, {DATA_COLUMNS} FROM sessions_entries WHERE id IN "),
        (turns, "SELECT id, 'capture.turn', data FROM capture_turns WHERE id IN "),
    ):
        if ids:
            found |= {row[0]: _line(*row[1:]) for row in read.query(f"{sql}({', '.join('?' * len(ids))})", ids)}
    return found | {event_id: "" for event_id, _ in items if event_id not in found}  # (none: they hold each)


@functools.lru_cache(maxsize=256)  # a page asked again (its refresh) makes each line once
def _line(kind: str, *columns: Any) -> str:
    """A feed line from the stored columns of its event's data (what they hold, not its id, is the key): an
    entry's DATA_COLUMNS, or a captured turn's data."""
    from contextflow.core import jsonio
    from contextflow.feed.projection import text_of
    from contextflow.sessions.projection import data_of

    if kind == "capture.turn":
        data = jsonio.loads(columns[0])
        return text_of(kind, data if isinstance(data, dict) else {})
    return text_of(kind, data_of(columns))


def facets(app: App) -> dict[str, list[str]]:
    """The distinct projects, agents, machines and kinds of the feed (for its filters), sorted."""
    with _reading(app) as read:
        return _facets(app, read)


def _facets(app: App, read: Reading) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {"project": [], "agent": [], "machine": [], "kind": []}
    allowed = readable_projects(app)
    for facet, value in sorted(read.query("SELECT facet, value FROM feed_facets")):
        if facet in found and (facet != "project" or allowed is None or value in allowed):
            found[facet].append(value)
    return {
        "projects": found["project"],
        "agents": found["agent"],
        "machines": found["machine"],
        "kinds": found["kind"],
    }


def readable_projects(app: App) -> frozenset[str] | None:
    """The projects this app may read (an HTTP grant's), or None for all of them."""
    grant = getattr(app.store, "grant", None)
    read = getattr(grant, "read", None)
    return frozenset(read) if read is not None else None
