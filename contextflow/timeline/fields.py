"""The shape of every field of the timeline's events (core/fields.py checks them as lines are read), and
the closed lists its table and its core both use (this module stays light: the table imports it)."""

from contextflow.core.fields import OBJECT, STR, Shape

THREAD_STATUSES = ("active", "paused", "completed", "abandoned")
THOUGHT_TYPES = ("idea", "decision", "discovery", "blocker", "progress", "tangent_start")
THOUGHT_STATUSES = ("active", "resolved", "abandoned")

_THREAD: dict[str, Shape] = {"name": STR, "description": STR, "status": STR}
_THOUGHT: dict[str, Shape] = {"content": STR, "thought_type": STR, "status": STR, "metadata": OBJECT}
FIELDS: dict[str, dict[str, Shape]] = {
    "timeline.thread": {**_THREAD, "parent_thought_id": STR},
    "timeline.thread_update": {**_THREAD, "thread_id": STR},
    "timeline.thought": {**_THOUGHT, "thread_id": STR, "previous_thought_id": STR},
    "timeline.thought_update": {**_THOUGHT, "thought_id": STR},
    "timeline.position": {"thread_id": STR, "thought_id": STR},
}
