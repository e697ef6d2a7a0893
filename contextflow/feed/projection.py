"""The feed's derived tables: one row per event a person cares about, and the distinct values to filter on.

A pure fold (`rows`): an event gives its feed row (cleaned, bounded text) and its facet rows; the
store, the order and "newest first" are `core/tables.py`'s and the queries' (`feed/core.py`).
The row of a note, a handoff or a captured turn with a session holds no text: the sessions' or the captured
turns' table keeps its data by its id, and a page makes its line from that (`text_of`): stored once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from contextflow.core import jsonio
from contextflow.core.events import Event
from contextflow.core.formats import Format
from contextflow.core.project import project_of
from contextflow.core.tables import Projection, Row, db_stamp
from contextflow.core.text import clip

TEXT_CHARS = 280  # a feed line's text, at most
NAME_CHARS = 100  # an agent's name or a session id, at most
FACETS = ("project", "agent", "machine", "kind")

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS feed(
    id TEXT NOT NULL UNIQUE, hlc INTEGER NOT NULL, w TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL,
    project TEXT NOT NULL, agent TEXT, session_id TEXT, text TEXT, dedupe TEXT)""",
    "CREATE UNIQUE INDEX IF NOT EXISTS feed_dedupe ON feed(dedupe) WHERE dedupe IS NOT NULL",  # (turns only)
    # a page is newest first: an index by time gives that order (writer and sequence only break a tie of
    # times); the project's keeps the whole order key, so a grant's `project IN (...)` stops at the page
    "CREATE INDEX IF NOT EXISTS feed_at ON feed(hlc)",
    "CREATE INDEX IF NOT EXISTS feed_project ON feed(project, hlc, w, seq)",
    "CREATE INDEX IF NOT EXISTS feed_agent ON feed(agent, hlc) WHERE agent IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS feed_machine ON feed(w, hlc)",
    "CREATE INDEX IF NOT EXISTS feed_kind ON feed(kind, hlc)",
    "CREATE INDEX IF NOT EXISTS feed_session ON feed(session_id, hlc) WHERE session_id IS NOT NULL",
    """CREATE TABLE IF NOT EXISTS feed_facets(
    facet TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY(facet, value)) WITHOUT ROWID""",
)

# a turn captured twice (two machines, a transcript read again) is listed once: its earliest event; an event
# read again is the row of the copy holding more (compaction keeps a superseded event reduced, under its id,
# while a sync-conflict copy from before holds it whole): the longer line, else the one naming an agent or a
# session, whichever copy is read first
INSERTS = {
    "feed": "INSERT INTO feed(id, hlc, w, seq, kind, project, agent, session_id, text, dedupe) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT(dedupe) WHERE dedupe IS NOT NULL DO UPDATE SET id = excluded.id, hlc = excluded.hlc, "
    "w = excluded.w, seq = excluded.seq, "
    "project = excluded.project, agent = excluded.agent, session_id = excluded.session_id, text = excluded.text "
    "WHERE (excluded.hlc, excluded.w, excluded.seq) < (hlc, w, seq) "
    "ON CONFLICT(id) DO UPDATE SET project = excluded.project, agent = excluded.agent, "
    "session_id = excluded.session_id, text = excluded.text "
    "WHERE (length(coalesce(excluded.text, '')), excluded.agent IS NOT NULL, excluded.session_id IS NOT NULL) "
    "> (length(coalesce(text, '')), agent IS NOT NULL, session_id IS NOT NULL)",
    "feed_facets": "INSERT OR IGNORE INTO feed_facets(facet, value) VALUES (?, ?)",
}


def _str(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return jsonio.dumps(value).decode()
    except TypeError:
        return ""


def _joined(*parts: Any) -> str:
    return " - ".join(text for text in (_str(part).strip() for part in parts) if text)


def _turn(data: dict[str, Any]) -> str:
    found = data.get("turn")
    turn: dict[str, Any] = found if isinstance(found, dict) else {}
    request, final = _str(turn.get("request")).strip(), _str(turn.get("final")).strip()
    return f"{request} -> {final}" if request and final else request or final


def _node(data: dict[str, Any]) -> str:
    kind = _str(data.get("type")).strip()
    body = _str(data.get("summary")).strip() or _str(data.get("content")).strip()
    return f"[{kind}] {body}" if kind else body


# the kinds a person follows, and the text each shows
TEXTS: dict[str, Callable[[dict[str, Any]], str]] = {
    "note": lambda d: _str(d.get("text")),
    "handoff": lambda d: _joined(d.get("task"), d.get("summary")),
    "capture.turn": _turn,
    "graph.node": _node,
    "context.set": lambda d: f"{_str(d.get('key'))}: {_str(d.get('value'))}",
    "timeline.thread": lambda d: _joined(d.get("name"), d.get("description")),
    "timeline.thought": lambda d: _joined(d.get("thought_type"), d.get("content")),
    "conversation.save": lambda d: _joined(d.get("topic"), d.get("summary")),
}
KINDS = tuple(TEXTS)


def kept_elsewhere(event: Event) -> bool:
    """Whether another projection keeps this event's data under its id: a note or a handoff (sessions), a
    captured turn with a session (capture: each turn id once, its earliest event, as here; a turn id ""
    is one turn there, not here). Its feed row holds no text: the line is made when read."""
    if event.kind != "capture.turn":
        return event.kind in ("note", "handoff")
    session_id = event.data.get("session_id")
    return isinstance(session_id, str) and bool(session_id.strip()) and event.data.get("turn_id") != ""


def text_of(kind: str, data: dict[str, Any]) -> str:
    """The line a feed item of this kind shows for an event's `data`: cleaned, at most TEXT_CHARS."""
    return clip(TEXTS[kind](data), TEXT_CHARS)


def _name(value: Any) -> str | None:
    return _clipped(value) if isinstance(value, str) and value.strip() else None


@functools.lru_cache(maxsize=4096)
def _clipped(name: str) -> str | None:
    """A name as the feed shows it (names repeat: each is cleaned once)."""
    return clip(name, NAME_CHARS) or None


def _project(event: Event) -> str:
    """The project the event was made in, as search files it: its `project` field, else a graph node's first
    `project:` tag (a node made in a repository is tagged with its project), else the default project."""
    if "project" not in event.data and event.kind == "graph.node":
        tags = event.data.get("tags")
        for tag in tags if isinstance(tags, list) else ():
            if isinstance(tag, str) and tag.startswith("project:") and tag[8:].strip():
                return tag[8:].strip()
    return project_of(event)


def rows(event: Event) -> Iterator[Row]:
    if event.kind not in TEXTS:
        return
    data = event.data
    project = _clipped(_project(event)) or ""
    agent, session_id = _name(data.get("agent")), _name(data.get("session_id"))
    turn_id = data.get("turn_id") if event.kind == "capture.turn" else None
    dedupe = f"turn:{turn_id}" if isinstance(turn_id, str) and turn_id else None
    text = None if kept_elsewhere(event) else text_of(event.kind, data)
    yield (
        "feed",
        (event.id, db_stamp(event.hlc), event.writer, event.seq, event.kind, project, agent, session_id, text, dedupe),
    )
    for facet, value in zip(FACETS, (project, agent, event.writer, event.kind), strict=True):
        if value:
            yield "feed_facets", (facet, value)


def unneeded(events: Sequence[Event]) -> dict[str, tuple[str, ...]]:
    """Compaction (scan.Unneeded): the feed lists the events that stay; it lets go whatever the others do."""
    return dict.fromkeys((event.id for event in events), ())


PROJECTION = Projection(
    Format(
        "feed",
        3,  # 2: a graph node's project from its `project:` tag; 3: the text of what others keep, not again
        (
            "contextflow.feed.projection",
            "contextflow.core.tables",
            "contextflow.core.text",
            "contextflow.core.project",
            "contextflow.sessions.projection",  # lines are read from their rows: a change to what they keep
            "contextflow.capture.projection",  # rebuilds the feed with them
        ),
    ),
    SCHEMA,
    INSERTS,
    rows,
    ("feed",),
    merged=(  # (core/rest.py) each event once; a turn captured twice: its earliest event, as the insert keeps
        (
            "feed",
            "SELECT * FROM main.{t} r WHERE NOT EXISTS (SELECT 1 FROM base.{t} b WHERE b.id = r.id) AND NOT EXISTS "
            "(SELECT 1 FROM base.{t} b WHERE b.dedupe = r.dedupe AND (b.hlc, b.w, b.seq) <= (r.hlc, r.w, r.seq)) "
            "UNION ALL SELECT * FROM base.{t} b WHERE NOT EXISTS (SELECT 1 FROM main.{t} r "
            "WHERE r.dedupe = b.dedupe AND (r.hlc, r.w, r.seq) < (b.hlc, b.w, b.seq))",
        ),
        ("feed_facets", "SELECT * FROM base.{t} UNION SELECT * FROM main.{t}"),
    ),
    unneeded=unneeded,
)
