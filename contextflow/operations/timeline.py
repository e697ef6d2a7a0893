"""The timeline: threads of thoughts, tangents and "you are here" positions (`timeline_*` tools and
`contextflow timeline ...` commands)."""

from __future__ import annotations

from contextflow.operations.context import AGENT
from contextflow.operations.spec import JSON, Feature, Operation, Param

# Copies of contextflow.views.timeline's constants, so that reading the table stays cheap (a test checks).
THREAD_STATUSES = ("active", "paused", "completed", "abandoned")
THOUGHT_TYPES = ("idea", "decision", "discovery", "blocker", "progress", "tangent_start")
THOUGHT_STATUSES = ("active", "resolved", "abandoned")

_RUN = "contextflow.present.memory:"
_S: JSON = {"type": "string"}
THREAD = Param("thread_id", {**_S, "description": "Thread id or a unique prefix of it."}, required=True,
               positional=True)
METADATA = Param("metadata", {"type": "object", "description": "Links: files, commits, session ids."},
                 cli_help="JSON object of links (files, commits, ...)")
THREAD_STATUS = Param("status", {"type": "string", "enum": list(THREAD_STATUSES)})


def _op(name: str, summary: str, params: tuple[Param, ...], words: str, read_only: bool = False) -> Operation:
    return Operation(name, summary, params, _RUN + name, command=("timeline", words), group="timeline",
                     read_only=read_only)


OPERATIONS = (
    _op("timeline_create_thread", "Start a named thread of work (a journey from A to B).", (
        Param("name", _S, required=True, positional=True),
        Param("description", _S),
        Param("parent_thought_id", {**_S, "description": "Makes it a tangent."}, flag="--parent-thought"),
        AGENT,
    ), "create"),
    _op("timeline_list_threads", "List threads with status and current position, most recent first.", (
        THREAD_STATUS, Param("limit", {"type": "integer", "minimum": 1, "maximum": 500}),
    ), "threads", read_only=True),
    _op("timeline_get_thread", "A thread's ordered thoughts, position and tangent threads.", (
        THREAD,
        Param("limit", {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Latest N thoughts; "
                        "default 100."}),
    ), "show", read_only=True),
    _op("timeline_add_thought", "Add a thought after the thread's current position and move there.", (
        THREAD,
        Param("content", _S, required=True, positional=True),
        Param("thought_type", {"type": "string", "enum": list(THOUGHT_TYPES), "description": "Default progress."},
              flag="--type"),
        METADATA,
        AGENT,
    ), "add"),
    _op("timeline_update_thought", "Change a thought's status, content, type or metadata.", (
        Param("thought_id", {**_S, "description": "Thought id or unique prefix."}, required=True, positional=True),
        Param("status", {"type": "string", "enum": list(THOUGHT_STATUSES)}),
        Param("content", _S),
        Param("thought_type", {"type": "string", "enum": list(THOUGHT_TYPES)}, flag="--type"),
        METADATA,
        AGENT,
    ), "update"),
    _op("timeline_update_thread", "Rename a thread or set its status (pause, resume, complete, abandon).", (
        THREAD, Param("name", _S), Param("description", _S), THREAD_STATUS, AGENT,
    ), "set-thread"),
    _op("timeline_where_am_i", "Current position, last thought and trail of every active thread.", (
        Param("limit", {"type": "integer", "minimum": 1, "maximum": 500, "description": "Most recent N; default 20."}),
    ), "where", read_only=True),
    _op("timeline_go_tangent", "Mark a tangent_start on a thread and start a child thread for the tangent.", (
        Param("thread_id", {**_S, "description": "The thread you leave (id or prefix)."}, required=True,
              positional=True),
        Param("name", {**_S, "description": "Tangent thread name."}, required=True, positional=True),
        Param("description", _S),
        Param("content", {**_S, "description": "Why; default 'Tangent: <name>'."}),
        Param("metadata", METADATA.schema, tool=True, cli=False),
        AGENT,
    ), "tangent"),
    _op("timeline_return", "Close or pause a tangent thread and restore the parent thread's position.", (
        Param("thread_id", {**_S, "description": "The tangent thread id or prefix."}, required=True, positional=True),
        Param("status", {"type": "string", "enum": ["completed", "paused", "abandoned"],
                         "description": "Default completed."}),
        AGENT,
    ), "return"),
)

FEATURE = Feature(group="timeline", views=("contextflow.views.timeline:TimelineView",), operations=OPERATIONS)
