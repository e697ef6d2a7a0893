"""The shape of every field of a captured turn (core/fields.py checks them as lines are read)."""

from contextflow.core.fields import BOOL, INT, STR, STRS, Shape, listof, record

_COMMAND: dict[str, Shape] = {"command": STR, "exit": INT}
_TURN = record(
    {
        "request": STR,
        "final": STR,
        "files": record({"created": STRS, "edited": STRS, "read": STRS}),
        "commands": listof(record(_COMMAND)),
        "tests": listof(record({**_COMMAND, "passed": BOOL})),
        "errors": STRS,
        "todos": listof(record({"text": STR, "status": STR})),
        "continued": BOOL,
    }
)
FIELDS: dict[str, dict[str, Shape]] = {
    "capture.turn": {"session_id": STR, "turn_id": STR, "turn": _TURN, "transcript": STR},
}
