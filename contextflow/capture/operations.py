"""Capture's command: `contextflow activity`, what a session did, turn by turn (CLI only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contextflow.operations.params import PROJECT
from contextflow.operations.spec import Operation, Param, Table, deferred
from contextflow.sessions.operations import LIMIT, SESSION

if TYPE_CHECKING:
    from contextflow.capture import present
else:
    present = deferred("contextflow.capture.present")

OPERATIONS = (
    Operation(
        "session_activity",
        "What a session did, turn by turn, as captured from the client's own transcript.",
        (PROJECT, Param("session_id", SESSION.schema, positional=True), LIMIT),
        present.session_activity,
        command=("activity",),
        tool=False,
    ),
)

TABLE = Table(operations=OPERATIONS)
