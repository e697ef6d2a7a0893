"""The registry of views folded over every event. Add a view here to make it live."""

from __future__ import annotations

from contextflow.fold import View
from contextflow.graph.view import GraphView
from contextflow.search.view import SearchView
from contextflow.views.conversations import ConversationsView
from contextflow.views.records import RecordsView
from contextflow.views.sessions import SessionsView
from contextflow.views.timeline import TimelineView


def all_views() -> list[View]:
    return [SessionsView(), RecordsView(), TimelineView(), GraphView(), ConversationsView(), SearchView()]
