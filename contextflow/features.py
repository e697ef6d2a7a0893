"""The features contextflow is made of: their operations tables and their views, named once.

This is the composition root's registry: the adapters build the MCP server and the CLI from
`operations()`, and `App.open` hands the store `all_views()` and `all_fields()`; the core imports none of it.
Each feature's table module imports nothing heavy; each view is imported when it first folds
or loads (a process that reads two views from the snapshot imports only those).
A new feature adds one line to each table here.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contextflow.core.fields import Schema
    from contextflow.core.fold import View
    from contextflow.core.formats import Format
    from contextflow.core.tables import TableSet
    from contextflow.operations.spec import Feature, Operation

FEATURES = (
    "contextflow.sessions.operations",
    "contextflow.records.operations",
    "contextflow.timeline.operations",
    "contextflow.search.operations",
    "contextflow.conversations.operations",
    "contextflow.graph.operations",
    "contextflow.imports.operations",
    "contextflow.admin.operations",
)

VIEWS = {
    "sessions": "contextflow.sessions.view:SessionsView",
    "records": "contextflow.records.view:RecordsView",
    "timeline": "contextflow.timeline.view:TimelineView",
    "conversations": "contextflow.conversations.view:ConversationsView",
    "search": "contextflow.search.view:SearchView",
    "graph": "contextflow.graph.view:GraphView",
    "activity": "contextflow.capture.view:ActivityView",
}

# each view's format in the snapshot (core/formats.py): a snapshot made at other versions is not loaded, one made
# at these is kept across upgrades; `SNAPSHOT` covers the store and the snapshot's own code
VIEW_VERSIONS = {name: 1 for name in VIEWS}

# derived tables on disk (core/tables.py): each feature's `TableSet`, its format versioned (core/formats.py)
TABLES = {
    "feed": "contextflow.feed.table:TABLES",
    "sessions": "contextflow.sessions.table:TABLES",
    "view-events": "contextflow.ondisk:TABLES",  # the events of the views folded from disk
}

# the shape of every field of every event kind each feature writes (core/fields.py checks them on read)
FIELDS = (
    "contextflow.sessions.fields",
    "contextflow.records.fields",
    "contextflow.timeline.fields",
    "contextflow.conversations.fields",
    "contextflow.graph.fields",
    "contextflow.capture.fields",
)


@cache
def features() -> tuple[Feature, ...]:
    return tuple(importlib.import_module(name).FEATURE for name in FEATURES)


def operations() -> tuple[Operation, ...]:
    return tuple(op for feature in features() for op in feature.operations)


def all_views() -> list[View]:
    from contextflow.core.fold import LazyView

    return [LazyView(name, path) for name, path in VIEWS.items()]


@cache
def all_fields() -> Schema:
    from contextflow.core.fields import merged

    return merged(*(importlib.import_module(name).FIELDS for name in FIELDS))


def folded_views() -> list[View]:
    """The views a store folds in memory: every view but `search` when the shared on-disk index
    (`contextflow.search.derived`) can serve it, which needs the `tantivy` package."""
    from importlib.util import find_spec

    on_disk = find_spec("tantivy") is not None
    return [view for view in all_views() if not (on_disk and view.name == "search")]


@cache
def all_tables() -> tuple[TableSet, ...]:
    """Every feature's derived tables (imported when a process first reads one)."""
    found = []
    for path in TABLES.values():
        module, name = path.split(":")
        found.append(getattr(importlib.import_module(module), name))
    return tuple(found)


def view_formats() -> list[Format]:
    from contextflow.core.formats import Format
    from contextflow.core.snapshot import SNAPSHOT

    views = [Format(f"view.{name}", VIEW_VERSIONS[name], (VIEWS[name].split(":")[0],)) for name in VIEWS]
    return [SNAPSHOT, *views]


def snapshot_versions() -> dict[str, int]:
    """What a snapshot is keyed on instead of the code: its own format's and each view's version."""
    return {fmt.name: fmt.version for fmt in view_formats()}


def all_formats() -> list[Format]:
    """Every versioned derived format (`core/formats.py` guards them)."""
    from contextflow.search.derived import INDEX_FORMAT

    return [*view_formats(), INDEX_FORMAT, *(table_set.format for table_set in all_tables())]
