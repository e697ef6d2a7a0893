"""The shape of every field of a note and a handoff (core/fields.py checks them as lines are read)."""

from contextflow.core.fields import STR, STRS, Shape

_ENTRY: dict[str, Shape] = {"session_id": STR, "task": STR, "tags": STRS}
FIELDS: dict[str, dict[str, Shape]] = {
    "note": {**_ENTRY, "text": STR},
    "handoff": {**_ENTRY, "summary": STR, "next_steps": STRS, "open_questions": STRS, "files": STRS},
}
