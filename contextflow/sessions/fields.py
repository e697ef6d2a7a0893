"""The shape of every field of a note and a handoff (core/fields.py checks them as lines are read)."""

from contextflow.core.fields import BOOL, INT, STR, STRS, Shape, record

_ENTRY: dict[str, Shape] = {"session_id": STR, "task": STR, "tags": STRS}
_AUTOMATIC: dict[str, Shape] = {"auto": BOOL, "provenance": record({"client": STR, "transcript": STR, "turns": INT})}
FIELDS: dict[str, dict[str, Shape]] = {
    "note": {**_ENTRY, "text": STR, "wrong_handoff": STR},
    "handoff": {**_ENTRY, **_AUTOMATIC, "summary": STR, "next_steps": STRS, "open_questions": STRS, "files": STRS},
}
