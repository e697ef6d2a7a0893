"""What a thread and a thought add to the search index (contextflow.search.extractors)."""

from __future__ import annotations

from contextflow.search.extractors import Extractors, patch, put
from contextflow.timeline.fields import THOUGHT, THOUGHT_UPDATE, THREAD, THREAD_UPDATE

_THREAD = {"title": "name", "text": "description"}
_THOUGHT = {"text": "content"}

EXTRACTORS: Extractors = {
    THREAD: ("thread", put(_THREAD, status=("status",))),
    THREAD_UPDATE: ("thread", patch("thread_id", _THREAD, ("status",))),
    THOUGHT: ("thought", put(_THOUGHT, meta=("agent", "thread_id"), status=("status", "thought_type"))),
    THOUGHT_UPDATE: ("thought", patch("thought_id", _THOUGHT, ("status", "thought_type"))),
}
