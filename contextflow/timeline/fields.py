"""The shape of every field of the timeline's events (core/fields.py checks them as lines are read), and
the closed lists its table and its core both use (this module stays light: the table imports it)."""

from typing import Any

from contextflow.core.fields import OBJECT, STR, Shape

THREAD = "timeline.thread"  # the timeline's event kinds
THREAD_UPDATE = "timeline.thread_update"
THOUGHT = "timeline.thought"
THOUGHT_UPDATE = "timeline.thought_update"
POSITION = "timeline.position"

THREAD_STATUSES = ("active", "paused", "completed", "abandoned")
THOUGHT_TYPES = ("idea", "decision", "discovery", "blocker", "progress", "tangent_start")
THOUGHT_STATUSES = ("active", "resolved", "abandoned")
RETURN_STATUSES = ("completed", "paused", "abandoned")  # how a tangent ends; default completed
# each status by its name or by the verb that sets it (the descriptions use both)
STATUS_VERBS = {"pause": "paused", "resume": "active", "complete": "completed", "abandon": "abandoned"}
THREADS_LIMIT, DEFAULT_THREADS = (1, 500), 50  # timeline_list_threads' limit: lowest, highest; default
THOUGHTS_LIMIT, DEFAULT_THOUGHTS = (1, 1000), 100  # timeline_get_thread's
WHERE_LIMIT, DEFAULT_WHERE = (1, 500), 20  # timeline_where_am_i's

_THREAD: dict[str, Shape] = {"name": STR, "description": STR, "status": STR}
_THOUGHT: dict[str, Shape] = {"content": STR, "thought_type": STR, "status": STR, "metadata": OBJECT}
FIELDS: dict[str, dict[str, Shape]] = {
    "timeline.thread": {**_THREAD, "parent_thought_id": STR, "project": STR},
    "timeline.thread_update": {**_THREAD, "thread_id": STR},
    "timeline.thought": {**_THOUGHT, "thread_id": STR, "previous_thought_id": STR, "project": STR},
    "timeline.thought_update": {**_THOUGHT, "thought_id": STR},
    "timeline.position": {"thread_id": STR, "thought_id": STR},
}


def nonempty(value: Any) -> str | None:
    """`value` when it is a string with something in it."""
    return value if isinstance(value, str) and value else None
