"""Projects: which project an event belongs to, and the one default project name."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contextflow.core.events import Event

DEFAULT_PROJECT = "shared"


def project_of(event: Event) -> str:
    """The event's `project` field, trimmed, else the default project."""
    value = event.data.get("project")
    return value.strip() if isinstance(value, str) and value.strip() else DEFAULT_PROJECT
