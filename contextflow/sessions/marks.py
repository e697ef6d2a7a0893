"""Marking a handoff as wrong: a note in the handoff's own session (`wrong_handoff: <id>`) that the
sessions view, the derived tables and every "latest handoff" read honour (`core.wrong_marks`)."""

from __future__ import annotations

from contextflow.app import App
from contextflow.core import checks
from contextflow.core.errors import NotFoundError, tool
from contextflow.core.events import Event
from contextflow.core.project import project_of
from contextflow.sessions.view import WRONG_FIELD, session_of


def mark_handoff_wrong(app: App, *, handoff_id: str, agent: str | None, reason: str | None = None) -> Event:
    """A note in the handoff's own session saying it is wrong (and why): from then on it is no
    session's latest handoff, for every agent and machine. Nothing is rewritten."""
    wanted = checks.trimmed(handoff_id, "handoff_id", required=True, max_chars=200) or ""
    handoff = _find_handoff(app, wanted)
    why = checks.trimmed(reason, "reason", max_chars=app.settings.max_note_chars)
    data: dict[str, object] = {
        "project": project_of(handoff),
        "agent": checks.trimmed(agent, "agent", required=True, max_chars=200),
        "text": f"Marked handoff {handoff.id} as wrong" + (f": {why}" if why else "."),
        WRONG_FIELD: handoff.id,
    }
    if session_of(handoff):
        data["session_id"] = session_of(handoff)
    return app.store.append("note", data)


def _find_handoff(app: App, handoff_id: str) -> Event:
    from contextflow.sessions import stored

    stored.ready(app)
    found = stored.entry(app, handoff_id)
    if found is not None and found.kind == "handoff":
        return found
    raise NotFoundError(
        f"no handoff with id {handoff_id!r}; {tool('get_latest_handoff')} or {tool('read_shared_context')} show ids"
    )
