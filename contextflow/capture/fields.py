"""The shape of every field of a captured turn (core/fields.py checks them as lines are read)."""

from contextflow.core.fields import BOOL, INT, OBJECT, STR, STRS, Shape, listof, record

TURN_KIND = "capture.turn"  # the event kind of one captured turn

_COMMAND: dict[str, Shape] = {"command": STR, "exit": INT}
_DECISION = record({"decision": STR, "reasoning": STR, "status": STR})
_TURN = record(
    {
        "request": STR,
        "final": STR,
        "files": record({"created": STRS, "edited": STRS, "read": STRS}),
        "commands": listof(record({**_COMMAND, "error": STR})),
        "tests": listof(record({**_COMMAND, "passed": BOOL})),
        "errors": STRS,
        "todos": listof(record({"text": STR, "status": STR})),
        "continued": BOOL,
        "decisions": listof(_DECISION),
        "questions": STRS,
        "todos_said": STRS,
        "resolved": STRS,
        "handoff": record({"id": STR, "summary": STR, "files": STRS}),
        "state": record({"commit": STR, "files": OBJECT}),  # files: path -> git blob id when captured
    }
)
FIELDS: dict[str, dict[str, Shape]] = {
    TURN_KIND: {"session_id": STR, "turn_id": STR, "turn": _TURN, "transcript": STR},
}
