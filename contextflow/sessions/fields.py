"""The shape of every field of a note and a handoff (core/fields.py checks them as lines are read), and the
limits and defaults the sessions table and core both use (this module stays light: the table imports it)."""

from contextflow.core.fields import BOOL, INT, STR, STRS, Shape, record

LIMIT = (1, 200)  # how many entries or sessions a read lists, and choose_session's index: lowest, highest
DEFAULT_LIMIT = 20
KINDS = ("note", "handoff")

_ENTRY: dict[str, Shape] = {"session_id": STR, "task": STR, "tags": STRS}
_AUTOMATIC: dict[str, Shape] = {"auto": BOOL, "provenance": record({"client": STR, "transcript": STR, "turns": INT})}
FIELDS: dict[str, dict[str, Shape]] = {
    "note": {**_ENTRY, "text": STR, "wrong_handoff": STR},
    "handoff": {**_ENTRY, **_AUTOMATIC, "summary": STR, "next_steps": STRS, "open_questions": STRS, "files": STRS},
}
