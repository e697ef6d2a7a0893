"""The derived tables as a call reads them (core/tables.py): the tables themselves while they hold every log,
else as built with the rows of the logs' remaining bytes (`reading`, `core/rest.py`), so an answer is complete,
never "not found" from an unfinished build; over the rest's bound only the logs' newest bytes are read and
`partial` says how far the build is. The graph, the records and the conversations fold their rest with their
own `apply`; the timeline, sessions, the feed and captured turns are only ever queried.

A store that cannot use the tables (a ContextFlowMCP file over its size limit) gets an error saying so.
A `--stdin` batch reads the tables like any call (`Tables.overlaid`). A store scoped to some projects (an
HTTP grant's, `Store.read_projects`) reads the same tables, each of them a view of its projects' rows
(`Projection.scoped`), and of the logs' remaining bytes their events only; it never folds in memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

if TYPE_CHECKING:
    from contextflow.app import App
    from contextflow.core.projections import Projection
    from contextflow.core.rest import Progress, Reading
    from contextflow.core.store import Store

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


def whole(app: App, projection: Projection) -> Reading:
    """As `reading`, never partial, for a caller that must not act on a partial answer (an import learning which
    of its items are here): the tables built in the foreground first when more of the logs is left than a call
    reads (`core.projections.whole_reads`; a StoreError when they stay unbuilt)."""
    from contextflow.core.catchup import BUILD_WAIT_S
    from contextflow.core.projections import whole_reads

    return whole_reads(lambda: reading(app, projection), BUILD_WAIT_S)


def partial(app: App, projection: Projection) -> Progress | None:
    """How far the build is, when the last `reading` of `projection` read only the logs' newest bytes."""
    found = _READINGS.get(app.store, {}).get(projection.name)
    return found.partial if found is not None else None


def empty(app: App, name: str) -> bool:
    """Whether projection `name` (a format's name, e.g. `graph-state`, or `timeline`) holds no rows,
    known from a query of the derived tables while they hold every log (False when this store does not
    read them, or they are not current): a reader can then skip it, and its imports."""
    from contextflow.sessions.stored import disk

    if not disk(app):
        return False
    tables = app.tables()
    projection = tables.sets.get(name)
    if projection is None or any(tables.query(f'SELECT 1 FROM "{t}" LIMIT 1') for t in projection.tables):
        return False
    return tables.serves((projection.name,))
