"""Views read from the derived tables where a call cannot query them (core/tables.py).

The graph is a projection that keeps its folded state in tables (`PROJECTIONS`: `graph/projection.py`,
caught up with the other tables): a call queries them while they hold every log (`served`). While they do not (a fresh
machine, a format rebuilt: another process builds them in the background; or another process holds
the lock), the view is their whole state as built so far (`Projection.load`) with the events of its
kinds every log holds past their cursors folded on top (read, never folded whole: lines without its
kinds' prefix are skipped undecoded), so an answer is complete, never "not found" from an unfinished
build.

(The timeline, sessions, the feed, captured turns, the records and the conversations are only ever
queried: beside the logs' remaining bytes by `core/rest.py` while their tables are not current.)

The views stay pure folds (`<feature>/view.py`); only their input changes. A store that cannot use
the tables (a ContextFlowMCP file over its size limit) folds them in memory as before (`Store.view`). A
`--stdin` batch reads the tables like any call (`Tables.overlaid`). A store scoped to some projects (an
HTTP grant's, `Store.read_projects`) reads the same tables, each of them a view of its projects' rows
(`Projection.scoped`), and of the logs' remaining bytes their events only; it never folds in memory.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast
from weakref import WeakKeyDictionary

from contextflow.core.events import Event
from contextflow.core.fields import conform
from contextflow.core.log import Cursor
from contextflow.core.tables import Projection

if TYPE_CHECKING:
    from contextflow.app import App
    from contextflow.core.fold import Folds
    from contextflow.core.rest import Progress, Reading
    from contextflow.core.store import Store

S = TypeVar("S")

# views whose state is a projection's tables (`Projection.apply`), by the feature's projection
PROJECTIONS = {
    "graph": "contextflow.graph.projection:PROJECTION",
}


def view(app: App, kind: type[Folds[S]]) -> S:
    """The current state of a view (named by its class: the state is typed), folded from its events on disk
    when it can be."""
    from contextflow.sessions.stored import disk

    name = kind.name
    if name not in PROJECTIONS or not disk(app):
        return app.store.view(kind)
    return cast(S, _projected(app, name, _projection(name)))


_READINGS: WeakKeyDictionary[Store, dict[str, Reading]] = WeakKeyDictionary()  # each projection's last `reading`


def reading(app: App, projection: Projection) -> Reading:
    """How a call reads `projection`'s tables: themselves while they hold every log, else as built with the
    rows of the logs' remaining bytes (`core/rest.py`: the logs' newest bytes only over its bound, `partial`).
    A ContextFlowMCP file over its size limit is never read: an error says so."""
    from contextflow.core import rest

    tables = app.tables()
    if tables.oversized():
        from contextflow.sessions.stored import ready

        ready(app)
    found = _READINGS.setdefault(app.store, {})[projection.name] = rest.reading(tables, (projection.name,))
    return found


def partial(app: App, projection: Projection) -> Progress | None:
    """How far the build is, when the last `reading` of `projection` read only the logs' newest bytes."""
    found = _READINGS.get(app.store, {}).get(projection.name)
    return found.partial if found is not None else None


def served(app: App, projection: Projection) -> bool:
    """Whether `projection`'s tables hold every log's events now (brought up to date first), so a call
    can query them; False where the tables are not read or not current (the caller reads `view`)."""
    from contextflow.sessions.stored import disk

    return disk(app) and app.tables().serves((projection.name,))


def empty(app: App, name: str) -> bool:
    """Whether view `name` (of `PROJECTIONS`, or a projection named as its view: the timeline) holds no rows,
    known from a query of the derived tables while they hold every log (False when this store does not
    read them, or they are not current): a reader can then skip it, and its imports."""
    from contextflow.sessions.stored import disk

    if not disk(app):
        return False
    tables = app.tables()
    projection = _projection(name) if name in PROJECTIONS else tables.sets.get(name)
    if projection is None or any(tables.query(f'SELECT 1 FROM "{t}" LIMIT 1') for t in projection.tables):
        return False
    return tables.serves((projection.name,))


def holds_more_than(app: App, name: str, count: int) -> bool:
    """Whether view `name` holds more than `count` events (a projection: rows of its first table), from
    an index in the derived tables (reading at most `count` entries): a short-lived reader (the session
    start) then leaves the fold alone."""
    from contextflow.sessions.stored import disk

    if name not in PROJECTIONS or not disk(app):
        return False
    table = _projection(name).tables[0]
    return bool(app.tables().query(f'SELECT 1 FROM "{table}" LIMIT 1 OFFSET ?', (count,)))


def _projection(name: str) -> Projection:
    from contextflow.features import target

    found: Projection = target(PROJECTIONS[name])
    return found


def _projected(app: App, name: str, projection: Projection) -> Any:
    """A projection's view while its tables are not current: their state as built so far, and the events
    of its kinds past its cursors (read in one transaction with the state: each event once)."""
    from contextflow.core.fold import LazyView
    from contextflow.features import view_paths

    tables = app.tables()
    tables.update()
    shape = LazyView(name, view_paths()[name])
    assert projection.load is not None
    with tables.snapshot() as db:
        try:
            state = projection.load(db)
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc):
                raise
            state = shape.initial()  # (not made yet: another process is making the database)
        cursors = tables.cursors(projection.name)
    _rest(app, projection.kinds, cursors, set(), lambda event: shape.apply(state, event))
    return state


def _rest(app: App, prefix: str, cursors: dict[str, Cursor], seen: set[str], apply: Callable[[Event], None]) -> None:
    """Apply the events of kinds `prefix` every log holds past `cursors` (each once: `seen` ids skipped)."""
    from contextflow.core.events import BadLine, decode
    from contextflow.core.log import read_new
    from contextflow.core.project import project_of
    from contextflow.core.tables import READ_BYTES

    schema, marker, scope = app.store.fields, prefix.encode(), app.store.read_projects
    for path in app.tables().paths():
        cursor = cursors.get(str(path))
        while True:
            start = cursor.offset if cursor else 0
            try:
                chunk = read_new(path, cursor, READ_BYTES)
            except FileNotFoundError:
                break
            for line_no, raw in chunk.lines:
                if marker not in raw:
                    continue
                try:
                    event = decode(raw, line_no)
                except BadLine:
                    continue
                if not event.kind.startswith(prefix) or event.id in seen:
                    continue
                seen.add(event.id)
                data, _ = conform(schema, event.kind, event.data)
                event = Event(event.id, event.writer, event.seq, event.hlc, event.kind, data)
                if scope is None or project_of(event) in scope:
                    apply(event)
            cursor = chunk.cursor
            if chunk.cursor.offset - start < READ_BYTES:
                break
