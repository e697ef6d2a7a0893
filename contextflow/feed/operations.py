"""The feed's command: `contextflow feed`, what every agent on every machine wrote, newest first
(CLI and the page; not an MCP tool: an agent asks `get_context` or `read_shared_context`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contextflow.feed.fields import DEFAULT_LIMIT, MAX_LIMIT
from contextflow.operations.params import integer, string
from contextflow.operations.spec import Operation, Table, deferred

if TYPE_CHECKING:
    from contextflow.feed import present
else:
    present = deferred("contextflow.feed.present")

OPERATIONS = (
    Operation(
        "recent_activity",
        "What every agent on every machine wrote, newest first: captured turns, handoffs, notes, records, "
        "graph nodes, thoughts.",
        (
            string("project", "Only this project."),
            string("agent", "Only this agent, e.g. claude-code."),
            string("machine", "Only what this machine (writer id) appended."),
            string("kind", "Only this event kind, e.g. handoff, note, capture.turn."),
            string("session_id", "Only this session.", flag="--session"),
            string("before", "The id of the last item of the page before (or an ISO time): older items."),
            integer("limit", 1, MAX_LIMIT, f"How many, newest first (1-{MAX_LIMIT}). Default {DEFAULT_LIMIT}."),
        ),
        present.recent_activity,
        command=("feed",),
        tool=False,
    ),
)

TABLE = Table(operations=OPERATIONS)
