"""The registry of views folded over every event. Add a view here to make it live."""

from __future__ import annotations

from contextflow.fold import View
from contextflow.views.sessions import SessionsView


def all_views() -> list[View]:
    return [SessionsView()]
