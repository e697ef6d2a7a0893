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
