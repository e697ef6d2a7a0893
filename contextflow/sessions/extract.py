"""What a note and a handoff add to the search index (contextflow.search.extractors)."""

from __future__ import annotations

from contextflow.search.extractors import Extractors, put
from contextflow.sessions.view import HANDOFF, NOTE

_SESSION = ("project", "agent", "session_id")

EXTRACTORS: Extractors = {
    NOTE: ("note", put({"title": "task", "text": "text"}, ("tags",), _SESSION)),
    HANDOFF: (
        "handoff",
        put({"title": "task", "summary": "summary"}, ("next_steps", "open_questions", "files"), _SESSION),
    ),
}
