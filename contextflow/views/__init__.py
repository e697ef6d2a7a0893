"""The views folded over every event, by name. Each is imported when it first folds or loads (a
process that reads two views from the snapshot imports only those), so this table imports none."""

from __future__ import annotations

from contextflow.fold import LazyView, View

VIEWS = {
    "sessions": "contextflow.views.sessions:SessionsView",
    "records": "contextflow.views.records:RecordsView",
    "timeline": "contextflow.views.timeline:TimelineView",
    "conversations": "contextflow.views.conversations:ConversationsView",
    "search": "contextflow.search.view:SearchView",
    "graph": "contextflow.graph.view:GraphView",
}


def all_views() -> list[View]:
    return [LazyView(name, path) for name, path in VIEWS.items()]


def folded_views() -> list[View]:
    """The views a store folds in memory: every view but `search` when the shared on-disk index
    (`contextflow.derived`) can serve it, which needs the `tantivy` package."""
    from importlib.util import find_spec

    on_disk = find_spec("tantivy") is not None
    return [view for view in all_views() if not (on_disk and view.name == "search")]
