"""The timeline: threads of thoughts, tangents and "you are here" positions (`timeline_*` tools and
`contextflow timeline ...` commands)."""

from __future__ import annotations

from contextflow.operations.params import integer, string, writer
from contextflow.operations.spec import Feature, Operation, Param

# Copies of contextflow.views.timeline's constants, so that reading the table stays cheap (a test checks).
THREAD_STATUSES = ("active", "paused", "completed", "abandoned")
THOUGHT_TYPES = ("idea", "decision", "discovery", "blocker", "progress", "tangent_start")
THOUGHT_STATUSES = ("active", "resolved", "abandoned")

_RUN = "contextflow.present.memory:"
AGENT = writer()
THREAD = string("thread_id", "Thread id or a unique prefix of it.", required=True, positional=True)
METADATA = Param("metadata", {"type": "object", "description": "Links: files, commits, session ids."},
                 cli_help="JSON object of links (files, commits, ...)")
THREAD_STATUS = string("status", enum=THREAD_STATUSES)


def _op(name: str, summary: str, params: tuple[Param, ...], words: str, read_only: bool = False) -> Operation:
    return Operation(name, summary, params, _RUN + name, command=("timeline", words), group="timeline",
                     read_only=read_only)


OPERATIONS = (
    _op("timeline_create_thread", "Start a named thread of work (a journey from A to B).", (
        string("name", required=True, positional=True),
        string("description"),
        string("parent_thought_id", "Makes it a tangent.", flag="--parent-thought"),
        AGENT,
    ), "create"),
    _op("timeline_list_threads", "List threads with status and current position, most recent first.", (
        THREAD_STATUS, integer("limit", 1, 500),
    ), "threads", read_only=True),
    _op("timeline_get_thread", "A thread's ordered thoughts, position and tangent threads.", (
        THREAD,
        integer("limit", 1, 1000, "Latest N thoughts; default 100."),
    ), "show", read_only=True),
    _op("timeline_add_thought", "Add a thought after the thread's current position and move there.", (
        THREAD,
        string("content", required=True, positional=True),
        string("thought_type", "Default progress.", THOUGHT_TYPES, flag="--type"),
        METADATA,
        AGENT,
    ), "add"),
    _op("timeline_update_thought", "Change a thought's status, content, type or metadata.", (
        string("thought_id", "Thought id or unique prefix.", required=True, positional=True),
        string("status", enum=THOUGHT_STATUSES),
        string("content"),
        string("thought_type", enum=THOUGHT_TYPES, flag="--type"),
        METADATA,
        AGENT,
    ), "update"),
    _op("timeline_update_thread", "Rename a thread or set its status (pause, resume, complete, abandon).", (
        THREAD, string("name"), string("description"), THREAD_STATUS, AGENT,
    ), "set-thread"),
    _op("timeline_where_am_i", "Current position, last thought and trail of every active thread.", (
        integer("limit", 1, 500, "Most recent N; default 20."),
    ), "where", read_only=True),
    _op("timeline_go_tangent", "Mark a tangent_start on a thread and start a child thread for the tangent.", (
        string("thread_id", "The thread you leave (id or prefix).", required=True, positional=True),
        string("name", "Tangent thread name.", required=True, positional=True),
        string("description"),
        string("content", "Why; default 'Tangent: <name>'."),
        Param("metadata", METADATA.schema, cli=False),
        AGENT,
    ), "tangent"),
    _op("timeline_return", "Close or pause a tangent thread and restore the parent thread's position.", (
        string("thread_id", "The tangent thread id or prefix.", required=True, positional=True),
        string("status", "Default completed.", ["completed", "paused", "abandoned"]),
        AGENT,
    ), "return"),
)

FEATURE = Feature(group="timeline", operations=OPERATIONS)
