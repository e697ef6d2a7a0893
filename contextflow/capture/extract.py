"""What a captured turn adds to the search index (contextflow.search.extractors)."""

from __future__ import annotations

from contextflow.capture.fields import TURN_KIND
from contextflow.core.events import Event
from contextflow.core.project import project_of
from contextflow.search.docs import Op, Put
from contextflow.search.extractors import Extractors, lines, list_of, nonempty, text_of, texts_of
from contextflow.sessions.view import session_of


def capture_turn_docs(event: Event) -> list[Op]:
    """One document per captured turn: the request, final message, files, commands and errors."""
    turn = event.data.get("turn")
    if not isinstance(turn, dict):
        return []
    files = turn["files"] if isinstance(turn.get("files"), dict) else {}
    commands = [c.get("command") for c in list_of(turn.get("commands")) if isinstance(c, dict)]
    fields = nonempty(
        title=text_of(turn.get("request")),
        text=text_of(turn.get("final")),
        files=lines(
            dict.fromkeys(path for kind in ("created", "edited", "read") for path in texts_of(files.get(kind)))
        ),
        commands=lines(texts_of(commands)),
        errors=lines(texts_of(turn.get("errors"))),
    )
    meta = {"project": project_of(event), "agent": text_of(event.data.get("agent")), "session_id": session_of(event)}
    return [Put(event.id, fields, meta)]


EXTRACTORS: Extractors = {TURN_KIND: ("activity", capture_turn_docs)}
